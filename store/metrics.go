package store

// Read-only accessors for the broker's /metrics (consumer latencies, backlogs).

// maxHolesSkipped bounds how many hole units StoreTimeAt steps over: a queue with a
// longer run of holes (lost records) answers "no time" rather than scan it.
const maxHolesSkipped = 1024

// StoreTimeAt is the store time (Unix ms) of the message at queue offset off, or of the
// first one the queue still holds after it when off is below the queue's first offset or
// names a hole (a lost record). ok is false when there is no such message: off is at or
// past the queue's end, the queue is unknown, or the record cannot be read.
func (s *Store) StoreTimeAt(topic string, queueID int32, off int64) (ts int64, ok bool) {
	q, err := s.cqs.Queue(topic, queueID, false)
	if err != nil || q == nil {
		return 0, false
	}
	off = max(off, q.MinOffset())
	for end := min(q.MaxOffset(), off+maxHolesSkipped); off < end; off++ {
		u, err := q.Get(off)
		if err != nil {
			return 0, false
		}
		if u.Hole() {
			continue
		}
		ts, err := s.storeTimeOf(u.Offset, u.Size)
		return ts, err == nil
	}
	return 0, false
}

// FlushedOffset is the commit-log offset below which every byte is durable; the log's
// end (CommitLogRange) minus it is what a crash of the machine could lose.
func (s *Store) FlushedOffset() int64 { return s.cl.FlushedOffset() }
