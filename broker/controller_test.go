package broker_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/broker"
	"github.com/ferrymq/ferry/internal/mmap"
	"github.com/ferrymq/ferry/internal/testkit"
	"github.com/ferrymq/ferry/nameserver"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
)

// errUnreachable is the fake controller's answer while it is cut off.
var errUnreachable = errors.New("fake controller: unreachable")

// fakeKeeper is a SyncStateSetKeeper with the controller's rules for one group: it
// answers only the master it is bound to (master id and epoch, while the epoch is the
// group's current one), and the set must hold that master and only known brokers.
type fakeKeeper struct {
	mu       sync.Mutex
	master   int64
	epoch    int32 // the epoch the keeper's master serves
	current  int32 // the group's current master epoch (an election raises it)
	members  []int64
	set      []int64
	setEpoch int32
	down     bool // the controller is unreachable
	alters   []string
	failed   int // Alter calls refused or unanswered
}

func newFakeKeeper(master int64, epoch int32, members ...int64) *fakeKeeper {
	return &fakeKeeper{master: master, epoch: epoch, current: epoch, members: members, set: []int64{master}, setEpoch: 1}
}

func (k *fakeKeeper) Current() ([]int64, int32) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Clone(k.set), k.setEpoch
}

func (k *fakeKeeper) Alter(_ context.Context, set []int64) ([]int64, int32, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.alters = append(k.alters, fmt.Sprint(set))
	var err error
	switch {
	case k.down:
		err = errUnreachable
	case k.epoch != k.current:
		err = fmt.Errorf("stale master epoch %d, current %d", k.epoch, k.current)
	case !slices.Contains(set, k.master):
		err = fmt.Errorf("set %v without its master %d", set, k.master)
	}
	for _, id := range set {
		if err == nil && !slices.Contains(k.members, id) {
			err = fmt.Errorf("unknown broker %d", id)
		}
	}
	if err != nil {
		k.failed++
		return nil, 0, err
	}
	k.set = slices.Sorted(slices.Values(set))
	k.setEpoch++
	return slices.Clone(k.set), k.setEpoch, nil
}

func (k *fakeKeeper) setDown(down bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.down = down
}

func (k *fakeKeeper) failures() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.failed
}

// hasSet reports whether the set in force is want.
func (k *fakeKeeper) hasSet(want ...int64) bool {
	set, _ := k.Current()
	return slices.Equal(set, want)
}

// fences records OnFenced calls.
type fences struct {
	mu      sync.Mutex
	reasons []error
}

func (f *fences) record(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reasons = append(f.reasons, err)
}

func (f *fences) get() []error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.reasons)
}

// ctlOptions is a broker of broker-a in controller mode on its own data directory, not
// registered anywhere, with short timings.
func ctlOptions(t testing.TB, epoch int32) broker.Options {
	t.Helper()
	o := broker.DefaultOptions()
	o.Store.Dir, o.Store.FS, o.Store.SegmentSize = t.TempDir(), mmap.OSFS{}, 8<<20
	o.ControllerMode, o.MasterEpoch = true, epoch
	o.HASlaveTimeout, o.HAMaxTimeSlaveNotCatchup = 800*time.Millisecond, time.Second
	o.SlaveSyncInterval = time.Hour // the metadata sync is not under test
	return o
}

// ctlMaster is a SYNC_MASTER in controller mode with assigned id 1 and keeper k.
func ctlMaster(t testing.TB, epoch int32, k broker.SyncStateSetKeeper) broker.Options {
	t.Helper()
	o := ctlOptions(t, epoch)
	o.Role, o.BrokerID, o.AssignedID, o.SyncStateSet = broker.RoleSyncMaster, 0, 1, k
	o.AllAckInSyncStateSet = true
	o.HAListen = "127.0.0.1:0"
	return o
}

// ctlSlave is a slave in controller mode with id, replicating from haMaster.
func ctlSlave(t testing.TB, epoch int32, id int64, haMaster string) broker.Options {
	t.Helper()
	o := ctlOptions(t, epoch)
	o.Role, o.BrokerID, o.HAMasterAddr = broker.RoleSlave, id, haMaster
	return o
}

// runBroker starts a broker with o on addr ("": a free port, else the same port again
// once free) and shuts it down at cleanup unless stop was called; it returns the broker,
// its address, and stop.
func runBroker(t testing.TB, o broker.Options, addr string) (*broker.Broker, string, func()) {
	t.Helper()
	var ln net.Listener
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	testkit.Eventually(t, 10*time.Second, func() bool {
		var err error
		ln, err = net.Listen("tcp", addr)
		return err == nil
	}, "broker address free")
	o.AdvertisedAddr = ln.Addr().String()
	b, err := broker.New(o)
	require.NoError(t, err)
	require.NoError(t, b.Start(ln))
	stop := sync.OnceFunc(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, b.Shutdown(ctx))
	})
	t.Cleanup(stop)
	return b, o.AdvertisedAddr, stop
}

// requireQueued waits until queue 0 of topic holds n messages (dispatch is
// asynchronous) and checks it holds no more.
func requireQueued(t *testing.T, b *broker.Broker, topic string, n int64) {
	t.Helper()
	testkit.Eventually(t, 10*time.Second, func() bool { return b.Store().MaxOffset(topic, 0) >= n },
		fmt.Sprintf("%d messages of %s stored", n, topic))
	require.Equal(t, n, b.Store().MaxOffset(topic, 0), topic)
}

func newRemoting(t testing.TB) *remoting.Client {
	t.Helper()
	rc, err := remoting.NewClient(remoting.DefaultClientOptions())
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, rc.Close()) })
	return rc
}

// A master and two slaves in controller mode: the SyncStateSet grows as the slaves catch
// up; with allAckInSyncStateSet a send is acknowledged only once both slaves have it;
// a slave killed and away longer than haMaxTimeSlaveNotCatchup is dropped (sends
// waiting for it meanwhile are not acknowledged), and comes back into the set when it
// returns.
func TestSyncStateSetFollowsTheSlaves(t *testing.T) {
	k := newFakeKeeper(1, 3, 1, 2, 3)
	m, maddr, _ := runBroker(t, ctlMaster(t, 3, k), "")
	rc := newRemoting(t)
	resp := sendRaw(t, rc, maddr, "CtlTopic", []byte("alone"), true)
	require.Equal(t, int16(protocol.Success), resp.Code, "the set is the master alone: %s", resp.Remark)

	s2, _, _ := runBroker(t, ctlSlave(t, 3, 2, m.HAAddr()), "")
	s3o := ctlSlave(t, 3, 3, m.HAAddr())
	s3, s3addr, stop3 := runBroker(t, s3o, "")
	testkit.Eventually(t, 10*time.Second, func() bool { return k.hasSet(1, 2, 3) }, "both slaves in the set")
	info := kv(t, rc, maddr, protocol.GetBrokerRuntimeInfo)
	require.Equal(t, "1,2,3", info["ferrySyncStateSet"])
	require.Equal(t, "3", info["ferryMasterEpoch"])

	for i := range 5 {
		resp := sendRaw(t, rc, maddr, "CtlTopic", fmt.Appendf(nil, "all-%d", i), true)
		require.Equal(t, int16(protocol.Success), resp.Code, resp.Remark)
		end := m.Store().CommitLog().MaxOffset()
		require.GreaterOrEqual(t, s2.Store().CommitLog().MaxOffset(), end, "slave 2 has the message when the send returns")
		require.GreaterOrEqual(t, s3.Store().CommitLog().MaxOffset(), end, "slave 3 has the message when the send returns")
	}

	// The controller holds the set while slave 3 is away (so the send below cannot race
	// the shrink however slowly this machine runs), then lets the master drop it.
	k.setDown(true)
	stop3()
	resp = sendRaw(t, rc, maddr, "CtlTopic", []byte("slave 3 away"), true)
	require.Equal(t, int16(protocol.FlushSlaveTimeout), resp.Code, "a member is missing: %s", resp.Remark)
	k.setDown(false)
	testkit.Eventually(t, 10*time.Second, func() bool { return k.hasSet(1, 2) }, "slave 3 dropped")
	resp = sendRaw(t, rc, maddr, "CtlTopic", []byte("without slave 3"), true)
	require.Equal(t, int16(protocol.Success), resp.Code, resp.Remark)

	runBroker(t, s3o, s3addr) // the same broker back, on its data directory and port
	testkit.Eventually(t, 10*time.Second, func() bool { return k.hasSet(1, 2, 3) }, "slave 3 back in the set")
	resp = sendRaw(t, rc, maddr, "CtlTopic", []byte("all again"), true)
	require.Equal(t, int16(protocol.Success), resp.Code, resp.Remark)
}

// minInSyncReplicas: while the set is smaller, a send that waits is answered
// SLAVE_NOT_AVAILABLE at once and the message is kept; one that does not wait is
// acknowledged; once a slave joins, sends are acknowledged.
func TestMinInSyncReplicasRefusesSendOK(t *testing.T) {
	k := newFakeKeeper(1, 1, 1, 2)
	o := ctlMaster(t, 1, k)
	o.MinInSyncReplicas = 2
	m, maddr, _ := runBroker(t, o, "")
	rc := newRemoting(t)
	resp := sendRaw(t, rc, maddr, "MinTopic", []byte("too few"), true)
	require.Equal(t, int16(protocol.SlaveNotAvailable), resp.Code, resp.Remark)
	requireQueued(t, m, "MinTopic", 1)
	resp = sendRaw(t, rc, maddr, "MinTopic", []byte("no wait"), false)
	require.Equal(t, int16(protocol.Success), resp.Code, resp.Remark)

	runBroker(t, ctlSlave(t, 1, 2, m.HAAddr()), "")
	testkit.Eventually(t, 10*time.Second, func() bool { return k.hasSet(1, 2) }, "the slave in the set")
	resp = sendRaw(t, rc, maddr, "MinTopic", []byte("enough"), true)
	require.Equal(t, int16(protocol.Success), resp.Code, resp.Remark)
	requireQueued(t, m, "MinTopic", 3)
}

// A master that loses the controller but keeps its slaves goes on acknowledging; cut off
// from its slaves as well, it acknowledges nothing: it cannot drop them from the set
// without the controller, so every send waits for them and times out (the messages are
// kept). Once the controller answers again, the set shrinks and sends are acknowledged.
func TestIsolatedMasterAcknowledgesNothing(t *testing.T) {
	k := newFakeKeeper(1, 1, 1, 2, 3)
	m, maddr, _ := runBroker(t, ctlMaster(t, 1, k), "")
	px2, px3 := testkit.StartProxy(t, m.HAAddr()), testkit.StartProxy(t, m.HAAddr())
	runBroker(t, ctlSlave(t, 1, 2, px2.Addr()), "")
	runBroker(t, ctlSlave(t, 1, 3, px3.Addr()), "")
	testkit.Eventually(t, 10*time.Second, func() bool { return k.hasSet(1, 2, 3) }, "both slaves in the set")
	rc := newRemoting(t)

	k.setDown(true)
	for i := range 3 {
		resp := sendRaw(t, rc, maddr, "IsoTopic", fmt.Appendf(nil, "controller lost %d", i), true)
		require.Equal(t, int16(protocol.Success), resp.Code, "the slaves still acknowledge: %s", resp.Remark)
	}

	px2.SetFrozen(true)
	px3.SetFrozen(true)
	sent := int64(3)
	// Until the master has asked the controller to drop both slaves (after
	// haMaxTimeSlaveNotCatchup) several times and been refused, nothing is acknowledged.
	for i := 0; k.failures() < 3; i++ {
		require.Less(t, i, 100, "the master did not try to drop its slaves")
		resp := sendRaw(t, rc, maddr, "IsoTopic", fmt.Appendf(nil, "isolated %d", i), true)
		require.Equal(t, int16(protocol.FlushSlaveTimeout), resp.Code, "send %d acknowledged by an isolated master: %s", i, resp.Remark)
		sent++
		requireQueued(t, m, "IsoTopic", sent)
	}
	require.True(t, k.hasSet(1, 2, 3), "the set did not change without the controller")
	require.Equal(t, "1,2,3", kv(t, rc, maddr, protocol.GetBrokerRuntimeInfo)["ferrySyncStateSet"])

	k.setDown(false)
	testkit.Eventually(t, 10*time.Second, func() bool { return k.hasSet(1) }, "the controller drops the slaves")
	resp := sendRaw(t, rc, maddr, "IsoTopic", []byte("alone, with the controller's consent"), true)
	require.Equal(t, int16(protocol.Success), resp.Code, resp.Remark)
}

// A slave of a newer epoch is refused and tells the master it is stale (OnFenced); a
// slave of an older epoch is refused too (it must check its log first), without fencing
// the master; neither gets a byte of the log.
func TestSlaveEpochMismatchIsRefused(t *testing.T) {
	k := newFakeKeeper(1, 2, 1, 2, 3)
	var f fences
	o := ctlMaster(t, 2, k)
	o.OnFenced = f.record
	m, maddr, _ := runBroker(t, o, "")
	rc := newRemoting(t)
	resp := sendRaw(t, rc, maddr, "EpochTopic", []byte("x"), true)
	require.Equal(t, int16(protocol.Success), resp.Code, resp.Remark)

	older, olderAddr, _ := runBroker(t, ctlSlave(t, 1, 2, m.HAAddr()), "")
	newer, newerAddr, _ := runBroker(t, ctlSlave(t, 3, 3, m.HAAddr()), "")
	testkit.Eventually(t, 10*time.Second, func() bool { return len(f.get()) > 0 }, "the master fenced")
	for _, err := range f.get() {
		require.ErrorIs(t, err, broker.ErrFenced)
		require.Contains(t, err.Error(), "slave 3 serves master epoch 3")
	}
	for _, addr := range []string{olderAddr, newerAddr} {
		info := kv(t, rc, addr, protocol.GetBrokerRuntimeInfo)
		require.Contains(t, info["ferryHaLastError"], "closed at once", addr)
	}
	require.Zero(t, older.Store().CommitLog().MaxOffset())
	require.Zero(t, newer.Store().CommitLog().MaxOffset())
	require.True(t, k.hasSet(1))
	require.Equal(t, "0", kv(t, rc, maddr, protocol.GetBrokerRuntimeInfo)["ferryHaSlaves"])
}

// epochs is a fixed epoch history.
type epochs []broker.EpochEntry

func (e epochs) Entries() []broker.EpochEntry { return e }

// GET_BROKER_EPOCH_CACHE answers the broker's epoch history with each entry's end and
// the log's end, under its assigned id; without a history the list is empty.
func TestEpochCache(t *testing.T) {
	k := newFakeKeeper(1, 3, 1)
	o := ctlMaster(t, 3, k)
	m, maddr, _ := runBroker(t, o, "")
	rc := newRemoting(t)
	for i := range 3 {
		resp := sendRaw(t, rc, maddr, "CacheTopic", fmt.Appendf(nil, "m%d", i), true)
		require.Equal(t, int16(protocol.Success), resp.Code, resp.Remark)
	}
	end := m.Store().CommitLog().MaxOffset()
	c, err := broker.FetchEpochCache(context.Background(), rc, maddr, o.Credentials)
	require.NoError(t, err)
	require.Equal(t, &protocol.BrokerEpochCache{ClusterName: "DefaultCluster", BrokerName: "broker-a", BrokerID: 1, MaxOffset: end}, c)

	o2 := ctlMaster(t, 3, newFakeKeeper(1, 3, 1))
	o2.Epochs = epochs{{Epoch: 1, StartOffset: 0}, {Epoch: 3, StartOffset: 0}}
	_, addr2, _ := runBroker(t, o2, "")
	c, err = broker.FetchEpochCache(context.Background(), rc, addr2, o.Credentials)
	require.NoError(t, err)
	require.Equal(t, []protocol.EpochEntry{{Epoch: 1, StartOffset: 0, EndOffset: 0}, {Epoch: 3, StartOffset: 0, EndOffset: 0}}, c.EpochList)

	o3 := ctlMaster(t, 3, newFakeKeeper(1, 3, 1))
	o3.Epochs = epochs{{Epoch: 1, StartOffset: 0}, {Epoch: 3, StartOffset: 500}} // past the empty log's end
	_, addr3, _ := runBroker(t, o3, "")
	_, err = broker.FetchEpochCache(context.Background(), rc, addr3, o.Credentials)
	require.ErrorContains(t, err, "does not match the commit log")
}

// The controller-mode options are checked together.
func TestControllerModeOptions(t *testing.T) {
	k := newFakeKeeper(1, 1, 1)
	for _, tc := range []struct {
		name string
		edit func(*broker.Options)
		says string
	}{
		{"no epoch", func(o *broker.Options) { o.MasterEpoch = 0 }, "MasterEpoch"},
		{"a master without its id", func(o *broker.Options) { o.AssignedID = 0 }, "AssignedID"},
		{"a master without a keeper", func(o *broker.Options) { o.SyncStateSet = nil }, "SyncStateSet keeper"},
		{"a master under id 1", func(o *broker.Options) { o.BrokerID = 1 }, "BrokerID 0"},
		{"a slave without its master", func(o *broker.Options) {
			o.Role, o.BrokerID, o.SyncStateSet, o.AssignedID = broker.RoleSlave, 2, nil, 0
		}, "HAMasterAddr"},
		{"a slave under two ids", func(o *broker.Options) {
			o.Role, o.BrokerID, o.AssignedID, o.HAMasterAddr = broker.RoleSlave, 2, 3, "127.0.0.1:1"
		}, "AssignedID 3"},
		{"minInSyncReplicas 0", func(o *broker.Options) { o.MinInSyncReplicas = 0 }, "MinInSyncReplicas"},
		{"no catch-up limit", func(o *broker.Options) { o.HAMaxTimeSlaveNotCatchup = 0 }, "HAMaxTimeSlaveNotCatchup"},
		{"allAck without controller mode", func(o *broker.Options) {
			o.ControllerMode, o.MasterEpoch, o.AssignedID, o.SyncStateSet = false, 0, 0, nil
		}, "AllAckInSyncStateSet needs controller mode"},
		{"an epoch without controller mode", func(o *broker.Options) {
			o.ControllerMode, o.AllAckInSyncStateSet = false, false
		}, "for controller mode"},
	} {
		o := ctlMaster(t, 1, k)
		tc.edit(&o)
		err := o.Validate()
		require.ErrorIs(t, err, broker.ErrInvalidOptions, tc.name)
		require.True(t, strings.Contains(err.Error(), tc.says), "%s: %v", tc.name, err)
	}
	o := ctlSlave(t, 1, 2, "127.0.0.1:1")
	require.NoError(t, o.Validate())
	o.AssignedID = 2
	require.NoError(t, o.Validate())
	o = ctlMaster(t, 1, k)
	require.NoError(t, o.Validate())
}

// startNameServer starts a name server on a free port, stopped at cleanup.
func startNameServer(t *testing.T) *nameserver.Server {
	t.Helper()
	ns, err := nameserver.New(nameserver.DefaultOptions())
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	require.NoError(t, ns.Start(ln))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, ns.Shutdown(ctx))
	})
	return ns
}

// brokerAddrs is broker-a's id → address in the name server's cluster info.
func brokerAddrs(ns *nameserver.Server) map[int64]string {
	return ns.Table().ClusterInfo().BrokerAddrTable["broker-a"].BrokerAddrs
}

// An election seen from the name server, with real brokers: A masters epoch 1 with B as
// its slave; B, elected for epoch 2, restarts in-process as the master and takes id 0 at
// once though A still holds it; A, still running, is refused as stale and fenced; A
// restarted as B's slave registers under its own id from its own address and replicates.
func TestElectedMasterTakesOverTheRoute(t *testing.T) {
	ns := startNameServer(t)
	named := func(o broker.Options) broker.Options {
		o.NamesrvAddrs, o.RegisterInterval = []string{ns.Addr()}, 200*time.Millisecond
		return o
	}
	var fencedA fences
	kA := newFakeKeeper(1, 1, 1, 2)
	ao := named(ctlMaster(t, 1, kA))
	ao.OnFenced = fencedA.record
	a, aaddr, stopA := runBroker(t, ao, "")
	bo := named(ctlSlave(t, 1, 2, a.HAAddr()))
	_, baddr, stopB := runBroker(t, bo, "")
	testkit.Eventually(t, 10*time.Second, func() bool {
		return maps.Equal(brokerAddrs(ns), map[int64]string{0: aaddr, 2: baddr})
	}, "A master, B slave")
	// B in the set: it has everything A acknowledges (the controller elects only there,
	// and this test has no truncation to do).
	testkit.Eventually(t, 10*time.Second, func() bool { return kA.hasSet(1, 2) }, "B in A's SyncStateSet")
	rc := newRemoting(t)
	resp := sendRaw(t, rc, aaddr, "ElectTopic", []byte("under epoch 1"), true)
	require.Equal(t, int16(protocol.Success), resp.Code, resp.Remark)

	// B elected: restarted in-process as the master of epoch 2, on its data and port.
	stopB()
	kB := newFakeKeeper(2, 2, 1, 2)
	nb := named(ctlMaster(t, 2, kB))
	nb.Store.Dir, nb.AssignedID = bo.Store.Dir, 2
	b, _, _ := runBroker(t, nb, baddr)
	testkit.Eventually(t, 10*time.Second, func() bool {
		return maps.Equal(brokerAddrs(ns), map[int64]string{0: baddr})
	}, "B holds id 0 at once, A's address is gone")
	testkit.Eventually(t, 10*time.Second, func() bool { return len(fencedA.get()) > 0 }, "A learns it is stale")
	require.ErrorIs(t, fencedA.get()[0], broker.ErrFenced)
	require.Contains(t, fencedA.get()[0].Error(), "master epoch 2")

	// A back as B's slave, under its own id, from its own address.
	stopA()
	na := named(ctlSlave(t, 2, 1, b.HAAddr()))
	na.Store.Dir = ao.Store.Dir
	a, _, _ = runBroker(t, na, aaddr)
	testkit.Eventually(t, 10*time.Second, func() bool {
		return maps.Equal(brokerAddrs(ns), map[int64]string{0: baddr, 1: aaddr})
	}, "A registered as B's slave")
	testkit.Eventually(t, 10*time.Second, func() bool { return kB.hasSet(1, 2) }, "A in B's SyncStateSet")
	resp = sendRaw(t, rc, baddr, "ElectTopic", []byte("under epoch 2"), true)
	require.Equal(t, int16(protocol.Success), resp.Code, resp.Remark)
	require.GreaterOrEqual(t, a.Store().CommitLog().MaxOffset(), b.Store().CommitLog().MaxOffset(), "A has B's log")
}
