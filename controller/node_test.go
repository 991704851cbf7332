package controller

import (
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/ferrymq/ferry/internal/leaktest"
	"github.com/ferrymq/ferry/internal/testkit"
)

// TestMain checks for leaked goroutines; netpoll's pollers (the remoting servers') stay.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m, leaktest.Netpoll()...) }

// cluster is three real nodes on loopback ports with data in a temporary directory.
type cluster struct {
	t     *testing.T
	dir   string
	addrs []string
	peers []string
	nodes []*Node // nil while stopped
}

func testOptions() Options {
	o := DefaultOptions()
	o.HeartbeatTimeout = 300 * time.Millisecond
	o.ElectionTimeout = 300 * time.Millisecond
	o.LeaderLeaseTimeout = 150 * time.Millisecond
	return o
}

func newCluster(t *testing.T, edit func(*Options)) *cluster {
	c := &cluster{t: t, dir: t.TempDir(), nodes: make([]*Node, 3)}
	lns := make([]net.Listener, 3)
	for i := range lns {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		lns[i] = ln
		c.addrs = append(c.addrs, ln.Addr().String())
		c.peers = append(c.peers, fmt.Sprintf("n%d@%s", i, ln.Addr()))
	}
	for i := range lns {
		c.start(i, lns[i], edit)
	}
	t.Cleanup(func() {
		for i, n := range c.nodes {
			if n != nil {
				require.NoError(t, n.Close(), "node %d", i)
			}
		}
	})
	return c
}

// start opens node i (on ln, or listening again on its address when ln is nil).
func (c *cluster) start(i int, ln net.Listener, edit func(*Options)) {
	o := testOptions()
	o.NodeID = "n" + strconv.Itoa(i)
	o.RaftListen = c.addrs[i]
	o.Listener = ln
	o.Peers = c.peers
	o.DataDir = filepath.Join(c.dir, o.NodeID)
	o.Logger = zerolog.New(zerolog.NewTestWriter(c.t)).Level(zerolog.InfoLevel)
	if edit != nil {
		edit(&o)
	}
	n, err := Open(o)
	require.NoError(c.t, err)
	c.nodes[i] = n
}

func (c *cluster) stop(i int) {
	require.NoError(c.t, c.nodes[i].Close())
	c.nodes[i] = nil
}

// leader waits for exactly one running node to lead and returns its index.
func (c *cluster) leader() int {
	idx := -1
	testkit.Eventually(c.t, 10*time.Second, func() bool {
		idx = -1
		for i, n := range c.nodes {
			if n != nil && n.IsLeader() {
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

// apply applies c on the leader, retrying while leadership moves.
func (c *cluster) apply(cmd Command) Result {
	var r Result
	testkit.Eventually(c.t, 10*time.Second, func() bool {
		var err error
		r, err = c.nodes[c.leader()].Apply(cmd)
		return err == nil
	}, "command applied")
	return r
}

// converge waits until every running node holds the leader's state.
func (c *cluster) converge() []Group {
	want := c.nodes[c.leader()].State()
	for i, n := range c.nodes {
		if n == nil {
			continue
		}
		testkit.Eventually(c.t, 10*time.Second, func() bool {
			return fmt.Sprint(n.State()) == fmt.Sprint(want)
		}, fmt.Sprintf("node %d converges", i))
	}
	return want
}

func register(group, addr string) Command {
	return Command{Kind: KindRegister, Group: group, Addr: addr}
}

func TestClusterFailoverAndCatchUp(t *testing.T) {
	c := newCluster(t, nil)
	first := c.leader()

	// A follower refuses to apply.
	_, err := c.nodes[(first+1)%3].Apply(register("g", "a:1"))
	require.ErrorIs(t, err, ErrNotLeader)

	r := c.apply(register("g", "a:1"))
	require.NoError(t, r.Err)
	require.Equal(t, int64(1), r.BrokerID)
	c.apply(register("g", "b:1"))
	r = c.apply(Command{Kind: KindElect, Group: "g", Alive: []Replica{{ID: 1, Offset: 10}, {ID: 2, Offset: 20}}})
	require.NoError(t, r.Err)
	require.Equal(t, int64(2), r.BrokerID)
	state := c.converge()
	require.Len(t, state, 1)
	require.Equal(t, int64(2), state[0].Master)
	require.Equal(t, int32(1), state[0].MasterEpoch)

	// The leader stops: the other two elect a new leader that has the state and applies.
	c.stop(first)
	second := c.leader()
	require.NotEqual(t, first, second)
	require.Equal(t, fmt.Sprint(state), fmt.Sprint(c.nodes[second].State()))
	r = c.apply(Command{Kind: KindElect, Group: "g", Alive: []Replica{{ID: 1, Offset: 10}}, Unclean: true})
	require.NoError(t, r.Err)
	require.Equal(t, int64(1), r.BrokerID)
	require.Equal(t, int32(2), r.Group.MasterEpoch)

	// The old leader restarts on its own data and catches up from the log.
	c.start(first, nil, nil)
	state = c.converge()
	require.Equal(t, int64(1), state[0].Master)
	require.Equal(t, int32(2), state[0].MasterEpoch)
}

func TestClusterCatchUpFromSnapshot(t *testing.T) {
	small := func(o *Options) {
		o.SnapshotThreshold = 4
		o.TrailingLogs = 2
	}
	c := newCluster(t, small)
	c.apply(register("g", "a:0"))
	c.converge()

	// A follower stops; the leader applies more than the trailing logs and compacts its
	// log behind a snapshot, so the follower can only catch up from the snapshot.
	lagging := (c.leader() + 1) % 3
	c.stop(lagging)
	for i := 1; i <= 20; i++ {
		r := c.apply(register("g", "a:"+strconv.Itoa(i)))
		require.NoError(t, r.Err)
	}
	leader := c.leader()
	require.NoError(t, c.nodes[leader].Snapshot())

	c.start(lagging, nil, small)
	state := c.converge()
	require.Len(t, state[0].Members, 21)
	// Raft records the installed snapshot after the state machine restored it, so the
	// state can converge a moment before the statistic moves.
	testkit.Eventually(t, 10*time.Second, func() bool {
		return c.nodes[lagging].raft.Stats()["last_snapshot_index"] != "0"
	}, "the follower installed a snapshot")

	// And the restarted node restores from its own snapshot when it restarts again.
	c.stop(lagging)
	c.start(lagging, nil, small)
	require.Equal(t, fmt.Sprint(state), fmt.Sprint(c.converge()))
}

func TestOptionsValidate(t *testing.T) {
	good := DefaultOptions()
	good.NodeID, good.RaftListen, good.DataDir = "a", "127.0.0.1:9000", t.TempDir()
	good.Peers = []string{"a@127.0.0.1:9000", "b@127.0.0.1:9001", "c@127.0.0.1:9002"}
	peers, err := good.Validate()
	require.NoError(t, err)
	require.Equal(t, Peer{ID: "b", Addr: "127.0.0.1:9001"}, peers[1])
	for name, edit := range map[string]func(*Options){
		"no id":       func(o *Options) { o.NodeID = "" },
		"id not peer": func(o *Options) { o.NodeID = "z" },
		"listen":      func(o *Options) { o.RaftListen = "nope" },
		"data dir":    func(o *Options) { o.DataDir = "" },
		"no peers":    func(o *Options) { o.Peers = nil },
		"peer form":   func(o *Options) { o.Peers = append(o.Peers, "127.0.0.1:9003") },
		"peer addr":   func(o *Options) { o.Peers = append(o.Peers, "d@nohost") },
		"dup id":      func(o *Options) { o.Peers = append(o.Peers, "a@127.0.0.1:9004") },
		"dup addr":    func(o *Options) { o.Peers = append(o.Peers, "d@127.0.0.1:9001") },
		"lease":       func(o *Options) { o.LeaderLeaseTimeout = 2 * o.HeartbeatTimeout },
		"apply":       func(o *Options) { o.ApplyTimeout = 0 },
		"snap thresh": func(o *Options) { o.SnapshotThreshold = 0 },
		"heartbeat":   func(o *Options) { o.HeartbeatTimeout = 0 },
	} {
		o := good
		o.Peers = append([]string(nil), good.Peers...)
		edit(&o)
		_, err := o.Validate()
		require.ErrorIs(t, err, ErrBadOptions, name)
		_, err = Open(o)
		require.ErrorIs(t, err, ErrBadOptions, name)
	}
}

// Closing the stream layer closes the connections it accepted: hashicorp/raft serves each
// in a goroutine that otherwise lives until the other node hangs up.
func TestStreamLayerClosesAcceptedConns(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := &streamLayer{ln: ln, advertise: ln.Addr()}
	client, err := s.Dial(raft.ServerAddress(ln.Addr().String()), 5*time.Second)
	require.NoError(t, err)
	defer client.Close()
	server, err := s.Accept()
	require.NoError(t, err)
	require.NoError(t, s.Close())
	// The deadline only turns a hang into a failure.
	require.NoError(t, client.SetReadDeadline(time.Now().Add(10*time.Second)))
	_, err = client.Read(make([]byte, 1))
	require.ErrorIs(t, err, io.EOF, "the accepted side was closed")
	_, err = s.Accept()
	require.Error(t, err)
	_ = server.Close() // already closed by the layer
}
