//go:build linux && failoverstress

package interop

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/controller"
	"github.com/ferrymq/ferry/ha"
	"github.com/ferrymq/ferry/internal/mmap"
	"github.com/ferrymq/ferry/internal/testkit"
	"github.com/ferrymq/ferry/message"
)

// The acceptance harnesses of automatic failover (issue 21) that take minutes: the build
// tag failoverstress keeps them out of `go test ./...`.
//
//	make failover-stress       TestFailoverStress: the master SIGKILLed FAILOVER_KILLS times
//	make failover-controllers  TestFailoverControllerLeaderKill, TestFailoverControllerMinority
//
// Each prints one JSON line (starting with {"harness":) with its figures.

// foEnvInt is the integer environment variable name, or def when unset.
func foEnvInt(t *testing.T, name string, def int) int {
	t.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	require.NoError(t, err, name)
	require.Positive(t, n, name)
	return n
}

// foEnvDuration is the duration environment variable name, or def when unset.
func foEnvDuration(t *testing.T, name string, def time.Duration) time.Duration {
	t.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	d, err := time.ParseDuration(s)
	require.NoError(t, err, name)
	return d
}

// foKillRecord is what one kill of a master measured.
type foKillRecord struct {
	at        time.Time
	old, next string        // the killed master's address, its successor's
	elected   time.Duration // kill → the controllers name a new master
}

// foUnavailability measures, for each kill and kind, the time from the last
// acknowledgement by the killed master of a send started before the kill to the first
// acknowledgement by another broker after it: one figure per kill, -1 when either is
// missing.
func foUnavailability(kills []foKillRecord, acks []foAck) map[foKind][]time.Duration {
	out := map[foKind][]time.Duration{}
	for i, k := range kills {
		var from time.Time
		if i > 0 {
			from = kills[i-1].at
		}
		for _, kind := range foKinds {
			var last, first time.Time
			for _, a := range acks {
				switch {
				case a.kind != kind:
				case a.store == k.old && a.start.Before(k.at) && a.start.After(from):
					if a.at.After(last) {
						last = a.at
					}
				case a.store != k.old && a.at.After(k.at):
					if first.IsZero() || a.at.Before(first) {
						first = a.at
					}
				}
			}
			d := time.Duration(-1)
			if !last.IsZero() && !first.IsZero() {
				d = first.Sub(last)
			}
			out[kind] = append(out[kind], d)
		}
	}
	return out
}

// TestFailoverStress (`make failover-stress`): three controllers, a group of three
// brokers with allAckInSyncStateSet, two producers of Ferry's client and two of the
// official Go client sending keyed messages (FERRY_FAILOVER_RATE a second each, default 100).
// The group's master is SIGKILLed FERRY_FAILOVER_KILLS times (default 50); each time the
// controllers elect another, and the killed broker is started again after
// FERRY_FAILOVER_PAUSE (default 1 s) past the election and rejoins as a slave; the next
// kill waits until all three are in the SyncStateSet again and both client kinds have had
// FERRY_FAILOVER_RATE sends acknowledged by the new master, then a random time below
// FERRY_FAILOVER_DWELL (default 30 s, the official client's route refresh period). At the end a consumer of each kind reads the
// topic from the start, and each broker's queues are read directly: every acknowledged
// message is on every replica and received by both consumers, and nothing read was never
// sent. The unavailability of each kill (the killed master's last acknowledgement → the
// first by its successor) is reported per client kind, p50 and max, with the elections.
func TestFailoverStress(t *testing.T) {
	kills := foEnvInt(t, "FERRY_FAILOVER_KILLS", 50)
	rate := foEnvInt(t, "FERRY_FAILOVER_RATE", 100)
	pause := foEnvDuration(t, "FERRY_FAILOVER_PAUSE", time.Second)
	dwell := foEnvDuration(t, "FERRY_FAILOVER_DWELL", 30*time.Second)
	bin := testkit.Binary(t, ferryPkg)
	c := newFOCluster(t, bin, []string{foGroup}, 3, "")
	v := c.settled(t, foGroup, 1, 3, 60*time.Second)
	const topic = "FailoverStress"
	c.createTopic(t, topic)
	c.waitTopicEverywhere(t, foGroup, topic)
	load := startFOLoad(t, foProducers(t, c.nsAddr, topic), rate)

	var records []foKillRecord
	since := time.Now()
	waitServed := func(v controller.GroupView, what string) {
		m := c.master(v)
		for _, kind := range foKinds {
			haEventually(t, 120*time.Second, c.ns, func() bool { return load.ackedFrom(kind, m.listen, since) >= rate },
				fmt.Sprintf("%s: %d sends of the %s client acknowledged by the master %s", what, rate, kind, m.listen))
		}
	}
	for i := range kills {
		waitServed(v, fmt.Sprintf("before kill %d", i+1))
		// At a random moment: the official client's route refresh (every 30 s), which
		// its recovery waits for, is then at a random phase of the kill.
		time.Sleep(rand.N(dwell))
		old := c.master(v)
		at := time.Now()
		foKill(t, old.proc)
		var nv controller.GroupView
		haEventually(t, 60*time.Second, c.ns, func() bool {
			nv = c.group(foGroup)
			return nv.MasterEpoch > v.MasterEpoch && nv.Master != controller.NoBroker
		}, fmt.Sprintf("kill %d: a new master", i+1))
		elected := time.Since(at)
		time.Sleep(pause) // the killed broker stays down a while, as a crashed machine does
		c.startBroker(t, old)
		v = c.settled(t, foGroup, nv.MasterEpoch, 3, 120*time.Second)
		require.Equal(t, nv.Master, v.Master, "kill %d: a returning broker does not take over", i+1)
		records = append(records, foKillRecord{at: at, old: old.listen, next: c.master(v).listen, elected: elected})
		since = at
		t.Logf("kill %d: %s killed, %s elected after %v (epoch %d)", i+1, old.listen, c.master(v).listen,
			elected.Round(time.Millisecond), v.MasterEpoch)
	}
	waitServed(v, "after the last kill")
	load.halt()

	acks := load.acks()
	un := foUnavailability(records, acks)
	for i := range records {
		t.Logf("kill %d: unavailability ferry %v, official %v", i+1,
			un[foFerry][i].Round(time.Millisecond), un[foOfficial][i].Round(time.Millisecond))
	}
	keys := load.ackedKeys()
	var all []string
	for _, kind := range foKinds {
		all = append(all, keys[kind]...)
	}
	fails, top := load.failures()
	for _, m := range top {
		t.Logf("failed sends: %s", m)
	}

	// Every acknowledged message on every replica, nothing there that was not sent.
	var replicaMissing, foreign int
	for _, b := range c.groupBrokers(foGroup) {
		r := &foReader{seen: map[string]int{}}
		require.NoError(t, pullAll(t, c.rc, b.listen, topic, 8, func(rec message.Record) { r.add(rec.Body) }))
		miss := r.missing(all)
		f, n := r.foreign(load)
		t.Logf("%s holds %d distinct keys; %d acknowledged missing, %d never sent", b.name, n, miss, len(f))
		replicaMissing += miss
		foreign += len(f)
		require.Equal(t, c.master(v).epochs(t), b.epochs(t), "%s holds the master's epoch history", b.name)
	}

	// Both consumers receive every acknowledged message.
	readers := map[foKind]*foReader{foFerry: readWithFerry(t, c.nsAddr, topic), foOfficial: readWithOfficial(t, c.nsAddr, topic)}
	consumerMissing := map[string]int{}
	for _, kind := range foKinds {
		r := readers[kind]
		testkit.Until(5*time.Minute, 200*time.Millisecond, func() bool { return r.missing(all) == 0 })
		consumerMissing[kind.String()] = r.missing(all)
		f, _ := r.foreign(load)
		foreign += len(f)
	}

	type figures struct {
		Kills   int   `json:"kills"`
		P50Ms   int64 `json:"p50Ms"`
		MaxMs   int64 `json:"maxMs"`
		Acked   int   `json:"acked"`
		Failed  int64 `json:"failedSends"`
		Samples int   `json:"samples"`
	}
	unav := map[string]figures{}
	for _, kind := range foKinds {
		p50, mx, n := foPercentiles(un[kind])
		unav[kind.String()] = figures{Kills: kills, P50Ms: foMillis(p50), MaxMs: foMillis(mx), Acked: len(keys[kind]),
			Failed: fails[kind], Samples: n}
	}
	var el []time.Duration
	for _, k := range records {
		el = append(el, k.elected)
	}
	ep50, emax, _ := foPercentiles(el)
	fp50, fmax, _ := foPercentiles(un[foFerry])
	printSummary(t, map[string]any{
		"harness": "failover-stress", "kills": kills, "ratePerProducer": rate, "pauseMs": foMillis(pause), "dwellMaxMs": foMillis(dwell),
		"acknowledged": len(all), "lostOnReplicas": replicaMissing, "missingAtConsumers": consumerMissing,
		"readButNeverSent": foreign, "unavailability": unav,
		"electionMs":     map[string]int64{"p50": foMillis(ep50), "max": foMillis(emax)},
		"ferryTargetMet": fp50 <= 5*time.Second && fmax <= 10*time.Second,
	})
	require.Zero(t, replicaMissing, "acknowledged messages missing from a replica")
	require.Equal(t, map[string]int{"ferry": 0, "official": 0}, consumerMissing, "acknowledged messages the consumers did not receive")
	require.Zero(t, foreign, "messages read that were never sent")
	for _, kind := range foKinds {
		require.Equal(t, kills, unav[kind.String()].Samples, "an unavailability figure of the %s client for every kill", kind)
	}
}

// epochs reads broker b's epoch file (written atomically, so readable while it runs).
func (b *foBroker) epochs(t *testing.T) []ha.EpochEntry {
	t.Helper()
	f, err := ha.OpenEpochFile(mmap.OSFS{}, b.dataDir)
	require.NoError(t, err)
	return f.Entries()
}

// foPercentiles returns the median and the maximum of the figures of ds that are not
// negative (a negative one is a missing figure), and how many there are (zeros when none).
func foPercentiles(ds []time.Duration) (p50, maxD time.Duration, n int) {
	var s []time.Duration
	for _, d := range ds {
		if d >= 0 {
			s = append(s, d)
		}
	}
	if len(s) == 0 {
		return 0, 0, 0
	}
	slices.Sort(s)
	return s[(len(s)-1)/2], s[len(s)-1], len(s)
}
