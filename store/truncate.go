package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/ferrymq/ferry/commitlog"
	"github.com/ferrymq/ferry/consumequeue"
)

// Truncate cuts the closed store in opts.Dir at commit-log offset offset, so that the next
// Open serves nothing at or after it: a replica whose history diverged from its new
// master's (an old master that wrote past what the new master had) is cut back to where
// the two agree (ha.ConsistentPoint) before it replicates again.
//
// offset must lie within the commit log, between the start of its first segment and its
// end (ErrTruncateOutOfRange otherwise), and be a record boundary: where a record, a
// filler or a quarantined range starts, or the end of the log (ErrTruncateNotBoundary
// otherwise). The store must not be open, here or in another process (ErrInUse, which
// also matches mmap.ErrLocked). A refused Truncate changes nothing but what an Open would
// change (recovery).
//
// Truncate opens the store (taking its lock, recovering it as Open does, so a store that
// crashed is first made consistent), then:
//
//  0. pins the compacted records whose copies are cut while their originals are gone
//     (compaction_copy.go: their consume-queue units stay until copies arrive again by
//     replication) and removes the compaction file (compaction.go): a mark's superseding
//     message may be among the records cut, and the next start's rounds mark again;
//  1. writes a checkpoint whose flushed and dispatched offsets are offset, so that a
//     recovery after a crash in any later step scans the log from offset and re-derives
//     consume queues and index from there, whatever the later steps left;
//  2. removes the consume-queue units and index entries that point at or after offset
//     (durably; the index repairs its hash chains, so no query can reach a removed entry);
//  3. cuts the commit log (commitlog.Log.Truncate): the rest of offset's segment is zeroed
//     and synced from offset on, later segments are deleted, the directory synced;
//  4. rebuilds the queue-offset table from the truncated consume queues, lowers the
//     deleted-topic tombstones to offset, and shuts down cleanly (checkpoint and queue
//     table written, abort file removed).
//
// A crash at any point leaves a store that opens consistent: its log ends at offset, or
// (before step 3 has synced the zeros at offset) at a record boundary after it, with
// consume queues and index matching the log either way; Truncate can then simply be run
// again. Truncating to the end of the log changes nothing.
//
// Key queries never return a truncated record: their index entries are removed in step 2,
// and the query path reads every hit back and keeps it only when the record there has the
// topic and key asked for (QueryByKey), so an entry could not return a different message
// that later takes the truncated one's offset even if one survived.
//
// Only the store's files are changed: the broker's metadata (consumer offsets, delay
// offsets) may name queue offsets past the new ends, which a pull then reports as an
// overflow, as after any loss of the log's tail.
func Truncate(opts Options, offset int64) error {
	s, err := Open(opts)
	if err != nil {
		return err
	}
	err = s.truncate(offset)
	return errors.Join(err, s.Shutdown(context.Background()))
}

// truncate is Truncate's work on a store Open has recovered and nobody uses yet.
func (s *Store) truncate(offset int64) error {
	maxOff := s.cl.MaxOffset()
	switch err := s.cl.CheckBoundary(offset); {
	case errors.Is(err, commitlog.ErrOutOfRange):
		return fmt.Errorf("%w: %w", ErrTruncateOutOfRange, err)
	case errors.Is(err, commitlog.ErrNotBoundary):
		return fmt.Errorf("%w: %w", ErrTruncateNotBoundary, err)
	case err != nil:
		return fmt.Errorf("store: truncate: %w", err)
	case offset == maxOff:
		return nil
	}
	s.log.Warn().Int64("offset", offset).Int64("end", maxOff).Msg("truncating the store: records at or after the offset are dropped")
	// Step 0: copies of compacted records cut off whose originals are gone are pinned, so
	// their units stay until the new master's copies arrive; compaction marks go (the cut
	// may take the message that made one); the rounds of the next start mark again.
	if err := s.pinCutCopies(offset); err != nil {
		return fmt.Errorf("store: truncate: %w", err)
	}
	if err := s.removeCompactionFile(); err != nil {
		return fmt.Errorf("store: truncate: %w", err)
	}
	// Step 1: a lowered checkpoint. Consume queues and index are durable up to the
	// recovered end (recovery flushed them), so they are below offset.
	cp := checkpoint{Valid: true, FlushedOffset: offset, DispatchedOffset: offset}
	if err := s.opts.FS.WriteFileAtomic(s.opts.checkpointPath(), encodeCheckpoint(cp)); err != nil {
		return fmt.Errorf("store: truncate: write checkpoint: %w", err)
	}
	// From here on, whatever fails, the shutdown that follows must not write a checkpoint
	// above offset: it re-dispatches what is left of the log after offset instead.
	s.dispatchMu.Lock()
	if s.disp.it != nil { // it stands at the old end, maybe in a segment to be deleted
		s.disp.it.Close()
		s.disp.it = nil
	}
	s.dispatched.Store(offset)
	s.dispatchMu.Unlock()
	// Step 2: derived data.
	if err := s.cqs.TruncateByPhysical(offset); err != nil {
		return fmt.Errorf("store: truncate consume queues at %d: %w", offset, err)
	}
	if s.idx != nil {
		if err := s.idx.TruncateAfter(offset); err != nil {
			return fmt.Errorf("store: truncate index at %d: %w", offset, err)
		}
	}
	// Step 3: the log.
	if err := s.cl.Truncate(offset); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	// Step 4: in-memory state that the clean shutdown writes out.
	s.cqs.Range(func(topic string, queueID int32, q *consumequeue.Queue) bool {
		s.cl.SetQueueOffset(topic, queueID, q.MaxOffset())
		return true
	})
	s.tombMu.Lock()
	if cur := s.tombs.Load(); cur != nil {
		next := make(map[string]int64, len(*cur))
		for topic, before := range *cur {
			next[topic] = min(before, offset)
		}
		s.tombs.Store(&next)
	}
	s.tombMu.Unlock()
	return nil
}
