package consumequeue

import "errors"

// Errors returned by this package. Most are wrapped with context; test for them with
// errors.Is. The ones the pull path can meet (ErrOffsetOutOfRange, ErrClosed,
// ErrQueueNotFound) are returned unwrapped so that returning them does not allocate.
var (
	// ErrGap means Append was given a queue offset beyond MaxOffset: a unit is missing
	// before it.
	ErrGap = errors.New("consumequeue: queue offset leaves a gap")
	// ErrMismatch means Append was given a queue offset that already holds a different
	// unit, or a unit whose commit-log offset is below the end of the previous unit.
	ErrMismatch = errors.New("consumequeue: unit conflicts with the stored queue")
	// ErrInvalidUnit means a unit has a negative offset or a size that is not positive.
	ErrInvalidUnit = errors.New("consumequeue: invalid unit")
	// ErrOffsetOutOfRange means a read asked for a queue offset outside [MinOffset,
	// MaxOffset).
	ErrOffsetOutOfRange = errors.New("consumequeue: queue offset out of range")
	// ErrNotEmpty means SetMinOffset was called on a queue that holds units, or asked to
	// move the start backwards.
	ErrNotEmpty = errors.New("consumequeue: queue is not empty")
	// ErrCorrupt means a queue directory holds files that cannot belong to a queue
	// (misnamed or wrongly sized segments, a missing segment in the middle).
	ErrCorrupt = errors.New("consumequeue: corrupt queue files")
	// ErrInvalidTopic means a topic cannot be used as a directory name.
	ErrInvalidTopic = errors.New("consumequeue: invalid topic name")
	// ErrQueueNotFound means Store.Queue found no queue and was not asked to create one.
	ErrQueueNotFound = errors.New("consumequeue: queue not found")
	// ErrClosed means the queue or store has been closed (or the queue's topic deleted).
	ErrClosed = errors.New("consumequeue: closed")
)
