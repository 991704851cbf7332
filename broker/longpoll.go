package broker

import (
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
)

// longPollSweep is how often held pulls are checked for new messages and timeouts.
const longPollSweep = 100 * time.Millisecond

// queueKey names one topic queue.
type queueKey struct {
	topic   string
	queueID int32
}

// heldPull is a parked pull request.
type heldPull struct {
	p        *pullRequest
	deadline time.Time
}

// longPoll parks pull requests that found nothing and replays them when the dispatcher
// adds a message to their queue or when their timeout passes. Replays run on the holder's
// own goroutine, never on the dispatcher's.
type longPoll struct {
	// maxOffset is the store's next queue offset of a queue.
	maxOffset func(topic string, queueID int32) int64
	// answer pulls again without suspension (the pull handler).
	answer func(*pullRequest) *remoting.Command
	clock  func() time.Time
	// longPolling holds pulls for the client's suspend timeout; otherwise for at most
	// shortTimeout.
	longPolling  bool
	shortTimeout time.Duration
	log          zerolog.Logger
	ready        chan []*heldPull
	mu           struct {
		sync.Mutex
		held   map[queueKey][]*heldPull
		closed bool // set by releaseAll: nothing is parked after it
	}
}

// newLongPoll returns a holder that answers the pulls it held with answer (the pull
// handler that owns it builds it, see newPuller).
func newLongPoll(maxOffset func(string, int32) int64, answer func(*pullRequest) *remoting.Command,
	clock func() time.Time, longPolling bool, shortTimeout time.Duration, log zerolog.Logger) *longPoll {
	lp := &longPoll{maxOffset: maxOffset, answer: answer, clock: clock, longPolling: longPolling,
		shortTimeout: shortTimeout, log: log, ready: make(chan []*heldPull, 1024)}
	lp.mu.held = make(map[queueKey][]*heldPull)
	return lp
}

// hold parks p until a message arrives or its suspend timeout (capped by the broker's
// settings) passes. The caller re-checks the queue after hold returns, since a message
// may have been dispatched between its read and the hold.
func (lp *longPoll) hold(p *pullRequest) {
	timeout := time.Duration(p.h.SuspendTimeoutMillis) * time.Millisecond
	if !lp.longPolling {
		timeout = min(timeout, lp.shortTimeout)
	}
	timeout = max(timeout, 0)
	hp := &heldPull{p: p, deadline: lp.clock().Add(timeout)}
	k := queueKey{p.h.Topic, p.h.QueueID}
	lp.mu.Lock()
	if lp.mu.closed {
		// Shutting down: answer at once, or the request would never end and the remoting
		// server's drain would wait for it until its deadline.
		lp.mu.Unlock()
		lp.replay([]*heldPull{hp})
		return
	}
	lp.mu.held[k] = append(lp.mu.held[k], hp)
	lp.mu.Unlock()
}

// notify is called by the dispatcher after a queue grew to maxOffset. It must not block.
func (lp *longPoll) notify(topic string, queueID int32, maxOffset int64) {
	lp.mu.Lock()
	list := lp.mu.held[queueKey{topic, queueID}]
	if len(list) == 0 {
		lp.mu.Unlock()
		return
	}
	var wake, keep []*heldPull
	for _, hp := range list {
		if maxOffset > hp.p.h.QueueOffset {
			wake = append(wake, hp)
		} else {
			keep = append(keep, hp)
		}
	}
	if len(keep) == 0 {
		delete(lp.mu.held, queueKey{topic, queueID})
	} else {
		lp.mu.held[queueKey{topic, queueID}] = keep
	}
	lp.mu.Unlock()
	if len(wake) > 0 {
		select {
		case lp.ready <- wake:
		default:
			// The replay queue is full: leave them to the sweeper.
			lp.mu.Lock()
			k := queueKey{topic, queueID}
			lp.mu.held[k] = append(lp.mu.held[k], wake...)
			lp.mu.Unlock()
		}
	}
}

// run replays woken pulls and sweeps for timeouts until stop is closed.
func (lp *longPoll) run(stop <-chan struct{}) {
	t := time.NewTicker(longPollSweep)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case list := <-lp.ready:
			lp.replay(list)
		case <-t.C:
			lp.sweep()
		}
	}
}

// sweep replays held pulls whose queue has grown or whose deadline passed.
func (lp *longPoll) sweep() {
	now := lp.clock()
	maxOff := map[queueKey]int64{}
	lp.replay(lp.take(func(k queueKey, hp *heldPull) bool {
		m, ok := maxOff[k]
		if !ok {
			m = lp.maxOffset(k.topic, k.queueID)
			maxOff[k] = m
		}
		return m > hp.p.h.QueueOffset || !now.Before(hp.deadline)
	}))
}

// take removes and returns the held pulls for which pick is true.
func (lp *longPoll) take(pick func(queueKey, *heldPull) bool) []*heldPull {
	var out []*heldPull
	lp.mu.Lock()
	defer lp.mu.Unlock()
	for k, list := range lp.mu.held {
		keep := list[:0]
		for _, hp := range list {
			if pick(k, hp) {
				out = append(out, hp)
			} else {
				keep = append(keep, hp)
			}
		}
		if len(keep) == 0 {
			delete(lp.mu.held, k)
		} else {
			lp.mu.held[k] = keep
		}
	}
	return out
}

// replay answers held pulls by pulling again without suspension.
func (lp *longPoll) replay(list []*heldPull) {
	for _, hp := range list {
		resp := lp.answer(hp.p)
		if err := hp.p.ch.Reply(hp.p.req, resp); err != nil {
			lp.log.Debug().Err(err).Str("topic", hp.p.h.Topic).Msg("answering a held pull")
		}
	}
}

// dropChannel forgets the held pulls of a closed connection (they are answered with
// nothing, which ends them for the remoting server).
func (lp *longPoll) dropChannel(id uint64) {
	gone := lp.take(func(_ queueKey, hp *heldPull) bool { return hp.p.ch.ID() == id })
	for _, hp := range gone {
		_ = hp.p.ch.Reply(hp.p.req, respond(hp.p.req, protocol.PullNotFound, "connection closed"))
	}
}

// releaseAll answers every held pull at once and makes later holds answer at once too
// (shutdown).
func (lp *longPoll) releaseAll() {
	lp.mu.Lock()
	lp.mu.closed = true
	lp.mu.Unlock()
	all := lp.take(func(queueKey, *heldPull) bool { return true })
	for drained := false; !drained; {
		select {
		case list := <-lp.ready:
			all = append(all, list...)
		default:
			drained = true
		}
	}
	lp.replay(all)
}
