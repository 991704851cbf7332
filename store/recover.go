package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/ferrymq/ferry/consumequeue"
)

// recoverSegments is how many trailing segments a clean start without a Ferry checkpoint
// (a RocketMQ store directory) scans, as RocketMQ's normal recovery does.
const recoverSegments = 3

// recover brings the commit log, consume queues and index into agreement. See the package
// documentation for the guarantees; the steps:
//
//  1. Choose where to start. With a Ferry checkpoint: scan the commit log from
//     min(flushed, dispatched) and re-dispatch from dispatched. Without one: scan the whole
//     log after a crash (abort file present), or the last three segments after a clean
//     stop, and re-dispatch from the scan start.
//  2. Scan the commit log, validating every record (magic, sizes, position, body CRC);
//     the first invalid byte ends the log, which is truncated there.
//  3. Drop consume-queue units and index entries at or beyond the re-dispatch point, and
//     re-dispatch every record from it to the end of the log.
//  4. Rebuild the queue-offset table from the consume queues, drop consume-queue files
//     that point below the log's first segment, and write a fresh checkpoint.
func (s *Store) recover() error {
	cp, err := loadCheckpoint(s.opts.FS, s.opts.checkpointPath())
	if err != nil {
		s.log.Warn().Err(err).Msg("ignoring the checkpoint; scanning the commit log instead")
		cp = checkpoint{}
	}
	abort, err := s.opts.FS.Exists(s.opts.abortPath())
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	segs := s.cl.Segments()
	var from, dispatchFrom int64
	switch {
	case len(segs) == 0:
	case cp.Valid:
		from = min(cp.FlushedOffset, cp.DispatchedOffset)
		dispatchFrom = cp.DispatchedOffset
	case abort:
		from = segs[0].Start
		dispatchFrom = from
	default:
		from = segs[max(len(segs)-recoverSegments, 0)].Start
		dispatchFrom = from
	}
	if len(segs) > 0 {
		first, lastStart := segs[0].Start, segs[len(segs)-1].Start
		if from < first {
			from = first
		}
		if from > lastStart+s.cl.SegmentSize() {
			s.log.Warn().Int64("checkpoint", from).Int64("logEnd", lastStart+s.cl.SegmentSize()).
				Msg("checkpoint points past the commit log; scanning its last segment")
			from = lastStart
		}
	}
	end, err := s.cl.Recover(from, true)
	if err != nil {
		return fmt.Errorf("store: recover commit log: %w", err)
	}
	dispatchFrom = max(min(dispatchFrom, end), s.cl.MinOffset(), 0)
	if len(segs) == 0 {
		dispatchFrom = 0
	}
	if err := s.cqs.TruncateByPhysical(dispatchFrom); err != nil {
		return fmt.Errorf("store: truncate consume queues at %d: %w", dispatchFrom, err)
	}
	if s.idx != nil {
		if err := s.idx.TruncateAfter(dispatchFrom); err != nil {
			return fmt.Errorf("store: truncate index at %d: %w", dispatchFrom, err)
		}
	}
	s.dispatched.Store(dispatchFrom)
	if err := s.dispatchAvailable(context.Background()); err != nil {
		return err
	}
	s.cqs.Range(func(topic string, queueID int32, q *consumequeue.Queue) bool {
		s.cl.SetQueueOffset(topic, queueID, max(q.MaxOffset(), s.cl.QueueOffset(topic, queueID)))
		return true
	})
	if _, err := s.cqs.DeleteBefore(s.cl.MinOffset()); err != nil {
		return fmt.Errorf("store: drop consume-queue files below the log: %w", err)
	}
	s.log.Info().Bool("uncleanShutdown", abort).Bool("checkpoint", cp.Valid).Int64("scanFrom", from).
		Int64("redispatchFrom", dispatchFrom).Int64("end", end).Msg("store recovered")
	return s.writeCheckpoint()
}

// errDispatchStalled reports a record the dispatcher cannot read.
var errDispatchStalled = errors.New("store: dispatcher stalled on an unreadable record")
