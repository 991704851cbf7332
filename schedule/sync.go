package schedule

import "errors"

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
		if off, ok := table[l.level]; ok && off >= 0 {
			l.cursor.Store(off)
		}
		offsets[i] = l.cursor.Load()
	}
	b := encodeDelayOffsets(offsets)
	if string(b) == string(s.persistMu.lastDelay) {
		return nil
	}
	if err := s.writeConfig(delayOffsetFile, b); err != nil {
		return err
	}
	s.persistMu.lastDelay = b
	return nil
}
