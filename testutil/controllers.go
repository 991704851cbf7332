package testutil

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/controller"
	"github.com/ferrymq/ferry/internal/testkit"
)

// Controllers is a cluster of controller nodes (package controller) running in the test
// process: node i is "n<i>", on loopback ports fixed for the test (so a stopped node
// restarts on its own ports and data), with short timeouts — Raft's 300 ms, a broker
// lapses after 1 s of silence. The test's end shuts every running node down.
type Controllers struct {
	// Addrs are the nodes' remoting addresses (controller.listen), in node order.
	Addrs []string

	t       testing.TB
	dir     string
	raft    []string
	peers   []string
	edit    func(*controller.ServerOptions)
	servers []*controller.Server
}

// StartControllers starts an n-node controller cluster; edit, if not nil, adjusts each
// node's options before it starts.
func StartControllers(t testing.TB, n int, edit func(*controller.ServerOptions)) *Controllers {
	t.Helper()
	c := &Controllers{t: t, dir: t.TempDir(), edit: edit, servers: make([]*controller.Server, n)}
	for i := range n {
		c.Addrs = append(c.Addrs, testkit.FreeAddr(t))
		c.raft = append(c.raft, testkit.FreeAddr(t))
		c.peers = append(c.peers, fmt.Sprintf("n%d@%s", i, c.raft[i]))
	}
	for i := range n {
		c.Start(i)
	}
	t.Cleanup(func() {
		for i, s := range c.servers {
			if s != nil {
				c.Stop(i)
			}
		}
	})
	return c
}

// AddrList is Addrs as ferryctl's --controller and broker.controllerAddrs take them.
func (c *Controllers) AddrList() string { return strings.Join(c.Addrs, ",") }

// Server returns node i, nil while it is stopped.
func (c *Controllers) Server(i int) *controller.Server { return c.servers[i] }

// Start starts node i (again) on its ports and data directory.
func (c *Controllers) Start(i int) {
	c.t.Helper()
	require.Nil(c.t, c.servers[i], "node %d runs", i)
	o := controller.DefaultServerOptions()
	o.Raft.NodeID = fmt.Sprintf("n%d", i)
	o.Raft.RaftListen, o.Raft.Peers = c.raft[i], c.peers
	o.Raft.DataDir = filepath.Join(c.dir, o.Raft.NodeID)
	o.Raft.HeartbeatTimeout, o.Raft.ElectionTimeout, o.Raft.LeaderLeaseTimeout = 300*time.Millisecond, 300*time.Millisecond, 150*time.Millisecond
	o.BrokerHeartbeatTimeout, o.CheckInterval = time.Second, 50*time.Millisecond
	o.Listen = c.Addrs[i]
	if c.edit != nil {
		c.edit(&o)
	}
	s, err := controller.NewServer(o)
	require.NoError(c.t, err, "controller node %d", i)
	ln, err := net.Listen("tcp", c.Addrs[i])
	if err != nil {
		require.NoError(c.t, errors.Join(err, s.Shutdown(context.Background())))
	}
	require.NoError(c.t, s.Start(ln))
	c.servers[i] = s
}

// Stop shuts node i down gracefully.
func (c *Controllers) Stop(i int) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(c.t, c.servers[i].Shutdown(ctx), "stop controller node %d", i)
	c.servers[i] = nil
}

// Leader waits until exactly one running node leads and returns its index.
func (c *Controllers) Leader() int {
	c.t.Helper()
	idx := -1
	testkit.Eventually(c.t, 15*time.Second, func() bool {
		idx = -1
		for i, s := range c.servers {
			if s != nil && s.Node().IsLeader() {
				if idx >= 0 {
					return false
				}
				idx = i
			}
		}
		return idx >= 0
	}, "a single controller leader")
	return idx
}

// Client returns a client of every node, closed when the test ends.
func (c *Controllers) Client() *controller.Client {
	c.t.Helper()
	o := controller.DefaultClientOptions()
	o.Addrs = c.Addrs
	cl, err := controller.NewClient(o)
	require.NoError(c.t, err)
	c.t.Cleanup(func() { require.NoError(c.t, cl.Close()) })
	return cl
}
