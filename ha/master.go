package ha

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/ferrymq/ferry/internal/logging"
)

// ErrClosed means the Master or Slave was closed.
var ErrClosed = errors.New("ha: closed")

// ErrNoSlave means no slave is connected: WaitAck returns it at once when there is none,
// and to its waiters as soon as the last one disconnects, so that a SYNC_MASTER can
// answer them (SLAVE_NOT_AVAILABLE) before its clients time out and resend.
var ErrNoSlave = errors.New("ha: no slave connected")

// Master streams its commit log to slaves and tracks their acknowledgements.
//
// Lock order: mu only; no other lock is taken under it.
type Master struct {
	opts MasterOptions
	log  zerolog.Logger

	ack atomic.Int64 // highest offset any slave acknowledged (push2SlaveMaxOffset)

	mu struct {
		sync.Mutex
		conns   map[*masterConn]struct{} // every open connection, slave or not yet
		slaves  int                      // connections that are slaves (masterConn.slave)
		changed chan struct{}            // closed and replaced when an ack grows or a slave leaves
		peers   map[int64]*peer          // identified slaves by broker id (controller mode)
		closed  bool
	}
	stop chan struct{}
	g    group

	refusals logging.Sampler // the log line for refused connections

	nonceMu sync.Mutex
	nonces  map[[HelloNonceSize]byte]time.Time // hello nonces accepted, until they expire
}

// SlaveInfo describes one connected slave.
type SlaveInfo struct {
	Addr     string
	Ack      int64 // the offset it last reported
	BrokerID int64 // its identity hello's broker id (controller mode); 0: anonymous
}

// NewMaster starts accepting slaves on opts.Listener.
func NewMaster(opts MasterOptions) (*Master, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	m := &Master{opts: opts, log: opts.Logger.With().Str("component", "ha-master").Logger(), stop: make(chan struct{})}
	m.mu.conns = make(map[*masterConn]struct{})
	m.mu.peers = make(map[int64]*peer)
	m.nonces = make(map[[HelloNonceSize]byte]time.Time)
	m.mu.changed = make(chan struct{})
	m.g.goTracked(m.acceptLoop)
	return m, nil
}

// Addr is the listener's address.
func (m *Master) Addr() net.Addr { return m.opts.Listener.Addr() }

// Close stops accepting, closes every slave connection and waits for the goroutines.
// It is idempotent.
func (m *Master) Close() error {
	m.mu.Lock()
	if m.mu.closed {
		m.mu.Unlock()
		return nil
	}
	m.mu.closed = true
	close(m.stop)
	err := m.opts.Listener.Close()
	for c := range m.mu.conns {
		_ = c.raw.Close()
	}
	m.mu.Unlock()
	m.g.wait()
	if err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("ha: close listener: %w", err)
	}
	return nil
}

// Notify tells the writers that the log has grown, so they need not wait for
// PollInterval. It never blocks.
func (m *Master) Notify() {
	m.mu.Lock()
	for c := range m.mu.conns {
		select {
		case c.kick <- struct{}{}:
		default:
		}
	}
	m.mu.Unlock()
}

// SlaveAckOffset is the highest offset any slave has acknowledged (0 before any).
func (m *Master) SlaveAckOffset() int64 { return m.ack.Load() }

// Lag is how far the acknowledged offset is behind the log's end, in bytes.
func (m *Master) Lag() int64 { return max(m.opts.Log.MaxOffset()-m.ack.Load(), 0) }

// SlaveCount is the number of connected slaves.
func (m *Master) SlaveCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.mu.slaves
}

// Slaves lists the connected slaves.
func (m *Master) Slaves() []SlaveInfo {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]SlaveInfo, 0, len(m.mu.conns))
	for c := range m.mu.conns {
		if c.slave {
			out = append(out, SlaveInfo{Addr: c.raw.RemoteAddr().String(), Ack: c.ack.Load(), BrokerID: c.peerID})
		}
	}
	return out
}

// WaitAck blocks until some slave has acknowledged offset (SYNC_MASTER), ctx ends
// (its error, wrapped), no slave is connected (ErrNoSlave: at once when there is none,
// else when the last one disconnects) or the Master is closed (ErrClosed).
func (m *Master) WaitAck(ctx context.Context, offset int64) error {
	for {
		if m.ack.Load() >= offset {
			return nil
		}
		m.mu.Lock()
		ch, closed, slaves := m.mu.changed, m.mu.closed, m.mu.slaves
		m.mu.Unlock()
		if closed {
			return ErrClosed
		}
		if m.ack.Load() >= offset { // acked between the load and taking ch
			return nil
		}
		if slaves == 0 {
			return fmt.Errorf("%w (waiting for an acknowledgement of %d, acked %d)", ErrNoSlave, offset, m.ack.Load())
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("ha: wait for slave ack of %d (acked %d): %w", offset, m.ack.Load(), ctx.Err())
		case <-m.stop:
			return ErrClosed
		}
	}
}

// acked raises the acknowledged offset and wakes WaitAck callers.
func (m *Master) acked(off int64) {
	for {
		cur := m.ack.Load()
		if off <= cur {
			return
		}
		if m.ack.CompareAndSwap(cur, off) {
			break
		}
	}
	m.mu.Lock()
	m.changedLocked()
	m.mu.Unlock()
}

// changedLocked wakes the WaitAck callers. m.mu is held.
func (m *Master) changedLocked() {
	close(m.mu.changed)
	m.mu.changed = make(chan struct{})
}

func (m *Master) acceptLoop() {
	var delay time.Duration
	for {
		conn, err := m.opts.Listener.Accept()
		if err != nil {
			select {
			case <-m.stop:
				return
			default:
			}
			if !errors.Is(err, net.ErrClosed) { // temporary (EMFILE, ...): back off and retry
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				m.log.Warn().Err(err).Dur("retry_in", delay).Msg("accept failed")
				select {
				case <-time.After(delay):
					continue
				case <-m.stop:
					return
				}
			}
			m.log.Error().Err(err).Msg("HA listener closed")
			return
		}
		delay = 0
		c := newMasterConn(m, conn)
		m.mu.Lock()
		if m.mu.closed {
			m.mu.Unlock()
			_ = conn.Close()
			return
		}
		m.mu.conns[c] = struct{}{}
		m.mu.Unlock()
		m.g.goTracked(c.run)
	}
}

// register counts c as a slave (it passed the handshake); false when the Master is
// closed.
func (m *Master) register(c *masterConn) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.mu.closed {
		return false
	}
	c.slave = true
	m.mu.slaves++
	if c.peerID != 0 {
		m.registerPeerLocked(c)
	}
	return true
}

// remove forgets c; when it was the last slave, the WaitAck callers are woken to
// return ErrNoSlave.
func (m *Master) remove(c *masterConn) {
	m.mu.Lock()
	delete(m.mu.conns, c)
	if c.slave {
		c.slave = false
		m.mu.slaves--
		switch {
		case c.peerID != 0:
			m.removePeerLocked(c)
		case m.mu.slaves == 0:
			m.changedLocked()
		}
	}
	m.mu.Unlock()
}
