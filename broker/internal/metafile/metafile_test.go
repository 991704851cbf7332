package metafile

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/internal/mmap"
)

const (
	dir  = "/store/config"
	path = dir + "/meta.json"
)

var errBad = errors.New("not an object")

// decode accepts any data that starts with '{' and returns it trimmed.
func decode(data []byte) (string, error) {
	t := bytes.TrimSpace(data)
	if len(t) == 0 || t[0] != '{' {
		return "", fmt.Errorf("%w: %q", errBad, t)
	}
	return string(t), nil
}

// newFS returns a MemFS holding dir, with main and bak written when non-nil.
func newFS(t *testing.T, main, bak []byte) *mmap.MemFS {
	t.Helper()
	fsys := mmap.NewMemFS()
	require.NoError(t, fsys.MkdirAll(dir))
	if main != nil {
		require.NoError(t, fsys.WriteFileAtomic(path, main))
	}
	if bak != nil {
		require.NoError(t, fsys.WriteFileAtomic(path+BakSuffix, bak))
	}
	return fsys
}

// load runs Load with a logger writing into the returned buffer.
func load(t *testing.T, fsys mmap.FS) (v string, raw []byte, found bool, logs string, err error) {
	t.Helper()
	var buf bytes.Buffer
	log := zerolog.New(&buf)
	v, raw, found, err = Load(fsys, path, &log, decode)
	return v, raw, found, buf.String(), err
}

// loadFromBak runs load on fsys, checks that it returned bak from the backup
// copy with a warning, and returns the logs.
func loadFromBak(t *testing.T, fsys mmap.FS, bak []byte) string {
	t.Helper()
	v, raw, found, logs, err := load(t, fsys)
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, string(bak), v)
	require.Equal(t, bak, raw)
	require.Contains(t, logs, "loaded metadata from backup copy")
	return logs
}

func TestLoadMissing(t *testing.T) {
	v, raw, found, logs, err := load(t, newFS(t, nil, nil))
	require.NoError(t, err)
	require.False(t, found)
	require.Empty(t, v)
	require.Nil(t, raw)
	require.Empty(t, logs)
}

func TestLoadBlank(t *testing.T) {
	t.Run("both blank", func(t *testing.T) {
		_, raw, found, logs, err := load(t, newFS(t, []byte(" \n\t"), []byte{}))
		require.NoError(t, err)
		require.False(t, found)
		require.Nil(t, raw)
		require.Empty(t, logs)
	})
	t.Run("blank main falls back to bak", func(t *testing.T) {
		bak := []byte(`{"from":"bak"}`)
		loadFromBak(t, newFS(t, []byte("\n"), bak), bak)
	})
}

func TestLoadMain(t *testing.T) {
	main := []byte(`{"from":"main"}` + "\n")
	v, raw, found, logs, err := load(t, newFS(t, main, []byte(`{"from":"bak"}`)))
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, `{"from":"main"}`, v)
	require.Equal(t, main, raw)
	require.Empty(t, logs)
}

func TestLoadCorruptMainGoodBak(t *testing.T) {
	bak := []byte(`{"from":"bak"}`)
	logs := loadFromBak(t, newFS(t, []byte("garbage"), bak), bak)
	require.Contains(t, logs, path+BakSuffix)
	require.Contains(t, logs, "garbage", "the main file's error is logged")
}

func TestLoadBothCorrupt(t *testing.T) {
	_, raw, found, _, err := load(t, newFS(t, []byte("main-garbage"), []byte("bak-garbage")))
	require.ErrorIs(t, err, errBad)
	require.Contains(t, err.Error(), "main-garbage", "the main file's decode error is wrapped")
	require.NotContains(t, err.Error(), "bak-garbage")
	require.Contains(t, err.Error(), path)
	require.False(t, found)
	require.Nil(t, raw)
}

func TestLoadCorruptMainNoBak(t *testing.T) {
	_, _, found, _, err := load(t, newFS(t, []byte("garbage"), nil))
	require.ErrorIs(t, err, errBad)
	require.False(t, found)
}

func TestLoadCorruptBakOnly(t *testing.T) {
	_, _, found, _, err := load(t, newFS(t, nil, []byte("garbage")))
	require.ErrorIs(t, err, errBad)
	require.False(t, found)
}

// failFS wraps fsys so that reads, whole-file writes and directory creations of the
// paths fail selects fail with mmap.ErrInjected.
func failFS(fsys mmap.FS, fail func(path string) bool) *mmap.ErrorFS {
	e := mmap.NewErrorFS(fsys)
	e.Inject(mmap.Rule{Ops: mmap.OpReadFile | mmap.OpMkdirAll | mmap.OpWriteFileAtomic, Path: fail})
	return e
}

func TestLoadReadError(t *testing.T) {
	fsys := failFS(newFS(t, nil, []byte(`{}`)), func(p string) bool { return p == path })
	_, _, found, _, err := load(t, fsys)
	require.ErrorIs(t, err, mmap.ErrInjected, "a read error other than not-exist does not fall back")
	require.False(t, found)
}

func TestLoadNilLogger(t *testing.T) {
	v, _, found, err := Load(newFS(t, []byte("x"), []byte(`{}`)), path, nil, decode)
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, "{}", v)
}

func TestWriteKeepsBak(t *testing.T) {
	fsys := newFS(t, nil, nil)

	err, bakErr := Write(fsys, path, nil, []byte(`{"v":1}`))
	require.NoError(t, err)
	require.NoError(t, bakErr)
	ok, e := fsys.Exists(path + BakSuffix)
	require.NoError(t, e)
	require.False(t, ok, "no backup without previous contents")

	err, bakErr = Write(fsys, path, []byte(`{"v":1}`), []byte(`{"v":2}`))
	require.NoError(t, err)
	require.NoError(t, bakErr)
	got, e := fsys.ReadFile(path)
	require.NoError(t, e)
	require.Equal(t, `{"v":2}`, string(got))
	bak, e := fsys.ReadFile(path + BakSuffix)
	require.NoError(t, e)
	require.Equal(t, `{"v":1}`, string(bak))

	v, raw, found, _, e := load(t, fsys)
	require.NoError(t, e)
	require.True(t, found)
	require.Equal(t, `{"v":2}`, v)
	require.Equal(t, `{"v":2}`, string(raw))
}

func TestWriteBackupFailure(t *testing.T) {
	mem := newFS(t, nil, nil)
	fsys := failFS(mem, func(p string) bool { return strings.HasSuffix(p, BakSuffix) })
	err, bakErr := Write(fsys, path, []byte(`{"v":1}`), []byte(`{"v":2}`))
	require.NoError(t, err, "a failed backup does not stop the main write")
	require.ErrorIs(t, bakErr, mmap.ErrInjected)
	got, e := mem.ReadFile(path)
	require.NoError(t, e)
	require.Equal(t, `{"v":2}`, string(got))
}

func TestWriteMainFailure(t *testing.T) {
	mem := newFS(t, nil, nil)
	fsys := failFS(mem, func(p string) bool { return p == path })
	err, bakErr := Write(fsys, path, []byte(`{"v":1}`), []byte(`{"v":2}`))
	require.ErrorIs(t, err, mmap.ErrInjected)
	require.NoError(t, bakErr)
	bak, e := mem.ReadFile(path + BakSuffix)
	require.NoError(t, e)
	require.Equal(t, `{"v":1}`, string(bak))
}

// A main write that fails at any step of the atomic replace reports the error and leaves
// the previous version in place, before and after a crash; the backup copy is written.
func TestWriteFailsAtEveryReplaceStep(t *testing.T) {
	steps := []mmap.Op{mmap.OpCreate, mmap.OpFileWrite, mmap.OpFileSync, mmap.OpFileClose, mmap.OpRename, mmap.OpSyncDir}
	for _, step := range steps {
		t.Run(step.String(), func(t *testing.T) {
			mem := newFS(t, []byte(`{"v":1}`), nil)
			fsys := mmap.NewErrorFS(mem)
			// Each step runs once for the backup copy, then once for the main file.
			fsys.Inject(mmap.Rule{Ops: step, After: 1, Times: 1})
			err, bakErr := Write(fsys, path, []byte(`{"v":1}`), []byte(`{"v":2}`))
			require.NoError(t, bakErr)
			require.ErrorIs(t, err, mmap.ErrInjected)
			crashed := mem.Crash(nil, 0)
			v, _, found, _, lerr := load(t, crashed)
			require.NoError(t, lerr)
			require.True(t, found)
			require.Equal(t, `{"v":1}`, v, "the previous version survives")
			bak, rerr := crashed.ReadFile(path + BakSuffix)
			require.NoError(t, rerr)
			require.Equal(t, `{"v":1}`, string(bak))
		})
	}
}
