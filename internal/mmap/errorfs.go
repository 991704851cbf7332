package mmap

import (
	"cmp"
	"errors"
	"fmt"
	"math/bits"
	"path/filepath"
	"strings"
	"sync"
)

// ErrInjected is matched (errors.Is) by every failure an ErrorFS injects, whatever error
// its Rule names.
var ErrInjected = errors.New("injected failure")

// Op is a set of file-system operations, one bit each, for ErrorFS rules and counts.
type Op uint32

// The operations an ErrorFS sees. OpSync, OpWriteAt, OpWindow, OpWriteMode, OpClose and
// OpAllocate are calls on a Mapped; OpFileWrite, OpFileSync and OpFileClose calls on a File.
// Their path is the file's. OpOpenMapped is both OpenMapped and OpenMappedSparse.
const (
	OpOpenMapped Op = 1 << iota
	OpReadDir
	OpMkdirAll
	OpSyncDir
	OpRemove
	OpRemoveAll
	OpReadFile
	OpCreate
	OpRename
	OpWriteFileAtomic // the call as a whole, before its steps
	OpExists
	OpSize
	OpDiskUsage
	OpSync
	OpWriteAt
	OpWindow
	OpWriteMode
	OpClose
	OpFileWrite
	OpFileSync
	OpFileClose
	OpLock
	OpExtend
	OpAllocate
	opEnd

	// OpAll is every operation.
	OpAll = opEnd - 1
	// OpReplaceSteps are the steps of WriteFileAtomic after OpWriteFileAtomic itself, in
	// order: OpCreate, OpFileWrite, OpFileSync, OpFileClose, OpRename, OpSyncDir (and
	// OpRemove of the temp file when a step before the rename failed).
	OpReplaceSteps = OpCreate | OpFileWrite | OpFileSync | OpFileClose | OpRename | OpSyncDir
)

// String names the operations in the set, joined by "|".
func (o Op) String() string {
	if o == 0 {
		return "none"
	}
	var names []string
	for rest := o; rest != 0; rest &= rest - 1 {
		names = append(names, (rest & -rest).name())
	}
	return strings.Join(names, "|")
}

// name names a single operation.
func (o Op) name() string {
	switch o {
	case OpOpenMapped:
		return "OpenMapped"
	case OpLock:
		return "Lock"
	case OpExtend:
		return "Extend"
	case OpAllocate:
		return "Allocate"
	case OpReadDir:
		return "ReadDir"
	case OpMkdirAll:
		return "MkdirAll"
	case OpSyncDir:
		return "SyncDir"
	case OpRemove:
		return "Remove"
	case OpRemoveAll:
		return "RemoveAll"
	case OpReadFile:
		return "ReadFile"
	case OpCreate:
		return "Create"
	case OpRename:
		return "Rename"
	case OpWriteFileAtomic:
		return "WriteFileAtomic"
	case OpExists:
		return "Exists"
	case OpSize:
		return "Size"
	case OpDiskUsage:
		return "DiskUsage"
	case OpSync:
		return "Sync"
	case OpWriteAt:
		return "WriteAt"
	case OpWindow:
		return "Window"
	case OpWriteMode:
		return "WriteMode"
	case OpClose:
		return "Close"
	case OpFileWrite:
		return "File.Write"
	case OpFileSync:
		return "File.Sync"
	case OpFileClose:
		return "File.Close"
	}
	return fmt.Sprintf("Op(1<<%d)", bits.TrailingZeros32(uint32(o)))
}

// Rule says which calls an ErrorFS acts on and what it does to them: fail them (Err) or
// run a hook (Hook) before they reach the wrapped FS.
type Rule struct {
	// Ops is the set of operations the rule applies to; zero means every operation.
	Ops Op
	// Path selects the paths the rule applies to (a Rename matches when either of its
	// paths does); nil means every path. PathIs, PathContains, PathSuffix and PathGlob
	// make common ones. It runs with the ErrorFS's lock held, so it must not call the
	// ErrorFS.
	Path func(path string) bool
	// After lets the first After matching calls through untouched.
	After int
	// Times is how many matching calls, after the first After, the rule acts on; zero
	// means all of them (so Times: 1 is "once").
	Times int
	// Err is the error a call the rule acts on fails with, wrapped so that it matches
	// both Err and ErrInjected; nil means ErrInjected alone. The call never reaches the
	// wrapped FS.
	Err error
	// Hook, when set, runs instead of failing the call: an error fails the call (wrapped
	// as Err would be), nil lets it proceed. It runs without the ErrorFS's lock, so it may
	// block (a gate) or use the wrapped FS (MemFS.Crash to crash before the call). For a
	// Rename, path is the old path.
	Hook func(op Op, path string) error
}

// PathIs matches exactly p (after filepath.Clean).
func PathIs(p string) func(string) bool {
	p = filepath.Clean(p)
	return func(path string) bool { return filepath.Clean(path) == p }
}

// PathContains matches paths holding s.
func PathContains(s string) func(string) bool {
	return func(path string) bool { return strings.Contains(path, s) }
}

// PathSuffix matches paths ending in s.
func PathSuffix(s string) func(string) bool {
	return func(path string) bool { return strings.HasSuffix(path, s) }
}

// PathGlob matches paths that match pattern (filepath.Match syntax): the whole path, or
// its base name when pattern holds no separator. A malformed pattern is a programming
// error and panics.
func PathGlob(pattern string) func(string) bool {
	if _, err := filepath.Match(pattern, ""); err != nil {
		panic(fmt.Sprintf("mmap: PathGlob(%q): %v", pattern, err))
	}
	base := !strings.Contains(pattern, string(filepath.Separator))
	return func(path string) bool {
		if base {
			path = filepath.Base(path)
		}
		ok, _ := filepath.Match(pattern, path)
		return ok
	}
}

// rule is an injected Rule and its counters.
type rule struct {
	Rule
	seen, acted int
}

// callKey identifies the calls ErrorFS counts.
type callKey struct {
	op          Op
	path, path2 string
}

// ErrorFS wraps an FS (and the Mapped and File handles it returns) to fail or intercept
// the operations its rules select, and counts every call it sees. Its WriteFileAtomic runs
// the shared sequence (the function WriteFileAtomic) over its own methods, so each step
// can be failed or crashed before; the wrapped FS's own WriteFileAtomic is not called.
// It is safe for concurrent use.
type ErrorFS struct {
	fs FS
	mu struct {
		sync.Mutex
		rules []*rule
		calls map[callKey]int
	}
}

var _ FS = (*ErrorFS)(nil)

// NewErrorFS wraps fsys with no rules: every call goes through, counted.
func NewErrorFS(fsys FS) *ErrorFS {
	e := &ErrorFS{fs: fsys}
	e.mu.calls = make(map[callKey]int)
	return e
}

// Inject adds a rule, evaluated after the rules added before it, and returns a function
// that removes it (calls already past the rule are not affected).
func (e *ErrorFS) Inject(r Rule) (remove func()) {
	if r.Ops == 0 {
		r.Ops = OpAll
	}
	ir := &rule{Rule: r}
	e.mu.Lock()
	e.mu.rules = append(e.mu.rules, ir)
	e.mu.Unlock()
	return func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		for i, x := range e.mu.rules {
			if x == ir {
				e.mu.rules = append(e.mu.rules[:i:i], e.mu.rules[i+1:]...)
				return
			}
		}
	}
}

// Calls counts the calls made through e of the operations in ops on paths that match
// (nil matches every path), injected failures included.
func (e *ErrorFS) Calls(ops Op, path func(string) bool) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for k, c := range e.mu.calls {
		if k.op&ops != 0 && (path == nil || path(k.path) || (k.path2 != "" && path(k.path2))) {
			n += c
		}
	}
	return n
}

// check counts a call and applies the rules to it: it returns the error the call must
// fail with, or nil to let it through.
func (e *ErrorFS) check(op Op, path, path2 string) error {
	e.mu.Lock()
	e.mu.calls[callKey{op, path, path2}]++
	var acts []*rule
	for _, r := range e.mu.rules {
		if r.Ops&op == 0 || (r.Path != nil && !r.Path(path) && (path2 == "" || !r.Path(path2))) {
			continue
		}
		r.seen++
		if r.seen <= r.After || (r.Times > 0 && r.acted >= r.Times) {
			continue
		}
		r.acted++
		acts = append(acts, r)
		if r.Hook == nil {
			break // the call fails here; later rules do not see it
		}
	}
	e.mu.Unlock()
	for _, r := range acts {
		err := r.Err
		if r.Hook != nil {
			if err = r.Hook(op, path); err == nil {
				continue
			}
		}
		if err == nil || errors.Is(err, ErrInjected) {
			return fmt.Errorf("mmap: %s %s: %w", op, path, cmp.Or(err, ErrInjected))
		}
		return fmt.Errorf("mmap: %s %s: %w: %w", op, path, ErrInjected, err)
	}
	return nil
}

// OpenMapped implements FS.
func (e *ErrorFS) OpenMapped(path string, size int64, create bool) (Mapped, error) {
	if err := e.check(OpOpenMapped, path, ""); err != nil {
		return nil, err
	}
	m, err := e.fs.OpenMapped(path, size, create)
	if err != nil {
		return nil, err
	}
	return &errMapped{Mapped: m, e: e}, nil
}

// OpenMappedSparse implements FS; its rules are those of OpOpenMapped.
func (e *ErrorFS) OpenMappedSparse(path string, size int64, create bool) (Mapped, error) {
	if err := e.check(OpOpenMapped, path, ""); err != nil {
		return nil, err
	}
	m, err := e.fs.OpenMappedSparse(path, size, create)
	if err != nil {
		return nil, err
	}
	return &errMapped{Mapped: m, e: e}, nil
}

// ReadDir implements FS.
func (e *ErrorFS) ReadDir(path string) ([]string, error) {
	if err := e.check(OpReadDir, path, ""); err != nil {
		return nil, err
	}
	return e.fs.ReadDir(path)
}

// MkdirAll implements FS.
func (e *ErrorFS) MkdirAll(path string) error {
	if err := e.check(OpMkdirAll, path, ""); err != nil {
		return err
	}
	return e.fs.MkdirAll(path)
}

// SyncDir implements FS.
func (e *ErrorFS) SyncDir(path string) error {
	if err := e.check(OpSyncDir, path, ""); err != nil {
		return err
	}
	return e.fs.SyncDir(path)
}

// Remove implements FS.
func (e *ErrorFS) Remove(path string) error {
	if err := e.check(OpRemove, path, ""); err != nil {
		return err
	}
	return e.fs.Remove(path)
}

// RemoveAll implements FS.
func (e *ErrorFS) RemoveAll(path string) error {
	if err := e.check(OpRemoveAll, path, ""); err != nil {
		return err
	}
	return e.fs.RemoveAll(path)
}

// ReadFile implements FS.
func (e *ErrorFS) ReadFile(path string) ([]byte, error) {
	if err := e.check(OpReadFile, path, ""); err != nil {
		return nil, err
	}
	return e.fs.ReadFile(path)
}

// Create implements FS.
func (e *ErrorFS) Create(path string) (File, error) {
	if err := e.check(OpCreate, path, ""); err != nil {
		return nil, err
	}
	f, err := e.fs.Create(path)
	if err != nil {
		return nil, err
	}
	return &errFile{f: f, e: e, path: path}, nil
}

// Rename implements FS; a rule's Path sees both paths.
func (e *ErrorFS) Rename(oldpath, newpath string) error {
	if err := e.check(OpRename, oldpath, newpath); err != nil {
		return err
	}
	return e.fs.Rename(oldpath, newpath)
}

// WriteFileAtomic implements FS: OpWriteFileAtomic, then the shared sequence over e's own
// methods, so every step passes the rules.
func (e *ErrorFS) WriteFileAtomic(path string, data []byte) error {
	if err := e.check(OpWriteFileAtomic, path, ""); err != nil {
		return err
	}
	return WriteFileAtomic(e, path, data)
}

// Exists implements FS.
func (e *ErrorFS) Exists(path string) (bool, error) {
	if err := e.check(OpExists, path, ""); err != nil {
		return false, err
	}
	return e.fs.Exists(path)
}

// Size implements FS.
func (e *ErrorFS) Size(path string) (int64, error) {
	if err := e.check(OpSize, path, ""); err != nil {
		return 0, err
	}
	return e.fs.Size(path)
}

// DiskUsage implements FS.
func (e *ErrorFS) DiskUsage(path string) (total, free uint64, err error) {
	if err := e.check(OpDiskUsage, path, ""); err != nil {
		return 0, 0, err
	}
	return e.fs.DiskUsage(path)
}

// Extend implements FS.
func (e *ErrorFS) Extend(path string, size int64) error {
	if err := e.check(OpExtend, path, ""); err != nil {
		return err
	}
	return e.fs.Extend(path, size)
}

// Lock implements FS.
func (e *ErrorFS) Lock(path string) (func() error, error) {
	if err := e.check(OpLock, path, ""); err != nil {
		return nil, err
	}
	return e.fs.Lock(path)
}

// errMapped is a Mapped whose calls pass an ErrorFS's rules.
type errMapped struct {
	Mapped
	e *ErrorFS
}

// Sync implements Mapped.
func (m *errMapped) Sync(off, n int64) error {
	if err := m.e.check(OpSync, m.Path(), ""); err != nil {
		return err
	}
	return m.Mapped.Sync(off, n)
}

// Allocate implements Mapped.
func (m *errMapped) Allocate(off, n int64) error {
	if err := m.e.check(OpAllocate, m.Path(), ""); err != nil {
		return err
	}
	return m.Mapped.Allocate(off, n)
}

// WriteAt implements Mapped.
func (m *errMapped) WriteAt(p []byte, off int64) error {
	if err := m.e.check(OpWriteAt, m.Path(), ""); err != nil {
		return err
	}
	return m.Mapped.WriteAt(p, off)
}

// Window implements Mapped.
func (m *errMapped) Window(off, n int64) (Window, error) {
	if err := m.e.check(OpWindow, m.Path(), ""); err != nil {
		return nil, err
	}
	return m.Mapped.Window(off, n)
}

// WriteMode implements Mapped.
func (m *errMapped) WriteMode(on bool) error {
	if err := m.e.check(OpWriteMode, m.Path(), ""); err != nil {
		return err
	}
	return m.Mapped.WriteMode(on)
}

// Populate implements Mapped; it is advice, so no failure is injected.
func (m *errMapped) Populate(off, n int64) error { return m.Mapped.Populate(off, n) }

// Close implements Mapped. An injected failure still closes the wrapped file (as close(2)
// does), so that no test leaks it; the call reports the failure.
func (m *errMapped) Close() error {
	err := m.e.check(OpClose, m.Path(), "")
	return errors.Join(err, m.Mapped.Close())
}

// errFile is a File whose calls pass an ErrorFS's rules.
type errFile struct {
	f    File
	e    *ErrorFS
	path string
}

// Write implements File.
func (f *errFile) Write(p []byte) (int, error) {
	if err := f.e.check(OpFileWrite, f.path, ""); err != nil {
		return 0, err
	}
	return f.f.Write(p)
}

// Sync implements File.
func (f *errFile) Sync() error {
	if err := f.e.check(OpFileSync, f.path, ""); err != nil {
		return err
	}
	return f.f.Sync()
}

// Close implements File. An injected failure still closes the wrapped file, so that no
// test leaks it; the call reports the failure.
func (f *errFile) Close() error {
	err := f.e.check(OpFileClose, f.path, "")
	return errors.Join(err, f.f.Close())
}
