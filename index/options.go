package index

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/ferrymq/ferry/internal/mmap"
)

// Options configures an Index.
type Options struct {
	// Dir is the directory of the index files (the store's "index" directory). Required.
	Dir string
	// FS is the file system; nil means mmap.OSFS{}.
	FS mmap.FS
	// SlotNum is the number of hash slots per file. It must match existing files.
	SlotNum int
	// MaxEntries is the entry capacity of a file, entry 0 (unused) included, so a file
	// holds MaxEntries-1 entries. It must match existing files.
	MaxEntries int
	// Clock names new files; nil means time.Now.
	Clock func() time.Time
}

// DefaultOptions returns RocketMQ's file geometry (5,000,000 slots, 20,000,000 entries:
// 420,000,040-byte files) on the real file system; Dir must still be set.
func DefaultOptions() Options {
	return Options{FS: mmap.OSFS{}, SlotNum: DefaultSlotNum, MaxEntries: DefaultMaxEntries, Clock: time.Now}
}

// Validate reports the first invalid option.
func (o Options) Validate() error {
	switch {
	case o.Dir == "":
		return errors.New("index: Options.Dir is required")
	case o.SlotNum <= 0 || o.SlotNum > math.MaxInt32:
		return fmt.Errorf("index: Options.SlotNum %d out of range", o.SlotNum)
	case o.MaxEntries < 2 || o.MaxEntries > math.MaxInt32:
		return fmt.Errorf("index: Options.MaxEntries %d out of range [2, %d]", o.MaxEntries, math.MaxInt32)
	}
	return nil
}

// FileSize is the size of one index file in bytes.
func (o Options) FileSize() int64 {
	return HeaderSize + int64(o.SlotNum)*SlotSize + int64(o.MaxEntries)*EntrySize
}

func (o Options) fs() mmap.FS {
	if o.FS == nil {
		return mmap.OSFS{}
	}
	return o.FS
}

func (o Options) now() time.Time {
	if o.Clock == nil {
		return time.Now()
	}
	return o.Clock()
}
