package schedule

import (
	"errors"
	"fmt"
)

// LevelOffsets returns the delivery cursor of each delay level (level → next
// schedule-queue offset to deliver), what a master answers GET_ALL_DELAY_OFFSET with.
func (s *Service) LevelOffsets() map[int]int64 {
	out := make(map[int]int64, len(s.levels))
	for _, l := range s.levels {
		out[l.level] = l.cursor.Load()
	}
	return out
}

// SyncLevelOffsets sets the cursors of the levels in table (level → next schedule-queue
// offset) and writes delayOffset.json at once if it changed: a slave copies its
// master's progress (GET_ALL_DELAY_OFFSET) so that, started later as a master on this
// directory, it delivers from where the master was. Levels beyond the configured ones
// and negative offsets are ignored; on load the cursors are clamped into the queues as
// usual. It fails on a service that was started (its loops own the cursors) or shut down.
func (s *Service) SyncLevelOffsets(table map[int]int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.started || s.mu.closed {
		return errors.New("schedule: delay progress can only be synced into a service that is not running")
	}
	s.persistMu.Lock()
	defer s.persistMu.Unlock()
	offsets := make([]int64, len(s.levels))
	for i, l := range s.levels {
		offsets[i] = l.cursor.Load()
		if off, ok := table[l.level]; ok && off >= 0 {
			offsets[i] = off
		}
	}
	b := encodeDelayOffsets(offsets)
	if string(b) == string(s.persistMu.lastDelay) {
		return nil
	}
	// The file first: whoever sees the new cursors (LevelOffsets) can rely on it.
	if err := s.writeConfig(delayOffsetFile, b); err != nil {
		return err
	}
	s.persistMu.lastDelay = b
	for i, l := range s.levels {
		l.cursor.Store(offsets[i])
	}
	return nil
}

// TimerProgress returns the timer queue's delivery progress: every offset below watermark
// is delivered, and so are the half-open ranges in delivered (sorted, above the
// watermark). A master sends it to its slaves with its delay progress.
func (s *Service) TimerProgress() (watermark int64, delivered [][2]int64) {
	ts := s.timer
	ts.mu.Lock()
	defer ts.mu.Unlock()
	delivered = make([][2]int64, len(ts.mu.done))
	for i, r := range ts.mu.done {
		delivered[i] = [2]int64{r.Start, r.End}
	}
	return ts.mu.watermark, delivered
}

// SyncTimerProgress writes the master's timer progress (TimerProgress) into
// timerProgress.json at once if it changed, so that this directory, started later as a
// master, delivers the timer messages the master had not delivered and only those. The
// ranges are checked as the file is on load (sorted, disjoint, above the watermark). It
// fails on a service that was started or shut down.
func (s *Service) SyncTimerProgress(watermark int64, delivered [][2]int64) error {
	b := encodeTimerProgressPairs(watermark, delivered)
	w, done, err := decodeTimerProgress(b)
	if err != nil {
		return fmt.Errorf("schedule: the master's timer progress: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.started || s.mu.closed {
		return errors.New("schedule: timer progress can only be synced into a service that is not running")
	}
	s.persistMu.Lock()
	defer s.persistMu.Unlock()
	b = encodeTimerProgress(w, done)
	if string(b) == string(s.persistMu.lastTimer) {
		return nil
	}
	if err := s.writeConfig(timerProgressFile, b); err != nil {
		return err
	}
	s.persistMu.lastTimer = b
	ts := s.timer
	ts.mu.Lock()
	ts.mu.watermark, ts.mu.done = w, done
	ts.mu.Unlock()
	return nil
}

// encodeTimerProgressPairs is encodeTimerProgress for ranges given as pairs.
func encodeTimerProgressPairs(w int64, delivered [][2]int64) []byte {
	done := make([]offsetRange, len(delivered))
	for i, r := range delivered {
		done[i] = offsetRange{r[0], r[1]}
	}
	return encodeTimerProgress(w, done)
}
