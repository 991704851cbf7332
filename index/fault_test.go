package index

import (
	"math"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/internal/mmap"
)

// requireIndexed checks that every key of msgs queries to exactly the records below
// offset below.
func requireIndexed(t *testing.T, x *Index, msgs []msg, below int64, what string) {
	t.Helper()
	for _, k := range allKeys(msgs) {
		got, err := x.Query(k, 1<<20, 0, math.MaxInt64)
		require.NoError(t, err)
		if w := want(msgs, k, below); len(w) > 0 {
			require.Equal(t, w, got, "%s: key %s", what, k)
		} else {
			require.Empty(t, got, "%s: key %s", what, k)
		}
	}
}

// afterCrash opens the index on what a crash of mem leaves and truncates it to the
// checkpoint cp, as the store's recovery does before it re-dispatches from cp.
func afterCrash(t *testing.T, mem *mmap.MemFS, opts Options, cp int64) *Index {
	t.Helper()
	opts.FS = mem.Crash(nil, 0)
	x := openIndex(t, opts)
	require.NoError(t, x.TruncateAfter(cp))
	return x
}

// A file that cannot be created, or whose directory entry cannot be made durable, fails
// the Put with the file system's error; what was indexed and flushed before survives a
// crash, and once the fault is gone the same records index normally (a half-created file
// is not reused).
func TestPutFailsWhenFileCannotBeCreated(t *testing.T) {
	cases := []struct {
		name  string
		op    mmap.Op
		after int  // matching calls that succeed first
		roll  bool // the failing file is the second one
	}{
		{"mkdir", mmap.OpMkdirAll, 0, false},
		{"link index directory", mmap.OpSyncDir, 0, false},
		{"link first", mmap.OpSyncDir, 1, false},
		{"create first", mmap.OpOpenMapped, 0, false},
		{"create next", mmap.OpOpenMapped, 1, true},
		{"link next", mmap.OpSyncDir, 2, true},
	}
	msgs := genMsgs(60, 7, 1)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mem := mmap.NewMemFS()
			require.NoError(t, mem.MkdirAll("/store"))
			efs := mmap.NewErrorFS(mem)
			opts := testOpts(efs, "/store/index", 5, 20)
			x := openIndex(t, opts)
			stop := efs.Inject(mmap.Rule{Ops: tc.op, After: tc.after, Err: syscall.EIO})

			failed := -1
			for i, m := range msgs {
				for _, k := range m.keys {
					if err := x.Put(k, m.phy, m.ts); err != nil {
						require.ErrorIs(t, err, syscall.EIO)
						require.ErrorIs(t, err, mmap.ErrInjected)
						failed = i
						break
					}
				}
				if failed >= 0 {
					break
				}
			}
			require.GreaterOrEqual(t, failed, 0, "a Put failed")
			require.Equal(t, tc.roll, failed > 0, "the failure is at the first file or at the roll")
			cp := msgs[failed].phy
			requireIndexed(t, x, msgs, cp, "before the crash")
			require.NoError(t, x.Flush())
			requireIndexed(t, afterCrash(t, mem, opts, cp), msgs, cp, "after a crash")

			stop()
			putMsgs(t, x, msgs, cp)
			require.NoError(t, x.Flush())
			requireIndexed(t, x, msgs, math.MaxInt64, "after the retry")
			requireIndexed(t, afterCrash(t, mem, opts, math.MaxInt64), msgs, math.MaxInt64, "after the retry and a crash")
		})
	}
}

// A flush that fails at any of its syncs (entries, slot heads, header; of any file)
// reports the error, and a crash then loses nothing that an earlier flush made durable;
// the next flush makes everything durable, the slot heads the failed one took included.
func TestFlushFailureIsRetried(t *testing.T) {
	msgs := genMsgs(80, 9, 2)
	for after := range 6 {
		mem := mmap.NewMemFS()
		require.NoError(t, mem.MkdirAll("/store/index"))
		efs := mmap.NewErrorFS(mem)
		opts := testOpts(efs, "/store/index", 5, 30)
		x := openIndex(t, opts)
		putMsgs(t, x, msgs[:20], 0)
		require.NoError(t, x.Flush())
		cp1 := msgs[20].phy
		putMsgs(t, x, msgs[:60], cp1) // rolls to new files

		stop := efs.Inject(mmap.Rule{Ops: mmap.OpSync, After: after, Err: syscall.EIO})
		err := x.Flush()
		require.ErrorIs(t, err, syscall.EIO, "sync %d fails", after)
		requireIndexed(t, x, msgs, msgs[60].phy, "queries see every Put")
		requireIndexed(t, afterCrash(t, mem, opts, cp1), msgs, cp1, "the earlier flush survives")

		stop()
		require.NoError(t, x.Flush())
		cp2 := msgs[60].phy
		requireIndexed(t, afterCrash(t, mem, opts, cp2), msgs, cp2, "the retry made the rest durable")
	}
}
