// Package mmap provides the files Ferry's store is made of: fixed-size files mapped into
// memory and written in place, plus the small metadata files beside them. Two
// implementations share one interface:
//
//   - OSFS maps real files with mmap(2), reserves their blocks with fallocate(2) so a write
//     into the mapping can never hit a full disk, and makes ranges durable with msync(2).
//     Besides writing into the mapping, a writer can use pwrite(2) (WriteAt) or a second,
//     short-lived writable mapping (Window); both keep syncs from costing a TLB shootdown
//     per page (see Mapped.Window).
//   - MemFS keeps everything in memory and remembers what has been made durable, so a test
//     can "pull the plug" (Crash) and reopen the store on exactly what would survive a power
//     loss — optionally with a random part of the unsynced pages written back, as a kernel
//     might have done before the crash. It can also pretend the disk is full.
//
// # Reserved and sparse files
//
// A file made by OpenMapped has all its blocks reserved when it is created. A file made by
// OpenMappedSparse has its full size (so its format and offsets are those of a reserved
// file) but no blocks: it reads as zeros and takes no space until its owner reserves the
// pages it is about to write with Mapped.Allocate (fallocate(2) on the range). The rule
// for a sparse file is: allocate before you write. A store of a mapped page that has no
// block makes the kernel allocate one at fault time, and if the disk is full that is a
// SIGBUS that kills the process; Allocate instead returns ENOSPC (ErrNoSpace) as an
// error before any byte of the range is written. Reading never needs a block (a hole
// reads as zeros, which every Ferry format treats as "no data here"). Grower allocates
// ahead of an append position in growing chunks. MemFS counts disk usage by allocated
// pages and panics when it finds bytes written into a page that was never allocated
// (see MemFS), so tests enforce the rule.
//
// Durability rules (both implementations): bytes written into a Mapped (directly, by
// WriteAt or through a Window) are durable after Sync covers them; bytes written into a File
// are durable after its Sync; a file's creation, removal and rename are durable after SyncDir
// on its directory (on both directories for a rename across them); directories made by
// MkdirAll are durable when it returns; WriteFileAtomic is durable when it returns. MemFS
// enforces exactly these rules, so a test that forgets a SyncDir loses the entry in Crash.
//
// ErrorFS wraps any FS to fail or intercept chosen operations (by Op, by path, after N
// calls, N times) and counts the calls it sees, for fault-injection tests.
package mmap

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"syscall"
)

// ErrNoSpace is returned (wrapped) when a file cannot be created or grown because the disk
// is full. Missing files are reported with errors matching fs.ErrNotExist.
const ErrNoSpace = syscall.ENOSPC

// Mapped is one fixed-size file mapped into memory.
type Mapped interface {
	// Allocate reserves disk blocks for every page that [off, off+n) touches, so that
	// writes into those pages cannot meet a full disk. It must precede the first write
	// into a page of a sparse file (OpenMappedSparse); on a full disk it fails with an
	// error matching ErrNoSpace and nothing in the range may be written. Allocating
	// pages that already have blocks changes nothing, and a reserved file (OpenMapped)
	// has blocks everywhere.
	Allocate(off, n int64) error
	// Bytes is the whole file; writes into it change the file. It stays valid until Close.
	Bytes() []byte
	// Size is len(Bytes()).
	Size() int64
	// Sync makes [off, off+n) durable.
	Sync(off, n int64) error
	// WriteMode hints how the mapping is about to be used: true while it is the file being
	// appended to (no read-ahead or fault-around; on Linux this roughly halves the cost of
	// syncing fresh writes), false for reading it back (normal read-ahead). It is advice
	// only: an error changes nothing but the speed.
	WriteMode(on bool) error
	// Populate maps the pages of [off, off+n) for reading in one call
	// (madvise(MADV_POPULATE_READ) on Linux), so that a reader about to walk many pages
	// of a mapping it has not touched yet (recovery re-reading the log's tail, an index
	// loading its slot table) does not take a page fault for each: the appended segment's
	// advice allows no fault-around or read-ahead. It is advice only: an error, or a
	// kernel without it, changes nothing but the speed.
	Populate(off, n int64) error
	// WriteAt copies p into the file at off through the file system (pwrite(2) for real
	// files) rather than through the mapping; the bytes are visible in Bytes() when it
	// returns and durable after Sync covers them, exactly like bytes written into Bytes().
	WriteAt(p []byte, off int64) error
	// Window maps [off, off+n) of the file again, writable, for an appender (off is
	// rounded down to a page). Bytes written through a window are in the file and visible
	// in Bytes() at once, and durable after Sync covers them, exactly like bytes written
	// into Bytes(). Why a second mapping: syncing pages that were written through a
	// mapping write-protects them in that mapping, which costs a TLB shootdown per page
	// on every other CPU running the process. Pages written through a window that has
	// been closed are no longer mapped writable anywhere, so syncing them costs none, and
	// closing the window flushes the TLBs once for the whole range. Close every window
	// before the file.
	Window(off, n int64) (Window, error)
	// DataRange returns the first range [start, end) at or after off that may hold data:
	// every byte of [off, start) reads as zero, and start = end = Size() when every byte
	// from off on does. It skips the holes of a sparse file (lseek(2) SEEK_DATA and
	// SEEK_HOLE on real files, unallocated pages in MemFS) so that a reader looking for
	// the data of a mostly empty sparse file does not fault its holes in one page at a
	// time; where the file system cannot tell, the range is [off, Size()).
	DataRange(off int64) (start, end int64, err error)
	// Close unmaps the file without syncing it.
	Close() error
	// Path is the file's path.
	Path() string
}

// Window is a writable mapping of part of a Mapped file (see Mapped.Window).
type Window interface {
	// Bytes is the window: Bytes()[i] is byte Offset()+i of the file.
	Bytes() []byte
	// Offset is the file offset of Bytes()[0], a multiple of the page size.
	Offset() int64
	// Close unmaps the window; what was written through it stays in the file.
	Close() error
}

// File is a small file being written from the start, as made by FS.Create.
type File interface {
	// Write appends p to the file; the bytes are durable after Sync.
	Write(p []byte) (n int, err error)
	// Sync makes everything written so far durable.
	Sync() error
	// Close releases the file without syncing it.
	Close() error
}

// FS is what the store needs from a file system.
type FS interface {
	// OpenMapped maps the file at path, creating it with the given size (blocks reserved)
	// if it does not exist. An existing file must have exactly that size. A new file's
	// existence is durable after SyncDir on its directory.
	OpenMapped(path string, size int64, create bool) (Mapped, error)
	// OpenMappedSparse is OpenMapped for a file whose blocks are allocated on demand: a
	// new file gets its full size without blocks (ftruncate(2): it reads as zeros and
	// uses no space), and the caller must Allocate every page before writing into it (see
	// the package documentation). An existing file is opened as it is, holes and all. The
	// mapping does no readahead (see OSFS.OpenMappedSparse for why).
	OpenMappedSparse(path string, size int64, create bool) (Mapped, error)
	// ReadDir lists the names in a directory, sorted; a missing directory is empty.
	ReadDir(path string) ([]string, error)
	// MkdirAll creates a directory and its parents; they are durable when it returns.
	MkdirAll(path string) error
	// SyncDir makes the directory's entries durable: files created in it, removed from it
	// and renamed into or out of it.
	SyncDir(path string) error
	// Remove deletes a file or an empty directory; the removal is durable after SyncDir on
	// its directory.
	Remove(path string) error
	// RemoveAll deletes a directory tree; the removal is durable after SyncDir on the
	// directory that held it.
	RemoveAll(path string) error
	// ReadFile returns a whole small file.
	ReadFile(path string) ([]byte, error)
	// Create creates (or truncates) a small file for writing. Its existence is durable
	// after SyncDir on its directory, its bytes after File.Sync.
	Create(path string) (File, error)
	// Rename moves a file over newpath, replacing what was there. Both directory entries
	// change durably after SyncDir on their directories.
	Rename(oldpath, newpath string) error
	// WriteFileAtomic replaces a small file durably: temp file, fsync, rename, directory
	// fsync (see WriteFileAtomic, the function, for the exact steps). Concurrent calls
	// for the same path must be serialised by the caller: they share the temp file.
	WriteFileAtomic(path string, data []byte) error
	// Exists reports whether path exists.
	Exists(path string) (bool, error)
	// Size returns a file's size.
	Size(path string) (int64, error)
	// DiskUsage reports the total and free bytes of the file system holding path.
	DiskUsage(path string) (total, free uint64, err error)
	// Extend grows the file at path to size bytes, the new ones zero, reserves blocks for
	// the whole file (it is for files made by OpenMapped) and makes the new size durable.
	// A file at least that long is left alone. (Recovery uses it to restore a segment a
	// crash or an operator left short.)
	Extend(path string, size int64) error
	// Lock takes an exclusive lock on the file at path (created if missing) for this
	// process, so that two processes never open the same store. The lock lasts until
	// release is called or the process ends (a crash releases it too). When another
	// holder has it, the error wraps ErrLocked and names the holder if it can.
	Lock(path string) (release func() error, err error)
}

// ErrLocked is returned (wrapped) by FS.Lock when another process holds the lock.
var ErrLocked = errors.New("mmap: locked by another process")

// TempSuffix is appended to a path to name the temporary file WriteFileAtomic writes
// before renaming it over the path.
const TempSuffix = ".tmp"

// WriteFileAtomic is the one implementation of FS.WriteFileAtomic, written over the
// primitive operations of fsys so that the sequence a test crashes step by step (MemFS
// under ErrorFS) is the sequence the real file system runs:
//
//  1. Create path+TempSuffix (truncating a leftover) and Write data into it;
//  2. Sync it, then Close it;
//  3. Rename it over path;
//  4. SyncDir the directory, which makes the rename durable.
//
// A crash before step 4 returns leaves the old file (or none), after it the new one; the
// file at path is never a mix, because its new inode is complete and synced before it is
// linked. A failure before the rename removes the temp file. A failure of step 4 wraps
// ErrRenameNotDurable: the new file is the one readers see now, but a crash may still
// bring the old one back.
func WriteFileAtomic(fsys FS, path string, data []byte) error {
	tmp := path + TempSuffix
	f, err := fsys.Create(tmp)
	if err != nil {
		return fmt.Errorf("mmap: write %s: %w", path, err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	err = errors.Join(err, f.Close())
	if err == nil {
		err = fsys.Rename(tmp, path)
	}
	if err != nil {
		if rerr := fsys.Remove(tmp); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			err = errors.Join(err, rerr)
		}
		return fmt.Errorf("mmap: write %s: %w", path, err)
	}
	if err := fsys.SyncDir(filepath.Dir(path)); err != nil {
		return fmt.Errorf("mmap: write %s: %w: %w", path, ErrRenameNotDurable, err)
	}
	return nil
}

// ErrRenameNotDurable is wrapped by WriteFileAtomic's error when the new file is in place
// but the directory sync that makes its rename durable failed: the caller's in-memory
// state should follow the new file (that is what a reader or a restart without a crash
// finds), while the write is reported as not durable.
var ErrRenameNotDurable = errors.New("mmap: file replaced, but the rename is not known to be durable")
