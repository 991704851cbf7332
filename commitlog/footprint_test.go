//go:build linux

package commitlog

import (
	"os"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/ferrymq/ferry/internal/mmap"
	"github.com/ferrymq/ferry/message"
)

// fpSegSize is large enough that the kernel's read-around next to a page fault (up to
// half of the device's read_ahead_kb each side, 8 MiB on the development VM) does not
// reach the last quarter of a segment from its first 2 MiB.
const (
	fpSegSize = 32 << 20
	fpAhead   = 1 << 20
)

// footprintLog opens a new log on real files with 32 MiB segments pre-faulting 1 MiB
// ahead. It does not call Recover, whose scan of the empty tail reads the whole segment.
func footprintLog(t *testing.T, prefault bool) (*Log, string) {
	t.Helper()
	dir := t.TempDir()
	o := testOptions(mmap.OSFS{}, dir)
	o.SegmentSize = fpSegSize
	o.PrefaultSegments, o.PrefaultAhead = prefault, fpAhead
	l, err := Open(o) // a new log: ready for appends without Recover
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	return l, dir
}

// residentPages counts the pages of [from, to) of a file that are in the page cache
// (mincore of a mapping that is never touched, so counting changes nothing).
func residentPages(t *testing.T, path string, from, to int64) int {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer func() { _ = f.Close() }()
	m, err := unix.Mmap(int(f.Fd()), from, int(to-from), unix.PROT_READ, unix.MAP_SHARED)
	require.NoError(t, err)
	defer func() { _ = unix.Munmap(m) }()
	vec := make([]byte, (to-from+PageSize-1)/PageSize)
	_, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0])))
	require.Zero(t, errno, "mincore")
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n
}

// appendUntil appends 1 KiB records until the write position reaches pos.
func appendUntil(t *testing.T, l *Log, pos int64) {
	t.Helper()
	for i := 0; l.MaxOffset() < pos; i++ {
		_, err := l.Append([]message.Record{newRecord("T", 0, 1024, i)}, false)
		require.NoError(t, err)
	}
}

// segmentFiles lists the segment files of dir.
func segmentFiles(t *testing.T, dir string) []string {
	t.Helper()
	names, err := mmap.OSFS{}.ReadDir(dir)
	require.NoError(t, err)
	return names
}

// A new log that is never appended to holds one segment, none of it in memory: no
// pre-faulting and no spare segment before the first append.
func TestFootprintIdleLogHoldsNothing(t *testing.T) {
	_, dir := footprintLog(t, true)
	first := segPath(dir, 0)
	require.Never(t, func() bool {
		return residentPages(t, first, 0, fpSegSize) > 0 || len(segmentFiles(t, dir)) > 1
	}, 300*time.Millisecond, 20*time.Millisecond, "an idle log pre-faults nothing and creates no spare")
	require.Equal(t, []string{segmentName(0)}, segmentFiles(t, dir))
}

// Appends are followed: PrefaultAhead bytes after the write position come into the page
// cache, and not the whole segment; the next segment is created once the current one is
// half full, with its head pre-faulted, and the writer moves into that very file.
func TestFootprintPrefaultsAheadOfAppends(t *testing.T) {
	l, dir := footprintLog(t, true)
	first := segPath(dir, 0)
	appendUntil(t, l, 256<<10)
	wrote := l.MaxOffset() / PageSize * PageSize
	require.Eventually(t, func() bool {
		return residentPages(t, first, wrote, wrote+fpAhead) == fpAhead/PageSize
	}, 10*time.Second, 5*time.Millisecond, "the pages ahead of the write position are pre-faulted")
	require.Zero(t, residentPages(t, first, fpSegSize*3/4, fpSegSize), "not the whole segment")
	require.Len(t, segmentFiles(t, dir), 1, "no spare segment before the middle")

	appendUntil(t, l, fpSegSize/2+PageSize)
	second := segPath(dir, fpSegSize)
	require.Eventually(t, func() bool {
		return len(segmentFiles(t, dir)) == 2 && residentPages(t, second, 0, fpAhead) == fpAhead/PageSize
	}, 10*time.Second, 5*time.Millisecond, "the next segment is created past the middle, its head pre-faulted")
	ino := inode(t, second)

	appendUntil(t, l, fpSegSize+64<<10)
	require.Equal(t, ino, inode(t, second), "the writer took the preallocated file")
	require.Len(t, segmentFiles(t, dir), 2, "the one after it waits for the middle of this one")
	require.NoError(t, l.Close())
	require.Len(t, segmentFiles(t, dir), 2)
}

// With PrefaultSegments off the next segment is still created ahead of time, but nothing
// of it is read in.
func TestFootprintPrefaultOff(t *testing.T) {
	l, dir := footprintLog(t, false)
	appendUntil(t, l, fpSegSize/2+PageSize)
	second := segPath(dir, fpSegSize)
	require.Eventually(t, func() bool { return len(segmentFiles(t, dir)) == 2 },
		10*time.Second, 5*time.Millisecond, "the next segment is created past the middle")
	require.Never(t, func() bool { return residentPages(t, second, 0, fpSegSize) > 0 },
		300*time.Millisecond, 20*time.Millisecond, "no pages pre-faulted")
}

// A writer that outruns the service goroutine creates its segments itself, in order.
func TestFootprintWriterCreatesQueuedSegments(t *testing.T) {
	dir := t.TempDir()
	o := testOptions(mmap.OSFS{}, dir)
	o.PrefaultAhead = fpAhead
	l := openLog(t, o)
	var want []message.Record
	for i := 0; l.MaxOffset() < 20*testSegSize; i++ {
		recs := []message.Record{newRecord("T", int32(i%4), 700, i)}
		_, err := l.Append(recs, false)
		require.NoError(t, err)
		want = append(want, recs[0])
	}
	got := readAll(t, l)
	require.Len(t, got, len(want))
	for i := range want {
		requireSameRecord(t, want[i], got[i])
	}
	require.NoError(t, l.Close())
	require.Len(t, segmentFiles(t, dir), 21, "no spare left behind")
}

func TestFootprintOptionsValidate(t *testing.T) {
	o := testOptions(mmap.NewMemFS(), "/x")
	o.PrefaultAhead = 0
	require.ErrorContains(t, o.Validate(), "PrefaultAhead")
	o.PrefaultAhead = PageSize + 1
	require.ErrorContains(t, o.Validate(), "PrefaultAhead")
	o.PrefaultSegments = false
	require.NoError(t, o.Validate(), "PrefaultAhead is only read when pre-faulting")
	require.Equal(t, int64(DefaultPrefaultAhead), DefaultOptions().PrefaultAhead)
}

// inode returns the inode number of path.
func inode(t *testing.T, path string) uint64 {
	t.Helper()
	var st unix.Stat_t
	require.NoError(t, unix.Stat(path, &st))
	return st.Ino
}
