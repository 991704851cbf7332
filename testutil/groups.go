package testutil

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/broker"
	"github.com/ferrymq/ferry/internal/mmap"
	"github.com/ferrymq/ferry/launch"
)

// Group is another broker group of a Cluster: a master with its own broker name, data
// directory and port, in the cluster's cluster and registered with its name server.
type Group struct {
	Broker *broker.Broker
	Name   string
	Addr   string
	Dir    string
}

// StartBrokerGroup starts a master named name (the cluster's other settings and
// options) registered with c's name server, and stops it at cleanup (before the
// cluster).
func (c *Cluster) StartBrokerGroup(t testing.TB, name string) *Group {
	t.Helper()
	g := &Group{Name: name, Dir: t.TempDir()}
	cfg := c.cfg
	cfg.BrokerName, cfg.DataDir = name, g.Dir
	cfg.HAListen = "127.0.0.1:0"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	g.Addr = ln.Addr().String()
	cfg.Listen, cfg.AdvertisedAddr = g.Addr, g.Addr
	bo, err := launch.BrokerOptions(cfg, mmap.OSFS{}, c.log)
	require.NoError(t, err)
	if c.tune != nil {
		c.tune(&bo.Store)
	}
	if c.brokerOpts != nil {
		c.brokerOpts(&bo)
	}
	g.Broker = startBroker(t, bo, ln, c.NameServer, g.Addr)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, g.Broker.Shutdown(ctx))
	})
	return g
}
