package offsets

import "strings"

// Merge copies every offset of table into the store, replacing the store's value for
// each key table holds and keeping the keys it lacks (a slave's metadata sync, as
// RocketMQ's SlaveSynchronize.syncConsumerOffset puts the master's table over its own).
// Negative offsets and queue ids are ignored, as by Commit. It returns how many offsets
// changed; the flusher writes them (or call Flush).
func (s *Store) Merge(table map[Key]int64) int {
	changed := 0
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, off := range table {
		if off < 0 || k.QueueID < 0 || k.Group == "" || k.Topic == "" {
			continue
		}
		if old, ok := s.mu.table[k]; ok && old.offset == off {
			continue
		}
		k.Group, k.Topic = strings.Clone(k.Group), strings.Clone(k.Topic)
		s.mu.table[k] = slot{offset: off} // as Commit: the next CommitFrom of any connection applies
		changed++
	}
	if changed > 0 {
		s.mu.gen++
	}
	return changed
}
