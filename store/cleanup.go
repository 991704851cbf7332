package store

import (
	"slices"

	"github.com/ferrymq/ferry/commitlog"
)

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
	n, err := s.cl.DeleteSegments(maxDeletesPerRound, func(seg commitlog.SegmentInfo) bool {
		return seg.End <= dispatched && (force || seg.LastStoreTimestamp <= expiry)
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
	if _, err := s.cqs.DeleteBefore(minPhy); err != nil {
		s.log.Error().Err(err).Msg("deleting consume-queue files")
	}
	if s.idx != nil {
		if _, err := s.idx.DeleteBefore(minPhy); err != nil {
			s.log.Error().Err(err).Msg("deleting index files")
		}
	}
	return n
}
