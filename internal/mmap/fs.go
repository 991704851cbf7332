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
// Durability rules (both implementations): bytes written into a Mapped (directly, by
// WriteAt or through a Window) are durable after Sync covers them; a newly created file's existence is durable after SyncDir on its
// directory; WriteFileAtomic is durable when it returns; Remove is immediate.
package mmap

import "syscall"

// ErrNoSpace is returned (wrapped) when a file cannot be created or grown because the disk
// is full. Missing files are reported with errors matching fs.ErrNotExist.
const ErrNoSpace = syscall.ENOSPC

// Mapped is one fixed-size file mapped into memory.
type Mapped interface {
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

// FS is what the store needs from a file system.
type FS interface {
	// OpenMapped maps the file at path, creating it with the given size (blocks reserved)
	// if it does not exist. An existing file must have exactly that size.
	OpenMapped(path string, size int64, create bool) (Mapped, error)
	// ReadDir lists the names in a directory, sorted; a missing directory is empty.
	ReadDir(path string) ([]string, error)
	// MkdirAll creates a directory and its parents.
	MkdirAll(path string) error
	// SyncDir makes the directory's entries (created and renamed files) durable.
	SyncDir(path string) error
	// Remove deletes a file or an empty directory.
	Remove(path string) error
	// RemoveAll deletes a directory tree.
	RemoveAll(path string) error
	// ReadFile returns a whole small file.
	ReadFile(path string) ([]byte, error)
	// WriteFileAtomic replaces a small file durably: temp file, fsync, rename, directory
	// fsync.
	WriteFileAtomic(path string, data []byte) error
	// Exists reports whether path exists.
	Exists(path string) (bool, error)
	// Size returns a file's size.
	Size(path string) (int64, error)
	// DiskUsage reports the total and free bytes of the file system holding path.
	DiskUsage(path string) (total, free uint64, err error)
}
