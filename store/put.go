package store

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/ferrymq/ferry/commitlog"
	"github.com/ferrymq/ferry/internal/mmap"
	"github.com/ferrymq/ferry/message"
)

// PutMessage appends one record. See PutMessages.
func (s *Store) PutMessage(rec *message.Record, wait bool) (commitlog.AppendResult, error) {
	return s.PutMessages(unsafe.Slice(rec, 1), wait)
}

// PutMessages appends records of one topic and queue atomically (a batch). The commit log
// fills in their queue offsets, physical offsets and store timestamps. wait asks, in
// FlushSync mode, to return only once the records are durable (the result's Status and
// Durable say what happened); it is ignored in FlushAsync mode.
//
// Errors: ErrClosed, ErrStorageFailed (a flush failed earlier; the store refuses writes
// until it is restarted and recovered), ErrDiskFull (nothing was written; retry once space is freed),
// ErrMessageIllegal (a size or format limit), or a commit-log error.
func (s *Store) PutMessages(recs []message.Record, wait bool) (commitlog.AppendResult, error) {
	if s.closed.Load() {
		return commitlog.AppendResult{}, ErrClosed
	}
	if err := s.cl.FlushError(); err != nil {
		// A failed sync cannot be retried into durability: refuse writes until restart.
		return commitlog.AppendResult{}, fmt.Errorf("%w: %w", ErrStorageFailed, err)
	}
	if s.guard.full.Load() {
		return commitlog.AppendResult{}, fmt.Errorf("%w (%.0f%% used)", ErrDiskFull, s.guard.used()*100)
	}
	for i := range recs {
		if len(recs[i].Body) > s.opts.MaxMessageSize {
			return commitlog.AppendResult{}, fmt.Errorf("%w: body of %d bytes exceeds %d",
				ErrMessageIllegal, len(recs[i].Body), s.opts.MaxMessageSize)
		}
	}
	res, err := s.cl.Append(recs, wait)
	switch {
	case errors.Is(err, mmap.ErrNoSpace):
		s.guard.markFull()
		return res, fmt.Errorf("%w: %w", ErrDiskFull, err)
	case errors.Is(err, commitlog.ErrRecordTooLarge), errors.Is(err, commitlog.ErrBadBatch),
		errors.Is(err, message.ErrTopicTooLong), errors.Is(err, message.ErrTopicEmpty),
		errors.Is(err, message.ErrPropertiesTooLong):
		return res, fmt.Errorf("%w: %w", ErrMessageIllegal, err)
	case err != nil && res.Count == 0:
		return res, fmt.Errorf("store: append: %w", err)
	}
	s.kickDispatch()
	return res, err
}
