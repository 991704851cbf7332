package meter

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// Observations land in the bucket of the first bound at or above them; the last bucket
// takes the rest; the sum and count are exact.
func TestHistogramBuckets(t *testing.T) {
	h := NewHistogram(10, 100)
	for _, v := range []int64{0, 10, 11, 100, 101, 5000} {
		h.Observe(v)
	}
	s := h.Snapshot()
	require.Equal(t, []int64{10, 100}, s.Bounds)
	require.Equal(t, []uint64{2, 2, 2}, s.Counts)
	require.Equal(t, uint64(6), s.Count())
	require.Equal(t, int64(0+10+11+100+101+5000), s.Sum)
}

// Concurrent observers lose nothing.
func TestHistogramConcurrent(t *testing.T) {
	h := NewHistogram(1)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for i := range 1000 {
				h.Observe(int64(i % 3))
			}
		})
	}
	wg.Wait()
	s := h.Snapshot()
	require.Equal(t, uint64(4000), s.Count())
	require.Equal(t, uint64(4*333), s.Counts[1]) // the 2s
}

// Add sums snapshots of the same bounds, starting from the zero value.
func TestSnapshotAdd(t *testing.T) {
	a, b := NewHistogram(5), NewHistogram(5)
	a.Observe(1)
	b.Observe(9)
	b.Observe(2)
	var sum HistogramSnapshot
	sum.Add(a.Snapshot())
	sum.Add(b.Snapshot())
	require.Equal(t, []uint64{2, 1}, sum.Counts)
	require.Equal(t, int64(12), sum.Sum)
	require.Equal(t, []uint64{1, 0}, a.Snapshot().Counts, "the sum does not alias its parts")
}

// Unsorted bounds are a programming error.
func TestHistogramBoundsSorted(t *testing.T) {
	require.Panics(t, func() { NewHistogram(2, 1) })
}

// Observe allocates nothing.
func TestObserveAllocatesNothing(t *testing.T) {
	h := NewHistogram(1, 2, 3)
	require.Zero(t, testing.AllocsPerRun(100, func() { h.Observe(2) }))
}
