//go:build !unix

package remoting

import (
	"errors"
	"net"
)

// Without unix descriptors, plain connections of a permissive port stay on the std path
// (see handoff_unix.go for the handoff to the reactor).

// errHandoffUnsupported means plain connections cannot be handed to the reactor here; the
// std path serves them.
var errHandoffUnsupported = errors.New("remoting: handing connections to netpoll is not supported")

// handoffListener is never created on this platform.
type handoffListener struct{ net.Listener }

// newHandoffListener reports errHandoffUnsupported.
func newHandoffListener(net.Addr) (*handoffListener, error) { return nil, errHandoffUnsupported }

// push is never called: no handoffListener exists.
func (*handoffListener) push(*handoffConn) error { return errHandoffUnsupported }

// handoffConn is never created on this platform.
type handoffConn struct{ net.Conn }

// detachFD reports false: the std path serves nc.
func detachFD(net.Conn) (*handoffConn, bool, error) { return nil, false, nil }

// peekFirstByte reports false: the caller reads the first byte instead.
func peekFirstByte(net.Conn) (byte, bool, error) { return 0, false, nil }
