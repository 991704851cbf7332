package mmap

import (
	"errors"
	"io/fs"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// contents returns the file at path, or nil when it does not exist.
func contents(t *testing.T, fsys FS, path string) []byte {
	t.Helper()
	b, err := fsys.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	require.NoError(t, err)
	if b == nil {
		b = []byte{} // exists, empty
	}
	return b
}

// writeSmall creates path with data, syncs it and its directory.
func writeSmall(t *testing.T, fsys FS, path, data string) {
	t.Helper()
	f, err := fsys.Create(path)
	require.NoError(t, err)
	_, err = f.Write([]byte(data))
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	require.NoError(t, f.Close())
}

// This test uses only the API the first MemFS had; that MemFS made Remove immediate and
// durable, so the file was gone after the crash and the first assertion failed.
func TestMemFSRemoveIsDurableOnlyAfterSyncDir(t *testing.T) {
	m := NewMemFS()
	require.NoError(t, m.MkdirAll("/d"))
	a, err := m.OpenMapped("/d/a", crashPage, true)
	require.NoError(t, err)
	copy(a.Bytes(), "kept")
	require.NoError(t, a.Sync(0, 4))
	require.NoError(t, a.Close())
	require.NoError(t, m.SyncDir("/d"))

	require.NoError(t, m.Remove("/d/a"))
	ok, err := m.Exists("/d/a")
	require.NoError(t, err)
	require.False(t, ok, "the removal is visible at once")

	c := m.Crash(nil, 0)
	ok, err = c.Exists("/d/a")
	require.NoError(t, err)
	require.True(t, ok, "a removal not followed by SyncDir is undone by a crash")
	require.Equal(t, "kept", string(contents(t, c, "/d/a")[:4]))

	require.NoError(t, m.SyncDir("/d"))
	ok, err = m.Crash(nil, 0).Exists("/d/a")
	require.NoError(t, err)
	require.False(t, ok, "after SyncDir the removal is durable")
}

func TestMemFSCreateIsDurableOnlyAfterSyncDir(t *testing.T) {
	m := NewMemFS()
	require.NoError(t, m.MkdirAll("/d"))
	writeSmall(t, m, "/d/f", "data")
	require.Nil(t, contents(t, m.Crash(nil, 0), "/d/f"), "synced bytes, but the entry was never synced")
	require.NoError(t, m.SyncDir("/d"))
	require.Equal(t, "data", string(contents(t, m.Crash(nil, 0), "/d/f")))

	// Bytes written after the last Sync are lost; so is a truncation.
	f, err := m.Create("/d/f")
	require.NoError(t, err)
	require.Empty(t, contents(t, m, "/d/f"), "Create truncates")
	_, err = f.Write([]byte("newer"))
	require.NoError(t, err)
	require.Equal(t, "data", string(contents(t, m.Crash(nil, 0), "/d/f")))
	require.NoError(t, f.Sync())
	require.Equal(t, "newer", string(contents(t, m.Crash(nil, 0), "/d/f")))
	require.NoError(t, f.Close())
	_, err = f.Write([]byte("x"))
	require.Error(t, err, "closed")
	require.Error(t, f.Sync(), "closed")

	// A synced but never-linked file and an empty one.
	g, err := m.Create("/d/g")
	require.NoError(t, err)
	require.NoError(t, g.Close())
	require.NoError(t, m.SyncDir("/d"))
	require.Equal(t, []byte{}, contents(t, m.Crash(nil, 0), "/d/g"), "exists, no bytes synced")
}

func TestMemFSRenameIsDurableOnlyAfterSyncDir(t *testing.T) {
	setup := func(t *testing.T) *MemFS {
		m := NewMemFS()
		require.NoError(t, m.MkdirAll("/d"))
		require.NoError(t, m.MkdirAll("/e"))
		writeSmall(t, m, "/d/a", "A")
		writeSmall(t, m, "/d/b", "B")
		require.NoError(t, m.SyncDir("/d"))
		return m
	}
	t.Run("same directory", func(t *testing.T) {
		m := setup(t)
		require.NoError(t, m.Rename("/d/a", "/d/b"))
		require.Nil(t, contents(t, m, "/d/a"))
		require.Equal(t, "A", string(contents(t, m, "/d/b")))
		c := m.Crash(nil, 0)
		require.Equal(t, "A", string(contents(t, c, "/d/a")), "rename undone")
		require.Equal(t, "B", string(contents(t, c, "/d/b")), "the replaced file is back")
		require.NoError(t, m.SyncDir("/d"))
		c = m.Crash(nil, 0)
		require.Nil(t, contents(t, c, "/d/a"))
		require.Equal(t, "A", string(contents(t, c, "/d/b")))
	})
	t.Run("across directories", func(t *testing.T) {
		m := setup(t)
		require.NoError(t, m.Rename("/d/a", "/e/a"))
		require.NoError(t, m.SyncDir("/e"))
		c := m.Crash(nil, 0)
		require.Equal(t, "A", string(contents(t, c, "/d/a")), "source entry not synced: still there")
		require.Equal(t, "A", string(contents(t, c, "/e/a")))
		require.NoError(t, m.SyncDir("/d"))
		c = m.Crash(nil, 0)
		require.Nil(t, contents(t, c, "/d/a"))
		require.Equal(t, "A", string(contents(t, c, "/e/a")))
	})
	t.Run("source synced only", func(t *testing.T) {
		m := setup(t)
		require.NoError(t, m.Rename("/d/a", "/e/a"))
		require.NoError(t, m.SyncDir("/d"))
		c := m.Crash(nil, 0)
		require.Nil(t, contents(t, c, "/d/a"))
		require.Nil(t, contents(t, c, "/e/a"), "linked nowhere durable: lost")
	})
	t.Run("errors", func(t *testing.T) {
		m := setup(t)
		require.ErrorIs(t, m.Rename("/d/missing", "/d/x"), fs.ErrNotExist)
		require.ErrorIs(t, m.Rename("/d/a", "/nodir/x"), fs.ErrNotExist)
		require.Error(t, m.Rename("/d/a", "/e"), "a file over a directory")
		require.Error(t, m.Rename("/d", "/d/sub"), "a directory into itself")
		require.NoError(t, m.Rename("/d/a", "/d/a"))
		require.Equal(t, "A", string(contents(t, m, "/d/a")))
	})
}

func TestMemFSRemoveAllAndRecreate(t *testing.T) {
	m := NewMemFS()
	require.NoError(t, m.MkdirAll("/r/t/0"))
	seg, err := m.OpenMapped("/r/t/0/seg", crashPage, true)
	require.NoError(t, err)
	copy(seg.Bytes(), "old")
	require.NoError(t, seg.Sync(0, 3))
	require.NoError(t, m.SyncDir("/r/t/0"))

	require.NoError(t, m.RemoveAll("/r/t"))
	require.NoError(t, m.RemoveAll("/r/t"), "nothing there is no error")
	require.Equal(t, "old", string(contents(t, m.Crash(nil, 0), "/r/t/0/seg")[:3]), "tree removal undone")
	require.NoError(t, m.SyncDir("/r"))
	require.Nil(t, contents(t, m.Crash(nil, 0), "/r/t/0/seg"))

	// A file removed and created again under the same name is a new inode: the crash
	// shows the old one until the directory is synced.
	require.NoError(t, m.MkdirAll("/s"))
	a, err := m.OpenMapped("/s/a", crashPage, true)
	require.NoError(t, err)
	copy(a.Bytes(), "first")
	require.NoError(t, a.Sync(0, 5))
	require.NoError(t, m.SyncDir("/s"))
	require.NoError(t, m.Remove("/s/a"))
	b, err := m.OpenMapped("/s/a", crashPage, true)
	require.NoError(t, err)
	require.Equal(t, make([]byte, 5), b.Bytes()[:5], "a new file, not the old bytes")
	copy(b.Bytes(), "second")
	require.NoError(t, b.Sync(0, 6))
	require.Equal(t, "first", string(contents(t, m.Crash(nil, 0), "/s/a")[:5]))
	require.NoError(t, m.SyncDir("/s"))
	require.Equal(t, "second", string(contents(t, m.Crash(nil, 0), "/s/a")[:6]))
	require.NoError(t, a.Sync(0, 5), "a handle on a removed file still syncs, harmlessly")

	require.Error(t, m.Remove("/s"), "directory not empty")
	require.ErrorIs(t, m.Remove("/s/none"), fs.ErrNotExist)
	require.ErrorIs(t, m.SyncDir("/none"), fs.ErrNotExist)
	require.Error(t, m.MkdirAll("/s/a/b"), "a file in the way")
	_, err = m.Create("/s")
	require.Error(t, err, "a directory")
	_, err = m.ReadFile("/s")
	require.Error(t, err, "a directory")
	_, err = m.Size("/s")
	require.ErrorIs(t, err, fs.ErrNotExist)
}

func TestMemFSRelativePaths(t *testing.T) {
	m := NewMemFS()
	require.NoError(t, m.MkdirAll(".hidden/x"))
	writeSmall(t, m, ".hidden/x/f", "rel")
	require.NoError(t, m.SyncDir(".hidden/x"))
	names, err := m.ReadDir(".")
	require.NoError(t, err)
	require.Equal(t, []string{".hidden"}, names)
	require.Equal(t, "rel", string(contents(t, m.Crash(nil, 0), "./.hidden/x/f")))
	require.Nil(t, contents(t, m, "/.hidden/x/f"), "absolute and relative trees are apart")
}

func TestMemFSCapacitySmallFiles(t *testing.T) {
	m := NewMemFS()
	require.NoError(t, m.MkdirAll("/d"))
	m.SetCapacity(100)
	require.NoError(t, m.WriteFileAtomic("/d/a", make([]byte, 40)))
	require.NoError(t, m.WriteFileAtomic("/d/a", make([]byte, 50)), "old 40 + temp 50 fit")
	err := m.WriteFileAtomic("/d/a", make([]byte, 60))
	require.ErrorIs(t, err, ErrNoSpace, "old 50 + temp 60 do not")
	require.Len(t, contents(t, m, "/d/a"), 50, "the old file stays")
	require.Nil(t, contents(t, m, "/d/a"+TempSuffix), "the temp file is removed")
	_, free, err := m.DiskUsage("/d")
	require.NoError(t, err)
	require.Equal(t, uint64(50), free)
}

// replaceFunc is a way to replace a small file.
type replaceFunc func(fsys FS, path string, data []byte) error

// brokenReplace is WriteFileAtomic without the steps in skip.
func brokenReplace(skip Op) replaceFunc {
	return func(fsys FS, path string, data []byte) error {
		tmp := path + TempSuffix
		f, err := fsys.Create(tmp)
		if err != nil {
			return err
		}
		if _, err := f.Write(data); err != nil {
			return errors.Join(err, f.Close())
		}
		if skip&OpFileSync == 0 {
			if err := f.Sync(); err != nil {
				return errors.Join(err, f.Close())
			}
		}
		if err := f.Close(); err != nil {
			return err
		}
		if err := fsys.Rename(tmp, path); err != nil {
			return err
		}
		if skip&OpSyncDir == 0 {
			return fsys.SyncDir(filepath.Dir(path))
		}
		return nil
	}
}

var errCrash = errors.New("crashed here")

// replaceOutcomes runs replace(path, newData) on a MemFS holding old at /d/f (none when
// old is nil), once for every call it makes, pulling the plug just before that call, and
// once more after it returned. It returns what /d/f held after each crash (nil: missing);
// the last outcome is the one after replace returned.
func replaceOutcomes(t *testing.T, replace replaceFunc, old, newData []byte, rng *rand.Rand, keep float64) [][]byte {
	t.Helper()
	var outcomes [][]byte
	for k := 0; ; k++ {
		m := NewMemFS()
		require.NoError(t, m.MkdirAll("/d"))
		if old != nil {
			require.NoError(t, m.WriteFileAtomic("/d/f", old))
		}
		e := NewErrorFS(m)
		var crashed *MemFS
		e.Inject(Rule{After: k, Times: 1, Hook: func(Op, string) error {
			crashed = m.Crash(rng, keep)
			return errCrash // the process is gone: the sequence goes no further
		}})
		err := replace(e, "/d/f", newData)
		if crashed != nil {
			require.ErrorIs(t, err, errCrash)
			outcomes = append(outcomes, contents(t, crashed, "/d/f"))
			continue
		}
		require.NoError(t, err)
		outcomes = append(outcomes, contents(t, m.Crash(rng, keep), "/d/f"))
		require.Greater(t, k, 4, "a replace makes several calls")
		return outcomes
	}
}

// After a crash between any two steps of WriteFileAtomic the file holds exactly the old
// or exactly the new contents (or, without an old file, none or the new), and once it
// returned, the new.
func TestWriteFileAtomicCrashAtEveryStep(t *testing.T) {
	oldData, newData := []byte("old contents"), []byte("the new, longer contents")
	for i := range 20 {
		rng := rand.New(rand.NewPCG(uint64(i), 7))
		keep := []float64{0, 1, rng.Float64()}[i%3]
		for _, old := range [][]byte{oldData, nil} {
			outcomes := replaceOutcomes(t, WriteFileAtomic, old, newData, rng, keep)
			require.Equal(t, newData, outcomes[len(outcomes)-1], "durable when it returns")
			sawOld := false
			for k, got := range outcomes {
				switch {
				case string(got) == string(newData):
				case old != nil && string(got) == string(old):
					sawOld = true
					require.False(t, k > 0 && string(outcomes[k-1]) == string(newData), "new, then old again at step %d", k)
				case old == nil && got == nil:
				default:
					t.Fatalf("crash before call %d (keep %.2f): %q is neither old %q nor new", k, keep, got, old)
				}
			}
			require.Equal(t, old != nil, sawOld, "a crash early enough keeps the old file")
		}
	}
}

// The strict MemFS catches a replace that skips the directory fsync (its rename is undone
// by the crash: the old contents are back after replace returned) or the file fsync (the
// renamed file's bytes were never made durable). The first MemFS made directory entries
// durable at once (WriteFileAtomic in one step, Remove immediate); with entries that
// lenient, the first assertion fails: the skipped directory fsync goes unnoticed.
func TestStrictMemFSCatchesBrokenReplace(t *testing.T) {
	old, newData := []byte("old"), []byte("new")
	outcomes := replaceOutcomes(t, brokenReplace(OpSyncDir), old, newData, nil, 0)
	require.Equal(t, old, outcomes[len(outcomes)-1], "returned, yet a crash brings the old file back")

	outcomes = replaceOutcomes(t, brokenReplace(OpFileSync), old, newData, nil, 0)
	require.Equal(t, []byte{}, outcomes[len(outcomes)-1], "returned, yet a crash leaves an empty file")

	outcomes = replaceOutcomes(t, brokenReplace(0), old, newData, nil, 0)
	require.Equal(t, newData, outcomes[len(outcomes)-1], "the full sequence is durable")
}
