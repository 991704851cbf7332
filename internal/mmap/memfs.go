package mmap

import (
	"fmt"
	"io/fs"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// crashPage is the granularity at which MemFS.Crash may keep unsynced bytes.
const crashPage = 4096

// MemFS is an in-memory FS that remembers what has been made durable, for crash tests.
//
// It models inodes and directory entries separately, the way a power loss treats them:
//   - A file's bytes: writers change its current bytes; Mapped.Sync copies a range, and
//     File.Sync the whole file, into its durable image.
//   - A directory's entries: creating, removing and renaming a file change a directory's
//     current entries at once (ReadDir, ReadFile and Exists see them), but its durable
//     entries only on SyncDir of that directory, which copies the current entries. So a
//     removal or rename not followed by SyncDir is undone by a crash, and a created file
//     not followed by SyncDir is lost.
//   - MkdirAll is the exception: the directories it creates are durable at once.
//
// WriteFileAtomic runs the shared sequence (the function WriteFileAtomic) over these
// primitives, so wrapping a MemFS in an ErrorFS lets a test crash between any two of its
// steps. Crash returns a new MemFS holding what a power loss would leave. Crash reads only
// durable state when keepUnsynced is 0, so it may run while other goroutines write; with
// keepUnsynced > 0 it also reads current bytes, so writers into mappings must be stopped
// (Mapped.WriteAt and small-file writes may go on: they take the file system's lock).
//
// Space: disk usage (DiskUsage, SetCapacity) counts allocated bytes. Every byte of a small
// file and of a file made by OpenMapped (or grown by Extend) is allocated; a file made by
// OpenMappedSparse starts with none, and Mapped.Allocate allocates whole pages (AllocPage
// bytes, the last one cut at the end of the file). An allocation survives a Crash: a real
// file system may lose an allocation that no sync covered, but then it also lost every byte
// written into it, and Ferry only trusts pages that hold data to have blocks.
//
// The allocate-before-write rule for sparse files (see the package documentation) is
// checked: Mapped.WriteAt into a page without allocation, and non-zero bytes found in such
// a page by Mapped.Sync or by Crash (when it keeps unsynced pages), panic with a message
// naming the file and the page — on a real disk that write may be a SIGBUS. Zero bytes
// written through the mapping cannot be told from a hole and go unnoticed.
type MemFS struct {
	mu struct {
		sync.Mutex
		roots    map[string]*memNode // "/" and "." (relative paths)
		capacity int64               // 0 = unlimited
		used     int64               // allocated bytes of the files reachable from the roots
		locks    map[string]bool     // paths locked with Lock; a Crash clone has none
	}
}

// AllocPage is the unit in which MemFS allocates the blocks of a sparse file.
const AllocPage = crashPage

// memNode is an inode: a file (data and its durable image) or a directory (current and
// durable entries). A node may be reachable under several names of the durable tree
// (a rename synced only in the target directory); Crash keeps it one node.
type memNode struct {
	dir bool
	// Files.
	data    []byte // current bytes
	durable []byte // durable image; nil = durLen zero bytes
	durLen  int    // length of the durable image
	// Sparse files (OpenMappedSparse): which AllocPage pages have blocks. Other files
	// have blocks for every byte.
	sparse     bool
	alloc      []uint64 // bit p: page p is allocated
	allocBytes int64    // bytes of the allocated pages (the last page cut at the end)
	// Directories.
	entries    map[string]*memNode // current entries
	durEntries map[string]*memNode // entries as of the last SyncDir
}

func newDirNode() *memNode {
	return &memNode{dir: true, entries: map[string]*memNode{}, durEntries: map[string]*memNode{}}
}

// usage is the allocated bytes of the files in the tree under n.
func (n *memNode) usage() int64 {
	switch {
	case n.dir:
		var sum int64
		for _, c := range n.entries {
			sum += c.usage()
		}
		return sum
	case n.sparse:
		return n.allocBytes
	}
	return int64(len(n.data))
}

// allocated reports whether page p of a file has blocks.
func (n *memNode) allocated(p int64) bool {
	return !n.sparse || n.alloc[p/64]&(1<<(p%64)) != 0
}

// allocGrowth is how many bytes allocating the pages [p0, p1) of a sparse file would add.
func (n *memNode) allocGrowth(p0, p1 int64) int64 {
	var grow int64
	for p := p0; p < p1; p++ {
		if !n.allocated(p) {
			grow += min((p+1)*AllocPage, int64(len(n.data))) - p*AllocPage
		}
	}
	return grow
}

// allocate marks the pages [p0, p1) of a sparse file allocated.
func (n *memNode) allocate(p0, p1 int64) {
	n.allocBytes += n.allocGrowth(p0, p1)
	for p := p0; p < p1; p++ {
		n.alloc[p/64] |= 1 << (p % 64)
	}
}

// checkWritten panics if a page of [off, end) without blocks holds a non-zero byte of b
// (the file's current or to-be-durable bytes): something was written there without
// Allocate. what and path describe the check for the message.
func (n *memNode) checkWritten(b []byte, off, end int64, what, path string) {
	if !n.sparse {
		return
	}
	for p := off / AllocPage; p*AllocPage < end; p++ {
		if n.allocated(p) {
			continue
		}
		lo, hi := max(p*AllocPage, off), min((p+1)*AllocPage, end)
		for i := lo; i < hi; i++ {
			if b[i] != 0 {
				panic(fmt.Sprintf("mmap: MemFS: %s %s: byte %d was written, but its page [%d,%d) was never allocated "+
					"(Mapped.Allocate must come first: on a real disk this write can be a SIGBUS)",
					what, path, i, p*AllocPage, min((p+1)*AllocPage, int64(len(b)))))
			}
		}
	}
}

// durableBytes is the file's durable image, len(durLen).
func (n *memNode) durableBytes() []byte {
	b := make([]byte, n.durLen)
	copy(b, n.durable)
	return b
}

var _ FS = (*MemFS)(nil)

// NewMemFS returns an empty in-memory file system with unlimited capacity.
func NewMemFS() *MemFS {
	m := &MemFS{}
	m.mu.roots = map[string]*memNode{"/": newDirNode(), ".": newDirNode()}
	return m
}

// SetCapacity limits the total bytes of all files (0 = unlimited). Creating a file or
// writing into a small one beyond it fails with an error matching ErrNoSpace; existing
// files are unaffected.
func (m *MemFS) SetCapacity(n int64) {
	m.mu.Lock()
	m.mu.capacity = n
	m.mu.Unlock()
}

// Lock implements FS: one holder per path within this MemFS (standing for one
// process); the clone a Crash returns starts with no locks, as a restarted process would.
func (m *MemFS) Lock(path string) (func() error, error) {
	path = filepath.Clean(path)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.mu.locks[path] {
		return nil, fmt.Errorf("%w: %s is held", ErrLocked, path)
	}
	if m.mu.locks == nil {
		m.mu.locks = make(map[string]bool)
	}
	m.mu.locks[path] = true
	var once sync.Once
	return func() error {
		once.Do(func() {
			m.mu.Lock()
			delete(m.mu.locks, path)
			m.mu.Unlock()
		})
		return nil
	}, nil
}

// Crash returns what a power loss would leave: the durable entries of every directory
// reachable through durable entries from the root, files with their durable bytes plus
// each unsynced dirty page (within the durable length) with probability keepUnsynced
// (rng may be nil when keepUnsynced is 0).
func (m *MemFS) Crash(rng *rand.Rand, keepUnsynced float64) *MemFS {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := NewMemFS()
	out.mu.capacity = m.mu.capacity
	clones := map[*memNode]*memNode{}
	var clone func(n *memNode) *memNode
	clone = func(n *memNode) *memNode {
		if c, ok := clones[n]; ok {
			return c
		}
		if n.dir {
			c := newDirNode()
			clones[n] = c
			for name, child := range n.durEntries {
				cc := clone(child)
				c.entries[name], c.durEntries[name] = cc, cc
			}
			return c
		}
		data := n.durableBytes()
		if keepUnsynced > 0 && rng != nil {
			cur := n.data[:min(len(n.data), len(data))]
			for off := 0; off < len(cur); off += crashPage {
				end := min(off+crashPage, len(cur))
				if rng.Float64() < keepUnsynced {
					n.checkWritten(cur, int64(off), int64(end), "crash keeping an unsynced page of", "a file")
					copy(data[off:end], cur[off:end])
				}
			}
		}
		c := &memNode{data: data, durable: slices.Clone(data), durLen: len(data)}
		if n.sparse { // a mapped file: its durable length is its size
			c.sparse, c.alloc, c.allocBytes = true, slices.Clone(n.alloc), n.allocBytes
		}
		clones[n] = c
		out.mu.used += c.usage()
		return c
	}
	for name, root := range m.mu.roots {
		out.mu.roots[name] = clone(root)
	}
	return out
}

// split returns the root of a cleaned path and its components.
func (m *MemFS) split(path string) (*memNode, []string) {
	root, rest := ".", path
	if filepath.IsAbs(path) {
		root, rest = "/", strings.TrimPrefix(path, "/")
	}
	if rest == "" || rest == "." {
		return m.mu.roots[root], nil
	}
	return m.mu.roots[root], strings.Split(rest, "/")
}

// lookupLocked returns the node at path in the current tree, or nil.
func (m *MemFS) lookupLocked(path string) *memNode {
	n, parts := m.split(filepath.Clean(path))
	for _, p := range parts {
		if !n.dir {
			return nil
		}
		if n = n.entries[p]; n == nil {
			return nil
		}
	}
	return n
}

// parentLocked returns the directory that holds (or would hold) path, and path's name in
// it; the error matches fs.ErrNotExist when the directory does not exist.
func (m *MemFS) parentLocked(op, path string) (*memNode, string, error) {
	dir, name := filepath.Split(path)
	if name == "" || name == "." || name == ".." || path == "/" {
		return nil, "", fmt.Errorf("mmap: %s %s: not a file name", op, path)
	}
	d := m.lookupLocked(dir)
	if d == nil || !d.dir {
		return nil, "", fmt.Errorf("mmap: %s %s: directory: %w", op, path, fs.ErrNotExist)
	}
	return d, name, nil
}

// memMapped is a handle on a MemFS file.
type memMapped struct {
	fs   *MemFS
	path string
	n    *memNode
	data []byte
}

// OpenMapped implements FS: a new file's bytes are all allocated (and count against the
// capacity) at once.
func (m *MemFS) OpenMapped(path string, size int64, create bool) (Mapped, error) {
	return m.openMapped(path, size, create, false)
}

// OpenMappedSparse implements FS: a new file has no allocated page; see MemFS for how
// writes into it are checked.
func (m *MemFS) OpenMappedSparse(path string, size int64, create bool) (Mapped, error) {
	return m.openMapped(path, size, create, true)
}

// openMapped opens, or creates reserved or sparse, a mapped file.
func (m *MemFS) openMapped(path string, size int64, create, sparse bool) (Mapped, error) {
	path = filepath.Clean(path)
	if size <= 0 {
		return nil, fmt.Errorf("mmap: %s: size %d must be positive", path, size)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	n := m.lookupLocked(path)
	switch {
	case n != nil && n.dir:
		return nil, fmt.Errorf("mmap: open %s: is a directory", path)
	case n == nil && !create:
		return nil, fmt.Errorf("mmap: open %s: %w", path, fs.ErrNotExist)
	case n == nil:
		d, name, err := m.parentLocked("create", path)
		if err != nil {
			return nil, err
		}
		if !sparse && m.mu.capacity > 0 && m.mu.used+size > m.mu.capacity {
			return nil, fmt.Errorf("mmap: reserve %d bytes for %s: %w", size, path, ErrNoSpace)
		}
		// The size is part of the inode: a crash keeps a durably linked file at full
		// size, zeros where nothing was synced.
		n = &memNode{data: make([]byte, size), durLen: int(size)}
		if sparse {
			n.sparse, n.alloc = true, make([]uint64, (size+64*AllocPage-1)/(64*AllocPage))
		}
		d.entries[name] = n
		m.mu.used += n.usage()
	case int64(len(n.data)) != size:
		return nil, fmt.Errorf("mmap: %s has %d bytes, want %d", path, len(n.data), size)
	}
	return &memMapped{fs: m, path: path, n: n, data: n.data}, nil
}

func (h *memMapped) Bytes() []byte { return h.data }
func (h *memMapped) Size() int64   { return int64(len(h.data)) }
func (h *memMapped) Path() string  { return h.path }

// Sync copies [off, off+n) into the durable image.
func (h *memMapped) Sync(off, n int64) error {
	if n <= 0 {
		return nil
	}
	if h.data == nil {
		return fmt.Errorf("mmap: sync %s: closed", h.path)
	}
	if off < 0 || off+n > int64(len(h.data)) {
		return fmt.Errorf("mmap: sync [%d,+%d) outside %s of %d bytes", off, n, h.path, len(h.data))
	}
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	h.n.checkWritten(h.data, off, off+n, "sync of", h.path)
	if h.n.durable == nil {
		h.n.durable = make([]byte, len(h.n.data))
	}
	copy(h.n.durable[off:off+n], h.data[off:off+n])
	return nil
}

// Allocate implements Mapped: the pages the range touches count as used from now on, or
// nothing changes and the error matches ErrNoSpace when they do not fit the capacity.
func (h *memMapped) Allocate(off, n int64) error {
	start, end, err := allocRange(off, n, int64(len(h.data)), h.data == nil, h.path, AllocPage)
	if err != nil || start == end || !h.n.sparse {
		return err
	}
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	p0, p1 := start/AllocPage, (end+AllocPage-1)/AllocPage
	grow := h.n.allocGrowth(p0, p1)
	if c := h.fs.mu.capacity; c > 0 && grow > 0 && h.fs.mu.used+grow > c {
		return fmt.Errorf("mmap: allocate [%d,%d) of %s: %w", start, end, h.path, ErrNoSpace)
	}
	h.n.allocate(p0, p1)
	h.fs.mu.used += grow
	return nil
}

// WriteAt implements Mapped: memory has one copy, the same the mapping shows. The copy
// is made under the file system's lock, so a WriteAt may run while Crash reads current
// bytes (as a pwrite(2) may run while the power fails); writes into Bytes() may not.
func (h *memMapped) WriteAt(p []byte, off int64) error {
	if h.data == nil {
		return fmt.Errorf("mmap: write %s: closed", h.path)
	}
	if off < 0 || off+int64(len(p)) > int64(len(h.data)) {
		return fmt.Errorf("mmap: write [%d,+%d) outside %s of %d bytes", off, len(p), h.path, len(h.data))
	}
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	if h.n.sparse {
		for pg := off / AllocPage; pg*AllocPage < off+int64(len(p)); pg++ {
			if !h.n.allocated(pg) {
				panic(fmt.Sprintf("mmap: MemFS: write [%d,+%d) into %s: page [%d,%d) was never allocated "+
					"(Mapped.Allocate must come first)", off, len(p), h.path, pg*AllocPage, (pg+1)*AllocPage))
			}
		}
	}
	copy(h.data[off:], p)
	return nil
}

// DataRange implements Mapped: the pages of a sparse file that are not allocated are
// holes (bytes written into them, which must be zeros, are checked at Sync and Crash);
// every other file is data throughout.
func (h *memMapped) DataRange(off int64) (int64, int64, error) {
	size := int64(len(h.data))
	switch {
	case h.data == nil:
		return 0, 0, fmt.Errorf("mmap: data range of %s: closed", h.path)
	case off < 0:
		return 0, 0, fmt.Errorf("mmap: data range of %s at %d", h.path, off)
	case off >= size:
		return size, size, nil
	case !h.n.sparse:
		return off, size, nil
	}
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	pages := (size + AllocPage - 1) / AllocPage
	p := off / AllocPage
	for p < pages && !h.n.allocated(p) {
		p++
	}
	if p == pages {
		return size, size, nil
	}
	q := p + 1
	for q < pages && h.n.allocated(q) {
		q++
	}
	return max(off, p*AllocPage), min(q*AllocPage, size), nil
}

// Window implements Mapped: memory has one copy, so a window is a slice of it.
func (h *memMapped) Window(off, n int64) (Window, error) {
	start, end, err := windowRange(off, n, int64(len(h.data)), h.data == nil, h.path)
	if err != nil {
		return nil, err
	}
	return &memWindow{off: start, data: h.data[start:end:end]}, nil
}

// memWindow is a slice of a MemFS file.
type memWindow struct {
	off  int64
	data []byte
}

func (w *memWindow) Bytes() []byte { return w.data }
func (w *memWindow) Offset() int64 { return w.off }

// Close implements Window.
func (w *memWindow) Close() error {
	w.data = nil
	return nil
}

// WriteMode implements Mapped; memory has no read-ahead to tune.
func (h *memMapped) WriteMode(bool) error { return nil }

// Populate implements Mapped; memory has nothing to map.
func (h *memMapped) Populate(int64, int64) error { return nil }

// Close drops the handle.
func (h *memMapped) Close() error {
	h.data = nil
	return nil
}

// memFile is a small MemFS file open for writing.
type memFile struct {
	fs     *MemFS
	path   string
	n      *memNode
	closed bool
}

// Create implements FS.
func (m *MemFS) Create(path string) (File, error) {
	path = filepath.Clean(path)
	m.mu.Lock()
	defer m.mu.Unlock()
	n := m.lookupLocked(path)
	switch {
	case n != nil && n.dir:
		return nil, fmt.Errorf("mmap: create %s: is a directory", path)
	case n != nil: // truncate the same inode, like O_TRUNC
		m.mu.used -= n.usage()
		n.data, n.sparse, n.alloc, n.allocBytes = nil, false, nil, 0
	default:
		d, name, err := m.parentLocked("create", path)
		if err != nil {
			return nil, err
		}
		n = &memNode{}
		d.entries[name] = n
	}
	return &memFile{fs: m, path: path, n: n}, nil
}

// Write implements File.
func (f *memFile) Write(p []byte) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.closed {
		return 0, fmt.Errorf("mmap: write %s: closed", f.path)
	}
	if c := f.fs.mu.capacity; c > 0 && f.fs.mu.used+int64(len(p)) > c {
		return 0, fmt.Errorf("mmap: write %s: %w", f.path, ErrNoSpace)
	}
	f.n.data = append(f.n.data, p...)
	f.fs.mu.used += int64(len(p))
	return len(p), nil
}

// Sync implements File: the whole file becomes its durable image.
func (f *memFile) Sync() error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.closed {
		return fmt.Errorf("mmap: sync %s: closed", f.path)
	}
	f.n.durable = slices.Clone(f.n.data)
	f.n.durLen = len(f.n.data)
	return nil
}

// Close implements File.
func (f *memFile) Close() error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	f.closed = true
	return nil
}

// Rename implements FS: both directories' current entries change at once, their durable
// entries on SyncDir.
func (m *MemFS) Rename(oldpath, newpath string) error {
	oldpath, newpath = filepath.Clean(oldpath), filepath.Clean(newpath)
	m.mu.Lock()
	defer m.mu.Unlock()
	od, oname, err := m.parentLocked("rename", oldpath)
	if err != nil {
		return err
	}
	n := od.entries[oname]
	if n == nil {
		return fmt.Errorf("mmap: rename %s: %w", oldpath, fs.ErrNotExist)
	}
	nd, nname, err := m.parentLocked("rename", newpath)
	if err != nil {
		return err
	}
	if oldpath == newpath {
		return nil
	}
	if n.dir && strings.HasPrefix(newpath+"/", oldpath+"/") {
		return fmt.Errorf("mmap: rename %s into itself (%s)", oldpath, newpath)
	}
	if t := nd.entries[nname]; t != nil {
		switch {
		case t.dir != n.dir:
			return fmt.Errorf("mmap: rename %s over %s: file and directory", oldpath, newpath)
		case t.dir && len(t.entries) > 0:
			return fmt.Errorf("mmap: rename %s over %s: directory not empty", oldpath, newpath)
		}
		m.mu.used -= t.usage()
	}
	nd.entries[nname] = n
	delete(od.entries, oname)
	return nil
}

// ReadDir implements FS.
func (m *MemFS) ReadDir(path string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := m.lookupLocked(path)
	if n == nil || !n.dir {
		return nil, nil
	}
	return slices.Sorted(maps.Keys(n.entries)), nil
}

// MkdirAll implements FS; every directory it creates is durable at once.
func (m *MemFS) MkdirAll(path string) error {
	path = filepath.Clean(path)
	m.mu.Lock()
	defer m.mu.Unlock()
	n, parts := m.split(path)
	for i, p := range parts {
		c := n.entries[p]
		switch {
		case c == nil:
			c = newDirNode()
			n.entries[p] = c
			n.durEntries[p] = c
		case !c.dir:
			return fmt.Errorf("mmap: mkdir %s: a file is in the way at %s", path, strings.Join(parts[:i+1], "/"))
		}
		n = c
	}
	return nil
}

// SyncDir makes the directory's current entries its durable ones.
func (m *MemFS) SyncDir(path string) error {
	path = filepath.Clean(path)
	m.mu.Lock()
	defer m.mu.Unlock()
	n := m.lookupLocked(path)
	if n == nil || !n.dir {
		return fmt.Errorf("mmap: sync dir %s: %w", path, fs.ErrNotExist)
	}
	n.durEntries = maps.Clone(n.entries)
	return nil
}

// Remove implements FS.
func (m *MemFS) Remove(path string) error {
	path = filepath.Clean(path)
	m.mu.Lock()
	defer m.mu.Unlock()
	d, name, err := m.parentLocked("remove", path)
	if err != nil {
		return err
	}
	n := d.entries[name]
	switch {
	case n == nil:
		return fmt.Errorf("mmap: remove %s: %w", path, fs.ErrNotExist)
	case n.dir && len(n.entries) > 0:
		return fmt.Errorf("mmap: remove %s: directory not empty", path)
	}
	m.mu.used -= n.usage()
	delete(d.entries, name)
	return nil
}

// RemoveAll implements FS.
func (m *MemFS) RemoveAll(path string) error {
	path = filepath.Clean(path)
	m.mu.Lock()
	defer m.mu.Unlock()
	if path == "/" || path == "." {
		return fmt.Errorf("mmap: remove all %s: a root", path)
	}
	d, name, err := m.parentLocked("remove", path)
	if err != nil {
		return nil // nothing there
	}
	if n := d.entries[name]; n != nil {
		m.mu.used -= n.usage()
		delete(d.entries, name)
	}
	return nil
}

// ReadFile implements FS.
func (m *MemFS) ReadFile(path string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := m.lookupLocked(path)
	switch {
	case n == nil:
		return nil, fmt.Errorf("mmap: read %s: %w", path, fs.ErrNotExist)
	case n.dir:
		return nil, fmt.Errorf("mmap: read %s: is a directory", path)
	}
	return slices.Clone(n.data), nil
}

// WriteFileAtomic implements FS with the shared sequence (see the function
// WriteFileAtomic); the new contents are durable when it returns.
func (m *MemFS) WriteFileAtomic(path string, data []byte) error {
	return WriteFileAtomic(m, path, data)
}

// Exists implements FS.
func (m *MemFS) Exists(path string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lookupLocked(path) != nil, nil
}

// Size implements FS.
func (m *MemFS) Size(path string) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := m.lookupLocked(path)
	if n == nil || n.dir {
		return 0, fmt.Errorf("mmap: stat %s: %w", path, fs.ErrNotExist)
	}
	return int64(len(n.data)), nil
}

// Extend implements FS; the grown size and its zero bytes are durable at once.
func (m *MemFS) Extend(path string, size int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := m.lookupLocked(path)
	if n == nil || n.dir {
		return fmt.Errorf("mmap: extend %s: %w", path, fs.ErrNotExist)
	}
	if size <= int64(len(n.data)) {
		return nil
	}
	grow := size - n.usage() // every byte is allocated afterwards
	if m.mu.capacity > 0 && m.mu.used+grow > m.mu.capacity {
		return fmt.Errorf("mmap: extend %s by %d bytes: %w", path, grow, ErrNoSpace)
	}
	m.mu.used += grow
	n.data = append(n.data, make([]byte, size-int64(len(n.data)))...)
	n.sparse, n.alloc, n.allocBytes = false, nil, 0
	if n.durable != nil {
		n.durable = append(n.durable[:n.durLen:n.durLen], make([]byte, int(size)-n.durLen)...)
	}
	n.durLen = int(size)
	return nil
}

// Allocated returns the allocated bytes of the file at path: all of it unless it was made
// by OpenMappedSparse, whose pages count once Mapped.Allocate has reserved them.
func (m *MemFS) Allocated(path string) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := m.lookupLocked(path)
	if n == nil || n.dir {
		return 0, fmt.Errorf("mmap: allocated %s: %w", path, fs.ErrNotExist)
	}
	return n.usage(), nil
}

// DiskUsage reports the capacity (or 1 TiB when unlimited) and what is left of it; used
// space is the allocated bytes of every file (see MemFS).
func (m *MemFS) DiskUsage(string) (total, free uint64, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	capacity := m.mu.capacity
	if capacity == 0 {
		capacity = 1 << 40
	}
	return uint64(capacity), uint64(max(capacity-m.mu.used, 0)), nil
}
