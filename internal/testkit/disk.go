package testkit

import (
	"io/fs"
	"path/filepath"
	"syscall"
	"testing"
)

// DiskUsage returns the space path takes on disk: the blocks allocated to it when it is a
// file (sparse holes do not count, fallocated space does), the sum over the files below
// it when it is a directory (directories themselves do not count). It fails tb when path
// cannot be read.
func DiskUsage(tb testing.TB, path string) int64 {
	tb.Helper()
	var total int64
	err := filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		var st syscall.Stat_t
		if err := syscall.Stat(p, &st); err != nil {
			return err
		}
		total += st.Blocks * 512
		return nil
	})
	if err != nil {
		tb.Fatalf("disk usage of %s: %v", path, err)
	}
	return total
}

// DiskUser is a file system that reports its disk usage, as the store's file systems
// (internal/mmap's FS) do.
type DiskUser interface {
	DiskUsage(path string) (total, free uint64, err error)
}

// Used returns the bytes fsys counts as used on the disk holding "/" (total less free):
// for an in-memory file system, the bytes its files have allocated.
func Used(tb testing.TB, fsys DiskUser) int64 {
	tb.Helper()
	total, free, err := fsys.DiskUsage("/")
	if err != nil {
		tb.Fatalf("disk usage: %v", err)
	}
	return int64(total - free)
}
