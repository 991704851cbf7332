package client

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
)

// Large messages: the producer side (the consumer side is chunk_reassemble.go).
//
// A body larger than the producer's max body size (WithMaxBodySize, the broker's
// maxMsgSize, 4 MiB by default) is sent as a chunked message: the body (its zlib form
// when the producer compresses it and that is smaller) is cut into chunks of at most the
// max body size, and each chunk goes as an ordinary message, in order, one request in
// flight at a time, to one queue chosen once for the whole message. Each chunk carries
// every property of the original message (tags, keys, user properties, so brokers filter
// every chunk alike) and these, whatever its tag:
//
//	CHUNKED_ID         the original message's id (its UNIQ_KEY)
//	CHUNKED_INDEX      0 … CHUNKED_COUNT-1, the chunk's place
//	CHUNKED_COUNT      how many chunks the message has
//	CHUNKED_SIZE       the payload's size: the chunks' bodies laid end to end
//	CHUNKED_BODY_SIZE  the original body's size
//	CHUNKED_ZLIB       "1" when the payload is the zlib form of the body
//
// A chunk's own UNIQ_KEY is the original id for chunk 0 and "<id>.<index>" for the
// others, so a query by the message id finds its first chunk and a broker's dedup window
// (WithIdempotence) tells chunks apart. No chunk has the compressed SysFlag bit: the
// payload is compressed as a whole, not chunk by chunk, and only the reassembled payload
// inflates.

// Chunk properties, on every chunk of a chunked message (see the top of this file).
const (
	// PropertyChunkID is the chunked message's id, the original UNIQ_KEY.
	PropertyChunkID = "CHUNKED_ID"
	// PropertyChunkIndex is a chunk's place in its message, from 0.
	PropertyChunkIndex = "CHUNKED_INDEX"
	// PropertyChunkCount is how many chunks the message has.
	PropertyChunkCount = "CHUNKED_COUNT"
	// PropertyChunkSize is the size of the chunks' bodies laid end to end.
	PropertyChunkSize = "CHUNKED_SIZE"
	// PropertyChunkBodySize is the size of the original body.
	PropertyChunkBodySize = "CHUNKED_BODY_SIZE"
	// PropertyChunkZlib is "1" when the chunks' bodies laid end to end are the zlib form
	// of the original body.
	PropertyChunkZlib = "CHUNKED_ZLIB"
)

// DefaultMaxMessageSize is the largest body a producer accepts by default
// (WithMaxMessageSize): bodies over the max body size up to it are chunked.
const DefaultMaxMessageSize = 256 << 20

// compressProbe is how much of a large body is compressed first to judge whether the
// whole compresses at all.
const compressProbe = 64 << 10

// WithMaxMessageSize sets the largest body the producer accepts (default 256 MiB). A
// body over the max body size (WithMaxBodySize) and up to n bytes is sent in chunks
// (chunk.go); a larger one is refused with ErrIllegalMessage, so a mistake does not send
// gigabytes. n below the max body size turns chunking off.
func WithMaxMessageSize(n int) ProducerOption {
	return func(o *producerOptions) { o.maxMsgSize = n }
}

// chunkSpec is what every chunk of one chunked message shares.
type chunkSpec struct {
	topic    string
	id       string // the original UNIQ_KEY
	payload  []byte // the chunks' bodies end to end
	bodySize int
	zlib     bool
	count    int
	size     int // of a chunk but the last
	props    map[string]string
	flag     int32
}

// chunkRange is the payload range of chunk i.
func (s *chunkSpec) chunkRange(i int) []byte {
	return s.payload[i*s.size : min((i+1)*s.size, len(s.payload))]
}

// chunkProps encodes chunk i's properties.
func (s *chunkSpec) chunkProps(i int) ([]byte, error) {
	var props []byte
	for k, v := range s.props {
		if k == message.PropertyUniqKey {
			continue
		}
		props = message.AppendPair(props, k, []byte(v))
	}
	uniq := s.id
	if i > 0 {
		uniq += "." + strconv.Itoa(i)
	}
	props = message.AppendPair(props, message.PropertyUniqKey, []byte(uniq))
	props = message.AppendPair(props, PropertyChunkID, []byte(s.id))
	props = message.AppendPair(props, PropertyChunkIndex, strconv.AppendInt(nil, int64(i), 10))
	props = message.AppendPair(props, PropertyChunkCount, strconv.AppendInt(nil, int64(s.count), 10))
	props = message.AppendPair(props, PropertyChunkSize, strconv.AppendInt(nil, int64(len(s.payload)), 10))
	props = message.AppendPair(props, PropertyChunkBodySize, strconv.AppendInt(nil, int64(s.bodySize), 10))
	if s.zlib {
		props = message.AppendPair(props, PropertyChunkZlib, []byte("1"))
	}
	if len(props) > message.MaxPropertiesLength {
		return nil, fmt.Errorf("%w: %w: %d bytes with the chunk properties, max %d", ErrIllegalMessage,
			message.ErrPropertiesTooLong, len(props), message.MaxPropertiesLength)
	}
	return props, nil
}

// prepareChunks checks a message over the max body size and cuts it into chunks.
func (p *Producer) prepareChunks(msg *message.Message) (*chunkSpec, error) {
	topic := p.c.nsWrap(msg.Topic)
	if err := protocol.ValidateTopic(topic); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrIllegalMessage, err)
	}
	if p.opts.maxMsgSize <= p.opts.maxBodySize {
		return nil, fmt.Errorf("%w: %w: %d bytes, max %d", ErrIllegalMessage, message.ErrBodyTooLarge,
			len(msg.Body), p.opts.maxBodySize)
	}
	if err := msg.Validate(p.opts.maxMsgSize); err != nil {
		return nil, fmt.Errorf("%w: %w (WithMaxMessageSize)", ErrIllegalMessage, err)
	}
	if msg.HasTimer() {
		return nil, fmt.Errorf("%w: a message over %d bytes (chunked) cannot be delayed", ErrIllegalMessage, p.opts.maxBodySize)
	}
	s := &chunkSpec{topic: topic, id: msg.UniqKey(), payload: msg.Body, bodySize: len(msg.Body),
		props: msg.Properties, flag: msg.Flag, size: p.opts.maxBodySize}
	if s.id == "" {
		s.id = p.c.ids.Next()
		if p.opts.idempotent {
			msg.SetUniqKey(s.id) // a resend of msg is the same message
		}
	}
	if compressible(msg.Body) {
		if z, err := message.Compress(msg.Body, 5); err == nil && len(z) < len(msg.Body) {
			s.payload, s.zlib = z, true
		}
	}
	s.count = (len(s.payload) + s.size - 1) / s.size
	if _, err := s.chunkProps(s.count - 1); err != nil {
		return nil, err
	}
	return s, nil
}

// compressible guesses whether body is worth compressing from its first compressProbe
// bytes: they must shrink by a tenth.
func compressible(body []byte) bool {
	probe := body[:min(len(body), compressProbe)]
	z, err := message.Compress(probe, 1)
	return err == nil && len(z) < len(probe)-len(probe)/10
}

// sendChunked sends msg, over the max body size, in chunks on a goroutine of its own
// (counted in inflight) and calls done with the whole message's result: its id, the
// queue and offsets of its first chunk, and the chunk count.
func (p *Producer) sendChunked(ctx context.Context, msg *message.Message, done func(SendResult, error)) {
	s, err := p.prepareChunks(msg)
	if err != nil {
		done(SendResult{}, err)
		return
	}
	var qs []MessageQueue
	var pick int
	if p.opts.selector != nil {
		r, err := p.c.route(ctx, s.topic)
		if err != nil {
			done(SendResult{}, err)
			return
		}
		qs = r.messageQueues()
		if pick = p.opts.selector.Select(msg, qs); pick < 0 || pick >= len(qs) {
			done(SendResult{}, fmt.Errorf("%w: the selector picked queue %d of %d", ErrIllegalMessage, pick, len(qs)))
			return
		}
	}
	if !p.enter() {
		done(SendResult{}, ErrClosed)
		return
	}
	go func() {
		defer p.inflight.Done()
		res, err := p.sendChunks(ctx, s, qs != nil, pick)
		done(res, err)
	}()
}

// sendChunks sends s's chunks in order, each after the previous one is stored. The queue
// is chosen for chunk 0 (selected: the selector's pick; else round robin, or from the id
// under WithIdempotence) and kept for the others; a failed chunk is retried on that queue
// as WithRetries says.
func (p *Producer) sendChunks(ctx context.Context, s *chunkSpec, selected bool, pick int) (SendResult, error) {
	r, err := p.c.route(ctx, s.topic)
	if err != nil {
		return SendResult{}, err
	}
	key := laneKey{topic: s.topic, queue: -1}
	if selected {
		key.queue = int32(pick)
	}
	var q queue
	if p.opts.idempotent {
		q = p.pickQueueFrom(r, key, "", idHash(s.id))
	} else {
		q = p.pickQueue(r, key, "")
	}
	var first SendResult
	for i := range s.count {
		props, err := s.chunkProps(i)
		if err != nil {
			return SendResult{}, err
		}
		out := &outgoing{topic: s.topic, body: s.chunkRange(i), props: props, flag: s.flag}
		// Chunk 0 may move to another broker, nothing being stored yet — unless the
		// producer is idempotent: an unknown outcome is retried on its group.
		res, nq, err := p.sendChunk(ctx, r, q, out, i == 0 && !selected && !p.opts.idempotent)
		if err != nil {
			return SendResult{}, fmt.Errorf("client: chunk %d of %d of message %s: %w", i, s.count, s.id, err)
		}
		q = nq
		if i == 0 {
			first = res
		}
	}
	first.MsgID, first.Chunks = s.id, s.count
	return first, nil
}

// sendChunk sends one chunk to q, retrying retriable failures: on q, or — when mayMove
// (chunk 0 of an unselected message) — on another broker's queue. It returns the queue
// the chunk was stored in.
func (p *Producer) sendChunk(ctx context.Context, r *topicRoute, q queue, out *outgoing, mayMove bool) (SendResult, queue, error) {
	for attempt := 0; ; attempt++ {
		req := p.singleRequest(q, out)
		sent := time.Now()
		resp, err := p.c.invoke(ctx, q.addr, req)
		if err == nil {
			p.fault.update(q.broker, time.Since(sent), false)
			res, err := chunkResult(r, q, out, resp)
			return res, q, err
		}
		var be *BrokerError
		answered := errors.As(err, &be)
		retriable := !answered || be.Retriable()
		if errors.Is(err, ErrClosed) || ctx.Err() != nil || !retriable || attempt >= p.opts.retries {
			return SendResult{}, q, err
		}
		p.fault.update(q.broker, time.Since(sent), true)
		p.c.forgetRoute(r.topic)
		if nr, rerr := p.c.route(ctx, r.topic); rerr == nil {
			r = nr
		}
		q = sameQueue(r, q, mayMove, p)
	}
}

// sameQueue is q in a refreshed route (its address may have changed), or with mayMove
// a queue of another broker.
func sameQueue(r *topicRoute, q queue, mayMove bool, p *Producer) queue {
	if mayMove {
		return p.pickQueue(r, laneKey{topic: r.topic, queue: -1}, q.broker)
	}
	for _, nq := range r.queues {
		if nq.broker == q.broker && nq.id == q.id {
			return nq
		}
	}
	return q
}

// chunkResult decodes the answer to one chunk's SEND_MESSAGE_V2.
func chunkResult(r *topicRoute, q queue, out *outgoing, resp *remoting.Command) (SendResult, error) {
	var h protocol.SendMessageResponseHeader
	if err := h.DecodeExt(resp.ExtFields); err != nil {
		return SendResult{}, fmt.Errorf("client: send response from %s: %w", q.addr, err)
	}
	return SendResult{MsgID: out.uniq, OffsetMsgID: h.MsgID, Topic: r.topic, BrokerName: q.broker,
		QueueID: h.QueueID, QueueOffset: h.QueueOffset}, nil
}
