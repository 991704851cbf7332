package mmap

import (
	"fmt"
	"io/fs"
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
// Writers change a file's current bytes; Sync copies a range into the file's durable image;
// SyncDir makes the existence of the files in a directory durable; WriteFileAtomic is
// durable at once. Crash returns a new MemFS holding what a power loss would leave. Crash
// reads only durable state when keepUnsynced is 0, so it may run while other goroutines
// write; with keepUnsynced > 0 it also reads current bytes, so writers must be stopped.
type MemFS struct {
	mu struct {
		sync.Mutex
		files    map[string]*memFile
		dirs     map[string]bool
		capacity int64 // 0 = unlimited
		used     int64
	}
}

// memFile is one file: its current bytes and its durable image.
type memFile struct {
	data    []byte
	durable []byte // same length as data once anything was synced; nil = all zeros
	exists  bool   // creation made durable
}

var _ FS = (*MemFS)(nil)

// NewMemFS returns an empty in-memory file system with unlimited capacity.
func NewMemFS() *MemFS {
	m := &MemFS{}
	m.mu.files = make(map[string]*memFile)
	m.mu.dirs = map[string]bool{"/": true, ".": true}
	return m
}

// SetCapacity limits the total bytes of all files (0 = unlimited). Creating a file beyond
// it fails with an error matching ErrNoSpace; existing files are unaffected.
func (m *MemFS) SetCapacity(n int64) {
	m.mu.Lock()
	m.mu.capacity = n
	m.mu.Unlock()
}

// Crash returns what a power loss would leave: durable bytes of files whose creation was
// durable, plus each unsynced dirty page with probability keepUnsynced (rng may be nil
// when keepUnsynced is 0).
func (m *MemFS) Crash(rng *rand.Rand, keepUnsynced float64) *MemFS {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := NewMemFS()
	out.mu.capacity = m.mu.capacity
	for d := range m.mu.dirs {
		out.mu.dirs[d] = true
	}
	for p, f := range m.mu.files {
		if !f.exists {
			continue
		}
		data := make([]byte, len(f.data))
		if f.durable != nil {
			copy(data, f.durable)
		}
		if keepUnsynced > 0 && rng != nil {
			for off := 0; off < len(data); off += crashPage {
				end := min(off+crashPage, len(data))
				if rng.Float64() < keepUnsynced {
					copy(data[off:end], f.data[off:end])
				}
			}
		}
		out.mu.files[p] = &memFile{data: data, durable: slices.Clone(data), exists: true}
		out.mu.used += int64(len(data))
	}
	return out
}

// memMapped is a handle on a MemFS file.
type memMapped struct {
	fs   *MemFS
	path string
	f    *memFile
	data []byte
}

// OpenMapped implements FS.
func (m *MemFS) OpenMapped(path string, size int64, create bool) (Mapped, error) {
	path = filepath.Clean(path)
	if size <= 0 {
		return nil, fmt.Errorf("mmap: %s: size %d must be positive", path, size)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	f, ok := m.mu.files[path]
	switch {
	case !ok && !create:
		return nil, fmt.Errorf("mmap: open %s: %w", path, fs.ErrNotExist)
	case !ok:
		if !m.mu.dirs[filepath.Dir(path)] {
			return nil, fmt.Errorf("mmap: create %s: directory: %w", path, fs.ErrNotExist)
		}
		if m.mu.capacity > 0 && m.mu.used+size > m.mu.capacity {
			return nil, fmt.Errorf("mmap: reserve %d bytes for %s: %w", size, path, ErrNoSpace)
		}
		f = &memFile{data: make([]byte, size)}
		m.mu.files[path] = f
		m.mu.used += size
	case int64(len(f.data)) != size:
		return nil, fmt.Errorf("mmap: %s has %d bytes, want %d", path, len(f.data), size)
	}
	return &memMapped{fs: m, path: path, f: f, data: f.data}, nil
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
	if h.f.durable == nil {
		h.f.durable = make([]byte, len(h.f.data))
	}
	copy(h.f.durable[off:off+n], h.data[off:off+n])
	return nil
}

// WriteAt implements Mapped: memory has one copy, the same the mapping shows.
func (h *memMapped) WriteAt(p []byte, off int64) error {
	if h.data == nil {
		return fmt.Errorf("mmap: write %s: closed", h.path)
	}
	if off < 0 || off+int64(len(p)) > int64(len(h.data)) {
		return fmt.Errorf("mmap: write [%d,+%d) outside %s of %d bytes", off, len(p), h.path, len(h.data))
	}
	copy(h.data[off:], p)
	return nil
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

// Close drops the handle.
func (h *memMapped) Close() error {
	h.data = nil
	return nil
}

// ReadDir implements FS.
func (m *MemFS) ReadDir(path string) ([]string, error) {
	path = filepath.Clean(path)
	m.mu.Lock()
	defer m.mu.Unlock()
	seen := map[string]bool{}
	add := func(p string) {
		if filepath.Dir(p) == path && p != path {
			seen[filepath.Base(p)] = true
		}
	}
	for p := range m.mu.files {
		add(p)
	}
	for d := range m.mu.dirs {
		add(d)
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	slices.Sort(names)
	return names, nil
}

// MkdirAll implements FS.
func (m *MemFS) MkdirAll(path string) error {
	path = filepath.Clean(path)
	m.mu.Lock()
	defer m.mu.Unlock()
	for p := path; !m.mu.dirs[p]; p = filepath.Dir(p) {
		if _, isFile := m.mu.files[p]; isFile {
			return fmt.Errorf("mmap: mkdir %s: a file is in the way", p)
		}
		m.mu.dirs[p] = true
	}
	return nil
}

// SyncDir makes the existence of the files directly in path durable.
func (m *MemFS) SyncDir(path string) error {
	path = filepath.Clean(path)
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.mu.dirs[path] {
		return fmt.Errorf("mmap: sync dir %s: %w", path, fs.ErrNotExist)
	}
	for p, f := range m.mu.files {
		if filepath.Dir(p) == path {
			f.exists = true
		}
	}
	return nil
}

// Remove implements FS.
func (m *MemFS) Remove(path string) error {
	path = filepath.Clean(path)
	m.mu.Lock()
	defer m.mu.Unlock()
	if f, ok := m.mu.files[path]; ok {
		m.mu.used -= int64(len(f.data))
		delete(m.mu.files, path)
		return nil
	}
	if m.mu.dirs[path] {
		for p := range m.mu.files {
			if strings.HasPrefix(p, path+"/") {
				return fmt.Errorf("mmap: remove %s: directory not empty", path)
			}
		}
		delete(m.mu.dirs, path)
		return nil
	}
	return fmt.Errorf("mmap: remove %s: %w", path, fs.ErrNotExist)
}

// RemoveAll implements FS.
func (m *MemFS) RemoveAll(path string) error {
	path = filepath.Clean(path)
	m.mu.Lock()
	defer m.mu.Unlock()
	for p, f := range m.mu.files {
		if p == path || strings.HasPrefix(p, path+"/") {
			m.mu.used -= int64(len(f.data))
			delete(m.mu.files, p)
		}
	}
	for d := range m.mu.dirs {
		if d == path || strings.HasPrefix(d, path+"/") {
			delete(m.mu.dirs, d)
		}
	}
	return nil
}

// ReadFile implements FS.
func (m *MemFS) ReadFile(path string) ([]byte, error) {
	path = filepath.Clean(path)
	m.mu.Lock()
	defer m.mu.Unlock()
	f, ok := m.mu.files[path]
	if !ok {
		return nil, fmt.Errorf("mmap: read %s: %w", path, fs.ErrNotExist)
	}
	return slices.Clone(f.data), nil
}

// WriteFileAtomic implements FS; the new contents are durable when it returns.
func (m *MemFS) WriteFileAtomic(path string, data []byte) error {
	path = filepath.Clean(path)
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.mu.dirs[filepath.Dir(path)] {
		return fmt.Errorf("mmap: write %s: directory: %w", path, fs.ErrNotExist)
	}
	old := int64(0)
	if f, ok := m.mu.files[path]; ok {
		old = int64(len(f.data))
	}
	if m.mu.capacity > 0 && m.mu.used-old+int64(len(data)) > m.mu.capacity {
		return fmt.Errorf("mmap: write %s: %w", path, ErrNoSpace)
	}
	m.mu.used += int64(len(data)) - old
	m.mu.files[path] = &memFile{data: slices.Clone(data), durable: slices.Clone(data), exists: true}
	return nil
}

// Exists implements FS.
func (m *MemFS) Exists(path string) (bool, error) {
	path = filepath.Clean(path)
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.mu.files[path]
	return ok || m.mu.dirs[path], nil
}

// Size implements FS.
func (m *MemFS) Size(path string) (int64, error) {
	path = filepath.Clean(path)
	m.mu.Lock()
	defer m.mu.Unlock()
	f, ok := m.mu.files[path]
	if !ok {
		return 0, fmt.Errorf("mmap: stat %s: %w", path, fs.ErrNotExist)
	}
	return int64(len(f.data)), nil
}

// DiskUsage reports the capacity (or 1 TiB when unlimited) and what is left of it.
func (m *MemFS) DiskUsage(string) (total, free uint64, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	capacity := m.mu.capacity
	if capacity == 0 {
		capacity = 1 << 40
	}
	return uint64(capacity), uint64(max(capacity-m.mu.used, 0)), nil
}
