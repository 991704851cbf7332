// Package metafile reads and writes the broker's small JSON metadata files
// (topics, subscription groups, consumer offsets) the way RocketMQ's
// ConfigManager does: every write first keeps the previous contents as a
// ".bak" copy, and a load falls back to that copy when the main file is
// missing, blank or undecodable. A [File], made by [Open], remembers the
// previous contents between writes; [CheckLocation], [MarshalIndent] and
// [DecodeObject] hold the option check and the JSON handling the stores
// share.
//
// Errors carry no package prefix; callers wrap them with their own.
package metafile

import (
	"bytes"
	"errors"
	"fmt"
	iofs "io/fs"

	"github.com/rs/zerolog"

	"github.com/ferrymq/ferry/internal/mmap"
)

// BakSuffix is appended to a metadata file's path to name its backup copy.
const BakSuffix = ".bak"

// Load reads path, falling back to path+BakSuffix when the main file is
// missing, blank or rejected by decode. It returns the decoded value and the
// bytes it came from; found is false (and err nil) when neither file exists
// or both are blank, as in a fresh store. When the backup copy is used, a
// warning is logged through log (which may be nil). If a file exists but
// decode rejects it and no usable backup exists, err wraps the first decode
// error (the main file's, when it was present). Any read error other than a
// missing file is returned at once.
func Load[T any](fsys mmap.FS, path string, log *zerolog.Logger, decode func([]byte) (T, error)) (value T, raw []byte, found bool, err error) {
	var zero T
	var mainErr error
	for _, p := range []string{path, path + BakSuffix} {
		data, rerr := fsys.ReadFile(p)
		switch {
		case errors.Is(rerr, iofs.ErrNotExist):
			continue
		case rerr != nil:
			return zero, nil, false, fmt.Errorf("read %s: %w", p, rerr)
		case len(bytes.TrimSpace(data)) == 0:
			continue
		}
		v, derr := decode(data)
		if derr == nil {
			if p != path && log != nil {
				log.Warn().Str("file", p).AnErr("mainError", mainErr).Msg("loaded metadata from backup copy")
			}
			return v, data, true, nil
		}
		if mainErr == nil {
			mainErr = derr
		}
	}
	if mainErr != nil {
		return zero, nil, false, fmt.Errorf("load %s (and %s): %w", path, BakSuffix, mainErr)
	}
	return zero, nil, false, nil
}

// Write replaces path with data, first keeping prev (the contents last
// written or loaded) as path+BakSuffix; a nil prev writes no backup. Both
// writes are atomic and durable. err is the error of the main write (data is
// durable when it is nil); bakErr is the error of the backup write, which
// does not stop the main one.
func Write(fsys mmap.FS, path string, prev, data []byte) (err, bakErr error) {
	if prev != nil {
		if e := fsys.WriteFileAtomic(path+BakSuffix, prev); e != nil {
			bakErr = fmt.Errorf("write backup: %w", e)
		}
	}
	if e := fsys.WriteFileAtomic(path, data); e != nil {
		err = fmt.Errorf("write: %w", e)
	}
	return err, bakErr
}
