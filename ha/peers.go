package ha

import (
	"cmp"
	"slices"
	"time"
)

// Identified slaves (controller mode, MasterOptions.Epoch > 0).
//
// A master in controller mode knows each slave by the broker id of its identity hello and
// keeps, per broker id and across its connections, the offset it last reported and when
// it last caught up: the latest time T such that the slave has acknowledged everything
// the master's log held at T. A report at or past the log's end catches the slave up at
// once; under load, where a report trails the end, each connection's writer samples the
// log's end (at most every sampleEvery, the last sampleCap samples) and a report that
// passes a sample catches the slave up to that sample's time. A slave further behind than
// the oldest sample kept is taken to have caught up no later than that sample (it looks
// further behind than it is, never less). The broker's SyncStateSet upkeep reads it
// (Peers), and a send that waits for every member of the set asks AckedBy.

// Sampling of the log's end by the writers (see above).
const (
	sampleEvery = 20 * time.Millisecond
	sampleCap   = 1024 // about 20 s of samples under constant load
)

// Peer is an identified slave as its master knows it.
type Peer struct {
	BrokerID int64
	Epoch    int32  // the epoch of its identity hello
	Addr     string // the remote address of its latest connection
	// Ack is the offset it last reported (on its latest connection).
	Ack int64
	// Connected reports whether it holds a connection.
	Connected bool
	// CaughtUp is the last time T such that it had acknowledged everything the log held at
	// T; zero when it never did.
	CaughtUp time.Time
}

// peer is a Peer's state, guarded by Master.mu.
type peer struct {
	Peer
	conns int // open connections of this broker id
}

// endSample records that the log ended at off at time at.
type endSample struct {
	off int64
	at  time.Time
}

// sampleRing holds a connection's last sampleCap samples, oldest first. It is guarded by
// Master.mu.
type sampleRing struct {
	buf     [sampleCap]endSample
	head, n int
}

// push adds a sample, dropping the oldest when full.
func (r *sampleRing) push(s endSample) {
	if r.n == sampleCap {
		r.head = (r.head + 1) % sampleCap
		r.n--
	}
	r.buf[(r.head+r.n)%sampleCap] = s
	r.n++
}

// last is the newest sample (ok false when none).
func (r *sampleRing) last() (endSample, bool) {
	if r.n == 0 {
		return endSample{}, false
	}
	return r.buf[(r.head+r.n-1)%sampleCap], true
}

// passed drops the samples at or below ack and returns the time of the newest of them
// (ok false when none).
func (r *sampleRing) passed(ack int64) (time.Time, bool) {
	var at time.Time
	ok := false
	for r.n > 0 && r.buf[r.head].off <= ack {
		at, ok = r.buf[r.head].at, true
		r.head = (r.head + 1) % sampleCap
		r.n--
	}
	return at, ok
}

// sample records the log's end now, at most every sampleEvery (the writer of an
// identified connection calls it after each frame).
func (c *masterConn) sample() {
	if c.samples == nil {
		return
	}
	now := time.Now()
	end := c.m.opts.Log.MaxOffset()
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	if last, ok := c.samples.last(); ok && (now.Sub(last.at) < sampleEvery || last.off >= end) {
		return
	}
	c.samples.push(endSample{off: end, at: now})
}

// Peers lists the identified slaves seen since the master started (connected or not),
// by broker id.
func (m *Master) Peers() []Peer {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Peer, 0, len(m.mu.peers))
	for _, p := range m.mu.peers {
		out = append(out, p.Peer)
	}
	slices.SortFunc(out, func(a, b Peer) int { return cmp.Compare(a.BrokerID, b.BrokerID) })
	return out
}

// AckedBy reports whether every identified slave in ids has acknowledged offset (false
// for an id never seen).
func (m *Master) AckedBy(ids []int64, offset int64) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, id := range ids {
		p := m.mu.peers[id]
		if p == nil || p.Ack < offset {
			return false
		}
	}
	return true
}

// Changes returns a channel closed at the next change of an acknowledgement or of the
// connected slaves (then replaced): a caller takes it before looking, and waits on it.
func (m *Master) Changes() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.mu.changed
}

// registerPeerLocked counts c's connection for its broker id. m.mu is held.
func (m *Master) registerPeerLocked(c *masterConn) {
	p := m.mu.peers[c.peerID]
	if p == nil {
		p = &peer{Peer: Peer{BrokerID: c.peerID}}
		m.mu.peers[c.peerID] = p
	}
	p.conns++
	p.Connected = true
	p.Epoch, p.Addr = c.epoch, c.raw.RemoteAddr().String()
	m.changedLocked()
}

// removePeerLocked uncounts c's connection. m.mu is held.
func (m *Master) removePeerLocked(c *masterConn) {
	if p := m.mu.peers[c.peerID]; p != nil {
		p.conns--
		p.Connected = p.conns > 0
	}
	m.changedLocked()
}

// peerAcked records an identified slave's report of off, read when the log ended at end.
func (m *Master) peerAcked(c *masterConn, off, end int64) {
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.mu.peers[c.peerID]
	if p == nil {
		return
	}
	p.Ack = off
	switch at, ok := c.samples.passed(off); {
	case off >= end:
		p.CaughtUp = now
	case ok && at.After(p.CaughtUp):
		p.CaughtUp = at
	}
	m.changedLocked()
}
