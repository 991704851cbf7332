// Package testutil starts Ferry's servers in-process for tests: a name server and a broker
// on 127.0.0.1:0 with a temporary data directory, restartable on the same directory and
// port, optionally a slave of that broker (StartSlave). What tests of every layer share
// (polling, child processes, built programs) is in internal/testkit, which this package
// builds on.
package testutil

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/broker"
	"github.com/ferrymq/ferry/conf"
	"github.com/ferrymq/ferry/internal/mmap"
	"github.com/ferrymq/ferry/internal/testkit"
	"github.com/ferrymq/ferry/launch"
	"github.com/ferrymq/ferry/nameserver"
	"github.com/ferrymq/ferry/store"
)

// Cluster is one name server and one broker running in the test process.
type Cluster struct {
	NameServer  *nameserver.Server
	Broker      *broker.Broker
	NamesrvAddr string
	BrokerAddr  string
	Dir         string
	cfg         conf.BrokerConfig
	tune        func(*store.Options)
	brokerOpts  func(*broker.Options)
	nsOpts      func(*nameserver.Options)
	log         zerolog.Logger
}

// Option adjusts a Cluster before it starts.
type Option func(*Cluster)

// WithBrokerConfig edits the broker configuration.
func WithBrokerConfig(f func(*conf.BrokerConfig)) Option {
	return func(c *Cluster) { f(&c.cfg) }
}

// WithStoreOptions edits the store options (small segments, fast checkpoints, ...).
func WithStoreOptions(f func(*store.Options)) Option {
	return func(c *Cluster) { c.tune = f }
}

// WithBrokerOptions edits the options of every broker the cluster starts (its master
// and its slaves), after the configuration is mapped onto them: settings without a
// configuration key, such as broker.Options.SlaveSyncInterval.
func WithBrokerOptions(f func(*broker.Options)) Option {
	return func(c *Cluster) { c.brokerOpts = f }
}

// WithNameServerOptions edits the name server's options (TLS, ACL, ...).
func WithNameServerOptions(f func(*nameserver.Options)) Option {
	return func(c *Cluster) { c.nsOpts = f }
}

// WithLogger sends server logs to log.
func WithLogger(log zerolog.Logger) Option {
	return func(c *Cluster) { c.log = log }
}

// StartCluster starts a name server and a broker registered with it, and stops both at
// cleanup.
func StartCluster(t testing.TB, opts ...Option) *Cluster {
	t.Helper()
	c := &Cluster{Dir: t.TempDir(), cfg: conf.DefaultBrokerConfig(), log: zerolog.Nop()}
	c.cfg.DataDir = c.Dir
	c.cfg.Listen = "127.0.0.1:0"
	c.cfg.CommitLogSegmentSize = 64 << 20
	c.cfg.HAListen = "127.0.0.1:0" // pinned to the bound port after the first start
	for _, o := range opts {
		o(c)
	}
	no := nameserver.DefaultOptions()
	no.Logger = c.log
	if c.nsOpts != nil {
		c.nsOpts(&no)
	}
	ns, err := nameserver.New(no)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	require.NoError(t, ns.Start(ln))
	c.NameServer = ns
	c.NamesrvAddr = ns.Addr()
	c.cfg.NamesrvAddrs = []string{c.NamesrvAddr}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if c.Broker != nil {
			require.NoError(t, c.Broker.Shutdown(ctx))
		}
		require.NoError(t, ns.Shutdown(ctx))
	})
	bln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	c.BrokerAddr = bln.Addr().String()
	c.startBroker(t, bln)
	return c
}

// startBroker starts a broker on ln with the cluster's configuration.
func (c *Cluster) startBroker(t testing.TB, ln net.Listener) {
	t.Helper()
	cfg := c.cfg
	cfg.Listen = c.BrokerAddr
	cfg.AdvertisedAddr = c.BrokerAddr
	if cfg.Role != conf.Slave && cfg.HAListen != "127.0.0.1:0" && !portFree(cfg.HAListen) {
		// The previous HA port was taken meanwhile (often by a client socket: Linux hands
		// even ports to connect): take another; slaves learn it from the name server.
		cfg.HAListen, c.cfg.HAListen = "127.0.0.1:0", "127.0.0.1:0"
	}
	bo, err := launch.BrokerOptions(cfg, mmap.OSFS{}, c.log)
	require.NoError(t, err)
	if c.tune != nil {
		c.tune(&bo.Store)
	}
	if c.brokerOpts != nil {
		c.brokerOpts(&bo)
	}
	c.Broker = startBroker(t, bo, ln, c.NameServer, c.BrokerAddr)
	if cfg.Role != conf.Slave && c.cfg.HAListen == "127.0.0.1:0" {
		c.cfg.HAListen = c.Broker.HAAddr() // a restart keeps the HA address slaves know
	}
}

// portFree reports whether addr can be listened on now.
func portFree(addr string) bool {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return false
	}
	return ln.Close() == nil
}

// startBroker starts a broker with bo on ln and waits for its registration with ns
// (not for a TBW102 route: there is none when auto-creation is off, and after a
// restart an old route may linger).
func startBroker(t testing.TB, bo broker.Options, ln net.Listener, ns *nameserver.Server, addr string) *broker.Broker {
	t.Helper()
	b, err := broker.New(bo)
	require.NoError(t, err)
	started := time.Now()
	if err := b.Start(ln); err != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = b.Shutdown(ctx)
		t.Fatalf("starting broker %s: %v", addr, err)
	}
	Eventually(t, 10*time.Second, func() bool {
		for _, bi := range ns.Table().Brokers() {
			if bi.Addr == bo.AdvertisedAddr && !bi.LastUpdate.Before(started) {
				return true
			}
		}
		return false
	}, "broker registered with the name server")
	return b
}

// Slave is a SLAVE broker of a Cluster's broker: the same broker and cluster name,
// brokerId 1, its own data directory and port, registered with the cluster's name
// server.
type Slave struct {
	Broker *broker.Broker
	Addr   string
	Dir    string
	c      *Cluster
	cfg    conf.BrokerConfig
}

// StartSlave starts a slave of c's broker with c's configuration turned into a
// slave's, then edited by edit (may be nil). Unless edit sets broker.haMasterAddr the
// slave learns the master's HA address from the name server, as in production. The
// slave is stopped at cleanup (before the cluster).
func (c *Cluster) StartSlave(t testing.TB, edit func(*conf.BrokerConfig)) *Slave {
	t.Helper()
	s := &Slave{Dir: t.TempDir(), c: c, cfg: c.cfg}
	s.cfg.Role, s.cfg.BrokerID, s.cfg.DataDir = conf.Slave, 1, s.Dir
	s.cfg.HAListen, s.cfg.HAMasterAddr = "", ""
	if edit != nil {
		edit(&s.cfg)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s.Addr = ln.Addr().String()
	s.start(t, ln)
	t.Cleanup(func() { s.Stop(t) })
	return s
}

func (s *Slave) start(t testing.TB, ln net.Listener) {
	t.Helper()
	cfg := s.cfg
	cfg.Listen, cfg.AdvertisedAddr = s.Addr, s.Addr
	bo, err := launch.BrokerOptions(cfg, mmap.OSFS{}, s.c.log)
	if err != nil {
		_ = ln.Close()
		t.Fatalf("slave options: %v", err)
	}
	if s.c.tune != nil {
		s.c.tune(&bo.Store)
	}
	if s.c.brokerOpts != nil {
		s.c.brokerOpts(&bo)
	}
	s.Broker = startBroker(t, bo, ln, s.c.NameServer, s.Addr)
}

// Stop shuts the slave down; it is idempotent.
func (s *Slave) Stop(t testing.TB) {
	t.Helper()
	if s.Broker == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, s.Broker.Shutdown(ctx))
	s.Broker = nil
}

// StopBroker shuts the cluster's broker down cleanly, as an operator stopping a master
// does: it unregisters from the name server, so routes list only its slaves. It is
// idempotent.
func (c *Cluster) StopBroker(t testing.TB) {
	t.Helper()
	if c.Broker == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, c.Broker.Shutdown(ctx))
	c.Broker = nil
}

// SetBrokerConfig edits the broker configuration used by the next (re)start.
func (c *Cluster) SetBrokerConfig(f func(*conf.BrokerConfig)) { f(&c.cfg) }

// SetBrokerOptions changes how the next StartBroker or RestartBroker edits the broker's
// options (after the configuration is resolved).
func (c *Cluster) SetBrokerOptions(f func(*broker.Options)) { c.brokerOpts = f }

// RestartBroker shuts the broker down cleanly (unless StopBroker did) and starts a new
// one on the same data directory and address.
func (c *Cluster) RestartBroker(t testing.TB) {
	t.Helper()
	c.StopBroker(t)
	var ln net.Listener
	Eventually(t, 10*time.Second, func() bool {
		var err error
		ln, err = net.Listen("tcp", c.BrokerAddr)
		return err == nil
	}, "broker address free again")
	c.startBroker(t, ln)
}

// Eventually polls cond every millisecond until it holds or timeout passes: it is
// testkit.Eventually, kept here for the tests that start a cluster.
func Eventually(t testing.TB, timeout time.Duration, cond func() bool, what string) {
	t.Helper()
	testkit.Eventually(t, timeout, cond, what)
}
