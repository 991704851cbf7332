package store

import (
	"errors"
	"math"
	"slices"

	"github.com/ferrymq/ferry/commitlog"
	"github.com/ferrymq/ferry/consumequeue"
)

// cutQueuesBelow drops the start of every consume queue that points below the log's
// minimum minPhy (consumequeue.Queue.DeleteBefore), except that a queue keeps its units
// from its first record with a copy on (compaction_copy.go): those stay readable.
func (s *Store) cutQueuesBelow(minPhy int64) error {
	var errs []error
	s.cqs.Range(func(_ string, _ int32, q *consumequeue.Queue) bool {
		if _, err := q.DeleteBefore(s.firstLivePhy(q, minPhy)); err != nil {
			errs = append(errs, err)
		}
		return true
	})
	return errors.Join(errs...)
}

// maxDeletesPerRound bounds the segments one cleanup round removes (RocketMQ: 10).
const maxDeletesPerRound = 10

// cleanLoop deletes expired data and runs the per-topic retention pass and a
// compaction round every CleanInterval.
func (s *Store) cleanLoop() {
	s.every(s.opts.CleanInterval, func() {
		s.cleanOnce()
		s.retainOnce()
		s.compactOnce()
	})
}

// cleanOnce runs one cleanup round: commit-log segments first (expired ones at a
// DeleteWhen hour or when the disk is fuller than DiskMaxUsedRatio; the oldest ones
// regardless of age above DiskForceCleanRatio), never the active segment and never one
// that is not fully dispatched; then consume-queue and index files that only point below
// the log's new start. It returns the number of segments deleted.
func (s *Store) cleanOnce() int {
	now := s.now()
	used := s.guard.used()
	atHour := slices.Contains(s.opts.DeleteWhen, now.Hour())
	force := s.opts.DiskForceCleanRatio < 1 && used >= s.opts.DiskForceCleanRatio
	if !atHour && used < s.opts.DiskMaxUsedRatio && !force {
		return 0
	}
	expiry := now.Add(-s.opts.FileReservedTime).UnixMilli()
	dispatched := s.dispatched.Load()
	doomed := func(seg commitlog.SegmentInfo) bool {
		return seg.End <= dispatched && (force || seg.LastStoreTimestamp <= expiry)
	}
	// Compacted topics' live records in the segments about to go are copied forward
	// first (compaction_copy.go); a segment whose records could not all be copied stays,
	// unless the disk is nearly full.
	keep := int64(math.MaxInt64)
	if end := s.deletionEnd(doomed); end > 0 {
		keep = s.copyForward(end)
		if force {
			keep = math.MaxInt64
		}
	}
	n, err := s.cl.DeleteSegments(maxDeletesPerRound, func(seg commitlog.SegmentInfo) bool {
		return doomed(seg) && seg.End <= keep
	})
	if err != nil {
		s.log.Error().Err(err).Msg("deleting commit-log segments")
	}
	if n == 0 {
		return 0
	}
	minPhy := s.cl.MinOffset()
	if force {
		// Forced cleaning deletes segments whatever their age: their messages are gone
		// for every consumer that had not read them yet.
		s.log.Warn().Int("segments", n).Int64("newMinOffset", minPhy).Float64("diskUsed", used).
			Float64("diskForceCleanRatio", s.opts.DiskForceCleanRatio).
			Msg("disk nearly full: deleted the oldest commit-log segments, expired or not (their messages are lost)")
	} else {
		s.log.Info().Int("segments", n).Int64("newMinOffset", minPhy).
			Float64("diskUsed", used).Msg("deleted expired commit-log segments")
	}
	if err := s.cutQueuesBelow(minPhy); err != nil {
		s.log.Error().Err(err).Msg("deleting consume-queue files")
	}
	s.pruneRelocations(minPhy)
	if s.idx != nil {
		if _, err := s.idx.DeleteBefore(minPhy); err != nil {
			s.log.Error().Err(err).Msg("deleting index files")
		}
	}
	return n
}

// deletionEnd is the end of the last segment a cleanup round with predicate doomed
// would delete (DeleteSegments' rules: oldest first, at most maxDeletesPerRound, never
// the active one), 0 when it would delete none.
func (s *Store) deletionEnd(doomed func(commitlog.SegmentInfo) bool) int64 {
	var end int64
	for i, seg := range s.cl.Segments() {
		if i >= maxDeletesPerRound || seg.Active || !doomed(seg) {
			break
		}
		end = seg.End
	}
	return end
}
