//go:build linux

package remoting

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"syscall"
)

// reactorListener hands a plain TCP listener to the netpoll reactor in place of
// netpoll.ConvertListener, whose listener has two faults: its Close closes the duplicated
// descriptor twice — by number, then through its *os.File — so a descriptor the process
// opened in between (a connection, another server's listener) is closed under its owner;
// and it accepts without SOCK_CLOEXEC, so a child process started meanwhile inherits the
// connection and keeps it open after the server closes it. This one accepts with
// accept4(SOCK_NONBLOCK|SOCK_CLOEXEC) through the duplicate's RawConn, which also keeps
// its descriptor number from being reused while an accept runs, and closes each
// descriptor exactly once. It sets TCP_NODELAY on each socket it accepts (netpoll sets it
// only on connections its own listener accepted; see nodelay.go).
type reactorListener struct {
	ln   net.Listener    // the caller's listener, closed with the duplicate
	file *os.File        // the duplicate the reactor polls
	rc   syscall.RawConn // file's, for accepting
	fd   int
	addr net.Addr
	// noDelayFailed (never nil) is told about an accepted socket whose TCP_NODELAY could
	// not be set; the socket is served anyway.
	noDelayFailed func(remote net.Addr, err error)

	once     sync.Once
	closeErr error
}

// newReactorListener wraps ln for the reactor. It reports false, doing nothing, when ln
// is not a *net.TCPListener (netpoll's own conversion then serves it). noDelayFailed is
// called (on the reactor's poller) for a socket whose TCP_NODELAY could not be set.
func newReactorListener(ln net.Listener, noDelayFailed func(net.Addr, error)) (*reactorListener, bool, error) {
	tl, ok := ln.(*net.TCPListener)
	if !ok {
		return nil, false, nil
	}
	f, err := tl.File() // a close-on-exec duplicate
	if err != nil {
		return nil, true, fmt.Errorf("remoting: reactor listener: %w", err)
	}
	rc, err := f.SyscallConn()
	if err != nil {
		_ = f.Close()
		return nil, true, fmt.Errorf("remoting: reactor listener: %w", err)
	}
	fd := int(f.Fd()) // Fd puts the descriptor in blocking mode: undone below
	if err := syscall.SetNonblock(fd, true); err != nil {
		_ = f.Close()
		return nil, true, fmt.Errorf("remoting: reactor listener: %w", err)
	}
	return &reactorListener{ln: ln, file: f, rc: rc, fd: fd, addr: ln.Addr(), noDelayFailed: noDelayFailed}, true, nil
}

// Accept implements net.Listener for netpoll, which calls it on its poller when the
// socket is readable: the next connection, or (nil, nil) — netpoll's "nothing to
// accept" — when none is pending.
func (l *reactorListener) Accept() (net.Conn, error) {
	var (
		nfd   int
		sa    syscall.Sockaddr
		aerr  error
		local = l.addr
	)
	if err := l.rc.Control(func(fd uintptr) {
		nfd, sa, aerr = syscall.Accept4(int(fd), syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC)
	}); err != nil {
		return nil, fmt.Errorf("remoting: accept: %w", net.ErrClosed) // netpoll quits on "closed"
	}
	switch {
	case aerr == nil:
		hc := &handoffConn{fd: nfd, local: local, remote: sockaddrAddr(sa)}
		if err := setNoDelayFD(nfd); err != nil {
			l.noDelayFailed(hc.remote, err)
		}
		return hc, nil
	case errors.Is(aerr, syscall.EAGAIN), errors.Is(aerr, syscall.EINTR), errors.Is(aerr, syscall.ECONNABORTED):
		return nil, nil // nothing now; a pending connection keeps the socket readable
	default:
		return nil, fmt.Errorf("remoting: accept: %w", aerr)
	}
}

// Close implements net.Listener: it closes the duplicate and the caller's listener, once.
// netpoll detaches the duplicate from its poller before calling it.
func (l *reactorListener) Close() error {
	l.once.Do(func() { l.closeErr = errors.Join(l.file.Close(), l.ln.Close()) })
	return l.closeErr
}

// Addr implements net.Listener.
func (l *reactorListener) Addr() net.Addr { return l.addr }

// Fd implements netpoll.Listener: the descriptor netpoll polls for readability.
func (l *reactorListener) Fd() int { return l.fd }

// setNoDelayFD turns Nagle's algorithm off on the TCP socket fd.
func setNoDelayFD(fd int) error {
	if err := syscall.SetsockoptInt(fd, syscall.IPPROTO_TCP, syscall.TCP_NODELAY, 1); err != nil {
		return fmt.Errorf("remoting: setting TCP_NODELAY: %w", err)
	}
	return nil
}

// sockaddrAddr converts an accepted peer's address.
func sockaddrAddr(sa syscall.Sockaddr) net.Addr {
	switch sa := sa.(type) {
	case *syscall.SockaddrInet4:
		return &net.TCPAddr{IP: net.IP(append([]byte(nil), sa.Addr[:]...)), Port: sa.Port}
	case *syscall.SockaddrInet6:
		zone := ""
		if sa.ZoneId != 0 {
			zone = strconv.FormatUint(uint64(sa.ZoneId), 10)
			if ifi, err := net.InterfaceByIndex(int(sa.ZoneId)); err == nil {
				zone = ifi.Name
			}
		}
		return &net.TCPAddr{IP: net.IP(append([]byte(nil), sa.Addr[:]...)), Port: sa.Port, Zone: zone}
	default:
		return &net.TCPAddr{}
	}
}

// closeDup closes the duplicate alone (Start failed: ln stays the caller's).
func (l *reactorListener) closeDup() error { return l.file.Close() }
