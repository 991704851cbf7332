package commitlog

import (
	"errors"
	"fmt"
)

// Errors returned by the Log. They are wrapped with context; test with errors.Is.
var (
	// ErrClosed means the Log has been closed.
	ErrClosed = errors.New("commitlog: closed")
	// ErrNotRecovered means Append was called on a log with existing segments before
	// Recover established the write position.
	ErrNotRecovered = errors.New("commitlog: not recovered")
	// ErrAlreadyAppended means Recover was called after the first Append.
	ErrAlreadyAppended = errors.New("commitlog: recover after append")
	// ErrRecordTooLarge means a record or batch cannot fit one segment (with the 8 bytes
	// a filler needs after it).
	ErrRecordTooLarge = errors.New("commitlog: record larger than a segment")
	// ErrBadBatch means an Append had no records, records of different topic-queues,
	// or a record the V1 format cannot hold (empty or too long topic, properties too
	// long; the message error is wrapped too).
	ErrBadBatch = errors.New("commitlog: invalid append")
	// ErrOutOfRange means an offset is negative or not below MaxOffset.
	ErrOutOfRange = errors.New("commitlog: offset out of range")
	// ErrDeleted means an offset lies in a segment that was deleted (below MinOffset,
	// or being destroyed).
	ErrDeleted = errors.New("commitlog: segment deleted")
	// ErrCorrupt means a record below MaxOffset does not decode (an iterator stops at
	// it rather than skipping it).
	ErrCorrupt = errors.New("commitlog: corrupt record")
	// ErrLayout means the segment files on disk are not a valid log: a name is not a
	// 20-digit offset aligned to the segment size, names are not contiguous, or a file
	// has the wrong size.
	ErrLayout = errors.New("commitlog: invalid segment layout")
	// ErrFlushFailed means a Sync of the mapped segments failed. It is sticky: once
	// returned, no later flush of the same Log can succeed.
	ErrFlushFailed = errors.New("commitlog: flush failed")
)

// Status is the durability outcome of a successful Append.
type Status uint8

const (
	// PutOK means the records are in the log and readable. In FlushSync mode with
	// wait=true they are also durable (AppendResult.Durable). In FlushAsync mode, or
	// FlushSync with wait=false, they are in the page cache and become durable with the
	// next flush: a process crash keeps them, a power loss may not (RocketMQ PUT_OK).
	PutOK Status = iota
	// FlushDiskTimeout happens in FlushSync mode with wait=true only. The records are in
	// the log and readable, but their Sync did not complete within SyncFlushTimeout; they
	// are not known to be durable (RocketMQ FLUSH_DISK_TIMEOUT, which counts as sent).
	FlushDiskTimeout
	// FlushDiskFailed happens in FlushSync mode with wait=true only, together with an
	// error matching ErrFlushFailed. The records are in the log and readable, but Sync
	// failed; they are not durable and the log can no longer promise durability.
	FlushDiskFailed
)

// String returns the RocketMQ-style name of the status.
func (s Status) String() string {
	switch s {
	case PutOK:
		return "PUT_OK"
	case FlushDiskTimeout:
		return "FLUSH_DISK_TIMEOUT"
	case FlushDiskFailed:
		return "FLUSH_DISK_FAILED"
	default:
		return fmt.Sprintf("Status(%d)", uint8(s))
	}
}

// AppendResult describes appended records.
type AppendResult struct {
	// PhysicalOffset is the commit-log offset of the first record.
	PhysicalOffset int64
	// Bytes is the total size of the records (fillers excluded).
	Bytes int32
	// QueueOffset is the queue offset of the first record (0 for prepared/rolled-back).
	QueueOffset int64
	// Count is the number of records.
	Count int
	// StoreTimestamp is the store timestamp (Unix ms) written into every record.
	StoreTimestamp int64
	// Status is the durability outcome.
	Status Status
	// Durable reports that the records were durable when Append returned.
	Durable bool
}

// NextOffset is the physical offset just after the appended records.
func (r AppendResult) NextOffset() int64 { return r.PhysicalOffset + int64(r.Bytes) }
