package offsets

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/ferrymq/ferry/broker/internal/metafile"
	"github.com/ferrymq/ferry/broker/internal/metafile/metafiletest"
	"github.com/ferrymq/ferry/internal/mmap"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const offsetsPath = "/store/config/consumerOffset.json"

// mainWrites counts the replacements of the main offsets file made through fsys.
func mainWrites(fsys *mmap.ErrorFS) int {
	return fsys.Calls(mmap.OpWriteFileAtomic, mmap.PathIs(offsetsPath))
}

func testOptions(fsys mmap.FS, dir string) Options {
	o := DefaultOptions()
	o.FS, o.Dir = fsys, dir
	o.FlushInterval = time.Hour // tests flush explicitly unless they say otherwise
	return o
}

func openStore(t *testing.T, o Options) *Store {
	t.Helper()
	s, err := Open(o)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestOptionsValidate(t *testing.T) {
	o := DefaultOptions()
	require.Equal(t, 5*time.Second, o.FlushInterval)
	require.ErrorIs(t, o.Validate(), ErrInvalidOptions)
	o.Dir = "/x"
	require.NoError(t, o.Validate())
	o.FlushInterval = 0
	require.ErrorIs(t, o.Validate(), ErrInvalidOptions)
	o = DefaultOptions()
	o.Dir, o.FS = "/x", nil
	_, err := Open(o)
	require.ErrorIs(t, err, ErrInvalidOptions)
}

func TestCommitAndQuery(t *testing.T) {
	s := openStore(t, testOptions(mmap.NewMemFS(), "/store"))
	type op struct {
		group, topic string
		queue        int32
		offset       int64
	}
	cases := []struct {
		name   string
		ops    []op
		query  op // offset = expected value
		wantOK bool
	}{
		{"unknown", nil, op{"g", "t", 0, 0}, false},
		{"commit", []op{{"g", "t", 0, 12}}, op{"g", "t", 0, 12}, true},
		{"overwrite", []op{{"g", "t", 1, 12}, {"g", "t", 1, 30}}, op{"g", "t", 1, 30}, true},
		{"backwards allowed (reset)", []op{{"g", "t", 2, 50}, {"g", "t", 2, 10}}, op{"g", "t", 2, 10}, true},
		{"minus one ignored", []op{{"g", "t", 3, 7}, {"g", "t", 3, -1}}, op{"g", "t", 3, 7}, true},
		{"minus one alone stores nothing", []op{{"g", "t", 4, -1}}, op{"g", "t", 4, 0}, false},
		{"negative queue ignored", []op{{"g", "t", -1, 5}}, op{"g", "t", -1, 0}, false},
		{"zero is an offset", []op{{"g", "t", 5, 0}}, op{"g", "t", 5, 0}, true},
		{"groups are separate", []op{{"g1", "t", 6, 1}, {"g2", "t", 6, 2}}, op{"g2", "t", 6, 2}, true},
		{"topics are separate", []op{{"g", "t1", 7, 1}, {"g", "t2", 7, 2}}, op{"g", "t1", 7, 1}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, o := range tc.ops {
				s.Commit(o.group, o.topic, o.queue, o.offset)
			}
			got, ok := s.Query(tc.query.group, tc.query.topic, tc.query.queue)
			require.Equal(t, tc.wantOK, ok)
			require.Equal(t, tc.query.offset, got)
		})
	}
}

func TestListingAndDeletion(t *testing.T) {
	s := openStore(t, testOptions(mmap.NewMemFS(), "/store"))
	s.Commit("cg", "TopicA", 0, 1)
	s.Commit("cg", "TopicA", 1, 2)
	s.Commit("cg", "%RETRY%cg", 0, 3)
	s.Commit("other", "TopicA", 0, 4)
	s.Commit("other", "TopicB", 0, 5)

	require.Equal(t, []string{"cg", "other"}, s.Groups())
	require.Equal(t, []string{"%RETRY%cg", "TopicA"}, s.TopicsOf("cg"))
	require.Equal(t, []string{"cg", "other"}, s.GroupsOf("TopicA"))
	require.Empty(t, s.TopicsOf("nobody"))
	require.Equal(t, map[int32]int64{0: 1, 1: 2}, s.Offsets("cg", "TopicA"))
	require.Len(t, s.Snapshot(), 5)

	require.Equal(t, 3, s.DeleteTopic("TopicA"))
	require.Equal(t, 0, s.DeleteTopic("TopicA"))
	require.Equal(t, []string{"%RETRY%cg"}, s.TopicsOf("cg"))
	require.Equal(t, 1, s.DeleteGroup("other"))
	require.Equal(t, []string{"cg"}, s.Groups())
	require.Equal(t, map[Key]int64{{Group: "cg", Topic: "%RETRY%cg", QueueID: 0}: 3}, s.Snapshot())

	snap := s.Snapshot()
	snap[Key{Group: "x", Topic: "y"}] = 1
	require.Len(t, s.Snapshot(), 1, "Snapshot returns a copy")
}

func TestPersistRoundTrip(t *testing.T) {
	metafiletest.EachFS(t, func(t *testing.T, fsys mmap.FS, dir string) {
		o := testOptions(fsys, dir)
		s, err := Open(o)
		require.NoError(t, err)
		s.Commit("cg", "TopicTest", 0, 250)
		s.Commit("cg", "TopicTest", 3, 1<<40)
		s.Commit("cg", "%RETRY%cg", 0, 0)
		s.Commit("g2", "T", 1023, 9)
		want := s.Snapshot()
		require.NoError(t, s.Close())
		require.NoError(t, s.Close(), "Close is idempotent")

		s2 := openStore(t, o)
		require.Equal(t, want, s2.Snapshot())

		if _, onDisk := fsys.(mmap.OSFS); onDisk {
			require.Equal(t, []string{"consumerOffset.json"}, metafiletest.DirNames(t, filepath.Join(dir, "config")),
				"only consumerOffset.json; no temp file")
		}
	})
}

func TestWrittenFileIsValidJSONInRocketMQShape(t *testing.T) {
	fsys := mmap.NewMemFS()
	s := openStore(t, testOptions(fsys, "/store"))
	s.Commit("cg", "TopicTest", 1, 249)
	s.Commit("cg", "TopicTest", 0, 250)
	s.Commit("cg", "%RETRY%cg", 0, 0)
	require.NoError(t, s.Flush())
	data, err := fsys.ReadFile(offsetsPath)
	require.NoError(t, err)
	require.Equal(t, "{\n\t\"offsetTable\":{\n"+
		"\t\t\"%RETRY%cg@cg\":{\"0\":0},\n"+
		"\t\t\"TopicTest@cg\":{\"0\":250,\"1\":249}\n"+
		"\t}\n}\n", string(data))
	require.JSONEq(t, `{"offsetTable":{"%RETRY%cg@cg":{"0":0},"TopicTest@cg":{"0":250,"1":249}}}`, string(data))

	require.Equal(t, 3, s.DeleteTopic("TopicTest")+s.DeleteTopic("%RETRY%cg"))
	require.NoError(t, s.Flush())
	data, err = fsys.ReadFile(offsetsPath)
	require.NoError(t, err)
	require.JSONEq(t, `{"offsetTable":{}}`, string(data))
}

func TestLoadRocketMQ4FileWithBareKeys(t *testing.T) {
	fsys, golden := metafiletest.Golden(t, offsetsPath, "rocketmq4-consumerOffset.json")
	s := openStore(t, testOptions(fsys, "/store"))
	require.Equal(t, map[Key]int64{
		{Group: "cg", Topic: "%RETRY%cg", QueueID: 0}:   0,
		{Group: "cg", Topic: "TopicTest", QueueID: 0}:   250,
		{Group: "cg", Topic: "TopicTest", QueueID: 1}:   249,
		{Group: "cg", Topic: "TopicTest", QueueID: 2}:   251,
		{Group: "cg", Topic: "TopicTest", QueueID: 3}:   250,
		{Group: "cg2", Topic: "TopicTest", QueueID: 0}:  12,
		{Group: "cg2", Topic: "TopicTest", QueueID: 1}:  34,
		{Group: "cg", Topic: "TopicOrder", QueueID: 0}:  9007199254740993, // beyond float64 precision
		{Group: "cg", Topic: "TopicOrder", QueueID: 10}: 7,
	}, s.Snapshot())

	// Loading is not a change; the next change keeps the RocketMQ file as .bak.
	require.NoError(t, s.Flush())
	ok, err := fsys.Exists(offsetsPath + ".bak")
	require.NoError(t, err)
	require.False(t, ok)
	s.Commit("cg", "TopicTest", 0, 260)
	require.NoError(t, s.Flush())
	bak, err := fsys.ReadFile(offsetsPath + ".bak")
	require.NoError(t, err)
	require.Equal(t, golden, bak)
}

func TestLoadRocketMQ5FileTolerant(t *testing.T) {
	fsys, _ := metafiletest.Golden(t, offsetsPath, "rocketmq5-consumerOffset.json")
	s := openStore(t, testOptions(fsys, "/store"))
	require.Equal(t, map[Key]int64{
		{Group: "cg5", Topic: "TopicA", QueueID: 0}: 100,
		{Group: "cg5", Topic: "TopicA", QueueID: 1}: 101,
		{Group: "cg5", Topic: "TopicB", QueueID: 0}: 7,
	}, s.Snapshot())
}

func TestBackupFallback(t *testing.T) {
	good := []byte(`{"offsetTable":{"T@g":{0:5}}}`)
	cases := []struct {
		name      string
		main, bak []byte
		want      bool // T@g loaded
		wantErr   bool
	}{
		{"fresh", nil, nil, false, false},
		{"main missing", nil, good, true, false},
		{"main empty", []byte(""), good, true, false},
		{"main truncated", good[:15], good, true, false},
		{"offsetTable of wrong type", []byte(`{"offsetTable":[1]}`), good, true, false},
		{"main corrupt, no bak", good[:15], nil, false, true},
		{"both corrupt", []byte(`{`), []byte(`x`), false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Open(testOptions(metafiletest.Files(t, offsetsPath, tc.main, tc.bak), "/store"))
			if tc.wantErr {
				require.ErrorIs(t, err, ErrCorrupt)
				return
			}
			require.NoError(t, err)
			defer func() { require.NoError(t, s.Close()) }()
			off, ok := s.Query("g", "T", 0)
			require.Equal(t, tc.want, ok)
			if ok {
				require.Equal(t, int64(5), off)
			}
		})
	}
}

// The flusher runs on synctest's fake clock: each sleep lets exactly the ticks in it
// happen, and synctest.Wait lets the flusher finish what they started, so "nothing was
// written" is checked after the flushes that could have written did run.
func TestPeriodicFlushOnlyWhenDirty(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		efs := mmap.NewErrorFS(mmap.NewMemFS())
		o := testOptions(efs, "/store")
		o.FlushInterval = 5 * time.Millisecond
		s := openStore(t, o)
		settle := func(d time.Duration) {
			time.Sleep(d)
			synctest.Wait()
		}

		settle(6 * o.FlushInterval)
		require.Zero(t, mainWrites(efs), "nothing committed, nothing written")

		s.Commit("g", "t", 0, 1)
		settle(o.FlushInterval)
		require.Equal(t, 1, mainWrites(efs), "the next tick writes")
		settle(6 * o.FlushInterval)
		require.Equal(t, 1, mainWrites(efs), "clean store is not rewritten")

		s.Commit("g", "t", 0, 1) // same offset: not a change
		settle(6 * o.FlushInterval)
		require.Equal(t, 1, mainWrites(efs))

		s.Commit("g", "t", 0, 2)
		settle(o.FlushInterval)
		require.Equal(t, 2, mainWrites(efs), "second periodic write")
		data, err := efs.ReadFile(offsetsPath)
		require.NoError(t, err)
		require.Contains(t, string(data), `"0":2`)

		require.NoError(t, s.Close())
		require.Equal(t, 2, mainWrites(efs), "Close does not rewrite a clean store")
	})
}

func TestCloseFlushes(t *testing.T) {
	mem := mmap.NewMemFS()
	efs := mmap.NewErrorFS(mem)
	s, err := Open(testOptions(efs, "/store"))
	require.NoError(t, err)
	s.Commit("g", "t", 0, 42)
	require.NoError(t, s.Close())
	require.Equal(t, 1, mainWrites(efs))

	s2 := openStore(t, testOptions(mem.Crash(nil, 0), "/store"))
	off, ok := s2.Query("g", "t", 0)
	require.True(t, ok)
	require.Equal(t, int64(42), off, "durable when Close returned")
}

func TestFlushReturnsEveryWriteError(t *testing.T) {
	mem := mmap.NewMemFS()
	efs := mmap.NewErrorFS(mem)
	s := openStore(t, testOptions(efs, "/store"))
	s.Commit("g", "t", 0, 1)
	require.NoError(t, s.Flush())

	s.Commit("g", "t", 0, 2)
	stop := efs.Inject(mmap.Rule{Ops: mmap.OpWriteFileAtomic, Path: mmap.PathSuffix(metafile.BakSuffix)})
	err := s.Flush()
	require.ErrorIs(t, err, mmap.ErrInjected, "a failed backup copy is reported")
	require.NoError(t, s.Flush(), "but the offsets were written, so nothing is pending")
	stop()

	s.Commit("g", "t", 0, 3)
	stop = efs.Inject(mmap.Rule{Ops: mmap.OpWriteFileAtomic})
	err = s.Flush()
	require.ErrorIs(t, err, mmap.ErrInjected)
	require.Contains(t, err.Error(), "backup")
	require.Contains(t, err.Error(), "offsets: write:")
	require.Error(t, s.Flush(), "still dirty after a failed write")

	stop()
	require.NoError(t, s.Flush())
	s2 := openStore(t, testOptions(mem, "/store"))
	off, _ := s2.Query("g", "t", 0)
	require.Equal(t, int64(3), off)
}

// A flush that fails at any step of replacing the offsets file leaves the last flushed
// offsets readable after a crash, and a later flush succeeds.
func TestFlushFailsAtEveryReplaceStep(t *testing.T) {
	for _, step := range []mmap.Op{mmap.OpCreate, mmap.OpFileWrite, mmap.OpFileSync, mmap.OpRename, mmap.OpSyncDir} {
		t.Run(step.String(), func(t *testing.T) {
			mem := mmap.NewMemFS()
			efs := mmap.NewErrorFS(mem)
			s := openStore(t, testOptions(efs, "/store"))
			s.Commit("g", "t", 0, 1)
			require.NoError(t, s.Flush())

			s.Commit("g", "t", 0, 2)
			stop := efs.Inject(mmap.Rule{Ops: step, Path: mmap.PathContains("/store/config")})
			require.ErrorIs(t, s.Flush(), mmap.ErrInjected)
			s2 := openStore(t, testOptions(mem.Crash(nil, 0), "/store"))
			off, _ := s2.Query("g", "t", 0)
			require.Equal(t, int64(1), off, "the last flushed offset")

			stop()
			require.NoError(t, s.Flush(), "still dirty: written now")
			s3 := openStore(t, testOptions(mem.Crash(nil, 0), "/store"))
			off, _ = s3.Query("g", "t", 0)
			require.Equal(t, int64(2), off)
		})
	}
}

func TestCrashAfterFlushKeepsOffsets(t *testing.T) {
	fsys := mmap.NewMemFS()
	s := openStore(t, testOptions(fsys, "/store"))
	s.Commit("g", "t", 0, 10)
	s.Commit("g", "t", 1, 11)
	require.NoError(t, s.Flush())
	s.Commit("g", "t", 1, 99) // not flushed: lost in the crash, like RocketMQ

	crashed := fsys.Crash(nil, 0)
	s2 := openStore(t, testOptions(crashed, "/store"))
	require.Equal(t, map[Key]int64{
		{Group: "g", Topic: "t", QueueID: 0}: 10,
		{Group: "g", Topic: "t", QueueID: 1}: 11,
	}, s2.Snapshot())
}

func TestConcurrentCommits(t *testing.T) {
	o := testOptions(mmap.NewMemFS(), "/store")
	o.FlushInterval = time.Millisecond
	s := openStore(t, o)
	const workers, perWorker = 8, 2000
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			group := fmt.Sprintf("g%d", w%2)
			for i := range perWorker {
				s.Commit(group, "t", int32(w), int64(i))
				s.Commit("shared", "t", 0, int64(i))
				if _, ok := s.Query(group, "t", int32(w)); !ok {
					panic("committed offset not found")
				}
				if i%500 == 0 {
					_ = s.Groups()
					_ = s.Flush()
				}
			}
		}()
	}
	wg.Wait()
	for w := range workers {
		off, ok := s.Query(fmt.Sprintf("g%d", w%2), "t", int32(w))
		require.True(t, ok)
		require.Equal(t, int64(perWorker-1), off)
	}
	require.NoError(t, s.Close())
	s2 := openStore(t, testOptions(o.FS, "/store"))
	require.Equal(t, s.Snapshot(), s2.Snapshot())
}

func TestCommitExistingKeyDoesNotAllocate(t *testing.T) {
	s := openStore(t, testOptions(mmap.NewMemFS(), "/store"))
	s.Commit("group", "topic", 3, 1)
	var off int64
	allocs := testing.AllocsPerRun(1000, func() {
		off++
		s.Commit("group", "topic", 3, off)
	})
	require.Zero(t, allocs)
}

func BenchmarkCommit(b *testing.B) {
	s, err := Open(testOptions(mmap.NewMemFS(), "/store"))
	require.NoError(b, err)
	defer func() { _ = s.Close() }()
	groups := []string{"cg-a", "cg-b", "cg-c", "cg-d"}
	for _, g := range groups {
		for q := range int32(16) {
			s.Commit(g, "TopicTest", q, 0)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		s.Commit(groups[i&3], "TopicTest", int32(i&15), int64(i))
	}
}

// Commits of one connection apply in the order it sent them (by their arrival sequence
// numbers), whichever is applied first: the Go client's periodic commit of its old
// position (sequence 4) applied after its commit of a reset position (sequence 5) is
// ignored. A later commit of the same connection applies, backwards too (no
// increase-only rule), and keys are tracked each on its own.
func TestCommitFromKeepsConnectionOrder(t *testing.T) {
	s := openStore(t, testOptions(mmap.NewMemFS(), "/store"))
	query := func(q int32) int64 {
		t.Helper()
		off, ok := s.Query("g", "t", q)
		require.True(t, ok)
		return off
	}
	require.True(t, s.CommitFrom("g", "t", 0, 0, 7, 5))
	require.False(t, s.CommitFrom("g", "t", 0, 100, 7, 4), "overtaken by sequence 5 of the same connection")
	require.Equal(t, int64(0), query(0))

	require.True(t, s.CommitFrom("g", "t", 0, 30, 7, 9))
	require.True(t, s.CommitFrom("g", "t", 0, 30, 7, 9), "the same request again (a held pull served anew)")
	require.True(t, s.CommitFrom("g", "t", 0, 12, 7, 10), "a later commit moves the offset back")
	require.Equal(t, int64(12), query(0))

	require.True(t, s.CommitFrom("g", "t", 1, 50, 7, 2), "queue 1 has seen no commit of sequence 10")
	require.True(t, s.CommitFrom("g2", "t", 0, 60, 7, 3), "nor has another group")
	require.Equal(t, int64(50), query(1))
	require.False(t, s.CommitFrom("g", "t", 0, 99, 7, 8))
	require.Equal(t, int64(12), query(0))

	require.False(t, s.CommitFrom("g", "t", 0, -1, 7, 11), "a negative offset is ignored as by Commit")
	require.Equal(t, int64(12), query(0))
}

// A commit from another connection always applies (a consumer that reconnected, or
// another member of the group after a rebalance), whatever its sequence number, and its
// connection's order is tracked from then on.
func TestCommitFromOtherConnectionApplies(t *testing.T) {
	s := openStore(t, testOptions(mmap.NewMemFS(), "/store"))
	require.True(t, s.CommitFrom("g", "t", 0, 40, 7, 100))
	require.True(t, s.CommitFrom("g", "t", 0, 20, 8, 1))
	off, _ := s.Query("g", "t", 0)
	require.Equal(t, int64(20), off)
	require.True(t, s.CommitFrom("g", "t", 0, 25, 8, 3))
	require.False(t, s.CommitFrom("g", "t", 0, 22, 8, 2))
	off, _ = s.Query("g", "t", 0)
	require.Equal(t, int64(25), off)
}

// The offsets the broker sets itself (Commit: an admin reset; Merge: a slave's sync) and
// deletions always apply and forget the order of earlier commits, so the client's next
// commit applies whatever its number; from then on its connection's order holds again,
// so that a periodic commit of the old position sent before the client's commit of the
// reset offset cannot undo the reset.
func TestBrokerSetOffsetsResetCommitOrder(t *testing.T) {
	s := openStore(t, testOptions(mmap.NewMemFS(), "/store"))
	query := func() int64 {
		t.Helper()
		off, ok := s.Query("g", "t", 0)
		require.True(t, ok)
		return off
	}
	require.True(t, s.CommitFrom("g", "t", 0, 40, 7, 10))
	s.Commit("g", "t", 0, 0) // the reset
	require.Equal(t, int64(0), query())
	require.True(t, s.CommitFrom("g", "t", 0, 0, 7, 12), "the client commits the reset offset")
	require.False(t, s.CommitFrom("g", "t", 0, 40, 7, 11), "its periodic commit sent before is late")
	require.Equal(t, int64(0), query())

	s.Commit("g", "t", 0, 5)
	require.True(t, s.CommitFrom("g", "t", 0, 6, 7, 1), "after Commit any number applies")
	require.Equal(t, int64(6), query())

	require.Equal(t, 1, s.Merge(map[Key]int64{{Group: "g", Topic: "t", QueueID: 0}: 8}))
	require.True(t, s.CommitFrom("g", "t", 0, 7, 7, 0))
	require.Equal(t, int64(7), query())

	require.True(t, s.CommitFrom("g", "t", 0, 9, 7, 50))
	require.Equal(t, 1, s.DeleteGroup("g"))
	require.True(t, s.CommitFrom("g", "t", 0, 3, 7, 20), "a deleted offset keeps no order")
	require.Equal(t, int64(3), query())
}

func TestCommitFromExistingKeyDoesNotAllocate(t *testing.T) {
	s := openStore(t, testOptions(mmap.NewMemFS(), "/store"))
	s.CommitFrom("group", "topic", 3, 1, 7, 1)
	var seq uint64 = 1
	allocs := testing.AllocsPerRun(1000, func() {
		seq++
		s.CommitFrom("group", "topic", 3, int64(seq), 7, seq)
	})
	require.Zero(t, allocs)
}

func BenchmarkCommitFrom(b *testing.B) {
	s, err := Open(testOptions(mmap.NewMemFS(), "/store"))
	require.NoError(b, err)
	defer func() { _ = s.Close() }()
	groups := []string{"cg-a", "cg-b", "cg-c", "cg-d"}
	for _, g := range groups {
		for q := range int32(16) {
			s.Commit(g, "TopicTest", q, 0)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		s.CommitFrom(groups[i&3], "TopicTest", int32(i&15), int64(i), uint64(1+i&1), uint64(i))
	}
}
