package consumequeue

import (
	"fmt"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/internal/mmap"
	"github.com/ferrymq/ferry/internal/testkit"
)

// smallQueueSpace bounds the disk space of a queue holding a few units.
const smallQueueSpace = 64 << 10

// A new queue with one unit takes a page or so of disk, not a whole 6,000,000-byte
// segment (hardening item 11: 200 one-byte messages to 200 topics took 1.1 GB). The
// segment still has RocketMQ's size and name.
func TestNewQueueTakesLittleSpace(t *testing.T) {
	t.Run("os", func(t *testing.T) {
		root := filepath.Join(t.TempDir(), "consumequeue")
		s := openStore(t, testOpts(mmap.OSFS{}, root, DefaultUnitsPerFile))
		const topics = 200
		for i := range topics {
			q := mustQueue(t, s, fmt.Sprintf("Topic%03d", i), 0)
			require.NoError(t, q.Append(0, unitFor(int64(i))))
		}
		require.NoError(t, s.Flush())
		var total int64
		for i := range topics {
			seg := filepath.Join(root, fmt.Sprintf("Topic%03d", i), "0", segmentName(0))
			size, err := mmap.OSFS{}.Size(seg)
			require.NoError(t, err)
			require.Equal(t, int64(DefaultUnitsPerFile*UnitSize), size, "full logical size")
			used := testkit.DiskUsage(t, seg)
			require.LessOrEqual(t, used, int64(smallQueueSpace), "queue %d", i)
			total += used
		}
		t.Logf("%d queues with one unit each take %d KiB on disk", topics, total>>10)
	})
	t.Run("mem", func(t *testing.T) {
		mem := mmap.NewMemFS()
		require.NoError(t, mem.MkdirAll("/store/consumequeue"))
		s := openStore(t, testOpts(mem, "/store/consumequeue", DefaultUnitsPerFile))
		before := testkit.Used(t, mem)
		q := mustQueue(t, s, "T", 0)
		require.NoError(t, q.Append(0, unitFor(0)))
		require.NoError(t, q.Flush())
		require.LessOrEqual(t, testkit.Used(t, mem)-before, int64(smallQueueSpace))
		// Space grows with the units, never far ahead of them.
		appendN(t, q, 1, 20_000) // 400,000 bytes
		require.NoError(t, q.Flush())
		used := testkit.Used(t, mem) - before
		require.GreaterOrEqual(t, used, int64(20_000*UnitSize))
		require.LessOrEqual(t, used, int64(2*20_000*UnitSize+smallQueueSpace))
	})
}

// A queue reopened (and recovered) stays sparse: recovery reads its holes as the end of
// the queue and clears a torn tail without writing into the holes before it, and appends
// go on allocating from the end of the data.
func TestReopenedQueueStaysSparse(t *testing.T) {
	root := filepath.Join(t.TempDir(), "consumequeue")
	opts := testOpts(mmap.OSFS{}, root, DefaultUnitsPerFile)
	s := openStore(t, opts)
	appendN(t, mustQueue(t, s, "T", 0), 0, 3)
	require.NoError(t, s.Close())
	seg := filepath.Join(root, "T", "0", segmentName(0))
	require.Equal(t, int64(4096), testkit.DiskUsage(t, seg))

	// Garbage far beyond the data (page 100): a torn tail to clear.
	patchFile(t, mmap.OSFS{}, seg, DefaultUnitsPerFile*UnitSize, func(b []byte) {
		encodeUnit(b[100*4096:], unitFor(9))
	})
	require.Equal(t, int64(2*4096), testkit.DiskUsage(t, seg))

	s = openStore(t, opts)
	q := mustQueue(t, s, "T", 0)
	require.Equal(t, int64(3), q.MaxOffset())
	require.True(t, q.Dropped(), "the garbage was cleared")
	appendN(t, q, 3, 300) // into page 1
	require.NoError(t, q.TruncateByPhysical(unitFor(250).Offset))
	appendN(t, q, 250, 260)
	require.NoError(t, s.Close())
	require.Equal(t, int64(3*4096), testkit.DiskUsage(t, seg), "pages 0 and 1, and the one that held garbage")

	s = openStore(t, opts)
	require.Equal(t, units(0, 260), readAll(t, mustQueue(t, s, "T", 0)))
}

// On a full disk, Append fails with ENOSPC before writing anything — also when the unit
// is the first of a new page or of a new segment — and the same offset is taken once there
// is room. What was flushed before survives a crash.
func TestAppendFailsWhenDiskIsFull(t *testing.T) {
	mem := mmap.NewMemFS()
	require.NoError(t, mem.MkdirAll("/store/consumequeue"))
	s := openStore(t, testOpts(mem, "/store/consumequeue", 1000)) // 20,000-byte segments
	q := mustQueue(t, s, "T", 0)
	appendN(t, q, 0, 1)
	mem.SetCapacity(testkit.Used(t, mem)) // nothing more fits

	// Units 1..203 fit in the first page; unit 204 crosses into the second.
	appendN(t, q, 1, 204)
	err := q.Append(204, unitFor(204))
	require.ErrorIs(t, err, mmap.ErrNoSpace)
	require.ErrorIs(t, err, syscall.ENOSPC)
	require.Equal(t, int64(204), q.MaxOffset(), "the failed unit takes no offset")
	require.NoError(t, q.Flush())
	require.Equal(t, units(0, 204), readAll(t, q))

	mem.SetCapacity(0)
	appendN(t, q, 204, 1000) // the rest of the segment
	mem.SetCapacity(testkit.Used(t, mem))
	err = q.Append(1000, unitFor(1000)) // a new segment: created, but no room for its units
	require.ErrorIs(t, err, syscall.ENOSPC)
	require.Equal(t, int64(1000), q.MaxOffset())
	require.NoError(t, q.Flush())
	require.Equal(t, units(0, 1000), crashedUnitsOf(t, mem, 1000))

	mem.SetCapacity(0)
	appendN(t, q, 1000, 1100)
	require.NoError(t, q.Flush())
	require.Equal(t, units(0, 1100), readAll(t, q))
	require.Equal(t, units(0, 1100), crashedUnitsOf(t, mem, 1000))
}

// crashedUnitsOf is crashedUnits for a store of another segment size.
func crashedUnitsOf(t *testing.T, mem *mmap.MemFS, units int) []Unit {
	t.Helper()
	s := openStore(t, testOpts(mem.Crash(nil, 0), "/store/consumequeue", units))
	q, err := s.Queue("T", 0, false)
	require.NoError(t, err)
	return readAll(t, q)
}

// A failed allocation (an I/O error) fails Append and SetMinOffset without changing the
// queue; the retry succeeds.
func TestAppendFailsWhenAllocateFails(t *testing.T) {
	mem, efs, q := faultQueue(t)
	stop := efs.Inject(mmap.Rule{Ops: mmap.OpAllocate, Err: syscall.EIO})
	err := q.Append(0, unitFor(0))
	require.ErrorIs(t, err, syscall.EIO)
	require.ErrorIs(t, err, mmap.ErrInjected)
	require.Zero(t, q.MaxOffset())
	stop()
	appendN(t, q, 0, 15)
	require.NoError(t, q.Flush())
	require.Equal(t, units(0, 15), crashedUnits(t, mem))

	_, efs, q = faultQueue(t)
	stop = efs.Inject(mmap.Rule{Ops: mmap.OpAllocate, Err: syscall.EIO})
	require.ErrorIs(t, q.SetMinOffset(23), syscall.EIO)
	stop()
	require.NoError(t, q.Append(23, unitFor(23)))
	require.Equal(t, units(23, 24), readAll(t, q))
}
