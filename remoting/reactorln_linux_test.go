//go:build linux

package remoting

import (
	"context"
	"errors"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The reactor's listener accepts non-blocking, close-on-exec sockets with the peer's
// address, says "nothing" when nothing is pending, and closes both descriptors once: the
// caller's listener is closed with it, and a descriptor opened after Close (which may
// reuse the duplicate's number) is left alone by a second Close.
func TestReactorListener(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var noDelayErrs []error
	rl, ok, err := newReactorListener(ln, func(_ net.Addr, err error) { noDelayErrs = append(noDelayErrs, err) })
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, ln.Addr(), rl.Addr())

	c, err := rl.Accept()
	require.NoError(t, err)
	require.Nil(t, c, "nothing pending: netpoll's (nil, nil)")

	peer, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer peer.Close()
	var got net.Conn
	for deadline := time.Now().Add(5 * time.Second); got == nil; {
		require.True(t, time.Now().Before(deadline), "the connection is accepted")
		got, err = rl.Accept()
		require.NoError(t, err)
		if got == nil {
			time.Sleep(time.Millisecond) // polling a non-blocking accept
		}
	}
	hc := got.(*handoffConn)
	require.Equal(t, peer.LocalAddr().String(), hc.RemoteAddr().String())
	fdFlags, err := fcntl(hc.fd, syscall.F_GETFD)
	require.NoError(t, err)
	require.NotZero(t, fdFlags&syscall.FD_CLOEXEC, "close-on-exec")
	flFlags, err := fcntl(hc.fd, syscall.F_GETFL)
	require.NoError(t, err)
	require.NotZero(t, flFlags&syscall.O_NONBLOCK, "non-blocking")
	require.True(t, fdNoDelay(t, hc.fd), "TCP_NODELAY: netpoll sets it only on what its own listener accepts")
	require.Empty(t, noDelayErrs)
	require.NoError(t, hc.Close())

	dup := rl.fd
	require.NoError(t, rl.Close())
	_, err = ln.Accept()
	require.ErrorIs(t, err, net.ErrClosed, "the caller's listener is closed with it")
	var p [2]int
	require.NoError(t, syscall.Pipe(p[:])) // likely takes the duplicate's freed number
	defer syscall.Close(p[0])
	defer syscall.Close(p[1])
	require.NoError(t, rl.Close(), "a second Close is a no-op")
	for _, fd := range p {
		_, err := fcntl(fd, syscall.F_GETFD)
		require.NoError(t, err, "descriptor %d (the duplicate was %d) still open", fd, dup)
	}
	_, err = rl.Accept()
	require.True(t, errors.Is(err, net.ErrClosed), "accepting after Close: %v", err)
}

// Setting TCP_NODELAY on something that is not a TCP socket fails, wrapped, rather than
// being ignored.
func TestSetNoDelayFDReportsFailure(t *testing.T) {
	var p [2]int
	require.NoError(t, syscall.Pipe(p[:]))
	defer syscall.Close(p[0])
	defer syscall.Close(p[1])
	err := setNoDelayFD(p[0])
	require.ErrorIs(t, err, syscall.ENOTSOCK)
	require.ErrorContains(t, err, "TCP_NODELAY")
}

func fcntl(fd, cmd int) (int, error) {
	r, _, errno := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), uintptr(cmd), 0)
	if errno != 0 {
		return 0, errno
	}
	return int(r), nil
}

// A server whose listening socket dies under it (here shut down from outside, which makes
// netpoll's loop end as a hang-up) says so through Failed and ServeErr; a server shut
// down normally does not.
func TestFailedWhenTheListenerDies(t *testing.T) {
	s, err := NewServer(DefaultServerOptions())
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	require.NoError(t, s.Start(ln))
	rc, err := ln.(*net.TCPListener).SyscallConn()
	require.NoError(t, err)
	require.NoError(t, rc.Control(func(fd uintptr) {
		require.NoError(t, syscall.Shutdown(int(fd), syscall.SHUT_RDWR))
	}))
	select {
	case <-s.Failed():
	case <-time.After(10 * time.Second):
		t.Fatal("Failed not closed after the listener died")
	}
	require.Error(t, s.ServeErr())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.ErrorIs(t, s.Shutdown(ctx), s.ServeErr(), "Shutdown reports it too")

	healthy := testServer(t, nil, nil)
	require.NoError(t, healthy.Shutdown(ctx))
	select {
	case <-healthy.Failed():
		t.Fatal("a normal shutdown closed Failed")
	default:
	}
	require.NoError(t, healthy.ServeErr())
}
