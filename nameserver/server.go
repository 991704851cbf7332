package nameserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/ferrymq/ferry/acl"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
)

// Worker pools of the name server's remoting server. Route lookups get their
// own pool so that a burst of registrations never delays clients.
const (
	poolRoute = "route"
	poolAdmin = remoting.DefaultPool
)

// Options configures a Server. The command fills it from the "namesrv"
// configuration section (conf.NameServerConfig), field for field.
type Options struct {
	// Listen is the address ListenAndStart listens on. Default "127.0.0.1:9876".
	Listen string
	// BrokerExpiry is how long a broker stays registered without
	// re-registering, unless it sends heartbeatTimeoutMillis. Default 120 s.
	BrokerExpiry time.Duration
	// ScanInterval is how often expired brokers are swept; it must be shorter
	// than BrokerExpiry. Default 5 s.
	ScanInterval time.Duration
	// MaxFrameSize bounds the frames accepted. Default 16 MiB.
	MaxFrameSize int
	// IdleTimeout closes connections that carried nothing for this long.
	// Closing a broker's connection takes it out of the routes (its binding
	// stays until its registration expires; see RouteTable). Default 120 s.
	IdleTimeout time.Duration
	// Workers is the number of request workers of each pool (routes;
	// registration and admin). Default 8.
	Workers int
	// RetainUnlistedTopics: see RouteTableOptions. Default false.
	RetainUnlistedTopics bool
	// Logger receives the server's logs; broker registration changes are
	// logged at info. Default: discard.
	Logger zerolog.Logger
	// Clock returns the current time (injected by tests). Default time.Now.
	Clock func() time.Time
	// ACL, when set, checks every request before it is served (aclEnable): a refused one
	// is answered NO_PERMISSION. Registrations then need admin credentials (package acl)
	// and, being authenticated, may replace a registration another connection holds.
	// nil: no access control, unless ACLFile is set.
	ACL acl.Checker
	// TLS, when set and not disabled, serves TLS on the port (permissive or enforcing).
	// nil: plain only.
	TLS *remoting.TLSConfig
	// ACLFile, when set and ACL is nil, is an accounts file the server loads (New fails
	// on a bad file) and re-reads when it changes; Shutdown stops the watcher.
	ACLFile string
	// KVConfigPath is the file (kvConfig.json) that keeps the KV configuration
	// (PUT_KV_CONFIG: order topic configs, drained brokers) across restarts: New loads
	// it (a missing file is an empty table, one that does not parse an error wrapping
	// ErrKVConfig) and every change rewrites it atomically, creating its directory.
	// Empty: the KV configuration lives in memory only. The command sets
	// namesrv.kvConfigPath, by default <broker.dataDir>/namesrv/kvConfig.json.
	KVConfigPath string
}

// DefaultOptions returns RocketMQ's defaults.
func DefaultOptions() Options {
	return Options{
		Listen:       "127.0.0.1:9876",
		BrokerExpiry: 120 * time.Second,
		ScanInterval: 5 * time.Second,
		MaxFrameSize: remoting.DefaultMaxFrameSize,
		IdleTimeout:  120 * time.Second,
		Workers:      8,
		Logger:       zerolog.Nop(),
		Clock:        time.Now,
	}
}

// Validate reports the first invalid option.
func (o *Options) Validate() error {
	switch {
	case o.BrokerExpiry <= 0:
		return fmt.Errorf("nameserver: BrokerExpiry must be positive, got %v", o.BrokerExpiry)
	case o.ScanInterval <= 0:
		return fmt.Errorf("nameserver: ScanInterval must be positive, got %v", o.ScanInterval)
	case o.ScanInterval >= o.BrokerExpiry:
		return fmt.Errorf("nameserver: ScanInterval (%v) must be shorter than BrokerExpiry (%v)",
			o.ScanInterval, o.BrokerExpiry)
	case o.MaxFrameSize <= 0:
		return fmt.Errorf("nameserver: MaxFrameSize must be positive, got %d", o.MaxFrameSize)
	case o.IdleTimeout <= 0:
		return fmt.Errorf("nameserver: IdleTimeout must be positive, got %v", o.IdleTimeout)
	case o.Workers <= 0:
		return fmt.Errorf("nameserver: Workers must be positive, got %d", o.Workers)
	case o.Clock == nil:
		return errors.New("nameserver: Clock is required")
	}
	return nil
}

// Server is a name server: a RouteTable served over the remoting protocol,
// with a sweeper that expires silent brokers and removal of a broker when
// its connection closes.
type Server struct {
	opts  Options
	log   zerolog.Logger
	table *RouteTable
	rs    *remoting.Server

	ctx     context.Context // cancelled by Shutdown; stops owned goroutines
	cancel  context.CancelFunc
	wg      sync.WaitGroup // owned goroutines (see goFunc)
	started atomic.Bool
	serving atomic.Bool // Start served the port (Readiness)

	shutdown    sync.Once
	shutdownErr error

	aclWatcher *acl.Watcher // the accounts file New loaded (Options.ACLFile); nil otherwise

	kv      *kvStore   // the KV configuration (kvconfig.go)
	drainMu sync.Mutex // serializes drains so the KV record and the table agree (drain.go)
}

// closeACL stops the accounts-file watcher the server started, if any.
func (s *Server) closeACL() error {
	if s.aclWatcher == nil {
		return nil
	}
	return s.aclWatcher.Close()
}

// New validates opts and returns a Server ready to Start.
func New(opts Options) (*Server, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	s := &Server{
		opts: opts,
		log:  opts.Logger.With().Str("component", "nameserver").Logger(),
	}
	table, err := NewRouteTable(RouteTableOptions{
		BrokerExpiry:         opts.BrokerExpiry,
		RetainUnlistedTopics: opts.RetainUnlistedTopics,
		ChannelOpen:          s.channelOpen,
	})
	if err != nil {
		return nil, err
	}
	s.table = table
	if s.kv, err = openKVStore(opts.KVConfigPath); err != nil {
		return nil, err
	}
	for name := range s.kv.list(NamespaceDrainedBrokers) {
		table.Drain(name)
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())

	ro := remoting.DefaultServerOptions()
	ro.TLS = opts.TLS
	ro.MaxFrameSize = opts.MaxFrameSize
	ro.IdleTimeout = opts.IdleTimeout
	ro.Logger = opts.Logger
	ro.Pools = []remoting.PoolOptions{
		{Name: poolAdmin, Workers: opts.Workers, QueueSize: 10000},
		{Name: poolRoute, Workers: opts.Workers, QueueSize: 10000},
	}
	ro.OnClose = s.onClose
	if s.rs, err = remoting.NewServer(ro); err != nil {
		return nil, fmt.Errorf("nameserver: %w", err)
	}
	handlers := []struct {
		code protocol.RequestCode
		pool string
		h    remoting.HandlerFunc
	}{
		{protocol.RegisterBroker, poolAdmin, s.handleRegisterBroker},
		{protocol.UnregisterBroker, poolAdmin, s.handleUnregisterBroker},
		{protocol.GetRouteInfoByTopic, poolRoute, s.handleGetRouteInfo},
		{protocol.GetBrokerClusterInfo, poolAdmin, s.handleGetClusterInfo},
		{protocol.GetAllTopicListFromNameServer, poolAdmin, s.handleGetAllTopicList},
		{protocol.DeleteTopicInNameSrv, poolAdmin, s.handleDeleteTopic},
		{protocol.PutKVConfig, poolAdmin, s.handlePutKVConfig},
		{protocol.GetKVConfig, poolAdmin, s.handleGetKVConfig},
		{protocol.DeleteKVConfig, poolAdmin, s.handleDeleteKVConfig},
		{protocol.GetKVListByNamespace, poolAdmin, s.handleGetKVList},
		{protocol.WipeWritePermOfBroker, poolAdmin, s.handleWipeWritePerm},
		{protocol.AddWritePermOfBroker, poolAdmin, s.handleAddWritePerm},
	}
	if opts.ACL == nil && opts.ACLFile != "" {
		wo := acl.DefaultWatcherOptions()
		wo.Path, wo.Logger = opts.ACLFile, s.log
		w, err := acl.NewWatcher(wo)
		if err != nil {
			return nil, fmt.Errorf("nameserver: %w", err)
		}
		s.aclWatcher, s.opts.ACL = w, w
	}
	var gate *acl.Gate
	if s.opts.ACL != nil {
		gate = acl.NewGate(s.opts.ACL, s.log)
	}
	for _, h := range handlers {
		if gate != nil {
			h.h = gate.Wrap(h.code, h.h)
		}
		if err := s.rs.Handle(int16(h.code), h.pool, h.h); err != nil {
			return nil, errors.Join(fmt.Errorf("nameserver: %w", err), s.closeACL())
		}
	}
	return s, nil
}

// RequestCodes returns the request codes the name server serves, in ascending order
// (every one has a row in acl.Rules, which a test enforces).
func (s *Server) RequestCodes() []int16 { return s.rs.Codes() }

// Table returns the server's route table (for in-process inspection).
func (s *Server) Table() *RouteTable { return s.table }

// Start serves ln in the background and starts the expiry sweeper. The
// server owns ln from then on.
func (s *Server) Start(ln net.Listener) error {
	if !s.started.CompareAndSwap(false, true) {
		return errors.New("nameserver: already started")
	}
	if s.ctx.Err() != nil {
		return fmt.Errorf("nameserver: start after shutdown: %w", remoting.ErrClosed)
	}
	if err := s.rs.Start(ln); err != nil {
		return fmt.Errorf("nameserver: %w", err)
	}
	s.serving.Store(true)
	s.goFunc(s.sweep)
	s.log.Info().Str("addr", ln.Addr().String()).Dur("brokerExpiry", s.opts.BrokerExpiry).
		Dur("scanInterval", s.opts.ScanInterval).Msg("name server started")
	return nil
}

// Failed is closed when the name server stops accepting connections on its own (see
// remoting.Server.Failed). Its owner should shut it down.
func (s *Server) Failed() <-chan struct{} { return s.rs.Failed() }

// ServeErr is why the name server stopped accepting connections, or nil.
func (s *Server) ServeErr() error { return s.rs.ServeErr() }

// ListenAndStart listens on Options.Listen and calls Start.
func (s *Server) ListenAndStart() error {
	ln, err := net.Listen("tcp", s.opts.Listen)
	if err != nil {
		return fmt.Errorf("nameserver: listen: %w", err)
	}
	if err := s.Start(ln); err != nil {
		_ = ln.Close()
		return err
	}
	return nil
}

// Addr returns the listening address as "ip:port", or "" before Start.
func (s *Server) Addr() string {
	if !s.started.Load() {
		return ""
	}
	if a := s.rs.Addr(); a != nil {
		return a.String()
	}
	return ""
}

// Shutdown stops accepting requests, drains the ones in flight until ctx
// ends, closes every connection and stops the sweeper. It is idempotent:
// later calls return the first call's result.
func (s *Server) Shutdown(ctx context.Context) error {
	s.shutdown.Do(func() {
		s.cancel()
		if s.started.Load() {
			if err := s.rs.Shutdown(ctx); err != nil {
				s.shutdownErr = fmt.Errorf("nameserver: %w", err)
			}
		}
		s.wg.Wait()
		if err := s.closeACL(); err != nil && s.shutdownErr == nil {
			s.shutdownErr = err
		}
		s.log.Info().Msg("name server stopped")
	})
	return s.shutdownErr
}

// goFunc runs f on a goroutine owned by the server: it gets the server's
// context, which Shutdown cancels, and Shutdown waits for it to return.
func (s *Server) goFunc(f func(ctx context.Context)) {
	s.wg.Go(func() { f(s.ctx) })
}

// sweep expires silent brokers every ScanInterval until ctx ends.
func (s *Server) sweep(ctx context.Context) {
	tick := time.NewTicker(s.opts.ScanInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			for _, addr := range s.table.ExpireBrokers(s.opts.Clock()) {
				s.log.Warn().Str("brokerAddr", addr).Msg("broker expired: no registration within its timeout")
			}
		}
	}
}

// channelOpen reports whether the connection with the given id is still
// open. A connection leaves the server's set before its close callback runs.
func (s *Server) channelOpen(id uint64) bool {
	for _, ch := range s.rs.Channels() {
		if ch.ID() == id {
			return true
		}
	}
	return false
}

// onClose withdraws a connection that closed from the brokers it registered;
// those it alone kept registered leave the routes (their bindings stay
// reserved until they expire).
func (s *Server) onClose(ch remoting.Channel) {
	for _, addr := range s.table.RemoveByChannel(ch.ID()) {
		s.log.Info().Str("brokerAddr", addr).Str("remote", ch.RemoteAddr()).
			Msg("broker removed from the routes: its connection closed; its name and address stay reserved until its registration expires")
	}
}
