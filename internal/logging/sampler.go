package logging

import (
	"sync/atomic"
	"time"
)

// Sampler lets one log line through per interval and counts the ones it holds back, so
// a flood of refusals (bad frames, ACL denials, damaged records, anonymous replication
// connections) costs one line a second, not one line each. The zero value is ready and
// lets a line through every second; it is safe for concurrent use and allocates
// nothing.
type Sampler struct {
	// Interval is the least time between two lines let through (0: one second).
	Interval time.Duration

	next       atomic.Int64 // unix nanoseconds before which nothing is let through
	suppressed atomic.Int64
}

// Allow reports whether a line may be logged now, and if so how many were held back
// since the last one (log it with the line). When it returns false the caller drops
// its line; the Sampler has counted it.
func (s *Sampler) Allow() (ok bool, suppressed int64) {
	return s.allowAt(time.Now().UnixNano())
}

func (s *Sampler) allowAt(now int64) (bool, int64) {
	interval := s.Interval
	if interval <= 0 {
		interval = time.Second
	}
	next := s.next.Load()
	if now < next || !s.next.CompareAndSwap(next, now+int64(interval)) {
		s.suppressed.Add(1)
		return false, 0
	}
	return true, s.suppressed.Swap(0)
}
