package client

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/protocol"
)

// The push consumer. Goroutines, all owned by the PushConsumer and started through its
// WaitGroup (Close cancels them and waits):
//
//   - one rebalance loop (rebalance.go): every rebalance interval, at once on
//     NOTIFY_CONSUMER_IDS_CHANGED, and after a second while a route is missing;
//   - one commit loop (offsets.go): commits every queue's offset every commit interval;
//   - one pull loop per assigned queue (pull.go), which feeds consume tasks to
//   - the worker pool (this file), which runs the handler and sends failures back;
//   - one short-lived goroutine per dropped queue (waits for its handlers, commits) and
//     per batch waiting for a local retry.
//
// Locks: PushConsumer.mu guards the queue table; processQueue.mu the cached messages of
// one queue; processQueue.commitMu serializes the commits of one queue. Client.groups may
// be taken while holding none of them; no lock is held across a request except commitMu.

// ConsumeResult is a handler's verdict on the messages it was given.
type ConsumeResult int

// Consume results.
const (
	// ConsumeSuccess: the messages are consumed; their offsets may be committed.
	ConsumeSuccess ConsumeResult = iota
	// ConsumeRetryLater: deliver the messages again later (through the group's retry
	// topic, with the broker's growing delays, until the max reconsume times; then they go
	// to the group's dead-letter topic).
	ConsumeRetryLater
)

// String names the result.
func (r ConsumeResult) String() string {
	switch r {
	case ConsumeSuccess:
		return "ConsumeSuccess"
	case ConsumeRetryLater:
		return "ConsumeRetryLater"
	}
	return fmt.Sprintf("ConsumeResult(%d)", int(r))
}

// ConsumeFunc handles a batch of messages (one message unless WithConsumeBatch says
// otherwise) and returns one verdict for all of them. It runs on one of the consumer's
// worker goroutines, concurrently with other batches, even of the same queue. ctx is
// cancelled when the consumer is closing; a handler that returns ConsumeRetryLater then
// gets its messages again later. A panic counts as ConsumeRetryLater.
type ConsumeFunc func(ctx context.Context, msgs []*MessageExt) ConsumeResult

// MessageExt is a message as a consumer receives it: the producer's message (topic, flag,
// body, properties — with Tags, Keys and the other accessors of message.Message) and where
// and when the broker stored it.
type MessageExt struct {
	message.Message
	// MsgID is the producer's message id (UNIQ_KEY), or OffsetMsgID when there is none.
	MsgID string
	// OffsetMsgID is the broker's id of the stored record (store host and commit-log
	// offset).
	OffsetMsgID string
	// Queue is the queue the message was pulled from. For a redelivery it is a queue of
	// the group's retry topic, while Topic is the original topic.
	Queue MessageQueue
	// QueueOffset is the message's offset in Queue.
	QueueOffset int64
	// CommitLogOffset is the record's offset in the broker's commit log.
	CommitLogOffset int64
	// ReconsumeTimes counts the earlier failed deliveries of the message.
	ReconsumeTimes int32
	// BornTime is when the producer made the message; StoreTime when the broker stored it.
	BornTime, StoreTime time.Time
	// BornHost is the producer's address; StoreHost the broker's.
	BornHost, StoreHost netip.AddrPort
	// SysFlag holds the record's message.SysFlag* bits.
	SysFlag int32
}

// ConsumeFrom says where a consumer group starts in a queue it has no committed offset
// for.
type ConsumeFrom int

// Start positions.
const (
	// ConsumeFromLastOffset starts at the end: only messages stored from now on.
	ConsumeFromLastOffset ConsumeFrom = iota
	// ConsumeFromFirstOffset starts at the oldest message still stored.
	ConsumeFromFirstOffset
	// ConsumeFromTimestamp starts at the first message stored at or after a time
	// (WithConsumeFromTime; default half an hour before the consumer was created).
	ConsumeFromTimestamp
)

// wire is the heartbeat value of f.
func (f ConsumeFrom) wire() protocol.ConsumeFromWhere {
	switch f {
	case ConsumeFromFirstOffset:
		return protocol.ConsumeFromFirstOffset
	case ConsumeFromTimestamp:
		return protocol.ConsumeFromTimestamp
	}
	return protocol.ConsumeFromLastOffset
}

// ConsumerOption sets one push-consumer setting.
type ConsumerOption func(*consumerOptions)

// consumerOptions are a PushConsumer's settings.
type consumerOptions struct {
	from          ConsumeFrom
	fromTime      time.Time
	workers       int
	consumeBatch  int
	pullBatch     int
	cacheMessages int
	cacheBytes    int
	maxReconsume  int
	rebalance     time.Duration
	commit        time.Duration
	suspend       time.Duration
	localRetry    time.Duration
}

func defaultConsumerOptions() consumerOptions {
	return consumerOptions{
		from:          ConsumeFromLastOffset,
		fromTime:      time.Now().Add(-30 * time.Minute),
		workers:       20,
		consumeBatch:  1,
		pullBatch:     32,
		cacheMessages: 1000,
		cacheBytes:    100 << 20,
		maxReconsume:  16,
		rebalance:     20 * time.Second,
		commit:        5 * time.Second,
		suspend:       15 * time.Second,
		localRetry:    5 * time.Second,
	}
}

// validate reports every invalid setting, joined.
func (o *consumerOptions) validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidOptions}, args...)...))
	}
	if o.from < ConsumeFromLastOffset || o.from > ConsumeFromTimestamp {
		bad("unknown ConsumeFrom %d", o.from)
	}
	if o.workers <= 0 || o.workers > 1000 {
		bad("consume goroutines %d (1..1000)", o.workers)
	}
	if o.consumeBatch <= 0 || o.consumeBatch > 1024 {
		bad("consume batch %d (1..1024)", o.consumeBatch)
	}
	if o.pullBatch <= 0 || o.pullBatch > 1024 {
		bad("pull batch %d (1..1024)", o.pullBatch)
	}
	if o.cacheMessages <= 0 || o.cacheBytes <= 0 {
		bad("queue cache limits %d messages / %d bytes must be positive", o.cacheMessages, o.cacheBytes)
	}
	if o.maxReconsume < 0 || o.maxReconsume > 1000 {
		bad("max reconsume times %d (0..1000)", o.maxReconsume)
	}
	if o.rebalance <= 0 || o.commit <= 0 {
		bad("rebalance and commit intervals must be positive")
	}
	return errors.Join(errs...)
}

// WithConsumeFrom sets where the group starts in queues it has no committed offset for
// (default ConsumeFromLastOffset).
func WithConsumeFrom(f ConsumeFrom) ConsumerOption { return func(o *consumerOptions) { o.from = f } }

// WithConsumeFromTime makes the group start, in queues it has no committed offset for, at
// the first message stored at or after t (ConsumeFromTimestamp).
func WithConsumeFromTime(t time.Time) ConsumerOption {
	return func(o *consumerOptions) { o.from, o.fromTime = ConsumeFromTimestamp, t }
}

// WithConsumeGoroutines sets how many handler calls may run at once (default 20).
func WithConsumeGoroutines(n int) ConsumerOption { return func(o *consumerOptions) { o.workers = n } }

// WithConsumeBatch sets the most messages one handler call gets (default 1). A batch
// holds messages of one queue; it is retried or committed as a whole.
func WithConsumeBatch(n int) ConsumerOption { return func(o *consumerOptions) { o.consumeBatch = n } }

// WithPullBatch sets the most messages one pull request asks for (default 32).
func WithPullBatch(n int) ConsumerOption { return func(o *consumerOptions) { o.pullBatch = n } }

// WithQueueCacheLimits is flow control: a queue stops pulling while it holds this many
// pulled but unconsumed messages, or bodies of this many bytes (default 1000 messages,
// 100 MiB).
func WithQueueCacheLimits(messages, bytes int) ConsumerOption {
	return func(o *consumerOptions) { o.cacheMessages, o.cacheBytes = messages, bytes }
}

// WithMaxReconsumeTimes sets how many times a failed message is delivered again before
// the broker moves it to the group's dead-letter topic %DLQ%<group> (default 16).
func WithMaxReconsumeTimes(n int) ConsumerOption {
	return func(o *consumerOptions) { o.maxReconsume = n }
}

// WithRebalanceInterval sets how often the consumer recomputes its share of the queues
// besides reacting to membership changes at once (default 20 s).
func WithRebalanceInterval(d time.Duration) ConsumerOption {
	return func(o *consumerOptions) { o.rebalance = d }
}

// WithCommitInterval sets how often consumed offsets are committed to the brokers
// (default 5 s; they are also committed when a queue is dropped and on Close).
func WithCommitInterval(d time.Duration) ConsumerOption {
	return func(o *consumerOptions) { o.commit = d }
}

// subscription is one topic the consumer pulls: the user's topic and the group's retry
// topic.
type subscription struct {
	topic   string
	expr    string   // "*" or "a || b"
	tags    []string // nil: every message
	codes   []int32
	version int64
	retry   bool
}

// newSubscription parses a TAG expression: "*" (or empty) or tags joined by "||".
func newSubscription(topic, expr string, retry bool) (*subscription, error) {
	s := &subscription{topic: topic, expr: protocol.SubscribeAll, version: time.Now().UnixMilli(), retry: retry}
	expr = strings.TrimSpace(expr)
	if expr == "" || expr == protocol.SubscribeAll {
		return s, nil
	}
	for t := range strings.SplitSeq(expr, "||") {
		if t = strings.TrimSpace(t); t != "" && !slices.Contains(s.tags, t) {
			s.tags = append(s.tags, t)
			// The code a broker's consume queue stores: Java's String.hashCode. The
			// official Go client hashes UTF-8 bytes instead, the same for ASCII tags.
			s.codes = append(s.codes, message.JavaHash(t))
		}
	}
	if len(s.tags) == 0 {
		return nil, fmt.Errorf("%w: subscription expression %q names no tag", ErrInvalidOptions, expr)
	}
	s.expr = strings.Join(s.tags, " || ")
	return s, nil
}

// data is the heartbeat form of s.
func (s *subscription) data() protocol.SubscriptionData {
	return protocol.SubscriptionData{Topic: s.topic, SubString: s.expr, TagsSet: s.tags,
		CodeSet: protocol.CodeSet(s.codes), SubVersion: s.version, ExpressionType: protocol.ExpressionTag}
}

// matches reports whether a message with tags passes the subscription (the broker
// filters by hash code; this removes collisions).
func (s *subscription) matches(tags string) bool {
	return s.tags == nil || slices.Contains(s.tags, tags)
}

// Consumer states.
const (
	consumerNew = iota
	consumerStarted
	consumerClosed
)

// PushConsumer consumes a topic as a member of a consumer group in clustering mode:
// the group's members share the topic's queues (average allocation, recomputed when
// members come and go), and each message is handled by one member. Messages are pulled
// with long polling, handled concurrently by a pool of goroutines, and their offsets
// committed to the brokers. A message whose handler asks to retry goes back to the broker
// (CONSUMER_SEND_MSG_BACK) and returns later through the group's retry topic, which the
// consumer subscribes too; after the max reconsume times it goes to the group's
// dead-letter topic. Create it with Client.NewPushConsumer, then Start it; Close it when
// done. Its methods are safe for concurrent use.
type PushConsumer struct {
	c       *Client
	group   string
	subs    []*subscription // the topic, then the retry topic
	handler ConsumeFunc
	opts    consumerOptions
	log     zerolog.Logger

	tasks   chan *consumeTask
	kick    chan struct{}            // rebalance now; capacity 1
	brokers atomic.Pointer[[]string] // master addresses of the subscribed topics

	ctx    context.Context // cancelled by Close: pulls, handlers, loops
	cancel context.CancelFunc
	wg     sync.WaitGroup

	rebalanceMu sync.Mutex // one rebalance at a time

	mu struct {
		sync.Mutex
		state  int
		queues map[MessageQueue]*processQueue
	}
}

// NewPushConsumer returns a consumer of topic for group, receiving the messages whose tag
// matches expr ("*" for all, or "tagA || tagB") through handler. It contacts nobody until
// Start. A Client holds at most one consumer per group: the brokers know a member by its
// client id.
func (c *Client) NewPushConsumer(group, topic, expr string, handler ConsumeFunc, opts ...ConsumerOption) (*PushConsumer, error) {
	if err := protocol.ValidateGroup(group); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	if err := protocol.ValidateTopic(topic); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	if handler == nil {
		return nil, fmt.Errorf("%w: nil handler", ErrInvalidOptions)
	}
	o := defaultConsumerOptions()
	for _, opt := range opts {
		opt(&o)
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	sub, err := newSubscription(topic, expr, false)
	if err != nil {
		return nil, err
	}
	retry, _ := newSubscription(protocol.RetryTopic(group), protocol.SubscribeAll, true)
	pc := &PushConsumer{
		c: c, group: group, subs: []*subscription{sub, retry}, handler: handler, opts: o,
		log:   c.log.With().Str("group", group).Logger(),
		tasks: make(chan *consumeTask, o.workers),
		kick:  make(chan struct{}, 1),
	}
	pc.brokers.Store(new([]string))
	pc.mu.queues = make(map[MessageQueue]*processQueue)
	return pc, nil
}

// Group is the consumer group.
func (pc *PushConsumer) Group() string { return pc.group }

// Start registers the consumer with the brokers of its topic, takes its share of the
// queues and starts consuming. ctx bounds the first lookup and rebalance only. It fails
// when no name server answers; a topic that does not exist yet is looked up again
// (every second at first) until it does.
func (pc *PushConsumer) Start(ctx context.Context) error {
	pc.mu.Lock()
	switch pc.mu.state {
	case consumerStarted:
		pc.mu.Unlock()
		return fmt.Errorf("%w: consumer of %s already started", ErrInvalidOptions, pc.group)
	case consumerClosed:
		pc.mu.Unlock()
		return ErrClosed
	}
	if err := pc.c.addConsumer(pc); err != nil {
		pc.mu.Unlock()
		return err
	}
	pc.mu.state = consumerStarted
	pc.ctx, pc.cancel = context.WithCancel(context.Background())
	for range pc.opts.workers {
		pc.wg.Go(pc.worker)
	}
	pc.mu.Unlock()

	complete, err := pc.rebalance(ctx)
	if err != nil {
		return errors.Join(err, pc.Close())
	}
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if pc.mu.state != consumerStarted {
		return ErrClosed // closed meanwhile
	}
	pc.wg.Go(func() { pc.rebalanceLoop(complete) })
	pc.wg.Go(pc.commitLoop)
	return nil
}

// Queues lists the queues the consumer currently owns, sorted.
func (pc *PushConsumer) Queues() []MessageQueue {
	pc.mu.Lock()
	out := make([]MessageQueue, 0, len(pc.mu.queues))
	for mq := range pc.mu.queues {
		out = append(out, mq)
	}
	pc.mu.Unlock()
	slices.SortFunc(out, compareQueues)
	return out
}

// Close stops pulling, waits for the handlers in flight, commits the consumed offsets
// and leaves the group (UNREGISTER_CLIENT), so the other members take the queues over at
// once. It is idempotent; it returns the commit and unregister failures.
func (pc *PushConsumer) Close() error {
	pc.mu.Lock()
	state := pc.mu.state
	pc.mu.state = consumerClosed
	queues := make([]*processQueue, 0, len(pc.mu.queues))
	for _, q := range pc.mu.queues {
		queues = append(queues, q)
	}
	pc.mu.Unlock()
	if state != consumerStarted {
		return nil
	}
	pc.c.removeConsumer(pc)
	pc.cancel()
	pc.wg.Wait()

	ctx, cancel := context.WithTimeout(context.Background(), pc.c.opts.RequestTimeout)
	defer cancel()
	var errs []error
	for _, q := range queues {
		if err := pc.commit(ctx, q); err != nil {
			errs = append(errs, err)
		}
	}
	for _, addr := range *pc.brokers.Load() {
		req := protocol.NewRequest(protocol.UnregisterClient, &protocol.UnregisterClientRequestHeader{
			ClientID: pc.c.clientID, ConsumerGroup: pc.group})
		if _, err := pc.c.invoke(ctx, addr, req); err != nil {
			errs = append(errs, fmt.Errorf("client: unregister consumer %s: %w", pc.group, err))
		}
	}
	return errors.Join(errs...)
}

// consumerData is the consumer's entry in heartbeats.
func (pc *PushConsumer) consumerData() protocol.ConsumerData {
	d := protocol.ConsumerData{GroupName: pc.group, ConsumeType: protocol.ConsumePassively,
		MessageModel: protocol.Clustering, ConsumeFromWhere: pc.opts.from.wire()}
	for _, s := range pc.subs {
		d.SubscriptionDataSet = append(d.SubscriptionDataSet, s.data())
	}
	return d
}

// consumeTask is one handler call's worth of messages of one queue.
type consumeTask struct {
	q    *processQueue
	msgs []*MessageExt
}

// worker runs consume tasks until the consumer closes.
func (pc *PushConsumer) worker() {
	for {
		select {
		case <-pc.ctx.Done():
			return
		case t := <-pc.tasks:
			pc.consume(t)
		}
	}
}

// dispatch hands msgs of q to the workers in batches, blocking while they are busy. It
// returns false when q was dropped or the consumer closed; the rest stays unconsumed.
func (pc *PushConsumer) dispatch(q *processQueue, msgs []*MessageExt) bool {
	for batch := range slices.Chunk(msgs, pc.opts.consumeBatch) {
		select {
		case pc.tasks <- &consumeTask{q: q, msgs: batch}:
		case <-q.ctx.Done():
			return false
		}
	}
	return true
}

// consume runs the handler on t and settles the outcome: consumed messages leave the
// queue's cache, failed ones go back to the broker or, if that fails, are retried here.
func (pc *PushConsumer) consume(t *consumeTask) {
	if pc.ctx.Err() != nil || !t.q.enter() {
		return // not consumed: the queue's next owner (or next start) gets them
	}
	defer t.q.leave()
	if pc.call(t.msgs) == ConsumeSuccess {
		t.q.markDone(t.msgs)
		return
	}
	// The results of a running handler are settled even if the consumer is closing.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(pc.ctx), pc.c.opts.RequestTimeout)
	defer cancel()
	var done, failed []*MessageExt
	for _, m := range t.msgs {
		if err := pc.sendBack(ctx, t.q, m); err != nil {
			pc.log.Warn().Err(err).Str("msgID", m.MsgID).Msg("send back failed; retrying locally")
			failed = append(failed, m)
		} else {
			done = append(done, m)
		}
	}
	t.q.markDone(done)
	if len(failed) > 0 {
		pc.retryLocally(t.q, failed)
	}
}

// call runs the handler, turning a panic into ConsumeRetryLater.
func (pc *PushConsumer) call(msgs []*MessageExt) (res ConsumeResult) {
	defer func() {
		if r := recover(); r != nil {
			pc.log.Error().Interface("panic", r).Msg("consume handler panicked; retrying later")
			res = ConsumeRetryLater
		}
	}()
	return pc.handler(pc.ctx, msgs)
}

// sendBack hands a failed message back to the broker that stored it
// (CONSUMER_SEND_MSG_BACK): into %RETRY%<group> with delay level 3 + reconsume times, or
// into %DLQ%<group> once it has been reconsumed max reconsume times.
func (pc *PushConsumer) sendBack(ctx context.Context, q *processQueue, m *MessageExt) error {
	maxRe := int32(pc.opts.maxReconsume)
	h := protocol.ConsumerSendMsgBackRequestHeader{Offset: m.CommitLogOffset, Group: pc.group,
		OriginMsgID: m.MsgID, OriginTopic: m.Topic, MaxReconsumeTimes: &maxRe, BrokerName: m.Queue.BrokerName}
	_, err := pc.c.invoke(ctx, q.addr(), protocol.NewRequest(protocol.ConsumerSendMsgBack, &h))
	return err
}

// retryLocally hands msgs to the handler again after the local retry delay.
func (pc *PushConsumer) retryLocally(q *processQueue, msgs []*MessageExt) {
	for _, m := range msgs {
		m.ReconsumeTimes++
	}
	if !q.enter() {
		return // dropped: the queue's next owner gets them
	}
	pc.wg.Go(func() {
		defer q.leave()
		t := time.NewTimer(pc.opts.localRetry)
		defer t.Stop()
		select {
		case <-q.ctx.Done():
			return
		case <-t.C:
		}
		pc.dispatch(q, msgs)
	})
}

// requestRebalance asks the rebalance loop to run now.
func (pc *PushConsumer) requestRebalance() {
	select {
	case pc.kick <- struct{}{}:
	default:
	}
}
