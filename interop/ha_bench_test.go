//go:build linux

package interop

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ferrymq/ferry/client"
	"github.com/ferrymq/ferry/controller"
	"github.com/ferrymq/ferry/internal/testkit"
	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/protocol"
)

// BenchmarkTwoMastersTwoSlaves: a name server, broker-a and broker-b masters (SYNC_MASTER
// or ASYNC_MASTER) each with a SLAVE, all child processes on this host; 4 Ferry
// producers (own Client each, HashSelector by 1,024 keys: ordered messages, at most 256
// in flight each), 1 KiB bodies, b.N messages. Reported: msgs/s acknowledged (SEND_OK);
// the replication lag under load, sampled every 50 ms on both masters as commitLogMaxOffset
// − ferryHaSlaveAckOffset (lag-bytes-mean, lag-bytes-max, the worse master of each
// sample); lag-ms-est, the mean lag in bytes divided by the acknowledged byte rate; and
// drain-ms, the time from the last acknowledgement until both slaves have acknowledged
// their master's end. Run with -benchtime=Nx (say 500000x): every size starts a cluster.
//
// Sub-benchmarks: sync (SYNC_MASTER), async (ASYNC_MASTER), and controller: the same two
// groups of two brokers in controller mode (three `ferry controller` children elect each
// group's master; broker.allAckInSyncStateSet, so a send is acknowledged once the group's
// slave has it, as with SYNC_MASTER), with the same producers and measurements.
func BenchmarkTwoMastersTwoSlaves(b *testing.B) {
	bin := testkit.Binary(b, ferryPkg)
	for _, mode := range []struct{ name, role string }{{"sync", "SYNC_MASTER"}, {"async", "ASYNC_MASTER"}} {
		b.Run(mode.name, func(b *testing.B) {
			c := newHACluster(b, bin)
			ma, _ := c.startGroup(b, "broker-a", mode.role, 0, nil)
			mb, _ := c.startGroup(b, "broker-b", mode.role, 0, nil)
			benchTwoGroups(b, c, []string{ma.listen, mb.listen})
		})
	}
	b.Run("controller", func(b *testing.B) {
		c, masters := startCtlGroups(b, bin, []string{"broker-a", "broker-b"}, 2)
		benchTwoGroups(b, c, masters)
	})
}

// startCtlGroups starts a name server, three controllers and perGroup brokers in
// controller mode (allAckInSyncStateSet) of each group, waits until every group has a
// master with all its brokers in the SyncStateSet and its slaves connected, registered
// as master with the name server, and returns the cluster and the masters' addresses.
func startCtlGroups(tb testing.TB, bin string, groups []string, perGroup int) (*haCluster, []string) {
	tb.Helper()
	c := newHACluster(tb, bin)
	ctlAddrs := make([]string, 3)
	var peers []string
	for i := range ctlAddrs {
		ctlAddrs[i] = testkit.FreeAddr(tb)
		peers = append(peers, fmt.Sprintf("n%d@%s", i, testkit.FreeAddr(tb)))
	}
	for i := range ctlAddrs {
		var sb strings.Builder
		fmt.Fprintf(&sb, "controller:\n  nodeId: n%d\n  listen: %s\n  raftListen: %s\n  dataDir: %s\n  peers:\n",
			i, ctlAddrs[i], strings.SplitN(peers[i], "@", 2)[1], filepath.Join(c.dir, fmt.Sprintf("ctl%d", i)))
		for _, p := range peers {
			fmt.Fprintf(&sb, "    - %s\n", p)
		}
		sb.WriteString("log:\n  level: warn\n")
		c.start(tb, "controller", fmt.Sprintf("ctl%d", i), sb.String())
	}
	o := controller.DefaultClientOptions()
	o.Addrs = ctlAddrs
	cl, err := controller.NewClient(o)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = cl.Close() })
	for _, g := range groups {
		for i := range perGroup {
			var sb strings.Builder
			fmt.Fprintf(&sb, "broker:\n  brokerName: %s\n  clusterName: HACluster\n  controllerMode: true\n  controllerAddrs:\n", g)
			for _, a := range ctlAddrs {
				fmt.Fprintf(&sb, "    - %s\n", a)
			}
			fmt.Fprintf(&sb, "  listen: %s\n  haListen: %s\n  namesrvAddrs:\n    - %s\n  dataDir: %s\n  commitLogSegmentSize: %d\n",
				testkit.FreeAddr(tb), testkit.FreeAddr(tb), c.nsAddr, filepath.Join(c.dir, fmt.Sprintf("%s-%d", g, i)), haSegmentSize)
			sb.WriteString("  registerInterval: 1s\n  allAckInSyncStateSet: true\nlog:\n  level: warn\n")
			c.start(tb, "broker", fmt.Sprintf("%s-%d", g, i), sb.String())
		}
	}
	var masters []string
	for _, g := range groups {
		var master string
		haEventually(tb, 60*time.Second, c.ns, func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			v, err := cl.Group(ctx, g)
			cancel()
			if err != nil || v.Master == controller.NoBroker || len(v.SyncStateSet) != perGroup {
				return false
			}
			m, ok := v.Member(v.Master)
			if !ok {
				return false
			}
			kv, err := c.runtime(m.Addr)
			if err != nil || kv["ferryHaSlaves"] != strconv.Itoa(perGroup-1) {
				return false
			}
			resp, err := c.invoke(c.nsAddr, protocol.GetBrokerClusterInfo)
			if err != nil {
				return false
			}
			ci, err := protocol.DecodeClusterInfo(resp.Body)
			if err != nil || ci.BrokerAddrTable[g].BrokerAddrs[0] != m.Addr {
				return false
			}
			master = m.Addr
			return true
		}, g+": a master registered with its slaves in sync")
		masters = append(masters, master)
	}
	return c, masters
}

// benchTwoGroups runs the load of BenchmarkTwoMastersTwoSlaves on the cluster c whose
// group masters listen on masters.
func benchTwoGroups(b *testing.B, c *haCluster, masters []string) {
	const topic = "HABench"
	c.createTopic(b, topic)
	ps := haProducers(b, c.nsAddr, 4, client.WithRetries(2))
	body := make([]byte, haBodySize)
	for i := range body {
		body[i] = 'a' + byte(i%26)
	}
	// Routes and connections, and every queue's lane once.
	if err := haSendN(ps, topic, 4*1024, body); err != nil {
		b.Fatal(err)
	}

	ends := func() int64 {
		var sum int64
		for _, addr := range masters {
			n, err := c.runtimeInt(addr, "commitLogMaxOffset")
			if err != nil {
				b.Fatal(err)
			}
			sum += n
		}
		return sum
	}
	lag := func() (int64, error) {
		var worst int64
		for _, addr := range masters {
			kv, err := c.runtime(addr)
			if err != nil {
				return 0, err
			}
			var end, ack int64
			if _, err := fmt.Sscan(kv["commitLogMaxOffset"], &end); err != nil {
				return 0, fmt.Errorf("commitLogMaxOffset %q: %w", kv["commitLogMaxOffset"], err)
			}
			if _, err := fmt.Sscan(kv["ferryHaSlaveAckOffset"], &ack); err != nil {
				return 0, fmt.Errorf("ferryHaSlaveAckOffset %q: %w", kv["ferryHaSlaveAckOffset"], err)
			}
			worst = max(worst, end-ack)
		}
		return worst, nil
	}
	stopSampling := make(chan struct{})
	var samples []int64
	var sampler sync.WaitGroup
	sampler.Go(func() {
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stopSampling:
				return
			case <-t.C:
				if l, err := lag(); err == nil {
					samples = append(samples, l)
				}
			}
		}
	})

	logStart := ends()
	b.ResetTimer()
	start := time.Now()
	err := haSendN(ps, topic, b.N, body)
	elapsed := time.Since(start)
	b.StopTimer()
	close(stopSampling)
	sampler.Wait()
	if err != nil {
		b.Fatal(err)
	}
	drainStart := time.Now()
	for {
		l, err := lag()
		if err != nil {
			b.Fatal(err)
		}
		if l == 0 {
			break
		}
		if time.Since(drainStart) > 30*time.Second {
			b.Fatalf("slaves still %d bytes behind 30 s after the load", l)
		}
		time.Sleep(time.Millisecond)
	}
	drain := time.Since(drainStart)

	rate := float64(b.N) / elapsed.Seconds()
	var sum, worst int64
	for _, s := range samples {
		sum += s
		worst = max(worst, s)
	}
	mean := 0.0
	if len(samples) > 0 {
		mean = float64(sum) / float64(len(samples))
	}
	// The acknowledged byte rate: the masters' logs grew by this much in elapsed.
	bytesPerSec := float64(ends()-logStart) / elapsed.Seconds()
	b.ReportMetric(rate, "msgs/s")
	b.ReportMetric(mean, "lag-bytes-mean")
	b.ReportMetric(float64(worst), "lag-bytes-max")
	b.ReportMetric(mean/bytesPerSec*1e3, "lag-ms-est")
	b.ReportMetric(float64(drain.Microseconds())/1e3, "drain-ms")
	b.ReportMetric(0, "ns/op")
}

// haSendN sends n messages spread over the producers (keys key-0 … key-1023, so ordered
// by HashSelector), at most 256 in flight per producer, and waits for every result.
func haSendN(ps []*client.Producer, topic string, n int, body []byte) error {
	var failures atomic.Int64
	var firstErr atomic.Pointer[error]
	var wg sync.WaitGroup
	for i, p := range ps {
		share := n / len(ps)
		if i < n%len(ps) {
			share++
		}
		wg.Go(func() {
			window := make(chan struct{}, 256)
			var inflight sync.WaitGroup
			done := func(_ client.SendResult, err error) {
				if err != nil {
					failures.Add(1)
					firstErr.CompareAndSwap(nil, &err)
				}
				<-window
				inflight.Done()
			}
			for seq := range share {
				if failures.Load() > 0 {
					break
				}
				m := message.NewMessage(topic, body)
				m.SetKeys(fmt.Sprintf("key-%d", (seq*len(ps)+i)%1024))
				window <- struct{}{}
				inflight.Add(1)
				p.SendAsync(context.Background(), m, done)
			}
			inflight.Wait()
		})
	}
	wg.Wait()
	if f := failures.Load(); f > 0 {
		return fmt.Errorf("%d sends failed, first: %w", f, *firstErr.Load())
	}
	return nil
}
