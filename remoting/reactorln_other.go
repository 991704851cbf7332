//go:build !linux

package remoting

import "net"

// reactorListener is not available here: netpoll's own conversion serves listeners.
type reactorListener struct{ net.Listener }

// newReactorListener reports false: netpoll.ConvertListener serves ln (and its own
// listener sets TCP_NODELAY on what it accepts).
func newReactorListener(net.Listener, func(net.Addr, error)) (*reactorListener, bool, error) {
	return nil, false, nil
}

// Fd is never called (no reactorListener is made on this platform).
func (l *reactorListener) Fd() int { return -1 }

// closeDup does nothing (no reactorListener is made on this platform).
func (l *reactorListener) closeDup() error { return nil }
