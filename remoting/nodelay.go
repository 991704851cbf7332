package remoting

import (
	"fmt"
	"net"
)

// TCP_NODELAY on every server socket.
//
// Responses and server-initiated requests are small frames written as they complete,
// often back to back while the peer has nothing to send. With Nagle's algorithm on, the
// kernel holds such a frame until the previous one is acknowledged, and the peer delays
// that acknowledgement (about 40 ms on Linux): a transactional send, or a burst of
// requests answered by different workers, then waits for the delayed ACK. So every socket
// the server serves has TCP_NODELAY. Package net sets it on the connections it accepts
// and dials, and netpoll on those its own listener accepts, but the reactor's listener
// accepts raw descriptors (reactorln_linux.go) that neither has seen: the server sets it
// there, and again on the std path (TLS ports, whose plain connections the reactor gets
// with the option already on) so that it does not depend on the listener. A socket whose
// option cannot be set is served anyway, with a warning (noDelayFailed).

// setNoDelay turns Nagle's algorithm off on nc's socket when nc is a TCP connection (or
// a wrapper that offers SetNoDelay); it leaves other connections alone.
func setNoDelay(nc net.Conn) error {
	nd, ok := nc.(interface{ SetNoDelay(noDelay bool) error })
	if !ok {
		return nil
	}
	if err := nd.SetNoDelay(true); err != nil {
		return fmt.Errorf("remoting: setting TCP_NODELAY: %w", err)
	}
	return nil
}

// noDelayFailed logs that a new connection could not get TCP_NODELAY; it is served, but
// its small responses may wait for delayed acknowledgements. One line a second at most.
func (s *Server) noDelayFailed(remote net.Addr, err error) {
	if ok, n := s.noDelayWarn.Allow(); ok {
		s.log.Warn().Err(err).Str("remote", addrString(remote)).Int64("suppressed", n).
			Msg("could not turn Nagle's algorithm off: small responses on this connection may wait for delayed acknowledgements")
	}
}
