package failover

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/client"
	"github.com/ferrymq/ferry/controller"
	"github.com/ferrymq/ferry/ha"
	"github.com/ferrymq/ferry/internal/testkit"
	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/nameserver"
)

// These tests run the real parts in one process: three controllers (Raft on loopback),
// a name server, brokers under agents with real controller clients, and Ferry's client.
// The crash tests with child processes are in package interop. (testutil.StartControllers
// is not used: package testutil imports launch, which imports this package.)

// controllers are three controller servers on loopback ports.
type controllers struct {
	addrs   []string
	servers []*controller.Server
}

// startControllers starts three controllers that declare a broker dead after
// heartbeatTimeout, and stops them at cleanup.
func startControllers(t *testing.T, heartbeatTimeout time.Duration) *controllers {
	t.Helper()
	c := &controllers{}
	dir := t.TempDir()
	var peers []string
	raft := make([]net.Listener, 3)
	for i := range raft {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		raft[i] = ln
		peers = append(peers, fmt.Sprintf("n%d@%s", i, ln.Addr()))
	}
	for i, rln := range raft {
		o := controller.DefaultServerOptions()
		o.Raft.NodeID, o.Raft.RaftListen, o.Raft.Listener = "n"+strconv.Itoa(i), rln.Addr().String(), rln
		o.Raft.Peers, o.Raft.DataDir = peers, filepath.Join(dir, "n"+strconv.Itoa(i))
		o.BrokerHeartbeatTimeout, o.CheckInterval = heartbeatTimeout, heartbeatTimeout/10
		o.Logger = testLogger(t).With().Str("node", o.Raft.NodeID).Logger()
		o.Raft.Logger = o.Logger.Level(zerolog.WarnLevel)
		s, err := controller.NewServer(o)
		require.NoError(t, err)
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		require.NoError(t, s.Start(ln))
		c.servers = append(c.servers, s)
		c.addrs = append(c.addrs, s.Addr())
	}
	t.Cleanup(func() {
		for _, s := range c.servers {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			require.NoError(t, s.Shutdown(ctx))
			cancel()
		}
	})
	return c
}

// client returns a controller client closed at cleanup.
func (c *controllers) client(t *testing.T) *controller.Client {
	o := controller.DefaultClientOptions()
	o.Addrs = c.addrs
	cl, err := controller.NewClient(o)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, cl.Close()) })
	return cl
}

// startNameServer starts a name server stopped at cleanup.
func startNameServer(t *testing.T) string {
	t.Helper()
	o := nameserver.DefaultOptions()
	o.Logger = testLogger(t)
	ns, err := nameserver.New(o)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	require.NoError(t, ns.Start(ln))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, ns.Shutdown(ctx))
	})
	return ns.Addr()
}

// startReal starts an agent on the node with a real controller client of addrs,
// registering its brokers with the name server ns.
func (n *testNode) startReal(addrs []string, ns string) {
	n.t.Helper()
	o := n.options()
	var err error
	o.Listener, err = net.Listen("tcp", n.addr)
	require.NoError(n.t, err)
	o.Controller.Addrs = addrs
	o.Controller.Timeout = time.Second
	o.HeartbeatInterval = 100 * time.Millisecond
	o.Broker.NamesrvAddrs, o.Broker.RegisterInterval = []string{ns}, time.Second
	o.Broker.HAMaxTimeSlaveNotCatchup = 2 * time.Second
	o.Broker.SlaveSyncInterval = time.Second // topics created on the master reach slaves sooner
	a, err := New(o)
	require.NoError(n.t, err)
	require.NoError(n.t, a.Start())
	n.a = a
	n.t.Cleanup(n.stop)
}

// groupSettles waits until the controllers name a master, at epoch or later, that serves
// and every other node serves as its slave, and returns the master's node index.
func groupSettles(t *testing.T, nodes []*testNode, epoch int32) int {
	t.Helper()
	master := -1
	testkit.Eventually(t, waitLong, func() bool {
		master = -1
		for i, n := range nodes {
			v, ok := n.a.View()
			if !ok || !n.a.Ready() || v.MasterEpoch < epoch {
				return false
			}
			if v.Master == n.a.BrokerID() {
				master = i
			}
		}
		if master < 0 {
			return false
		}
		want, _ := nodes[master].a.View()
		for _, n := range nodes {
			if v, _ := n.a.View(); v.Master != want.Master || v.MasterEpoch != want.MasterEpoch {
				return false
			}
		}
		return true
	}, "one master, the other brokers its slaves, all serving")
	return master
}

// inSync waits until the group's SyncStateSet holds every node.
func inSync(t *testing.T, cl *controller.Client, nodes []*testNode) {
	t.Helper()
	var ids []int64
	for _, n := range nodes {
		ids = append(ids, n.a.BrokerID())
	}
	slices.Sort(ids)
	testkit.EventuallyEvery(t, waitLong, 20*time.Millisecond, func() bool {
		v, err := cl.Group(context.Background(), testGroup)
		return err == nil && slices.Equal(v.SyncStateSet, ids)
	}, fmt.Sprintf("SyncStateSet %v", ids))
}

// elect asks the controllers to make id the master and returns the group after. An
// answer lost to a change of Raft leader is retried by the client and may then be a
// refusal of what is done already; the group's state decides.
func elect(t *testing.T, cl *controller.Client, id int64) controller.GroupView {
	t.Helper()
	v, err := cl.Elect(context.Background(), testGroup, id)
	if err != nil {
		t.Logf("elect %d: %v (checking the group)", id, err)
		v, err = cl.Group(context.Background(), testGroup)
		require.NoError(t, err)
	}
	require.Equal(t, id, v.Master)
	return v
}

// producer sends numbered messages with Ferry's client and keeps what was acknowledged.
type producer struct {
	t     *testing.T
	cl    *client.Client
	p     *client.Producer
	mu    sync.Mutex
	acked []string
	next  int
}

func newProducer(t *testing.T, ns string) *producer {
	cl, err := client.New(client.WithNameServers(ns))
	require.NoError(t, err)
	p, err := cl.NewProducer("FailoverPG")
	require.NoError(t, err)
	t.Cleanup(func() {
		require.NoError(t, p.Close())
		require.NoError(t, cl.Close())
	})
	return &producer{t: t, cl: cl, p: p}
}

// send sends the next message and reports whether it was acknowledged.
func (p *producer) send() bool {
	body := fmt.Sprintf("m%05d", p.next)
	p.next++
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if _, err := p.p.Send(ctx, message.NewMessage(testTopic, []byte(body))); err != nil {
		return false
	}
	p.mu.Lock()
	p.acked = append(p.acked, body)
	p.mu.Unlock()
	return true
}

// sendOK sends n messages, each acknowledged.
func (p *producer) sendOK(n int) {
	for range n {
		require.True(p.t, p.send(), "send %d", p.next-1)
	}
}

// allReadable waits until node n holds every acknowledged message (any queue).
func (p *producer) allReadable(n *testNode) {
	p.t.Helper()
	p.mu.Lock()
	want := slices.Clone(p.acked)
	p.mu.Unlock()
	rc := newRemoting(p.t)
	var missing []string
	if !testkit.Until(waitLong, 20*time.Millisecond, func() bool {
		have := map[string]bool{}
		for q := range int32(4) {
			for _, b := range bodiesOf(p.t, rc, n.addr, q) {
				have[b] = true
			}
		}
		missing = missing[:0]
		for _, b := range want {
			if !have[b] {
				missing = append(missing, b)
			}
		}
		return len(missing) == 0
	}) {
		p.t.Fatalf("%s lacks %d of %d acknowledged messages, first %q", n.addr, len(missing), len(want), missing[0])
	}
}

func TestClusterElectsReplicatesAndSwitchesOver(t *testing.T) {
	ctl := startControllers(t, time.Second)
	ns := startNameServer(t)
	nodes := []*testNode{newNode(t, nil), newNode(t, nil), newNode(t, nil)}
	for _, n := range nodes {
		n.startReal(ctl.addrs, ns)
	}
	m := groupSettles(t, nodes, 1)
	cl := ctl.client(t)
	inSync(t, cl, nodes)
	p := newProducer(t, ns)
	p.sendOK(20)

	next := (m + 1) % len(nodes)
	v := elect(t, cl, nodes[next].a.BrokerID())
	m2 := groupSettles(t, nodes, v.MasterEpoch)
	require.Equal(t, next, m2, "the designated broker is the master")
	testkit.Eventually(t, waitLong, p.send, "a send after the switchover")
	p.sendOK(20)
	for _, n := range nodes {
		p.allReadable(n)
	}
	want := nodes[next].epochs()
	require.Len(t, want, 2)
	require.Equal(t, v.MasterEpoch, want[1].Epoch)
	for _, n := range nodes {
		require.Equal(t, want, n.epochs(), "every broker holds the new master's history")
	}
}

func TestIsolatedMasterRejoinsTruncated(t *testing.T) {
	ctl := startControllers(t, time.Second)
	ns := startNameServer(t)
	nodes := []*testNode{newNode(t, nil), newNode(t, nil), newNode(t, nil)}
	// The first broker reaches the controllers through proxies the test can freeze, and
	// starts first, so that it is the first master.
	var proxies []*testkit.Proxy
	var via []string
	for _, a := range ctl.addrs {
		px := testkit.StartProxy(t, a)
		proxies = append(proxies, px)
		via = append(via, px.Addr())
	}
	nodes[0].startReal(via, ns)
	nodes[0].serving(true, 1)
	for _, n := range nodes[1:] {
		n.startReal(ctl.addrs, ns)
	}
	require.Equal(t, 0, groupSettles(t, nodes, 1))
	cl := ctl.client(t)
	inSync(t, cl, nodes)
	rc := newRemoting(t)
	sendOK(t, rc, nodes[0].addr, "a0", "a1", "a2")
	for _, n := range nodes[1:] {
		testkit.Eventually(t, waitLong, func() bool { return n.end() == nodes[0].end() }, "the slaves caught up")
	}
	x := nodes[0].end()

	for _, px := range proxies {
		px.SetFrozen(true)
		px.Cut()
	}
	var v controller.GroupView
	testkit.EventuallyEvery(t, waitLong, 20*time.Millisecond, func() bool {
		var err error
		v, err = cl.Group(context.Background(), testGroup)
		return err == nil && v.Master != nodes[0].a.BrokerID() && v.Master != controller.NoBroker
	}, "the controllers elect another master")
	m := slices.IndexFunc(nodes, func(n *testNode) bool { return n.a.BrokerID() == v.Master })
	nodes[m].serving(true, v.MasterEpoch)
	// Cut off from the controllers, the old master still stores writes (sends that do
	// not wait for a slave are acknowledged): the group will not keep them.
	sendOK(t, rc, nodes[0].addr, "lost0", "lost1")
	require.Greater(t, nodes[0].end(), x)
	sendOK(t, rc, nodes[m].addr, "b0")

	for _, px := range proxies {
		px.SetFrozen(false)
	}
	nodes[0].serving(false, v.MasterEpoch)
	want := []ha.EpochEntry{{Epoch: 1, StartOffset: 0}, {Epoch: v.MasterEpoch, StartOffset: x}}
	require.Equal(t, want, nodes[m].epochs())
	for _, n := range nodes {
		n.holds(rc, "a0", "a1", "a2", "b0")
		require.Equal(t, want, n.epochs(), "%s holds the master's history", n.addr)
	}
}
