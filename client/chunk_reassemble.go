package client

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/protocol"
)

// Large messages: the consumer side (the producer side is chunk.go).
//
// Every consumer (push, concurrent or orderly; pull; lite pull) reassembles the chunks
// of a chunked message into one MessageExt before anyone sees it: the first chunk's
// message (queue, offsets, times, hosts) with the whole body (inflated when CHUNKED_ZLIB
// says so), the original properties (the chunk properties removed) and the original id
// as MsgID and UNIQ_KEY. Its QueueOffset is its first chunk's; it covers the offsets of
// all its chunks, so a push consumer commits past the first chunk only once the whole
// message is consumed, and a pull consumer's PullResult.CommitOffset stays at the first
// chunk of an incomplete message.
//
// Chunks arrive in queue order, one message's in index order (the producer sends them
// one after the other to one queue), possibly interleaved with other messages. A
// reassembler keeps, per queue, the partial messages — a buffer of the payload's size,
// taken when chunk 0 arrives — and gives chunks up (drops them, counted and logged) when
// they cannot make a message:
//
//   - a chunk whose chunk 0 it never saw (the consumer started after it, or the partial
//     was given up) or that repeats one it has (a send retried after a lost answer);
//   - a partial message that skips a chunk, that chunk 0 restarts (the producer resent
//     it), whose last chunk is more than the max gap offsets behind the newest message of
//     its queue, or that got no chunk for the max wait while its queue was pulled: a
//     producer failed mid-way;
//   - the oldest partial messages, when a new one would take the buffers of all partial
//     messages past the memory limit; a message larger than the limit is never kept.
//
// A dropped chunk counts as consumed: the committed offset moves past it.

// Reassembly defaults (WithChunkReassembly).
const (
	DefaultReassemblyBytes = 512 << 20
	DefaultReassemblyGap   = 10000
	DefaultReassemblyWait  = 5 * time.Minute
)

// errChunkedRetryLocally makes a push consumer retry a failed chunked message locally
// instead of sending it back (see sendBackChunked).
var errChunkedRetryLocally = errors.New("client: a chunked message is retried locally")

// reassemblyOptions bound a consumer's reassembly.
type reassemblyOptions struct {
	maxBytes int
	maxGap   int64
	maxWait  time.Duration
}

func defaultReassemblyOptions() reassemblyOptions {
	return reassemblyOptions{maxBytes: DefaultReassemblyBytes, maxGap: DefaultReassemblyGap, maxWait: DefaultReassemblyWait}
}

// validate reports an invalid setting.
func (o reassemblyOptions) validate() error {
	if o.maxBytes <= 0 || o.maxGap <= 0 || o.maxWait <= 0 {
		return fmt.Errorf("%w: chunk reassembly limits %d bytes / %d offsets / %v must be positive",
			ErrInvalidOptions, o.maxBytes, o.maxGap, o.maxWait)
	}
	return nil
}

// WithChunkReassembly bounds the reassembly of chunked messages (chunk_reassemble.go):
// the partial messages of the consumer hold at most maxBytes of buffers (default 512
// MiB; beyond it the oldest partial message is dropped), and a partial message is
// dropped when its last chunk is more than maxGap offsets behind the newest message of
// its queue (default 10000) or its queue was pulled with no chunk of it for maxWait
// (default 5 min). For the pull
// and lite pull consumers too.
func WithChunkReassembly(maxBytes int, maxGap int64, maxWait time.Duration) ConsumerOption {
	return func(o *consumerOptions) {
		o.chunks = reassemblyOptions{maxBytes: maxBytes, maxGap: maxGap, maxWait: maxWait}
	}
}

// chunkMeta is what a chunk's properties say.
type chunkMeta struct {
	id             string
	index, count   int
	size, bodySize int
	zlib           bool
}

// Chunked reports whether m was reassembled from chunks. Its QueueOffset is then its
// first chunk's, and messages stored between its chunks may have been delivered before
// it.
func (m *MessageExt) Chunked() bool { return m.chunks != nil }

// isChunk reports whether m is a chunk of a chunked message.
func isChunk(m *MessageExt) bool {
	_, ok := m.Properties[PropertyChunkID]
	return ok
}

// chunkOf reads m's chunk properties; ok is false when m is not a chunk, err set when
// they are malformed.
func chunkOf(m *MessageExt) (meta chunkMeta, ok bool, err error) {
	id, ok := m.Properties[PropertyChunkID]
	if !ok {
		return meta, false, nil
	}
	num := func(k string) int {
		n, perr := strconv.Atoi(m.Properties[k])
		if perr != nil || n < 0 {
			err = errors.Join(err, fmt.Errorf("property %s %q", k, m.Properties[k]))
		}
		return n
	}
	meta = chunkMeta{id: id, index: num(PropertyChunkIndex), count: num(PropertyChunkCount),
		size: num(PropertyChunkSize), bodySize: num(PropertyChunkBodySize), zlib: m.Properties[PropertyChunkZlib] == "1"}
	if err == nil && (id == "" || meta.count == 0 || meta.index >= meta.count || meta.size == 0 || meta.bodySize == 0) {
		err = fmt.Errorf("chunk %d of %d, %d bytes of %d", meta.index, meta.count, meta.size, meta.bodySize)
	}
	if err != nil {
		err = fmt.Errorf("client: malformed chunk %s: %w", m.MsgID, err)
	}
	return meta, true, err
}

// chunkSet is what a reassembled message keeps of its chunks.
type chunkSet struct {
	offsets    []int64 // queue offsets
	logOffsets []int64 // commit-log offsets (send-back)
}

// lastOffset is the queue offset of m's last record: its own, or its last chunk's.
func (m *MessageExt) lastOffset() int64 {
	if m.chunks != nil {
		return m.chunks.offsets[len(m.chunks.offsets)-1]
	}
	return m.QueueOffset
}

// eachOffset calls fn with the queue offset of each of m's records.
func (m *MessageExt) eachOffset(fn func(int64)) {
	if m.chunks == nil {
		fn(m.QueueOffset)
		return
	}
	for _, o := range m.chunks.offsets {
		fn(o)
	}
}

// partKey names a partial message: the queue it comes from (a scope: a push consumer's
// *processQueue, a pull consumer's MessageQueue) and its id.
type partKey struct {
	scope any
	id    string
}

// partial is a message some of whose chunks arrived.
type partial struct {
	meta   chunkMeta
	first  *MessageExt
	buf    []byte // the payload so far; its capacity the whole payload
	chunks chunkSet
	next   int       // the index expected next
	seen   time.Time // when the last chunk arrived
	born   uint64    // age rank
}

// chunkDrop is chunks given up, of one scope.
type chunkDrop struct {
	scope   any
	offsets []int64
}

// reassembler reassembles the chunked messages of one consumer.
type reassembler struct {
	opts reassemblyOptions
	log  *zerolog.Logger
	now  func() time.Time

	dropped     atomic.Int64 // chunks given up
	droppedMsgs atomic.Int64 // partial messages given up
	partials    atomic.Int64 // len(mu.parts)

	mu struct {
		sync.Mutex
		used  int // bytes of the partial messages' buffers
		born  uint64
		parts map[partKey]*partial
	}
}

// newReassembler returns a reassembler bounded by opts, logging to log.
func newReassembler(opts reassemblyOptions, log *zerolog.Logger) *reassembler {
	r := &reassembler{opts: opts, log: log, now: time.Now}
	r.mu.parts = make(map[partKey]*partial)
	return r
}

// feed takes the messages of one queue (scope) in queue order and returns those to
// deliver: every one that is not a chunk and each chunked message its chunks complete.
// drops are the chunks given up, of this scope or (the memory limit, the max wait) of
// others. With no message it only gives up the partial messages past their bounds.
func (r *reassembler) feed(scope any, msgs []*MessageExt) (out []*MessageExt, drops []chunkDrop) {
	chunked := false
	for _, m := range msgs {
		if isChunk(m) {
			chunked = true
			break
		}
	}
	if !chunked && r.partials.Load() == 0 {
		return msgs, nil
	}
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	out = make([]*MessageExt, 0, len(msgs))
	dropOne := func(m *MessageExt, why string) {
		r.dropped.Add(1)
		r.log.Warn().Str("msgID", m.MsgID).Int64("offset", m.QueueOffset).Msg("chunk dropped: " + why)
		drops = append(drops, chunkDrop{scope: scope, offsets: []int64{m.QueueOffset}})
	}
	for _, m := range msgs {
		meta, ok, err := chunkOf(m)
		switch {
		case !ok:
			out = append(out, m)
			continue
		case err != nil:
			r.dropped.Add(1)
			r.log.Warn().Err(err).Int64("offset", m.QueueOffset).Msg("chunk dropped")
			drops = append(drops, chunkDrop{scope: scope, offsets: []int64{m.QueueOffset}})
			continue
		}
		key := partKey{scope: scope, id: meta.id}
		p := r.mu.parts[key]
		if meta.index == 0 {
			if p != nil {
				drops = r.giveUpLocked(key, p, drops, "restarted by a new first chunk")
			}
			if meta.size > r.opts.maxBytes {
				dropOne(m, fmt.Sprintf("a message of %d bytes exceeds the reassembly limit of %d", meta.size, r.opts.maxBytes))
				continue
			}
			for r.mu.used+meta.size > r.opts.maxBytes {
				drops = r.evictOldestLocked(drops)
			}
			r.mu.born++
			first := *m
			first.Body = nil // the chunk's body aliases its whole pull answer
			p = &partial{meta: meta, first: &first, buf: make([]byte, 0, meta.size), born: r.mu.born}
			r.mu.parts[key] = p
			r.partials.Store(int64(len(r.mu.parts)))
			r.mu.used += meta.size
		}
		switch {
		case p == nil:
			dropOne(m, "its message's first chunk was not seen")
			continue
		case meta.index < p.next:
			dropOne(m, "a repeated chunk")
			continue
		case meta.index > p.next || meta.count != p.meta.count || meta.size != p.meta.size ||
			len(p.buf)+len(m.Body) > cap(p.buf):
			drops = r.giveUpLocked(key, p, drops, "a chunk is missing or does not fit")
			dropOne(m, "its message was given up")
			continue
		}
		p.buf = append(p.buf, m.Body...)
		p.chunks.offsets = append(p.chunks.offsets, m.QueueOffset)
		p.chunks.logOffsets = append(p.chunks.logOffsets, m.CommitLogOffset)
		p.next++
		p.seen = now
		if p.next < p.meta.count {
			continue
		}
		r.removeLocked(key, p)
		whole, err := p.message()
		if err != nil {
			r.droppedMsgs.Add(1)
			r.dropped.Add(int64(len(p.chunks.offsets)))
			r.log.Warn().Err(err).Str("msgID", meta.id).Msg("chunked message dropped")
			drops = append(drops, chunkDrop{scope: scope, offsets: p.chunks.offsets})
			continue
		}
		out = append(out, whole)
	}
	newest := int64(-1)
	if len(msgs) > 0 {
		newest = msgs[len(msgs)-1].lastOffset()
	}
	for key, p := range r.mu.parts {
		switch {
		case key.scope == scope && newest-p.chunks.offsets[len(p.chunks.offsets)-1] > r.opts.maxGap:
			drops = r.giveUpLocked(key, p, drops, "no chunk within the max gap")
		case key.scope == scope && now.Sub(p.seen) > r.opts.maxWait:
			// Only its own queue's pulls time a partial message out: a queue that does
			// not pull (its cache is full, its pulls fail) has not missed the chunks.
			drops = r.giveUpLocked(key, p, drops, "no chunk within the max wait")
		}
	}
	return out, drops
}

// message builds the reassembled message of p, complete.
func (p *partial) message() (*MessageExt, error) {
	if len(p.buf) != p.meta.size {
		return nil, fmt.Errorf("client: chunks of %d bytes for a payload of %d", len(p.buf), p.meta.size)
	}
	body := p.buf
	if p.meta.zlib {
		var err error
		if body, err = message.Decompress(p.buf, p.meta.bodySize); err != nil {
			return nil, fmt.Errorf("client: chunked message body: %w", err)
		}
	}
	if len(body) != p.meta.bodySize {
		return nil, fmt.Errorf("client: chunked message body of %d bytes, %d announced", len(body), p.meta.bodySize)
	}
	whole := *p.first
	whole.Body = body
	whole.Properties = maps.Clone(p.first.Properties)
	for _, k := range [...]string{PropertyChunkID, PropertyChunkIndex, PropertyChunkCount, PropertyChunkSize,
		PropertyChunkBodySize, PropertyChunkZlib} {
		delete(whole.Properties, k)
	}
	whole.Properties[message.PropertyUniqKey] = p.meta.id
	whole.MsgID = p.meta.id
	chunks := p.chunks
	whole.chunks = &chunks
	return &whole, nil
}

// removeLocked forgets the partial message p of key.
func (r *reassembler) removeLocked(key partKey, p *partial) {
	delete(r.mu.parts, key)
	r.partials.Store(int64(len(r.mu.parts)))
	r.mu.used -= cap(p.buf)
}

// giveUpLocked drops the partial message p of key, adding its chunks to drops.
func (r *reassembler) giveUpLocked(key partKey, p *partial, drops []chunkDrop, why string) []chunkDrop {
	r.removeLocked(key, p)
	r.droppedMsgs.Add(1)
	r.dropped.Add(int64(len(p.chunks.offsets)))
	r.log.Warn().Str("msgID", p.meta.id).Int("chunks", len(p.chunks.offsets)).Int("of", p.meta.count).
		Int64("offset", p.first.QueueOffset).Msg("partial chunked message dropped: " + why)
	return append(drops, chunkDrop{scope: key.scope, offsets: p.chunks.offsets})
}

// evictOldestLocked gives up the oldest partial message for memory.
func (r *reassembler) evictOldestLocked(drops []chunkDrop) []chunkDrop {
	var oldKey partKey
	var old *partial
	for key, p := range r.mu.parts {
		if old == nil || p.born < old.born {
			oldKey, old = key, p
		}
	}
	if old == nil {
		r.mu.used = 0 // unreachable: used counts the partial messages' buffers
		return drops
	}
	return r.giveUpLocked(oldKey, old, drops, "over the reassembly memory limit")
}

// forget drops the partial messages of scope without reporting them: their queue is no
// longer consumed here.
func (r *reassembler) forget(scope any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for key, p := range r.mu.parts {
		if key.scope == scope {
			r.removeLocked(key, p)
		}
	}
}

// held is the queue offset of the first chunk of scope's oldest partial message; ok is
// false when it has none.
func (r *reassembler) held(scope any) (offset int64, ok bool) {
	if r.partials.Load() == 0 {
		return 0, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for key, p := range r.mu.parts {
		if key.scope == scope && (!ok || p.first.QueueOffset < offset) {
			offset, ok = p.first.QueueOffset, true
		}
	}
	return offset, ok
}

// ChunkStats counts what a consumer's reassembly gave up.
type ChunkStats struct {
	// DroppedChunks counts the chunks dropped: orphans, repeats, and those of the
	// dropped partial messages.
	DroppedChunks int64
	// DroppedMessages counts the partial chunked messages given up.
	DroppedMessages int64
	// Partial is how many chunked messages are being reassembled; PartialBytes their
	// buffers.
	Partial      int
	PartialBytes int
}

// stats reports r's counters.
func (r *reassembler) stats() ChunkStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return ChunkStats{DroppedChunks: r.dropped.Load(), DroppedMessages: r.droppedMsgs.Load(),
		Partial: len(r.mu.parts), PartialBytes: r.mu.used}
}

// ChunkStats reports what the consumer's reassembly of chunked messages holds and gave
// up.
func (pc *PushConsumer) ChunkStats() ChunkStats { return pc.chunks.stats() }

// ChunkStats reports what the consumer's reassembly of chunked messages holds and gave
// up.
func (p *PullConsumer) ChunkStats() ChunkStats { return p.chunks.stats() }

// ChunkStats reports what the consumer's reassembly of chunked messages holds and gave
// up.
func (lc *LitePullConsumer) ChunkStats() ChunkStats { return lc.pull.chunks.stats() }

// reassemble runs the messages a pull added to q's window through the consumer's
// reassembler: a reassembled message takes its first chunk's place in the window's
// accounting (and, orderly, enters the buffer), the chunks given up count as consumed.
// It returns the messages to hand to the handler.
func (q *processQueue) reassemble(in []*MessageExt) []*MessageExt {
	out, drops := q.pc.chunks.feed(q, in)
	for _, d := range drops {
		if dq, ok := d.scope.(*processQueue); ok {
			dq.markOffsets(d.offsets)
		}
	}
	var wholes []*MessageExt
	for _, m := range out {
		if m.chunks != nil {
			wholes = append(wholes, m)
		}
	}
	if len(wholes) == 0 {
		return out
	}
	q.mu.Lock()
	for _, m := range wholes {
		if i, ok := q.findLocked(m.QueueOffset); ok && q.mu.window[i].chunk && !q.mu.window[i].done {
			e := &q.mu.window[i]
			e.chunk, e.size = false, len(m.Body)
			q.mu.chunks--
			q.mu.count++
			q.mu.bytes += e.size
		}
	}
	if q.pc.opts.orderly {
		q.mu.buf = append(q.mu.buf, wholes...)
	}
	q.mu.Unlock()
	return out
}

// sendBackChunked settles a failed chunked message of a push consumer. CONSUMER_SEND_MSG_BACK
// copies one stored record, and the broker may spread the copies of a message's chunks
// over the retry topic's queues, where they could not be put together again; so a
// chunked message is retried locally (errChunkedRetryLocally: its queue's committed
// offset stays at its first chunk meanwhile) until it has been reconsumed max
// reconsume times, and then each of its chunks, in order, goes to the group's
// dead-letter topic (delay level -1: one queue, in order), where a Ferry consumer
// reassembles them.
func (pc *PushConsumer) sendBackChunked(ctx context.Context, q *processQueue, m *MessageExt, delayLevel int32) error {
	if delayLevel >= 0 && int(m.ReconsumeTimes) < pc.opts.maxReconsume {
		return errChunkedRetryLocally
	}
	maxRe := int32(pc.opts.maxReconsume)
	for i, off := range m.chunks.logOffsets {
		id := m.MsgID
		if i > 0 {
			id += "." + strconv.Itoa(i)
		}
		h := protocol.ConsumerSendMsgBackRequestHeader{Offset: off, Group: pc.group, DelayLevel: -1,
			OriginMsgID: id, OriginTopic: pc.c.nsWrap(m.Topic), MaxReconsumeTimes: &maxRe, BrokerName: m.Queue.BrokerName}
		if _, err := pc.c.invoke(ctx, q.addr(), protocol.NewRequest(protocol.ConsumerSendMsgBack, &h)); err != nil {
			return fmt.Errorf("client: chunk %d of %s to the dead-letter topic: %w", i, m.MsgID, err)
		}
	}
	pc.log.Info().Str("msgID", m.MsgID).Int("chunks", len(m.chunks.logOffsets)).Int32("reconsumeTimes", m.ReconsumeTimes).
		Msg("chunked message moved to the dead-letter topic")
	return nil
}

// setCommitOffset sets res's CommitOffset: its NextOffset, or the first chunk of mq's
// oldest partial message below it.
func (p *PullConsumer) setCommitOffset(mq MessageQueue, res *PullResult) {
	res.CommitOffset = res.NextOffset
	if off, ok := p.chunks.held(mq); ok && off < res.CommitOffset {
		res.CommitOffset = off
	}
}

// floorLocked is the offset a lite-pull queue may commit: its lowest buffered message (a
// reassembled message sits at its last chunk's place in the buffer but starts at its
// first), the first chunk of a message still being reassembled, or where the next pull
// starts. The caller holds LitePullConsumer.mu.
func (q *liteQueue) floorLocked() int64 {
	floor := q.next
	if q.held >= 0 {
		floor = min(floor, q.held)
	}
	for _, m := range q.buf {
		floor = min(floor, m.QueueOffset)
	}
	return floor
}
