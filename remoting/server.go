package remoting

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cloudwego/netpoll"
	"github.com/rs/zerolog"

	"github.com/ferrymq/ferry/internal/logging"
)

// DefaultPool is the name of the worker pool that serves codes registered without one.
const DefaultPool = "default"

// PoolOptions sizes one worker pool (one request class).
type PoolOptions struct {
	// Name identifies the pool in Server.Handle.
	Name string
	// Workers is the number of goroutines serving the pool.
	Workers int
	// QueueSize bounds the requests waiting for a worker; when it is full the server answers
	// SYSTEM_BUSY at once.
	QueueSize int
}

// ServerOptions configures a Server.
type ServerOptions struct {
	// MaxFrameSize bounds a frame's length field; larger frames close the connection.
	MaxFrameSize int
	// MaxRequestBytes bounds the bytes of request frames the server holds at once on all
	// connections: frames being received, queued for a worker or being handled. A frame
	// that would exceed it is answered SYSTEM_BUSY as soon as its header has arrived, and
	// its body is discarded unread. Frames of up to 64 KiB are always admitted (and
	// counted). 0 selects the default: DefaultMaxRequestBytes, or the connection limit if
	// that is larger.
	MaxRequestBytes int64
	// MaxConnRequestBytes is the same bound for one connection. It must be at least
	// MaxFrameSize; 0 selects 2×MaxFrameSize (one largest frame being received while
	// another is handled).
	MaxConnRequestBytes int64
	// IdleTimeout closes connections with no traffic and no request in flight for this long.
	IdleTimeout time.Duration
	// WriteTimeout bounds one socket flush to a slow peer.
	WriteTimeout time.Duration
	// Pools are the worker pools; one must be named DefaultPool.
	Pools []PoolOptions
	// Logger receives connection and protocol errors.
	Logger zerolog.Logger
	// OnClose, if set, is called once for every connection when it closes.
	OnClose func(ch Channel)
	// TLS, if set and not TLSDisabled, serves TLS on the port, alone (TLSEnforcing) or
	// beside plain connections (TLSPermissive); see the package documentation. nil serves
	// plain connections only.
	TLS *TLSConfig
	// Observer, if set, is told of every request the server answers (for latency and
	// SYSTEM_BUSY metrics). nil: nothing is measured, not even the arrival time.
	Observer RequestObserver
}

// RequestObserver sees the requests a Server answers. Answered runs on the goroutine
// that answers (a worker, the connection's reader for a refusal or an inline route, or
// whoever completes a deferred reply), once per answered request, so it must be cheap
// and must not block.
type RequestObserver interface {
	// Answered reports a request of code request answered with code response, elapsed
	// after its frame was read (worker-queue wait and handling included, up to the
	// response being queued for the socket). held reports a response the handler
	// deferred and completed later through Channel.Reply (a held long poll). Oneway
	// requests, which get no answer, are not reported.
	Answered(request, response int16, held bool, elapsed time.Duration)
}

// DefaultMaxRequestBytes is the default server-wide bound on buffered request bytes
// (ServerOptions.MaxRequestBytes).
const DefaultMaxRequestBytes = 256 << 20

// DefaultServerOptions returns options with a 16 MiB frame limit, a 120 s idle timeout,
// a default pool of 16 workers, and request-bytes limits derived from the frame limit
// (256 MiB in all, 32 MiB per connection).
func DefaultServerOptions() ServerOptions {
	return ServerOptions{
		MaxFrameSize: DefaultMaxFrameSize,
		IdleTimeout:  120 * time.Second,
		WriteTimeout: 10 * time.Second,
		Pools:        []PoolOptions{{Name: DefaultPool, Workers: 16, QueueSize: 10000}},
		Logger:       zerolog.Nop(),
	}
}

// Validate reports the first invalid option.
func (o *ServerOptions) Validate() error {
	switch {
	case o.MaxFrameSize < frameFixed:
		return fmt.Errorf("remoting: MaxFrameSize %d is too small", o.MaxFrameSize)
	case o.IdleTimeout <= 0:
		return fmt.Errorf("remoting: IdleTimeout must be positive, got %v", o.IdleTimeout)
	case o.WriteTimeout <= 0:
		return fmt.Errorf("remoting: WriteTimeout must be positive, got %v", o.WriteTimeout)
	case o.MaxRequestBytes < 0 || o.MaxConnRequestBytes < 0:
		return fmt.Errorf("remoting: MaxRequestBytes %d and MaxConnRequestBytes %d must not be negative",
			o.MaxRequestBytes, o.MaxConnRequestBytes)
	case o.MaxConnRequestBytes > 0 && o.MaxConnRequestBytes < int64(o.MaxFrameSize):
		return fmt.Errorf("remoting: MaxConnRequestBytes %d is below MaxFrameSize %d, so the largest frames could never be accepted",
			o.MaxConnRequestBytes, o.MaxFrameSize)
	}
	if conn, _ := o.requestLimits(); o.MaxRequestBytes > 0 && o.MaxRequestBytes < conn {
		return fmt.Errorf("remoting: MaxRequestBytes %d is below the per-connection limit %d", o.MaxRequestBytes, conn)
	}
	seen := map[string]bool{}
	for _, p := range o.Pools {
		if p.Name == "" || seen[p.Name] {
			return fmt.Errorf("remoting: pool name %q is empty or repeated", p.Name)
		}
		if p.Workers <= 0 || p.QueueSize <= 0 {
			return fmt.Errorf("remoting: pool %q needs positive Workers and QueueSize", p.Name)
		}
		seen[p.Name] = true
	}
	if !seen[DefaultPool] {
		return fmt.Errorf("remoting: a pool named %q is required", DefaultPool)
	}
	if o.TLS != nil {
		if err := o.TLS.Validate(); err != nil {
			return err
		}
	}
	return nil
}

// requestLimits returns the effective per-connection and server-wide request-bytes limits.
func (o *ServerOptions) requestLimits() (conn, total int64) {
	conn = o.MaxConnRequestBytes
	if conn == 0 {
		conn = 2 * int64(o.MaxFrameSize)
	}
	total = o.MaxRequestBytes
	if total == 0 {
		total = max(DefaultMaxRequestBytes, conn)
	}
	return conn, total
}

// route is a registered handler and the pool that runs it.
type route struct {
	h     Handler
	pool  *workerPool // nil: inline (RouteOptions.Inline)
	reuse bool        // the request's frame is recycled once answered (HandleReusingFrames)
}

// Server serves remoting requests on a netpoll reactor. Requests are decoded on the
// connection's reactor goroutine (a TLS connection's own goroutine) and run on the worker
// pool of their code, so the requests of one connection run concurrently and their
// responses leave as they complete; the codes of inline routes (RouteOptions.Inline) run
// on that reading goroutine itself, in the order they arrive.
type Server struct {
	opts   ServerOptions
	log    zerolog.Logger
	codec  Codec
	pools  map[string]*workerPool
	routes map[int16]route // written only before Start

	ctx      context.Context // handed to handlers; cancelled when Shutdown ends
	cancel   context.CancelFunc
	opaque   atomic.Int32
	inflight inflightCounter
	closing  atomic.Bool
	started  atomic.Bool
	nextID   atomic.Uint64

	reqBytes    atomic.Int64    // request-frame bytes held (see server_read.go)
	epoch       time.Time       // Command.arrived counts from here (monotonic), with an Observer
	connLimit   int64           // effective MaxConnRequestBytes
	totalLimit  int64           // effective MaxRequestBytes
	refused     logging.Sampler // the warning for refused frames
	noDelayWarn logging.Sampler // the warning for sockets without TCP_NODELAY (nodelay.go)

	// TLS (server_std.go); all zero in TLSDisabled mode.
	tlsMode     TLSMode
	tlsConf     *tls.Config   // a clone of ServerOptions.TLS.Config
	handshake   time.Duration // effective TLSConfig.HandshakeTimeout
	stdLn       net.Listener  // the listener the std accept loop serves
	handoff     *handoffListener
	plainViaStd bool                      // serve a TLS port's plain connections on the std path too (tests, benchmarks)
	writers     sync.Pool                 // of *bufio.Writer, coalescing TLS writes into full records
	frames      framePool                 // request frame buffers (framepool.go)
	poison      bool                      // overwrite recycled frames (race builds; tests)
	recycled    func()                    // tests: called after each recycled frame
	wrapTr      func(transport) transport // tests: wraps every connection's transport

	mu struct {
		sync.Mutex
		conns     map[uint64]*serverConn
		raw       map[uint64]net.Conn // std-path sockets: being routed, in handshake or served
		rawSeq    uint64              // the last key given out in raw
		rawClosed bool                // Shutdown closed raw; new sockets are refused
		errServe  error
	}
	evl      netpoll.EventLoop
	addr     net.Addr
	wg       sync.WaitGroup // owned goroutines: serve loop, idle sweeper, std accept loop and connections
	served   chan struct{}  // closed when the serve loop returns
	failed   chan struct{}  // closed when a serve loop ends unexpectedly (setServeErr)
	stop     chan struct{}
	shutdown sync.Once
}

// NewServer validates opts and returns a Server with its worker pools ready.
func NewServer(opts ServerOptions) (*Server, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	s := &Server{
		opts:   opts,
		log:    opts.Logger.With().Str("component", "remoting-server").Logger(),
		pools:  make(map[string]*workerPool, len(opts.Pools)),
		routes: make(map[int16]route),
		stop:   make(chan struct{}),
		served: make(chan struct{}),
		failed: make(chan struct{}),
		poison: poisonFrames,
		epoch:  time.Now(),
	}
	s.connLimit, s.totalLimit = opts.requestLimits()
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.mu.conns = make(map[uint64]*serverConn)
	s.mu.raw = make(map[uint64]net.Conn)
	if s.tlsMode = opts.TLS.mode(); s.tlsMode != TLSDisabled {
		s.tlsConf = opts.TLS.Config.Clone()
		s.handshake = opts.TLS.handshakeTimeout()
	}
	for _, p := range opts.Pools {
		s.pools[p.Name] = newWorkerPool(p, s.run)
	}
	return s, nil
}

// RouteOptions say how the requests of one code are served (Server.HandleRoute).
type RouteOptions struct {
	// Pool names the worker pool that runs the handler ("" = DefaultPool). An Inline
	// route has no pool and must leave it empty.
	Pool string
	// ReuseFrames recycles the request's frame once it is answered; the handler must
	// obey the rules of HandleReusingFrames.
	ReuseFrames bool
	// Inline runs the handler on the goroutine that reads the connection, as soon as its
	// frame is decoded, instead of handing it to a worker: a small request is then
	// answered without a goroutine switch, and the answers to the requests of one read
	// leave in one socket write. The connection reads nothing else while the handler
	// runs, so Inline is only for handlers that never block: no waits on disk (a
	// synchronous flush), on replication or on other peers, no Invoke on the requesting
	// connection (its response could never be read), and no unbounded work. A panic is
	// answered as on a pool (SYSTEM_ERROR); a deferred reply (nil, nil) is allowed.
	Inline bool
}

// Handle registers h for code on the named pool ("" = DefaultPool). It must be called
// before Start.
func (s *Server) Handle(code int16, pool string, h Handler) error {
	return s.HandleRoute(code, h, RouteOptions{Pool: pool})
}

// HandleReusingFrames is Handle for handlers that keep nothing of their request: once the
// response is written, the request's frame — which its ext field values and its body
// point into — is reused for a later request. h must answer by returning its response
// (not through a deferred Reply), its response must not point into the request (a body of
// 4 KiB or more, or a BodyVec, is written by reference, possibly after the frame was
// reused), and neither it nor anything it starts may keep a string or slice of the
// request past its return; what it stores it copies.
func (s *Server) HandleReusingFrames(code int16, pool string, h Handler) error {
	return s.HandleRoute(code, h, RouteOptions{Pool: pool, ReuseFrames: true})
}

// HandleRoute registers h for code as o says. It must be called before Start.
func (s *Server) HandleRoute(code int16, h Handler, o RouteOptions) error {
	if s.started.Load() {
		return errors.New("remoting: Handle after Start")
	}
	rt := route{h: h, reuse: o.ReuseFrames}
	switch {
	case o.Inline && o.Pool != "":
		return fmt.Errorf("remoting: code %d is inline and cannot name pool %q", code, o.Pool)
	case !o.Inline:
		pool := o.Pool
		if pool == "" {
			pool = DefaultPool
		}
		p, ok := s.pools[pool]
		if !ok {
			return fmt.Errorf("remoting: unknown pool %q for code %d", pool, code)
		}
		rt.pool = p
	}
	s.routes[code] = rt
	return nil
}

// Route returns the options code was registered with (Pool names the pool even when
// registration left it empty), and whether it was.
func (s *Server) Route(code int16) (RouteOptions, bool) {
	rt, ok := s.routes[code]
	if !ok {
		return RouteOptions{}, false
	}
	o := RouteOptions{ReuseFrames: rt.reuse, Inline: rt.pool == nil}
	if rt.pool != nil {
		o.Pool = rt.pool.name
	}
	return o, true
}

// Codes returns the request codes registered with Handle, in ascending order.
func (s *Server) Codes() []int16 {
	out := make([]int16, 0, len(s.routes))
	for code := range s.routes {
		out = append(out, code)
	}
	slices.Sort(out)
	return out
}

// Start serves ln in the background until Shutdown. Without TLS the netpoll reactor
// accepts and serves ln's connections; with TLS a std accept loop takes ln (server_std.go).
func (s *Server) Start(ln net.Listener) error {
	if !s.started.CompareAndSwap(false, true) {
		return errors.New("remoting: server already started")
	}
	s.addr = ln.Addr()
	reactorLn := ln // what the netpoll reactor accepts from; nil: no reactor
	if s.tlsMode != TLSDisabled {
		s.stdLn, reactorLn = ln, nil
		if s.tlsMode == TLSPermissive && !s.plainViaStd {
			h, err := newHandoffListener(ln.Addr())
			switch {
			case err == nil:
				s.handoff, reactorLn = h, h
			case !errors.Is(err, errHandoffUnsupported):
				return err
			}
		}
	}
	var ownLn *reactorListener // our wrapper of a plain TCP listener (reactorln_linux.go)
	if reactorLn == ln {
		rl, ok, err := newReactorListener(ln, s.noDelayFailed)
		if err != nil {
			return err
		}
		if ok {
			ownLn, reactorLn = rl, rl
		}
	}
	if reactorLn != nil {
		evl, err := netpoll.NewEventLoop(s.onRequest,
			netpoll.WithOnPrepare(s.onPrepare),
			netpoll.WithReadTimeout(s.opts.IdleTimeout),
			netpoll.WithWriteTimeout(s.opts.WriteTimeout),
		)
		if err != nil {
			if s.handoff != nil {
				_ = s.handoff.Close()
			}
			if ownLn != nil {
				_ = ownLn.closeDup() // the duplicate only: ln stays the caller's
			}
			return fmt.Errorf("remoting: event loop: %w", err)
		}
		s.evl = evl
	}
	for _, p := range s.pools {
		p.start()
	}
	if s.evl != nil {
		s.wg.Go(func() {
			defer close(s.served)
			if err := s.evl.Serve(reactorLn); err != nil && !s.closing.Load() {
				s.log.Error().Err(err).Msg("serve loop ended")
				s.setServeErr(err)
			}
		})
	}
	if s.stdLn != nil {
		s.wg.Go(s.acceptLoop)
	}
	s.wg.Go(s.sweepIdle)
	return nil
}

// setServeErr records why a serve loop ended unexpectedly; Shutdown returns it.
func (s *Server) setServeErr(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.errServe == nil {
		s.mu.errServe = err
		close(s.failed)
	}
}

// Failed is closed when the server stops accepting connections on its own — its serve
// loop ended while no Shutdown was under way (ServeErr says why). The server then serves
// the connections it has but no new ones: its owner should shut it down and report.
func (s *Server) Failed() <-chan struct{} { return s.failed }

// ServeErr is why a serve loop ended unexpectedly, or nil.
func (s *Server) ServeErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.errServe
}

// Addr is the listening address (valid after Start).
func (s *Server) Addr() net.Addr { return s.addr }

// Shutdown stops the server gracefully: new requests are refused with SYSTEM_BUSY, requests
// in flight (including deferred replies) are drained until ctx ends, then every connection
// is closed and every goroutine the server owns is stopped. It is idempotent.
func (s *Server) Shutdown(ctx context.Context) error {
	var err error
	s.shutdown.Do(func() {
		s.closing.Store(true)
		select {
		case <-s.inflight.drained():
		case <-ctx.Done():
			err = fmt.Errorf("remoting: draining requests: %w", ctx.Err())
		}
		s.cancel()
		if s.evl != nil {
			if e := s.stopEventLoop(ctx); e != nil && err == nil {
				err = fmt.Errorf("remoting: closing connections: %w", e)
			}
		}
		if s.stdLn != nil {
			_ = s.stdLn.Close()
			s.closeRaw()
		}
		for _, c := range s.conns() {
			_ = c.Close()
		}
		close(s.stop)
		for _, p := range s.pools {
			p.stopAndWait()
		}
		s.wg.Wait()
		if err == nil {
			s.mu.Lock()
			err = s.mu.errServe
			s.mu.Unlock()
		}
	})
	return err
}

// stopEventLoop shuts the netpoll event loop down. netpoll's Shutdown does nothing when
// its Serve has not registered the listener yet (Shutdown right after Start), so it is
// repeated until the serve goroutine has returned.
func (s *Server) stopEventLoop(ctx context.Context) error {
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for {
		if err := s.evl.Shutdown(ctx); err != nil {
			return err
		}
		select {
		case <-s.served:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// conns returns a snapshot of the open connections.
func (s *Server) conns() []*serverConn {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*serverConn, 0, len(s.mu.conns))
	for _, c := range s.mu.conns {
		out = append(out, c)
	}
	return out
}

// Channels returns the open connections.
func (s *Server) Channels() []Channel {
	conns := s.conns()
	out := make([]Channel, len(conns))
	for i, c := range conns {
		out[i] = c
	}
	return out
}

type connKey struct{}

// onPrepare registers a new netpoll connection.
func (s *Server) onPrepare(conn netpoll.Connection) context.Context {
	c := newServerConn(s, &netpollTransport{conn: conn}, conn.LocalAddr(), conn.RemoteAddr())
	s.register(c)
	_ = conn.AddCloseCallback(func(netpoll.Connection) error {
		s.connClosed(c)
		return nil
	})
	return context.WithValue(context.Background(), connKey{}, c)
}

// register adds a new connection to the open ones.
func (s *Server) register(c *serverConn) {
	s.mu.Lock()
	s.mu.conns[c.id] = c
	s.mu.Unlock()
}

// connClosed is a connection's close sequence: it runs once, after the connection's last
// read (netpoll's close callback, or the end of a std connection's read loop).
func (s *Server) connClosed(c *serverConn) {
	s.mu.Lock()
	delete(s.mu.conns, c.id)
	s.mu.Unlock()
	c.closed()
	if s.opts.OnClose != nil {
		s.opts.OnClose(c)
	}
}

// onRequest reads everything buffered on the connection, dispatching the frames it
// completes; a partial frame stays in the connection's reader (server_read.go). It runs on
// the connection's reactor goroutine, one call at a time per connection. The answers it
// writes itself (inline routes, refusals) leave together when it is done (a corked output
// queue, see outqueue.go).
func (s *Server) onRequest(ctx context.Context, conn netpoll.Connection) error {
	c, _ := ctx.Value(connKey{}).(*serverConn)
	if c == nil {
		return conn.Close()
	}
	c.out.cork()
	defer c.uncork()
	r := conn.Reader()
	for r.Len() > 0 {
		if err := c.readStep(r); err != nil {
			return err
		}
		if err := r.Release(); err != nil {
			return c.abort(err, "releasing read buffer")
		}
	}
	return nil
}

// dispatch routes one decoded frame.
func (s *Server) dispatch(c *serverConn, cmd *Command) {
	if cmd.IsResponse() {
		c.releaseBytes(cmd.held) // the waiter owns the response now
		if !c.pending.complete(cmd) {
			s.log.Debug().Int32("opaque", cmd.Opaque).Str("remote", c.remote).Msg("response without a waiting request dropped")
		}
		return
	}
	c.lastType.Store(uint32(cmd.SerializeType))
	s.stamp(cmd)
	rt, ok := s.routes[cmd.Code]
	if !ok {
		s.log.Debug().Int16("code", cmd.Code).Str("remote", c.remote).Msg("request code not supported")
		c.releaseBytes(cmd.held)
		c.replyNow(cmd, NewResponse(cmd, CodeRequestCodeNotSupported,
			fmt.Sprintf("request code %d not supported", cmd.Code)))
		return
	}
	if s.closing.Load() {
		c.releaseBytes(cmd.held)
		c.replyNow(cmd, NewResponse(cmd, CodeSystemBusy, "server is shutting down"))
		return
	}
	if !rt.reuse {
		cmd.frame = nil // the handler may keep parts of it: the collector frees it
	}
	s.inflight.add()
	c.inflight.Add(1)
	t := task{conn: c, req: cmd, h: rt.h}
	if rt.pool == nil {
		t.inline = true
		s.run(t)
		return
	}
	if !rt.pool.submit(t) {
		s.requestDone(c, cmd)
		c.replyNow(cmd, NewResponse(cmd, CodeSystemBusy, "["+rt.pool.name+"] too many requests queued, try later"))
	}
}

// stamp records a request's arrival when an Observer will want its latency.
func (s *Server) stamp(cmd *Command) {
	if s.opts.Observer != nil {
		cmd.arrived = max(int64(time.Since(s.epoch)), 1) // 0 means "not stamped"
	}
}

// observe tells the Observer, if any, that req was answered with code; held reports a
// deferred answer.
func (s *Server) observe(req *Command, code int16, held bool) {
	o := s.opts.Observer
	if o == nil || req.IsOneway() {
		return
	}
	var elapsed time.Duration
	if req.arrived != 0 {
		elapsed = time.Since(s.epoch) - time.Duration(req.arrived)
	}
	o.Answered(req.Code, code, held, elapsed)
}

// run executes one request on a pool worker, or on the connection's reader for an inline
// route.
func (s *Server) run(t task) {
	resp, err := s.call(t)
	req := t.req
	if req.IsOneway() {
		if req.reply.Swap(replyDone) != replyDone {
			s.requestDone(t.conn, req)
		}
		s.recycle(req)
		return
	}
	if err != nil {
		resp = errorResponse(req, err)
	}
	if resp != nil {
		_ = t.conn.reply(req, resp, t.inline)
		s.recycle(req)
		return
	}
	// Deferred: the handler answers through Reply later, or already did (then Reply has
	// ended the request and the swap fails).
	req.reply.CompareAndSwap(replyPending, replyDeferred)
}

// recycle returns req's frame to the pool, if it has a pooled one whose route reuses
// frames; the handler has returned and its response is queued (its header copied, its
// body not pointing into the request, as HandleReusingFrames requires).
func (s *Server) recycle(req *Command) {
	if box := req.frame; box != nil {
		s.frames.putCommand(req)
		s.frames.put(box, s.poison)
		if s.recycled != nil {
			s.recycled()
		}
	}
}

// call runs the handler, turning a panic into an error.
func (s *Server) call(t task) (resp *Command, err error) {
	defer func() {
		if r := recover(); r != nil {
			s.log.Error().Interface("panic", r).Bytes("stack", debug.Stack()).Int16("code", t.req.Code).Msg("handler panicked")
			resp, err = nil, fmt.Errorf("handler panic: %v", r)
		}
	}()
	return t.h.ServeRequest(s.ctx, t.conn, t.req)
}

// requestDone ends one in-flight request and releases the bytes its frame held.
func (s *Server) requestDone(c *serverConn, req *Command) {
	c.releaseBytes(req.held)
	c.inflight.Add(-1)
	s.inflight.done()
}

// sweepIdle closes connections that had no traffic and nothing in flight for IdleTimeout.
func (s *Server) sweepIdle() {
	period := max(s.opts.IdleTimeout/4, 10*time.Millisecond)
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case now := <-t.C:
			for _, c := range s.conns() {
				if c.idleSince(now) >= s.opts.IdleTimeout {
					s.log.Info().Str("remote", c.remote).Dur("idle", s.opts.IdleTimeout).Msg("closing idle connection")
					_ = c.Close()
				}
			}
		}
	}
}
