package controller

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/acl"
	"github.com/ferrymq/ferry/internal/testkit"
)

// ctlCluster is n real controller servers on loopback ports (Raft and remoting), data in
// a temporary directory.
type ctlCluster struct {
	t       *testing.T
	dir     string
	raft    []string // Raft addresses
	addrs   []string // remoting addresses
	peers   []string
	edit    func(*ServerOptions)
	servers []*Server // nil while stopped
}

// testServerOptions are short timeouts: brokers lapse after 500 ms.
func testServerOptions() ServerOptions {
	o := DefaultServerOptions()
	o.Raft = testOptions()
	o.BrokerHeartbeatTimeout = 500 * time.Millisecond
	o.CheckInterval = 25 * time.Millisecond
	return o
}

func newCtlCluster(t *testing.T, n int, edit func(*ServerOptions)) *ctlCluster {
	c := &ctlCluster{t: t, dir: t.TempDir(), edit: edit, servers: make([]*Server, n)}
	lns := make([]net.Listener, n)
	for i := range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		lns[i] = ln
		c.raft = append(c.raft, ln.Addr().String())
		c.addrs = append(c.addrs, testkit.FreeAddr(t))
		c.peers = append(c.peers, fmt.Sprintf("n%d@%s", i, ln.Addr()))
	}
	for i := range n {
		c.start(i, lns[i])
	}
	t.Cleanup(func() {
		for i := range c.servers {
			if c.servers[i] != nil {
				c.stop(i)
			}
		}
	})
	return c
}

// start runs server i (Raft on raftLn, or listening again on its Raft address).
func (c *ctlCluster) start(i int, raftLn net.Listener) {
	o := testServerOptions()
	o.Raft.NodeID = "n" + strconv.Itoa(i)
	o.Raft.RaftListen, o.Raft.Listener = c.raft[i], raftLn
	o.Raft.Peers = c.peers
	o.Raft.DataDir = filepath.Join(c.dir, o.Raft.NodeID)
	o.Logger = zerolog.New(zerolog.NewTestWriter(c.t)).Level(zerolog.InfoLevel).With().Str("node", o.Raft.NodeID).Logger()
	o.Raft.Logger = o.Logger.Level(zerolog.WarnLevel)
	if c.edit != nil {
		c.edit(&o)
	}
	s, err := NewServer(o)
	require.NoError(c.t, err)
	ln, err := net.Listen("tcp", c.addrs[i])
	require.NoError(c.t, err)
	require.NoError(c.t, s.Start(ln))
	c.servers[i] = s
}

func (c *ctlCluster) stop(i int) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(c.t, c.servers[i].Shutdown(ctx))
	c.servers[i] = nil
}

// leader waits for exactly one running server to lead and returns its index.
func (c *ctlCluster) leader() int {
	idx := -1
	testkit.Eventually(c.t, 10*time.Second, func() bool {
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
	}, "a single leader")
	return idx
}

// client returns a client of the given servers (every one when none is given).
func (c *ctlCluster) client(which ...int) *Client {
	o := DefaultClientOptions()
	if len(which) == 0 {
		o.Addrs = c.addrs
	}
	for _, i := range which {
		o.Addrs = append(o.Addrs, c.addrs[i])
	}
	o.Timeout = 2 * time.Second
	cl, err := NewClient(o)
	require.NoError(c.t, err)
	c.t.Cleanup(func() { require.NoError(c.t, cl.Close()) })
	return cl
}

// fakeBroker registers with the controllers and heartbeats every 50 ms until stopped,
// reporting the epoch and offset it is given.
type fakeBroker struct {
	t  *testing.T
	cl *Client

	mu     sync.Mutex
	report BrokerReport
	last   GroupView
	err    error

	stopOnce sync.Once
	cancel   context.CancelFunc
	done     chan struct{}
}

func startBroker(t *testing.T, cl *Client, group, addr string, epoch int32, offset int64) *fakeBroker {
	b := &fakeBroker{t: t, cl: cl, done: make(chan struct{}),
		report: BrokerReport{Cluster: "DefaultCluster", Group: group, Addr: addr, HAAddr: addr + "0", Epoch: epoch, MaxOffset: offset}}
	testkit.Eventually(t, 10*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		id, v, err := cl.Register(ctx, b.report)
		if err != nil {
			return false
		}
		b.report.BrokerID, b.last = id, v
		return true
	}, "broker "+addr+" registers")
	ctx, cancel := context.WithCancel(context.Background())
	b.cancel = cancel
	go b.loop(ctx)
	t.Cleanup(b.stop)
	return b
}

func (b *fakeBroker) loop(ctx context.Context) {
	defer close(b.done)
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		b.mu.Lock()
		r := b.report
		b.mu.Unlock()
		hctx, cancel := context.WithTimeout(ctx, time.Second)
		v, err := b.cl.Heartbeat(hctx, r)
		cancel()
		b.mu.Lock()
		b.err = err
		if err == nil {
			b.last = v
		}
		b.mu.Unlock()
	}
}

// stop ends the heartbeats: the broker "dies".
func (b *fakeBroker) stop() {
	b.stopOnce.Do(func() {
		b.cancel()
		<-b.done
	})
}

func (b *fakeBroker) id() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.report.BrokerID
}

func (b *fakeBroker) setPosition(epoch int32, offset int64) {
	b.mu.Lock()
	b.report.Epoch, b.report.MaxOffset = epoch, offset
	b.mu.Unlock()
}

// lastView is the group as the last successful heartbeat answered it.
func (b *fakeBroker) lastView() GroupView {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.last
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// waitGroup polls the group through cl until cond holds and returns it.
func waitGroup(t *testing.T, cl *Client, group string, what string, cond func(GroupView) bool) GroupView {
	var v GroupView
	testkit.Eventually(t, 15*time.Second, func() bool {
		var err error
		v, err = cl.Group(ctxT(t), group)
		return err == nil && cond(v)
	}, what)
	return v
}

// The first election waits for the new leader's grace period, then elects the member
// with the largest log; members carry both addresses and the leader's liveness; a
// follower answers reads without liveness.
func TestServerFirstElection(t *testing.T) {
	c := newCtlCluster(t, 3, nil)
	cl := c.client()
	b1 := startBroker(t, cl, "g", "10.0.0.1:10911", 0, 100)
	b2 := startBroker(t, cl, "g", "10.0.0.2:10911", 0, 300)
	b3 := startBroker(t, cl, "g", "10.0.0.3:10911", 0, 200)
	require.Equal(t, []int64{1, 2, 3}, []int64{b1.id(), b2.id(), b3.id()})

	v := waitGroup(t, cl, "g", "a master elected", func(v GroupView) bool { return v.Master != NoBroker })
	require.Equal(t, b2.id(), v.Master, "the largest log")
	require.Equal(t, int32(1), v.MasterEpoch)
	require.Equal(t, []int64{b2.id()}, v.SyncStateSet)
	m, ok := v.Member(b2.id())
	require.True(t, ok)
	require.Equal(t, MemberView{ID: 2, Addr: "10.0.0.2:10911", HAAddr: "10.0.0.2:109110", Alive: true, MaxOffset: 300}, m)
	_, ok = v.Member(9)
	require.False(t, ok)
	testkit.Eventually(t, 5*time.Second, func() bool { return b1.lastView().Master == b2.id() }, "heartbeats tell the brokers")

	// A follower alone answers reads from its state, without liveness.
	follower := (c.leader() + 1) % 3
	testkit.Eventually(t, 10*time.Second, func() bool {
		fv, err := c.client(follower).Group(ctxT(t), "g")
		return err == nil && fv.Master == b2.id() && fv.MasterEpoch == 1 && !fv.Members[0].Alive && fv.Members[0].Addr == "10.0.0.1:10911"
	}, "a follower's read")
	var st Status
	fc := c.client(follower)
	testkit.Eventually(t, 10*time.Second, func() bool { // polled: the leader may move on a loaded machine
		var err error
		st, err = fc.Status(ctxT(t))
		return err == nil && st.State == "Follower" && st.Leader == "n"+strconv.Itoa(c.leader())
	}, "a follower's status names the leader")
	require.Equal(t, "n"+strconv.Itoa(follower), st.NodeID)
	require.Len(t, st.Nodes, 3)
	require.Len(t, st.Groups, 1)
	require.NotZero(t, st.Term)
	require.NotZero(t, st.AppliedIndex)

	// Status through the whole cluster is the leader's, with liveness.
	st, err := cl.Status(ctxT(t))
	require.NoError(t, err)
	require.Equal(t, "Leader", st.State)
	require.True(t, st.Groups[0].Members[1].Alive)

	// Unknown groups and brokers are refused with the machine's sentinels.
	_, err = cl.Group(ctxT(t), "nope")
	require.ErrorIs(t, err, ErrUnknownGroup)
	var re *RemoteError
	require.ErrorAs(t, err, &re)
	_, err = cl.Heartbeat(ctxT(t), BrokerReport{Group: "g", Addr: "10.0.0.9:1", BrokerID: 7})
	require.ErrorIs(t, err, ErrUnknownBroker)
	_, err = cl.Heartbeat(ctxT(t), BrokerReport{Group: "nope", Addr: "10.0.0.9:1", BrokerID: 1})
	require.ErrorIs(t, err, ErrUnknownGroup)
	_, err = cl.Heartbeat(ctxT(t), BrokerReport{Group: "g", Addr: "10.0.0.9:1"})
	require.ErrorIs(t, err, ErrBadRequest, "a heartbeat without an id")
}

// The master's heartbeat lapses: the member of the SyncStateSet with the highest
// (epoch, offset) becomes master; stale requests of the old and the new master are
// refused; a planned switchover moves the master to a designated member.
func TestServerMasterLapse(t *testing.T) {
	c := newCtlCluster(t, 3, nil)
	cl := c.client()
	b1 := startBroker(t, cl, "g", "10.0.0.1:10911", 0, 500)
	b2 := startBroker(t, cl, "g", "10.0.0.2:10911", 0, 0)
	b3 := startBroker(t, cl, "g", "10.0.0.3:10911", 0, 0)
	v := waitGroup(t, cl, "g", "b1 elected", func(v GroupView) bool { return v.Master == b1.id() })

	// Only a broker the leader sees alive joins the set.
	_, err := cl.AlterSyncStateSet(ctxT(t), "g", b1.id(), v.MasterEpoch, v.SyncStateSetEpoch, []int64{1, 4})
	require.ErrorIs(t, err, ErrUnknownBroker)
	v, err = cl.AlterSyncStateSet(ctxT(t), "g", b1.id(), v.MasterEpoch, v.SyncStateSetEpoch, []int64{3, 2, 1})
	require.NoError(t, err)
	require.Equal(t, []int64{1, 2, 3}, v.SyncStateSet)
	require.Equal(t, int32(2), v.SyncStateSetEpoch)

	// The slaves catch up to different points; the master dies.
	b2.setPosition(1, 480)
	b3.setPosition(1, 490)
	testkit.Eventually(t, 5*time.Second, func() bool {
		v, err := cl.Group(ctxT(t), "g")
		m2, _ := v.Member(2)
		m3, _ := v.Member(3)
		return err == nil && m2.MaxOffset == 480 && m3.MaxOffset == 490
	}, "positions reported")
	b1.stop()
	v = waitGroup(t, cl, "g", "a new master", func(v GroupView) bool { return v.Master != b1.id() })
	require.Equal(t, b3.id(), v.Master, "the largest log of the set")
	require.Equal(t, int32(2), v.MasterEpoch)
	require.Equal(t, []int64{3}, v.SyncStateSet)
	require.Equal(t, int32(3), v.SyncStateSetEpoch)
	m1, _ := v.Member(1)
	require.False(t, m1.Alive)

	// The old master is fenced; the new one must quote the current epochs.
	_, err = cl.AlterSyncStateSet(ctxT(t), "g", b1.id(), 1, 2, []int64{1, 2, 3})
	require.ErrorIs(t, err, ErrNotMaster)
	_, err = cl.AlterSyncStateSet(ctxT(t), "g", b3.id(), 1, 3, []int64{2, 3})
	require.ErrorIs(t, err, ErrStaleEpoch)
	_, err = cl.AlterSyncStateSet(ctxT(t), "g", b3.id(), 2, 2, []int64{2, 3})
	require.ErrorIs(t, err, ErrStaleSyncStateSet)
	_, err = cl.AlterSyncStateSet(ctxT(t), "g", b3.id(), 2, 3, []int64{1, 3})
	require.ErrorIs(t, err, ErrBrokerNotAlive, "broker 1 is dead")
	_, err = cl.AlterSyncStateSet(ctxT(t), "g", b3.id(), 2, 3, []int64{2})
	require.ErrorIs(t, err, ErrMasterNotInSet)
	v, err = cl.AlterSyncStateSet(ctxT(t), "g", b3.id(), 2, 3, []int64{2, 3})
	require.NoError(t, err)
	require.Equal(t, []int64{2, 3}, v.SyncStateSet)

	// Planned switchover: to broker 2 (in the set); an election with the master alive
	// and nobody designated changes nothing.
	_, err = cl.Elect(ctxT(t), "g", NoBroker)
	require.ErrorIs(t, err, ErrMasterAlive)
	_, err = cl.Elect(ctxT(t), "g", b1.id())
	require.ErrorIs(t, err, ErrNotEligible)
	v, err = cl.Elect(ctxT(t), "g", b2.id())
	require.NoError(t, err)
	require.Equal(t, b2.id(), v.Master)
	require.Equal(t, int32(3), v.MasterEpoch)
	require.Equal(t, []int64{2}, v.SyncStateSet)
}

// Without electUncleanMaster a dead master whose set has nobody alive leaves the group
// without a master; with it, a broker outside the set is elected.
func TestServerUncleanElection(t *testing.T) {
	for _, unclean := range []bool{false, true} {
		t.Run("unclean="+strconv.FormatBool(unclean), func(t *testing.T) {
			c := newCtlCluster(t, 3, func(o *ServerOptions) { o.ElectUncleanMaster = unclean })
			cl := c.client()
			b1 := startBroker(t, cl, "g", "10.0.0.1:10911", 0, 10)
			v := waitGroup(t, cl, "g", "b1 elected", func(v GroupView) bool { return v.Master == b1.id() })
			b2 := startBroker(t, cl, "g", "10.0.0.2:10911", 1, 5)
			require.Equal(t, []int64{b1.id()}, v.SyncStateSet, "b2 never joins the set")
			b1.stop()
			if !unclean {
				v = waitGroup(t, cl, "g", "the master dropped", func(v GroupView) bool { return v.Master == NoBroker })
				require.Equal(t, int32(1), v.MasterEpoch, "no election")
				_, err := cl.Elect(ctxT(t), "g", NoBroker)
				require.ErrorIs(t, err, ErrNoCandidate)
				_, err = cl.Elect(ctxT(t), "g", b2.id())
				require.ErrorIs(t, err, ErrNotEligible)
				v, err = cl.Group(ctxT(t), "g")
				require.NoError(t, err)
				require.Equal(t, NoBroker, v.Master)
				require.Equal(t, int32(1), v.MasterEpoch)
				return
			}
			v = waitGroup(t, cl, "g", "b2 elected", func(v GroupView) bool { return v.Master == b2.id() })
			require.Equal(t, int32(2), v.MasterEpoch)
			require.Equal(t, []int64{b2.id()}, v.SyncStateSet)
		})
	}
}

// The leader stops: the others elect a new one, the clients follow it, the brokers keep
// heartbeating through it, and the new leader's grace period keeps the master (which
// heartbeats to it) in place.
func TestServerLeaderFailover(t *testing.T) {
	c := newCtlCluster(t, 3, nil)
	cl := c.client()
	b1 := startBroker(t, cl, "g", "10.0.0.1:10911", 0, 10)
	b2 := startBroker(t, cl, "g", "10.0.0.2:10911", 0, 5)
	v := waitGroup(t, cl, "g", "b1 elected", func(v GroupView) bool { return v.Master == b1.id() })
	require.Equal(t, int32(1), v.MasterEpoch)
	_, err := cl.AlterSyncStateSet(ctxT(t), "g", b1.id(), 1, 1, []int64{1, 2})
	require.NoError(t, err)

	old := c.leader()
	c.stop(old)
	next := c.leader()
	require.NotEqual(t, old, next)
	term := c.servers[next].Node().Term()
	// The brokers find the new leader: it sees both alive.
	v = waitGroup(t, cl, "g", "both alive at the new leader", func(v GroupView) bool {
		return len(v.Members) == 2 && v.Members[0].Alive && v.Members[1].Alive
	})
	require.Equal(t, b1.id(), v.Master)
	require.Equal(t, int32(1), v.MasterEpoch, "no election: the master is alive")
	// Past the new leader's grace period the master is still in place.
	testkit.Eventually(t, 5*time.Second, func() bool {
		return !c.servers[next].live.inGrace(term, time.Now())
	}, "grace period over")
	v, err = cl.Group(ctxT(t), "g")
	require.NoError(t, err)
	require.Equal(t, int32(1), v.MasterEpoch)

	// And the master's death is noticed by the new leader.
	b1.stop()
	v = waitGroup(t, cl, "g", "b2 elected", func(v GroupView) bool { return v.Master == b2.id() })
	require.Equal(t, int32(2), v.MasterEpoch)
}

// Two of three controllers down: no leader, so no election whatever the heartbeats;
// reads still answer on the survivor; writes fail with a clear error wrapping
// ErrNotLeader. When a second node returns, the cluster has a leader again and the
// master, still alive, stays.
func TestServerTwoDown(t *testing.T) {
	c := newCtlCluster(t, 3, nil)
	cl := c.client()
	b1 := startBroker(t, cl, "g", "10.0.0.1:10911", 0, 10)
	startBroker(t, cl, "g", "10.0.0.2:10911", 0, 5)
	waitGroup(t, cl, "g", "b1 elected", func(v GroupView) bool { return v.Master == b1.id() })
	_, err := cl.AlterSyncStateSet(ctxT(t), "g", b1.id(), 1, 1, []int64{1, 2})
	require.NoError(t, err)

	leader := c.leader()
	survivor := (leader + 1) % 3
	other := (leader + 2) % 3
	testkit.Eventually(t, 10*time.Second, func() bool {
		g, _ := c.servers[survivor].Node().Group("g")
		return len(g.SyncStateSet) == 2
	}, "the survivor has the set")
	c.stop(leader)
	c.stop(other)
	testkit.Eventually(t, 10*time.Second, func() bool {
		id, _ := c.servers[survivor].Node().Leader()
		return id == "" && !c.servers[survivor].Node().IsLeader()
	}, "the survivor knows no leader")
	require.NotEmpty(t, c.servers[survivor].Missing(), "not ready without a leader")
	b1.stop() // the master dies too: nobody may elect

	v, err := cl.Group(ctxT(t), "g")
	require.NoError(t, err, "the survivor answers reads")
	require.Equal(t, []int64{1, 2}, v.SyncStateSet)
	require.Equal(t, b1.id(), v.Master)
	require.Equal(t, int32(1), v.MasterEpoch)
	short, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err = cl.Elect(short, "g", NoBroker)
	require.ErrorIs(t, err, ErrNoController)
	require.ErrorIs(t, err, ErrNotLeader)

	c.start(other, nil)
	c.leader()
	v = waitGroup(t, cl, "g", "b2 elected once a quorum is back", func(v GroupView) bool { return v.Master != b1.id() })
	require.Equal(t, int32(2), v.MasterEpoch)
}

// With ACL on, every request needs an admin account's signature.
func TestServerACL(t *testing.T) {
	file := filepath.Join(t.TempDir(), "plain_acl.yml")
	require.NoError(t, os.WriteFile(file, []byte(`accounts:
  - accessKey: ferryadmin
    secretKey: ferrysecret
    admin: true
  - accessKey: ferryuser
    secretKey: usersecret
    defaultTopicPerm: PUB|SUB
    defaultGroupPerm: PUB|SUB
`), 0o600))
	c := newCtlCluster(t, 1, func(o *ServerOptions) { o.ACLFile = file })
	c.leader()
	for name, tc := range map[string]struct {
		creds *acl.Credentials
		ok    bool
	}{
		"unsigned":  {nil, false},
		"non-admin": {&acl.Credentials{AccessKey: "ferryuser", SecretKey: "usersecret"}, false},
		"bad key":   {&acl.Credentials{AccessKey: "ferryadmin", SecretKey: "wrongsecret"}, false},
		"admin":     {&acl.Credentials{AccessKey: "ferryadmin", SecretKey: "ferrysecret"}, true},
	} {
		o := DefaultClientOptions()
		o.Addrs, o.Credentials = c.addrs, tc.creds
		cl, err := NewClient(o)
		require.NoError(t, err)
		_, _, err = cl.Register(ctxT(t), BrokerReport{Group: "g", Addr: "10.0.0.1:10911"})
		_, serr := cl.Status(ctxT(t))
		require.NoError(t, cl.Close())
		if tc.ok {
			require.NoError(t, err, name)
			require.NoError(t, serr, name)
			continue
		}
		require.ErrorIs(t, err, acl.ErrNoPermission, name)
		require.ErrorIs(t, serr, acl.ErrNoPermission, name)
	}
	require.Equal(t, []int16{904, 1001, 1002, 1003, 1004, 1005}, c.servers[0].RequestCodes())
}

// A single node is ready once it serves, leads (knows a leader) and has applied what
// it committed; a bad option is refused before anything opens.
func TestServerReadinessAndOptions(t *testing.T) {
	o := testServerOptions()
	o.Raft.NodeID, o.Raft.RaftListen, o.Raft.DataDir = "n0", testkit.FreeAddr(t), t.TempDir()
	o.Raft.Peers = []string{"n0@" + o.Raft.RaftListen}
	o.Listen = testkit.FreeAddr(t)
	s, err := NewServer(o)
	require.NoError(t, err)
	require.Contains(t, s.Missing(), "controller port not served")
	require.Empty(t, s.Addr())
	require.NoError(t, s.ListenAndStart())
	require.Equal(t, o.Listen, s.Addr())
	testkit.Eventually(t, 10*time.Second, func() bool { return len(s.Missing()) == 0 }, "ready")
	require.Error(t, s.Start(nil), "started twice")
	require.NoError(t, s.Shutdown(context.Background()))
	require.NoError(t, s.Shutdown(context.Background()), "idempotent")

	for name, edit := range map[string]func(*ServerOptions){
		"timeout":  func(o *ServerOptions) { o.BrokerHeartbeatTimeout = 0 },
		"interval": func(o *ServerOptions) { o.CheckInterval = o.BrokerHeartbeatTimeout },
		"workers":  func(o *ServerOptions) { o.Workers = 0 },
		"clock":    func(o *ServerOptions) { o.Clock = nil },
		"raft":     func(o *ServerOptions) { o.Raft.NodeID = "" },
	} {
		bad := o
		edit(&bad)
		_, err := NewServer(bad)
		require.ErrorIs(t, err, ErrBadOptions, name)
	}
	_, err = NewClient(ClientOptions{})
	require.ErrorIs(t, err, ErrBadOptions)
	_, err = NewClient(ClientOptions{Addrs: []string{""}})
	require.ErrorIs(t, err, ErrBadOptions)
}

// Every refusal travels as its response code and name and comes back as its sentinel;
// a code alone (a peer without the name) maps to the code's first sentinel.
func TestWireErrorsRoundTrip(t *testing.T) {
	names := map[string]bool{}
	for _, w := range wireErrors {
		require.False(t, names[w.name], w.name)
		names[w.name] = true
		got, ok := wireErrorOf(fmt.Errorf("wrapped: %w", w.err))
		require.True(t, ok)
		require.Equal(t, w.name, got.name)
		err := remoteError(int16(w.code), w.name, "remark", "127.0.0.1:1")
		require.ErrorIs(t, err, w.err, w.name)
		require.Equal(t, "remark (controller 127.0.0.1:1)", err.Error())
		first := 0
		for first < len(wireErrors) && wireErrors[first].code != w.code {
			first++
		}
		require.ErrorIs(t, remoteError(int16(w.code), "", "", "a"), wireErrors[first].err, w.name)
	}
	_, ok := wireErrorOf(errors.New("other"))
	require.False(t, ok)
	require.ErrorIs(t, remoteError(16, "", "no", "a"), acl.ErrNoPermission)
	require.NoError(t, errors.Unwrap(remoteError(1, "", "boom", "a")))
}

// A controller node replaced by a machine with an empty data directory (same node id,
// same addresses) rejoins: it bootstraps the same configuration, and the leader brings
// it up to date from a snapshot; the cluster keeps serving meanwhile.
func TestServerReplaceNode(t *testing.T) {
	c := newCtlCluster(t, 3, func(o *ServerOptions) { o.Raft.SnapshotThreshold, o.Raft.TrailingLogs = 4, 2 })
	cl := c.client()
	b1 := startBroker(t, cl, "g", "10.0.0.1:10911", 0, 10)
	for i := 2; i <= 8; i++ {
		_, _, err := cl.Register(ctxT(t), BrokerReport{Group: "g", Addr: "10.0.0." + strconv.Itoa(i) + ":10911"})
		require.NoError(t, err)
	}
	waitGroup(t, cl, "g", "b1 elected", func(v GroupView) bool { return v.Master == b1.id() })
	replaced := (c.leader() + 1) % 3
	c.stop(replaced)
	require.NoError(t, os.RemoveAll(filepath.Join(c.dir, "n"+strconv.Itoa(replaced))))
	_, _, err := cl.Register(ctxT(t), BrokerReport{Group: "g", Addr: "10.0.0.9:10911"})
	require.NoError(t, err, "two of three serve writes")
	for _, s := range c.servers {
		if s != nil { // whichever leads when it returns has compacted its log
			require.NoError(t, s.Node().Snapshot())
		}
	}

	c.start(replaced, nil)
	want, _ := c.servers[c.leader()].Node().Group("g")
	testkit.Eventually(t, 15*time.Second, func() bool {
		got, ok := c.servers[replaced].Node().Group("g")
		return ok && fmt.Sprint(got) == fmt.Sprint(want)
	}, "the new node has the state")
	require.Len(t, want.Members, 9)
	// Raft records the installed snapshot just after the state machine restored it.
	testkit.Eventually(t, 10*time.Second, func() bool {
		return c.servers[replaced].Node().raft.Stats()["last_snapshot_index"] != "0"
	}, "the new node installed a snapshot")
	testkit.Eventually(t, 10*time.Second, func() bool { return len(c.servers[replaced].Missing()) == 0 }, "the new node is ready")
}

// A master that registers again after a restart (RestartEpoch), its heartbeats never
// lapsing, is elected again at a new epoch when no member of its SyncStateSet holds
// more; when a slave holds more (the restarted master lost its log's tail), the slave
// wins.
func TestServerMasterRestart(t *testing.T) {
	// A timeout the fake brokers' heartbeats (every 50 ms) never miss on a loaded machine.
	c := newCtlCluster(t, 3, func(o *ServerOptions) { o.BrokerHeartbeatTimeout = 2 * time.Second })
	cl := c.client()
	b1 := startBroker(t, cl, "g", "10.0.0.1:10911", 0, 500)
	b2 := startBroker(t, cl, "g", "10.0.0.2:10911", 0, 0)
	b3 := startBroker(t, cl, "g", "10.0.0.3:10911", 0, 0)
	v := waitGroup(t, cl, "g", "b1 elected", func(v GroupView) bool { return v.Master == b1.id() })
	_, err := cl.AlterSyncStateSet(ctxT(t), "g", b1.id(), v.MasterEpoch, v.SyncStateSetEpoch, []int64{1, 2, 3})
	require.NoError(t, err)
	b1.setPosition(1, 500)
	b2.setPosition(1, 500)
	b3.setPosition(1, 500)
	positions(t, cl, map[int64]int64{1: 500, 2: 500, 3: 500})

	// The master's process restarts within the heartbeat timeout (the fake's heartbeats
	// go on) with everything its slaves have.
	r := b1.report
	r.RestartEpoch = 1
	_, rv, err := cl.Register(ctxT(t), r)
	require.NoError(t, err)
	require.True(t, rv.MasterRestarted, "the answer says a re-election is due")
	require.Equal(t, int32(1), rv.MasterEpoch)
	v = waitGroup(t, cl, "g", "a new epoch", func(v GroupView) bool { return v.MasterEpoch == 2 })
	require.Equal(t, b1.id(), v.Master, "re-elected, not replaced: its heartbeats never lapsed")
	require.Equal(t, []int64{1}, v.SyncStateSet)
	require.False(t, v.MasterRestarted)
	// The registration retried changes nothing more.
	_, rv, err = cl.Register(ctxT(t), r)
	require.NoError(t, err)
	require.False(t, rv.MasterRestarted)
	require.Equal(t, int32(2), rv.MasterEpoch)

	// The slaves copy past the new epoch's start; then the master's machine crashes and
	// loses its log's unflushed tail: it comes back with less than both slaves.
	_, err = cl.AlterSyncStateSet(ctxT(t), "g", b1.id(), 2, v.SyncStateSetEpoch, []int64{1, 2, 3})
	require.NoError(t, err)
	b2.setPosition(2, 700)
	b3.setPosition(2, 650)
	b1.setPosition(2, 600)
	positions(t, cl, map[int64]int64{1: 600, 2: 700, 3: 650})
	r = b1.report
	r.Epoch, r.MaxOffset, r.RestartEpoch = 2, 600, 2
	_, rv, err = cl.Register(ctxT(t), r)
	require.NoError(t, err)
	require.True(t, rv.MasterRestarted)
	v = waitGroup(t, cl, "g", "a new epoch", func(v GroupView) bool { return v.MasterEpoch == 3 })
	require.Equal(t, b2.id(), v.Master, "the slave holding the most")
}

// positions waits until the leader's view shows each broker at its offset (so that no
// heartbeat with an older position is still on its way).
func positions(t *testing.T, cl *Client, want map[int64]int64) {
	t.Helper()
	waitGroup(t, cl, "g", fmt.Sprintf("positions %v reported", want), func(v GroupView) bool {
		for id, off := range want {
			if m, ok := v.Member(id); !ok || m.MaxOffset != off {
				return false
			}
		}
		return true
	})
}

// An election retried on a new Raft leader after its first attempt was applied answers
// the group as that election left it: the same master, no second new epoch — although
// the new leader, in its grace period, may not see the designated broker alive yet.
func TestServerElectRetriedAcrossLeaderChange(t *testing.T) {
	c := newCtlCluster(t, 3, nil)
	cl := c.client()
	b1 := startBroker(t, cl, "g", "10.0.0.1:10911", 0, 10)
	b2 := startBroker(t, cl, "g", "10.0.0.2:10911", 0, 10)
	v := waitGroup(t, cl, "g", "b1 elected", func(v GroupView) bool { return v.Master == b1.id() })
	_, err := cl.AlterSyncStateSet(ctxT(t), "g", b1.id(), v.MasterEpoch, v.SyncStateSetEpoch, []int64{1, 2})
	require.NoError(t, err)

	v, err = cl.ElectFrom(ctxT(t), "g", b2.id(), 1)
	require.NoError(t, err)
	require.Equal(t, b2.id(), v.Master)
	require.Equal(t, int32(2), v.MasterEpoch)

	old := c.leader()
	c.stop(old)
	next := c.leader()
	require.NotEqual(t, old, next)
	again, err := cl.ElectFrom(ctxT(t), "g", b2.id(), 1)
	require.NoError(t, err, "the retry finds its election done")
	require.Equal(t, b2.id(), again.Master)
	require.Equal(t, int32(2), again.MasterEpoch, "no second election")
	require.Equal(t, v.SyncStateSetEpoch, again.SyncStateSetEpoch)

	// An election from an epoch the group is past with another master is refused.
	_, err = cl.ElectFrom(ctxT(t), "g", b1.id(), 1)
	require.ErrorIs(t, err, ErrStaleEpoch)
	// Elect reads the epoch first: a switchover back to b1 (once the new leader sees it
	// alive and it is in the set again) from the current epoch.
	testkit.Eventually(t, 10*time.Second, func() bool {
		_, err = cl.AlterSyncStateSet(ctxT(t), "g", b2.id(), 2, again.SyncStateSetEpoch, []int64{1, 2})
		return err == nil
	}, "b1 back in the set")
	v, err = cl.Elect(ctxT(t), "g", b1.id())
	require.NoError(t, err)
	require.Equal(t, b1.id(), v.Master)
	require.Equal(t, int32(3), v.MasterEpoch)
}

// settled: a restarted master's re-election waits until every member of the set has
// reported since the start, or has lapsed; in a leader's grace period a member not heard
// of yet may be alive.
func TestLivenessSettled(t *testing.T) {
	const timeout = 3 * time.Second
	l := newLiveness(timeout)
	t0 := time.Unix(1000, 0)
	set := []int64{1, 2, 3}
	l.record(1, "g", 1, 1, 10, t0)
	require.False(t, l.settled(1, "g", set, t0), "grace: 2 and 3 not heard of")
	l.record(1, "g", 2, 1, 10, t0)
	l.record(1, "g", 3, 1, 10, t0)
	require.True(t, l.settled(1, "g", set, t0.Add(time.Second)), "no start noted: any heartbeat in the term counts")

	start := t0.Add(time.Second)
	l.started(1, "g", start)
	l.record(1, "g", 1, 1, 5, start)
	require.False(t, l.settled(1, "g", set, start), "2 and 3 reported before the start")
	l.record(1, "g", 2, 1, 10, start.Add(time.Millisecond))
	require.False(t, l.settled(1, "g", set, start.Add(time.Millisecond)), "3 has not reported since")
	l.record(1, "g", 3, 1, 10, start.Add(2*time.Millisecond))
	require.True(t, l.settled(1, "g", set, start.Add(2*time.Millisecond)))

	// A member that stops reporting counts once it lapsed.
	at := t0.Add(10 * time.Second)
	l.record(1, "g", 3, 1, 10, at.Add(-time.Millisecond))
	l.started(1, "g", at)
	l.record(1, "g", 1, 1, 5, at)
	l.record(1, "g", 2, 1, 10, at)
	require.False(t, l.settled(1, "g", set, at), "3 alive, not reported since")
	l.record(1, "g", 1, 1, 5, at.Add(timeout))
	l.record(1, "g", 2, 1, 10, at.Add(timeout))
	require.True(t, l.settled(1, "g", set, at.Add(timeout)), "3 lapsed")

	// A new term starts afresh: in its grace nobody unheard counts as dead.
	require.False(t, l.settled(2, "g", set, at.Add(timeout)))
	l.record(2, "g", 1, 1, 5, at.Add(timeout))
	require.False(t, l.settled(2, "g", set, at.Add(timeout)))
	require.True(t, l.settled(2, "g", set, at.Add(2*timeout)), "past the grace, unheard members are dead")
}
