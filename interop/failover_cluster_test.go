//go:build linux

package interop

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/controller"
	"github.com/ferrymq/ferry/internal/testkit"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
)

// Automatic failover with real processes, the cluster the acceptance harnesses of the
// controller mode share (failover_continue_test.go; the stress and controller targets of
// failover_stress_test.go): a name server, three `ferry controller` children and broker
// children in controller mode (broker.controllerMode, allAckInSyncStateSet), each with its
// own data directory and loopback ports. Processes are stopped with SIGKILL and started
// again on the same ports and data.

// foCluster is a name server, three controllers and the brokers of one or more groups.
type foCluster struct {
	*haCluster
	ctls    []*foController
	ctl     *controller.Client
	brokers []*foBroker
	extra   string // broker keys added to every broker's configuration (indented, one a line)
}

// foController is one `ferry controller` child.
type foController struct {
	id     string // nodeId: n0, n1, n2
	listen string // controller.listen
	cfg    string // its configuration
	proc   *ferryProc
}

// foBroker is one `ferry broker` child in controller mode.
type foBroker struct {
	name    string // its configuration file's name, also the key of its data directory
	group   string // brokerName
	listen  string
	ha      string
	dataDir string
	proc    *ferryProc
}

// foClusterName is the clusterName of the brokers, foGroup the group of the tests with
// one.
const (
	foClusterName = "FailoverCluster"
	foGroup       = "fo-a"
)

// newFOCluster starts a name server and three controllers (ferry binary bin, built when
// empty), then perGroup brokers of each group; extra is added to every broker's
// configuration (YAML lines indented by two spaces, under broker:).
func newFOCluster(t *testing.T, bin string, groups []string, perGroup int, extra string) *foCluster {
	t.Helper()
	c := &foCluster{haCluster: newHACluster(t, bin), extra: extra}
	var peers []string
	raft := make([]string, 3)
	for i := range 3 {
		raft[i] = testkit.FreeAddr(t)
		peers = append(peers, fmt.Sprintf("n%d@%s", i, raft[i]))
	}
	for i := range 3 {
		n := &foController{id: fmt.Sprintf("n%d", i), listen: testkit.FreeAddr(t)}
		var sb strings.Builder
		fmt.Fprintf(&sb, "controller:\n  nodeId: %s\n  listen: %s\n  raftListen: %s\n  dataDir: %s\n  peers:\n",
			n.id, n.listen, raft[i], filepath.Join(c.dir, "ctl-"+n.id))
		for _, p := range peers {
			fmt.Fprintf(&sb, "    - %s\n", p)
		}
		sb.WriteString("log:\n  level: warn\n")
		n.cfg = sb.String()
		c.ctls = append(c.ctls, n)
		c.startController(t, n)
	}
	o := controller.DefaultClientOptions()
	o.Addrs = c.ctlAddrs()
	cl, err := controller.NewClient(o)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, cl.Close()) })
	c.ctl = cl
	for _, g := range groups {
		for i := range perGroup {
			b := &foBroker{name: fmt.Sprintf("%s-%d", g, i), group: g, listen: testkit.FreeAddr(t), ha: testkit.FreeAddr(t)}
			b.dataDir = filepath.Join(c.dir, b.name)
			c.brokers = append(c.brokers, b)
			c.startBroker(t, b)
		}
	}
	return c
}

// ctlAddrs are the controllers' remoting addresses, in node order.
func (c *foCluster) ctlAddrs() []string {
	addrs := make([]string, len(c.ctls))
	for i, n := range c.ctls {
		addrs[i] = n.listen
	}
	return addrs
}

// startController starts (or restarts) controller n on its ports and data.
func (c *foCluster) startController(t *testing.T, n *foController) {
	t.Helper()
	n.proc = c.start(t, "controller", "ctl-"+n.id, n.cfg)
}

// startBroker starts (or restarts) broker b on its ports and data.
func (c *foCluster) startBroker(t *testing.T, b *foBroker) {
	t.Helper()
	var sb strings.Builder
	fmt.Fprintf(&sb, "broker:\n  brokerName: %s\n  clusterName: %s\n  controllerMode: true\n  controllerAddrs:\n", b.group, foClusterName)
	for _, a := range c.ctlAddrs() {
		fmt.Fprintf(&sb, "    - %s\n", a)
	}
	fmt.Fprintf(&sb, "  listen: %s\n  haListen: %s\n  namesrvAddrs:\n    - %s\n  dataDir: %s\n  commitLogSegmentSize: %d\n",
		b.listen, b.ha, c.nsAddr, b.dataDir, haSegmentSize)
	// allAckInSyncStateSet: an acknowledged message is on every member of the set, so
	// whichever member the controllers elect has it.
	sb.WriteString("  allAckInSyncStateSet: true\n")
	sb.WriteString(c.extra)
	sb.WriteString("log:\n  level: warn\n")
	b.proc = c.start(t, "broker", b.name, sb.String())
	b.proc.brokerAddr = b.listen
}

// kill stops p with SIGKILL and waits until it is gone.
func foKill(t *testing.T, p *ferryProc) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGKILL))
	<-p.exited
}

// group returns the controllers' state of group (the zero view when they do not answer).
func (c *foCluster) group(name string) controller.GroupView {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	v, err := c.ctl.Group(ctx, name)
	if err != nil {
		return controller.GroupView{}
	}
	return v
}

// settled waits (up to timeout) until group has a master of at least epoch with running
// brokers alive and all of them in the SyncStateSet, and returns the state.
func (c *foCluster) settled(t *testing.T, group string, epoch int32, running int, timeout time.Duration) controller.GroupView {
	t.Helper()
	var v controller.GroupView
	haEventually(t, timeout, c.ns, func() bool {
		v = c.group(group)
		alive := 0
		for _, m := range v.Members {
			if m.Alive {
				alive++
			}
		}
		return v.Master != controller.NoBroker && v.MasterEpoch >= epoch && alive == running && len(v.SyncStateSet) == running
	}, fmt.Sprintf("%s: a master of epoch ≥ %d and %d brokers alive in the SyncStateSet", group, epoch, running))
	return v
}

// master returns the broker v names master (nil when none).
func (c *foCluster) master(v controller.GroupView) *foBroker {
	m, ok := v.Member(v.Master)
	if !ok {
		return nil
	}
	return c.byAddr(m.Addr)
}

// byAddr returns the broker listening on addr (nil when none).
func (c *foCluster) byAddr(addr string) *foBroker {
	for _, b := range c.brokers {
		if b.listen == addr {
			return b
		}
	}
	return nil
}

// groupBrokers returns the brokers of group.
func (c *foCluster) groupBrokers(group string) []*foBroker {
	var bs []*foBroker
	for _, b := range c.brokers {
		if b.group == group {
			bs = append(bs, b)
		}
	}
	return bs
}

// waitTopicEverywhere waits until every running broker of group holds topic's
// configuration (a slave copies the master's every slaveSyncInterval), so that any of
// them elected master serves the topic, and until the name server routes the topic's 8
// write queues on the group (keyed messages keep their queue only while the number of
// queues stays the same).
func (c *foCluster) waitTopicEverywhere(t *testing.T, group, topic string) {
	t.Helper()
	for _, b := range c.groupBrokers(group) {
		haEventually(t, 60*time.Second, b.proc, func() bool {
			resp, err := c.invoke(b.listen, protocol.GetAllTopicConfig)
			return err == nil && bytes.Contains(resp.Body, []byte(`"`+topic+`"`))
		}, b.name+" holds topic "+topic)
	}
	haEventually(t, 60*time.Second, c.ns, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		resp, err := c.rc.Invoke(ctx, c.nsAddr, remoting.NewRequest(int16(protocol.GetRouteInfoByTopic), map[string]string{"topic": topic}))
		if err != nil || resp.Code != int16(protocol.Success) {
			return false
		}
		r, err := protocol.DecodeTopicRouteData(resp.Body)
		return err == nil && len(r.QueueDatas) == 1 && r.QueueDatas[0].BrokerName == group && r.QueueDatas[0].WriteQueueNums == 8
	}, "the name server routes the 8 write queues of "+topic)
}
