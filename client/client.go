package client

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/ferrymq/ferry/acl/sign"
	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
)

// Client is a connection to a Ferry (or RocketMQ 4.x) cluster: it looks up topic routes
// on the name servers, keeps one multiplexed connection per broker, and sends heartbeats
// for the producer and consumer groups created on it. Producers (NewProducer) and push
// consumers (NewPushConsumer) share it. It is safe for concurrent use; Close it when done.
//
// Header codec: requests to a broker start as JSON (what every RocketMQ broker reads); a
// Ferry broker says so in its heartbeat response, and from then on the client speaks
// Ferry's msgpack header to it — no setting involved.
//
// ACL: with Options.Credentials every request leaves signed (signingClient, the only way
// out); a refusal is a *BrokerError with code NO_PERMISSION (errors.Is ErrNoPermission).
type Client struct {
	opts     Options
	log      zerolog.Logger
	clientID string
	ids      *message.UniqKeyGenerator
	host     netip.Addr

	json   *signingClient // name servers and brokers not known to be Ferry
	native *signingClient // msgpack headers, for Ferry brokers
	ferry  sync.Map       // broker address → struct{}: it speaks msgpack
	nsNext atomic.Uint32

	routes struct {
		sync.RWMutex
		m map[string]*topicRoute
	}
	groups struct {
		sync.Mutex
		producers map[string]int           // producer group → producers using it
		consumers map[string]*PushConsumer // consumer group → its started consumer
	}
	txn     txnRegistry   // transaction producers by group (transaction.go)
	lite    liteRegistry  // started lite-pull consumers (litepull.go)
	replies replyRegistry // pending requests (request.go)

	tracer *tracer // message trace (trace.go); nil: off

	retire struct { // brokers whose JSON connection is closed once idle (heartbeatLoop)
		sync.Mutex
		m map[string]time.Time
	}

	stop   chan struct{}
	wg     sync.WaitGroup
	closed atomic.Bool
}

// FerryServerKey is the ext field a Ferry broker adds to its heartbeat responses.
const FerryServerKey = protocol.FerryServerKey

// New validates the options and returns a Client. It does not contact any server:
// the first send looks its topic up.
func New(opts ...Option) (*Client, error) {
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	if err := o.Validate(); err != nil {
		return nil, err
	}
	host := localIPv4()
	instance := o.InstanceName
	if instance == "" {
		instance = strconv.Itoa(os.Getpid())
	}
	c := &Client{
		opts:     o,
		log:      o.Logger.With().Str("component", "ferry-client").Logger(),
		clientID: host.String() + "@" + instance,
		ids:      message.NewUniqKeyGenerator(host, os.Getpid()),
		host:     host,
		stop:     make(chan struct{}),
	}
	var creds *sign.Credentials
	if o.Credentials != nil {
		cp := *o.Credentials
		creds = &cp
	}
	ro := remoting.DefaultClientOptions()
	ro.RequestTimeout, ro.Logger = o.RequestTimeout, o.Logger
	ro.TLS = o.TLS
	rc, err := remoting.NewClient(ro)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	c.json = &signingClient{Client: rc, creds: creds}
	ro.SerializeType = remoting.SerializeMsgpack
	if rc, err = remoting.NewClient(ro); err != nil {
		return nil, errors.Join(fmt.Errorf("client: %w", err), c.json.Close())
	}
	c.native = &signingClient{Client: rc, creds: creds}
	c.routes.m = make(map[string]*topicRoute)
	c.retire.m = make(map[string]time.Time)
	c.groups.producers = make(map[string]int)
	c.groups.consumers = make(map[string]*PushConsumer)
	for _, rc := range []*signingClient{c.json, c.native} {
		rc.Handle(int16(protocol.NotifyConsumerIDsChanged), remoting.HandlerFunc(c.onConsumerIDsChanged))
		c.handleTransactionChecks(rc)
		c.handleBrokerCalls(rc)
	}
	if c.tracer, err = newTracer(c, o.Trace); err != nil {
		return nil, errors.Join(err, c.native.Close(), c.json.Close())
	}
	c.wg.Go(c.routeLoop)
	c.wg.Go(c.heartbeatLoop)
	return c, nil
}

// ClientID is the id the client registers with brokers (ip@instance).
func (c *Client) ClientID() string { return c.clientID }

// Close closes the push consumers still running (see PushConsumer.Close), stops the
// background work and closes every connection; calls in flight fail with ErrClosed or a
// connection error. It is idempotent.
func (c *Client) Close() error {
	cerr := errors.Join(c.closeConsumers(), c.closeLitePullConsumers(), c.tracer.close())
	if !c.closed.CompareAndSwap(false, true) {
		return nil
	}
	close(c.stop)
	c.wg.Wait()
	return errors.Join(cerr, c.native.Close(), c.json.Close())
}

// invoke sends req to a broker or name server with the header codec it speaks and turns
// an error response into a *BrokerError.
func (c *Client) invoke(ctx context.Context, addr string, req *remoting.Command) (*remoting.Command, error) {
	if c.closed.Load() {
		return nil, ErrClosed
	}
	resp, err := c.remotingFor(addr).Invoke(ctx, addr, req)
	if err != nil {
		return nil, fmt.Errorf("client: %s: %w", addr, err)
	}
	if resp.Code != int16(protocol.Success) {
		return resp, &BrokerError{Addr: addr, Code: protocol.ResponseCode(resp.Code), Remark: resp.Remark}
	}
	return resp, nil
}

// invokeAsync is invoke with a callback, for pipelined sends.
func (c *Client) invokeAsync(ctx context.Context, addr string, req *remoting.Command, cb func(*remoting.Command, error)) {
	if c.closed.Load() {
		cb(nil, ErrClosed)
		return
	}
	err := c.remotingFor(addr).InvokeAsync(ctx, addr, req, func(resp *remoting.Command, err error) {
		switch {
		case err != nil:
			cb(nil, fmt.Errorf("client: %s: %w", addr, err))
		case resp.Code != int16(protocol.Success):
			cb(resp, &BrokerError{Addr: addr, Code: protocol.ResponseCode(resp.Code), Remark: resp.Remark})
		default:
			cb(resp, nil)
		}
	})
	if err != nil {
		cb(nil, fmt.Errorf("client: %s: %w", addr, err))
	}
}

// invokeOneway sends req to a broker with the header codec it speaks, without waiting.
func (c *Client) invokeOneway(ctx context.Context, addr string, req *remoting.Command) error {
	if c.closed.Load() {
		return ErrClosed
	}
	if err := c.remotingFor(addr).InvokeOneway(ctx, addr, req); err != nil {
		return fmt.Errorf("client: %s: %w", addr, err)
	}
	return nil
}

// invokeNameServer tries the name servers in turn, starting with the next one.
func (c *Client) invokeNameServer(ctx context.Context, req func() *remoting.Command) (*remoting.Command, error) {
	ns := c.opts.NameServers
	start := int(c.nsNext.Add(1))
	var errs []error
	for i := range ns {
		addr := ns[(start+i)%len(ns)]
		resp, err := c.invoke(ctx, addr, req())
		var be *BrokerError
		if err == nil || errors.As(err, &be) {
			return resp, err
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, fmt.Errorf("client: no name server answered: %w", errors.Join(errs...))
}

// heartbeatLoop sends heartbeats every Options.Heartbeat until Close.
func (c *Client) heartbeatLoop() {
	t := time.NewTicker(c.opts.Heartbeat)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case now := <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), c.opts.RequestTimeout)
			c.heartbeatAll(ctx)
			cancel()
			c.retireJSON(now)
		}
	}
}

// retireJSON closes the JSON connections of brokers that switched to msgpack at least a
// request timeout ago, when nothing sent on them can still be waiting.
func (c *Client) retireJSON(now time.Time) {
	c.retire.Lock()
	var due []string
	for addr, since := range c.retire.m {
		if now.Sub(since) >= c.opts.RequestTimeout {
			due = append(due, addr)
			delete(c.retire.m, addr)
		}
	}
	c.retire.Unlock()
	for _, addr := range due {
		if err := c.json.CloseAddr(addr); err != nil {
			c.log.Debug().Err(err).Str("broker", addr).Msg("closing the JSON connection")
		}
	}
}

// brokerAddrs lists the master addresses of every cached route, of the consumers'
// topics and of the routes the transaction producers have used.
func (c *Client) brokerAddrs() []string {
	c.routes.RLock()
	var out []string
	for _, r := range c.routes.m {
		for _, b := range r.brokers {
			if !slices.Contains(out, b) {
				out = append(out, b)
			}
		}
	}
	c.routes.RUnlock()
	c.groups.Lock()
	out = c.consumerBrokersLocked(out)
	c.groups.Unlock()
	out = c.liteBrokers(out)
	return c.transactionBrokers(out)
}

// heartbeatAll sends a heartbeat to every known broker.
func (c *Client) heartbeatAll(ctx context.Context) {
	for _, addr := range c.brokerAddrs() {
		if err := c.heartbeat(ctx, addr); err != nil {
			c.log.Warn().Err(err).Str("broker", addr).Msg("heartbeat failed")
		}
	}
}

// heartbeat tells one broker about the client's producer and consumer groups, and learns
// whether it is Ferry.
func (c *Client) heartbeat(ctx context.Context, addr string) error {
	data := protocol.HeartbeatData{ClientID: c.clientID}
	c.groups.Lock()
	for g := range c.groups.producers {
		data.ProducerDataSet = append(data.ProducerDataSet, protocol.ProducerData{GroupName: g})
	}
	for _, pc := range c.groups.consumers {
		data.ConsumerDataSet = append(data.ConsumerDataSet, pc.consumerData())
	}
	c.groups.Unlock()
	data.ConsumerDataSet = c.liteConsumerData(data.ConsumerDataSet)
	body, err := protocol.EncodeHeartbeatData(&data)
	if err != nil {
		return fmt.Errorf("client: encode heartbeat: %w", err)
	}
	req := remoting.NewRequest(int16(protocol.HeartBeat), nil)
	req.Body = body
	resp, err := c.invoke(ctx, addr, req)
	if err != nil {
		return err
	}
	if resp.Ext(FerryServerKey) != "" {
		if _, known := c.ferry.LoadOrStore(addr, struct{}{}); !known {
			c.log.Debug().Str("broker", addr).Msg("Ferry broker: switching to msgpack headers")
			// Register on the msgpack connection and drop the JSON one, so the broker
			// lists one connection of this client, the one it can call back on.
			if err := c.heartbeat(ctx, addr); err != nil {
				return err
			}
			// Requests may still be in flight on it: the heartbeat loop closes it
			// once they are over.
			c.retire.Lock()
			c.retire.m[addr] = time.Now()
			c.retire.Unlock()
		}
	}
	return nil
}

// localIPv4 is the first non-loopback IPv4 address of the machine, or 127.0.0.1.
func localIPv4() netip.Addr {
	addrs, err := net.InterfaceAddrs()
	if err == nil {
		for _, a := range addrs {
			if p, err := netip.ParsePrefix(a.String()); err == nil && p.Addr().Is4() && !p.Addr().IsLoopback() {
				return p.Addr()
			}
		}
	}
	return netip.AddrFrom4([4]byte{127, 0, 0, 1})
}

// jitter returns d ± 10 %, so many clients do not refresh in step.
func jitter(d time.Duration) time.Duration {
	return d - d/10 + time.Duration(rand.Int64N(int64(d/5)+1))
}

// remotingFor is the remoting client whose header codec addr speaks.
func (c *Client) remotingFor(addr string) *signingClient {
	if _, ok := c.ferry.Load(addr); ok {
		return c.native
	}
	return c.json
}

// signingClient is a remoting.Client that signs every request it sends with the
// client's ACL 1.0 credentials, if any: its Invoke, InvokeAsync and InvokeOneway shadow
// the embedded client's, and the handlers registered through its Handle get channels
// that sign the requests they send back (END_TRANSACTION answering a check). Every
// request of this package leaves through one, so none goes unsigned. Requests the
// server sends to the client are not expected to be signed (brokers do not sign them).
type signingClient struct {
	*remoting.Client
	creds *sign.Credentials // nil: requests go unsigned
}

// Invoke signs req and sends it (remoting.Client.Invoke).
func (s *signingClient) Invoke(ctx context.Context, addr string, req *remoting.Command) (*remoting.Command, error) {
	signRequest(s.creds, req)
	return s.Client.Invoke(ctx, addr, req)
}

// InvokeAsync signs req and sends it (remoting.Client.InvokeAsync).
func (s *signingClient) InvokeAsync(ctx context.Context, addr string, req *remoting.Command, cb func(*remoting.Command, error)) error {
	signRequest(s.creds, req)
	return s.Client.InvokeAsync(ctx, addr, req, cb)
}

// InvokeOneway signs req and sends it (remoting.Client.InvokeOneway).
func (s *signingClient) InvokeOneway(ctx context.Context, addr string, req *remoting.Command) error {
	signRequest(s.creds, req)
	return s.Client.InvokeOneway(ctx, addr, req)
}

// Handle registers h for server-initiated requests; h's channel signs what it sends.
func (s *signingClient) Handle(code int16, h remoting.Handler) {
	if s.creds == nil {
		s.Client.Handle(code, h)
		return
	}
	s.Client.Handle(code, remoting.HandlerFunc(func(ctx context.Context, ch remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
		return h.ServeRequest(ctx, signingChannel{Channel: ch, creds: s.creds}, req)
	}))
}

// signingChannel is a connection that signs the requests sent on it.
type signingChannel struct {
	remoting.Channel
	creds *sign.Credentials
}

// Invoke signs req and sends it (remoting.Channel.Invoke).
func (s signingChannel) Invoke(ctx context.Context, req *remoting.Command) (*remoting.Command, error) {
	signRequest(s.creds, req)
	return s.Channel.Invoke(ctx, req)
}

// InvokeOneway signs req and sends it (remoting.Channel.InvokeOneway).
func (s signingChannel) InvokeOneway(ctx context.Context, req *remoting.Command) error {
	signRequest(s.creds, req)
	return s.Channel.InvokeOneway(ctx, req)
}

// signRequest sets req's AccessKey, SecurityToken (when set) and Signature ext fields, the
// signature covering the other ext fields as they are and the body as it is sent. It
// runs as the request leaves, after its header is final; remoting adds nothing to the
// ext fields after it, and the signed values are the same whatever the header codec.
// Signing again (a request sent twice) replaces the fields. Nil creds: nothing.
func signRequest(creds *sign.Credentials, req *remoting.Command) {
	if creds == nil {
		return
	}
	body := req.Body
	if len(req.BodyVec) > 0 {
		body = slices.Concat(append([][]byte{req.Body}, req.BodyVec...)...)
	}
	req.ExtFields = creds.SignFields(req.ExtFields, body)
}
