package observe

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/ferrymq/ferry/remoting"
)

// Options configure a Server.
type Options struct {
	// Probes answer /healthz and /readyz. Required.
	Probes *Probes
	// TLS is the process's TLS setting, which the listener follows: TLSEnforcing serves
	// HTTPS only, TLSPermissive HTTPS and plain HTTP on the one port (told apart by the
	// first byte, as the remoting port does), nil or TLSDisabled plain HTTP. The
	// certificate and the client-certificate rule are the process's.
	TLS *remoting.TLSConfig
	// ReadHeaderTimeout bounds reading a request's header (and, with TLS, the
	// handshake). Default 10s.
	ReadHeaderTimeout time.Duration
	// Logger receives the server's errors.
	Logger zerolog.Logger
}

// DefaultOptions returns Options with the defaults; Probes must still be set.
func DefaultOptions() Options {
	return Options{ReadHeaderTimeout: 10 * time.Second, Logger: zerolog.Nop()}
}

// ErrInvalidOptions is wrapped by the errors of Options.Validate.
var ErrInvalidOptions = errors.New("observe: invalid options")

// Validate reports the first invalid option, wrapping ErrInvalidOptions.
func (o Options) Validate() error {
	switch {
	case o.Probes == nil:
		return fmt.Errorf("%w: Probes is required", ErrInvalidOptions)
	case o.ReadHeaderTimeout <= 0:
		return fmt.Errorf("%w: ReadHeaderTimeout must be positive, got %v", ErrInvalidOptions, o.ReadHeaderTimeout)
	case o.TLS != nil && o.TLS.Mode != remoting.TLSDisabled && o.TLS.Config == nil:
		return fmt.Errorf("%w: TLS.Config is required in TLS mode %s", ErrInvalidOptions, o.TLS.Mode)
	}
	return nil
}

// Server serves the operators' endpoints on one listener from one owned goroutine.
type Server struct {
	opts Options
	mux  *http.ServeMux
	srv  *http.Server
	ln   net.Listener
	done chan struct{}
}

// New returns a server with /healthz and /readyz on its mux; Handle adds more (/metrics)
// before Start.
func New(o Options) (*Server, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	s := &Server{opts: o, mux: http.NewServeMux(), done: make(chan struct{})}
	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { s.answer(w, o.Probes.Health()) })
	s.mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) { s.answer(w, o.Probes.Readiness()) })
	// The seam of the next step: /metrics is one more s.Handle on this mux.
	return s, nil
}

// Handle adds handler at pattern (http.ServeMux syntax); call it before Start.
func (s *Server) Handle(pattern string, handler http.Handler) { s.mux.Handle(pattern, handler) }

// answer writes r as JSON: 200 when it passes, 503 otherwise.
func (s *Server) answer(w http.ResponseWriter, r Report) {
	body, err := json.Marshal(r)
	if err != nil { // a map of strings always encodes
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	code := http.StatusOK
	if !r.OK {
		code = http.StatusServiceUnavailable
	}
	w.WriteHeader(code)
	_, _ = w.Write(append(body, '\n'))
}

// Start serves ln (which the server owns from then on) until Shutdown.
func (s *Server) Start(ln net.Listener) {
	s.srv = &http.Server{Handler: s.mux, ReadHeaderTimeout: s.opts.ReadHeaderTimeout,
		// net/http's own messages (a failed TLS handshake) at debug level, not raw stderr.
		ErrorLog: log.New(debugWriter{s.opts.Logger}, "", 0)}
	s.ln = ln
	if t := s.opts.TLS; t != nil && t.Mode != remoting.TLSDisabled {
		conf := t.Config.Clone()
		if t.Mode == remoting.TLSEnforcing {
			ln = tls.NewListener(ln, conf)
		} else {
			ln = &sniffListener{Listener: ln, conf: conf}
		}
	}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.opts.Logger.Error().Err(err).Msg("HTTP listener stopped")
		}
	}()
}

// Addr is the listening address; nil before Start.
func (s *Server) Addr() net.Addr {
	if s.ln == nil {
		return nil
	}
	return s.ln.Addr()
}

// Shutdown stops the server: it waits for running requests until ctx ends, then closes
// what is left, and returns once the serving goroutine has exited. A server never
// started, or nil, returns at once.
func (s *Server) Shutdown(ctx context.Context) error {
	if s == nil || s.srv == nil {
		return nil
	}
	err := s.srv.Shutdown(ctx)
	if err != nil {
		err = errors.Join(err, s.srv.Close())
	}
	<-s.done
	return err
}

// debugWriter writes net/http's log lines to a logger at debug level.
type debugWriter struct{ log zerolog.Logger }

// Write logs one line.
func (d debugWriter) Write(p []byte) (int, error) {
	d.log.Debug().Msg(strings.TrimSpace(string(p)))
	return len(p), nil
}

// tlsRecordHandshake is the first byte of a TLS client hello (a handshake record).
const tlsRecordHandshake = 0x16

// sniffListener serves TLS and plain connections on one port (TLSPermissive): a
// connection whose first byte opens a TLS handshake record is served as TLS. The byte is
// read by the connection's first Read, in the server's goroutine for that connection,
// so Accept never waits on a client.
type sniffListener struct {
	net.Listener
	conf *tls.Config
}

// Accept wraps the next connection in a sniffConn.
func (l *sniffListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &sniffConn{Conn: c, conf: l.conf}, nil
}

// sniffConn decides on its first Read whether it is TLS; Read and Write then go through
// inner (a tls.Conn, or the raw connection with the peeked byte put back).
type sniffConn struct {
	net.Conn
	conf *tls.Config
	mu   sync.Mutex // guards inner: Shutdown may close a connection another goroutine reads
	// inner is nil until the first Read.
	inner net.Conn
}

// decided is the protocol's connection, nil before the first Read.
func (c *sniffConn) decided() net.Conn {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.inner
}

// peekedConn is a connection whose reads start with what br buffered.
type peekedConn struct {
	net.Conn
	br *bufio.Reader
}

// Read reads through the buffer.
func (p *peekedConn) Read(b []byte) (int, error) { return p.br.Read(b) }

// Read decides the protocol on the first call, then reads through it.
func (c *sniffConn) Read(b []byte) (int, error) {
	inner := c.decided()
	if inner == nil {
		br := bufio.NewReaderSize(c.Conn, 1024)
		first, err := br.Peek(1)
		if err != nil {
			return 0, err
		}
		pc := &peekedConn{Conn: c.Conn, br: br}
		if first[0] == tlsRecordHandshake {
			inner = tls.Server(pc, c.conf)
		} else {
			inner = pc
		}
		c.mu.Lock()
		c.inner = inner
		c.mu.Unlock()
	}
	return inner.Read(b)
}

// Write writes through the protocol decided by the first Read (the server reads first).
func (c *sniffConn) Write(b []byte) (int, error) {
	if inner := c.decided(); inner != nil {
		return inner.Write(b)
	}
	return c.Conn.Write(b)
}

// Close closes through the protocol (a TLS close alert) when one was decided.
func (c *sniffConn) Close() error {
	if inner := c.decided(); inner != nil {
		return inner.Close()
	}
	return c.Conn.Close()
}
