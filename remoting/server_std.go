package remoting

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// The std path: TLS connections (and, where the reactor cannot take them, plain ones).
//
// netpoll has no TLS, so a port with TLS is served by one std accept loop over the
// listener. Each accepted socket gets one goroutine, which (permissive mode) peeks at the
// first byte under the handshake deadline and hands a plain connection to the reactor
// (handoff_unix.go), or runs the TLS handshake under that deadline and then reads the
// connection for its lifetime. The reading feeds the same frameReader, request-bytes
// budget, pools, Channel, output queue and close sequence as the reactor's connections;
// only the transport differs (stdTransport: writes through crypto/tls, coalesced into full
// records). Every such socket is tracked from accept to close, so Shutdown closes those
// still routing or in handshake as well as those being served.

const (
	// tlsReadBuffer is a TLS connection's read buffer. crypto/tls holds the decrypted
	// record already, so copying it out in small steps costs no syscall; a larger buffer
	// measured no faster and costs every idle connection its size.
	tlsReadBuffer = 4 << 10
	// plainReadBuffer is a plain std connection's read buffer, as the client's: a read is
	// a syscall here, and 4 KiB measured 2-3 times slower on 256 KiB frames.
	plainReadBuffer = 64 << 10
	// tlsWriteBuffer coalesces a flush's vectors into TLS records of up to 16 KiB, rather
	// than one record and one syscall per vector.
	tlsWriteBuffer = 16 << 10
	// maxAcceptDelay bounds the back-off after a failed accept (out of descriptors, say).
	maxAcceptDelay = time.Second
)

// acceptLoop accepts the std listener's connections until it is closed, serving each on
// a goroutine of its own.
func (s *Server) acceptLoop() {
	var delay time.Duration
	for {
		nc, err := s.stdLn.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				if !s.closing.Load() {
					s.log.Error().Err(err).Msg("accept loop ended")
					s.setServeErr(fmt.Errorf("remoting: accept: %w", err))
				}
				return
			}
			delay = min(max(2*delay, 5*time.Millisecond), maxAcceptDelay)
			s.log.Warn().Err(err).Dur("retryIn", delay).Msg("accept failed")
			select {
			case <-time.After(delay):
			case <-s.stop:
				return
			}
			continue
		}
		delay = 0
		id, ok := s.track(nc)
		if !ok {
			_ = nc.Close()
			continue
		}
		s.wg.Go(func() {
			defer s.untrack(id)
			s.serveNew(nc)
		})
	}
}

// track records a std-path socket so that Shutdown can close it; it refuses (false) once
// Shutdown has closed them.
func (s *Server) track(nc net.Conn) (uint64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.rawClosed {
		return 0, false
	}
	s.mu.rawSeq++
	s.mu.raw[s.mu.rawSeq] = nc
	return s.mu.rawSeq, true
}

// untrack forgets a std-path socket whose goroutine is done with it.
func (s *Server) untrack(id uint64) {
	s.mu.Lock()
	delete(s.mu.raw, id)
	s.mu.Unlock()
}

// closeRaw closes every std-path socket, whether routing, in handshake or served, and
// refuses new ones.
func (s *Server) closeRaw() {
	s.mu.Lock()
	s.mu.rawClosed = true
	conns := make([]net.Conn, 0, len(s.mu.raw))
	for _, nc := range s.mu.raw {
		conns = append(conns, nc)
	}
	s.mu.Unlock()
	for _, nc := range conns {
		_ = nc.Close()
	}
}

// serveNew routes a new socket of a TLS port and serves it: in permissive mode by its
// first byte (a TLS handshake record, or a plain frame for the reactor), in enforcing
// mode straight to the handshake. Routing and handshake together are bounded by the
// handshake timeout.
func (s *Server) serveNew(raw net.Conn) {
	if err := setNoDelay(raw); err != nil { // a plain socket handed to the reactor keeps it
		s.noDelayFailed(raw.RemoteAddr(), err)
	}
	_ = raw.SetDeadline(time.Now().Add(s.handshake))
	nc := raw
	if s.tlsMode == TLSPermissive {
		first, wrapped, err := peek(raw)
		if err != nil {
			s.routingFailed(raw, err, "connection closed before its first byte")
			_ = raw.Close()
			return
		}
		nc = wrapped
		if first != tlsHandshakeRecord {
			_ = raw.SetDeadline(time.Time{})
			s.servePlain(nc, raw)
			return
		}
	}
	tc := tls.Server(nc, s.tlsConf)
	if err := tc.Handshake(); err != nil {
		s.handshakeFailed(raw, err)
		_ = raw.Close()
		return
	}
	_ = raw.SetDeadline(time.Time{})
	s.serveStd(tc, raw)
}

// peek returns raw's first byte and the connection to read it from: raw itself when the
// byte could be peeked at (it stays in the socket), or a wrapper that returns it first.
func peek(raw net.Conn) (byte, net.Conn, error) {
	b, ok, err := peekFirstByte(raw)
	if ok {
		return b, raw, err
	}
	first := make([]byte, 1)
	if _, err := io.ReadFull(raw, first); err != nil {
		return 0, raw, err
	}
	return first[0], &prefixConn{Conn: raw, first: first}, nil
}

// servePlain serves a plain connection of a permissive port: on the reactor when its
// socket can be handed over, else on the std path.
func (s *Server) servePlain(nc, raw net.Conn) {
	if s.handoff != nil && nc == raw {
		hc, ok, err := detachFD(raw)
		if ok {
			if err != nil {
				_ = raw.Close()
			} else if err = s.handoff.push(hc); err != nil {
				_ = hc.Close()
			}
			if err != nil && !s.closing.Load() {
				s.log.Warn().Err(err).Str("remote", addrString(raw.RemoteAddr())).
					Msg("handing a plain connection to the reactor failed: closing connection")
			}
			return
		}
	}
	s.serveStd(nc, raw)
}

// routingFailed logs why a permissive port's connection was closed before it was routed.
func (s *Server) routingFailed(raw net.Conn, err error, what string) {
	remote := addrString(raw.RemoteAddr())
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		s.log.Info().Str("remote", remote).Dur("handshakeTimeout", s.handshake).
			Msg("connection sent nothing within the handshake timeout: closing connection")
	case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
		s.log.Debug().Err(err).Str("remote", remote).Msg(what)
	default:
		s.log.Warn().Err(err).Str("remote", remote).Msg(what + ": closing connection")
	}
}

// handshakeFailed logs why a TLS handshake failed; a plain connection on an enforcing
// port is named as such (ErrTLSRequired).
func (s *Server) handshakeFailed(raw net.Conn, err error) {
	var rh tls.RecordHeaderError
	switch {
	case errors.As(err, &rh) && s.tlsMode == TLSEnforcing:
		s.log.Warn().Err(fmt.Errorf("%w: %w", ErrTLSRequired, err)).Str("remote", addrString(raw.RemoteAddr())).
			Msg("a plain-text connection arrived, but this port requires TLS (mode enforcing): closing connection")
	case errors.Is(err, os.ErrDeadlineExceeded):
		s.log.Info().Str("remote", addrString(raw.RemoteAddr())).Dur("handshakeTimeout", s.handshake).
			Msg("TLS handshake not completed within the handshake timeout: closing connection")
	default:
		s.routingFailed(raw, err, "TLS handshake failed")
	}
}

// serveStd serves a connection on the calling goroutine until it closes. nc is what
// frames are read from and written to (the TLS connection, or a plain one) and raw its
// socket.
func (s *Server) serveStd(nc, raw net.Conn) {
	t := &stdTransport{nc: nc, raw: raw, writeTimeout: s.opts.WriteTimeout}
	bufSize := plainReadBuffer
	if _, ok := nc.(*tls.Conn); ok {
		t.writers, bufSize = &s.writers, tlsReadBuffer
	}
	c := newServerConn(s, t, raw.LocalAddr(), raw.RemoteAddr())
	s.register(c)
	defer func() {
		_ = t.close()
		s.connClosed(c)
	}()
	br := bufio.NewReaderSize(nc, bufSize)
	src := bufSource{br}
	for {
		if _, err := br.Peek(1); err != nil {
			if t.active() {
				s.log.Debug().Err(err).Str("remote", c.remote).Msg("connection read ended")
			}
			return
		}
		if !c.readBuffered(src) {
			return
		}
	}
}

// readBuffered handles everything br holds as one read burst: the answers written by the
// reader meanwhile leave together (see Server.onRequest). It reports false once the
// connection has been closed.
func (c *serverConn) readBuffered(src bufSource) bool {
	c.out.cork()
	defer c.uncork()
	for src.Len() > 0 {
		if err := c.readStep(src); err != nil {
			return false
		}
	}
	return true
}

// bufSource is a std connection's buffered input as a frameSource.
type bufSource struct{ br *bufio.Reader }

// Len implements frameSource.
func (b bufSource) Len() int { return b.br.Buffered() }

// Next implements frameSource. The bytes stay valid until the next read from br.
func (b bufSource) Next(n int) ([]byte, error) {
	p, err := b.br.Peek(n)
	if err != nil {
		return nil, err
	}
	_, _ = b.br.Discard(n)
	return p, nil
}

// Skip implements frameSource.
func (b bufSource) Skip(n int) error {
	_, err := b.br.Discard(n)
	return err
}

// stdTransport is a connection served by its own goroutine: TLS, or plain where the
// reactor cannot take it.
type stdTransport struct {
	nc, raw      net.Conn // nc carries the frames; raw is its socket
	writeTimeout time.Duration
	writers      *sync.Pool // TLS: *bufio.Writer coalescing records; nil: plain (writev)
	closed       atomic.Bool
}

// writeVec writes the vectors under the write timeout; a failed write closes the socket
// (a TLS connection is unusable after one), which ends the read loop.
func (t *stdTransport) writeVec(vec [][]byte) error {
	_ = t.nc.SetWriteDeadline(time.Now().Add(t.writeTimeout))
	var err error
	if t.writers != nil {
		err = writeRecords(t.nc, vec, t.writers)
	} else {
		bufs := net.Buffers(vec)
		_, err = bufs.WriteTo(t.nc)
	}
	if err != nil {
		_ = t.close()
		return fmt.Errorf("%w: %w", ErrConnClosed, err)
	}
	return nil
}

// close closes the socket, without a TLS close_notify (see closeSocket).
func (t *stdTransport) close() error {
	if !t.closed.CompareAndSwap(false, true) {
		return nil
	}
	return t.raw.Close()
}

func (t *stdTransport) active() bool { return !t.closed.Load() }

// writeRecords writes vec to a TLS connection through a pooled buffer, so that small
// vectors (frame heads, short bodies, a pull's many message slices) leave in full records
// while a large vector is written straight from its own memory once the buffer is flushed.
func writeRecords(w io.Writer, vec [][]byte, pool *sync.Pool) error {
	bw, _ := pool.Get().(*bufio.Writer)
	if bw == nil {
		bw = bufio.NewWriterSize(w, tlsWriteBuffer)
	} else {
		bw.Reset(w)
	}
	defer func() {
		bw.Reset(nil)
		pool.Put(bw)
	}()
	for _, p := range vec {
		if _, err := bw.Write(p); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// prefixConn returns a byte already read from its connection before the rest: a socket
// without a descriptor to peek at, routed by reading its first byte.
type prefixConn struct {
	net.Conn
	first []byte
}

// Read implements net.Conn.
func (p *prefixConn) Read(b []byte) (int, error) {
	if len(p.first) > 0 {
		n := copy(b, p.first)
		p.first = p.first[n:]
		return n, nil
	}
	return p.Conn.Read(b)
}

// closeSocket closes nc's socket; for a TLS connection without a close_notify, which could
// block on a peer that does not read (peers see EOF at a record boundary, which
// crypto/tls and the official clients accept).
func closeSocket(nc net.Conn) error {
	if tc, ok := nc.(*tls.Conn); ok {
		return tc.NetConn().Close()
	}
	return nc.Close()
}

// addrString formats a possibly nil address.
func addrString(a net.Addr) string {
	if a == nil {
		return ""
	}
	return a.String()
}
