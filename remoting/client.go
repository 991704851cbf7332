package remoting

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
)

// timeoutScanInterval is how often a client looks for calls past their deadline.
const timeoutScanInterval = 10 * time.Millisecond

// ClientOptions configures a Client.
type ClientOptions struct {
	// DialTimeout bounds connecting to a server.
	DialTimeout time.Duration
	// RequestTimeout applies to Invoke and InvokeAsync calls whose context has no deadline.
	RequestTimeout time.Duration
	// WriteTimeout bounds one socket write.
	WriteTimeout time.Duration
	// ConnsPerAddr is the number of connections kept per server address; requests are spread
	// over them round-robin. The official clients use one.
	ConnsPerAddr int
	// MaxFrameSize bounds the frames the client accepts.
	MaxFrameSize int
	// SerializeType is the header codec of the requests the client sends.
	SerializeType SerializeType
	// HandlerConcurrency bounds the server-initiated requests handled at once.
	HandlerConcurrency int
	// Logger receives connection errors.
	Logger zerolog.Logger
	// TLS, if set, makes the client dial TLS with this configuration, for servers in
	// TLSPermissive or TLSEnforcing mode; nil dials plain TCP. An empty ServerName is the
	// host of the address dialled. The official clients' TLS option is
	// &tls.Config{InsecureSkipVerify: true}. DialTimeout bounds the handshake too.
	TLS *tls.Config
}

// DefaultClientOptions returns options with one JSON connection per address, 3 s dial and
// request timeouts and a 16 MiB frame limit.
func DefaultClientOptions() ClientOptions {
	return ClientOptions{
		DialTimeout:        3 * time.Second,
		RequestTimeout:     3 * time.Second,
		WriteTimeout:       10 * time.Second,
		ConnsPerAddr:       1,
		MaxFrameSize:       DefaultMaxFrameSize,
		SerializeType:      SerializeJSON,
		HandlerConcurrency: 64,
		Logger:             zerolog.Nop(),
	}
}

// Validate reports the first invalid option.
func (o *ClientOptions) Validate() error {
	switch {
	case o.DialTimeout <= 0, o.RequestTimeout <= 0, o.WriteTimeout <= 0:
		return fmt.Errorf("remoting: client timeouts must be positive")
	case o.ConnsPerAddr <= 0:
		return fmt.Errorf("remoting: ConnsPerAddr must be positive, got %d", o.ConnsPerAddr)
	case o.MaxFrameSize < frameFixed:
		return fmt.Errorf("remoting: MaxFrameSize %d is too small", o.MaxFrameSize)
	case !o.SerializeType.valid():
		return fmt.Errorf("remoting: %w: %d", ErrUnknownSerializeType, o.SerializeType)
	case o.HandlerConcurrency <= 0:
		return fmt.Errorf("remoting: HandlerConcurrency must be positive, got %d", o.HandlerConcurrency)
	}
	return nil
}

// Client sends requests to remoting servers over multiplexed connections (standard net
// package, so it runs everywhere) and serves the requests servers send back to it.
type Client struct {
	opts    ClientOptions
	log     zerolog.Logger
	codec   Codec
	opaque  atomic.Int32
	nextID  atomic.Uint64
	sem     chan struct{}
	ctx     context.Context // handed to handlers; cancelled by Close
	cancel  context.CancelFunc
	wg      sync.WaitGroup // reader loops, handler goroutines, the timeout scanner
	calls   sync.Pool      // of *pendingCall with a reusable channel
	writers sync.Pool      // of *bufio.Writer coalescing TLS writes into full records

	mu struct {
		sync.Mutex
		addrs    map[string]*addrConns
		handlers map[int16]Handler
		closed   bool
	}
}

// addrConns holds the connection slots of one address.
type addrConns struct {
	dial  sync.Mutex
	rr    atomic.Uint32
	slots []atomic.Pointer[clientConn]
}

// NewClient validates opts and returns a Client. Connections are opened on first use.
func NewClient(opts ClientOptions) (*Client, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	c := &Client{
		opts: opts,
		log:  opts.Logger.With().Str("component", "remoting-client").Logger(),
		sem:  make(chan struct{}, opts.HandlerConcurrency),
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.mu.addrs = make(map[string]*addrConns)
	c.mu.handlers = make(map[int16]Handler)
	c.wg.Go(c.expireLoop)
	return c, nil
}

// Handle registers h for server-initiated requests with the given code.
func (c *Client) Handle(code int16, h Handler) {
	c.mu.Lock()
	c.mu.handlers[code] = h
	c.mu.Unlock()
}

// Invoke sends req to addr and waits for the response, until ctx ends or, when ctx has no
// deadline, RequestTimeout passes.
func (c *Client) Invoke(ctx context.Context, addr string, req *Command) (*Command, error) {
	cc, err := c.conn(ctx, addr)
	if err != nil {
		return nil, err
	}
	return cc.invoke(ctx, req)
}

// InvokeAsync sends req to addr and calls cb once with the response or an error (ErrTimeout
// when nothing arrives by ctx's deadline or RequestTimeout, detected within
// timeoutScanInterval). cb runs on a connection goroutine or the client's timeout scanner
// and must not block. An error returned here means cb will not be called.
func (c *Client) InvokeAsync(ctx context.Context, addr string, req *Command, cb func(*Command, error)) error {
	cc, err := c.conn(ctx, addr)
	if err != nil {
		return err
	}
	c.prepareRequest(req, 0)
	call := &pendingCall{cb: cb, deadline: c.deadline(ctx)}
	if err := cc.pending.add(req.Opaque, call); err != nil {
		return err
	}
	if err := cc.write(req); err != nil {
		if cc.pending.take(req.Opaque) != nil {
			return err
		}
	}
	return nil
}

// deadline is when a call made with ctx times out: ctx's deadline or RequestTimeout.
func (c *Client) deadline(ctx context.Context) int64 {
	if dl, ok := ctx.Deadline(); ok {
		return dl.UnixNano()
	}
	return time.Now().Add(c.opts.RequestTimeout).UnixNano()
}

// expireLoop fails calls whose deadline passed, for every connection, every
// timeoutScanInterval. One goroutine per client replaces a timer per call.
func (c *Client) expireLoop() {
	t := time.NewTicker(timeoutScanInterval)
	defer t.Stop()
	for {
		select {
		case <-c.ctx.Done():
			return
		case now := <-t.C:
			c.mu.Lock()
			var conns []*clientConn
			for _, ac := range c.mu.addrs {
				for i := range ac.slots {
					if cc := ac.slots[i].Load(); cc != nil {
						conns = append(conns, cc)
					}
				}
			}
			c.mu.Unlock()
			for _, cc := range conns {
				cc.pending.expire(now.UnixNano())
			}
		}
	}
}

// InvokeOneway sends req to addr with the oneway flag and returns once it is written.
func (c *Client) InvokeOneway(ctx context.Context, addr string, req *Command) error {
	cc, err := c.conn(ctx, addr)
	if err != nil {
		return err
	}
	c.prepareRequest(req, FlagOneway)
	return cc.write(req)
}

// Close closes every connection, fails outstanding calls with ErrConnClosed and waits for
// the client's goroutines. It is idempotent.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.mu.closed {
		c.mu.Unlock()
		return nil
	}
	c.mu.closed = true
	addrs := c.mu.addrs
	c.mu.addrs = nil
	c.mu.Unlock()
	c.cancel()
	for _, ac := range addrs {
		for i := range ac.slots {
			if cc := ac.slots[i].Load(); cc != nil {
				_ = cc.Close()
			}
		}
	}
	c.wg.Wait()
	return nil
}

// CloseAddr closes the client's connections to addr (calls in flight on them fail); a
// later call to addr dials again.
func (c *Client) CloseAddr(addr string) error {
	c.mu.Lock()
	ac := c.mu.addrs[addr]
	delete(c.mu.addrs, addr)
	c.mu.Unlock()
	if ac == nil {
		return nil
	}
	var errs []error
	for i := range ac.slots {
		if cc := ac.slots[i].Load(); cc != nil {
			errs = append(errs, cc.Close())
		}
	}
	return errors.Join(errs...)
}

// prepareRequest assigns an opaque and the client's serialize type.
func (c *Client) prepareRequest(req *Command, flag int32) {
	req.Opaque = c.opaque.Add(1)
	req.Flag = req.Flag&^(FlagResponse|FlagOneway) | flag
	req.SerializeType = c.opts.SerializeType
}

// conn returns a live connection to addr, dialing one if its slot is empty or broken.
func (c *Client) conn(ctx context.Context, addr string) (*clientConn, error) {
	c.mu.Lock()
	if c.mu.closed {
		c.mu.Unlock()
		return nil, ErrClosed
	}
	ac := c.mu.addrs[addr]
	if ac == nil {
		ac = &addrConns{slots: make([]atomic.Pointer[clientConn], c.opts.ConnsPerAddr)}
		c.mu.addrs[addr] = ac
	}
	c.mu.Unlock()
	slot := &ac.slots[int(ac.rr.Add(1))%len(ac.slots)]
	if cc := slot.Load(); cc != nil && !cc.isClosed() {
		return cc, nil
	}
	ac.dial.Lock()
	defer ac.dial.Unlock()
	if cc := slot.Load(); cc != nil && !cc.isClosed() {
		return cc, nil
	}
	nc, err := c.dial(ctx, addr)
	if err != nil {
		return nil, fmt.Errorf("%w: dial %s: %w", ErrConnClosed, addr, err)
	}
	cc := newClientConn(c, nc)
	c.mu.Lock()
	if c.mu.closed {
		c.mu.Unlock()
		_ = nc.Close()
		return nil, ErrClosed
	}
	c.wg.Add(1)
	c.mu.Unlock()
	slot.Store(cc)
	go func() {
		defer c.wg.Done()
		cc.readLoop()
	}()
	return cc, nil
}

// dial connects to addr, with a TLS handshake when the client has a TLS configuration.
func (c *Client) dial(ctx context.Context, addr string) (net.Conn, error) {
	d := net.Dialer{Timeout: c.opts.DialTimeout}
	if c.opts.TLS == nil {
		return d.DialContext(ctx, "tcp", addr)
	}
	td := tls.Dialer{NetDialer: &d, Config: c.opts.TLS}
	return td.DialContext(ctx, "tcp", addr)
}

// clientConn is one connection of a Client.
type clientConn struct {
	cl        *Client
	nc        net.Conn
	id        uint64
	remote    string
	local     string
	pending   *pendingTable
	out       outQueue
	closeOnce sync.Once
	done      chan struct{}
}

func newClientConn(cl *Client, nc net.Conn) *clientConn {
	cc := &clientConn{
		cl:      cl,
		nc:      nc,
		id:      cl.nextID.Add(1),
		remote:  nc.RemoteAddr().String(),
		local:   nc.LocalAddr().String(),
		pending: newPendingTable(),
		done:    make(chan struct{}),
	}
	cc.out = outQueue{codec: &cl.codec, flush: cc.flushVec}
	return cc
}

// flushVec writes vectors with one writev, or through TLS in full records.
func (cc *clientConn) flushVec(vec [][]byte) error {
	_ = cc.nc.SetWriteDeadline(time.Now().Add(cc.cl.opts.WriteTimeout))
	var err error
	if cc.cl.opts.TLS != nil {
		err = writeRecords(cc.nc, vec, &cc.cl.writers)
	} else {
		bufs := net.Buffers(vec)
		_, err = bufs.WriteTo(cc.nc)
	}
	if err != nil {
		// Only the socket: Close would wait (in out.kill) for this very flush to end.
		// The read loop then fails and runs Close, which fails the pending calls.
		_ = closeSocket(cc.nc)
		return fmt.Errorf("%w: %w", ErrConnClosed, err)
	}
	return nil
}

// ID implements Channel.
func (cc *clientConn) ID() uint64 { return cc.id }

// RemoteAddr implements Channel.
func (cc *clientConn) RemoteAddr() string { return cc.remote }

// LocalAddr implements Channel.
func (cc *clientConn) LocalAddr() string { return cc.local }

func (cc *clientConn) isClosed() bool {
	select {
	case <-cc.done:
		return true
	default:
		return false
	}
}

// Close implements Channel: it closes the socket and fails outstanding calls.
func (cc *clientConn) Close() error {
	var err error
	cc.closeOnce.Do(func() {
		close(cc.done)
		err = closeSocket(cc.nc)
		cc.out.kill()
		cc.pending.closeAll(ErrConnClosed)
	})
	return err
}

// invoke sends req and waits for its response, until ctx ends or the call's deadline
// (ctx's, or RequestTimeout) is passed to the timeout scanner.
func (cc *clientConn) invoke(ctx context.Context, req *Command) (*Command, error) {
	cl := cc.cl
	cc.cl.prepareRequest(req, 0)
	call, _ := cl.calls.Get().(*pendingCall)
	if call == nil {
		call = &pendingCall{ch: make(chan *Command, 1)}
	}
	call.deadline = cl.deadline(ctx)
	if err := cc.pending.add(req.Opaque, call); err != nil {
		return nil, err
	}
	if err := cc.write(req); err != nil {
		cc.pending.take(req.Opaque)
		return nil, err
	}
	select {
	case resp, ok := <-call.ch:
		if !ok {
			if errors.Is(call.err, ErrTimeout) {
				return nil, fmt.Errorf("%w: no response from %s", ErrTimeout, cc.remote)
			}
			return nil, call.err
		}
		// Delivered: nobody else holds the call, so it can be reused.
		call.deadline, call.err = 0, nil
		call.done.Store(false)
		cl.calls.Put(call)
		return resp, nil
	case <-ctx.Done():
		cc.pending.take(req.Opaque)
		return nil, fmt.Errorf("%w: %w", ErrTimeout, ctx.Err())
	}
}

// Invoke implements Channel.
func (cc *clientConn) Invoke(ctx context.Context, req *Command) (*Command, error) {
	return cc.invoke(ctx, req)
}

// InvokeOneway implements Channel.
func (cc *clientConn) InvokeOneway(_ context.Context, req *Command) error {
	cc.cl.prepareRequest(req, FlagOneway)
	return cc.write(req)
}

// Reply implements Channel.
func (cc *clientConn) Reply(req, resp *Command) error {
	if req.IsOneway() {
		return nil
	}
	prepareReply(req, resp)
	return cc.write(resp)
}

// write queues cmd's frame on the connection (see outQueue).
func (cc *clientConn) write(cmd *Command) error { return cc.out.write(cmd) }

// readLoop decodes frames until the connection fails, routing responses to their callers
// and requests to the client's handlers.
func (cc *clientConn) readLoop() {
	defer cc.Close()
	br := bufio.NewReaderSize(cc.nc, 64<<10)
	var head [LengthFieldSize]byte
	for {
		if _, err := io.ReadFull(br, head[:]); err != nil {
			cc.readFailed(err)
			return
		}
		n, err := ParseLength(head[:], cc.cl.opts.MaxFrameSize)
		if err != nil {
			cc.readFailed(err)
			return
		}
		frame := make([]byte, n)
		if _, err := io.ReadFull(br, frame); err != nil {
			cc.readFailed(err)
			return
		}
		cmd, err := cc.cl.codec.DecodeFrame(frame)
		if err != nil {
			cc.readFailed(err)
			return
		}
		if cmd.IsResponse() {
			cc.pending.complete(cmd)
			continue
		}
		cc.serve(cmd)
	}
}

func (cc *clientConn) readFailed(err error) {
	if !cc.isClosed() {
		cc.cl.log.Debug().Err(err).Str("remote", cc.remote).Msg("connection read ended")
	}
}

// serve runs a server-initiated request on its own goroutine, bounded by the client.
func (cc *clientConn) serve(req *Command) {
	cc.cl.mu.Lock()
	h := cc.cl.mu.handlers[req.Code]
	cc.cl.mu.Unlock()
	if h == nil {
		_ = cc.Reply(req, NewResponse(req, CodeRequestCodeNotSupported,
			fmt.Sprintf("request code %d not supported by client", req.Code)))
		return
	}
	select {
	case cc.cl.sem <- struct{}{}:
	default:
		_ = cc.Reply(req, NewResponse(req, CodeSystemBusy, "client busy"))
		return
	}
	cc.cl.wg.Add(1)
	go func() {
		defer func() {
			<-cc.cl.sem
			cc.cl.wg.Done()
		}()
		resp, err := h.ServeRequest(cc.cl.ctx, cc, req)
		if err != nil {
			resp = errorResponse(req, err)
		}
		if resp != nil {
			_ = cc.Reply(req, resp)
		}
	}()
}
