//go:build linux

package interop

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/client"
	"github.com/ferrymq/ferry/controller"
	"github.com/ferrymq/ferry/ha"
	"github.com/ferrymq/ferry/internal/mmap"
	"github.com/ferrymq/ferry/internal/testkit"
	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/protocol"
)

// Automatic failover with real processes: three `ferry controller` children, a name
// server and three `ferry broker` children in controller mode (broker.controllerMode),
// each with its own data directory; the master is killed with SIGKILL.

// ctlGroup is the broker group of these tests.
const ctlGroup = "ctl-a"

// ctlCluster is the name server, the controllers and the brokers of a group.
type ctlCluster struct {
	*haCluster
	ctlAddrs []string
	ctl      *controller.Client
	brokers  []*ctlBroker
}

// ctlBroker is one broker child in controller mode.
type ctlBroker struct {
	name       string // its config file's name
	listen, ha string
	dataDir    string
	proc       *ferryProc
	id         int64 // assigned by the controllers, once known
}

// newCtlCluster starts a name server and three controllers, then n brokers of ctlGroup.
func newCtlCluster(t *testing.T, n int) *ctlCluster {
	t.Helper()
	c := &ctlCluster{haCluster: newHACluster(t, "")}
	var raft, peers []string
	for i := range 3 {
		c.ctlAddrs = append(c.ctlAddrs, testkit.FreeAddr(t))
		raft = append(raft, testkit.FreeAddr(t))
		peers = append(peers, fmt.Sprintf("n%d@%s", i, raft[i]))
	}
	for i := range 3 {
		var sb strings.Builder
		fmt.Fprintf(&sb, "controller:\n  nodeId: n%d\n  listen: %s\n  raftListen: %s\n  dataDir: %s\n  peers:\n",
			i, c.ctlAddrs[i], raft[i], filepath.Join(c.dir, fmt.Sprintf("ctl%d", i)))
		for _, p := range peers {
			fmt.Fprintf(&sb, "    - %s\n", p)
		}
		sb.WriteString("log:\n  level: warn\n")
		c.start(t, "controller", fmt.Sprintf("ctl%d", i), sb.String())
	}
	o := controller.DefaultClientOptions()
	o.Addrs = c.ctlAddrs
	cl, err := controller.NewClient(o)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, cl.Close()) })
	c.ctl = cl
	for i := range n {
		b := &ctlBroker{name: fmt.Sprintf("broker%d", i), listen: testkit.FreeAddr(t), ha: testkit.FreeAddr(t),
			dataDir: filepath.Join(c.dir, fmt.Sprintf("broker%d", i))}
		c.brokers = append(c.brokers, b)
		c.startBroker(t, b)
	}
	return c
}

// startBroker starts (or restarts) broker b in controller mode.
func (c *ctlCluster) startBroker(t *testing.T, b *ctlBroker) {
	t.Helper()
	var sb strings.Builder
	fmt.Fprintf(&sb, "broker:\n  brokerName: %s\n  clusterName: CtlCluster\n  controllerMode: true\n  controllerAddrs:\n", ctlGroup)
	for _, a := range c.ctlAddrs {
		fmt.Fprintf(&sb, "    - %s\n", a)
	}
	fmt.Fprintf(&sb, "  listen: %s\n  haListen: %s\n  namesrvAddrs:\n    - %s\n  dataDir: %s\n  commitLogSegmentSize: %d\n",
		b.listen, b.ha, c.nsAddr, b.dataDir, haSegmentSize)
	// allAckInSyncStateSet: an acknowledged message is on every member of the set, so
	// whichever the controllers elect has it (without it, what the master acknowledged
	// but had not replicated when it died is lost: asynchronous replication).
	sb.WriteString("  registerInterval: 1s\n  allAckInSyncStateSet: true\nlog:\n  level: warn\n")
	b.proc = c.start(t, "broker", b.name, sb.String())
	b.proc.brokerAddr = b.listen
}

// group returns the controllers' state of ctlGroup (zero when they do not answer).
func (c *ctlCluster) group() controller.GroupView {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	v, err := c.ctl.Group(ctx, ctlGroup)
	if err != nil {
		return controller.GroupView{}
	}
	return v
}

// byAddr returns the broker listening on addr.
func (c *ctlCluster) byAddr(addr string) *ctlBroker {
	for _, b := range c.brokers {
		if b.listen == addr {
			return b
		}
	}
	return nil
}

// settled waits until the group has a master of at least epoch, with every running
// broker alive and in the SyncStateSet, and returns the state.
func (c *ctlCluster) settled(t *testing.T, epoch int32, running int) controller.GroupView {
	t.Helper()
	var v controller.GroupView
	haEventually(t, 60*time.Second, c.ns, func() bool {
		v = c.group()
		alive := 0
		for _, m := range v.Members {
			if m.Alive {
				alive++
			}
		}
		return v.Master != controller.NoBroker && v.MasterEpoch >= epoch && alive == running && len(v.SyncStateSet) == running
	}, fmt.Sprintf("a master of epoch ≥ %d and %d brokers in the SyncStateSet", epoch, running))
	for _, m := range v.Members {
		c.byAddr(m.Addr).id = m.ID
	}
	return v
}

// master returns the broker the state names master.
func (c *ctlCluster) master(v controller.GroupView) *ctlBroker {
	m, ok := v.Member(v.Master)
	if !ok {
		return nil
	}
	return c.byAddr(m.Addr)
}

// ctlLoad is a Ferry producer sending one message at a time until stopped, keeping
// every acknowledged body and when the last acknowledgement came.
type ctlLoad struct {
	topic   string
	stop    atomic.Bool
	done    chan struct{}
	mu      sync.Mutex
	acked   []string
	lastAck time.Time
	fails   int
}

// startCtlLoad starts sending to topic through the name server at ns.
func startCtlLoad(t *testing.T, ns, topic string) *ctlLoad {
	cl, err := client.New(client.WithNameServers(ns), client.WithInstanceName(instance("ctl-p")))
	require.NoError(t, err)
	p, err := cl.NewProducer("ctl-pg")
	require.NoError(t, err)
	l := &ctlLoad{topic: topic, done: make(chan struct{})}
	go func() {
		defer close(l.done)
		for seq := 0; !l.stop.Load(); seq++ {
			body := fmt.Sprintf("c%07d", seq)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			_, err := p.Send(ctx, message.NewMessage(topic, []byte(body)))
			cancel()
			l.mu.Lock()
			if err == nil {
				l.acked = append(l.acked, body)
				l.lastAck = time.Now()
			} else {
				l.fails++
			}
			l.mu.Unlock()
			if err != nil {
				time.Sleep(10 * time.Millisecond) // pace the retries while no master serves
			}
		}
	}()
	t.Cleanup(func() {
		l.halt()
		_ = p.Close()
		_ = cl.Close()
	})
	return l
}

// halt stops the load and waits for its last send.
func (l *ctlLoad) halt() {
	l.stop.Store(true)
	<-l.done
}

// count returns how many sends were acknowledged, and when the last was.
func (l *ctlLoad) count() (int, time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.acked), l.lastAck
}

// ackedBodies returns the acknowledged bodies.
func (l *ctlLoad) ackedBodies() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.acked)
}

// readAll waits until the broker at addr serves every body of want from topic (its
// queues pulled from the start).
func (c *ctlCluster) readAll(t *testing.T, addr, topic string, want []string) {
	t.Helper()
	var missing int
	haEventually(t, 60*time.Second, c.ns, func() bool {
		have := map[string]bool{}
		for q := range int32(8) {
			for off := int64(0); ; {
				req := protocol.NewRequest(protocol.PullMessage, &protocol.PullMessageRequestHeader{
					ConsumerGroup: "ctl-check", Topic: topic, QueueID: q, QueueOffset: off, MaxMsgNums: 256,
					SysFlag: protocol.PullFlagSubscription, Subscription: "*"})
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				resp, err := c.rc.Invoke(ctx, addr, req)
				cancel()
				if err != nil || resp.Code != int16(protocol.Success) {
					break
				}
				for b := resp.Body; len(b) > 0; {
					var rec message.Record
					n, err := rec.Decode(b)
					require.NoError(t, err)
					have[string(rec.Body)] = true
					off = rec.QueueOffset + 1
					b = b[n:]
				}
			}
		}
		missing = 0
		for _, b := range want {
			if !have[b] {
				missing++
			}
		}
		return missing == 0
	}, fmt.Sprintf("%s serves every acknowledged message of %s", addr, topic))
}

// epochs reads a broker's epoch file (written atomically, so readable while it runs).
func epochsOf(t *testing.T, b *ctlBroker) []ha.EpochEntry {
	t.Helper()
	f, err := ha.OpenEpochFile(mmap.OSFS{}, b.dataDir)
	require.NoError(t, err)
	return f.Entries()
}

// TestControllerModeMasterKill: three brokers in controller mode under a Ferry producer;
// the master is killed with SIGKILL. A slave becomes master, sends resume (the time from
// the kill to the first acknowledgement after it is logged), every acknowledged message
// is on the new master, the killed broker restarts as a slave with the new master's
// epoch history, and a planned switchover (controller.Client.Elect) loses nothing.
func TestControllerModeMasterKill(t *testing.T) {
	c := newCtlCluster(t, 3)
	v := c.settled(t, 1, 3)
	const topic = "CtlKillTopic"
	load := startCtlLoad(t, c.nsAddr, topic)
	haEventually(t, 30*time.Second, c.ns, func() bool { n, _ := load.count(); return n >= 200 }, "200 messages acknowledged")

	old := c.master(v)
	require.NotNil(t, old)
	_, lastBefore := load.count()
	require.NoError(t, old.proc.cmd.Process.Kill())
	<-old.proc.exited
	killed := time.Now() // a send in flight may have been acknowledged until the process died
	before, _ := load.count()
	var firstAfter time.Time
	haEventually(t, 60*time.Second, c.ns, func() bool {
		n, last := load.count()
		if n > before && last.After(killed) {
			firstAfter = last
			return true
		}
		return false
	}, "a send acknowledged after the kill")
	t.Logf("failover: kill → first acknowledgement %v (last acknowledgement before the kill → first after: %v)",
		firstAfter.Sub(killed).Round(time.Millisecond), firstAfter.Sub(lastBefore).Round(time.Millisecond))
	v2 := c.settled(t, v.MasterEpoch+1, 2)
	require.NotEqual(t, old.id, v2.Master, "another broker is master")
	haEventually(t, 30*time.Second, c.ns, func() bool { n, _ := load.count(); return n >= before+200 }, "200 more acknowledged")

	// The killed broker comes back as a slave of the new master, with its history.
	c.startBroker(t, old)
	v3 := c.settled(t, v2.MasterEpoch, 3)
	require.Equal(t, v2.Master, v3.Master, "a returning broker does not take over")
	newMaster := c.master(v3)
	require.Equal(t, epochsOf(t, newMaster), epochsOf(t, old), "the returned broker holds the master's epoch history")

	// A planned switchover to the returned broker.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	_, err := c.ctl.Elect(ctx, ctlGroup, old.id)
	cancel()
	if err != nil {
		t.Logf("elect: %v (checking the group)", err)
	}
	v4 := c.settled(t, v3.MasterEpoch+1, 3)
	require.Equal(t, old.id, v4.Master)
	n4, _ := load.count()
	haEventually(t, 30*time.Second, c.ns, func() bool { n, _ := load.count(); return n >= n4+100 }, "100 more after the switchover")
	load.halt()
	acked := load.ackedBodies()
	c.readAll(t, old.listen, topic, acked)
	for _, b := range c.brokers {
		require.Equal(t, epochsOf(t, old), epochsOf(t, b), "%s holds the master's history", b.name)
	}
	t.Logf("%d messages acknowledged, all readable on the last master; %d sends failed", len(acked), load.fails)
}
