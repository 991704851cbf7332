// Package dedup is the broker's memory of recent sends to topics with a dedup window
// (the dedupWindow topic attribute): for each stored message it keeps, by topic and
// UNIQ_KEY (the id every RocketMQ client puts on a message and keeps across its retries),
// the answer the broker gave, so that a retry of a message already stored is answered with
// the first answer (same message id, queue and offset) and stores nothing.
//
// # Claims
//
// A send to such a topic first claims its key ([Table.Claim]):
//
//   - a key answered within its window is a duplicate: Claim returns the first answer;
//   - a key being stored by another request (a client that gave up waiting and resent on
//     a new connection) makes Claim wait for that request's outcome, then decide again;
//   - otherwise the caller owns the key until it calls [Ticket.Complete] with its answer
//     (the key is then remembered for the window) or [Ticket.Abort] (nothing was stored:
//     the key is forgotten and a waiting retry stores it).
//
// # Bounds
//
// At most Options.MaxKeys keys are remembered across all topics; beyond that the oldest
// is dropped first (counted in [Stats.Evicted]), so a key older than that many sends is
// no longer recognised even inside its window. Keys past their window are dropped as new
// ones arrive. An entry costs about 170 bytes with a 32-character key.
//
// # After a restart
//
// The table lives in memory. The broker refills it before it serves sends, from the
// topics' consume queues over the window ([Table.Remember]), so a retry that arrives
// after a restart or a failover is still recognised.
package dedup

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// Options configures a Table.
type Options struct {
	// MaxKeys bounds the keys remembered across all topics (oldest dropped first).
	MaxKeys int
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// DefaultMaxKeys is Options.MaxKeys by default: about 200 MB at most.
const DefaultMaxKeys = 1 << 20

// DefaultOptions returns the default options.
func DefaultOptions() Options { return Options{MaxKeys: DefaultMaxKeys} }

// ErrInvalidOptions reports options that cannot work.
var ErrInvalidOptions = errors.New("dedup: invalid options")

// Validate checks o.
func (o Options) Validate() error {
	if o.MaxKeys <= 0 {
		return fmt.Errorf("%w: MaxKeys %d must be positive", ErrInvalidOptions, o.MaxKeys)
	}
	return nil
}

// Answer is what the broker answered a stored send: replayed to its duplicates. It keeps
// what cannot be derived from the duplicate's request: a single message's offset message
// id is rebuilt from PhyOffset, its transaction id is its UNIQ_KEY.
type Answer struct {
	Code        int16  // the response code
	MsgID       string // a batch's offset message ids, comma-joined; empty for one message
	PhyOffset   int64  // one message's commit-log offset
	QueueID     int32
	QueueOffset int64
}

// Stats are a table's counters.
type Stats struct {
	Keys       int    // keys remembered now, claims in progress included
	Duplicates uint64 // sends answered from the table
	Evicted    uint64 // keys dropped inside their window because of MaxKeys
}

// entry is one key's state. done, made when a second request waits on a pending claim,
// is closed once the claim ends (answered or aborted).
type entry struct {
	key     string
	expires int64 // unix nanoseconds: the claim's time until answered, then its end
	done    chan struct{}
	ans     Answer
	state   uint8
}

// Entry states.
const (
	pending  uint8 = iota // claimed, not yet answered
	answered              // answer valid until expires
	aborted               // the claim stored nothing
)

// Table is the memory of recent sends. It is safe for concurrent use.
type Table struct {
	opts Options
	mu   sync.Mutex
	keys map[string]*entry
	// fifo holds the entries in the order they were claimed or remembered, from head; an
	// entry no longer in keys is skipped when it reaches the head.
	fifo  []*entry
	head  int
	stats Stats
}

// New returns an empty table.
func New(opts Options) (*Table, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Table{opts: opts, keys: map[string]*entry{}}, nil
}

// Ticket is the ownership of a claimed key; the zero Ticket owns nothing (its Complete
// and Abort do nothing).
type Ticket struct {
	t      *Table
	e      *entry
	window time.Duration
}

// mapKey joins a topic and a UNIQ_KEY in one allocation.
func mapKey(topic string, uniqKey []byte) string {
	var b strings.Builder
	b.Grow(len(topic) + 1 + len(uniqKey))
	b.WriteString(topic)
	b.WriteByte(0)
	b.Write(uniqKey)
	return b.String()
}

// Claim decides what a send of uniqKey to topic is (see the package doc): a duplicate
// (dup true, ans the first answer), or a new message the caller now owns (tk is then not
// the zero Ticket). It waits while another request stores the same key, until ctx ends
// (then the error is ctx's). Its window counts from the claim.
func (t *Table) Claim(ctx context.Context, topic string, uniqKey []byte, window time.Duration) (ans Answer, dup bool, tk Ticket, err error) {
	k := mapKey(topic, uniqKey)
	for {
		t.mu.Lock()
		now := t.opts.Now().UnixNano()
		e, ok := t.keys[k]
		switch {
		case ok && e.state == answered && now < e.expires:
			t.stats.Duplicates++
			ans := e.ans
			t.mu.Unlock()
			return ans, true, Ticket{}, nil
		case ok && e.state == pending:
			if e.done == nil {
				e.done = make(chan struct{})
			}
			done := e.done
			t.mu.Unlock()
			select {
			case <-done:
				continue
			case <-ctx.Done():
				return Answer{}, false, Ticket{}, fmt.Errorf("dedup: waiting for an earlier send of %s: %w", uniqKey, ctx.Err())
			}
		}
		e = &entry{key: k, expires: now}
		t.insertLocked(e, now)
		t.mu.Unlock()
		return Answer{}, false, Ticket{t: t, e: e, window: window}, nil
	}
}

// Complete records the answer of the ticket's send; the key is a duplicate for the window
// from the claim. Complete or Abort after either has no effect.
func (tk *Ticket) Complete(ans Answer) {
	tk.finish(func(t *Table, e *entry) {
		e.ans, e.state = ans, answered
		e.expires += int64(tk.window)
	})
}

// Abort ends the ticket's claim without an answer: nothing was stored, the key is
// forgotten. It has no effect after Complete.
func (tk *Ticket) Abort() {
	tk.finish(func(t *Table, e *entry) {
		e.state = aborted
		if t.keys[e.key] == e {
			delete(t.keys, e.key)
		}
	})
}

// finish ends a pending claim with fn, under the table's lock, and wakes its waiters.
func (tk *Ticket) finish(fn func(*Table, *entry)) {
	if tk.e == nil {
		return
	}
	t := tk.t
	t.mu.Lock()
	defer t.mu.Unlock()
	if tk.e.state != pending {
		return
	}
	fn(t, tk.e)
	tk.e.end()
}

// end wakes the requests waiting on a claim that ended.
func (e *entry) end() {
	if e.done != nil {
		close(e.done)
	}
}

// Reserve makes room for n keys (at most MaxKeys) in a table that holds none yet, so
// that refilling it does not grow its map step by step.
func (t *Table) Reserve(n int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.keys) == 0 && n > 0 {
		t.keys = make(map[string]*entry, min(n, t.opts.MaxKeys))
	}
}

// Remember records an answer given at storedAt (when the broker refills the table after a
// restart); a key already known keeps its entry, and one whose window has passed is
// ignored.
func (t *Table) Remember(topic string, uniqKey []byte, window time.Duration, storedAt time.Time, ans Answer) {
	k := mapKey(topic, uniqKey)
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.opts.Now().UnixNano()
	expires := storedAt.Add(window).UnixNano()
	if now >= expires {
		return
	}
	if _, ok := t.keys[k]; ok {
		return
	}
	t.insertLocked(&entry{key: k, expires: expires, ans: ans, state: answered}, now)
}

// insertLocked adds e, first dropping entries past their window from the head and, when
// the table is full, the oldest answered one. A claim in progress is never dropped (its
// retry would store the message again): the table then holds MaxKeys plus the claims in
// progress.
func (t *Table) insertLocked(e *entry, now int64) {
	for t.head < len(t.fifo) {
		old := t.fifo[t.head]
		live := t.keys[old.key] == old
		if live && (old.state == pending || now < old.expires) {
			if len(t.keys) < t.opts.MaxKeys || old.state == pending {
				break
			}
			t.stats.Evicted++
		}
		if live {
			delete(t.keys, old.key)
		}
		t.fifo[t.head] = nil
		t.head++
	}
	if dead := len(t.fifo) - t.head - len(t.keys); dead > max(len(t.keys), 1024) {
		t.compactLocked(now)
	} else if t.head > len(t.fifo)/2 && t.head > 1024 {
		t.fifo = append(t.fifo[:0], t.fifo[t.head:]...)
		t.head = 0
	}
	t.keys[e.key] = e
	t.fifo = append(t.fifo, e)
}

// compactLocked rewrites the FIFO without the entries that are no longer in the table
// (aborted or replaced claims, which a head that is not due yet keeps behind it) and
// drops the answered ones past their window. It runs when those outnumber the live
// entries, so its cost is amortised over as many inserts as it removes.
func (t *Table) compactLocked(now int64) {
	live := t.fifo[:0]
	for _, old := range t.fifo[t.head:] {
		switch {
		case t.keys[old.key] != old:
		case old.state == answered && now >= old.expires:
			delete(t.keys, old.key)
		default:
			live = append(live, old)
		}
	}
	clear(t.fifo[len(live):])
	t.fifo, t.head = live, 0
}

// Stats returns the table's counters.
func (t *Table) Stats() Stats {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.stats
	s.Keys = len(t.keys)
	return s
}
