package failover

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/broker"
	"github.com/ferrymq/ferry/controller"
	"github.com/ferrymq/ferry/ha"
	"github.com/ferrymq/ferry/internal/mmap"
	"github.com/ferrymq/ferry/internal/testkit"
	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
)

// The agents of these tests run real brokers on real ports and directories; only the
// controllers are a fake (fakeController), which the tests drive.

const (
	testGroup = "broker-a"
	testTopic = "FailoverTopic"
	waitLong  = 20 * time.Second
)

func testLogger(t *testing.T) zerolog.Logger {
	if testing.Verbose() {
		return zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.InfoLevel)
	}
	return zerolog.Nop()
}

// testNode is one broker of the group: its directory and ports outlive its agents.
type testNode struct {
	t    *testing.T
	f    *fakeController
	dir  string
	addr string // broker port
	ha   string // HA port
	a    *Agent
}

func newNode(t *testing.T, f *fakeController) *testNode {
	return &testNode{t: t, f: f, dir: t.TempDir(), addr: testkit.FreeAddr(t), ha: testkit.FreeAddr(t)}
}

// options are the node's agent options: a small store, heartbeats every 20 ms.
func (n *testNode) options() Options {
	o := DefaultOptions()
	b := broker.DefaultOptions()
	b.BrokerName, b.AdvertisedAddr, b.HAListen = testGroup, n.addr, n.ha
	b.Store.Dir, b.Store.FS = n.dir, mmap.OSFS{}
	b.Store.SegmentSize = 1 << 20
	b.Logger = testLogger(n.t)
	b.TraceTopicEnable = false
	o.Broker = b
	o.Controller.Addrs = []string{"fake-controller:1"}
	o.HeartbeatInterval, o.RetryInterval = 20*time.Millisecond, 10*time.Millisecond
	o.Logger = testLogger(n.t)
	return o
}

// start starts an agent on the node (edit may change its options) and stops it at
// cleanup.
func (n *testNode) start(edit ...func(*Options)) *Agent {
	n.t.Helper()
	o := n.options()
	var err error
	o.Listener, err = net.Listen("tcp", n.addr)
	require.NoError(n.t, err)
	for _, e := range edit {
		e(&o)
	}
	a, err := newAgent(o, n.f.link())
	require.NoError(n.t, err)
	require.NoError(n.t, a.Start())
	n.a = a
	n.t.Cleanup(n.stop)
	return a
}

// stop stops the node's agent, if running.
func (n *testNode) stop() {
	if n.a != nil {
		require.NoError(n.t, n.a.Close())
		n.a = nil
	}
}

// serving waits until the node serves r's kind of role (master or slave) at epoch, ready.
func (n *testNode) serving(master bool, epoch int32) {
	n.t.Helper()
	testkit.Eventually(n.t, waitLong, func() bool {
		a := n.a
		a.mu.Lock()
		cur := a.mu.cur
		a.mu.Unlock()
		return cur != nil && cur.role.master == master && cur.role.epoch == epoch && a.Ready()
	}, fmt.Sprintf("%s serving (master %v, epoch %d)", n.addr, master, epoch))
}

// end is the node's commit-log end.
func (n *testNode) end() int64 {
	b := n.a.Broker()
	if b == nil {
		return -1
	}
	return b.Store().CommitLog().MaxOffset()
}

// holds waits until a pull of testTopic from the node returns exactly want (a slave
// dispatches what it copied asynchronously).
func (n *testNode) holds(rc *remoting.Client, want ...string) {
	n.t.Helper()
	var got []string
	if !testkit.Until(waitLong, 5*time.Millisecond, func() bool {
		got = bodies(n.t, rc, n.addr)
		return slices.Equal(got, want)
	}) {
		n.t.Fatalf("%s holds %q, want %q", n.addr, got, want)
	}
}

// epochs reads the node's epoch file.
func (n *testNode) epochs() []ha.EpochEntry {
	n.t.Helper()
	f, err := ha.OpenEpochFile(mmap.OSFS{}, n.dir)
	require.NoError(n.t, err)
	return f.Entries()
}

// newRemoting returns a remoting client closed at cleanup.
func newRemoting(t *testing.T) *remoting.Client {
	o := remoting.DefaultClientOptions()
	o.RequestTimeout = 5 * time.Second
	rc, err := remoting.NewClient(o)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, rc.Close()) })
	return rc
}

// send sends body to queue 0 of testTopic at addr and returns the answer's code. The
// send does not wait for storage: a master (a SYNC_MASTER) answers it once stored
// locally, slaves or not.
func send(t *testing.T, rc *remoting.Client, addr, body string) protocol.ResponseCode {
	t.Helper()
	props, err := message.EncodeProperties(map[string]string{message.PropertyWaitStoreMsgOK: "false"})
	require.NoError(t, err)
	h := protocol.SendMessageRequestHeaderV2{SendMessageRequestHeader: protocol.SendMessageRequestHeader{
		ProducerGroup: "FailoverPG", Topic: testTopic, DefaultTopic: protocol.AutoCreateTopicKey,
		DefaultTopicQueueNums: 1, BornTimestamp: time.Now().UnixMilli(), Properties: string(props)}}
	req := protocol.NewRequest(protocol.SendMessageV2, &h)
	req.Body = []byte(body)
	resp, err := rc.Invoke(context.Background(), addr, req)
	require.NoError(t, err)
	return protocol.ResponseCode(resp.Code)
}

// sendOK sends bodies to addr, each answered SEND_OK.
func sendOK(t *testing.T, rc *remoting.Client, addr string, bodies ...string) {
	t.Helper()
	for _, b := range bodies {
		require.Equal(t, protocol.Success, send(t, rc, addr, b), "send %q to %s", b, addr)
	}
}

// bodies pulls queue 0 of testTopic at addr and returns the bodies in order.
func bodies(t *testing.T, rc *remoting.Client, addr string) []string {
	t.Helper()
	return bodiesOf(t, rc, addr, 0)
}

// bodiesOf pulls queue q of testTopic at addr and returns the bodies in order.
func bodiesOf(t *testing.T, rc *remoting.Client, addr string, q int32) []string {
	t.Helper()
	var out []string
	for off := int64(0); ; {
		req := protocol.NewRequest(protocol.PullMessage, &protocol.PullMessageRequestHeader{
			ConsumerGroup: "FailoverCG", Topic: testTopic, QueueID: q, QueueOffset: off, MaxMsgNums: 256,
			SysFlag: protocol.PullFlagSubscription, Subscription: "*"})
		resp, err := rc.Invoke(context.Background(), addr, req)
		require.NoError(t, err)
		if resp.Code != int16(protocol.Success) {
			return out
		}
		for b := resp.Body; len(b) > 0; {
			var rec message.Record
			n, err := rec.Decode(b)
			require.NoError(t, err)
			out = append(out, string(rec.Body))
			off = rec.QueueOffset + 1
			b = b[n:]
		}
	}
}

func TestFirstBrokerBecomesMasterAndKeepsItsID(t *testing.T) {
	f := newFakeController(testGroup)
	n := newNode(t, f)
	n.start()
	n.serving(true, 1)
	require.Equal(t, int64(1), n.a.BrokerID())
	require.Equal(t, []ha.EpochEntry{{Epoch: 1, StartOffset: 0}}, n.epochs(), "the first epoch starts at the empty log's end")
	id, err := loadIdentity(mmap.OSFS{}, n.dir, testGroup)
	require.NoError(t, err)
	require.Equal(t, int64(1), id, "the assigned id is kept in the store directory")
	rc := newRemoting(t)
	sendOK(t, rc, n.addr, "m0", "m1")
	end := n.end()

	n.stop()
	n.start()
	n.serving(true, 1)
	regs := f.registrations()
	require.Len(t, regs, 2)
	require.Equal(t, controller.NoBroker, regs[0].BrokerID, "a new broker asks for an id")
	require.Equal(t, int64(1), regs[1].BrokerID, "a restarted one registers under its kept id")
	require.Equal(t, end, regs[1].MaxOffset, "and reports where its log ends")
	require.Equal(t, int32(1), regs[1].Epoch)
	require.Equal(t, []ha.EpochEntry{{Epoch: 1, StartOffset: 0}}, n.epochs(), "the same epoch is not recorded twice")
	require.Equal(t, []string{"m0", "m1"}, bodies(t, rc, n.addr))
}

func TestUnknownKeptIDFails(t *testing.T) {
	f := newFakeController(testGroup)
	n := newNode(t, f)
	require.NoError(t, storeIdentity(mmap.OSFS{}, n.dir, testGroup, 9))
	a := n.start()
	select {
	case <-a.Failed():
	case <-time.After(waitLong):
		t.Fatal("the agent did not give up")
	}
	require.ErrorIs(t, a.ServeErr(), controller.ErrUnknownBroker)
	require.False(t, a.Ready())
	require.Contains(t, a.Missing()[0], identityName, "the readiness answer names the file to remove")
}

func TestSlaveReplicatesThenTakesOverOnTheSamePort(t *testing.T) {
	f := newFakeController(testGroup)
	n1, n2 := newNode(t, f), newNode(t, f)
	n1.start()
	n1.serving(true, 1)
	n2.start()
	n2.serving(false, 1)
	require.Equal(t, int64(2), n2.a.BrokerID())
	rc := newRemoting(t)
	sendOK(t, rc, n1.addr, "a0", "a1", "a2")
	require.NotEqual(t, protocol.Success, send(t, rc, n2.addr, "refused"), "a slave takes no writes")
	testkit.Eventually(t, waitLong, func() bool { return n2.end() == n1.end() }, "the slave caught up")
	x := n1.end()

	f.elect(2) // a planned switchover: both brokers hear of it
	n2.serving(true, 2)
	n1.serving(false, 2)
	want := []ha.EpochEntry{{Epoch: 1, StartOffset: 0}, {Epoch: 2, StartOffset: x}}
	require.Equal(t, want, n2.epochs(), "the new master's epoch starts at its log's end")
	require.Equal(t, want, n1.epochs(), "the slave adopted its master's history")
	sendOK(t, rc, n2.addr, "b0", "b1")
	require.NotEqual(t, protocol.Success, send(t, rc, n1.addr, "refused"), "the old master is a slave now")
	n1.holds(rc, "a0", "a1", "a2", "b0", "b1")
}

func TestIsolatedMasterIsTruncatedWhenItRejoins(t *testing.T) {
	f := newFakeController(testGroup)
	n1, n2 := newNode(t, f), newNode(t, f)
	n1.start()
	n1.serving(true, 1)
	n2.start()
	n2.serving(false, 1)
	rc := newRemoting(t)
	sendOK(t, rc, n1.addr, "a0", "a1")
	testkit.Eventually(t, waitLong, func() bool { return n2.end() == n1.end() }, "the slave caught up")
	x := n1.end()

	// The master loses the controllers; they elect the slave. The old master goes on
	// serving and stores writes the group will not keep (sends that do not wait for a
	// slave are acknowledged: allAckInSyncStateSet is off).
	f.setCut(1, true)
	f.elect(2)
	n2.serving(true, 2)
	sendOK(t, rc, n1.addr, "lost0", "lost1", "lost2")
	require.Greater(t, n1.end(), x)
	sendOK(t, rc, n2.addr, "b0")

	f.setCut(1, false)
	n1.serving(false, 2)
	require.Equal(t, []ha.EpochEntry{{Epoch: 1, StartOffset: 0}, {Epoch: 2, StartOffset: x}}, n1.epochs())
	n1.holds(rc, "a0", "a1", "b0") // what it wrote alone is gone
	require.Equal(t, n2.end(), n1.end())
	require.Equal(t, []string{"a0", "a1", "b0"}, bodies(t, rc, n2.addr))
}

func TestControllersUnreachableKeepTheRole(t *testing.T) {
	f := newFakeController(testGroup)
	n := newNode(t, f)
	n.start()
	n.serving(true, 1)
	f.setCut(1, true)
	before := f.heartbeatsOf(1)
	rc := newRemoting(t)
	sendOK(t, rc, n.addr, "while-cut")
	require.True(t, n.a.Ready(), "a master that cannot reach the controllers goes on serving")
	f.setCut(1, false)
	testkit.Eventually(t, waitLong, func() bool { return f.heartbeatsOf(1) > before }, "heartbeats again")
	n.serving(true, 1)
}

func TestFencedBrokerAsksTheControllersAtOnce(t *testing.T) {
	f := newFakeController(testGroup)
	n := newNode(t, f)
	n.start(func(o *Options) { o.HeartbeatInterval = time.Hour })
	n.serving(true, 1)
	before := f.heartbeatsOf(1)
	n.a.fenced(errors.New("a slave showed a newer epoch"))
	testkit.Eventually(t, waitLong, func() bool { return f.heartbeatsOf(1) == before+1 }, "a heartbeat")
}

func TestKeeperChangesTheSetThroughTheControllers(t *testing.T) {
	f := newFakeController(testGroup)
	n := newNode(t, f)
	n.start(func(o *Options) { o.HeartbeatInterval = time.Hour })
	n.serving(true, 1)
	k := &keeper{a: n.a, masterEpoch: 1}
	set, epoch := k.Current()
	require.Equal(t, []int64{1}, set)
	require.Equal(t, int32(1), epoch)
	set, epoch, err := k.Alter(context.Background(), []int64{1, 2})
	require.NoError(t, err)
	require.Equal(t, []int64{1, 2}, set)
	require.Equal(t, int32(2), epoch)
	set, epoch = k.Current()
	require.Equal(t, []int64{1, 2}, set, "the set in force is the one the controllers answered")
	require.Equal(t, int32(2), epoch)

	before := f.heartbeatsOf(1)
	stale := &keeper{a: n.a, masterEpoch: 0}
	_, _, err = stale.Alter(context.Background(), []int64{1})
	require.ErrorIs(t, err, controller.ErrStaleEpoch)
	testkit.Eventually(t, waitLong, func() bool { return f.heartbeatsOf(1) > before }, "a refusal makes the agent ask")
}

func TestReportedHAAddr(t *testing.T) {
	for _, c := range []struct {
		advertised, haAddr, haListen, want string
	}{
		{"10.0.0.1:10911", "", "", "10.0.0.1:10912"},
		{"10.0.0.1:10911", "", "0.0.0.0:20000", "10.0.0.1:20000"},
		{"10.0.0.1:10911", "", ":20000", "10.0.0.1:20000"},
		{"10.0.0.1:10911", "", "10.0.0.2:20000", "10.0.0.2:20000"},
		{"10.0.0.1:10911", "ha.example:1", "0.0.0.0:20000", "ha.example:1"},
		{"10.0.0.1:10911", "", "127.0.0.1:0", ""},
	} {
		o := broker.DefaultOptions()
		o.AdvertisedAddr, o.HAAddr, o.HAListen = c.advertised, c.haAddr, c.haListen
		require.Equal(t, c.want, reportedHAAddr(&o), "%+v", c)
	}
}

func TestEpochAt(t *testing.T) {
	h := []ha.EpochEntry{{Epoch: 1, StartOffset: 0}, {Epoch: 3, StartOffset: 100}, {Epoch: 4, StartOffset: 250}}
	for end, want := range map[int64]int32{0: 1, 99: 1, 100: 3, 249: 3, 250: 4, 900: 4} {
		require.Equal(t, want, epochAt(h, end), "end %d", end)
	}
	require.Zero(t, epochAt(nil, 10))
}

func TestLogWithoutHistoryIsCopiedAgain(t *testing.T) {
	rc := newRemoting(t)
	// n2's store gets a log of its own first (under other controllers), then loses its
	// epoch history and id: a store from before controller mode.
	other := newFakeController(testGroup)
	f := newFakeController(testGroup)
	n1, n2 := newNode(t, f), newNode(t, other)
	n2.start()
	n2.serving(true, 1)
	sendOK(t, rc, n2.addr, "x0", "x1", "x2", "x3")
	n2.stop()
	require.NoError(t, os.Remove(filepath.Join(n2.dir, ha.EpochFileName)))
	require.NoError(t, os.Remove(filepath.Join(n2.dir, identityName)))

	n1.start()
	n1.serving(true, 1)
	sendOK(t, rc, n1.addr, "a0")
	n2.f = f
	n2.start()
	n2.serving(false, 1)
	n2.holds(rc, "a0")
	require.Equal(t, n1.end(), n2.end(), "nothing of its own log is left")
	require.Equal(t, n1.epochs(), n2.epochs())
}
