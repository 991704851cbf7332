package broker

import (
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/internal/meter"
	"github.com/ferrymq/ferry/internal/mmap"
)

// testMeters returns meters bounded to maxTopics topics and maxGroups groups.
func testMeters(maxTopics, maxGroups int) *meters {
	o := DefaultOptions()
	o.MetricsMaxTopics, o.MetricsMaxGroups = maxTopics, maxGroups
	return newMeters(&o)
}

// inByTopic maps the send counters' label values to their messages.
func inByTopic(m *meters) map[string]int64 {
	out := map[string]int64{}
	for _, in := range m.inSnapshot() {
		out[in.Topic] = in.Messages
	}
	return out
}

// The first topics and groups counted keep their names; later ones share _other_, whose
// sums are exact; the bytes and the size histogram go with the messages.
func TestMetersBoundLabels(t *testing.T) {
	m := testMeters(2, 1)
	for i, topic := range []string{"A", "B", "C", "D", "A"} {
		m.countIn(topic, i+1, int64(100*(i+1)))
	}
	require.Equal(t, map[string]int64{"A": 1 + 5, "B": 2, MetricsOtherLabel: 3 + 4}, inByTopic(m))
	for _, in := range m.inSnapshot() {
		require.Equal(t, in.Messages*100, in.Bytes, in.Topic)
		require.Equal(t, int64(100)*int64(in.Size.Count()), in.Size.Sum, "each request's size is its bytes over its messages")
	}
	require.Equal(t, "A", m.topicLabel("A"))
	require.Equal(t, MetricsOtherLabel, m.topicLabel("E"), "no room left")

	m.countOut("A", "g1", 0, 3, 30, 3)
	m.countOut("C", "g1", 1, 4, 40, 4)
	m.countOut("A", "g2", 0, 5, 50, 5)
	m.countOut("A", "g1", 0, 1, 10, 4)
	got := map[pairKey]int64{}
	for _, o := range m.outSnapshot() {
		got[pairKey{o.Topic, o.Group}] = o.Messages
		require.Equal(t, o.Messages*10, o.Bytes)
	}
	require.Equal(t, map[pairKey]int64{{"A", "g1"}: 4, {MetricsOtherLabel, "g1"}: 4, {"A", MetricsOtherLabel}: 5}, got)
	require.Equal(t, int64(4), m.pulledAt("A", "g1", 0), "the last answer's next offset")
	require.Equal(t, int64(-1), m.pulledAt("A", "g1", 1), "a queue not pulled from")
	require.Equal(t, int64(-1), m.pulledAt("Z", "g1", 0), "a pair never seen")
	m.countOut("A", "g1", 7, 1, 10, 99) // a queue beyond the first ones grows the table
	require.Equal(t, int64(99), m.pulledAt("A", "g1", 7))
	require.Equal(t, int64(4), m.pulledAt("A", "g1", 0), "kept across the growth")
}

// Deleted topics and groups give their label values up: their series end, and a new name
// can take the value.
func TestMetersPrune(t *testing.T) {
	m := testMeters(1, 1)
	m.countIn("A", 1, 10)
	m.countIn("B", 1, 10)
	m.countOut("A", "g", 0, 1, 10, 1)
	live := map[string]bool{"B": true}
	m.prune(func(s string) bool { return live[s] }, func(string) bool { return false })
	require.Equal(t, map[string]int64{MetricsOtherLabel: 1}, inByTopic(m), "A's series ended; B stays under _other_")
	require.Empty(t, m.outSnapshot())
	require.Equal(t, int64(-1), m.pulledAt("A", "g", 0))
	m.countIn("C", 2, 20)
	require.Equal(t, map[string]int64{"C": 2, MetricsOtherLabel: 1}, inByTopic(m), "A's value went to the next new topic")
	require.Equal(t, "g2", m.groupLabel("g2"))
}

// Counting a known topic or pair, and observing a known answer, allocates nothing.
func TestMetersHotPathsAllocateNothing(t *testing.T) {
	m := testMeters(10, 10)
	m.countIn("T", 1, 100)
	m.countOut("T", "g", 3, 1, 100, 1)
	m.rpc.Answered(10, 0, false, time.Millisecond)
	topic, group := string([]byte("T")), string([]byte("g")) // not the strings the maps hold
	require.Zero(t, testing.AllocsPerRun(1000, func() {
		m.countIn(topic, 32, 32*1024)
		m.countOut(topic, group, 3, 32, 32*1024, 7)
		m.rpc.Answered(10, 0, false, 3*time.Millisecond)
	}))
}

// The counters lose nothing under concurrent senders, pullers and new names.
func TestMetersConcurrent(t *testing.T) {
	m := testMeters(1000, 1000)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 500 {
				topic := "T" + strconv.Itoa(i%7)
				m.countIn(topic, 2, 20)
				m.countOut(topic, "g"+strconv.Itoa(w), int32(i%5), 1, 10, int64(i))
				m.rpc.Answered(int16(i%3), 0, false, time.Microsecond)
			}
		})
	}
	wg.Wait()
	var in, out int64
	for _, s := range m.inSnapshot() {
		in += s.Messages
	}
	for _, s := range m.outSnapshot() {
		out += s.Messages
	}
	require.Equal(t, int64(4*500*2), in)
	require.Equal(t, int64(4*500), out)
	var answered uint64
	for _, s := range m.rpc.snapshot() {
		answered += s.Latency.Count()
	}
	require.Equal(t, uint64(4*500), answered)
}

// Beyond maxRPCSeries combinations, answers go to one overflow series per held flag.
func TestRPCMeterBound(t *testing.T) {
	var r rpcMeter
	r.cells.Store(&map[rpcKey]*meter.Histogram{})
	for code := range maxRPCSeries + 10 {
		r.Answered(int16(code), 0, false, time.Millisecond)
	}
	s := r.snapshot()
	require.Len(t, s, maxRPCSeries+1)
	i := slices.IndexFunc(s, func(x RPCSeries) bool { return x.Request == RPCOtherCode })
	require.GreaterOrEqual(t, i, 0)
	require.Equal(t, uint64(10), s[i].Latency.Count())
	require.Equal(t, RPCOtherCode, s[i].Response)
}

// Only the syncs of commit-log segments are timed.
func TestSyncTimedFS(t *testing.T) {
	m := testMeters(1, 1)
	mem := mmap.NewMemFS()
	dir := filepath.Join("data", "commitlog")
	require.NoError(t, mem.MkdirAll(dir))
	require.NoError(t, mem.MkdirAll("data/consumequeue"))
	fsys := &syncTimedFS{FS: mem, dir: dir, h: m.flush}
	seg, err := fsys.OpenMapped(filepath.Join(dir, "00000000000000000000"), 4096, true)
	require.NoError(t, err)
	other, err := fsys.OpenMappedSparse("data/consumequeue/x", 4096, true)
	require.NoError(t, err)
	require.NoError(t, seg.Sync(0, 4096))
	require.NoError(t, other.Sync(0, 4096))
	require.NoError(t, seg.Close())
	require.NoError(t, other.Close())
	require.Equal(t, uint64(1), m.flush.Snapshot().Count())
}

// BenchmarkMetersPerMessage is everything the counters add to one plain send and to one
// pull answer, in isolation: the remoting server's arrival stamp and answer report (two
// monotonic clock reads and rpcMeter.Answered), and countIn for the send; countOut for the
// pull. Compare with the broker's CPU per message (BenchmarkSendMetrics's cpu-ns/msg).
func BenchmarkMetersPerMessage(b *testing.B) {
	m := testMeters(1000, 1000)
	topic, group := "BenchTopic", "BenchGroup"
	epoch := time.Now()
	b.Run("send", func(b *testing.B) {
		for b.Loop() {
			arrived := time.Since(epoch) // Server.stamp
			m.countIn(topic, 1, 1100)
			m.rpc.Answered(310, 0, false, time.Since(epoch)-arrived) // Server.observe
		}
	})
	b.Run("pull", func(b *testing.B) {
		for b.Loop() {
			arrived := time.Since(epoch)
			m.countOut(topic, group, 3, 32, 32*1100, 1)
			m.rpc.Answered(11, 0, false, time.Since(epoch)-arrived)
		}
	})
	b.Run("send/parallel", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				arrived := time.Since(epoch)
				m.countIn(topic, 1, 1100)
				m.rpc.Answered(310, 0, false, time.Since(epoch)-arrived)
			}
		})
	})
}

// An rpc key gives back the codes and flag it was made of, negative codes included.
func TestRPCKeyRoundTrip(t *testing.T) {
	for _, c := range []struct {
		req, resp int16
		held      bool
	}{{10, 0, false}, {11, 19, true}, {RPCOtherCode, RPCOtherCode, true}, {-1, 32767, false}, {32767, -1, true}} {
		req, resp, held := makeRPCKey(c.req, c.resp, c.held).unpack()
		require.Equal(t, c.req, req)
		require.Equal(t, c.resp, resp)
		require.Equal(t, c.held, held)
	}
}
