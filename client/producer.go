package client

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
)

// SendResult is where a message was stored.
type SendResult struct {
	// MsgID is the message's client id (its UNIQ_KEY), what consumers and queries see.
	MsgID string
	// OffsetMsgID is the broker's id of the stored record (store host and commit-log
	// offset), what VIEW_MESSAGE_BY_ID takes.
	OffsetMsgID string
	// Topic, BrokerName and QueueID name the queue the message went to.
	Topic      string
	BrokerName string
	QueueID    int32
	// QueueOffset is the message's offset in that queue.
	QueueOffset int64
	// Chunks is how many chunks a message over the max body size was sent in (chunk.go);
	// OffsetMsgID and QueueOffset are then its first chunk's. 0: not chunked.
	Chunks int
}

// MessageQueue names one queue of a topic, as a QueueSelector sees it.
type MessageQueue struct {
	Topic      string
	BrokerName string
	QueueID    int32
}

// QueueSelector picks the queue of a message among a topic's writable queues; it returns
// an index into queues. Messages that must stay in order (the same sharding key) must get
// the same queue.
type QueueSelector interface {
	Select(msg *message.Message, queues []MessageQueue) int
}

// QueueSelectorFunc adapts a function to QueueSelector.
type QueueSelectorFunc func(msg *message.Message, queues []MessageQueue) int

// Select implements QueueSelector.
func (f QueueSelectorFunc) Select(msg *message.Message, queues []MessageQueue) int {
	return f(msg, queues)
}

// HashSelector sends messages with the same sharding key (message.PropertyShardingKey,
// else the first of their keys) to the same queue, for ordered messages. Messages without
// either go to queue 0.
var HashSelector QueueSelector = QueueSelectorFunc(func(msg *message.Message, queues []MessageQueue) int {
	key := msg.ShardingKey()
	if key == "" {
		if keys := msg.Keys(); len(keys) > 0 {
			key = keys[0]
		}
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(key))
	return int(h.Sum32() % uint32(len(queues)))
})

// ProducerOption sets one producer setting.
type ProducerOption func(*producerOptions)

// producerOptions are a Producer's settings.
type producerOptions struct {
	linger        time.Duration
	batchBytes    int
	batchMessages int
	retries       int
	maxBodySize   int
	compressOver  int
	maxMsgSize    int // larger bodies are refused; those over maxBodySize are chunked (chunk.go)
	selector      QueueSelector
	noFaultAvoid  bool
	idempotent    bool
}

func defaultProducerOptions() producerOptions {
	return producerOptions{
		linger:        500 * time.Microsecond,
		batchBytes:    256 << 10,
		batchMessages: 1024,
		retries:       2,
		maxBodySize:   message.DefaultMaxBodySize,
		maxMsgSize:    DefaultMaxMessageSize,
		compressOver:  4 << 10,
	}
}

// validate reports every invalid setting, joined.
func (o *producerOptions) validate() error {
	var errs []error
	if o.linger < 0 {
		errs = append(errs, fmt.Errorf("%w: linger %v is negative", ErrInvalidOptions, o.linger))
	}
	if o.batchBytes <= 0 || o.batchMessages <= 0 || o.batchMessages > 65536 {
		errs = append(errs, fmt.Errorf("%w: batch limits %d bytes / %d messages (1..65536)", ErrInvalidOptions, o.batchBytes, o.batchMessages))
	}
	if o.retries < 0 || o.maxBodySize <= 0 || o.compressOver <= 0 || o.maxMsgSize < 0 {
		errs = append(errs, fmt.Errorf("%w: retries, max body and message sizes and compression threshold", ErrInvalidOptions))
	}
	return errors.Join(errs...)
}

// WithLinger bounds how long a message waits for others to share its batch request
// while an earlier request to the same queue is in flight (default 500 µs; 0 sends every
// message as soon as a request slot is free). A message never waits when nothing is in
// flight, so a lone synchronous sender pays no linger.
func WithLinger(d time.Duration) ProducerOption { return func(o *producerOptions) { o.linger = d } }

// WithBatchLimits bounds one automatic batch request (default 256 KiB, 1024 messages).
func WithBatchLimits(bytes, messages int) ProducerOption {
	return func(o *producerOptions) { o.batchBytes, o.batchMessages = bytes, messages }
}

// WithRetries sets how many times a send that failed retriably is tried again, on
// another broker when the producer picks the queue (default 2).
func WithRetries(n int) ProducerOption { return func(o *producerOptions) { o.retries = n } }

// WithMaxBodySize sets the largest body sent as one message (default 4 MiB, the
// broker's); Send and SendAsync send a larger one in chunks (chunk.go, up to
// WithMaxMessageSize), the other sends refuse it.
func WithMaxBodySize(n int) ProducerOption { return func(o *producerOptions) { o.maxBodySize = n } }

// WithCompressOver compresses (zlib) bodies larger than n bytes (default 4 KiB).
func WithCompressOver(n int) ProducerOption { return func(o *producerOptions) { o.compressOver = n } }

// WithoutFaultAvoidance turns off latency-based fault avoidance (on by default; see
// fault.go): the round robin then never passes over a slow or failing broker, only the
// broker of a retry's failed attempt.
func WithoutFaultAvoidance() ProducerOption {
	return func(o *producerOptions) { o.noFaultAvoid = true }
}

// WithIdempotence makes every send safe to repeat on topics with a dedup window (the
// dedupWindow topic attribute, docs/delivery.md), where the broker answers a message it
// already stored with its first answer and stores nothing:
//
//   - a send whose outcome is unknown (no answer: a timeout, a lost connection) is
//     retried on the same broker group, whose dedup memory knows it, instead of another
//     (the group's new master after a failover: its memory is refilled from the log);
//   - the message's id (UNIQ_KEY) is fixed on its first send and written into msg, so
//     sending the same *message.Message again after an error is the same message to the
//     broker;
//   - a message's queue follows from its id (a hash) rather than the round robin, so a
//     resend goes to the group of the first send (fault avoidance still passes over a
//     failing group);
//   - each message goes in its own request (no automatic batching, which the broker
//     would deduplicate batch by batch); SendBatch still sends one batch, recognised as
//     a whole by its first message's id.
//
// On a topic without a dedup window these retries can still store a message twice.
func WithIdempotence() ProducerOption { return func(o *producerOptions) { o.idempotent = true } }

// WithSelector makes the producer choose queues with s (HashSelector for ordered
// messages). Without one, the producer spreads batches round robin.
func WithSelector(s QueueSelector) ProducerOption { return func(o *producerOptions) { o.selector = s } }

// Producer sends messages of one producer group. Sends to the same topic (and, with a
// selector, the same queue) are batched automatically: while a request to it is in
// flight, new messages accumulate (for at most the linger time, up to the batch limits)
// and go out together as one SEND_BATCH_MESSAGE, each still getting its own SendResult.
// It is safe for concurrent use.
type Producer struct {
	c     *Client
	group string
	opts  producerOptions
	rr    atomic.Uint32
	fault *faultTable // nil: fault avoidance off

	mu struct {
		sync.Mutex
		lanes  map[laneKey]*lane
		closed bool
	}
	inflight sync.WaitGroup // requests and linger timers
	bodies   sync.Pool      // of *[]byte: SEND_BATCH_MESSAGE bodies, reused once written
	outs     sync.Pool      // of *outgoing, zeroed: given back by automatic batches
}

// NewProducer returns a producer of group on c.
func (c *Client) NewProducer(group string, opts ...ProducerOption) (*Producer, error) {
	group = c.nsWrap(group) // namespace.go
	if err := protocol.ValidateGroup(group); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	o := defaultProducerOptions()
	for _, opt := range opts {
		opt(&o)
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	p := &Producer{c: c, group: group, opts: o}
	if !o.noFaultAvoid {
		p.fault = newFaultTable(time.Now)
	}
	p.mu.lanes = make(map[laneKey]*lane)
	c.groups.Lock()
	c.groups.producers[group]++
	c.groups.Unlock()
	return p, nil
}

// Close waits for the sends in flight to complete (each completes or fails) and stops
// the producer; later sends fail with ErrClosed.
func (p *Producer) Close() error {
	p.mu.Lock()
	if p.mu.closed {
		p.mu.Unlock()
		return nil
	}
	p.mu.closed = true
	lanes := make([]*lane, 0, len(p.mu.lanes))
	for _, l := range p.mu.lanes {
		lanes = append(lanes, l)
	}
	p.mu.Unlock()
	for _, l := range lanes {
		p.flush(l)
	}
	p.inflight.Wait()
	p.c.groups.Lock()
	if p.c.groups.producers[p.group]--; p.c.groups.producers[p.group] <= 0 {
		delete(p.c.groups.producers, p.group)
	}
	p.c.groups.Unlock()
	return nil
}

// Send sends msg and waits for the broker's answer or ctx's end.
func (p *Producer) Send(ctx context.Context, msg *message.Message) (SendResult, error) {
	type outcome struct {
		res SendResult
		err error
	}
	ch := make(chan outcome, 1)
	p.SendAsync(ctx, msg, func(r SendResult, err error) { ch <- outcome{r, err} })
	select {
	case o := <-ch:
		return o.res, o.err
	case <-ctx.Done():
		return SendResult{}, fmt.Errorf("client: send to %s: %w", msg.Topic, ctx.Err())
	}
}

// SendAsync sends msg and calls done exactly once with its result, on a client goroutine
// (done must not block for long). ctx bounds the whole send, retries included.
func (p *Producer) SendAsync(ctx context.Context, msg *message.Message, done func(SendResult, error)) {
	p.sendAsync(ctx, msg, false, done)
}

// sendAsync is SendAsync; tombstone allows (and requires) an empty body.
func (p *Producer) sendAsync(ctx context.Context, msg *message.Message, tombstone bool, done func(SendResult, error)) {
	if len(msg.Body) > p.opts.maxBodySize {
		p.sendChunked(ctx, msg, done) // chunk.go
		return
	}
	out, err := p.prepareAs(msg, tombstone)
	if err != nil {
		done(SendResult{}, err)
		return
	}
	r, err := p.c.route(ctx, out.topic)
	if err != nil {
		done(SendResult{}, err)
		return
	}
	key := laneKey{topic: out.topic, queue: -1}
	if p.opts.selector != nil {
		qs := r.messageQueues()
		i := p.opts.selector.Select(msg, qs)
		if i < 0 || i >= len(qs) {
			done(SendResult{}, fmt.Errorf("%w: the selector picked queue %d of %d", ErrIllegalMessage, i, len(qs)))
			return
		}
		key.queue = int32(i)
	}
	if !out.batchable || p.opts.idempotent {
		p.sendOne(ctx, r, key, out, done)
		return
	}
	p.enqueue(ctx, r, key, out, done)
}

// SendOneway sends msg without waiting for (or getting) an answer.
func (p *Producer) SendOneway(ctx context.Context, msg *message.Message) error {
	out, err := p.prepare(msg)
	if err != nil {
		return err
	}
	r, err := p.c.route(ctx, out.topic)
	if err != nil {
		return err
	}
	q := r.queues[int(p.rr.Add(1))%len(r.queues)]
	if p.opts.selector != nil {
		qs := r.messageQueues()
		if i := p.opts.selector.Select(msg, qs); i >= 0 && i < len(qs) {
			q = r.queues[i]
		}
	}
	req := p.singleRequest(q, out)
	if err := p.c.invokeOneway(ctx, q.addr, req); err != nil {
		return fmt.Errorf("client: oneway send: %w", err)
	}
	return nil
}

// SendBatch sends msgs, which must share a topic and have no delay, as one
// SEND_BATCH_MESSAGE request, and returns each message's result.
func (p *Producer) SendBatch(ctx context.Context, msgs []*message.Message) ([]SendResult, error) {
	if len(msgs) == 0 {
		return nil, nil
	}
	outs := make([]*outgoing, len(msgs))
	for i, m := range msgs {
		out, err := p.prepare(m)
		if err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
		if m.Topic != msgs[0].Topic || !out.batchable {
			return nil, fmt.Errorf("%w: message %d: a batch holds messages of one topic without delay", ErrIllegalMessage, i)
		}
		outs[i] = out
	}
	r, err := p.c.route(ctx, outs[0].topic)
	if err != nil {
		return nil, err
	}
	type outcome struct {
		res []SendResult
		err error
	}
	ch := make(chan outcome, 1)
	b := &batch{key: laneKey{topic: outs[0].topic, queue: -1}, ctx: ctx, outs: outs}
	b.done = func(res []SendResult, err error) { ch <- outcome{res, err} }
	p.inflight.Add(1)
	p.sendBatch(r, b, 0)
	select {
	case o := <-ch:
		return o.res, o.err
	case <-ctx.Done():
		return nil, fmt.Errorf("client: batch send to %s: %w", msgs[0].Topic, ctx.Err())
	}
}

// outgoing is a message ready for the wire.
type outgoing struct {
	topic     string
	body      []byte
	props     []byte
	flag      int32
	sysFlag   int32
	uniq      string
	batchable bool
	// propsBuf backs props when they fit (a UNIQ_KEY with a few other properties), so a
	// message costs one allocation less.
	propsBuf [96]byte
}

// prepare checks msg against the broker's limits, gives it a UNIQ_KEY and encodes its
// properties (compressing a large body); its topic goes in the client's namespace.
func (p *Producer) prepare(msg *message.Message) (*outgoing, error) {
	return p.prepareAs(msg, false)
}

// prepareAs is prepare; tombstone requires an empty body (SendTombstone).
func (p *Producer) prepareAs(msg *message.Message, tombstone bool) (*outgoing, error) {
	topic := p.c.nsWrap(msg.Topic)
	if err := protocol.ValidateTopic(topic); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrIllegalMessage, err)
	}
	err := msg.Validate(p.opts.maxBodySize)
	switch {
	case tombstone && len(msg.Body) != 0:
		return nil, fmt.Errorf("%w: a tombstone has an empty body", ErrIllegalMessage)
	case tombstone && errors.Is(err, message.ErrBodyEmpty):
		err = nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrIllegalMessage, err)
	}
	out, _ := p.outs.Get().(*outgoing)
	if out == nil {
		out = new(outgoing)
	}
	out.topic, out.body, out.flag, out.uniq = topic, msg.Body, msg.Flag, msg.UniqKey()
	if out.uniq == "" {
		out.uniq = p.c.ids.Next()
		if p.opts.idempotent {
			msg.SetUniqKey(out.uniq) // a resend of msg is the same message
		}
	}
	props := out.propsBuf[:0]
	for k, v := range msg.Properties {
		if k == message.PropertyUniqKey {
			continue
		}
		props = message.AppendPair(props, k, []byte(v))
	}
	props = message.AppendPair(props, message.PropertyUniqKey, []byte(out.uniq))
	out.props = props
	// A broker never delays a batch item: delayed and timer messages go on their own.
	out.batchable = !msg.HasTimer()
	if len(msg.Body) > p.opts.compressOver {
		if z, err := message.Compress(msg.Body, 5); err == nil && len(z) < len(msg.Body) {
			out.body, out.sysFlag = z, out.sysFlag|message.SysFlagCompressed
			out.batchable = false // batch items are never compressed
		}
	}
	return out, nil
}

// messageQueues lists the route's queues for a selector.
func (r *topicRoute) messageQueues() []MessageQueue {
	qs := make([]MessageQueue, len(r.queues))
	for i, q := range r.queues {
		qs[i] = MessageQueue{Topic: r.topic, BrokerName: q.broker, QueueID: q.id}
	}
	return qs
}

// singleRequest builds a SEND_MESSAGE_V2 request.
func (p *Producer) singleRequest(q queue, out *outgoing) *remoting.Command {
	h := protocol.SendMessageRequestHeaderV2{SendMessageRequestHeader: protocol.SendMessageRequestHeader{
		ProducerGroup: p.group, Topic: out.topic, DefaultTopic: protocol.AutoCreateTopicKey,
		DefaultTopicQueueNums: defaultAutoQueues, QueueID: q.id, SysFlag: out.sysFlag,
		BornTimestamp: time.Now().UnixMilli(), Flag: out.flag, Properties: string(out.props),
		BrokerName: q.broker,
	}}
	req := protocol.NewRequest(protocol.SendMessageV2, &h)
	req.Body = out.body
	return req
}

// sendOne sends one message on its own request, retrying as the producer's settings say.
func (p *Producer) sendOne(ctx context.Context, r *topicRoute, key laneKey, out *outgoing, done func(SendResult, error)) {
	b := &batch{key: key, ctx: ctx, outs: []*outgoing{out}}
	b.done = func(res []SendResult, err error) {
		if err != nil {
			done(SendResult{}, err)
			return
		}
		done(res[0], nil)
	}
	if !p.enter() {
		done(SendResult{}, ErrClosed)
		return
	}
	p.sendBatch(r, b, 0)
}

// enter counts a request in flight unless the producer is closed.
func (p *Producer) enter() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.closed {
		return false
	}
	p.inflight.Add(1)
	return true
}

// pickQueue chooses the queue of an attempt: the lane's own queue with a selector,
// otherwise round robin, passing over brokers the fault table avoids (fault.go) and the
// broker of the previous failed attempt.
func (p *Producer) pickQueue(r *topicRoute, key laneKey, avoid string) queue {
	return p.pickQueueFrom(r, key, avoid, int(p.rr.Add(1)))
}

// pickQueueFrom is pickQueue with the round robin starting at start.
func (p *Producer) pickQueueFrom(r *topicRoute, key laneKey, avoid string, start int) queue {
	if key.queue >= 0 {
		return r.queues[int(key.queue)%len(r.queues)]
	}
	n := len(r.queues)
	for i := range n {
		if q := r.queues[(start+i)%n]; q.broker != avoid && p.fault.available(q.broker) {
			return q
		}
	}
	for i := range n {
		if q := r.queues[(start+i)%n]; q.broker != avoid {
			return q
		}
	}
	return r.queues[start%n]
}

// idHash is the FNV-1a hash of a message id, as a non-negative int.
func idHash(id string) int {
	h := uint32(2166136261)
	for i := range len(id) {
		h ^= uint32(id[i])
		h *= 16777619
	}
	return int(h >> 1)
}

// stickTo returns a queue of the broker group of b's previous attempt, for a retry whose
// first outcome is unknown under WithIdempotence (the group's dedup memory answers it,
// whatever the queue); def when the route no longer has the group.
func (p *Producer) stickTo(r *topicRoute, b *batch, def queue) queue {
	if def.broker == b.lastBroker {
		return def
	}
	for _, q := range r.queues {
		if q.broker == b.lastBroker {
			return q
		}
	}
	return def
}

// sendBatch sends b (one message: SEND_MESSAGE_V2; more: SEND_BATCH_MESSAGE) as attempt
// number attempt, retrying retriable failures. It ends one inflight count.
func (p *Producer) sendBatch(r *topicRoute, b *batch, attempt int) {
	var q queue
	if p.opts.idempotent {
		// The queue follows from the message's id, so a resend of the message goes
		// where its first send went, to the broker group that remembers it.
		q = p.pickQueueFrom(r, b.key, b.lastBroker, idHash(b.outs[0].uniq))
	} else {
		q = p.pickQueue(r, b.key, b.lastBroker)
	}
	if b.stick {
		q = p.stickTo(r, b, q)
	}
	var req *remoting.Command
	if len(b.outs) == 1 {
		req = p.singleRequest(q, b.outs[0])
	} else {
		var err error
		if req, err = p.batchRequest(q, b); err != nil {
			b.finish(nil, err)
			p.inflight.Done()
			return
		}
	}
	sent := time.Now()
	p.c.invokeAsync(b.ctx, q.addr, req, func(resp *remoting.Command, err error) {
		if err != nil {
			var be *BrokerError
			answered := errors.As(err, &be)
			retriable := !answered || be.Retriable()
			if !errors.Is(err, ErrClosed) && b.ctx.Err() == nil {
				p.fault.update(q.broker, time.Since(sent), retriable)
			}
			if !answered && !errors.Is(err, ErrClosed) {
				p.c.refreshAfterFailure(r.topic, r) // the broker may be gone: a failover
			}
			if retriable && attempt < p.opts.retries && b.ctx.Err() == nil && !errors.Is(err, ErrClosed) {
				b.lastBroker, b.stick = q.broker, p.opts.idempotent && !answered
				p.c.forgetRoute(r.topic)
				if nr, rerr := p.c.route(b.ctx, r.topic); rerr == nil {
					r = nr
				}
				p.sendBatch(r, b, attempt+1)
				return
			}
			p.c.tracer.sentTrace(p.group, q, b, resp, err, time.Since(sent)) // trace.go
			b.finish(nil, err)
			p.inflight.Done()
			return
		}
		p.fault.update(q.broker, time.Since(sent), false)
		p.c.tracer.sentTrace(p.group, q, b, resp, nil, time.Since(sent))
		b.succeed(r, q, resp)
		p.inflight.Done()
	})
}

// batchRequest builds a SEND_BATCH_MESSAGE request from b's messages.
func (p *Producer) batchRequest(q queue, b *batch) (*remoting.Command, error) {
	size := 0
	for _, o := range b.outs {
		size += protocol.BatchItemSize(len(o.body), len(o.props))
	}
	box, _ := p.bodies.Get().(*[]byte)
	if box == nil || cap(*box) < size {
		nb := make([]byte, 0, size)
		box = &nb
	}
	body := (*box)[:0]
	for _, o := range b.outs {
		var err error
		body, err = protocol.AppendBatchItem(body, protocol.BatchItem{Flag: o.flag, Body: o.body, Properties: o.props})
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrIllegalMessage, err)
		}
	}
	h := protocol.SendMessageRequestHeaderV2{SendMessageRequestHeader: protocol.SendMessageRequestHeader{
		ProducerGroup: p.group, Topic: b.key.topic, DefaultTopic: protocol.AutoCreateTopicKey,
		DefaultTopicQueueNums: defaultAutoQueues, QueueID: q.id, BornTimestamp: time.Now().UnixMilli(),
		Batch: true, BrokerName: q.broker,
	}}
	req := protocol.NewRequest(protocol.SendBatchMessage, &h)
	req.Body = body
	// The connection no longer needs the body once the frame is written (or failed to
	// be): the next batch reuses it.
	req.OnWritten = func(error) {
		*box = body[:0]
		p.bodies.Put(box)
	}
	return req, nil
}

// eachResult decodes a send response and calls fn with the result of each message of b,
// in order.
func eachResult(r *topicRoute, q queue, b *batch, resp *remoting.Command, fn func(i int, res SendResult)) error {
	var h protocol.SendMessageResponseHeader
	if err := h.DecodeExt(resp.ExtFields); err != nil {
		return fmt.Errorf("client: send response from %s: %w", q.addr, err)
	}
	if n := strings.Count(h.MsgID, ",") + 1; n != len(b.outs) {
		return fmt.Errorf("client: %s answered %d message ids for %d messages", q.addr, n, len(b.outs))
	}
	ids := h.MsgID
	for i, o := range b.outs {
		var id string
		id, ids, _ = strings.Cut(ids, ",")
		fn(i, SendResult{MsgID: o.uniq, OffsetMsgID: id, Topic: r.topic, BrokerName: q.broker,
			QueueID: h.QueueID, QueueOffset: h.QueueOffset + int64(i)})
	}
	return nil
}
