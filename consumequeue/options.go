package consumequeue

import (
	"errors"
	"fmt"
	"math"

	"github.com/ferrymq/ferry/internal/mmap"
)

// Options configures a Store.
type Options struct {
	// Root is the directory holding one sub-directory per topic (the store's
	// "consumequeue" directory). Required.
	Root string
	// FS is the file system; nil means mmap.OSFS{}.
	FS mmap.FS
	// UnitsPerFile is the number of 20-byte units in one segment file. It must match the
	// files already on disk.
	UnitsPerFile int
}

// DefaultOptions returns RocketMQ's defaults (300,000 units per file) on the real file
// system; Root must still be set.
func DefaultOptions() Options {
	return Options{FS: mmap.OSFS{}, UnitsPerFile: DefaultUnitsPerFile}
}

// Validate reports the first invalid option.
func (o Options) Validate() error {
	switch {
	case o.Root == "":
		return errors.New("consumequeue: Options.Root is required")
	case o.UnitsPerFile <= 0:
		return fmt.Errorf("consumequeue: Options.UnitsPerFile %d must be positive", o.UnitsPerFile)
	case int64(o.UnitsPerFile) > math.MaxInt32/UnitSize:
		return fmt.Errorf("consumequeue: Options.UnitsPerFile %d is too large", o.UnitsPerFile)
	}
	return nil
}

// fileSize is the size of one segment file in bytes.
func (o Options) fileSize() int64 { return int64(o.UnitsPerFile) * UnitSize }

func (o Options) fs() mmap.FS {
	if o.FS == nil {
		return mmap.OSFS{}
	}
	return o.FS
}
