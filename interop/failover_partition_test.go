//go:build linux && failoverpartition

package interop

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/client"
	"github.com/ferrymq/ferry/controller"
	"github.com/ferrymq/ferry/internal/testkit"
	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
)

// A network partition (`make failover-partition`, build tag failoverpartition): the
// controller-mode deployment of deploy/docker-compose.controller.yml in containers (the
// image built from local files by `make deploy-build`), driven from the host, which
// reaches both of its networks. The master of broker-a is disconnected from the internal
// network — the controllers and its slaves — while it stays on the public one, where the
// name servers and the test's producers reach it.

// The deployment's fixed names and addresses (deploy/docker-compose.controller.yml).
const (
	fpProject  = "ferrypart"
	fpCompose  = "../deploy/docker-compose.controller.yml"
	fpInternal = fpProject + "_internal" // the internal network, as docker-compose names it
	fpGroup    = "broker-a"
)

// fpNamesrv and fpControllers are the name servers' and controllers' addresses.
var (
	fpNamesrv     = "172.28.6.2:9876"
	fpControllers = []string{"172.28.7.2:9878", "172.28.7.3:9878", "172.28.7.4:9878"}
)

// fpRun runs a command, failing t with its output when it fails.
func fpRun(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	require.NoError(t, err, "%s %s:\n%s", name, strings.Join(args, " "), out)
	return string(out)
}

// fpComposeRun runs docker-compose on the controller-mode deployment.
func fpComposeRun(t *testing.T, args ...string) {
	t.Helper()
	fpRun(t, "docker-compose", append([]string{"-p", fpProject, "-f", fpCompose}, args...)...)
}

// fpContainer is the container of the broker advertising addr (172.28.6.<10g+i>:10911 is
// broker-<g>-<i>, g 1 for a and 2 for b).
func fpContainer(t *testing.T, addr string) (name, internalIP string) {
	t.Helper()
	ap, err := netip.ParseAddrPort(addr)
	require.NoError(t, err)
	last := ap.Addr().As4()[3]
	require.True(t, last > 10 && last < 30, "a broker address: %s", addr)
	return fmt.Sprintf("ferry-cm-broker-%c-%d", 'a'+rune(last/10-1), last%10), fmt.Sprintf("172.28.7.%d", last)
}

// fpGroupOf is the group of the broker whose address is addr.
func fpGroupOf(addr string) string {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return ""
	}
	return fmt.Sprintf("broker-%c", 'a'+rune(ap.Addr().As4()[3]/10-1))
}

// TestFailoverPartition: with producers of both client kinds sending to both groups, the
// master of broker-a is cut off from the controllers and its slaves (disconnected from
// the internal network) while the producers and name servers still reach it. From then
// on it acknowledges nothing (allAckInSyncStateSet: its slaves cannot have what it
// writes, and only the controllers could shrink the set); the controllers elect another
// master; once the partition heals, the old master rejoins as a slave with what it wrote
// alone cut off. History check over the whole run: every acknowledged message on every
// replica of its group and received by a consumer of each kind, nothing read that was
// never sent, and no record the old master wrote during the partition left anywhere.
func TestFailoverPartition(t *testing.T) {
	_, err := os.Stat("../deploy/build/ferry")
	require.NoError(t, err, "the image's binaries: run make deploy-build (make failover-partition does)")
	fpRun(t, "docker-compose", "-p", fpProject, "-f", fpCompose, "down", "-v", "--remove-orphans")
	fpComposeRun(t, "up", "-d", "--build")
	t.Cleanup(func() {
		if t.Failed() {
			for _, g := range []string{"a-1", "a-2", "a-3"} {
				out, _ := exec.Command("docker", "logs", "--tail", "30", "ferry-cm-broker-"+g).CombinedOutput()
				t.Logf("--- broker-%s\n%s", g, out)
			}
		}
		if os.Getenv("FERRY_DEPLOY_KEEP") != "1" {
			_, _ = exec.Command("docker-compose", "-p", fpProject, "-f", fpCompose, "down", "-v", "--remove-orphans").CombinedOutput()
		}
	})
	rate := 100
	co := controller.DefaultClientOptions()
	co.Addrs = fpControllers
	ctl, err := controller.NewClient(co)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ctl.Close() })
	ro := remoting.DefaultClientOptions()
	rc, err := remoting.NewClient(ro)
	require.NoError(t, err)
	t.Cleanup(func() { _ = rc.Close() })

	groupView := func(g string) controller.GroupView {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		v, err := ctl.Group(ctx, g)
		if err != nil {
			return controller.GroupView{}
		}
		return v
	}
	settled := func(g string, epoch int32, what string) controller.GroupView {
		var v controller.GroupView
		testkit.Eventually(t, 120*time.Second, func() bool {
			v = groupView(g)
			alive := 0
			for _, m := range v.Members {
				if m.Alive {
					alive++
				}
			}
			return v.Master != controller.NoBroker && v.MasterEpoch >= epoch && alive == 3 && len(v.SyncStateSet) == 3
		}, what)
		return v
	}
	va := settled(fpGroup, 1, "broker-a: a master and three brokers in the SyncStateSet")
	settled("broker-b", 1, "broker-b: a master and three brokers in the SyncStateSet")

	const topic = "FailoverPartition"
	admin, err := client.New(client.WithNameServers(fpNamesrv), client.WithInstanceName(instance("fp-admin")))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	require.NoError(t, admin.Admin().CreateTopic(ctx, client.TopicConfig{Name: topic}, client.Target{Cluster: "FerryCluster"}))
	cancel()
	require.NoError(t, admin.Close())
	var members []string
	for _, g := range []string{"broker-a", "broker-b"} {
		for _, m := range groupView(g).Members {
			members = append(members, m.Addr)
		}
	}
	for _, addr := range members {
		testkit.Eventually(t, 60*time.Second, func() bool {
			resp, err := fpInvokeTopics(rc, addr)
			return err == nil && strings.Contains(resp, `"`+topic+`"`)
		}, addr+" holds the topic")
	}

	load := startFOLoad(t, foProducers(t, fpNamesrv, topic), rate)
	oldMember, ok := va.Member(va.Master)
	require.True(t, ok)
	old := oldMember.Addr
	since := time.Now()
	for _, kind := range foKinds {
		testkit.Eventually(t, 60*time.Second, func() bool { return load.ackedFrom(kind, old, since) >= rate },
			fmt.Sprintf("%d sends of the %s client acknowledged by the master %s", rate, kind, old))
	}

	// The partition.
	name, ip := fpContainer(t, old)
	fpRun(t, "docker", "network", "disconnect", fpInternal, name)
	cut := time.Now()
	var nv controller.GroupView
	testkit.Eventually(t, 60*time.Second, func() bool {
		nv = groupView(fpGroup)
		return nv.MasterEpoch > va.MasterEpoch && nv.Master != controller.NoBroker && nv.Master != va.Master
	}, "the controllers elect another master of broker-a")
	elected := time.Since(cut)
	nm, ok := nv.Member(nv.Master)
	require.True(t, ok)
	for _, kind := range foKinds {
		testkit.Eventually(t, 120*time.Second, func() bool { return load.ackedFrom(kind, nm.Addr, cut) >= rate },
			fmt.Sprintf("%d sends of the %s client acknowledged by the new master %s", rate, kind, nm.Addr))
	}
	// What the old master holds that it wrote after the cut: written, never acknowledged.
	var writtenAlone int
	require.NoError(t, pullAll(t, rc, old, topic, 8, func(r message.Record) {
		if r.StoreHost.String() == old && r.StoreTimestamp > cut.UnixMilli() {
			writtenAlone++
		}
	}))

	// The partition heals.
	fpRun(t, "docker", "network", "connect", "--ip", ip, fpInternal, name)
	healed := time.Now()
	hv := settled(fpGroup, nv.MasterEpoch, "the old master back in the SyncStateSet")
	require.Equal(t, nv.Master, hv.Master, "the returning broker does not take over")
	rejoined := time.Since(healed)
	for _, kind := range foKinds {
		testkit.Eventually(t, 60*time.Second, func() bool { return load.ackedFrom(kind, nm.Addr, healed) >= rate },
			fmt.Sprintf("%d sends of the %s client acknowledged after the heal", rate, kind))
	}
	load.halt()
	stopped := time.Now()

	// The history check.
	acks := load.acks()
	var lateAcks int
	for _, a := range acks {
		if a.store == old && a.start.After(cut) {
			lateAcks++
		}
	}
	keys := load.ackedKeys()
	var all []string
	for _, kind := range foKinds {
		all = append(all, keys[kind]...)
	}
	byGroup := map[string][]string{}
	for _, p := range load.ps {
		p.mu.Lock()
		for i, a := range p.acks {
			g := fpGroupOf(a.store)
			byGroup[g] = append(byGroup[g], p.acked[i])
		}
		p.mu.Unlock()
	}
	var replicaMissing, foreign, leftover int
	for _, g := range []string{"broker-a", "broker-b"} {
		v := settled(g, 1, g+" settled")
		for _, m := range v.Members {
			r := &foReader{seen: map[string]int{}}
			var end int64
			testkit.Eventually(t, 60*time.Second, func() bool {
				// A replica has everything once its log reaches its master's end.
				v := groupView(g)
				mm, _ := v.Member(v.Master)
				me, _ := v.Member(m.ID)
				end = mm.MaxOffset
				return me.MaxOffset == mm.MaxOffset
			}, fmt.Sprintf("%s replica %d caught up", g, m.ID))
			require.NoError(t, pullAll(t, rc, m.Addr, topic, 8, func(rec message.Record) {
				r.add(rec.Body)
				if rec.StoreHost.String() == old && rec.StoreTimestamp > cut.UnixMilli() {
					leftover++
				}
			}))
			miss := r.missing(byGroup[g])
			f, n := r.foreign(load)
			t.Logf("%s replica %d (%s, log end %d): %d distinct keys, %d acknowledged missing, %d never sent", g, m.ID, m.Addr, end, n, miss, len(f))
			replicaMissing += miss
			foreign += len(f)
		}
	}
	readers := map[foKind]*foReader{foFerry: readWithFerry(t, fpNamesrv, topic), foOfficial: readWithOfficial(t, fpNamesrv, topic)}
	consumerMissing := map[string]int{}
	for _, kind := range foKinds {
		r := readers[kind]
		testkit.Until(3*time.Minute, 200*time.Millisecond, func() bool { return r.missing(all) == 0 })
		consumerMissing[kind.String()] = r.missing(all)
		f, _ := r.foreign(load)
		foreign += len(f)
	}
	fails, top := load.failures()
	for _, m := range top {
		t.Logf("failed sends: %s", m)
	}
	printSummary(t, map[string]any{
		"harness": "failover-partition", "oldMaster": old, "newMaster": nm.Addr,
		"electedMs": foMillis(elected), "rejoinedMs": foMillis(rejoined),
		"acknowledged": len(all), "acknowledgedByOldMasterAfterCut": lateAcks,
		"writtenByOldMasterAlone": writtenAlone, "leftAfterHeal": leftover,
		"lostOnReplicas": replicaMissing, "missingAtConsumers": consumerMissing, "readButNeverSent": foreign,
		"failedSends": map[string]int64{"ferry": fails[foFerry], "official": fails[foOfficial]},
		"maxAckGapMsFromCut": map[string]int64{"ferry": foMillis(load.maxAckGap(foFerry, cut, stopped)),
			"official": foMillis(load.maxAckGap(foOfficial, cut, stopped))},
	})
	require.Zero(t, lateAcks, "the cut-off master acknowledged sends started after the cut")
	require.Zero(t, leftover, "records the old master wrote alone survive the heal")
	require.Zero(t, replicaMissing, "acknowledged messages missing from a replica")
	require.Equal(t, map[string]int{"ferry": 0, "official": 0}, consumerMissing, "acknowledged messages the consumers did not receive")
	require.Zero(t, foreign, "messages read that were never sent")
}

// fpInvokeTopics is the broker's GET_ALL_TOPIC_CONFIG body.
func fpInvokeTopics(rc *remoting.Client, addr string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	resp, err := rc.Invoke(ctx, addr, remoting.NewRequest(int16(protocol.GetAllTopicConfig), nil))
	if err != nil {
		return "", err
	}
	return string(resp.Body), nil
}
