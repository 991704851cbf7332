package index

import "errors"

// Errors returned by this package, wrapped with context; test for them with errors.Is.
var (
	// ErrClosed means the index has been closed.
	ErrClosed = errors.New("index: closed")
	// ErrCorrupt means the index directory holds a file that cannot be an index file of
	// the configured geometry (wrong size, and not the newest file).
	ErrCorrupt = errors.New("index: corrupt index file")
	// ErrInvalid means an argument is out of range (a negative physical offset).
	ErrInvalid = errors.New("index: invalid argument")
)
