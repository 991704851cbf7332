package mmap

import (
	"errors"
	"io/fs"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// fsUnderTest runs f against both implementations.
func fsUnderTest(t *testing.T, f func(t *testing.T, fsys FS, dir string)) {
	t.Run("os", func(t *testing.T) { f(t, OSFS{}, t.TempDir()) })
	t.Run("mem", func(t *testing.T) {
		m := NewMemFS()
		require.NoError(t, m.MkdirAll("/data"))
		f(t, m, "/data")
	})
	t.Run("error", func(t *testing.T) { // no rules: a transparent wrapper
		m := NewMemFS()
		require.NoError(t, m.MkdirAll("/data"))
		f(t, NewErrorFS(m), "/data")
	})
}

func TestMappedFileRoundTrip(t *testing.T) {
	fsUnderTest(t, func(t *testing.T, fsys FS, dir string) {
		p := filepath.Join(dir, "seg", "00000000000000000000")
		require.NoError(t, fsys.MkdirAll(filepath.Dir(p)))
		_, err := fsys.OpenMapped(p, 8192, false)
		require.ErrorIs(t, err, fs.ErrNotExist)
		m, err := fsys.OpenMapped(p, 8192, true)
		require.NoError(t, err)
		require.Equal(t, int64(8192), m.Size())
		require.Len(t, m.Bytes(), 8192)
		require.NoError(t, m.WriteMode(true))
		copy(m.Bytes()[100:], "hello")
		require.NoError(t, m.Sync(100, 5))
		require.NoError(t, m.WriteMode(false))
		require.Error(t, m.Sync(8000, 500), "range outside the file")
		// WriteAt goes through the file, and the mapping shows it at once.
		require.NoError(t, m.WriteAt([]byte("world"), 5000))
		require.Equal(t, "world", string(m.Bytes()[5000:5005]))
		require.NoError(t, m.Sync(5000, 5))
		require.Error(t, m.WriteAt([]byte("xy"), 8191), "range outside the file")
		require.Error(t, m.WriteAt([]byte("xy"), -1), "negative offset")
		// A window maps a page-aligned range again; writes through it are the file's.
		w, err := m.Window(4100, 10)
		require.NoError(t, err)
		require.Equal(t, int64(4096), w.Offset())
		require.Len(t, w.Bytes(), 4096)
		copy(w.Bytes()[4100-4096:], "window")
		require.Equal(t, "window", string(m.Bytes()[4100:4106]))
		require.NoError(t, m.Sync(4100, 6))
		require.NoError(t, w.Close())
		require.NoError(t, w.Close(), "closing twice does nothing")
		_, err = m.Window(8000, 500)
		require.Error(t, err, "range outside the file")
		_, err = m.Window(0, 0)
		require.Error(t, err, "empty range")
		require.NoError(t, m.Close())
		require.Error(t, m.WriteAt([]byte("x"), 0), "closed")
		_, err = m.Window(0, 10)
		require.Error(t, err, "closed")
		require.NoError(t, fsys.SyncDir(filepath.Dir(p)))

		_, err = fsys.OpenMapped(p, 4096, true)
		require.Error(t, err, "size mismatch")
		m, err = fsys.OpenMapped(p, 8192, false)
		require.NoError(t, err)
		require.Equal(t, "hello", string(m.Bytes()[100:105]))
		require.Equal(t, "world", string(m.Bytes()[5000:5005]))
		require.Equal(t, "window", string(m.Bytes()[4100:4106]))
		require.NoError(t, m.Close())

		names, err := fsys.ReadDir(filepath.Join(dir, "seg"))
		require.NoError(t, err)
		require.Equal(t, []string{"00000000000000000000"}, names)
		names, err = fsys.ReadDir(filepath.Join(dir, "missing"))
		require.NoError(t, err)
		require.Empty(t, names)
		size, err := fsys.Size(p)
		require.NoError(t, err)
		require.Equal(t, int64(8192), size)

		meta := filepath.Join(dir, "checkpoint")
		require.NoError(t, fsys.WriteFileAtomic(meta, []byte("v1")))
		require.NoError(t, fsys.WriteFileAtomic(meta, []byte("v2")))
		b, err := fsys.ReadFile(meta)
		require.NoError(t, err)
		require.Equal(t, "v2", string(b))
		ok, err := fsys.Exists(meta + ".tmp")
		require.NoError(t, err)
		require.False(t, ok, "no temp file left behind")

		// The primitives WriteFileAtomic is made of.
		small := filepath.Join(dir, "small")
		sf, err := fsys.Create(small)
		require.NoError(t, err)
		_, err = sf.Write([]byte("abc"))
		require.NoError(t, err)
		_, err = sf.Write([]byte("def"))
		require.NoError(t, err)
		require.NoError(t, sf.Sync())
		require.NoError(t, sf.Close())
		b, err = fsys.ReadFile(small)
		require.NoError(t, err)
		require.Equal(t, "abcdef", string(b))
		require.NoError(t, fsys.Rename(small, meta))
		b, err = fsys.ReadFile(meta)
		require.NoError(t, err)
		require.Equal(t, "abcdef", string(b), "renamed over the old file")
		ok, err = fsys.Exists(small)
		require.NoError(t, err)
		require.False(t, ok)
		require.ErrorIs(t, fsys.Rename(small, meta), fs.ErrNotExist)
		sf, err = fsys.Create(meta)
		require.NoError(t, err)
		require.NoError(t, sf.Close())
		size, err = fsys.Size(meta)
		require.NoError(t, err)
		require.Zero(t, size, "Create truncates")
		require.NoError(t, fsys.SyncDir(dir))

		require.NoError(t, fsys.Remove(p))
		ok, err = fsys.Exists(p)
		require.NoError(t, err)
		require.False(t, ok)
		require.NoError(t, fsys.RemoveAll(filepath.Join(dir, "seg")))
		total, free, err := fsys.DiskUsage(dir)
		require.NoError(t, err)
		require.Positive(t, total)
		require.LessOrEqual(t, free, total)
	})
}

func TestMemFSCrashKeepsOnlyDurableState(t *testing.T) {
	m := NewMemFS()
	require.NoError(t, m.MkdirAll("/d"))
	a, err := m.OpenMapped("/d/a", 3*crashPage, true)
	require.NoError(t, err)
	require.NoError(t, m.SyncDir("/d"))
	b, err := m.OpenMapped("/d/b", crashPage, true) // creation never made durable
	require.NoError(t, err)
	copy(b.Bytes(), "lost")
	require.NoError(t, b.Sync(0, 4))

	copy(a.Bytes()[0:], "synced")
	require.NoError(t, a.Sync(0, 6))
	copy(a.Bytes()[crashPage:], "unsynced")
	copy(a.Bytes()[6:], "-tail")

	c := m.Crash(nil, 0)
	got, err := c.ReadFile("/d/a")
	require.NoError(t, err)
	require.Equal(t, "synced\x00\x00\x00\x00\x00", string(got[:11]))
	require.Equal(t, make([]byte, 8), got[crashPage:crashPage+8])
	ok, err := c.Exists("/d/b")
	require.NoError(t, err)
	require.False(t, ok, "a file whose directory was never synced is gone")

	// With keepUnsynced = 1 every dirty page survives.
	all := m.Crash(rand.New(rand.NewPCG(1, 2)), 1)
	got, err = all.ReadFile("/d/a")
	require.NoError(t, err)
	require.Equal(t, "synced-tail", string(got[:11]))
	require.Equal(t, "unsynced", string(got[crashPage:crashPage+8]))

	// The original keeps working after a crash copy was taken.
	copy(a.Bytes()[20:], "more")
	require.NoError(t, a.Sync(20, 4))
	require.NoError(t, a.Close())
}

func TestMemFSCapacity(t *testing.T) {
	m := NewMemFS()
	require.NoError(t, m.MkdirAll("/d"))
	m.SetCapacity(10000)
	_, err := m.OpenMapped("/d/a", 8000, true)
	require.NoError(t, err)
	_, err = m.OpenMapped("/d/b", 8000, true)
	require.ErrorIs(t, err, ErrNoSpace)
	require.True(t, errors.Is(err, ErrNoSpace))
	err = m.WriteFileAtomic("/d/meta", make([]byte, 4000))
	require.ErrorIs(t, err, ErrNoSpace)
	_, free, err := m.DiskUsage("/d")
	require.NoError(t, err)
	require.Equal(t, uint64(2000), free)
	m.SetCapacity(0)
	_, err = m.OpenMapped("/d/b", 8000, true)
	require.NoError(t, err)
}
