package client

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
)

// Message trace (RocketMQ's RIP-6). With WithTrace, a Client records what happens to
// each message its producers send and its push consumers consume, and stores the
// records in a trace topic (RMQ_SYS_TRACE_TOPIC by default) in RocketMQ's text layout
// (trace_encode.go), keyed by message id, where `ferryctl message trace`, the console
// and RocketMQ's own dashboards find them:
//
//   - Pub, when a send request completes: one per message of the request, stored or not
//     (a request closed by Close is not recorded); sends to the trace topic itself and
//     oneway sends (no answer) are not recorded, nor are a TransactionProducer's;
//   - SubBefore, when a push consumer hands messages to its handler, and SubAfter, when
//     the handler returns (success, or failed for ConsumeRetryLater and panics), tied by
//     a request id. Messages whose TRACE_ON property is "false" are not recorded.
//
// Tracing never blocks or fails a send or a consume: records go into a bounded queue
// (TraceOptions.QueueSize) and a record that finds it full is dropped and counted
// (Client.TraceStats). One dispatcher goroutine per Client, started by New and stopped
// by Close, takes records off the queue, encodes them into trace messages of up to
// TraceOptions.BatchRecords records (or about 100 KiB) and sends them asynchronously as
// producer group TraceProducerGroup, with at most TraceOptions.MaxInflight trace
// messages in flight; a batch goes out when full or TraceOptions.Linger after its first
// record. Close flushes what is queued (bounded by the request timeout per message)
// after the push consumers have closed, before the connections close.

// TraceProducerGroup is the producer group trace messages are sent as (RocketMQ's).
const TraceProducerGroup = "_INNER_TRACE_PRODUCER"

// Limits of one trace message: its body and its KEYS property (the broker's property
// limit is 32 KiB).
const (
	maxTraceBody = 100 << 10
	maxTraceKeys = 16 << 10
)

// TraceOptions configure message trace (WithTrace, WithTraceOptions).
type TraceOptions struct {
	// Topic receives the trace records (default RMQ_SYS_TRACE_TOPIC, which Ferry brokers
	// create at start).
	Topic string
	// QueueSize bounds the records waiting to be sent; a record that finds the queue
	// full is dropped and counted (default 4096).
	QueueSize int
	// BatchRecords is the most records one trace message holds (default 100).
	BatchRecords int
	// Linger is how long a batch's first record waits for more before the batch is sent
	// (default 5 ms).
	Linger time.Duration
	// MaxInflight bounds the trace messages in flight (default 4); while they are all
	// in flight, records wait in the queue.
	MaxInflight int
}

// DefaultTraceOptions are the defaults WithTrace starts from.
func DefaultTraceOptions() TraceOptions {
	return TraceOptions{Topic: protocol.TraceTopic, QueueSize: 4096, BatchRecords: 100,
		Linger: 5 * time.Millisecond, MaxInflight: 4}
}

// Validate reports every invalid setting, joined.
func (o *TraceOptions) Validate() error {
	var errs []error
	if err := protocol.ValidateTopic(o.Topic); err != nil {
		errs = append(errs, fmt.Errorf("%w: trace topic: %w", ErrInvalidOptions, err))
	}
	if o.QueueSize <= 0 || o.BatchRecords <= 0 || o.MaxInflight <= 0 {
		errs = append(errs, fmt.Errorf("%w: trace queue size %d, batch records %d and max in flight %d must be positive",
			ErrInvalidOptions, o.QueueSize, o.BatchRecords, o.MaxInflight))
	}
	if o.Linger < 0 {
		errs = append(errs, fmt.Errorf("%w: trace linger %v is negative", ErrInvalidOptions, o.Linger))
	}
	return errors.Join(errs...)
}

// WithTrace turns message trace on (see TraceOptions for the defaults): the client's
// producers and push consumers record their sends and consumes into topic, or
// RMQ_SYS_TRACE_TOPIC when topic is empty.
func WithTrace(topic string) Option {
	return func(o *Options) {
		t := DefaultTraceOptions()
		if topic != "" {
			t.Topic = topic
		}
		o.Trace = &t
	}
}

// WithTraceOptions turns message trace on with t (start from DefaultTraceOptions).
func WithTraceOptions(t TraceOptions) Option { return func(o *Options) { o.Trace = &t } }

// TraceStats counts a client's trace records.
type TraceStats struct {
	// Recorded records went into the queue.
	Recorded int64
	// Dropped records did not: the queue was full or the client closing.
	Dropped int64
	// Sent records are in trace messages the broker stored; Failed ones in trace
	// messages that could not be sent.
	Sent, Failed int64
}

// TraceStats returns the client's trace counters (zero when tracing is off).
func (c *Client) TraceStats() TraceStats {
	t := c.tracer
	if t == nil {
		return TraceStats{}
	}
	return TraceStats{Recorded: t.recorded.Load(), Dropped: t.dropped.Load(), Sent: t.sent.Load(), Failed: t.failed.Load()}
}

// traceSender sends one trace message, calling done once with the outcome.
type traceSender func(ctx context.Context, msg *message.Message, done func(error))

// tracer queues, batches and sends a client's trace records.
type tracer struct {
	opts TraceOptions
	// wireTopic is the trace topic as the client's producers name it (in the client's
	// namespace), so that the trace messages themselves are not traced.
	wireTopic string
	log       zerolog.Logger
	host      string // the client's IP address, the records' clientHost
	ids       *message.UniqKeyGenerator
	send      traceSender
	timeout   time.Duration // of one trace message
	closeFn   func() error  // closes the sender

	queue    chan *TraceRecord
	slots    chan struct{} // a token per trace message in flight
	inflight sync.WaitGroup
	stop     chan struct{}
	done     chan struct{} // closed when the dispatcher returned
	// final is set by the dispatcher when it closes: what is left shares this one
	// request timeout (until then each trace message has its own), so that Close is
	// bounded whatever the broker does. Only the dispatcher reads it.
	final  context.Context
	once   sync.Once
	closed atomic.Bool

	recorded, dropped, sent, failed atomic.Int64
}

// newTracer starts c's tracer when o is set (nil otherwise): its trace producer and its
// dispatcher.
func newTracer(c *Client, o *TraceOptions) (*tracer, error) {
	if o == nil {
		return nil, nil
	}
	p, err := c.NewProducer(TraceProducerGroup, WithRetries(1))
	if err != nil {
		return nil, fmt.Errorf("client: trace producer: %w", err)
	}
	send := func(ctx context.Context, msg *message.Message, done func(error)) {
		p.SendAsync(ctx, msg, func(_ SendResult, err error) { done(err) })
	}
	t := startTracer(*o, c.log, c.host.String(), c.ids, send, c.opts.RequestTimeout, p.Close)
	t.wireTopic = c.nsWrap(o.Topic) // read only by the client's producers, created after New
	return t, nil
}

// startTracer starts a tracer sending through send.
func startTracer(o TraceOptions, log zerolog.Logger, host string, ids *message.UniqKeyGenerator,
	send traceSender, timeout time.Duration, closeFn func() error) *tracer {
	t := &tracer{opts: o, wireTopic: o.Topic, log: log, host: host, ids: ids, send: send, timeout: timeout, closeFn: closeFn,
		queue: make(chan *TraceRecord, o.QueueSize), slots: make(chan struct{}, o.MaxInflight),
		stop: make(chan struct{}), done: make(chan struct{})}
	go t.run()
	return t
}

// close stops taking records, sends what is queued, waits for the trace messages in
// flight and closes the sender. It is idempotent and nil-safe.
func (t *tracer) close() error {
	if t == nil {
		return nil
	}
	var err error
	t.once.Do(func() {
		t.closed.Store(true)
		close(t.stop)
		<-t.done
		t.dropped.Add(int64(len(t.queue))) // raced in after the last drain
		err = t.closeFn()
	})
	return err
}

// record queues r without ever blocking.
func (t *tracer) record(r *TraceRecord) {
	if t.closed.Load() {
		t.dropped.Add(1)
		return
	}
	select {
	case t.queue <- r:
		t.recorded.Add(1)
	default:
		t.dropped.Add(1)
	}
}

// traceBatch is one trace message being built.
type traceBatch struct {
	body    []byte
	keys    []string
	keySet  map[string]struct{}
	keysLen int
	n       int
}

// add appends r and its keys (the message id always; business keys while the KEYS
// property stays under its limit).
func (b *traceBatch) add(r *TraceRecord) {
	if b.keySet == nil {
		b.keySet = make(map[string]struct{})
	}
	b.body = AppendTraceRecord(b.body, r)
	b.n++
	addKey := func(k string, always bool) {
		if _, dup := b.keySet[k]; dup || k == "" || (!always && b.keysLen+len(k)+1 > maxTraceKeys) {
			return
		}
		b.keySet[k] = struct{}{}
		b.keys = append(b.keys, k)
		b.keysLen += len(k) + 1
	}
	addKey(r.MsgID, true)
	for _, k := range message.SplitKeys(r.Keys) {
		addKey(k, false)
	}
}

// fits reports whether r may join b without passing a trace message's limits.
func (t *tracer) fits(b *traceBatch, r *TraceRecord) bool {
	return b.n < t.opts.BatchRecords && len(b.body) < maxTraceBody &&
		b.keysLen+len(r.MsgID)+len(r.Keys)+2 <= maxTraceKeys
}

// run is the dispatcher: it batches queued records and sends the batches, until close.
func (t *tracer) run() {
	defer close(t.done)
	var b traceBatch
	linger := time.NewTimer(time.Hour)
	linger.Stop()
	defer linger.Stop()
	add := func(r *TraceRecord) {
		if b.n > 0 && !t.fits(&b, r) {
			t.flush(&b)
		}
		b.add(r)
		if b.n == 1 {
			linger.Reset(t.opts.Linger)
		}
	}
	for {
		select {
		case r := <-t.queue:
			add(r)
			if b.n >= t.opts.BatchRecords {
				t.flush(&b)
			}
		case <-linger.C:
			t.flush(&b)
		case <-t.stop:
			ctx, cancel := context.WithTimeout(context.Background(), t.timeout)
			defer cancel()
			t.final = ctx
		drain:
			for {
				select {
				case r := <-t.queue:
					add(r)
				default:
					break drain
				}
			}
			t.flush(&b)
			t.inflight.Wait()
			return
		}
	}
}

// flush sends b as one trace message and empties it. It waits for a free in-flight slot;
// when closing, it gives up when t.final ends and counts b's records failed.
func (t *tracer) flush(b *traceBatch) {
	if b.n == 0 {
		return
	}
	msg := message.NewMessage(t.opts.Topic, b.body)
	msg.SetKeys(b.keys...)
	n := int64(b.n)
	*b = traceBatch{}
	var ctx context.Context
	var cancel context.CancelFunc
	if t.final != nil {
		ctx, cancel = context.WithCancel(t.final)
		select {
		case t.slots <- struct{}{}:
		case <-ctx.Done():
			cancel()
			t.failed.Add(n)
			return
		}
	} else {
		ctx, cancel = context.WithTimeout(context.Background(), t.timeout)
		t.slots <- struct{}{}
	}
	t.inflight.Add(1)
	t.send(ctx, msg, func(err error) {
		cancel()
		if err != nil {
			t.failed.Add(n)
			t.log.Debug().Err(err).Int64("records", n).Msg("trace message not sent")
		} else {
			t.sent.Add(n)
		}
		<-t.slots
		t.inflight.Done()
	})
}

// sentTrace records the Pub records of a send request's messages: resp is the broker's
// answer (nil when none came), err the request's failure. The producer calls it before
// reporting the results.
func (t *tracer) sentTrace(group string, q queue, b *batch, resp *remoting.Command, err error, cost time.Duration) {
	if t == nil || b.key.topic == t.wireTopic || errors.Is(err, ErrClosed) {
		return
	}
	region, ids := traceRegionDefault, []string(nil)
	if err == nil && resp != nil {
		var h protocol.SendMessageResponseHeader
		if h.DecodeExt(resp.ExtFields) != nil || !h.TraceOn {
			return // the broker turned tracing off (or answered nonsense: eachResult says so)
		}
		if h.MsgRegion != "" {
			region = h.MsgRegion
		}
		if ids = strings.Split(h.MsgID, ","); len(ids) != len(b.outs) {
			ids = nil
		}
	}
	now := time.Now().UnixMilli()
	for i, o := range b.outs {
		r := &TraceRecord{Type: TracePub, Timestamp: now, RegionID: region, Group: group, Topic: o.topic,
			MsgID: o.uniq, StoreHost: q.addr, BodyLength: len(o.body), CostMs: cost.Milliseconds(),
			MsgType: traceMsgType(o), Success: err == nil, ClientHost: t.host}
		if tags, ok := message.LookupProperty(o.props, message.PropertyTags); ok {
			r.Tags = string(tags)
		}
		if keys, ok := message.LookupProperty(o.props, message.PropertyKeys); ok {
			r.Keys = string(keys)
		}
		if ids != nil {
			r.OffsetMsgID = ids[i]
		}
		t.record(r)
	}
}

// traceMsgType is the Pub message type of o.
func traceMsgType(o *outgoing) int {
	if message.TransactionType(o.sysFlag) == message.TransactionPreparedType {
		return TraceMsgTransHalf
	}
	_, delayed := message.LookupProperty(o.props, message.PropertyDelayLevel)
	_, timed := message.LookupProperty(o.props, message.PropertyTimerDeliverMs)
	if delayed || timed {
		return TraceMsgDelay
	}
	return TraceMsgNormal
}

// consumeTrace records the SubBefore records of msgs, handed to group's handler now, and
// returns the function that records their SubAfter records with the handler's result.
func (t *tracer) consumeTrace(group string, msgs []*MessageExt) func(*ConsumeResult) {
	if t == nil {
		return traceNothing
	}
	begin := time.Now()
	reqID := t.ids.Next()
	traced := make([]*MessageExt, 0, len(msgs))
	for _, m := range msgs {
		if m == nil || m.Property(message.PropertyTraceSwitch) == "false" {
			continue
		}
		traced = append(traced, m)
		t.record(&TraceRecord{Type: TraceSubBefore, Timestamp: begin.UnixMilli(), RegionID: traceRegion(m),
			Group: group, RequestID: reqID, MsgID: m.MsgID, RetryTimes: int(m.ReconsumeTimes),
			Keys: m.Property(message.PropertyKeys), ClientHost: t.host})
	}
	if len(traced) == 0 {
		return traceNothing
	}
	return func(res *ConsumeResult) {
		cost, ok, code := time.Since(begin).Milliseconds(), *res == ConsumeSuccess, traceConsumeSuccess
		if !ok {
			code = traceConsumeFailed
		}
		now := time.Now().UnixMilli()
		for _, m := range traced {
			t.record(&TraceRecord{Type: TraceSubAfter, RequestID: reqID, MsgID: m.MsgID, CostMs: cost, Success: ok,
				Keys: m.Property(message.PropertyKeys), ContextCode: code, Timestamp: now, Group: group})
		}
	}
}

// traceNothing is the SubAfter recorder of an untraced consume.
func traceNothing(*ConsumeResult) {}

// traceRegion is the region a consumed message names, or the default one.
func traceRegion(m *MessageExt) string {
	if r := m.Property(message.PropertyMsgRegion); r != "" {
		return r
	}
	return traceRegionDefault
}
