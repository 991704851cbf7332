package store

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/commitlog"
	"github.com/ferrymq/ferry/internal/mmap"
	"github.com/ferrymq/ferry/internal/testkit"
)

// When the checkpoint cannot be replaced, whichever step of the replacement fails, the
// periodic checkpointer logs the failure and keeps the store running, Shutdown reports it
// and keeps the abort file, and a crash at that point recovers every acknowledged message,
// with complete queues and index, from the older checkpoint.
func TestCheckpointWriteFailure(t *testing.T) {
	for _, step := range []mmap.Op{mmap.OpWriteFileAtomic, mmap.OpCreate, mmap.OpFileWrite, mmap.OpFileSync, mmap.OpRename, mmap.OpSyncDir} {
		t.Run(step.String(), func(t *testing.T) {
			mem := mmap.NewMemFS()
			efs := mmap.NewErrorFS(mem)
			var logs testkit.Buffer
			o := testOptions(efs, "/store")
			o.FlushMode = commitlog.FlushSync
			o.Logger = zerolog.New(&logs)
			s := openStore(t, o)
			isCheckpoint := func(p string) bool {
				return strings.HasPrefix(filepath.Base(p), checkpointName) || p == o.Dir
			}
			cpWrites := func() int { return efs.Calls(mmap.OpWriteFileAtomic, mmap.PathIs(o.checkpointPath())) }

			var acked []string
			putSome := func(n int) {
				for range n {
					uniq := fmt.Sprintf("C%04d", len(acked))
					res := put(t, s, crashMessage(uniq, int32(len(acked)%2)), true)
					require.True(t, res.Durable)
					acked = append(acked, uniq)
				}
			}
			putSome(30)
			waitDispatched(t, s)
			written := cpWrites()
			require.Eventually(t, func() bool { return cpWrites() > written }, 10*time.Second, time.Millisecond,
				"a checkpoint covering the first messages")
			good, err := loadCheckpoint(mem, o.checkpointPath())
			require.NoError(t, err)
			require.True(t, good.Valid)

			efs.Inject(mmap.Rule{Ops: step, Path: isCheckpoint})
			putSome(30)
			waitDispatched(t, s)
			require.Eventually(t, func() bool { return strings.Contains(logs.String(), "checkpoint failed") }, 10*time.Second,
				time.Millisecond, "the periodic checkpoint's failure is logged")
			require.Contains(t, logs.String(), mmap.ErrInjected.Error())
			putSome(10) // still accepting messages

			// A power loss now: the last durable checkpoint is older than the log.
			crashed := mem.Crash(nil, 0)
			stale, err := loadCheckpoint(crashed, o.checkpointPath())
			require.NoError(t, err)
			require.True(t, stale.Valid)
			require.Less(t, stale.DispatchedOffset, s.CommitLog().MaxOffset(), "the failed checkpoints never became durable")

			err = s.Shutdown(context.Background())
			require.ErrorIs(t, err, mmap.ErrInjected, "Shutdown reports the failed checkpoint")
			ok, err := mem.Exists(o.abortPath())
			require.NoError(t, err)
			require.True(t, ok, "an unclean stop: the abort file stays")

			for name, fsys := range map[string]mmap.FS{"after the crash": crashed, "after Shutdown": mem} {
				co := o
				co.FS, co.Logger = fsys, zerolog.Nop()
				rs, err := Open(co)
				require.NoError(t, err, name)
				present := presentUniqKeys(t, rs)
				for _, k := range acked {
					require.True(t, present[k], "%s: acknowledged %s lost", name, k)
				}
				require.Equal(t, len(acked), checkQueuesConsistent(t, rs), name)
				require.NoError(t, rs.Shutdown(context.Background()), name)
			}
		})
	}
}

// Cleanup deletes commit-log segments, then consume-queue files, then index files, each
// followed by a directory sync. A power loss before any of those syncs brings back files
// whose removal was not durable yet: recovery must still give gap-free queues that point
// only at readable records, an index that finds every surviving record exactly once, and
// exactly the messages of the surviving segments.
func TestCleanupCrashBeforeEachDirSync(t *testing.T) {
	for k := 0; ; k++ {
		mem := mmap.NewMemFS()
		mem.SetCapacity(64 << 20) // the store uses a few hundred KiB of it: more than 0.1 %
		efs := mmap.NewErrorFS(mem)
		o := testOptions(efs, "/store")
		o.DiskMaxUsedRatio, o.DiskForceCleanRatio, o.DiskFullRatio = 1e-3, 1e-3, 1 // every round deletes
		s := openStore(t, o)
		var all []string
		for i := range 1500 { // about five segments
			uniq := fmt.Sprintf("D%04d", i)
			put(t, s, crashMessage(uniq, int32(i%3)), false)
			all = append(all, uniq)
		}
		waitDispatched(t, s)
		require.NoError(t, s.CommitLog().Flush())
		require.NoError(t, s.writeCheckpoint())
		s.guard.check()

		// (The commit log's preallocator may sync its directory concurrently: that only
		// moves the crash one sync earlier.)
		var crash atomic.Pointer[mmap.MemFS]
		efs.Inject(mmap.Rule{Ops: mmap.OpSyncDir, After: k, Times: 1,
			Path: func(p string) bool { return p != o.Dir }, // not the checkpointer's
			Hook: func(mmap.Op, string) error {
				crash.Store(mem.Crash(nil, 0))
				return nil
			}})
		deleted := s.cleanOnce()
		require.Positive(t, deleted)
		crashed := crash.Load()
		if crashed == nil { // k is past the last directory sync of the round
			require.Greater(t, k, 3, "the log, three queues and the index each synced")
			return
		}
		minPhy := s.CommitLog().MinOffset()
		require.NoError(t, s.Shutdown(context.Background()))

		co := o
		co.FS = crashed
		rs, err := Open(co)
		require.NoError(t, err, "crash before directory sync %d", k)
		n := checkQueuesConsistent(t, rs)
		present := presentUniqKeys(t, rs)
		require.Len(t, present, n)
		first := len(all) - n
		for i, uniq := range all {
			require.Equal(t, i >= first, present[uniq], "sync %d: %s", k, uniq)
		}
		require.LessOrEqual(t, rs.CommitLog().MinOffset(), minPhy)
		if first > 0 { // a resurrected index file may point at deleted records: never returned
			qr, err := rs.QueryByKey("CrashTopic", all[0], true, 4, 0, 1<<62)
			require.NoError(t, err)
			require.Empty(t, qr.Records)
			qr.Release()
		}
		require.NoError(t, rs.Shutdown(context.Background()))
	}
}
