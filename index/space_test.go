package index

import (
	"fmt"
	"math"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/internal/mmap"
	"github.com/ferrymq/ferry/internal/testkit"
)

// onlyFile is the path of the one index file in dir.
func onlyFile(t *testing.T, fsys mmap.FS, dir string) string {
	t.Helper()
	names, err := fsys.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, names, 1)
	return filepath.Join(dir, names[0])
}

// An index file takes space in proportion to its keys — the header's page, a page of
// entries and at most one slot page per key — not 420 MB from the first key (hardening
// item 11). The file keeps RocketMQ's size.
func TestIndexSpaceProportionalToKeys(t *testing.T) {
	const keys = 10
	bound := int64((keys + 2) * 4096)
	t.Run("os", func(t *testing.T) {
		opts := DefaultOptions()
		opts.Dir = filepath.Join(t.TempDir(), "index")
		x := openIndex(t, opts)
		for i := range keys {
			require.NoError(t, x.Put(fmt.Sprintf("T#key-%d", i), int64(i)*100, baseTime.UnixMilli()))
		}
		require.NoError(t, x.Flush())
		path := onlyFile(t, mmap.OSFS{}, opts.Dir)
		size, err := mmap.OSFS{}.Size(path)
		require.NoError(t, err)
		require.Equal(t, int64(420_000_040), size)
		used := testkit.DiskUsage(t, path)
		require.LessOrEqual(t, used, bound)
		t.Logf("an index file with %d keys takes %d KiB on disk", keys, used>>10)

		// Reopened, it stays sparse and keeps working.
		require.NoError(t, x.Close())
		x = openIndex(t, opts)
		require.NoError(t, x.TruncateAfter(500))
		for i := 5; i < keys; i++ {
			require.NoError(t, x.Put(fmt.Sprintf("T#key-%d", i), int64(i)*100, baseTime.UnixMilli()))
		}
		require.NoError(t, x.Close())
		require.LessOrEqual(t, testkit.DiskUsage(t, path), bound)
		x = openIndex(t, opts)
		for i := range keys {
			got, err := x.Query(fmt.Sprintf("T#key-%d", i), 10, 0, math.MaxInt64)
			require.NoError(t, err)
			require.Equal(t, []int64{int64(i) * 100}, got)
		}
	})
	t.Run("mem", func(t *testing.T) {
		opts := memOpts(t, 100_000, 400_000) // 8,400,040-byte files
		mem := opts.FS.(*mmap.MemFS)
		x := openIndex(t, opts)
		for i := range keys {
			require.NoError(t, x.Put(fmt.Sprintf("T#key-%d", i), int64(i)*100, baseTime.UnixMilli()))
		}
		require.NoError(t, x.Flush())
		require.LessOrEqual(t, testkit.Used(t, mem), bound)
		// Many keys: never more than the slot table plus about twice the entries.
		putMsgs(t, x, genMsgs(20_000, 5000, 3), 2000)
		require.NoError(t, x.Flush())
		entries := int64(x.Files()[0].IndexCount) * EntrySize
		require.LessOrEqual(t, testkit.Used(t, mem), 100_000*SlotSize+2*entries+2*4096)
	})
}

// slotPage is the page of the slot table a key's slot is on.
func slotPage(key string, slots int) int64 {
	return (HeaderSize + int64(KeyHash(key))%int64(slots)*SlotSize) / 4096
}

// On a full disk, Put fails with ENOSPC before writing anything when the key needs a new
// slot page or the entries a new page, and a new file cannot be started; keys whose pages
// are allocated still go in. With room again, the same Put succeeds.
func TestPutFailsWhenDiskIsFull(t *testing.T) {
	const slots = 10_000 // ten pages of slots
	opts := memOpts(t, slots, 1000)
	mem := opts.FS.(*mmap.MemFS)
	x := openIndex(t, opts)

	mem.SetCapacity(1) // not even the new file's header page fits
	err := x.Put("T#a", 100, baseTime.UnixMilli())
	require.ErrorIs(t, err, syscall.ENOSPC)
	names, err := mem.ReadDir(opts.Dir)
	require.NoError(t, err)
	require.Empty(t, names, "the file that could not be started is gone")

	mem.SetCapacity(0)
	require.NoError(t, x.Put("T#a", 100, baseTime.UnixMilli()))
	mem.SetCapacity(testkit.Used(t, mem))
	var same, other string
	for i := 0; same == "" || other == ""; i++ {
		k := fmt.Sprintf("T#k%d", i)
		if slotPage(k, slots) == slotPage("T#a", slots) {
			same = k
		} else {
			other = k
		}
	}
	require.NoError(t, x.Put(same, 200, baseTime.UnixMilli()), "its pages are allocated")
	err = x.Put(other, 300, baseTime.UnixMilli())
	require.ErrorIs(t, err, mmap.ErrNoSpace)
	require.Equal(t, int32(3), x.Files()[0].IndexCount, "nothing was added")
	require.NoError(t, x.Flush())
	for k, want := range map[string][]int64{"T#a": {100}, same: {200}, other: nil} {
		got, err := x.Query(k, 10, 0, math.MaxInt64)
		require.NoError(t, err)
		require.Equal(t, want, got, k)
	}

	mem.SetCapacity(0)
	require.NoError(t, x.Put(other, 300, baseTime.UnixMilli()))
	require.NoError(t, x.Flush())
	crashed := opts
	crashed.FS = mem.Crash(nil, 0)
	y := openIndex(t, crashed)
	for k, want := range map[string][]int64{"T#a": {100}, same: {200}, other: {300}} {
		got, err := y.Query(k, 10, 0, math.MaxInt64)
		require.NoError(t, err)
		require.Equal(t, want, got, k)
	}
}

// A failed allocation (an I/O error) fails the Put without indexing anything; the retry
// indexes normally, and a crash after a flush keeps everything.
func TestPutFailsWhenAllocateFails(t *testing.T) {
	msgs := genMsgs(60, 7, 1)
	for after := range 4 {
		mem := mmap.NewMemFS()
		require.NoError(t, mem.MkdirAll("/store/index"))
		efs := mmap.NewErrorFS(mem)
		opts := testOpts(efs, "/store/index", 5000, 20) // slots on several pages
		x := openIndex(t, opts)
		stop := efs.Inject(mmap.Rule{Ops: mmap.OpAllocate, After: after, Err: syscall.EIO})
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
		require.GreaterOrEqual(t, failed, 0, "allocation %d fails a Put", after)
		cp := msgs[failed].phy
		require.NoError(t, x.Flush())
		requireIndexed(t, afterCrash(t, mem, opts, cp), msgs, cp, "after a crash")

		stop()
		putMsgs(t, x, msgs, cp)
		require.NoError(t, x.Flush())
		requireIndexed(t, x, msgs, math.MaxInt64, "after the retry")
		requireIndexed(t, afterCrash(t, mem, opts, math.MaxInt64), msgs, math.MaxInt64, "after the retry and a crash")
	}
}
