//go:build unix

package remoting

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"strings"
	"syscall"
	"testing"

	"github.com/cloudwego/netpoll"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/internal/testkit"
)

// fdNoDelay reads TCP_NODELAY from the socket fd.
func fdNoDelay(t *testing.T, fd int) bool {
	t.Helper()
	v, err := syscall.GetsockoptInt(fd, syscall.IPPROTO_TCP, syscall.TCP_NODELAY)
	require.NoError(t, err)
	return v != 0
}

// connNoDelay reads TCP_NODELAY from nc's socket (nc a *net.TCPConn, possibly wrapped
// in a *tls.Conn or an opaqueConn).
func connNoDelay(t *testing.T, nc net.Conn) bool {
	t.Helper()
	switch c := nc.(type) {
	case *tls.Conn:
		return connNoDelay(t, c.NetConn())
	case opaqueConn:
		return connNoDelay(t, c.Conn)
	case refusingNoDelay:
		return connNoDelay(t, c.TCPConn)
	}
	sc, ok := nc.(syscall.Conn)
	require.True(t, ok, "%T has no descriptor", nc)
	rc, err := sc.SyscallConn()
	require.NoError(t, err)
	var on bool
	require.NoError(t, rc.Control(func(fd uintptr) { on = fdNoDelay(t, int(fd)) }))
	return on
}

// serverNoDelay reads TCP_NODELAY from the server's side of the connection whose peer is
// remote: the descriptor netpoll serves, or the std path's socket.
func serverNoDelay(t *testing.T, s *Server, remote string) bool {
	t.Helper()
	for _, c := range s.conns() {
		if c.remote != remote {
			continue
		}
		switch tr := c.tr.(type) {
		case *netpollTransport:
			pc, ok := tr.conn.(netpoll.Conn)
			require.True(t, ok, "netpoll connection %T has no descriptor", tr.conn)
			return fdNoDelay(t, pc.Fd())
		case *stdTransport:
			return connNoDelay(t, tr.raw)
		}
	}
	t.Fatalf("no server connection from %s", remote)
	return false
}

// Every accept path sets TCP_NODELAY on the server's socket: the reactor's own listener
// (a plain port, as the broker and the name server serve), a permissive port's plain
// connections handed to the reactor or kept on the std path, TLS connections of
// permissive and enforcing ports, and a listener whose connections hide their
// descriptor. The connection is first served (so it is registered), then the option is
// read back from the server's side.
func TestServerSocketsHaveNoDelay(t *testing.T) {
	pki := newTestPKI(t)
	cases := []struct {
		name      string
		mode      TLSMode
		viaStd    bool
		opaque    bool
		tls       bool
		transport string
	}{
		{"plain-port", TLSDisabled, false, false, false, "netpoll"},
		{"permissive-plain-handoff", TLSPermissive, false, false, false, "netpoll"},
		{"permissive-plain-std", TLSPermissive, true, false, false, "std-plain"},
		{"permissive-tls", TLSPermissive, false, false, true, "std-tls"},
		{"enforcing-tls", TLSEnforcing, false, false, true, "std-tls"},
		{"permissive-plain-opaque-listener", TLSPermissive, false, true, false, "std-plain"},
		{"permissive-tls-opaque-listener", TLSPermissive, false, true, true, "std-tls"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var logs testkit.Buffer
			var ln net.Listener
			if tc.opaque {
				raw, err := net.Listen("tcp", "127.0.0.1:0")
				require.NoError(t, err)
				ln = opaqueListener{raw}
			}
			s := startServer(t, ln, func(o *ServerOptions) {
				o.Logger = zerolog.New(&logs)
				if tc.mode != TLSDisabled {
					o.TLS = pki.serverTLS(tc.mode)
				}
			}, tc.viaStd, map[int16]Handler{codeWhoAmI: whoAmI})
			var conn net.Conn
			if tc.tls {
				tc, err := tls.Dial("tcp", s.Addr().String(), pki.clientTLS())
				require.NoError(t, err)
				t.Cleanup(func() { _ = tc.Close() })
				conn = tc
			} else {
				conn = dial(t, s)
			}
			resp := rawCall(t, conn, NewRequest(codeWhoAmI, nil))
			require.Equal(t, conn.LocalAddr().String(), resp.Ext("remote"))
			require.Equal(t, tc.transport, transportOf(s, conn.LocalAddr().String()))
			require.True(t, serverNoDelay(t, s, conn.LocalAddr().String()), "TCP_NODELAY on the server's socket")
			require.NotContains(t, logs.String(), "Nagle")
		})
	}
}

// The client's connections, plain and TLS, have TCP_NODELAY too (package net sets it
// when dialing; this pins it).
func TestClientSocketsHaveNoDelay(t *testing.T) {
	pki := newTestPKI(t)
	for _, tc := range []struct {
		name   string
		mode   TLSMode
		client *tls.Config
	}{
		{"plain", TLSDisabled, nil},
		{"tls", TLSEnforcing, pki.clientTLS()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startServer(t, nil, func(o *ServerOptions) {
				if tc.mode != TLSDisabled {
					o.TLS = pki.serverTLS(tc.mode)
				}
			}, false, map[int16]Handler{codeEcho: echo})
			c := testClient(t, func(o *ClientOptions) { o.TLS = tc.client })
			addr := s.Addr().String()
			_, err := c.Invoke(context.Background(), addr, NewRequest(codeEcho, nil))
			require.NoError(t, err)
			cc, err := c.conn(context.Background(), addr)
			require.NoError(t, err)
			_, isTLS := cc.nc.(*tls.Conn)
			require.Equal(t, tc.client != nil, isTLS)
			require.True(t, connNoDelay(t, cc.nc), "TCP_NODELAY on the client's socket")
			require.True(t, serverNoDelay(t, s, cc.local), "and on the server's")
		})
	}
}

// errNoDelayRefused is what refusingNoDelay's SetNoDelay fails with.
var errNoDelayRefused = errors.New("TCP_NODELAY refused for the test")

// refusingNoDelay is a TCP connection whose SetNoDelay fails.
type refusingNoDelay struct{ *net.TCPConn }

func (refusingNoDelay) SetNoDelay(bool) error { return errNoDelayRefused }

// refusingListener accepts refusingNoDelay connections.
type refusingListener struct{ net.Listener }

func (l refusingListener) Accept() (net.Conn, error) {
	nc, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return refusingNoDelay{nc.(*net.TCPConn)}, nil
}

// A socket whose TCP_NODELAY cannot be set is still served, and the failure is logged
// with its cause and the peer, not dropped.
func TestNoDelayFailureIsLogged(t *testing.T) {
	require.ErrorIs(t, setNoDelay(refusingNoDelay{}), errNoDelayRefused)
	require.NoError(t, setNoDelay(opaqueConn{}), "a connection without SetNoDelay is left alone")

	pki := newTestPKI(t)
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var logs testkit.Buffer
	s := startServer(t, refusingListener{raw}, func(o *ServerOptions) {
		o.Logger = zerolog.New(&logs)
		o.TLS = pki.serverTLS(TLSEnforcing)
	}, false, map[int16]Handler{codeWhoAmI: whoAmI})
	conn, err := tls.Dial("tcp", s.Addr().String(), pki.clientTLS())
	require.NoError(t, err)
	defer conn.Close()
	resp := rawCall(t, conn, NewRequest(codeWhoAmI, nil))
	require.Equal(t, "true", resp.Ext("tls"), "the connection is served")
	var line string
	for l := range strings.SplitSeq(logs.String(), "\n") {
		if strings.Contains(l, "Nagle") {
			line = l
		}
	}
	require.NotEmpty(t, line, "a warning names the failure: %s", logs.String())
	require.Contains(t, line, errNoDelayRefused.Error())
	require.Contains(t, line, conn.LocalAddr().String())
	require.Contains(t, line, `"level":"warn"`)
}
