package metafile

import (
	"fmt"
	"path/filepath"
	"sync"

	"github.com/rs/zerolog"

	"github.com/ferrymq/ferry/internal/mmap"
)

// CheckLocation reports the first problem with where a metadata file is kept,
// as set by a store's Dir and FS options: an empty dir or a nil fsys. The
// error wraps invalid, the caller's own invalid-options error.
func CheckLocation(dir string, fsys mmap.FS, invalid error) error {
	switch {
	case dir == "":
		return fmt.Errorf("%w: Dir is empty", invalid)
	case fsys == nil:
		return fmt.Errorf("%w: FS is nil", invalid)
	}
	return nil
}

// File is one metadata file. It remembers the contents last written or
// loaded, so that each Write can first keep them as the BakSuffix copy. It is
// safe for concurrent use; writes are serialised.
type File struct {
	fsys mmap.FS
	path string

	mu struct {
		sync.Mutex
		last []byte // contents of the file as last written or loaded; nil if none
	}
}

// Open creates dir (and its parents) if needed and loads dir/name with
// [Load], which falls back to the backup copy and logs through log (which may
// be nil). It returns the File to write later versions through, which takes
// the loaded bytes as the previous contents, and the decoded value; found is
// false (and err nil) in a fresh store, where neither file exists or both are
// blank. Errors are those of Load or of creating dir.
func Open[T any](fsys mmap.FS, dir, name string, log *zerolog.Logger, decode func([]byte) (T, error)) (f *File, value T, found bool, err error) {
	if err := fsys.MkdirAll(dir); err != nil {
		return nil, value, false, fmt.Errorf("create %s: %w", dir, err)
	}
	f = &File{fsys: fsys, path: filepath.Join(dir, name)}
	value, raw, found, err := Load(fsys, f.path, log, decode)
	if err != nil {
		return nil, value, false, err
	}
	f.mu.last = raw
	return f, value, found, nil
}

// Write replaces the file with data, first keeping the previous contents as
// the backup copy (none before the first version), as the package-level
// [Write] does, with the same errors. data becomes the previous contents for
// the next Write only when the main write succeeded; the caller must not
// modify it afterwards.
func (f *File) Write(data []byte) (err, bakErr error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	err, bakErr = Write(f.fsys, f.path, f.mu.last, data)
	if err == nil {
		f.mu.last = data
	}
	return err, bakErr
}
