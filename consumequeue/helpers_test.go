package consumequeue

import (
	"path/filepath"
	"testing"

	"github.com/ferrymq/ferry/internal/mmap"
	"github.com/stretchr/testify/require"
)

// fsCase is a file system and a root directory for tests.
type fsCase struct {
	name string
	fs   mmap.FS
	root string
}

// bothFS returns an OS file system in a temp dir and an in-memory one.
func bothFS(t *testing.T) []fsCase {
	mem := mmap.NewMemFS()
	require.NoError(t, mem.MkdirAll("/store/consumequeue"))
	return []fsCase{
		{"os", mmap.OSFS{}, filepath.Join(t.TempDir(), "consumequeue")},
		{"mem", mem, "/store/consumequeue"},
	}
}

// testOpts returns options with tiny segments.
func testOpts(fsys mmap.FS, root string, units int) Options {
	o := DefaultOptions()
	o.FS, o.Root, o.UnitsPerFile = fsys, root, units
	return o
}

// openStore opens a store and closes it at the end of the test.
func openStore(t testing.TB, opts Options) *Store {
	t.Helper()
	s, err := Open(opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// mustQueue returns (creating) a queue.
func mustQueue(t testing.TB, s *Store, topic string, id int32) *Queue {
	t.Helper()
	q, err := s.Queue(topic, id, true)
	require.NoError(t, err)
	return q
}

// unitFor is the unit of the i-th message of a test queue: records of 100 bytes, 1000
// bytes apart.
func unitFor(i int64) Unit {
	return Unit{Offset: 1000 * i, Size: 100, TagsCode: i*7 - 3}
}

// appendN appends units [from, to) made by unitFor.
func appendN(t testing.TB, q *Queue, from, to int64) {
	t.Helper()
	for i := from; i < to; i++ {
		require.NoError(t, q.Append(i, unitFor(i)))
	}
}

// readAll reads every readable unit.
func readAll(t testing.TB, q *Queue) []Unit {
	t.Helper()
	var out []Unit
	buf := make([]Unit, 3)
	for o := q.MinOffset(); ; {
		n, err := q.Read(o, buf)
		require.NoError(t, err)
		if n == 0 {
			return out
		}
		out = append(out, buf[:n]...)
		o += int64(n)
	}
}
