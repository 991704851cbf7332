package commitlog

import (
	"errors"
	"fmt"

	"github.com/ferrymq/ferry/message"
)

// ErrNotBoundary means an offset given to Truncate does not start a record, a filler or
// a quarantined range (nor is it the end of the log).
var ErrNotBoundary = errors.New("commitlog: offset is not a record boundary")

// Truncate cuts a recovered log at end, dropping every record at or after it: the log of
// a replica whose history diverged from its new master's (an old master that wrote past
// what the new one had) is cut back to where they agree before it replicates again.
//
// end must lie in [MinOffset, MaxOffset] (ErrOutOfRange otherwise) and be a record
// boundary: the start of a record, filler or quarantined range, the start of a segment, or
// the end of the log (ErrNotBoundary otherwise, found by walking the records of end's
// segment from its start as recovery does; damage on the way is stepped over where valid
// data resumes). Truncate must come after Recover and before the first Append
// (ErrNotRecovered, ErrAlreadyAppended).
//
// The cut is recovery's (truncateLocked): MaxOffset drops to end first, then the rest of
// end's segment is zeroed and synced window by window from end on, up to the high-water
// mark (all of it when the mark lies beyond the segment or is unknown) — so the first sync
// already puts zeros where the record at end began, and a recovery that scans from end
// after a crash stops there — and the later segments are deleted, newest first, with a
// directory sync; then the mark is lowered to end plus its lead. FlushedOffset drops to end too. The queue-offset table is emptied: the
// records that set it below end were not all scanned, so the caller sets every queue's
// next offset again (SetQueueOffset) before appending, as the store does from its consume
// queues.
func (l *Log) Truncate(end int64) error {
	l.closing.RLock()
	defer l.closing.RUnlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.closed.Load():
		return ErrClosed
	case l.mu.appended:
		return ErrAlreadyAppended
	case !l.mu.recovered:
		return ErrNotRecovered
	}
	l.listMu.Lock()
	defer l.listMu.Unlock()
	list, last := l.segs.Load(), l.mu.pos
	if err := checkBoundary(list, end, last, l.segSize); err != nil || end == last {
		return err
	}
	if l.mu.cur != nil {
		l.closeWindowLocked(l.mu.cur)
	}
	_ = l.takeSlot(-1) // a preallocated segment after the old end would leave a gap
	l.wrote.Store(end)
	cur, err := l.truncateLocked(list, end)
	if err != nil {
		return fmt.Errorf("commitlog: truncate at %d: %w", end, err)
	}
	l.mu.cur = cur
	l.mu.pos = end
	l.mu.queues = make(map[queueKey]*queueNext)
	if l.flushed.Load() > end {
		l.flushed.Store(end)
	}
	l.preallocate(cur.end)
	l.log.Info().Int64("end", end).Int64("was", last).Msg("commit log truncated")
	return nil
}

// CheckBoundary returns nil when Truncate(end) would be accepted on this log as it is:
// end lies in [MinOffset, MaxOffset] (ErrOutOfRange otherwise) and is a record boundary
// (ErrNotBoundary otherwise). It changes nothing; like Truncate, it is for a recovered log
// that nothing appends to.
func (l *Log) CheckBoundary(end int64) error {
	l.closing.RLock()
	defer l.closing.RUnlock()
	if l.closed.Load() {
		return ErrClosed
	}
	return checkBoundary(l.segs.Load(), end, l.wrote.Load(), l.segSize)
}

// checkBoundary is CheckBoundary on list, whose data ends at last.
func checkBoundary(list *segList, end, last, segSize int64) error {
	first := list.first()
	switch {
	case end == last:
		return nil
	case len(list.segs) == 0 || end < first || end > last:
		return fmt.Errorf("%w: %d, the log holds [%d, %d)", ErrOutOfRange, end, max(first, 0), last)
	}
	return boundary(list, end, segSize)
}

// boundary reports whether end starts a record, filler or quarantined range of list (or
// ends the data of its segment): nil, or an error matching ErrNotBoundary. It walks end's
// segment from its start, checking records as recovery does (without the body CRC); where
// a record is damaged it resumes at the next valid one (resync), so damage before end only
// makes the offsets inside the damage non-boundaries.
func boundary(list *segList, end, segSize int64) error {
	seg := list.find(end, segSize)
	if seg == nil { // end is the end of the last segment
		seg = list.segs[len(list.segs)-1]
	}
	var rec message.Record
	pos := seg.start
	for pos < end {
		b := seg.data[pos-seg.start:]
		if n := message.QuarantineSize(b); n > 0 {
			pos += int64(n)
			continue
		}
		n, blank, err := checkRecord(b, pos, false, &rec)
		switch {
		case err == nil && blank:
			pos = seg.end
		case err == nil:
			pos += n
		default:
			next, ok := resync(list, pos, false)
			if !ok {
				return fmt.Errorf("%w: %d lies after the last valid record of segment %s (at %d: %w)",
					ErrNotBoundary, end, seg.name, pos, err)
			}
			pos = next
		}
	}
	if pos != end {
		return fmt.Errorf("%w: %d lies inside the record or range that starts before it and ends at %d",
			ErrNotBoundary, end, pos)
	}
	return nil
}
