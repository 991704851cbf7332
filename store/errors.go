package store

import "errors"

// Errors returned by the store. Callers test them with errors.Is.
var (
	// ErrDiskFull means writes are refused because the disk is (nearly) full. It resumes by
	// itself once space is freed; nothing already written is affected.
	ErrDiskFull = errors.New("store: disk full, writes refused")
	// ErrClosed means the store has been shut down.
	ErrClosed = errors.New("store: closed")
	// ErrMessageIllegal means a record breaks a size or format limit.
	ErrMessageIllegal = errors.New("store: message illegal")
	// ErrStorageFailed means a commit-log flush failed: what was acknowledged before may not
	// be durable, and the store refuses writes until it is restarted.
	ErrStorageFailed = errors.New("store: storage failed, writes refused")
	// ErrNotFound means no message exists at the given offset or for the given key.
	ErrNotFound = errors.New("store: message not found")
	// ErrDamaged means the stored record fails its checks (body CRC): the disk altered it
	// after it was written. It is not served.
	ErrDamaged = errors.New("store: stored message is damaged")
	// ErrInUse means another process (or another Store in this one) has the data
	// directory open: Open and Truncate refuse it. The error also matches mmap.ErrLocked.
	ErrInUse = errors.New("store: data directory is in use")
	// ErrTruncateOutOfRange means Truncate was given an offset beyond the end of the
	// commit log or below its first segment.
	ErrTruncateOutOfRange = errors.New("store: truncation offset outside the commit log")
	// ErrTruncateNotBoundary means Truncate was given an offset inside a record (or
	// inside a quarantined range): the log can only be cut where a record starts.
	ErrTruncateNotBoundary = errors.New("store: truncation offset is not a record boundary")
	// ErrRetentionFile means the retention file (retention.go) cannot be decoded; Open
	// fails rather than bring expired messages back.
	ErrRetentionFile = errors.New("store: bad retention file")
)
