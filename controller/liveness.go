package controller

import (
	"maps"
	"slices"
	"sync"
	"time"
)

// liveness is the Raft leader's table of broker heartbeats: when each broker was last
// heard from, with the epoch and log offset it reported. It is local knowledge, not
// replicated: a node that becomes leader starts with an empty table and a grace period
// of one heartbeat timeout before it declares anyone dead (the brokers have had time to
// find it by then). The table belongs to one leadership term; a heartbeat or check in
// another term starts it afresh. It is safe for concurrent use.
type liveness struct {
	timeout time.Duration

	mu      sync.Mutex
	term    uint64    // the leadership term the table belongs to; 0 before the first
	since   time.Time // when this node was first seen leading in term
	brokers map[string]map[int64]beat
	starts  map[string]time.Time // group → when a broker of it last registered after a start
}

// beat is a broker's last heartbeat.
type beat struct {
	at     time.Time
	epoch  int32
	offset int64
}

func newLiveness(timeout time.Duration) *liveness {
	return &liveness{timeout: timeout, brokers: make(map[string]map[int64]beat), starts: make(map[string]time.Time)}
}

// syncTerm starts a fresh table when term is not the table's (l.mu held).
func (l *liveness) syncTerm(term uint64, now time.Time) {
	if term != l.term {
		l.term, l.since = term, now
		l.brokers = make(map[string]map[int64]beat)
		l.starts = make(map[string]time.Time)
	}
}

// record notes a heartbeat of broker id in group, in leadership term.
func (l *liveness) record(term uint64, group string, id int64, epoch int32, offset int64, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.syncTerm(term, now)
	g := l.brokers[group]
	if g == nil {
		g = make(map[int64]beat)
		l.brokers[group] = g
	}
	g[id] = beat{at: now, epoch: epoch, offset: offset}
}

// inGrace reports whether term's leadership is younger than one heartbeat timeout: not
// every broker has had time to reach this node, so a silent one may be alive.
func (l *liveness) inGrace(term uint64, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.syncTerm(term, now)
	return now.Sub(l.since) < l.timeout
}

// state returns broker id's liveness in group: alive when its last heartbeat in term is
// fresher than the timeout, with what it reported.
func (l *liveness) state(term uint64, group string, id int64, now time.Time) (alive bool, epoch int32, offset int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.syncTerm(term, now)
	b, ok := l.brokers[group][id]
	if !ok {
		return false, 0, 0
	}
	return now.Sub(b.at) < l.timeout, b.epoch, b.offset
}

// alive returns the alive brokers of group in term, ascending by id, as an election
// carries them.
func (l *liveness) alive(term uint64, group string, now time.Time) []Replica {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.syncTerm(term, now)
	g := l.brokers[group]
	var out []Replica
	for _, id := range slices.Sorted(maps.Keys(g)) {
		if b := g[id]; now.Sub(b.at) < l.timeout {
			out = append(out, Replica{ID: id, Epoch: b.epoch, Offset: b.offset})
		}
	}
	return out
}

// started notes that a broker of group registered after a start (a new process or
// agent) in term: if it is the master, the group's re-election waits for reports made
// after now (settled).
func (l *liveness) started(term uint64, group string, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.syncTerm(term, now)
	l.starts[group] = now
}

// settled reports whether the leader knows where every member of set stands since the
// last start noted for group (started): each has heartbeated since then, or is not
// alive — which, while term's leadership is in its grace period, takes a heartbeat in
// term that lapsed. A restarted master's re-election waits for this, so that it compares
// the restarted master's log with what its slaves hold now, not with reports made while
// the old process still ran. Without a start noted in term (a leader elected after the
// restart), any heartbeat in term counts.
func (l *liveness) settled(term uint64, group string, set []int64, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.syncTerm(term, now)
	since := l.starts[group]
	grace := now.Sub(l.since) < l.timeout
	for _, id := range set {
		b, ok := l.brokers[group][id]
		switch {
		case ok && now.Sub(b.at) < l.timeout:
			if b.at.Before(since) {
				return false // alive, but has not reported since the start
			}
		case !ok && grace:
			return false // not heard of yet in this term: maybe alive
		}
	}
	return true
}
