//go:build unix

package remoting

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"syscall"
	"time"
)

// Handing plain connections of a permissive port to the netpoll reactor.
//
// In permissive mode the std accept loop owns the listener and peeks at each connection's
// first byte (MSG_PEEK, so the byte stays in the kernel). A plain connection is then
// detached from package net — its descriptor duplicated, the net.Conn closed (which
// removes it from Go's poller before closing its descriptor) — and queued on a
// handoffListener: a netpoll.Listener whose descriptor is a pipe that is readable while
// connections are queued. The reactor serving it "accepts" them exactly like sockets from
// a real listener (same OnPrepare, OnRequest, close callbacks, timeouts, Shutdown), so a
// plain connection of a permissive port costs one dup and one pipe wake-up at accept and
// nothing afterwards.

// errHandoffUnsupported means plain connections cannot be handed to the reactor here; the
// std path serves them.
var errHandoffUnsupported = errors.New("remoting: handing connections to netpoll is not supported")

// handoffListener queues detached plain connections for a netpoll event loop.
type handoffListener struct {
	addr     net.Addr
	rfd, wfd int // the wake-up pipe: readable while the queue is not empty

	mu struct {
		sync.Mutex
		queue  []*handoffConn
		closed bool
	}
}

// newHandoffListener returns an empty listener that reports addr as its address.
func newHandoffListener(addr net.Addr) (*handoffListener, error) {
	var p [2]int
	syscall.ForkLock.RLock()
	err := syscall.Pipe(p[:])
	if err == nil {
		syscall.CloseOnExec(p[0])
		syscall.CloseOnExec(p[1])
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return nil, fmt.Errorf("remoting: handoff pipe: %w", err)
	}
	for _, fd := range p {
		if err := syscall.SetNonblock(fd, true); err != nil {
			_ = syscall.Close(p[0])
			_ = syscall.Close(p[1])
			return nil, fmt.Errorf("remoting: handoff pipe: %w", err)
		}
	}
	return &handoffListener{addr: addr, rfd: p[0], wfd: p[1]}, nil
}

// push queues hc for the reactor. It fails with net.ErrClosed once the listener is closed;
// the caller then still owns hc.
func (l *handoffListener) push(hc *handoffConn) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.closed {
		return net.ErrClosed
	}
	l.mu.queue = append(l.mu.queue, hc)
	if len(l.mu.queue) == 1 {
		// One byte per empty→non-empty transition; Accept drains the pipe when it finds the
		// queue empty, so the pipe never fills.
		if _, err := syscall.Write(l.wfd, []byte{1}); err != nil && !errors.Is(err, syscall.EAGAIN) {
			l.mu.queue = l.mu.queue[:0]
			return fmt.Errorf("remoting: waking the reactor: %w", err)
		}
	}
	return nil
}

// Accept implements net.Listener for netpoll, which calls it on its poller when the pipe
// is readable: it returns the next queued connection, or (nil, nil) — netpoll's "nothing
// to accept" — after draining the pipe.
func (l *handoffListener) Accept() (net.Conn, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.mu.queue) > 0 {
		hc := l.mu.queue[0]
		l.mu.queue[0] = nil
		l.mu.queue = l.mu.queue[1:]
		return hc, nil
	}
	if l.mu.closed {
		return nil, net.ErrClosed
	}
	var buf [16]byte
	for {
		if n, err := syscall.Read(l.rfd, buf[:]); n <= 0 || err != nil {
			return nil, nil // netpoll's "nothing to accept" (EAGAIN)
		}
	}
}

// Close implements net.Listener: it closes the queued connections and the pipe. netpoll
// detaches the pipe from its poller before calling it.
func (l *handoffListener) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.closed {
		return nil
	}
	l.mu.closed = true
	for _, hc := range l.mu.queue {
		_ = hc.Close()
	}
	l.mu.queue = nil
	return errors.Join(syscall.Close(l.rfd), syscall.Close(l.wfd))
}

// Addr implements net.Listener.
func (l *handoffListener) Addr() net.Addr { return l.addr }

// Fd implements netpoll.Listener: the descriptor netpoll polls for readability.
func (l *handoffListener) Fd() int { return l.rfd }

// handoffConn is a detached socket on its way to the reactor. netpoll takes its
// descriptor and addresses (netpoll.Conn) and closes the descriptor itself; only a socket
// still queued when the listener closes is closed through Close.
type handoffConn struct {
	fd            int
	local, remote net.Addr
}

// Fd implements netpoll.Conn.
func (h *handoffConn) Fd() int { return h.fd }

// Read implements net.Conn; netpoll never calls it.
func (h *handoffConn) Read([]byte) (int, error) { return 0, io.EOF }

// Write implements net.Conn; netpoll never calls it.
func (h *handoffConn) Write([]byte) (int, error) { return 0, net.ErrClosed }

// Close closes the descriptor.
func (h *handoffConn) Close() error { return syscall.Close(h.fd) }

// LocalAddr implements net.Conn.
func (h *handoffConn) LocalAddr() net.Addr { return h.local }

// RemoteAddr implements net.Conn: the peer's real address, which the Channel reports.
func (h *handoffConn) RemoteAddr() net.Addr { return h.remote }

// SetDeadline implements net.Conn; netpoll never calls it.
func (h *handoffConn) SetDeadline(time.Time) error { return nil }

// SetReadDeadline implements net.Conn; netpoll never calls it.
func (h *handoffConn) SetReadDeadline(time.Time) error { return nil }

// SetWriteDeadline implements net.Conn; netpoll never calls it.
func (h *handoffConn) SetWriteDeadline(time.Time) error { return nil }

// detachFD takes nc's socket out of package net for the reactor: it duplicates the
// descriptor and closes nc. It reports false, leaving nc alone, when nc has no descriptor
// (a wrapped connection).
func detachFD(nc net.Conn) (*handoffConn, bool, error) {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return nil, false, nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil, false, nil // no descriptor: the std path serves nc
	}
	fd, derr := -1, error(nil)
	if err := rc.Control(func(s uintptr) {
		syscall.ForkLock.RLock()
		defer syscall.ForkLock.RUnlock()
		if fd, derr = syscall.Dup(int(s)); derr == nil {
			syscall.CloseOnExec(fd)
		}
	}); err != nil {
		return nil, true, fmt.Errorf("remoting: detaching socket: %w", err)
	}
	if derr != nil {
		return nil, true, fmt.Errorf("remoting: detaching socket: %w", derr)
	}
	hc := &handoffConn{fd: fd, local: nc.LocalAddr(), remote: nc.RemoteAddr()}
	_ = nc.Close() // the duplicate keeps the socket open
	return hc, true, nil
}

// peekFirstByte waits (until nc's read deadline) for nc's first byte and returns it
// without consuming it. It reports false, reading nothing, when nc has no descriptor.
func peekFirstByte(nc net.Conn) (byte, bool, error) {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return 0, false, nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return 0, false, nil // no descriptor: the caller reads instead
	}
	var b [1]byte
	var n int
	var perr error
	if err := rc.Read(func(fd uintptr) bool {
		for {
			n, _, perr = syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK)
			if !errors.Is(perr, syscall.EINTR) {
				return !errors.Is(perr, syscall.EAGAIN) // EAGAIN: wait until readable
			}
		}
	}); err != nil {
		return 0, true, err
	}
	switch {
	case perr != nil:
		return 0, true, perr
	case n == 0:
		return 0, true, io.EOF
	}
	return b[0], true, nil
}
