package client

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
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
//   - one commit loop (offsets.go): commits every queue's offset every commit interval
//     (broadcasting: into the local offsets file, broadcast.go);
//   - one pull loop per assigned queue (pull.go), which feeds consume tasks to
//   - the worker pool (this file), which runs the handler and sends failures back;
//     orderly consumers have instead one consume loop per queue (orderly.go), at most
//     WithConsumeGoroutines of them in the handler at once;
//   - orderly consumers in clustering mode: one lock loop (orderly.go) that takes and
//     renews the queues' broker locks;
//   - one short-lived goroutine per dropped queue (waits for its handlers, commits,
//     unlocks) and per batch waiting for a local retry.
//
// Locks, in the order they may be taken: rebalanceMu (one rebalance at a time), lockMu
// (one LOCK/UNLOCK exchange at a time: a dropped queue's unlock never overtakes a lock
// request that still names it), PushConsumer.mu (the queue table), processQueue.mu (the
// cached messages and lock state of one queue). processQueue.commitMu serializes the
// commits of one queue and localOffsets' locks guard the offsets file; Client.groups may
// be taken while holding none of them. No lock is held across a request except
// rebalanceMu, lockMu and commitMu.

// ConsumeResult is a handler's verdict on the messages it was given.
type ConsumeResult int

// Consume results.
const (
	// ConsumeSuccess: the messages are consumed; their offsets may be committed.
	ConsumeSuccess ConsumeResult = iota
	// ConsumeRetryLater: deliver the messages again later (through the group's retry
	// topic, with the broker's growing delays, until the max reconsume times; then they go
	// to the group's dead-letter topic). An orderly consumer instead holds the queue and
	// hands the same messages to the handler again after the suspend time
	// (WithSuspendTime); a broadcasting consumer drops them.
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
// worker goroutines, concurrently with other batches, even of the same queue — except
// with WithOrderly, where a queue's batches are handled one at a time, in queue order.
// ctx is cancelled when the consumer is closing; a handler that then returns
// ConsumeRetryLater leaves its messages unconsumed — their offsets uncommitted — for the
// queue's next owner or the next start, instead of sending them back. A panic counts as
// ConsumeRetryLater.
type ConsumeFunc func(ctx context.Context, msgs []*MessageExt) ConsumeResult

// MessageExt is a message as a consumer receives it: the producer's message (topic, flag,
// body, properties — with Tags, Keys and the other accessors of message.Message) and where
// and when the broker stored it. The messages of one pull share their memory (the body
// aliases the pull answer; the structs, ids and property strings are allocated together):
// keeping one keeps that of the whole pull; copy what is kept for long.
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

	chunks *chunkSet // a reassembled chunked message: its chunks (chunk_reassemble.go)
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
	orderly       bool
	orderlyRetry  time.Duration // orderly: the suspend time before a local retry
	broadcast     bool
	offsetsDir    string // broadcasting: where the offsets file lives ("": the default)
	allocate      AllocateFunc
	chunks        reassemblyOptions // chunk_reassemble.go
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
		orderlyRetry:  time.Second,
		allocate:      AllocateAveragely,
		chunks:        defaultReassemblyOptions(),
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
	if o.orderlyRetry <= 0 || o.orderlyRetry > time.Hour {
		bad("suspend time %v (0..1h]", o.orderlyRetry)
	}
	if o.allocate == nil {
		bad("nil allocation strategy")
	}
	errs = append(errs, o.chunks.validate())
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
// the broker moves it to the group's dead-letter topic %DLQ%<group> (default 16). An
// orderly consumer counts its local retries: a message that fails 1 + n times is sent
// to the dead-letter topic (CONSUMER_SEND_MSG_BACK with delay level -1) and its queue
// moves on; a broadcasting one drops it instead.
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

// WithOrderly makes the consumer orderly: each queue's messages are handled one batch at
// a time, in queue order, so messages of one sharding key (sent to one queue with
// HashSelector) are handled in the order they were sent. In clustering mode the
// consumer holds a broker lock on each queue it consumes (LOCK_BATCH_MQ, renewed every
// 20 s; a lock not renewed for 30 s is no longer trusted and the queue pauses) and
// consumes a queue only while it holds it; it releases the lock (UNLOCK_BATCH_MQ) when
// the queue moves to another member and on Close, after the batch in flight and the
// offset commit, so the next owner starts exactly after what this one consumed. A batch
// whose handler returns ConsumeRetryLater blocks its queue (only that one) and is handed
// to the handler again after the suspend time (WithSuspendTime), with ReconsumeTimes
// counting the failures, until WithMaxReconsumeTimes.
func WithOrderly() ConsumerOption { return func(o *consumerOptions) { o.orderly = true } }

// WithSuspendTime sets how long an orderly consumer's queue waits before its handler
// gets a failed batch again (default 1 s).
func WithSuspendTime(d time.Duration) ConsumerOption {
	return func(o *consumerOptions) { o.orderlyRetry = d }
}

// WithBroadcasting makes the consumer a broadcasting one: every member of the group
// consumes every queue of the topic, so each gets every message. Offsets are kept by
// the member itself, in a file per group (see WithOffsetsDir), written every commit
// interval and on Close, and read at Start; the brokers' offsets of the group are
// neither read nor written. Failed messages are not retried through the broker (orderly
// broadcasting consumers retry them locally) and the retry topic is not subscribed.
func WithBroadcasting() ConsumerOption { return func(o *consumerOptions) { o.broadcast = true } }

// WithOffsetsDir sets the directory of a broadcasting consumer's offsets file,
// <dir>/<group>.offsets (default: ferry/offsets under os.UserCacheDir). Members of one
// group that run on one machine need a directory each.
func WithOffsetsDir(dir string) ConsumerOption {
	return func(o *consumerOptions) { o.offsetsDir = dir }
}

// WithAllocation sets how the members of a group split a topic's queues in clustering
// mode (default AllocateAveragely; AllocateConsistentHash moves fewer queues when
// members come and go). Every member of a group must use the same strategy.
func WithAllocation(f AllocateFunc) ConsumerOption {
	return func(o *consumerOptions) { o.allocate = f }
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
	typ     protocol.ExpressionType // "" (TAG) or SQL92 (sql92.go)
}

// newSubscription parses a TAG expression: "*" (or empty) or tags joined by "||"; or an
// expression SQL92 made.
func newSubscription(topic, expr string, retry bool) (*subscription, error) {
	s := &subscription{topic: topic, expr: protocol.SubscribeAll, version: time.Now().UnixMilli(), retry: retry}
	if sql, ok := cutSQL92(expr); ok {
		return newSQL92Subscription(topic, sql, s)
	}
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
		CodeSet: protocol.CodeSet(s.codes), SubVersion: s.version, ExpressionType: s.exprType()}
}

// matches reports whether a message with tags passes the subscription (the broker
// filters by hash code; this removes collisions).
func (s *subscription) matches(tags string) bool {
	return s.tags == nil || slices.Contains(s.tags, tags)
}

// matchesRaw is matches of the TAGS property of raw properties (the last one, as
// message.ParseProperties keeps), without allocating.
func (s *subscription) matchesRaw(props []byte) bool {
	if s.tags == nil {
		return true
	}
	v, _ := message.LookupProperty(props, message.PropertyTags)
	for _, t := range s.tags {
		if t == string(v) {
			return true
		}
	}
	return false
}

// Consumer states.
const (
	consumerNew = iota
	consumerStarted
	consumerClosed
)

// PushConsumer consumes a topic as a member of a consumer group. In clustering mode (the
// default) the group's members share the topic's queues (average allocation by default,
// recomputed when members come and go), and each message is handled by one member; in
// broadcasting mode (WithBroadcasting) every member consumes every queue. Messages are
// pulled with long polling, handled concurrently by a pool of goroutines (or, with
// WithOrderly, one batch at a time per queue), and their offsets committed to the
// brokers (broadcasting: to a local file). A message whose handler asks to retry goes
// back to the broker (CONSUMER_SEND_MSG_BACK) and returns later through the group's
// retry topic, which the consumer subscribes too; after the max reconsume times it goes
// to the group's dead-letter topic. Create it with Client.NewPushConsumer, then Start
// it; Close it when done. Its methods are safe for concurrent use.
type PushConsumer struct {
	c          *Client
	group      string
	retryTopic string          // the group's retry topic (subscribed in clustering mode only)
	subs       []*subscription // the topic, then the retry topic
	handler    ConsumeFunc
	opts       consumerOptions
	log        zerolog.Logger

	tasks    chan *consumeTask
	slots    chan struct{}            // orderly: a token per handler call running; capacity workers
	kick     chan struct{}            // rebalance now; capacity 1
	lockKick chan struct{}            // orderly: lock the queues that wait for it now; capacity 1
	brokers  atomic.Pointer[[]string] // master addresses of the subscribed topics
	local    *localOffsets            // broadcasting: the offsets file; nil in clustering mode
	chunks   *reassembler             // chunked messages being put together (chunk_reassemble.go)

	ctx    context.Context // cancelled by Close: pulls, handlers, loops
	cancel context.CancelFunc
	wg     sync.WaitGroup

	rebalanceMu sync.Mutex // one rebalance at a time
	lockMu      sync.Mutex // one LOCK_BATCH_MQ / UNLOCK_BATCH_MQ exchange at a time

	mu struct {
		sync.Mutex
		state     int
		startedAt time.Time // when Start ran (running info)
		queues    map[MessageQueue]*processQueue
		// draining holds, per dropped queue still finishing (handlers, commit, unlock), a
		// channel closed when it is done: the queue's next processQueue waits for it.
		draining map[MessageQueue]chan struct{}
		// reached holds, per queue dropped after consuming, the offset its processQueue
		// reached (the lowest message not consumed): the queue's next processQueue does
		// not start below it (offsets.go, startOffset).
		reached map[MessageQueue]int64
	}
}

// NewPushConsumer returns a consumer of topic for group, receiving the messages whose tag
// matches expr ("*" for all, or "tagA || tagB"), or that an SQL92(…) expression matches,
// through handler. It contacts nobody until Start. A Client holds at most one consumer per group: the brokers know a member by its
// client id.
func (c *Client) NewPushConsumer(group, topic, expr string, handler ConsumeFunc, opts ...ConsumerOption) (*PushConsumer, error) {
	group, topic = c.nsWrap(group), c.nsWrap(topic) // namespace.go
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
	subs := []*subscription{sub}
	if !o.broadcast {
		// Broadcasting consumers never send messages back, so they have no retry topic.
		retry, _ := newSubscription(protocol.RetryTopic(group), protocol.SubscribeAll, true)
		subs = append(subs, retry)
	}
	pc := &PushConsumer{
		c: c, group: group, retryTopic: protocol.RetryTopic(group), subs: subs, handler: handler, opts: o,
		log:      c.log.With().Str("group", group).Logger(),
		tasks:    make(chan *consumeTask, o.workers),
		slots:    make(chan struct{}, o.workers),
		kick:     make(chan struct{}, 1),
		lockKick: make(chan struct{}, 1),
	}
	pc.chunks = newReassembler(o.chunks, &pc.log)
	if o.broadcast {
		dir := o.offsetsDir
		if dir == "" {
			cache, err := os.UserCacheDir()
			if err != nil {
				return nil, fmt.Errorf("%w: no directory for the offsets file (%w); set WithOffsetsDir", ErrInvalidOptions, err)
			}
			dir = filepath.Join(cache, "ferry", "offsets")
		}
		pc.local = newLocalOffsets(dir, group, pc.log)
	}
	pc.brokers.Store(new([]string))
	pc.mu.queues = make(map[MessageQueue]*processQueue)
	pc.mu.draining = make(map[MessageQueue]chan struct{})
	pc.mu.reached = make(map[MessageQueue]int64)
	return pc, nil
}

// Group is the consumer group.
func (pc *PushConsumer) Group() string { return pc.group }

// Start registers the consumer with the brokers of its topic, takes its share of the
// queues and starts consuming. ctx bounds the first lookup and rebalance only. It fails
// when no name server answers, when a broker refuses an SQL92 subscription
// (*SubscriptionError), or when a broadcasting consumer's offsets directory cannot be
// created or its file read; a topic that does not exist yet is looked up again
// (every second at first) until it does.
func (pc *PushConsumer) Start(ctx context.Context) error {
	// A refused SQL92 subscription fails Start (sql92.go); no lock is held across it.
	if err := pc.c.checkSubscriptions(ctx, pc.group, pc.subs); err != nil {
		return err
	}
	pc.mu.Lock()
	switch pc.mu.state {
	case consumerStarted:
		pc.mu.Unlock()
		return fmt.Errorf("%w: consumer of %s already started", ErrInvalidOptions, pc.group)
	case consumerClosed:
		pc.mu.Unlock()
		return ErrClosed
	}
	if pc.local != nil {
		if err := pc.local.load(); err != nil {
			pc.mu.Unlock()
			return err
		}
	}
	if err := pc.c.addConsumer(pc); err != nil {
		pc.mu.Unlock()
		return err
	}
	pc.mu.state, pc.mu.startedAt = consumerStarted, time.Now()
	pc.ctx, pc.cancel = context.WithCancel(context.Background())
	if !pc.opts.orderly {
		for range pc.opts.workers {
			pc.wg.Go(pc.worker)
		}
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
	if pc.locking() {
		pc.wg.Go(pc.lockLoop)
	}
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
// (broadcasting: writes the offsets file), releases the queue locks of an orderly
// consumer and leaves the group (UNREGISTER_CLIENT), so the other members take the
// queues over at once. It is idempotent; it returns the commit, unlock and unregister
// failures.
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
	if pc.local != nil {
		errs = append(errs, pc.local.persist())
	}
	if pc.locking() {
		// After the commits: the next owner of a queue reads its offset once it has the lock.
		errs = append(errs, pc.unlock(ctx, queues))
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
	if pc.opts.broadcast {
		d.MessageModel = protocol.Broadcasting
	}
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
	if pc.ctx.Err() != nil {
		// Closing: the handler gave up because its context ended. The messages stay
		// unconsumed (their offsets uncommitted) for the queue's next owner or the next
		// start, rather than going through the retry topic.
		return
	}
	if pc.opts.broadcast {
		pc.log.Warn().Int("messages", len(t.msgs)).Str("queue", t.q.mq.String()).
			Msg("broadcasting handler failed; messages dropped")
		t.q.markDone(t.msgs)
		return
	}
	// The results of a running handler are settled even if the consumer is closing.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(pc.ctx), pc.c.opts.RequestTimeout)
	defer cancel()
	var done, failed []*MessageExt
	for _, m := range t.msgs {
		if err := pc.sendBack(ctx, t.q, m, 0); err != nil {
			if !errors.Is(err, errChunkedRetryLocally) {
				pc.log.Warn().Err(err).Str("msgID", m.MsgID).Msg("send back failed; retrying locally")
			}
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
	defer pc.c.tracer.consumeTrace(pc.group, msgs)(&res) // trace.go: SubBefore now, SubAfter last
	defer func() {
		if r := recover(); r != nil {
			pc.log.Error().Interface("panic", r).Msg("consume handler panicked; retrying later")
			res = ConsumeRetryLater
		}
	}()
	return pc.handler(pc.ctx, msgs)
}

// sendBack hands a failed message back to the broker that stored it
// (CONSUMER_SEND_MSG_BACK): with delay level 0 into %RETRY%<group> with delay level 3 +
// reconsume times, or into %DLQ%<group> once it has been reconsumed max reconsume times;
// with delay level -1 (orderly consumers) straight into %DLQ%<group>.
func (pc *PushConsumer) sendBack(ctx context.Context, q *processQueue, m *MessageExt, delayLevel int32) error {
	if m.chunks != nil {
		return pc.sendBackChunked(ctx, q, m, delayLevel) // chunk_reassemble.go
	}
	maxRe := int32(pc.opts.maxReconsume)
	h := protocol.ConsumerSendMsgBackRequestHeader{Offset: m.CommitLogOffset, Group: pc.group, DelayLevel: delayLevel,
		OriginMsgID: m.MsgID, OriginTopic: pc.c.nsWrap(m.Topic), MaxReconsumeTimes: &maxRe, BrokerName: m.Queue.BrokerName}
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
