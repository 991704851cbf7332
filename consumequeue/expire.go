package consumequeue

import "fmt"

// Expire raises MinOffset to off (clamped to MaxOffset) for a retention policy: the
// units below it stay in their files until DeleteBefore or Expire removes whole segments,
// but no reader sees them again. Segments whose every unit is below the new minimum are
// deleted, never the last one. It returns the new MinOffset, which is the old one when
// off is not above it.
//
// The new minimum is not written here: the queue's files cannot tell a unit below an
// expired minimum from a live one, so the caller persists it and calls Expire again after
// a restart (the store keeps a retention file).
func (q *Queue) Expire(off int64) (int64, error) {
	q.w.Lock()
	defer q.w.Unlock()
	if q.w.closed {
		return q.min.Load(), ErrClosed
	}
	off = min(off, q.max.Load())
	if off <= q.min.Load() {
		return q.min.Load(), nil
	}
	list := q.seg.list
	n := 0
	for n < len(list)-1 && list[n].base+q.units <= off {
		n++
	}
	q.seg.Lock()
	q.seg.list = list[n:]
	q.min.Store(off)
	q.seg.Unlock()
	if err := q.removeSegments(list[:n]); err != nil {
		return off, fmt.Errorf("consumequeue: %s: expire: %w", q, err)
	}
	return off, nil
}
