package client

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/ferrymq/ferry/protocol"
)

// The lite-pull consumer (RocketMQ's DefaultLitePullConsumer). Goroutines, all owned by
// the LitePullConsumer and started through its WaitGroup (Close cancels them and waits):
//
//   - one pull loop per owned queue: finds the start offset, then pulls with long
//     polling into the queue's buffer while the buffer has room and the queue is not
//     paused;
//   - subscribe mode: one rebalance loop (every rebalance interval, at once on
//     NOTIFY_CONSUMER_IDS_CHANGED, sooner while a route or the member list is missing);
//   - auto-commit: one commit loop, and one short-lived goroutine per dropped queue that
//     commits its offset.
//
// Poll runs on the caller's goroutine: it takes buffered messages from the queues in
// turn. The offset to commit for a queue is the first message still buffered, or where
// the next pull starts when the buffer is empty: everything below it was polled (or
// filtered out).
//
// Subscribe mode (litepull_group.go) reuses the push consumer's rebalance pieces
// through a never-started PushConsumer of the group (member): its allocation (consumer
// list, heartbeat when the broker does not list us yet, the allocation strategy) and its
// broker bookkeeping (publishBrokers), so lite-pull and push members of a group agree on
// the split. A queue dropped and owned again at once may start at an offset older than
// the drop's commit (at-least-once; the push consumer waits for it, this one does not).
//
// Locks, in the order they may be taken: rebalanceMu (one rebalance at a time),
// commitMu (one commit round at a time; guards liteQueue.committed), mu (everything
// else, queue states included). Client.lite.mu is taken with none of them held, or
// under mu alone; no lock but rebalanceMu and commitMu is held across a request.

// defaultPollBatch is how many messages Poll returns at most by default.
const defaultPollBatch = 32

// LitePullOption sets one lite-pull consumer setting. Besides WithManualCommit and
// WithPollBatch, the push consumer's options that concern pulling apply:
// WithConsumeFrom, WithConsumeFromTime, WithPullBatch, WithQueueCacheLimits (the bound
// of each queue's buffer of pulled, not yet polled messages), WithCommitInterval (the
// auto-commit interval), WithRebalanceInterval and WithAllocation. WithOrderly and
// WithBroadcasting are refused; the other push options are ignored.
type LitePullOption interface{ applyLite(o *liteOptions) }

// applyLite lets a push consumer option set a lite-pull consumer.
func (f ConsumerOption) applyLite(o *liteOptions) { f(&o.consumerOptions) }

// liteOption is a lite-pull-only option.
type liteOption func(*liteOptions)

func (f liteOption) applyLite(o *liteOptions) { f(o) }

// liteOptions are a LitePullConsumer's settings.
type liteOptions struct {
	consumerOptions
	manualCommit bool
	pollBatch    int
}

// WithManualCommit turns automatic commits off: offsets are committed only by Commit.
// Close then commits nothing, and a queue that moves to another member (subscribe mode)
// or is no longer assigned leaves its uncommitted progress behind, so what was polled
// since the last Commit is read again by the queue's next reader.
func WithManualCommit() LitePullOption {
	return liteOption(func(o *liteOptions) { o.manualCommit = true })
}

// WithPollBatch sets the most messages one Poll returns (default 32).
func WithPollBatch(n int) LitePullOption {
	return liteOption(func(o *liteOptions) { o.pollBatch = n })
}

// validate reports every invalid setting, joined.
func (o *liteOptions) validate() error {
	errs := []error{o.consumerOptions.validate()}
	if o.orderly || o.broadcast {
		errs = append(errs, fmt.Errorf("%w: a lite-pull consumer is neither orderly nor broadcasting", ErrInvalidOptions))
	}
	if o.pollBatch <= 0 || o.pollBatch > maxPullNums {
		errs = append(errs, fmt.Errorf("%w: poll batch %d (1..%d)", ErrInvalidOptions, o.pollBatch, maxPullNums))
	}
	return errors.Join(errs...)
}

// How a lite-pull consumer gets its queues.
const (
	liteModeNone = iota
	liteModeAssign
	liteModeSubscribe
)

// liteQueue is one owned queue: its pull position and buffer.
type liteQueue struct {
	mq     MessageQueue
	wake   chan struct{}   // room in the buffer, a seek or a resume; capacity 1
	ctx    context.Context // set when its pull loop starts; cancelled when dropped or closing
	cancel context.CancelFunc

	// Guarded by LitePullConsumer.mu.
	sub        *subscription
	started    bool  // next is known
	next       int64 // where the next pull starts
	gen        uint64
	buf        []*MessageExt // pulled, not yet polled, by offset (a reassembled message: of its last chunk)
	bytes      int           // their body bytes
	held       int64         // first chunk of the oldest partial chunked message; -1: none (chunk_reassemble.go)
	pullCancel context.CancelFunc

	committed   int64  // last committed offset (-1: none); guarded by LitePullConsumer.commitMu
	committedTo string // the broker it was committed to; guarded by LitePullConsumer.commitMu
}

// LitePullConsumer pulls in the background and hands messages out through Poll, like
// RocketMQ's DefaultLitePullConsumer. Its queues are either assigned by the caller
// (Assign; no group membership) or a share of the subscribed topics' queues as a member
// of its consumer group (Subscribe; clustering, the split recomputed when members come
// and go, agreeing with push and official members). Each owned queue is pulled with long
// polling into a buffer bounded by WithQueueCacheLimits; Poll takes what is buffered,
// Seek moves a queue, Pause and Resume stop and restart it. Offsets — after what Poll
// returned — are committed every commit interval, when a queue is dropped and on Close,
// or only by Commit with WithManualCommit. Create it with Client.NewLitePullConsumer,
// Subscribe or Assign, Start it, and Close it when done. Its methods are safe for
// concurrent use.
type LitePullConsumer struct {
	c      *Client
	group  string
	pull   *PullConsumer
	member *PushConsumer // never started: the push consumer's allocation and broker bookkeeping
	opts   liteOptions
	log    zerolog.Logger
	all    *subscription // assign mode: every message

	avail    chan struct{} // messages became pollable; capacity 1
	kick     chan struct{} // rebalance now; capacity 1
	grouped  atomic.Bool   // subscribe mode started: a member of the group in heartbeats
	ctx      context.Context
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	commitMu sync.Mutex

	rebalanceMu sync.Mutex

	mu struct {
		sync.Mutex
		state  int
		mode   int
		subs   map[string]*subscription // subscribe mode: by topic
		queues map[MessageQueue]*liteQueue
		order  []*liteQueue // the order Poll visits the queues in
		next   int          // where the next Poll starts in order
		paused map[MessageQueue]bool
		// reached holds, per queue dropped with auto-commit on, the offset it had polled
		// up to: the queue's next start is never below it (findStart), as a committed
		// offset read from a lagging slave, or one whose commit failed, may be. It is
		// used once: a later replay (another member's Seek, an admin reset while this
		// consumer did not own the queue) is not skipped at the queue's second return.
		reached map[MessageQueue]int64
	}
}

// NewLitePullConsumer returns a lite-pull consumer of group. It contacts nobody until
// Start.
func (c *Client) NewLitePullConsumer(group string, opts ...LitePullOption) (*LitePullConsumer, error) {
	group = c.nsWrap(group) // namespace.go
	pull, err := c.NewPullConsumer(group)
	if err != nil {
		return nil, err
	}
	o := liteOptions{consumerOptions: defaultConsumerOptions(), pollBatch: defaultPollBatch}
	for _, opt := range opts {
		if opt == nil {
			return nil, fmt.Errorf("%w: nil option", ErrInvalidOptions)
		}
		opt.applyLite(&o)
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	pull.chunks = newReassembler(o.chunks, &c.log)
	all, _ := newSubscription("", protocol.SubscribeAll, false)
	lc := &LitePullConsumer{
		c: c, group: group, pull: pull, opts: o, all: all,
		log:   c.log.With().Str("group", group).Str("consumer", "lite-pull").Logger(),
		avail: make(chan struct{}, 1),
		kick:  make(chan struct{}, 1),
	}
	lc.member = &PushConsumer{c: c, group: group, opts: o.consumerOptions, log: lc.log}
	lc.member.brokers.Store(new([]string))
	lc.mu.subs = make(map[string]*subscription)
	lc.mu.queues = make(map[MessageQueue]*liteQueue)
	lc.mu.paused = make(map[MessageQueue]bool)
	lc.mu.reached = make(map[MessageQueue]int64)
	return lc, nil
}

// Group is the consumer group.
func (lc *LitePullConsumer) Group() string { return lc.group }

// Subscribe makes the consumer a member of its group reading topic's messages whose tag
// matches expr ("*" for all, or "tagA || tagB"), or that an SQL92(…) expression matches,
// in clustering mode: the members split
// the topic's queues. Call it before Start, once per topic (again for a topic replaces
// its expression); a consumer either subscribes or assigns. A Client holds at most one
// subscribed consumer per group, push or lite.
func (lc *LitePullConsumer) Subscribe(topic, expr string) error {
	topic = lc.c.nsWrap(topic)
	if err := protocol.ValidateTopic(topic); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	sub, err := newSubscription(topic, expr, false)
	if err != nil {
		return err
	}
	lc.mu.Lock()
	defer lc.mu.Unlock()
	switch {
	case lc.mu.state == consumerClosed:
		return ErrClosed
	case lc.mu.state != consumerNew:
		return fmt.Errorf("%w: subscribe before Start", ErrInvalidOptions)
	case lc.mu.mode == liteModeAssign:
		return fmt.Errorf("%w: the consumer assigns its queues; it cannot also subscribe", ErrInvalidOptions)
	}
	lc.mu.mode = liteModeSubscribe
	lc.mu.subs[topic] = sub
	return nil
}

// Assign makes queues the consumer's queues, before or after Start, replacing those
// assigned before: the others stop (and with auto-commit their offsets are committed),
// the new ones start at the group's committed offset or, without one, where
// WithConsumeFrom says. Every message of an assigned queue is read (no tag filter); the
// consumer does not join its group, so it takes no share of anyone's queues. A consumer
// either assigns or subscribes.
func (lc *LitePullConsumer) Assign(queues ...MessageQueue) error {
	want := make(map[MessageQueue]*subscription, len(queues))
	for _, mq := range queues {
		mq = lc.c.nsQueue(mq)
		if err := checkQueue(mq); err != nil {
			return err
		}
		want[mq] = lc.all
	}
	lc.mu.Lock()
	defer lc.mu.Unlock()
	switch {
	case lc.mu.state == consumerClosed:
		return ErrClosed
	case lc.mu.mode == liteModeSubscribe:
		return fmt.Errorf("%w: the consumer subscribes; it cannot also assign", ErrInvalidOptions)
	}
	lc.mu.mode = liteModeAssign
	lc.applyLocked(func(MessageQueue) bool { return true }, want)
	return nil
}

// Start starts pulling the assigned queues or, after Subscribe, joins the group and
// takes its share of the queues; ctx bounds the first rebalance only. It fails when no
// name server answers or a broker refuses an SQL92 subscription (*SubscriptionError); a subscribed topic that does not exist yet is looked up again
// (every second at first) until it does.
func (lc *LitePullConsumer) Start(ctx context.Context) error {
	lc.mu.Lock()
	subs := make([]*subscription, 0, len(lc.mu.subs))
	for _, s := range lc.mu.subs {
		subs = append(subs, s)
	}
	lc.mu.Unlock()
	// A refused SQL92 subscription fails Start (sql92.go); no lock is held across it.
	if err := lc.c.checkSubscriptions(ctx, lc.group, subs); err != nil {
		return err
	}
	lc.mu.Lock()
	switch lc.mu.state {
	case consumerStarted:
		lc.mu.Unlock()
		return fmt.Errorf("%w: lite-pull consumer of %s already started", ErrInvalidOptions, lc.group)
	case consumerClosed:
		lc.mu.Unlock()
		return ErrClosed
	}
	subscribe := lc.mu.mode == liteModeSubscribe
	if err := lc.c.addLite(lc, subscribe); err != nil {
		lc.mu.Unlock()
		return err
	}
	lc.mu.state = consumerStarted
	lc.ctx, lc.cancel = context.WithCancel(context.Background())
	for _, q := range lc.mu.order {
		lc.startQueueLocked(q)
	}
	if !lc.opts.manualCommit {
		lc.wg.Go(lc.commitLoop)
	}
	lc.mu.Unlock()
	if !subscribe {
		return nil
	}
	complete, err := lc.rebalance(ctx)
	if err != nil {
		return errors.Join(err, lc.Close())
	}
	lc.mu.Lock()
	defer lc.mu.Unlock()
	if lc.mu.state != consumerStarted {
		return ErrClosed // closed meanwhile
	}
	lc.wg.Go(func() { lc.rebalanceLoop(complete) })
	return nil
}

// Assignment lists the queues the consumer owns now, sorted.
func (lc *LitePullConsumer) Assignment() []MessageQueue {
	lc.mu.Lock()
	out := slices.Collect(maps.Keys(lc.mu.queues))
	lc.mu.Unlock()
	slices.SortFunc(out, compareQueues)
	return out
}

// FetchQueues lists topic's readable queues (for Assign).
func (lc *LitePullConsumer) FetchQueues(ctx context.Context, topic string) ([]MessageQueue, error) {
	return lc.pull.FetchQueues(ctx, topic)
}

// Poll returns up to the poll batch of pulled messages, waiting up to timeout for some
// to arrive; nil when none did, ctx ended, or the consumer is not running. The messages
// come from the owned, unpaused queues in turn, each queue's in order. What Poll returns
// counts as consumed: the next commit stores the offsets after it.
func (lc *LitePullConsumer) Poll(ctx context.Context, timeout time.Duration) []*MessageExt {
	var expired <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		expired = t.C
	}
	for {
		msgs, running := lc.take()
		if !running || len(msgs) > 0 || timeout <= 0 {
			return msgs
		}
		select {
		case <-lc.avail:
		case <-expired:
			msgs, _ := lc.take()
			return msgs
		case <-ctx.Done():
			return nil
		case <-lc.ctx.Done():
			return nil
		}
	}
}

// take removes up to the poll batch of messages from the buffers, visiting the queues
// round robin; running is false when the consumer is not started or closed.
func (lc *LitePullConsumer) take() (msgs []*MessageExt, running bool) {
	lc.mu.Lock()
	if lc.mu.state != consumerStarted {
		lc.mu.Unlock()
		return nil, false
	}
	n := len(lc.mu.order)
	var served []*liteQueue
	more := false
	start := lc.mu.next
	for i := range n {
		q := lc.mu.order[(start+i)%n]
		if lc.mu.paused[q.mq] || len(q.buf) == 0 {
			continue
		}
		if len(msgs) == lc.opts.pollBatch {
			more = true
			break
		}
		k := min(len(q.buf), lc.opts.pollBatch-len(msgs))
		for _, m := range q.buf[:k] {
			q.bytes -= len(m.Body)
		}
		msgs = append(msgs, q.buf[:k]...)
		if q.buf = q.buf[k:]; len(q.buf) == 0 {
			q.buf = nil
		} else {
			more = true
		}
		served = append(served, q)
		lc.mu.next = (start + i + 1) % n
	}
	lc.mu.Unlock()
	for _, q := range served {
		signal(q.wake)
	}
	if more {
		signal(lc.avail) // for another Poll
	}
	return msgs, true
}

// Seek makes the owned queue mq continue at offset: messages buffered and pulls in
// flight are dropped, the next Poll of mq starts at offset, and the next commit stores
// it. An offset outside the queue is corrected by the broker (to the queue's minimum or
// end, logged). mq must be owned (see Assignment); errors wrap ErrInvalidArgument.
func (lc *LitePullConsumer) Seek(mq MessageQueue, offset int64) error {
	mq = lc.c.nsQueue(mq)
	if offset < 0 {
		return fmt.Errorf("%w: offset %d (≥ 0)", ErrInvalidArgument, offset)
	}
	lc.mu.Lock()
	defer lc.mu.Unlock()
	if lc.mu.state == consumerClosed {
		return ErrClosed
	}
	q := lc.mu.queues[mq]
	if q == nil {
		return fmt.Errorf("%w: queue %s is not the consumer's", ErrInvalidArgument, mq)
	}
	q.started, q.next = true, offset
	q.gen++
	q.buf, q.bytes, q.held = nil, 0, -1
	lc.pull.chunks.forget(mq)
	if q.pullCancel != nil {
		q.pullCancel()
		q.pullCancel = nil
	}
	signal(q.wake)
	return nil
}

// SeekToBegin is Seek to the smallest offset mq still stores.
func (lc *LitePullConsumer) SeekToBegin(ctx context.Context, mq MessageQueue) error {
	return lc.seekTo(ctx, mq, lc.pull.MinOffset)
}

// SeekToEnd is Seek to mq's end: only messages stored from now on are polled.
func (lc *LitePullConsumer) SeekToEnd(ctx context.Context, mq MessageQueue) error {
	return lc.seekTo(ctx, mq, lc.pull.MaxOffset)
}

// seekTo seeks mq to the offset bound answers.
func (lc *LitePullConsumer) seekTo(ctx context.Context, mq MessageQueue, bound func(context.Context, MessageQueue) (int64, error)) error {
	mq = lc.c.nsQueue(mq)
	lc.mu.Lock()
	_, owned := lc.mu.queues[mq]
	lc.mu.Unlock()
	if !owned {
		return fmt.Errorf("%w: queue %s is not the consumer's", ErrInvalidArgument, mq)
	}
	off, err := bound(ctx, mq)
	if err != nil {
		return err
	}
	return lc.Seek(mq, off)
}

// Committed is the group's committed offset of mq on its broker, or −1 when it has none.
func (lc *LitePullConsumer) Committed(ctx context.Context, mq MessageQueue) (int64, error) {
	return lc.pull.CommittedOffset(ctx, mq)
}

// Commit stores, for every owned queue whose position moved since its last commit, the
// offset after what Poll returned from it (or where it was Seeked to) as the group's
// committed offset. It returns the failures, joined.
func (lc *LitePullConsumer) Commit(ctx context.Context) error {
	lc.mu.Lock()
	closed := lc.mu.state == consumerClosed
	qs := slices.Clone(lc.mu.order)
	lc.mu.Unlock()
	if closed {
		return ErrClosed
	}
	return lc.commit(ctx, qs)
}

// Pause stops pulling queues and keeps Poll from returning their messages until Resume;
// their buffered messages and positions stay. Queues not owned now are paused when they
// become owned.
func (lc *LitePullConsumer) Pause(queues ...MessageQueue) {
	lc.mu.Lock()
	for _, mq := range queues {
		mq = lc.c.nsQueue(mq)
		lc.mu.paused[mq] = true
	}
	lc.mu.Unlock()
}

// Resume undoes Pause.
func (lc *LitePullConsumer) Resume(queues ...MessageQueue) {
	lc.mu.Lock()
	for _, mq := range queues {
		mq = lc.c.nsQueue(mq)
		delete(lc.mu.paused, mq)
		if q := lc.mu.queues[mq]; q != nil {
			signal(q.wake)
		}
	}
	lc.mu.Unlock()
	signal(lc.avail)
}

// Close stops pulling, commits the offsets (unless WithManualCommit) and, after
// Subscribe, leaves the group (UNREGISTER_CLIENT), so the other members take the queues
// over at once. Messages buffered but not polled are not committed. It is idempotent; it
// returns the commit and unregister failures.
func (lc *LitePullConsumer) Close() error {
	lc.mu.Lock()
	state := lc.mu.state
	lc.mu.state = consumerClosed
	lc.mu.Unlock()
	if state != consumerStarted {
		return nil
	}
	lc.c.removeLite(lc)
	lc.cancel()
	lc.wg.Wait()

	ctx, cancel := context.WithTimeout(context.Background(), lc.c.opts.RequestTimeout)
	defer cancel()
	var errs []error
	if !lc.opts.manualCommit {
		lc.mu.Lock()
		qs := slices.Clone(lc.mu.order)
		lc.mu.Unlock()
		errs = append(errs, lc.commit(ctx, qs))
	}
	if lc.grouped.Load() {
		for _, addr := range *lc.member.brokers.Load() {
			req := protocol.NewRequest(protocol.UnregisterClient, &protocol.UnregisterClientRequestHeader{
				ClientID: lc.c.clientID, ConsumerGroup: lc.group})
			if _, err := lc.c.invoke(ctx, addr, req); err != nil {
				errs = append(errs, fmt.Errorf("client: unregister consumer %s: %w", lc.group, err))
			}
		}
	}
	return errors.Join(errs...)
}

// applyLocked makes want the consumer's queues among those in scope: it drops the
// others in scope and adds (and, when started, starts) the new ones. The caller holds
// mu.
func (lc *LitePullConsumer) applyLocked(scope func(MessageQueue) bool, want map[MessageQueue]*subscription) {
	kept := lc.mu.order[:0:0]
	for _, q := range lc.mu.order {
		if sub, ok := want[q.mq]; ok || !scope(q.mq) {
			if ok {
				q.sub = sub
			}
			kept = append(kept, q)
			continue
		}
		lc.dropLocked(q)
	}
	lc.mu.order = kept
	added := false
	for mq, sub := range want {
		if _, ok := lc.mu.queues[mq]; ok {
			continue
		}
		q := &liteQueue{mq: mq, sub: sub, wake: make(chan struct{}, 1), committed: -1, held: -1}
		lc.mu.queues[mq] = q
		lc.mu.order = append(lc.mu.order, q)
		added = true
		if lc.mu.state == consumerStarted {
			lc.startQueueLocked(q)
		}
		lc.log.Info().Str("queue", mq.String()).Msg("queue assigned")
	}
	if added {
		slices.SortFunc(lc.mu.order, func(a, b *liteQueue) int { return compareQueues(a.mq, b.mq) })
	}
	if lc.mu.next >= len(lc.mu.order) {
		lc.mu.next = 0
	}
}

// dropLocked removes q from the queue table (the caller removes it from order) and
// stops its pull loop; with auto-commit a goroutine commits its offset. The caller holds
// mu.
func (lc *LitePullConsumer) dropLocked(q *liteQueue) {
	delete(lc.mu.queues, q.mq)
	lc.pull.chunks.forget(q.mq)
	lc.log.Info().Str("queue", q.mq.String()).Msg("queue dropped")
	if q.cancel == nil {
		return // never started
	}
	q.cancel()
	if !lc.opts.manualCommit {
		if q.started {
			lc.mu.reached[q.mq] = q.floorLocked()
		}
		lc.wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), lc.c.opts.RequestTimeout)
			defer cancel()
			if err := lc.commit(ctx, []*liteQueue{q}); err != nil {
				lc.log.Warn().Err(err).Msg("offset commit of a dropped queue failed")
			}
		})
	}
}

// startQueueLocked starts q's pull loop. The caller holds mu; the consumer is started.
func (lc *LitePullConsumer) startQueueLocked(q *liteQueue) {
	q.ctx, q.cancel = context.WithCancel(lc.ctx)
	lc.wg.Go(func() { lc.pullLoop(q) })
}

// fullLocked reports whether q's buffer is full. The caller holds mu.
func (lc *LitePullConsumer) fullLocked(q *liteQueue) bool {
	return len(q.buf) >= lc.opts.cacheMessages || q.bytes >= lc.opts.cacheBytes
}

// pullLoop is q's goroutine: find the start offset, then pull into the buffer while it
// has room and q is not paused, until q is dropped or the consumer closes.
func (lc *LitePullConsumer) pullLoop(q *liteQueue) {
	for {
		lc.mu.Lock()
		for q.ctx.Err() == nil && (lc.mu.paused[q.mq] || q.started && lc.fullLocked(q)) {
			lc.mu.Unlock()
			select {
			case <-q.ctx.Done():
			case <-q.wake:
			}
			lc.mu.Lock()
		}
		if q.ctx.Err() != nil {
			lc.mu.Unlock()
			return
		}
		started, from, gen, sub := q.started, q.next, q.gen, q.sub
		batch := min(lc.opts.pullBatch, lc.opts.cacheMessages-len(q.buf)) // never past the bound
		pctx, cancel := context.WithCancel(q.ctx)
		q.pullCancel = cancel
		lc.mu.Unlock()

		var ok bool
		if started {
			res, err := lc.pull.pull(pctx, q.mq, from, batch, sub, lc.opts.suspend)
			ok = lc.record(q, gen, from, res, err)
		} else {
			ok = lc.findStart(pctx, q, gen)
		}
		cancel()
		if !ok && !sleepCtx(q.ctx, pullBackoff) {
			return
		}
	}
}

// findStart sets where q starts: the group's committed offset or, without one, where
// WithConsumeFrom says, but not below the offset this consumer had polled up to when it
// last dropped the queue (auto-commit) — unless a Seek came first. It reports success.
func (lc *LitePullConsumer) findStart(ctx context.Context, q *liteQueue, gen uint64) bool {
	ctx, cancel := context.WithTimeout(ctx, lc.c.opts.RequestTimeout)
	defer cancel()
	committed, err := lc.pull.CommittedOffset(ctx, q.mq)
	off := committed
	if err == nil && committed < 0 {
		switch lc.opts.from {
		case ConsumeFromFirstOffset:
			off, err = lc.pull.MinOffset(ctx, q.mq)
		case ConsumeFromTimestamp:
			off, err = lc.pull.OffsetByTime(ctx, q.mq, lc.opts.fromTime)
		default:
			off, err = lc.pull.MaxOffset(ctx, q.mq)
		}
	}
	if err != nil {
		if ctx.Err() == nil {
			lc.log.Warn().Err(err).Str("queue", q.mq.String()).Msg("no start offset yet")
		}
		return q.ctx.Err() != nil || lc.seeked(q, gen)
	}
	if committed >= 0 {
		lc.commitMu.Lock()
		if q.committed < 0 {
			q.committed = committed
		}
		lc.commitMu.Unlock()
	}
	lc.mu.Lock()
	q.pullCancel = nil
	reached, ok := lc.mu.reached[q.mq]
	delete(lc.mu.reached, q.mq) // a floor spans one gap in ownership, no more
	if ok && reached > off {
		lc.log.Info().Str("queue", q.mq.String()).Int64("offset", off).Int64("reached", reached).
			Msg("committed offset behind what this consumer polled; starting after it")
		off = reached
	}
	if !q.started && q.gen == gen {
		q.started, q.next = true, off
	}
	lc.mu.Unlock()
	return true
}

// seeked reports whether q was moved since generation gen.
func (lc *LitePullConsumer) seeked(q *liteQueue, gen uint64) bool {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	return q.gen != gen
}

// record files a pull's outcome: found messages enter the buffer and the next pull
// starts at the answer's next offset. An outcome from before a Seek, or of a dropped
// queue, is thrown away. It reports false on a failed pull (the loop backs off).
func (lc *LitePullConsumer) record(q *liteQueue, gen uint64, from int64, res PullResult, err error) bool {
	lc.mu.Lock()
	q.pullCancel = nil
	if q.gen != gen || q.ctx.Err() != nil {
		lc.mu.Unlock()
		return true
	}
	if err != nil {
		lc.mu.Unlock()
		lc.log.Warn().Err(err).Str("queue", q.mq.String()).Msg("pull failed")
		return false
	}
	added := false
	for _, m := range res.Messages {
		if m.lastOffset() < from || len(q.buf) > 0 && m.lastOffset() <= q.buf[len(q.buf)-1].lastOffset() {
			continue // never out of order; a broker repeating itself is ignored
		}
		q.buf = append(q.buf, m)
		q.bytes += len(m.Body)
		added = true
	}
	q.next, q.held = res.NextOffset, -1
	if res.CommitOffset < res.NextOffset {
		q.held = res.CommitOffset
	}
	lc.mu.Unlock()
	if res.Status == PullOffsetIllegal {
		lc.log.Warn().Str("queue", q.mq.String()).Int64("from", from).Int64("to", res.NextOffset).Msg("offset moved")
	}
	if added {
		signal(lc.avail)
	}
	return true
}

// commitOffset is the offset to commit for q: its first buffered message, or where its
// next pull starts. ok is false before the start offset is known.
func (lc *LitePullConsumer) commitOffset(q *liteQueue) (offset int64, ok bool) {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	if !q.started {
		return 0, false
	}
	return q.floorLocked(), true
}

// commit commits the offsets of qs that moved since their last commit, or whose last
// commit went to another broker (the master is back after a failover: it has not seen
// the offsets committed to the slave).
func (lc *LitePullConsumer) commit(ctx context.Context, qs []*liteQueue) error {
	lc.commitMu.Lock()
	defer lc.commitMu.Unlock()
	var errs []error
	for _, q := range qs {
		off, ok := lc.commitOffset(q)
		if !ok {
			continue
		}
		addr, err := lc.pull.brokerAddr(ctx, q.mq)
		if err != nil {
			errs = append(errs, fmt.Errorf("client: commit offset %d of %s for %s: %w", off, q.mq, lc.group, err))
			continue
		}
		if off == q.committed && addr == q.committedTo {
			continue
		}
		if err := lc.pull.commitOffsetAt(ctx, addr, q.mq, off); err != nil {
			errs = append(errs, err)
			continue
		}
		q.committed, q.committedTo = off, addr
	}
	return errors.Join(errs...)
}

// commitLoop commits every owned queue's offset every commit interval until Close.
func (lc *LitePullConsumer) commitLoop() {
	t := time.NewTicker(lc.opts.commit)
	defer t.Stop()
	for {
		select {
		case <-lc.ctx.Done():
			return
		case <-t.C:
		}
		lc.mu.Lock()
		qs := slices.Clone(lc.mu.order)
		lc.mu.Unlock()
		// Not cancelled by Close: a commit in flight completes before the final one.
		ctx, cancel := context.WithTimeout(context.Background(), lc.c.opts.RequestTimeout)
		if err := lc.commit(ctx, qs); err != nil {
			lc.log.Warn().Err(err).Msg("periodic offset commit failed")
		}
		cancel()
	}
}

// signal puts a token into a capacity-1 channel unless one is there.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// sleepCtx waits d unless ctx ends first; it reports whether d passed.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
