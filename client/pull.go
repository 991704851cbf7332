package client

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// Pulling. Each owned queue has a processQueue and a pull loop: it finds the start offset
// (offsets.go), then pulls with long polling — the broker holds a request that finds
// nothing until a message arrives or the suspend timeout passes — and hands what it gets
// to the workers. Each pull goes to the member of the queue's broker group the previous
// answer suggested (suggestWhichBrokerId, see pullAddr): a slave when the brokers offer
// slave reads and the consumer lags, the master otherwise, the lowest slave while the
// route has no master; offsets are read and committed on the master while it is there
// (offsets.go). Pulled messages stay in the queue's window until they are consumed (or
// sent back); the queue stops pulling while the window holds too many messages or bytes
// (flow control), and the offset to commit is the lowest one still in the window, so
// messages completing out of order never let the committed offset pass an unconsumed
// one. An orderly consumer's pull loop keeps the pulled messages in the queue's buffer
// instead, for the queue's consume loop (orderly.go), and in clustering mode starts only
// once the queue's broker lock is held.
//
// A queue dropped and owned again soon after (or by a rebalance that flips back) gets a
// new processQueue that waits until the old one has finished — handlers done, offset
// committed, lock released — before it reads its start offset or asks for the lock.

// pullBackoff is how long a queue waits after a failed pull or offset lookup.
const pullBackoff = time.Second

// pendingMsg is one pulled message in a queue's window.
type pendingMsg struct {
	offset int64
	size   int
	done   bool
	chunk  bool // a chunk not yet part of a reassembled message: not in count and bytes
}

// processQueue is one owned queue: its pull loop's state and its window of pulled
// messages.
type processQueue struct {
	pc        *PushConsumer
	mq        MessageQueue
	sub       *subscription
	brokerA   atomic.Pointer[string]           // readAddr of the broker group; the rebalance updates it
	members   atomic.Pointer[map[int64]string] // the group's addresses by broker id; the rebalance updates them
	suggested atomic.Int64                     // broker id the last pull answer suggested (0: the master)

	ctx     context.Context // cancelled when the queue is dropped or the consumer closes
	cancel  context.CancelFunc
	pulling sync.WaitGroup  // the pull loop and (orderly) the consume loop
	wake    chan struct{}   // a message was consumed; capacity 1
	idle    chan struct{}   // closed once dropped with no handler call or local retry left
	after   <-chan struct{} // closed when the queue's previous processQueue is finished; nil: none

	// Orderly consumers.
	ready    chan struct{} // messages arrived or the lock was taken; capacity 1
	locked   chan struct{} // closed when the broker first grants the lock (clustering)
	lockOnce sync.Once

	reset *int64 // where an offset reset restarts the queue (brokercalls.go); set before its loops start

	commitMu    sync.Mutex // serializes the queue's commits
	committed   int64      // last committed offset (-1: none); guarded by commitMu
	committedTo string     // the broker it was committed to; guarded by commitMu

	mu struct {
		sync.Mutex
		dropped bool         // no new handler call starts
		active  int          // handler calls running and local retries waiting
		started bool         // next is known
		next    int64        // where the next pull starts
		window  []pendingMsg // pulled messages by offset; the head is never done
		count   int          // messages in window not done
		bytes   int          // their body bytes
		chunks  int          // chunks in window not done and not counted (chunk_reassemble.go)

		buf      []*MessageExt // orderly: pulled messages not yet consumed, by offset
		lockedAt time.Time     // orderly clustering: when the broker last granted the lock; zero: not held
	}
}

// newProcessQueue returns the state of a newly owned queue; after is the channel of its
// previous processQueue still finishing, or nil.
func (pc *PushConsumer) newProcessQueue(sub *subscription, rq readQueue, after <-chan struct{}) *processQueue {
	q := &processQueue{pc: pc, mq: rq.mq, sub: sub, wake: make(chan struct{}, 1), idle: make(chan struct{}),
		after: after, ready: make(chan struct{}, 1), locked: make(chan struct{}), committed: -1}
	q.setRoute(rq)
	q.ctx, q.cancel = context.WithCancel(pc.ctx)
	return q
}

// addr is the address offsets, locks and send-backs of the queue go to: its broker
// group's master, or its lowest slave while the master is absent (readAddr).
func (q *processQueue) addr() string { return *q.brokerA.Load() }

// pullAddr is where the queue's next pull goes (see the package function pullAddr).
func (q *processQueue) pullAddr() string { return pullAddr(*q.members.Load(), q.suggested.Load()) }

// setRoute records the queue's broker addresses from a fresh route.
func (q *processQueue) setRoute(rq readQueue) {
	a, m := rq.addr, rq.addrs
	if m == nil {
		m = map[int64]string{masterID: a}
	}
	q.brokerA.Store(&a)
	q.members.Store(&m)
}

// route is the queue's current broker addresses.
func (q *processQueue) route() readQueue {
	return readQueue{mq: q.mq, addr: q.addr(), addrs: *q.members.Load()}
}

// drop stops the queue: no more pulls, no new handler calls. Calls running go on; idle
// is closed when they are over.
func (q *processQueue) drop() {
	q.mu.Lock()
	q.mu.dropped = true
	if q.mu.active == 0 {
		close(q.idle)
	}
	q.mu.Unlock()
	q.cancel()
}

// enter counts a handler call or a local retry, unless the queue was dropped.
func (q *processQueue) enter() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.mu.dropped {
		return false
	}
	q.mu.active++
	return true
}

// leave ends what enter counted.
func (q *processQueue) leave() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.mu.active--; q.mu.active == 0 && q.mu.dropped {
		close(q.idle)
	}
}

// commitOffset is the offset to commit: the lowest pulled message not yet consumed, or
// where the next pull starts. ok is false before the start offset is known.
func (q *processQueue) commitOffset() (offset int64, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.mu.started {
		return 0, false
	}
	if len(q.mu.window) > 0 {
		return q.mu.window[0].offset, true
	}
	return q.mu.next, true
}

// start sets the offset the queue starts pulling from.
func (q *processQueue) start(offset int64) {
	q.mu.Lock()
	q.mu.started, q.mu.next = true, offset
	q.mu.Unlock()
}

// nextOffset is where the next pull starts.
func (q *processQueue) nextOffset() int64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.mu.next
}

// advance records a pull's outcome: msgs enter the window (and, for an orderly
// consumer, the buffer) and the next pull starts at next. Every offset below next that
// is not in the window is consumed (or was filtered). It returns the messages that
// entered.
func (q *processQueue) advance(msgs []*MessageExt, next int64) []*MessageExt {
	q.mu.Lock()
	defer q.mu.Unlock()
	var in []*MessageExt // a copy only once a message is skipped; else msgs
	for i, m := range msgs {
		if n := len(q.mu.window); n > 0 && q.mu.window[n-1].offset >= m.QueueOffset ||
			n == 0 && m.QueueOffset < q.mu.next {
			// Never out of order; a broker repeating itself is ignored.
			if in == nil {
				in = append(make([]*MessageExt, 0, len(msgs)), msgs[:i]...)
			}
			continue
		}
		if isChunk(m) {
			// Counted once reassembled (chunk_reassemble.go); until then the
			// reassembly's memory limit bounds it.
			q.mu.window = append(q.mu.window, pendingMsg{offset: m.QueueOffset, chunk: true})
			q.mu.chunks++
		} else {
			q.mu.window = append(q.mu.window, pendingMsg{offset: m.QueueOffset, size: len(m.Body)})
			q.mu.count++
			q.mu.bytes += len(m.Body)
			if q.pc.opts.orderly {
				q.mu.buf = append(q.mu.buf, m)
			}
		}
		if in != nil {
			in = append(in, m)
		}
	}
	if in == nil {
		in = msgs
	}
	q.mu.next = next
	return in
}

// markDone removes consumed messages (a reassembled one: all its chunks) from the window
// and wakes a pull loop waiting for room.
func (q *processQueue) markDone(msgs []*MessageExt) {
	if len(msgs) == 0 {
		return
	}
	q.mu.Lock()
	for _, m := range msgs {
		m.eachOffset(q.doneLocked)
	}
	q.trimLocked()
}

// markOffsets is markDone of the messages at offsets.
func (q *processQueue) markOffsets(offsets []int64) {
	if len(offsets) == 0 {
		return
	}
	q.mu.Lock()
	for _, o := range offsets {
		q.doneLocked(o)
	}
	q.trimLocked()
}

// findLocked is the index of offset in the window; the caller holds q.mu.
func (q *processQueue) findLocked(offset int64) (int, bool) {
	w := q.mu.window
	i := sort.Search(len(w), func(i int) bool { return w[i].offset >= offset })
	return i, i < len(w) && w[i].offset == offset
}

// doneLocked marks the message at offset done; the caller holds q.mu.
func (q *processQueue) doneLocked(offset int64) {
	i, ok := q.findLocked(offset)
	if !ok || q.mu.window[i].done {
		return
	}
	e := &q.mu.window[i]
	e.done = true
	if e.chunk {
		q.mu.chunks--
	} else {
		q.mu.count--
		q.mu.bytes -= e.size
	}
}

// trimLocked removes the done head of the window, unlocks q.mu and wakes a pull loop
// waiting for room.
func (q *processQueue) trimLocked() {
	w := q.mu.window
	head := 0
	for head < len(w) && w[head].done {
		head++
	}
	if head == len(w) {
		q.mu.window = w[:0]
	} else {
		q.mu.window = w[head:]
	}
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// full reports whether the queue must stop pulling: too many messages or bytes cached,
// or the window spans too many offsets (one slow message holds the commit back).
func (q *processQueue) full() bool {
	o := &q.pc.opts
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.mu.count >= o.cacheMessages || q.mu.bytes >= o.cacheBytes ||
		len(q.mu.window)-q.mu.chunks >= max(2000, 2*o.cacheMessages)
}

// pullLoop is the queue's goroutine: find the start offset, then pull and dispatch until
// the queue is dropped or the consumer closes.
func (q *processQueue) pullLoop() {
	defer q.pulling.Done()
	pc := q.pc
	defer pc.chunks.forget(q) // its partial chunked messages: the queue is no longer consumed
	if !q.waitTurn() {
		return
	}
	for {
		off, err := q.firstOffset()
		if err == nil {
			q.start(off)
			break
		}
		pc.log.Warn().Err(err).Str("queue", q.mq.String()).Msg("no start offset yet")
		if !q.pause(pullBackoff) {
			return
		}
	}
	for {
		for q.full() {
			select {
			case <-q.ctx.Done():
				return
			case <-q.wake:
			}
		}
		if q.ctx.Err() != nil {
			return
		}
		msgs, err := q.pullOnce()
		if err != nil {
			if q.ctx.Err() != nil {
				return
			}
			pc.log.Warn().Err(err).Str("queue", q.mq.String()).Msg("pull failed")
			if !q.pause(pullBackoff) {
				return
			}
			continue
		}
		switch {
		case len(msgs) == 0:
		case pc.opts.orderly:
			q.signal()
		case !pc.dispatch(q, msgs):
			return
		}
	}
}

// waitTurn waits until the queue may start: its previous processQueue has finished and,
// for an orderly consumer in clustering mode, the broker has granted the lock (so the
// offset read next is the one the previous owner committed). It reports whether to go
// on.
func (q *processQueue) waitTurn() bool {
	if q.after != nil {
		select {
		case <-q.ctx.Done():
			return false
		case <-q.after:
		}
	}
	if q.pc.locking() {
		select {
		case <-q.ctx.Done():
			return false
		case <-q.locked:
		}
	}
	return true
}

// turnCame reports without waiting whether the queue's previous processQueue has
// finished.
func (q *processQueue) turnCame() bool {
	if q.after == nil {
		return true
	}
	select {
	case <-q.after:
		return true
	default:
		return false
	}
}

// pause waits d unless the queue stops first; it reports whether to go on.
func (q *processQueue) pause(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-q.ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// pullOnce sends one long-polling pull and records its outcome; it returns the messages
// to hand to the handler.
func (q *processQueue) pullOnce() ([]*MessageExt, error) {
	pc := q.pc
	from := q.nextOffset()
	// The subscription travels with each pull, so the broker filters for this member
	// whatever the group's heartbeat table holds; offsets are committed separately.
	r := pullRequest{group: pc.group, mq: q.mq, offset: from, max: int32(pc.opts.pullBatch), sub: q.sub,
		suspend: pc.opts.suspend}
	// The broker answers a held pull by the suspend timeout; allow for a slow answer.
	ctx, cancel := context.WithTimeout(q.ctx, pc.opts.suspend+15*time.Second)
	defer cancel()
	addr := q.pullAddr()
	ans, err := pc.c.pullMessage(ctx, addr, &r)
	if err != nil {
		q.suggested.Store(masterID) // the next try goes to the master (or readAddr)
		return nil, err
	}
	q.suggested.Store(ans.suggested)
	if ans.status != PullFound {
		if ans.status == PullOffsetIllegal {
			pc.log.Warn().Str("queue", q.mq.String()).Int64("from", from).Int64("to", ans.next).
				Msg("offset moved")
		}
		q.advance(nil, ans.next)
		return q.reassemble(nil), nil // gives up partial messages past their bounds
	}
	msgs, err := q.decode(ans.body)
	if err != nil {
		return nil, fmt.Errorf("client: pull body from %s: %w", addr, err)
	}
	return q.reassemble(q.advance(msgs, ans.next)), nil
}

// decode turns a pull body into messages, keeping those the subscription wants; a
// redelivered message gets its original topic back.
func (q *processQueue) decode(body []byte) ([]*MessageExt, error) {
	msgs, err := decodeMessages(body, q.mq.BrokerName, q.sub, &q.pc.log)
	if err != nil {
		return nil, err
	}
	for _, m := range msgs {
		restoreTopic(m, q.pc.retryTopic)
	}
	q.pc.c.nsStripMessages(msgs)
	return msgs, nil
}
