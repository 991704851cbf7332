package mmap

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLockIsExclusiveUntilReleased(t *testing.T) {
	mem := NewMemFS()
	require.NoError(t, mem.MkdirAll("/d"))
	for name, tc := range map[string]struct {
		fs   FS
		path string
	}{
		"os":  {OSFS{}, filepath.Join(t.TempDir(), "lock")},
		"mem": {mem, "/d/lock"},
	} {
		release, err := tc.fs.Lock(tc.path)
		require.NoError(t, err, name)
		_, err = tc.fs.Lock(tc.path)
		require.ErrorIs(t, err, ErrLocked, "%s: a second holder is refused", name)
		require.NoError(t, release(), name)
		again, err := tc.fs.Lock(tc.path)
		require.NoError(t, err, "%s: free again after release", name)
		require.NoError(t, again())
	}
}

func TestOSFSLockNamesItsHolder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	release, err := OSFS{}.Lock(path)
	require.NoError(t, err)
	defer func() { require.NoError(t, release()) }()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, strconv.Itoa(os.Getpid()), strings.TrimSpace(string(b)))
	_, err = OSFS{}.Lock(path)
	require.ErrorIs(t, err, ErrLocked)
	require.ErrorContains(t, err, "process "+strconv.Itoa(os.Getpid()))
}

func TestMemFSCrashDropsLocks(t *testing.T) {
	m := NewMemFS()
	_, err := m.Lock("/lock")
	require.NoError(t, err)
	after := m.Crash(rand.New(rand.NewPCG(1, 2)), 0)
	release, err := after.Lock("/lock")
	require.NoError(t, err, "the process that held it is gone")
	require.NoError(t, release())
}

func TestErrorFSInjectsLockFailures(t *testing.T) {
	e := NewErrorFS(NewMemFS())
	remove := e.Inject(Rule{Ops: OpLock})
	_, err := e.Lock("/lock")
	require.ErrorIs(t, err, ErrInjected)
	remove()
	release, err := e.Lock("/lock")
	require.NoError(t, err)
	require.NoError(t, release())
}

func TestExtendGrowsDurablyWithZeros(t *testing.T) {
	mem := NewMemFS()
	for name, tc := range map[string]struct {
		fs   FS
		path string
	}{
		"os":  {OSFS{}, filepath.Join(t.TempDir(), "f")},
		"mem": {mem, "/f"},
	} {
		require.NoError(t, WriteFileAtomic(tc.fs, tc.path, []byte("abc")), name)
		require.NoError(t, tc.fs.Extend(tc.path, 10), name)
		require.NoError(t, tc.fs.Extend(tc.path, 5), "%s: shrinking is not extending", name)
		got, err := tc.fs.ReadFile(tc.path)
		require.NoError(t, err, name)
		require.Equal(t, append([]byte("abc"), make([]byte, 7)...), got, name)
	}
	got, err := mem.Crash(nil, 0).ReadFile("/f")
	require.NoError(t, err)
	require.Len(t, got, 10, "the new size survives a crash")
}
