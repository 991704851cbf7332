package store

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/ferrymq/ferry/commitlog"
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
//     damage before the checkpoint's flushed offset is quarantined, the first invalid
//     byte after it ends the log, which is truncated there.
//  3. Check the derived files against the log and lower the re-dispatch point of each
//     (rebuildPlan): the consume queues and the index may be missing (a restore of the
//     commit log alone), shorter than the log, or damaged, whatever the checkpoint says.
//     3a. When a lowered point is below the scan start, validate the log from there to
//     the scan start and quarantine what is damaged (validateBelow).
//  4. Drop consume-queue units and index entries at or beyond their re-dispatch points,
//     and re-dispatch every record from the lower one to the end of the log.
//  5. Rebuild the queue-offset table from the consume queues, drop consume-queue files
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
	if len(segs) > 0 && s.opts.VerifyAll {
		from = segs[0].Start
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
	ro := commitlog.RecoverOptions{From: from, VerifyCRC: true, Keep: s.keepDamaged,
		Durable: cp.FlushedOffset, GuessDurable: !cp.Valid}
	t := time.Now()
	end, err := s.cl.RecoverWith(ro)
	s.phases.scan = time.Since(t)
	if err != nil {
		return fmt.Errorf("store: recover commit log: %w", err)
	}
	logMin := max(s.cl.MinOffset(), 0)
	if d := s.cl.Quarantined(); len(d) > 0 {
		// Units and keys may point into what was just quarantined: re-derive from there,
		// so the lost messages' queue offsets become holes.
		dispatchFrom = min(dispatchFrom, d[0].From)
	}
	dispatchFrom = max(min(dispatchFrom, end), logMin)
	if len(segs) == 0 {
		dispatchFrom, logMin = 0, 0
	}
	plan := s.rebuildPlan(dispatchFrom, logMin, end)
	if err := s.cqs.TruncateByPhysical(plan.queues); err != nil {
		return fmt.Errorf("store: truncate consume queues at %d: %w", plan.queues, err)
	}
	if s.idx != nil {
		if err := s.idx.TruncateAfter(plan.index); err != nil {
			return fmt.Errorf("store: truncate index at %d: %w", plan.index, err)
		}
	}
	if low := min(plan.queues, plan.index); len(segs) > 0 && low < from {
		if plan, err = s.validateBelow(plan, low, from); err != nil {
			return err
		}
	}
	s.dispatched.Store(min(plan.queues, plan.index))
	s.disp.queuesFrom, s.disp.indexFrom = plan.queues, plan.index
	t = time.Now()
	err = s.dispatchAvailable(context.Background())
	s.phases.dispatch = time.Since(t)
	s.disp.queuesFrom, s.disp.indexFrom = 0, 0
	if errors.Is(err, errDispatchStalled) {
		return fmt.Errorf("%w (a record recovery did not validate; ferry scrub quarantines it)", err)
	}
	if err != nil {
		return err
	}
	s.cqs.Range(func(topic string, queueID int32, q *consumequeue.Queue) bool {
		s.cl.SetQueueOffset(topic, queueID, max(q.MaxOffset(), s.cl.QueueOffset(topic, queueID)))
		return true
	})
	if err := s.loadRelocations(); err != nil {
		return err
	}
	if err := s.cutQueuesBelow(s.cl.MinOffset()); err != nil {
		return fmt.Errorf("store: drop consume-queue files below the log: %w", err)
	}
	s.log.Info().Bool("uncleanShutdown", abort).Bool("checkpoint", cp.Valid).Int64("scanFrom", from).
		Int64("redispatchFrom", dispatchFrom).Int64("queuesFrom", plan.queues).Int64("indexFrom", plan.index).
		Int64("end", end).Dur("openLogMs", s.phases.commitLog).Dur("openQueuesMs", s.phases.queues).
		Dur("openIndexMs", s.phases.index).Dur("scanMs", s.phases.scan).Dur("dispatchMs", s.phases.dispatch).
		Msg("store recovered")
	return s.writeCheckpoint()
}

// validateBelow is recovery step 3a: derived data lowered the re-dispatch point to low,
// below from, where the commit log's validation began, so the dispatcher would read
// records nobody checked. It validates [low, from) (from the start of low's segment) and
// quarantines what is damaged there, as step 2 does before the durable offset — every
// byte below from was durable — and lowers the re-dispatch points to the first damage so
// the lost messages' queue offsets become holes. A damaged range below the checkpoint
// thus costs its records, never the start.
func (s *Store) validateBelow(p rebuild, low, from int64) (rebuild, error) {
	s.log.Info().Int64("from", low).Int64("to", from).
		Msg("re-dispatch starts below the validated commit log: validating the records in between")
	found, err := s.cl.Validate(low, from, s.keepDamaged)
	if err != nil {
		return p, fmt.Errorf("store: validate commit log [%d, %d): %w", low, from, err)
	}
	if len(found) == 0 {
		return p, nil
	}
	first := found[0].From
	for _, d := range found {
		s.log.Error().Err(d.Reason).Int64("from", d.From).Int64("to", d.To).
			Msg("damaged commit-log range below the checkpoint quarantined: its messages are lost, the rest is served")
	}
	if first < p.queues {
		if err := s.cqs.TruncateByPhysical(first); err != nil {
			return p, fmt.Errorf("store: truncate consume queues at %d: %w", first, err)
		}
		p.queues = first
	}
	if s.idx != nil && first < p.index {
		if err := s.idx.TruncateAfter(first); err != nil {
			return p, fmt.Errorf("store: truncate index at %d: %w", first, err)
		}
		p.index = first
	}
	return p, nil
}

// rebuild is where recovery re-dispatches the commit log from, for each derived part.
type rebuild struct {
	queues int64 // consume-queue units are re-derived from records at or after this offset
	index  int64 // index entries likewise
}

// rebuildPlan lowers the re-dispatch point dispatchFrom (what the checkpoint or the clean
// start promises) for each derived part whose files do not keep that promise. The log
// holds [logMin, end). It reads the log once per queue at most, never scans it:
//
//   - no consume queue reaches dispatchFrom (all of them deleted, or a restore of the
//     commit log without them): the queues are re-derived from their common end, which
//     is logMin when there are none;
//   - a queue whose recovery dropped units or files (Queue.Dropped): from its last
//     remaining unit's end (logMin when none is left);
//   - a queue whose last unit does not point at a record of that queue and offset (files
//     from another store or time): from logMin;
//   - a queue the queue table lists that has no files, or fewer units than the table
//     says (after a clean stop): from its last unit's end, or logMin;
//   - an index with no entries while the log has records: the index from logMin.
//
// Re-dispatch is idempotent (units and entries already present are kept), so a point too
// low costs reading, never correctness.
func (s *Store) rebuildPlan(dispatchFrom, logMin, end int64) rebuild {
	p := rebuild{queues: dispatchFrom, index: dispatchFrom}
	if end <= logMin {
		return p
	}
	lower := func(to int64, why string, queue *consumequeue.Queue) {
		to = max(to, logMin)
		if to >= p.queues {
			return
		}
		ev := s.log.Warn().Int64("from", to).Str("reason", why)
		if queue != nil {
			ev = ev.Str("queue", queue.String())
		}
		ev.Msg("consume queues are re-derived from the commit log")
		p.queues = to
	}
	lower(s.cqs.MaxPhysicalOffset(), "the consume queues end before the checkpoint's dispatched offset", nil)
	s.cqs.Range(func(_ string, _ int32, q *consumequeue.Queue) bool {
		last, ok := q.LastUnit()
		switch {
		case q.Dropped() && ok && s.unitMatches(q, last):
			lower(last.End(), "recovery dropped damaged units or files of a queue", q)
		case q.Dropped() && ok:
			lower(logMin, "recovery dropped damaged units of a queue whose last good-looking unit is wrong too", q)
		case q.Dropped():
			lower(logMin, "recovery dropped every unit of a queue", q)
		case ok && !last.Hole() && last.Offset >= logMin && last.End() <= end && !s.unitMatches(q, last):
			lower(logMin, "a queue's last unit does not point at its record", q)
		}
		return true
	})
	table, err := s.loadQueueTable()
	if err != nil {
		s.log.Warn().Err(err).Msg("ignoring the queue table")
	}
	for topic, before := range table.Deleted {
		// A tombstone past the log's end (the log lost its unflushed tail in a crash, or
		// was truncated) would hide the records a re-created topic writes there.
		if before > end {
			table.Deleted[topic] = end
		}
	}
	if len(table.Deleted) > 0 {
		s.tombs.Store(&table.Deleted)
	}
	for _, e := range table.Queues {
		q, err := s.cqs.Queue(e.Topic, e.QueueID, false)
		switch {
		case err != nil:
			lower(logMin, fmt.Sprintf("queue %s/%d of the queue table has no files", e.Topic, e.QueueID), nil)
		case q.MaxOffset() < e.MaxOffset:
			last, _ := q.LastUnit() // the zero unit when none is left: lower makes 0 logMin
			lower(last.End(), fmt.Sprintf("the queue has %d units, the queue table %d", q.MaxOffset(), e.MaxOffset), q)
		}
	}
	if s.idx != nil {
		if _, ok := s.idx.LastPhyOffset(); !ok && p.index > logMin {
			s.log.Warn().Int64("from", logMin).Msg("the index is empty: its keys are re-derived from the commit log")
			p.index = logMin
		}
	}
	return p
}

// unitMatches reports whether the queue's last unit points at a readable record of that
// queue with that queue offset and size.
func (s *Store) unitMatches(q *consumequeue.Queue, u consumequeue.Unit) bool {
	rec, v, err := s.cl.ReadRecord(u.Offset)
	if err != nil {
		return false
	}
	defer v.Release()
	return string(rec.Topic) == q.Topic() && rec.QueueID == q.QueueID() &&
		rec.QueueOffset == q.MaxOffset()-1 && rec.StoreSize == u.Size
}

// errDispatchStalled reports a record the dispatcher cannot read.
var errDispatchStalled = errors.New("store: dispatcher stalled on an unreadable record")

// maxKeptDamage bounds the bytes of one damaged range copied to the quarantine directory.
const maxKeptDamage = 16 << 20

// keepDamaged copies a damaged commit-log range (at most maxKeptDamage bytes of it) to
// <dir>/quarantine/<20-digit offset> before recovery marks it, for whoever investigates.
func (s *Store) keepDamaged(from int64, b []byte) error {
	dir := s.opts.quarantineDir()
	if err := s.opts.FS.MkdirAll(dir); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	path := filepath.Join(dir, fmt.Sprintf("%020d", from))
	if err := s.opts.FS.WriteFileAtomic(path, b[:min(len(b), maxKeptDamage)]); err != nil {
		return fmt.Errorf("store: keep damaged bytes: %w", err)
	}
	s.damaged.Add(1)
	s.log.Error().Int64("from", from).Int("bytes", len(b)).Str("copy", path).
		Msg("damaged commit-log bytes copied before quarantine")
	return nil
}
