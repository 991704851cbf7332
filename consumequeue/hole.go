package consumequeue

import "fmt"

// Hole units stand for messages the commit log lost to quarantined damage. Records carry
// their queue offsets, so the records after a lost one keep theirs and the queue must skip
// the lost offsets rather than renumber: FillGap writes one hole unit per lost offset.
//
// A hole unit is {physical offset: inside the damaged range, size: 1, tags code: 0}: valid,
// in commit-log order with its neighbours (so binary searches by physical offset keep
// working), and impossible for a real record (at least 91 bytes). Readers skip it.
const holeSize = 1

// Hole reports whether u stands for a lost message (see FillGap).
func (u Unit) Hole() bool { return u.Size == holeSize }

// FillGap writes hole units for the offsets [MaxOffset, upTo) ahead of a record at
// physical offset before whose queue offset is upTo: the messages at those offsets were
// lost to quarantined damage. The holes take the physical offsets just below before; the
// previous unit must end at or below the first of them (ErrMismatch otherwise), which is
// always so for lost records, each of which took at least one byte.
func (q *Queue) FillGap(upTo, before int64) error {
	q.w.Lock()
	defer q.w.Unlock()
	if q.w.closed {
		return ErrClosed
	}
	maxOff := q.max.Load()
	n := upTo - maxOff
	if n <= 0 {
		return nil
	}
	first := before - n
	if first < 0 || (q.w.hasLast && !q.w.last.preBlank() && first < q.w.last.End()) {
		return fmt.Errorf("%w: %s: %d holes before commit-log offset %d do not fit after %+v",
			ErrMismatch, q, n, before, q.w.last)
	}
	for i := range n {
		b, err := q.appendSlotLocked(maxOff + i)
		if err != nil {
			return err
		}
		u := Unit{Offset: first + i, Size: holeSize}
		encodeUnit(b, u)
		q.w.last, q.w.hasLast = u, true
		q.max.Store(maxOff + i + 1)
	}
	return nil
}
