package failover

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/ha"
	"github.com/ferrymq/ferry/internal/testkit"
	"github.com/ferrymq/ferry/store"
)

// Restarts of a master and planned stops, with real controllers (cluster_test.go).

// allAck makes a master acknowledge a send once every member of its SyncStateSet has it.
func allAck(o *Options) { o.Broker.AllAckInSyncStateSet = true }

// startGroup starts nodes on the controllers and the name server, the first one alone
// until it serves as the master of epoch 1, then the others; it waits until every node
// is in the SyncStateSet.
func startGroup(t *testing.T, ctl *controllers, ns string, nodes []*testNode, first []func(*Options), rest ...func(*Options)) {
	t.Helper()
	nodes[0].startReal(ctl.addrs, ns, first...)
	nodes[0].serving(true, 1)
	for _, n := range nodes[1:] {
		n.startReal(ctl.addrs, ns, rest...)
	}
	require.Equal(t, 0, groupSettles(t, nodes, 1))
	inSync(t, ctl.client(t), nodes)
}

// caughtUp waits until every node's log ends where the first node's does, and returns
// that end.
func caughtUp(t *testing.T, master *testNode, nodes ...*testNode) int64 {
	t.Helper()
	end := master.end()
	for _, n := range nodes {
		testkit.Eventually(t, waitLong, func() bool { return n.end() == end }, n.addr+" caught up")
	}
	return end
}

// truncateOffline cuts the stopped node's log at offset, as a machine crash that lost
// what was not flushed past it would.
func (n *testNode) truncateOffline(offset int64) {
	n.t.Helper()
	require.Nil(n.t, n.a, "the node is stopped")
	o := n.options()
	so, err := storeOptions(&o.Broker)
	require.NoError(n.t, err)
	require.NoError(n.t, store.Truncate(so, offset))
}

// commitLog returns the first end bytes of the stopped node's commit log (its segment
// files in order).
func (n *testNode) commitLog(end int64) []byte {
	n.t.Helper()
	require.Nil(n.t, n.a, "the node is stopped")
	dir := filepath.Join(n.dir, store.CommitLogDirName)
	ents, err := os.ReadDir(dir)
	require.NoError(n.t, err)
	var all []byte
	for _, e := range ents { // named by start offset, zero-padded: sorted
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(n.t, err)
		all = append(all, b...)
	}
	require.GreaterOrEqual(n.t, int64(len(all)), end)
	return all[:end]
}

// sameLogs stops every node and checks that their commit logs hold the same end bytes.
func sameLogs(t *testing.T, end int64, nodes ...*testNode) {
	t.Helper()
	for _, n := range nodes {
		n.stop()
	}
	want := nodes[0].commitLog(end)
	for _, n := range nodes[1:] {
		require.True(t, bytes.Equal(want, n.commitLog(end)), "%s's commit log differs from %s's", n.addr, nodes[0].addr)
	}
}

// A master whose process restarts well within the controllers' heartbeat timeout (a
// crash-like stop: no handover) comes back under a new epoch: the controllers elect it
// again (its log is as long as its slaves') although it never stopped looking alive.
// Every replica's epoch file shows the new epoch, starting where the log ended.
func TestClusterRestartedMasterServesANewEpoch(t *testing.T) {
	ctl := startControllers(t, 5*time.Second)
	ns := startNameServer(t)
	nodes := []*testNode{newNode(t, nil), newNode(t, nil), newNode(t, nil)}
	startGroup(t, ctl, ns, nodes, []func(*Options){allAck}, allAck)
	p := newProducer(t, ns)
	p.sendOK(20)
	x := caughtUp(t, nodes[0], nodes[1:]...)

	nodes[0].stop()
	nodes[0].startReal(ctl.addrs, ns, allAck)
	m := groupSettles(t, nodes, 2)
	// Had its heartbeat lapsed, the controllers would have elected one of the others:
	// a lapsed master is no candidate.
	require.Equal(t, 0, m, "the restarted master is elected again")
	v, err := ctl.client(t).Group(context.Background(), testGroup)
	require.NoError(t, err)
	require.Equal(t, int32(2), v.MasterEpoch)
	want := []ha.EpochEntry{{Epoch: 1, StartOffset: 0}, {Epoch: 2, StartOffset: x}}
	for _, n := range nodes {
		require.Equal(t, want, n.epochs(), "%s's epoch file", n.addr)
	}
	testkit.Eventually(t, waitLong, p.send, "a send after the restart")
	p.sendOK(10)
	for _, n := range nodes {
		p.allReadable(n)
	}
}

// The master's machine crashes and loses its log's unflushed tail (the test cuts its
// stopped store), which its in-sync slaves hold; it restarts within the heartbeat
// timeout. The controllers compare the restarted master's log with what the slaves hold
// now: a slave is elected, the old master rejoins as its slave and copies the tail
// again. Nothing acknowledged is lost, and the replicas end byte-identical.
func TestClusterMasterLosingItsTailIsReplacedByASlaveHoldingMore(t *testing.T) {
	ctl := startControllers(t, 5*time.Second)
	ns := startNameServer(t)
	nodes := []*testNode{newNode(t, nil), newNode(t, nil), newNode(t, nil)}
	startGroup(t, ctl, ns, nodes, []func(*Options){allAck}, allAck)
	p := newProducer(t, ns)
	p.sendOK(10)
	x := caughtUp(t, nodes[0], nodes[1:]...)
	p.sendOK(10)
	full := caughtUp(t, nodes[0], nodes[1:]...)
	require.Greater(t, full, x)

	nodes[0].stop()
	nodes[0].truncateOffline(x)
	nodes[0].startReal(ctl.addrs, ns, allAck)
	m := groupSettles(t, nodes, 2)
	require.NotEqual(t, 0, m, "a slave holding more is elected")
	want := []ha.EpochEntry{{Epoch: 1, StartOffset: 0}, {Epoch: 2, StartOffset: full}}
	require.Equal(t, want, nodes[m].epochs())
	testkit.Eventually(t, waitLong, p.send, "a send after the failover")
	p.sendOK(10)
	end := caughtUp(t, nodes[m], nodes...)
	for _, n := range nodes {
		p.allReadable(n)
		require.Equal(t, want, n.epochs(), "%s's epoch file", n.addr)
	}
	sameLogs(t, end, nodes...)
}

// The master's machine crashes and loses its log's tail while its only slave, which
// holds that tail, is down too: the restarted master is elected again (the slave
// lapsed) at a new epoch starting at its shorter log's end, and writes new messages
// there. The slave, back, holds bytes of the old epoch past the new epoch's start: it
// is cut back to that start before it replicates, and the two logs end byte-identical.
// (The lost tail's messages are lost: two failures at once.)
func TestClusterSlaveAheadOfARestartedMasterIsTruncated(t *testing.T) {
	ctl := startControllers(t, 2*time.Second)
	ns := startNameServer(t)
	nodes := []*testNode{newNode(t, nil), newNode(t, nil)}
	startGroup(t, ctl, ns, nodes, nil)
	rc := newRemoting(t)
	sendOK(t, rc, nodes[0].addr, "a0", "a1")
	x := caughtUp(t, nodes[0], nodes[1])
	sendOK(t, rc, nodes[0].addr, "lost0", "lost1", "lost2")
	full := caughtUp(t, nodes[0], nodes[1])

	nodes[1].stop()
	nodes[0].stop()
	nodes[0].truncateOffline(x)
	nodes[0].startReal(ctl.addrs, ns)
	nodes[0].serving(true, 2)
	want := []ha.EpochEntry{{Epoch: 1, StartOffset: 0}, {Epoch: 2, StartOffset: x}}
	require.Equal(t, want, nodes[0].epochs())
	sendOK(t, rc, nodes[0].addr, "b0") // at offset x, where the slave holds "lost0"

	nodes[1].startReal(ctl.addrs, ns)
	nodes[1].serving(false, 2)
	require.Equal(t, want, nodes[1].epochs())
	end := caughtUp(t, nodes[0], nodes[1])
	require.Less(t, end, full, "the slave's old tail is gone")
	for _, n := range nodes {
		n.holds(rc, "a0", "a1", "b0")
	}
	sameLogs(t, end, nodes...)
}

// A planned stop (SIGTERM: Agent.Shutdown) of a master under a Ferry producer's load
// hands over: by the time the old agent returns, the controllers have elected an in-sync
// slave and it serves the new epoch; sends resume while the controllers still see the
// old master alive — before its heartbeat could have lapsed, which is when they would
// otherwise have replaced it. Nothing acknowledged is lost.
func TestClusterGracefulStopHandsOverUnderLoad(t *testing.T) {
	ctl := startControllers(t, 5*time.Second)
	ns := startNameServer(t)
	nodes := []*testNode{newNode(t, nil), newNode(t, nil), newNode(t, nil)}
	handover := func(o *Options) { o.HandoverTimeout = 5 * time.Second }
	startGroup(t, ctl, ns, nodes, []func(*Options){allAck, handover}, allAck)
	cl := ctl.client(t)
	old := nodes[0].a.BrokerID()
	p := newProducer(t, ns)

	var wg sync.WaitGroup
	done := make(chan struct{})
	var stopOnce sync.Once
	stopLoad := func() {
		stopOnce.Do(func() {
			close(done)
			wg.Wait()
		})
	}
	t.Cleanup(stopLoad)
	for range 2 {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				p.send()
			}
		})
	}
	testkit.Eventually(t, waitLong, func() bool { return p.ackedCount() >= 50 }, "sends under way")

	before, err := cl.Status(context.Background())
	require.NoError(t, err)
	nodes[0].stop()
	v, err := cl.Group(context.Background(), testGroup)
	require.NoError(t, err)
	require.NotEqual(t, old, v.Master, "another master elected before the old agent returned")
	require.Equal(t, int32(2), v.MasterEpoch)
	m := slices.IndexFunc(nodes, func(n *testNode) bool { return n.a != nil && n.a.BrokerID() == v.Master })
	require.GreaterOrEqual(t, m, 1)
	hist := servedEpochs(t, newRemoting(t), nodes[m].addr)
	require.Equal(t, int32(2), hist[len(hist)-1].Epoch, "the new master served before the old agent returned")

	acked := p.ackedCount()
	testkit.Eventually(t, waitLong, func() bool { return p.ackedCount() > acked }, "sends resume")
	// The leader's liveness table, if the same leader still leads (a new one starts
	// with an empty table), still has the old master alive.
	after, err := cl.Status(context.Background())
	require.NoError(t, err)
	if after.NodeID == before.NodeID && after.Term == before.Term && after.State == "Leader" {
		gone, ok := after.Groups[0].Member(old)
		require.True(t, ok)
		require.True(t, gone.Alive, "sends resumed before the old master's heartbeat lapsed")
	} else {
		t.Logf("the controllers' leader changed (%s term %d → %s term %d): liveness not compared",
			before.NodeID, before.Term, after.NodeID, after.Term)
	}
	stopLoad()

	p.sendOK(5)
	// The old master, started again, rejoins as a slave of the new one.
	nodes[0].startReal(ctl.addrs, ns, allAck)
	require.Equal(t, m, groupSettles(t, nodes, 2))
	for _, n := range nodes {
		p.allReadable(n)
	}
}
