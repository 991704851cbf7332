// Package meter holds the lock-free counters the hot paths count into — a histogram of
// fixed bucket bounds over atomic words — so that counting costs a few atomic adds and
// no allocation. Package observe turns snapshots of them into Prometheus metrics when
// /metrics is scraped; nothing here knows Prometheus.
package meter

import (
	"slices"
	"sync/atomic"
)

// Histogram counts observations of an int64 quantity (nanoseconds, bytes) into buckets
// with fixed upper bounds. Observe is safe for concurrent use and allocates nothing; a
// Snapshot taken while observations run may see an observation in its bucket and not
// yet in the sum, never the reverse of a whole observation's bucket.
type Histogram struct {
	bounds []int64        // ascending upper bounds (inclusive)
	counts []atomic.Int64 // len(bounds)+1: the last is above every bound
	sum    atomic.Int64
}

// NewHistogram returns a histogram with the given inclusive upper bounds, which must be
// ascending; a last, unbounded bucket holds what is above them.
func NewHistogram(bounds ...int64) *Histogram {
	if !slices.IsSorted(bounds) {
		panic("meter: histogram bounds must be ascending")
	}
	return &Histogram{bounds: slices.Clone(bounds), counts: make([]atomic.Int64, len(bounds)+1)}
}

// Observe counts v.
func (h *Histogram) Observe(v int64) {
	i := 0
	for i < len(h.bounds) && v > h.bounds[i] { // a handful of bounds: linear is fastest
		i++
	}
	h.counts[i].Add(1)
	h.sum.Add(v)
}

// Snapshot returns the histogram's counts so far.
func (h *Histogram) Snapshot() HistogramSnapshot {
	s := HistogramSnapshot{Bounds: h.bounds, Counts: make([]uint64, len(h.counts)), Sum: h.sum.Load()}
	for i := range h.counts {
		s.Counts[i] = uint64(h.counts[i].Load())
	}
	return s
}

// HistogramSnapshot is a histogram's state at one moment.
type HistogramSnapshot struct {
	// Bounds are the buckets' inclusive upper bounds (shared, not to be modified).
	Bounds []int64
	// Counts are the observations per bucket (not cumulative); the last one counts those
	// above every bound.
	Counts []uint64
	// Sum is the sum of the observed values.
	Sum int64
}

// Count is the number of observations.
func (s HistogramSnapshot) Count() uint64 {
	var n uint64
	for _, c := range s.Counts {
		n += c
	}
	return n
}

// Add adds o's counts to s, which must have the same bounds (or be the zero value, which
// takes o's bounds).
func (s *HistogramSnapshot) Add(o HistogramSnapshot) {
	if s.Counts == nil {
		s.Bounds, s.Counts = o.Bounds, make([]uint64, len(o.Counts))
	}
	for i, c := range o.Counts {
		s.Counts[i] += c
	}
	s.Sum += o.Sum
}
