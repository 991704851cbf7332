package mmap

import (
	"errors"
	"io/fs"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestOpString(t *testing.T) {
	require.Equal(t, "none", Op(0).String())
	require.Equal(t, "SyncDir", OpSyncDir.String())
	require.Equal(t, "SyncDir|Create|Rename|File.Write|File.Sync|File.Close", OpReplaceSteps.String(), "in bit order")
	require.Equal(t, "Op(1<<31)", Op(1<<31).String())
	for op := Op(1); op < opEnd; op <<= 1 {
		require.NotContains(t, op.String(), "Op(", "a name for every operation")
	}
	require.Equal(t, OpAll, opEnd-1)
}

func TestPathMatchers(t *testing.T) {
	require.True(t, PathIs("/a/b/")("/a//b"))
	require.False(t, PathIs("/a/b")("/a/bc"))
	require.True(t, PathContains("/config/")("/store/config/x.json"))
	require.True(t, PathSuffix(".bak")("/x.json.bak"))
	require.False(t, PathSuffix(".bak")("/x.json.bak.tmp"))
	require.True(t, PathGlob("*.json")("/store/config/x.json"), "a base-name pattern")
	require.True(t, PathGlob("/store/*/0000*")("/store/cq/00001"))
	require.False(t, PathGlob("/store/*/0000*")("/store/cq/t/00001"), "* does not cross a separator")
	require.Panics(t, func() { PathGlob("[") })
}

func TestErrorFSRules(t *testing.T) {
	m := NewMemFS()
	e := NewErrorFS(m)
	require.NoError(t, e.MkdirAll("/d"))
	for _, name := range []string{"/d/a", "/d/b"} {
		require.NoError(t, e.WriteFileAtomic(name, []byte(name)))
	}
	read := func(p string) error { _, err := e.ReadFile(p); return err }

	// By operation and path, after N calls, N times, with a given error.
	remove := e.Inject(Rule{Ops: OpReadFile | OpExists, Path: PathIs("/d/a"), After: 1, Times: 2, Err: syscall.EIO})
	require.NoError(t, read("/d/a"), "the first call passes")
	require.NoError(t, read("/d/b"), "another path")
	err := read("/d/a")
	require.ErrorIs(t, err, syscall.EIO)
	require.ErrorIs(t, err, ErrInjected)
	require.ErrorContains(t, err, "ReadFile /d/a")
	_, err = e.Exists("/d/a")
	require.ErrorIs(t, err, syscall.EIO)
	require.NoError(t, read("/d/a"), "acted twice: spent")
	remove()
	remove() // twice is harmless

	// Zero Ops and nil Path match everything; no Err means ErrInjected alone.
	remove = e.Inject(Rule{})
	_, err = e.Size("/d/b")
	require.ErrorIs(t, err, ErrInjected)
	require.NotErrorIs(t, err, fs.ErrNotExist)
	require.ErrorIs(t, e.SyncDir("/d"), ErrInjected)
	remove()
	require.NoError(t, e.SyncDir("/d"))

	// A rule's Path sees both paths of a Rename.
	remove = e.Inject(Rule{Ops: OpRename, Path: PathIs("/d/b")})
	require.ErrorIs(t, e.Rename("/d/a", "/d/b"), ErrInjected)
	require.ErrorIs(t, e.Rename("/d/b", "/d/c"), ErrInjected)
	remove()

	// Hooks run in order; nil lets the call through, an error fails it.
	var seen []string
	e.Inject(Rule{Ops: OpRemove, Hook: func(op Op, p string) error {
		seen = append(seen, op.String()+" "+p)
		return nil
	}})
	remove = e.Inject(Rule{Ops: OpRemove, Path: PathSuffix("b"), Hook: func(Op, string) error { return syscall.EROFS }})
	require.NoError(t, e.Remove("/d/a"))
	err = e.Remove("/d/b")
	require.ErrorIs(t, err, syscall.EROFS)
	require.ErrorIs(t, err, ErrInjected)
	require.Equal(t, []string{"Remove /d/a", "Remove /d/b"}, seen)
	remove()
	require.NoError(t, e.Remove("/d/b"))

	// Every call is counted, failed ones too.
	require.Equal(t, 2, e.Calls(OpWriteFileAtomic, nil))
	require.Equal(t, 1, e.Calls(OpWriteFileAtomic, PathIs("/d/a")))
	require.Equal(t, 3, e.Calls(OpRename, PathIs("/d/b")), "the replace of /d/b and both failed renames")
	require.Equal(t, 3, e.Calls(OpReadFile, PathIs("/d/a")))
	require.Equal(t, 3, e.Calls(OpRemove, nil))
	require.Zero(t, e.Calls(OpWindow, nil))
}

// Failing each step of WriteFileAtomic in turn: the error names the step, the old file is
// intact and no temp file is left behind.
func TestErrorFSWriteFileAtomicSteps(t *testing.T) {
	steps := []Op{OpWriteFileAtomic, OpCreate, OpFileWrite, OpFileSync, OpFileClose, OpRename, OpSyncDir}
	for _, step := range steps {
		t.Run(step.String(), func(t *testing.T) {
			m := NewMemFS()
			require.NoError(t, m.MkdirAll("/d"))
			require.NoError(t, m.WriteFileAtomic("/d/f", []byte("old")))
			e := NewErrorFS(m)
			e.Inject(Rule{Ops: step, Times: 1})
			err := e.WriteFileAtomic("/d/f", []byte("new"))
			require.ErrorIs(t, err, ErrInjected)
			require.ErrorContains(t, err, step.String())
			want := "old"
			if step == OpSyncDir {
				want = "new" // renamed, but not durably
			}
			require.Equal(t, want, string(contents(t, m, "/d/f")))
			require.Equal(t, "old", string(contents(t, m.Crash(nil, 0), "/d/f")))
			require.Nil(t, contents(t, m, "/d/f"+TempSuffix), "no temp file left")
			require.NoError(t, e.WriteFileAtomic("/d/f", []byte("new")), "the rule acted once")
			require.Equal(t, "new", string(contents(t, m.Crash(nil, 0), "/d/f")))
		})
	}
	e := NewErrorFS(NewMemFS())
	require.NoError(t, e.MkdirAll("/d"))
	require.NoError(t, e.WriteFileAtomic("/d/f", nil))
	require.Equal(t, 6, e.Calls(OpReplaceSteps, nil), "one call per step")
}

func TestErrorFSMappedAndFile(t *testing.T) {
	fsUnderTest(t, func(t *testing.T, fsys FS, dir string) {
		e := NewErrorFS(fsys)
		p := dir + "/seg"
		_, err := e.OpenMapped(p, 8192, false)
		require.ErrorIs(t, err, fs.ErrNotExist, "the wrapped FS's errors pass unchanged")
		e.Inject(Rule{Ops: OpOpenMapped, Times: 1})
		_, err = e.OpenMapped(p, 8192, true)
		require.ErrorIs(t, err, ErrInjected)
		mp, err := e.OpenMapped(p, 8192, true)
		require.NoError(t, err)
		require.Equal(t, p, mp.Path())

		e.Inject(Rule{Ops: OpSync | OpWriteAt | OpWindow | OpWriteMode, After: 4, Err: syscall.EIO})
		require.NoError(t, mp.WriteAt([]byte("x"), 0))
		require.NoError(t, mp.Sync(0, 1))
		w, err := mp.Window(0, 10)
		require.NoError(t, err)
		require.NoError(t, w.Close())
		require.NoError(t, mp.WriteMode(true))
		require.ErrorIs(t, mp.WriteAt([]byte("y"), 0), syscall.EIO)
		require.Equal(t, "x", string(mp.Bytes()[:1]), "a failed write changes nothing")
		require.ErrorIs(t, mp.Sync(0, 1), syscall.EIO)
		_, err = mp.Window(0, 10)
		require.ErrorIs(t, err, syscall.EIO)
		require.ErrorIs(t, mp.WriteMode(false), syscall.EIO)
		e.Inject(Rule{Ops: OpClose})
		require.ErrorIs(t, mp.Close(), ErrInjected)
		require.Nil(t, mp.Bytes(), "closed all the same")

		e.Inject(Rule{Ops: OpFileWrite | OpFileSync | OpFileClose, Path: PathSuffix("small")})
		f, err := e.Create(dir + "/small")
		require.NoError(t, err)
		_, err = f.Write([]byte("x"))
		require.ErrorIs(t, err, ErrInjected)
		require.ErrorIs(t, f.Sync(), ErrInjected)
		require.ErrorIs(t, f.Close(), ErrInjected)
		require.Equal(t, []byte{}, contents(t, fsys, dir+"/small"))
	})
}

// A hook can hold calls at a gate, as a slow disk would, while other calls proceed.
func TestErrorFSGate(t *testing.T) {
	m := NewMemFS()
	require.NoError(t, m.MkdirAll("/d"))
	e := NewErrorFS(m)
	gate, entered := make(chan struct{}), make(chan struct{})
	remove := e.Inject(Rule{Ops: OpSyncDir, Times: 1, Hook: func(Op, string) error {
		close(entered)
		<-gate
		return nil
	}})
	var wg sync.WaitGroup
	wg.Go(func() { require.NoError(t, e.SyncDir("/d")) })
	<-entered
	require.NoError(t, e.WriteFileAtomic("/d/x", nil), "its SyncDir passes: the rule acts once")
	close(gate)
	wg.Wait()
	remove()
	require.Equal(t, 2, e.Calls(OpSyncDir, nil))
}

func TestErrorFSErrorsWrapOnce(t *testing.T) {
	e := NewErrorFS(NewMemFS())
	e.Inject(Rule{Ops: OpMkdirAll, Hook: func(Op, string) error { return ErrInjected }})
	err := e.MkdirAll("/x")
	require.ErrorIs(t, err, ErrInjected)
	require.Equal(t, "mmap: MkdirAll /x: injected failure", err.Error())
	require.True(t, errors.Is(err, ErrInjected))
}
