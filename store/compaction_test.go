package store

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/consumequeue"
	"github.com/ferrymq/ferry/internal/mmap"
	"github.com/ferrymq/ferry/message"
)

// compactOptions are test options whose topic "Cmp" is compacted by KEYS with a
// one-hour tombstone delay and "Prop" by the property "id".
func compactOptions(fsys mmap.FS, dir string, clock *testClock) Options {
	o := testOptions(fsys, dir)
	o.Clock = clock.now
	o.Compaction = func(topic string) (CompactionPolicy, bool) {
		switch topic {
		case "Cmp":
			return CompactionPolicy{DeleteRetention: time.Hour}, true
		case "Prop":
			return CompactionPolicy{KeyProperty: "id"}, true
		}
		return CompactionPolicy{}, false
	}
	return o
}

func newClock() *testClock {
	c := &testClock{}
	c.ms.Store(1_700_000_000_000)
	return c
}

// putKeyed stores body under key (no KEYS when empty) to topic's queue 0.
func putKeyed(t testing.TB, s *Store, topic, key, body string) {
	t.Helper()
	put(t, s, testMessage{topic: topic, keys: key, body: body, uniq: "U" + body}, false)
}

// settle makes everything written durable and dispatched, so a round may scan it.
func settle(t testing.TB, s *Store) {
	t.Helper()
	require.NoError(t, s.CommitLog().Flush())
	waitDispatched(t, s)
}

// bodies is what a reader from the queue's minimum (0 unless a cleanup moved it) gets
// from topic's queue 0, as "offset:body".
func bodies(t testing.TB, s *Store, topic string) []string {
	t.Helper()
	var out []string
	for off := s.MinOffset(topic, 0); off < s.MaxOffset(topic, 0); {
		r, err := s.PullMessages(topic, 0, off, 7, 1<<20, nil)
		require.NoError(t, err)
		require.Contains(t, []GetStatus{Found, NoMatchedMessage}, r.Status)
		require.Greater(t, r.NextBeginOffset, off)
		for i, b := range r.Messages {
			rec, _, err := message.DecodeRecord(b)
			require.NoError(t, err)
			require.Equal(t, r.QueueOffsets[i], rec.QueueOffset)
			out = append(out, fmt.Sprintf("%d:%s", rec.QueueOffset, rec.Body))
		}
		off = r.NextBeginOffset
		r.Release()
	}
	return out
}

func TestCompactionKeepsTheLatestPerKey(t *testing.T) {
	clock := newClock()
	o := compactOptions(mmap.OSFS{}, t.TempDir(), clock)
	o.CompactionReadsPerRound = 40
	s := openStore(t, o)
	// Offsets: round r of key k is at 51*r+k (k < 50); 51*r+50 has no key.
	for r := range 3 {
		for k := range 50 {
			putKeyed(t, s, "Cmp", fmt.Sprintf("key-%02d", k), fmt.Sprintf("r%d-k%02d", r, k))
			putKeyed(t, s, "Other", fmt.Sprintf("key-%02d", k), fmt.Sprintf("o%d-k%02d", r, k))
		}
		putKeyed(t, s, "Cmp", "", fmt.Sprintf("r%d-nokey", r))
	}
	settle(t, s)
	require.Len(t, bodies(t, s, "Cmp"), 153, "nothing marked before a round")

	var marked int64
	rounds := 0
	for ; s.CompactionStats().Reads < 153; rounds++ {
		before := s.CompactionStats().Reads
		marked += s.compactOnce()
		require.LessOrEqual(t, s.CompactionStats().Reads-before, int64(40), "a round reads at most its budget")
	}
	require.Equal(t, 4, rounds, "153 records at 40 a round")
	require.Equal(t, int64(100), marked)
	require.Zero(t, s.compactOnce(), "nothing left to mark")

	var want []string
	for r := range 3 {
		if r == 2 {
			for k := range 50 {
				want = append(want, fmt.Sprintf("%d:r2-k%02d", 102+k, k))
			}
		}
		want = append(want, fmt.Sprintf("%d:r%d-nokey", 51*r+50, r))
	}
	slices.SortFunc(want, func(a, b string) int { return cmpOffset(a) - cmpOffset(b) })
	require.Equal(t, want, bodies(t, s, "Cmp"), "the latest per key and every keyless message, at their offsets")
	require.Len(t, bodies(t, s, "Other"), 150, "a topic without compaction keeps everything")

	st := s.CompactionStats()
	require.Equal(t, int64(100), st.Marked)
	require.Equal(t, int64(100), st.Skipped)
	require.Equal(t, int64(1), st.Queues)
	require.Equal(t, int64(153), st.Reads, "each record read once")

	// A consumer positioned in the middle of a superseded run resumes where it was.
	r, err := s.PullMessages("Cmp", 0, 60, 1, 1<<20, nil)
	require.NoError(t, err)
	require.Equal(t, Found, r.Status)
	require.Equal(t, []int64{101}, r.QueueOffsets, "60..100 are superseded: the keyless 101 is next")
	r.Release()

	// New values supersede the kept ones.
	putKeyed(t, s, "Cmp", "key-07", "r3-k07")
	settle(t, s)
	require.Equal(t, int64(1), s.compactOnce())
	got := bodies(t, s, "Cmp")
	require.NotContains(t, got, "109:r2-k07")
	require.Equal(t, "153:r3-k07", got[len(got)-1])
}

// cmpOffset is the offset of an "offset:body" string.
func cmpOffset(s string) int {
	var n int
	_, _ = fmt.Sscanf(s, "%d:", &n)
	return n
}

func TestCompactionKeyProperty(t *testing.T) {
	clock := newClock()
	s := openStore(t, compactOptions(mmap.OSFS{}, t.TempDir(), clock))
	for i := range 6 {
		props, err := message.EncodeProperties(map[string]string{"id": fmt.Sprint(i % 2), message.PropertyKeys: fmt.Sprint(i)})
		require.NoError(t, err)
		rec := message.Record{Topic: []byte("Prop"), Body: fmt.Appendf(nil, "v%d", i), Properties: props, BornHost: testHost}
		_, err = s.PutMessage(&rec, false)
		require.NoError(t, err)
	}
	settle(t, s)
	require.Equal(t, int64(4), s.compactOnce())
	require.Equal(t, []string{"4:v4", "5:v5"}, bodies(t, s, "Prop"), "KEYS is not the key of this topic")
}

func TestCompactionTombstones(t *testing.T) {
	clock := newClock()
	s := openStore(t, compactOptions(mmap.OSFS{}, t.TempDir(), clock))
	putKeyed(t, s, "Cmp", "a", "a1")
	putKeyed(t, s, "Cmp", "b", "b1")
	putKeyed(t, s, "Cmp", "a", "a2")
	putKeyed(t, s, "Cmp", "a", "") // tombstone of a at offset 3
	settle(t, s)
	require.Equal(t, int64(2), s.compactOnce(), "the tombstone supersedes a1 and a2 at once")
	require.Equal(t, []string{"1:b1", "3:"}, bodies(t, s, "Cmp"), "the tombstone is readable during its delay")

	clock.advance(time.Hour - time.Millisecond)
	require.Zero(t, s.compactOnce())
	clock.advance(time.Millisecond)
	require.Equal(t, int64(1), s.compactOnce(), "the tombstone goes after its delay")
	require.Equal(t, []string{"1:b1"}, bodies(t, s, "Cmp"))
	require.Equal(t, int64(1), s.CompactionStats().Tombstones)

	// The key may come back; a tombstone followed by a value is not dropped later.
	putKeyed(t, s, "Cmp", "b", "")
	putKeyed(t, s, "Cmp", "b", "b2")
	putKeyed(t, s, "Cmp", "a", "a3")
	settle(t, s)
	require.Equal(t, int64(2), s.compactOnce(), "b1 and b's tombstone")
	clock.advance(2 * time.Hour)
	require.Zero(t, s.compactOnce())
	require.Equal(t, []string{"5:b2", "6:a3"}, bodies(t, s, "Cmp"))

	// A queue whose every message is marked answers NoMatchedMessage up to its end.
	putKeyed(t, s, "Cmp", "a", "")
	putKeyed(t, s, "Cmp", "b", "")
	settle(t, s)
	clock.advance(2 * time.Hour)
	require.Equal(t, int64(2), s.compactOnce(), "a3 and b2")
	require.Equal(t, int64(2), s.compactOnce(), "both tombstones, already past their delay")
	r, err := s.PullMessages("Cmp", 0, 0, 32, 1<<20, nil)
	require.NoError(t, err)
	require.Equal(t, NoMatchedMessage, r.Status)
	require.Equal(t, int64(9), r.NextBeginOffset)
	r.Release()
}

func TestCompactionSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	clock := newClock()
	o := compactOptions(mmap.OSFS{}, dir, clock)
	s := openStore(t, o)
	for i := range 30 {
		putKeyed(t, s, "Cmp", fmt.Sprintf("k%d", i%10), fmt.Sprintf("v%02d", i))
	}
	putKeyed(t, s, "Cmp", "k0", "") // offset 30
	settle(t, s)
	require.Equal(t, int64(21), s.compactOnce())
	want := bodies(t, s, "Cmp")
	require.Len(t, want, 10)
	require.NoError(t, s.Shutdown(context.Background()))

	s = openStore(t, o)
	require.Equal(t, want, bodies(t, s, "Cmp"), "the marks hold from the first pull after a restart")
	require.Equal(t, int64(21), s.CompactionStats().Skipped)
	require.Zero(t, s.compactOnce(), "the rescan finds nothing new")
	require.Equal(t, int64(10), s.CompactionStats().Reads, "the rescan reads only what is not marked")

	putKeyed(t, s, "Cmp", "k3", "new-k3")
	settle(t, s)
	require.Equal(t, int64(1), s.compactOnce(), "the rebuilt state knows k3's latest")
	got := bodies(t, s, "Cmp")
	require.NotContains(t, got, "23:v23")
	require.Contains(t, got, "31:new-k3")
	clock.advance(time.Hour)
	require.Equal(t, int64(1), s.compactOnce(), "the rescanned tombstone still expires")
	require.NotContains(t, bodies(t, s, "Cmp"), "30:")
}

func TestCompactionDamagedFileIsIgnoredSafely(t *testing.T) {
	dir := t.TempDir()
	clock := newClock()
	o := compactOptions(mmap.OSFS{}, dir, clock)
	s := openStore(t, o)
	for i := range 8 {
		putKeyed(t, s, "Cmp", fmt.Sprintf("k%d", i%2), fmt.Sprintf("v%d", i))
	}
	settle(t, s)
	require.Equal(t, int64(6), s.compactOnce())
	require.NoError(t, s.Shutdown(context.Background()))
	good, err := o.FS.ReadFile(o.compactionPath())
	require.NoError(t, err)

	for name, data := range map[string][]byte{
		"torn":    good[:len(good)-3],
		"flipped": append(append([]byte(nil), good[:6]...), append([]byte{good[6] ^ 1}, good[7:]...)...),
		"empty":   {},
	} {
		t.Run(name, func(t *testing.T) {
			require.NoError(t, o.FS.WriteFileAtomic(o.compactionPath(), data))
			s := openStore(t, o)
			require.Equal(t, int64(1), s.CompactionStats().BadFiles)
			require.Len(t, bodies(t, s, "Cmp"), 8, "no marks: everything readable, nothing lost")
			require.Equal(t, int64(6), s.compactOnce(), "the rescan marks again")
			require.Equal(t, []string{"6:v6", "7:v7"}, bodies(t, s, "Cmp"))
			require.NoError(t, s.Shutdown(context.Background()))
		})
	}
}

func TestCompactionFailedWriteKeepsTheOldFile(t *testing.T) {
	efs := mmap.NewErrorFS(mmap.OSFS{})
	clock := newClock()
	o := compactOptions(efs, t.TempDir(), clock)
	s := openStore(t, o)
	putKeyed(t, s, "Cmp", "k", "v0")
	putKeyed(t, s, "Cmp", "k", "v1")
	settle(t, s)
	require.Equal(t, int64(1), s.compactOnce())
	remove := efs.Inject(mmap.Rule{Ops: mmap.OpRename, Path: mmap.PathIs(o.compactionPath())})
	putKeyed(t, s, "Cmp", "k", "v2")
	settle(t, s)
	require.Equal(t, int64(1), s.compactOnce(), "marked in memory")
	require.Equal(t, int64(1), s.CompactionStats().BadFiles, "the failed write is counted")
	require.Equal(t, []string{"2:v2"}, bodies(t, s, "Cmp"))
	remove()
	require.NoError(t, s.Shutdown(context.Background()))

	s = openStore(t, o)
	require.Equal(t, []string{"1:v1", "2:v2"}, bodies(t, s, "Cmp"), "the old file: v1 readable again, never lost")
	require.Equal(t, int64(1), s.compactOnce())
	require.Equal(t, []string{"2:v2"}, bodies(t, s, "Cmp"))
}

func TestCompactionDeleteTopicAndPolicyOff(t *testing.T) {
	clock := newClock()
	compacted := true
	o := compactOptions(mmap.OSFS{}, t.TempDir(), clock)
	o.Compaction = func(topic string) (CompactionPolicy, bool) { return CompactionPolicy{}, topic == "Cmp" && compacted }
	s := openStore(t, o)
	for i := range 4 {
		putKeyed(t, s, "Cmp", "k", fmt.Sprint(i))
	}
	settle(t, s)
	require.Equal(t, int64(3), s.compactOnce())
	require.NoError(t, s.DeleteTopic("Cmp"))
	require.Zero(t, s.CompactionStats().Skipped)
	for i := range 2 {
		putKeyed(t, s, "Cmp", "k", fmt.Sprintf("new%d", i))
	}
	settle(t, s)
	require.Equal(t, []string{"0:new0", "1:new1"}, bodies(t, s, "Cmp"), "the old marks do not hide the new topic's messages")

	require.Equal(t, int64(1), s.compactOnce())
	compacted = false
	require.Zero(t, s.compactOnce())
	require.Equal(t, []string{"0:new0", "1:new1"}, bodies(t, s, "Cmp"), "compaction off: the marks go")
	require.Equal(t, CompactionStats{Rounds: 2, Reads: 6, Marked: 4}, s.CompactionStats())
}

// Power losses at random points while producers write and rounds run: after each, every
// key's latest message among the records that survived is readable, and every marked
// offset has a later message of its key that survived.
func TestCompactionPowerLoss(t *testing.T) {
	fsys := mmap.NewMemFS()
	clock := newClock()
	o := compactOptions(fsys, "/store", clock)
	o.FlushInterval = 5 * time.Millisecond
	s := openStore(t, o)
	rng := rand.New(rand.NewPCG(7, 11))
	n := 0
	for i := range 30 {
		for range 1 + rng.IntN(40) {
			putKeyed(t, s, "Cmp", fmt.Sprintf("k%d", rng.IntN(12)), fmt.Sprintf("v%05d", n))
			n++
			if rng.IntN(10) == 0 {
				s.compactOnce()
			}
		}
		waitDispatched(t, s)
		crashed := fsys.Crash(rng, rng.Float64())
		co := o
		co.FS = crashed
		rs, err := Open(co)
		require.NoError(t, err, "crash %d", i)
		checkCompacted(t, rs, i)
		rs.compactOnce() // the rescan after the crash
		checkCompacted(t, rs, i)
		require.NoError(t, rs.Shutdown(context.Background()))
	}
}

// checkCompacted asserts the guarantee on Cmp/0 of s: the latest record of every key in
// the consume queue is pulled, and every record not pulled has a later one of its key.
func checkCompacted(t *testing.T, s *Store, crash int) {
	t.Helper()
	q, err := s.cqs.Queue("Cmp", 0, false)
	require.NoError(t, err)
	if q == nil {
		return
	}
	latest := map[string]int64{}
	keyOf := map[int64]string{}
	for off := q.MinOffset(); off < q.MaxOffset(); off++ {
		u, err := q.Get(off)
		require.NoError(t, err)
		if u.Hole() {
			continue
		}
		rec, v, err := s.ReadMessage(u.Offset)
		require.NoError(t, err)
		k := string(compactionKey(&rec, ""))
		v.Release()
		latest[k], keyOf[off] = off, k
	}
	pulled := map[int64]bool{}
	for _, b := range bodies(t, s, "Cmp") {
		pulled[int64(cmpOffset(b))] = true
	}
	for _, k := range slices.Sorted(maps.Keys(latest)) {
		require.True(t, pulled[latest[k]], "crash %d: key %s's latest (offset %d) is not readable", crash, k, latest[k])
	}
	for off, k := range keyOf {
		if !pulled[off] {
			require.Greater(t, latest[k], off, "crash %d: offset %d hidden without a later message of %s", crash, off, k)
		}
	}
}

func TestCompactionOptionsValidate(t *testing.T) {
	o := testOptions(mmap.OSFS{}, t.TempDir())
	o.CompactionReadsPerRound = 0
	require.ErrorContains(t, o.Validate(), "CompactionReadsPerRound")
}

func TestCompactionFileRoundTrip(t *testing.T) {
	marks := map[queueKey][]int64{{"A", 0}: {0, 1, 5, 1 << 40}, {"B", 7}: {3}, {"A", 2}: {9, 10}}
	got, err := decodeCompactionFile(encodeCompactionFile(marks))
	require.NoError(t, err)
	require.Equal(t, marks, got)
	_, err = decodeCompactionFile([]byte("FCMP"))
	require.ErrorIs(t, err, ErrCompactionFile)

	// A file cut at any byte is refused as a whole: never a part of its marks.
	data := encodeCompactionFile(marks)
	for n := range len(data) {
		_, err := decodeCompactionFile(data[:n])
		require.ErrorIs(t, err, ErrCompactionFile, "cut at %d", n)
	}
}

func FuzzCompactionFile(f *testing.F) {
	f.Add(encodeCompactionFile(map[queueKey][]int64{{"A", 0}: {0, 1, 5}, {"B", 7}: {3}}))
	f.Add(encodeCompactionFile(map[queueKey][]int64{}))
	f.Add([]byte("FCMP\x01\x01"))
	f.Fuzz(func(t *testing.T, data []byte) {
		marks, err := decodeCompactionFile(data)
		if err != nil {
			require.ErrorIs(t, err, ErrCompactionFile)
			return
		}
		for k, offs := range marks {
			require.NotEmpty(t, offs, "%v", k)
			require.True(t, slices.IsSorted(offs))
			require.GreaterOrEqual(t, offs[0], int64(0))
		}
		again, err := decodeCompactionFile(encodeCompactionFile(marks))
		require.NoError(t, err)
		require.Equal(t, marks, again)
	})
}

// copyOptions are compactOptions whose cleanup deletes every segment older than a minute
// at any hour.
func copyOptions(fsys mmap.FS, dir string, clock *testClock) Options {
	o := compactOptions(fsys, dir, clock)
	o.FileReservedTime = time.Minute
	o.DeleteWhen = make([]int, 24)
	for h := range o.DeleteWhen {
		o.DeleteWhen[h] = h
	}
	return o
}

// fill writes about n bytes of messages to the topic Other, so the log moves on by that
// much.
func fill(t testing.TB, s *Store, n int) {
	t.Helper()
	body := string(make([]byte, 1000))
	for range n / 1100 {
		put(t, s, testMessage{topic: "Other", body: body, uniq: "FILL"}, false)
	}
}

// pastFirstSegment fills more than a segment, makes all of it old enough to go and
// writes a little more, so that the first segment is neither active nor young.
func pastFirstSegment(t testing.TB, s *Store, clock *testClock) {
	t.Helper()
	fill(t, s, 200<<10)
	settle(t, s)
	clock.advance(2 * time.Minute)
	fill(t, s, 1100)
	settle(t, s)
}

// expireAll makes every segment but the active one old enough to go and runs cleanup
// rounds until one deletes nothing; it returns how many segments went.
func expireAll(t testing.TB, s *Store, clock *testClock) int {
	t.Helper()
	settle(t, s)
	clock.advance(2 * time.Minute)
	fill(t, s, 1100) // a record stored now, so the active segment is not the old ones
	settle(t, s)
	total := 0
	for {
		n := s.cleanOnce()
		if n == 0 {
			return total
		}
		total += n
	}
}

func TestCompactionCopiesLiveRecordsBeforeCleanup(t *testing.T) {
	dir := t.TempDir()
	clock := newClock()
	o := copyOptions(mmap.OSFS{}, dir, clock)
	s := openStore(t, o)
	for k := range 10 {
		putKeyed(t, s, "Cmp", fmt.Sprintf("k%d", k), fmt.Sprintf("v0-k%d", k)) // offsets 0..9
	}
	fill(t, s, 200<<10)
	for k := range 5 {
		putKeyed(t, s, "Cmp", fmt.Sprintf("k%d", k), fmt.Sprintf("v1-k%d", k)) // offsets 10..14
	}
	settle(t, s)
	require.Equal(t, int64(5), s.compactOnce())
	want := []string{"5:v0-k5", "6:v0-k6", "7:v0-k7", "8:v0-k8", "9:v0-k9",
		"10:v1-k0", "11:v1-k1", "12:v1-k2", "13:v1-k3", "14:v1-k4"}
	require.Equal(t, want, bodies(t, s, "Cmp"))

	require.Positive(t, expireAll(t, s, clock))
	require.Positive(t, s.CommitLog().MinOffset(), "the segment of the first values is gone")
	st := s.CompactionStats()
	require.Equal(t, int64(5), st.Copied, "the five live first values were copied; the superseded ones were not")
	require.Equal(t, int64(5), st.Relocated)
	require.Equal(t, want, bodies(t, s, "Cmp"), "a reader from the start still gets every latest value, at its offset")
	require.Equal(t, int64(5), s.MinOffset("Cmp", 0), "the minimum moved past the superseded head, to the first live record")
	r, err := s.PullMessages("Other", 0, 0, 1, 1<<20, nil)
	require.NoError(t, err)
	require.Equal(t, OffsetTooSmall, r.Status, "an ordinary topic lost its old messages")
	r.Release()
	ts, err := s.EarliestStoreTime("Cmp", 0)
	require.NoError(t, err)
	require.Equal(t, int64(1_700_000_000_000), ts, "store times are read from the copies")
	q, err := s.cqs.Queue("Cmp", 0, false)
	require.NoError(t, err)
	u, err := q.Get(7)
	require.NoError(t, err)
	require.Less(t, u.Offset, s.CommitLog().MinOffset())
	rec, v, err := s.ReadMessage(u.Offset)
	require.NoError(t, err, "a read by the original offset (VIEW_MESSAGE_BY_ID, a send-back) finds the copy")
	require.Equal(t, "v0-k7", string(rec.Body))
	require.Equal(t, u.Offset, rec.PhysicalOffset)
	v.Release()

	// A restart rebuilds the relocation table from the copies.
	require.NoError(t, s.Shutdown(context.Background()))
	s = openStore(t, o)
	require.Equal(t, want, bodies(t, s, "Cmp"))
	require.Equal(t, int64(5), s.CompactionStats().Relocated)
	require.Zero(t, s.compactOnce(), "the rescan reads the copies")
	require.Equal(t, int64(5), s.CompactionStats().Reads-5, "ten live records read, five of them copies")

	// A copy is superseded like its original, and a copy whose segment goes is copied again.
	putKeyed(t, s, "Cmp", "k7", "v2-k7")
	settle(t, s)
	require.Equal(t, int64(1), s.compactOnce())
	fill(t, s, 200<<10)
	require.Positive(t, expireAll(t, s, clock))
	require.Equal(t, int64(10), s.CompactionStats().Copied, "since the restart: 4 first values (again), 5 second ones, k7's third")
	got := bodies(t, s, "Cmp")
	require.Equal(t, []string{"5:v0-k5", "6:v0-k6", "8:v0-k8", "9:v0-k9",
		"10:v1-k0", "11:v1-k1", "12:v1-k2", "13:v1-k3", "14:v1-k4", "15:v2-k7"}, got)
	require.Equal(t, int64(10), s.CompactionStats().Relocated)
}

func TestCompactionCopyBudgetDelaysCleanup(t *testing.T) {
	clock := newClock()
	o := copyOptions(mmap.OSFS{}, t.TempDir(), clock)
	o.CompactionReadsPerRound = 2
	s := openStore(t, o)
	for k := range 5 {
		putKeyed(t, s, "Cmp", fmt.Sprintf("k%d", k), fmt.Sprintf("v%d", k))
	}
	pastFirstSegment(t, s, clock)
	require.Zero(t, s.cleanOnce(), "two of five copied: the first segment stays")
	require.Zero(t, s.CommitLog().MinOffset())
	require.Zero(t, s.cleanOnce(), "four of five")
	require.Positive(t, s.cleanOnce(), "all copied: the segments go")
	require.Equal(t, int64(5), s.CompactionStats().Copied)
	require.Len(t, bodies(t, s, "Cmp"), 5)
}

func TestCompactionWithoutCopyKeepsSegments(t *testing.T) {
	clock := newClock()
	o := copyOptions(mmap.OSFS{}, t.TempDir(), clock)
	o.CompactionCopy = false // a slave
	s := openStore(t, o)
	fill(t, s, 100<<10)
	putKeyed(t, s, "Cmp", "k", "v")
	fill(t, s, 200<<10)
	before := s.CommitLog().Segments()
	expireAll(t, s, clock)
	require.Zero(t, s.CompactionStats().Copied)
	live := s.CommitLog().Segments()[0]
	require.LessOrEqual(t, live.Start, before[1].Start, "the segment with the live record stays")
	require.Positive(t, live.Start, "the segment before it went")
	require.Equal(t, []string{"0:v"}, bodies(t, s, "Cmp"))

	// The master's copy arrives in the log (here appended by hand, then forgotten, as
	// replication would write it): the slave follows it and lets the segment go.
	q, err := s.cqs.Queue("Cmp", 0, false)
	require.NoError(t, err)
	u, err := q.Get(0)
	require.NoError(t, err)
	require.NoError(t, s.copyRecord(u.Offset, u.Offset, u.Size))
	s.comp.relocMu.Lock()
	clear(s.comp.reloc.m)
	s.comp.relocMu.Unlock()
	require.Positive(t, expireAll(t, s, clock))
	require.Greater(t, s.CommitLog().MinOffset(), u.Offset)
	require.Equal(t, []string{"0:v"}, bodies(t, s, "Cmp"), "read from the followed copy")
	require.Equal(t, int64(1), s.CompactionStats().Relocated)
}

// A power loss at the moment the cleanup deletes a segment: the copies made for it are
// durable, so the reopened store serves every latest value.
func TestCompactionCopiesAreDurableBeforeDeletion(t *testing.T) {
	mem := mmap.NewMemFS()
	efs := mmap.NewErrorFS(mem)
	clock := newClock()
	o := copyOptions(efs, "/store", clock)
	s := openStore(t, o)
	for k := range 6 {
		putKeyed(t, s, "Cmp", fmt.Sprintf("k%d", k), fmt.Sprintf("v%d", k))
	}
	fill(t, s, 200<<10)
	settle(t, s)
	var crashed *mmap.MemFS
	efs.Inject(mmap.Rule{Ops: mmap.OpRemove, Path: mmap.PathContains(CommitLogDirName), Times: 1,
		Hook: func(mmap.Op, string) error { crashed = mem.Crash(nil, 0); return nil }})
	require.Positive(t, expireAll(t, s, clock))
	require.NotNil(t, crashed)
	co := o
	co.FS = crashed
	rs, err := Open(co)
	require.NoError(t, err)
	defer func() { require.NoError(t, rs.Shutdown(context.Background())) }()
	require.Equal(t, []string{"0:v0", "1:v1", "2:v2", "3:v3", "4:v4", "5:v5"}, bodies(t, rs, "Cmp"))
	require.Equal(t, int64(6), rs.CompactionStats().Relocated)
}

// TestCompactionKeyChangeRescans: when compactionKey changes, a queue is scanned again
// under the new key, so a key extracted the old way never marks a message the new way.
func TestCompactionKeyChangeRescans(t *testing.T) {
	prop := ""
	o := compactOptions(mmap.OSFS{}, t.TempDir(), newClock())
	o.Compaction = func(topic string) (CompactionPolicy, bool) {
		return CompactionPolicy{KeyProperty: prop}, topic == "Cmp"
	}
	s := openStore(t, o)
	put := func(keys, id, body string) {
		props, err := message.EncodeProperties(map[string]string{"id": id, message.PropertyKeys: keys})
		require.NoError(t, err)
		rec := message.Record{Topic: []byte("Cmp"), Body: []byte(body), Properties: props, BornHost: testHost}
		_, err = s.PutMessage(&rec, false)
		require.NoError(t, err)
	}
	put("order-7", "", "A") // keyed by KEYS: order-7
	settle(t, s)
	s.compactOnce()
	prop = "id"
	put("order-9", "order-7", "B") // keyed by id now: another entity whose id is order-7
	settle(t, s)
	s.compactOnce()
	require.Equal(t, []string{"0:A", "1:B"}, bodies(t, s, "Cmp"), "A has no id: nothing supersedes it")
}

// TestCompactionDeleteTopicDropsMarksFirst: when the marks file cannot be written,
// DeleteTopic fails before the queues go, so a topic created again under the name never
// meets the old marks.
func TestCompactionDeleteTopicDropsMarksFirst(t *testing.T) {
	efs := mmap.NewErrorFS(mmap.OSFS{})
	compacted := true
	o := compactOptions(efs, t.TempDir(), newClock())
	o.Compaction = func(topic string) (CompactionPolicy, bool) { return CompactionPolicy{}, topic == "Cmp" && compacted }
	s := openStore(t, o)
	for i := range 4 {
		putKeyed(t, s, "Cmp", "k", fmt.Sprint(i))
	}
	settle(t, s)
	require.Equal(t, int64(3), s.compactOnce())
	remove := efs.Inject(mmap.Rule{Ops: mmap.OpRename, Path: mmap.PathIs(o.compactionPath())})
	require.ErrorIs(t, s.DeleteTopic("Cmp"), mmap.ErrInjected)
	remove()
	require.Equal(t, []string{"3:3"}, bodies(t, s, "Cmp"), "the queue and its marks are still there")
	require.NoError(t, s.DeleteTopic("Cmp"))
	compacted = false // created again as an ordinary topic
	for i := range 2 {
		putKeyed(t, s, "Cmp", "", fmt.Sprintf("plain%d", i))
	}
	settle(t, s)
	require.NoError(t, s.Shutdown(t.Context()))
	s = openStore(t, o)
	require.Equal(t, []string{"0:plain0", "1:plain1"}, bodies(t, s, "Cmp"))
}

// TestCompactionTruncateKeepsCopiedUnits: a Truncate that cuts the copy of a key's
// latest message (its original segment deleted already) keeps that message's unit in its
// queue, pinned, until a copy arrives again (as it does by replication from the new
// master); the message is then readable at its original offset, and the pin goes.
func TestCompactionTruncateKeepsCopiedUnits(t *testing.T) {
	clock := newClock()
	o := copyOptions(mmap.OSFS{}, t.TempDir(), clock)
	s := openStore(t, o)
	putKeyed(t, s, "Cmp", "k", "latest")
	pastFirstSegment(t, s, clock)
	cut := s.CommitLog().MaxOffset()
	for s.cleanOnce() > 0 {
	}
	require.Equal(t, []string{"0:latest"}, bodies(t, s, "Cmp"), "served from its copy")
	cq, err := s.cqs.Queue(CompactionCopyTopic, 0, false)
	require.NoError(t, err)
	require.NotNil(t, cq)
	units := make([]consumequeue.Unit, 1)
	n, err := cq.Read(cq.MaxOffset()-1, units)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	rec, v, err := s.cl.ReadRecord(units[0].Offset)
	require.NoError(t, err)
	copyBody := bytes.Clone(rec.Body) // the original record, as the new master would send it
	v.Release()
	require.NoError(t, s.Shutdown(t.Context()))

	require.NoError(t, Truncate(o, cut))
	s = openStore(t, o)
	require.Equal(t, int64(0), s.MinOffset("Cmp", 0), "the unit of the key's latest message is kept")
	require.Equal(t, int64(1), s.MaxOffset("Cmp", 0))
	copyRec := message.Record{Topic: []byte(CompactionCopyTopic), Body: copyBody, BornHost: testHost}
	_, err = s.PutMessage(&copyRec, false)
	require.NoError(t, err)
	settle(t, s)
	require.NoError(t, s.followCopies())
	require.Equal(t, []string{"0:latest"}, bodies(t, s, "Cmp"), "readable again from the new copy")
	require.Empty(t, s.comp.reloc.pins, "the pin is released")
	require.NoError(t, s.Shutdown(t.Context()))
	s = openStore(t, o)
	require.Equal(t, []string{"0:latest"}, bodies(t, s, "Cmp"), "and after a restart")
}
