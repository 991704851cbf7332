package mmap

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// OSFS is the real file system.
type OSFS struct{}

var _ FS = OSFS{}

// osMapped is a file mapped with mmap(2).
type osMapped struct {
	path   string
	f      *os.File
	data   []byte
	sparse bool // mapped with MADV_RANDOM for good (see OpenMappedSparse)
}

// OpenMapped implements FS. A new file's blocks are reserved with fallocate so that writes
// into the mapping never meet a full disk (which would be a SIGBUS, not an error).
func (OSFS) OpenMapped(path string, size int64, create bool) (Mapped, error) {
	return openOSMapped(path, size, create, false)
}

// OpenMappedSparse implements FS: a new file is sized with ftruncate, so it has no blocks
// until Allocate reserves them.
//
// The mapping is advised MADV_RANDOM, and that is part of what makes Allocate enough:
// the page cache may hold a file in large folios (64 KiB, up to 2 MiB, which readahead
// builds from sequential reads), and the first write fault in a folio reserves blocks for
// all of it, holes included — a SIGBUS on a full disk although the written page itself
// was allocated. Without readahead, a fault brings in a single page, so a write through
// this mapping needs exactly the blocks of its own page. (Large folios that another
// process's read(2) of the file left in the page cache are not covered; see
// docs/storage.md.)
func (OSFS) OpenMappedSparse(path string, size int64, create bool) (Mapped, error) {
	return openOSMapped(path, size, create, true)
}

// openOSMapped opens (creating it if asked, sparse or reserved) and maps a file.
func openOSMapped(path string, size int64, create, sparse bool) (Mapped, error) {
	if size <= 0 {
		return nil, fmt.Errorf("mmap: %s: size %d must be positive", path, size)
	}
	flags := os.O_RDWR
	if create {
		flags |= os.O_CREATE
	}
	f, err := os.OpenFile(path, flags, 0o644)
	if err != nil {
		return nil, fmt.Errorf("mmap: open %s: %w", path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		return nil, errors.Join(fmt.Errorf("mmap: stat %s: %w", path, err), f.Close())
	}
	switch {
	case fi.Size() == 0 && create && sparse:
		if err := f.Truncate(size); err != nil {
			_ = f.Close()
			_ = os.Remove(path)
			return nil, fmt.Errorf("mmap: size %s to %d bytes: %w", path, size, err)
		}
	case fi.Size() == 0 && create:
		if err := fallocate(f, 0, size); err != nil {
			_ = f.Close()
			_ = os.Remove(path)
			return nil, fmt.Errorf("mmap: reserve %d bytes for %s: %w", size, path, err)
		}
	case fi.Size() != size:
		return nil, errors.Join(fmt.Errorf("mmap: %s has %d bytes, want %d", path, fi.Size(), size), f.Close())
	}
	data, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("mmap: map %s: %w", path, err), f.Close())
	}
	m := &osMapped{path: path, f: f, data: data, sparse: sparse}
	if sparse {
		if err := unix.Madvise(data, unix.MADV_RANDOM); err != nil {
			return nil, errors.Join(fmt.Errorf("mmap: madvise %s: %w", path, err), m.Close())
		}
	}
	return m, nil
}

// fallocate reserves blocks for [off, off+n) of f (mode 0: the file grows if the range
// ends past it), retrying when a signal interrupts it.
func fallocate(f *os.File, off, n int64) error {
	for {
		err := unix.Fallocate(int(f.Fd()), 0, off, n)
		if err != unix.EINTR {
			return err
		}
	}
}

// Allocate implements Mapped with fallocate(2) over the pages the range touches.
func (m *osMapped) Allocate(off, n int64) error {
	start, end, err := allocRange(off, n, int64(len(m.data)), m.data == nil, m.path, int64(os.Getpagesize()))
	if err != nil || start == end {
		return err
	}
	if err := fallocate(m.f, start, end-start); err != nil {
		return fmt.Errorf("mmap: allocate [%d,%d) of %s: %w", start, end, m.path, err)
	}
	return nil
}

// allocRange checks an Allocate request on a file of size bytes and returns the range of
// whole pages it touches (the last one cut at the file's end).
func allocRange(off, n, size int64, closed bool, path string, page int64) (start, end int64, err error) {
	switch {
	case closed:
		return 0, 0, fmt.Errorf("mmap: allocate in %s: closed", path)
	case off < 0 || n < 0 || off+n > size:
		return 0, 0, fmt.Errorf("mmap: allocate [%d,+%d) outside %s of %d bytes", off, n, path, size)
	case n == 0:
		return 0, 0, nil
	}
	return off / page * page, min((off+n+page-1)/page*page, size), nil
}

func (m *osMapped) Bytes() []byte { return m.data }
func (m *osMapped) Size() int64   { return int64(len(m.data)) }
func (m *osMapped) Path() string  { return m.path }

// Sync flushes the pages covering [off, off+n) with msync(MS_SYNC).
func (m *osMapped) Sync(off, n int64) error {
	if n <= 0 {
		return nil
	}
	if off < 0 || off+n > int64(len(m.data)) {
		return fmt.Errorf("mmap: sync [%d,+%d) outside %s of %d bytes", off, n, m.path, len(m.data))
	}
	page := int64(os.Getpagesize())
	start := off / page * page
	if err := unix.Msync(m.data[start:off+n], unix.MS_SYNC); err != nil {
		return fmt.Errorf("mmap: msync %s: %w", m.path, err)
	}
	return nil
}

// WriteAt implements Mapped with pwrite(2).
func (m *osMapped) WriteAt(p []byte, off int64) error {
	if m.data == nil {
		return fmt.Errorf("mmap: write %s: closed", m.path)
	}
	if off < 0 || off+int64(len(p)) > int64(len(m.data)) {
		return fmt.Errorf("mmap: write [%d,+%d) outside %s of %d bytes", off, len(p), m.path, len(m.data))
	}
	for len(p) > 0 {
		n, err := unix.Pwrite(int(m.f.Fd()), p, off)
		if err != nil {
			return fmt.Errorf("mmap: write %s: %w", m.path, err)
		}
		p = p[n:]
		off += int64(n)
	}
	return nil
}

// DataRange implements Mapped with lseek(2) SEEK_DATA and SEEK_HOLE (which only move the
// descriptor's offset: nothing else uses it, writes are positional). A file system without
// them (EINVAL) reports the rest of the file as data.
func (m *osMapped) DataRange(off int64) (int64, int64, error) {
	size := int64(len(m.data))
	switch {
	case m.data == nil:
		return 0, 0, fmt.Errorf("mmap: data range of %s: closed", m.path)
	case off < 0:
		return 0, 0, fmt.Errorf("mmap: data range of %s at %d", m.path, off)
	case off >= size:
		return size, size, nil
	}
	fd := int(m.f.Fd())
	start, err := unix.Seek(fd, off, unix.SEEK_DATA)
	switch {
	case errors.Is(err, unix.ENXIO): // no data at or after off
		return size, size, nil
	case errors.Is(err, unix.EINVAL) || errors.Is(err, unix.EOPNOTSUPP):
		return off, size, nil
	case err != nil:
		return 0, 0, fmt.Errorf("mmap: seek data in %s: %w", m.path, err)
	case start >= size:
		return size, size, nil
	}
	end, err := unix.Seek(fd, start, unix.SEEK_HOLE)
	if err != nil {
		return 0, 0, fmt.Errorf("mmap: seek hole in %s: %w", m.path, err)
	}
	return start, min(max(end, start), size), nil
}

// Window implements Mapped with a second mmap(2) of the range.
func (m *osMapped) Window(off, n int64) (Window, error) {
	start, end, err := windowRange(off, n, int64(len(m.data)), m.data == nil, m.path)
	if err != nil {
		return nil, err
	}
	data, err := unix.Mmap(int(m.f.Fd()), start, int(end-start), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mmap: map window [%d,%d) of %s: %w", start, end, m.path, err)
	}
	return &osWindow{off: start, data: data, path: m.path}, nil
}

// windowRange checks a window request on a file of size bytes and returns its page
// range.
func windowRange(off, n, size int64, closed bool, path string) (start, end int64, err error) {
	switch {
	case closed:
		return 0, 0, fmt.Errorf("mmap: window of %s: closed", path)
	case off < 0 || n <= 0 || off+n > size:
		return 0, 0, fmt.Errorf("mmap: window [%d,+%d) outside %s of %d bytes", off, n, path, size)
	}
	page := int64(os.Getpagesize())
	return off / page * page, min((off+n+page-1)/page*page, size), nil
}

// osWindow is a writable mmap(2) of part of a file.
type osWindow struct {
	off  int64
	data []byte
	path string
}

func (w *osWindow) Bytes() []byte { return w.data }
func (w *osWindow) Offset() int64 { return w.off }

// Close unmaps the window.
func (w *osWindow) Close() error {
	if w.data == nil {
		return nil
	}
	err := unix.Munmap(w.data)
	w.data = nil
	if err != nil {
		return fmt.Errorf("mmap: unmap window of %s: %w", w.path, err)
	}
	return nil
}

// WriteMode implements Mapped with madvise(MADV_RANDOM) while appending and
// madvise(MADV_NORMAL) afterwards. A sparse file stays MADV_RANDOM (see
// OpenMappedSparse).
func (m *osMapped) WriteMode(on bool) error {
	advice := unix.MADV_NORMAL
	if on || m.sparse {
		advice = unix.MADV_RANDOM
	}
	if err := unix.Madvise(m.data, advice); err != nil {
		return fmt.Errorf("mmap: madvise %s: %w", m.path, err)
	}
	return nil
}

// Populate implements Mapped with madvise(MADV_POPULATE_READ) (Linux 5.14 and later).
func (m *osMapped) Populate(off, n int64) error {
	if m.data == nil {
		return fmt.Errorf("mmap: populate %s: closed", m.path)
	}
	start := off &^ (int64(os.Getpagesize()) - 1)
	end := min(off+n, int64(len(m.data)))
	if start < 0 || start >= end {
		return nil
	}
	if err := unix.Madvise(m.data[start:end], unix.MADV_POPULATE_READ); err != nil {
		return fmt.Errorf("mmap: populate %s: %w", m.path, err)
	}
	return nil
}

// Close unmaps and closes the file.
func (m *osMapped) Close() error {
	if m.data == nil {
		return nil
	}
	err := unix.Munmap(m.data)
	m.data = nil
	if cerr := m.f.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("mmap: close %s: %w", m.path, err)
	}
	return nil
}

// ReadDir implements FS.
func (OSFS) ReadDir(path string) ([]string, error) {
	entries, err := os.ReadDir(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("mmap: read dir: %w", err)
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name()
	}
	slices.Sort(names)
	return names, nil
}

// MkdirAll implements FS.
func (OSFS) MkdirAll(path string) error {
	if err := os.MkdirAll(path, 0o755); err != nil {
		return fmt.Errorf("mmap: mkdir: %w", err)
	}
	return nil
}

// SyncDir implements FS.
func (OSFS) SyncDir(path string) error {
	d, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("mmap: open dir: %w", err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("mmap: sync dir %s: %w", path, err)
	}
	return nil
}

// Remove implements FS.
func (OSFS) Remove(path string) error {
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("mmap: remove: %w", err)
	}
	return nil
}

// RemoveAll implements FS.
func (OSFS) RemoveAll(path string) error {
	if err := os.RemoveAll(path); err != nil {
		return fmt.Errorf("mmap: remove all: %w", err)
	}
	return nil
}

// ReadFile implements FS.
func (OSFS) ReadFile(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("mmap: read: %w", err)
	}
	return b, nil
}

// Create implements FS.
func (OSFS) Create(path string) (File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("mmap: create: %w", err)
	}
	return osFile{f}, nil
}

// osFile is a small file open for writing.
type osFile struct{ f *os.File }

// Write implements File.
func (f osFile) Write(p []byte) (int, error) {
	n, err := f.f.Write(p)
	if err != nil {
		return n, fmt.Errorf("mmap: write: %w", err)
	}
	return n, nil
}

// Sync implements File with fsync(2).
func (f osFile) Sync() error {
	if err := f.f.Sync(); err != nil {
		return fmt.Errorf("mmap: fsync: %w", err)
	}
	return nil
}

// Close implements File.
func (f osFile) Close() error {
	if err := f.f.Close(); err != nil {
		return fmt.Errorf("mmap: close: %w", err)
	}
	return nil
}

// Rename implements FS.
func (OSFS) Rename(oldpath, newpath string) error {
	if err := os.Rename(oldpath, newpath); err != nil {
		return fmt.Errorf("mmap: rename: %w", err)
	}
	return nil
}

// WriteFileAtomic implements FS with the shared sequence (see the function
// WriteFileAtomic).
func (o OSFS) WriteFileAtomic(path string, data []byte) error {
	return WriteFileAtomic(o, path, data)
}

// Exists implements FS.
func (OSFS) Exists(path string) (bool, error) {
	_, err := os.Stat(path)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	default:
		return false, fmt.Errorf("mmap: stat: %w", err)
	}
}

// Size implements FS.
func (OSFS) Size(path string) (int64, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return 0, fmt.Errorf("mmap: stat: %w", err)
	}
	return fi.Size(), nil
}

// Extend implements FS: fallocate(2) over the whole file up to size (which reserves the
// new tail and any hole, and grows the file), then fsync for the new size.
func (OSFS) Extend(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("mmap: extend %s: %w", path, err)
	}
	fi, err := f.Stat()
	if err == nil && fi.Size() < size {
		err = fallocate(f, 0, size)
		if err == nil {
			err = f.Sync()
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("mmap: extend %s: %w", path, err)
	}
	return nil
}

// Lock implements FS with flock(2) on path, which the kernel releases when the process
// ends however it ends. The holder writes its process id into the file, so a refused
// process can say who has the store.
func (OSFS) Lock(path string) (func() error, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("mmap: lock %s: %w", path, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(path)
		_ = f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			pid := strings.TrimSpace(string(holder))
			if pid == "" {
				pid = "unknown"
			}
			return nil, fmt.Errorf("%w: %s is held by process %s", ErrLocked, path, pid)
		}
		return nil, fmt.Errorf("mmap: lock %s: %w", path, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0) // diagnostics only
	}
	return func() error {
		return errors.Join(unix.Flock(int(f.Fd()), unix.LOCK_UN), f.Close())
	}, nil
}

// DiskUsage implements FS.
func (OSFS) DiskUsage(path string) (total, free uint64, err error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return 0, 0, fmt.Errorf("mmap: statfs %s: %w", path, err)
	}
	bs := uint64(st.Bsize)
	return st.Blocks * bs, st.Bavail * bs, nil
}
