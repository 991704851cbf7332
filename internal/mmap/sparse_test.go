package mmap

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/internal/testkit"
)

// A sparse file has its full size from the start but takes space only for the pages
// Allocate reserved; it reads as zeros everywhere else. A reserved file takes its whole
// size at once.
func TestSparseFileTakesSpaceOnlyWhereAllocated(t *testing.T) {
	const size = 1 << 20
	t.Run("os", func(t *testing.T) {
		dir := t.TempDir()
		sparse := filepath.Join(dir, "sparse")
		m, err := OSFS{}.OpenMappedSparse(sparse, size, true)
		require.NoError(t, err)
		defer m.Close()
		require.Equal(t, int64(size), m.Size())
		require.Zero(t, testkit.DiskUsage(t, sparse), "no blocks before Allocate")
		require.Equal(t, make([]byte, size), m.Bytes(), "a hole reads as zeros")

		require.NoError(t, m.Allocate(5000, 10)) // inside page 1
		copy(m.Bytes()[5000:], "0123456789")
		require.NoError(t, m.Sync(5000, 10))
		require.Equal(t, int64(4096), testkit.DiskUsage(t, sparse), "one page")
		require.NoError(t, m.Allocate(5000, 10), "allocating again is harmless")
		require.Equal(t, int64(4096), testkit.DiskUsage(t, sparse))
		require.Error(t, m.Allocate(size-10, 20), "outside the file")

		reserved := filepath.Join(dir, "reserved")
		r, err := OSFS{}.OpenMapped(reserved, size, true)
		require.NoError(t, err)
		require.NoError(t, r.Close())
		require.GreaterOrEqual(t, testkit.DiskUsage(t, reserved), int64(size))
	})
	t.Run("mem", func(t *testing.T) {
		mem := NewMemFS()
		require.NoError(t, mem.MkdirAll("/d"))
		m, err := mem.OpenMappedSparse("/d/sparse", size+100, true)
		require.NoError(t, err)
		require.Zero(t, testkit.Used(t, mem))
		require.NoError(t, m.Allocate(5000, 10))
		require.NoError(t, m.Allocate(4096, 4096), "the same page")
		require.Equal(t, int64(AllocPage), testkit.Used(t, mem))
		require.NoError(t, m.Allocate(size, 100), "the last page is cut at the end of the file")
		n, err := mem.Allocated("/d/sparse")
		require.NoError(t, err)
		require.Equal(t, int64(AllocPage+100), n)

		// Allocations survive a crash, and so does the file's sparseness.
		copy(m.Bytes()[5000:], "data")
		require.NoError(t, m.Sync(5000, 4))
		require.NoError(t, mem.SyncDir("/d"))
		c := mem.Crash(nil, 0)
		require.Equal(t, int64(AllocPage+100), testkit.Used(t, c))
		cm, err := c.OpenMappedSparse("/d/sparse", size+100, false)
		require.NoError(t, err)
		require.Equal(t, "data", string(cm.Bytes()[5000:5004]))
		require.Panics(t, func() {
			cm.Bytes()[0] = 1
			_ = cm.Sync(0, 1)
		}, "page 0 was never allocated, in the clone either")

		require.NoError(t, mem.Remove("/d/sparse"))
		require.Zero(t, testkit.Used(t, mem), "removing frees what was allocated")
	})
}

// A write through a sparse mapping takes the blocks of its own page only, even after the
// file was read sequentially through the mapping: readahead would have put the pages in
// large folios, and a write fault reserves blocks for a whole folio, holes included (a
// SIGBUS on a full disk). On an ext4 with large folios, a normal mapping takes 16 pages
// here.
func TestSparseWriteAfterSequentialReadTakesOnePage(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sparse")
	m, err := OSFS{}.OpenMappedSparse(path, 64<<20, true)
	require.NoError(t, err)
	defer m.Close()
	sum := 0
	for i := 0; i < 32<<20; i += 4 {
		sum += int(m.Bytes()[i])
	}
	require.Zero(t, sum)
	const page = 4882
	require.NoError(t, m.Allocate(page*4096, 4096))
	m.Bytes()[page*4096+10] = 1
	require.NoError(t, m.WriteMode(false), "advice stays random")
	m.Bytes()[page*4096+20] = 1
	require.NoError(t, m.Sync(page*4096, 4096))
	require.Equal(t, int64(4096), testkit.DiskUsage(t, path))
}

// On a full disk Allocate fails with ENOSPC and allocates nothing; once there is room
// it succeeds. Pages already allocated need no room.
func TestMemFSAllocateRespectsCapacity(t *testing.T) {
	mem := NewMemFS()
	require.NoError(t, mem.MkdirAll("/d"))
	m, err := mem.OpenMappedSparse("/d/f", 100*AllocPage, true)
	require.NoError(t, err)
	require.NoError(t, m.Allocate(0, 2*AllocPage))
	mem.SetCapacity(3 * AllocPage)
	err = m.Allocate(AllocPage, 3*AllocPage) // pages 1-3: two new ones, one fits
	require.ErrorIs(t, err, ErrNoSpace)
	require.ErrorIs(t, err, syscall.ENOSPC)
	require.Equal(t, int64(2*AllocPage), testkit.Used(t, mem), "nothing allocated")
	mem.SetCapacity(AllocPage) // less than is used already
	require.NoError(t, m.Allocate(0, 2*AllocPage), "allocated pages need no room")
	mem.SetCapacity(0)
	require.NoError(t, m.Allocate(AllocPage, 3*AllocPage))
	require.Equal(t, int64(4*AllocPage), testkit.Used(t, mem))
}

// MemFS catches the bug a real disk punishes with SIGBUS: bytes written into a page of a
// sparse file that was never allocated.
func TestMemFSCatchesWritesWithoutAllocate(t *testing.T) {
	mem := NewMemFS()
	require.NoError(t, mem.MkdirAll("/d"))
	m, err := mem.OpenMappedSparse("/d/f", 4*AllocPage, true)
	require.NoError(t, err)
	require.NoError(t, m.Allocate(AllocPage, 1))
	copy(m.Bytes()[AllocPage:], "fine")
	require.NoError(t, m.Sync(0, 4*AllocPage))
	require.NoError(t, m.WriteAt([]byte("fine"), AllocPage+100))

	require.PanicsWithValue(t, "mmap: MemFS: write [8190,+4) into /d/f: page [8192,12288) was never allocated "+
		"(Mapped.Allocate must come first)", func() { _ = m.WriteAt([]byte("oops"), 2*AllocPage-2) })
	m.Bytes()[3*AllocPage+7] = 1
	require.NoError(t, m.Sync(0, 3*AllocPage), "outside the synced range")
	require.Panics(t, func() { _ = m.Sync(3*AllocPage, 8) })
	require.NoError(t, mem.SyncDir("/d"))
	require.Panics(t, func() { mem.Crash(rand.New(rand.NewPCG(1, 2)), 1) }, "a crash keeping the page sees it too")

	// A reserved file is allocated everywhere.
	r, err := mem.OpenMapped("/d/r", AllocPage, true)
	require.NoError(t, err)
	r.Bytes()[10] = 1
	require.NoError(t, r.Sync(0, AllocPage))
	require.NoError(t, r.Allocate(0, AllocPage))
}

// Allocate passes ErrorFS rules as OpAllocate; OpenMappedSparse is an OpOpenMapped.
func TestErrorFSAllocate(t *testing.T) {
	mem := NewMemFS()
	require.NoError(t, mem.MkdirAll("/d"))
	e := NewErrorFS(mem)
	m, err := e.OpenMappedSparse("/d/f", AllocPage, true)
	require.NoError(t, err)
	require.Equal(t, 1, e.Calls(OpOpenMapped, PathIs("/d/f")))
	remove := e.Inject(Rule{Ops: OpAllocate, Err: syscall.ENOSPC})
	err = m.Allocate(0, 1)
	require.ErrorIs(t, err, ErrInjected)
	require.ErrorIs(t, err, ErrNoSpace)
	require.Zero(t, testkit.Used(t, mem))
	remove()
	require.NoError(t, m.Allocate(0, 1))
	require.Equal(t, 2, e.Calls(OpAllocate, nil))
	require.Equal(t, "Allocate", OpAllocate.String())
}

// A Grower allocates one page first, then chunks as large as what it has allocated, up
// to GrowMaxChunk, never past the file; a failure moves nothing and the next call
// retries.
func TestGrowerChunks(t *testing.T) {
	mem := NewMemFS()
	require.NoError(t, mem.MkdirAll("/d"))
	e := NewErrorFS(mem)
	const size = 10 << 20
	m, err := e.OpenMappedSparse("/d/f", size, true)
	require.NoError(t, err)
	g := NewGrower(m, 100)
	require.Equal(t, int64(100), g.End())
	require.NoError(t, g.Ensure(50), "below the start: vouched for by the owner")
	require.Zero(t, e.Calls(OpAllocate, nil))

	var ends []int64
	for to := int64(101); to <= size; to += 1000 {
		before := g.End()
		require.NoError(t, g.Ensure(to))
		require.GreaterOrEqual(t, g.End(), to)
		if g.End() != before {
			ends = append(ends, g.End())
		}
	}
	require.Equal(t, []int64{4096, 8192, 16384, 32768, 65536, 131072, 262144, 524288, 1048576,
		2097152, 3145728, 4194304, 5242880, 6291456, 7340032, 8388608, 9437184, 10485760}, ends)
	require.Equal(t, len(ends), e.Calls(OpAllocate, nil))
	require.NoError(t, g.Ensure(size+100), "clamped to the file")

	g = NewGrower(m, 0)
	remove := e.Inject(Rule{Ops: OpAllocate, Times: 1, Err: syscall.ENOSPC})
	require.ErrorIs(t, g.Ensure(10), ErrNoSpace)
	require.Zero(t, g.End())
	remove()
	require.NoError(t, g.Ensure(10))
	require.Equal(t, int64(4096), g.End())
}

// Extend reserves the blocks of the whole file on a real disk (a segment padded back to
// size is written through its mapping like any other).
func TestOSFSExtendReservesBlocks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "seg")
	require.NoError(t, os.WriteFile(path, []byte("abc"), 0o644))
	require.NoError(t, OSFS{}.Extend(path, 1<<20))
	require.GreaterOrEqual(t, testkit.DiskUsage(t, path), int64(1<<20))

	mem := NewMemFS()
	m, err := mem.OpenMappedSparse("/f", 3*AllocPage, true)
	require.NoError(t, err)
	require.NoError(t, m.Close())
	require.NoError(t, mem.Extend("/f", 4*AllocPage))
	n, err := mem.Allocated("/f")
	require.NoError(t, err)
	require.Equal(t, int64(4*AllocPage), n, "Extend allocates the whole file in MemFS too")
}

// DataRange skips holes: every byte outside the ranges it reports reads as zero, the
// written bytes are inside them, and (in MemFS, which knows its allocations exactly) a
// mostly empty sparse file reports only its allocated pages. A reserved file is data
// throughout in MemFS; past the end there is nothing.
func TestDataRangeSkipsHoles(t *testing.T) {
	fsUnderTest(t, func(t *testing.T, fsys FS, dir string) {
		const size = 4 << 20
		m, err := fsys.OpenMappedSparse(filepath.Join(dir, "sparse"), size, true)
		require.NoError(t, err)
		defer func() { require.NoError(t, m.Close()) }()
		written := []int64{5000, 2<<20 + 3, size - 1}
		for _, off := range written {
			require.NoError(t, m.Allocate(off, 1))
			m.Bytes()[off] = 7
			require.NoError(t, m.Sync(off, 1))
		}
		inData := make([]bool, size)
		covered := int64(0)
		for off, n := int64(0), 0; off < size; n++ {
			require.Less(t, n, 1000, "bounded")
			start, end, err := m.DataRange(off)
			require.NoError(t, err)
			require.GreaterOrEqual(t, start, off)
			require.LessOrEqual(t, start, end)
			require.LessOrEqual(t, end, int64(size))
			require.True(t, isZeroBytes(m.Bytes()[off:start]), "[%d, %d) is a hole", off, start)
			if start == end {
				require.Equal(t, int64(size), start)
				break
			}
			for i := start; i < end; i++ {
				inData[i] = true
			}
			covered += end - start
			off = end
		}
		for _, off := range written {
			require.True(t, inData[off], "written byte %d is in a data range", off)
		}
		t.Logf("data ranges cover %d of %d bytes", covered, size)
		if _, ok := fsys.(*MemFS); ok {
			require.Equal(t, int64(3*AllocPage), covered, "exactly the allocated pages")
		}
		start, end, err := m.DataRange(size)
		require.NoError(t, err)
		require.Equal(t, [2]int64{size, size}, [2]int64{start, end})
		_, _, err = m.DataRange(-1)
		require.Error(t, err)

		r, err := fsys.OpenMapped(filepath.Join(dir, "reserved"), 3*AllocPage, true)
		require.NoError(t, err)
		defer func() { require.NoError(t, r.Close()) }()
		if _, ok := fsys.(*MemFS); ok {
			start, end, err := r.DataRange(10)
			require.NoError(t, err)
			require.Equal(t, [2]int64{10, 3 * AllocPage}, [2]int64{start, end})
		}
	})
}

// isZeroBytes reports whether b holds only zero bytes.
func isZeroBytes(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
