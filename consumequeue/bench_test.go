package consumequeue

import (
	"path/filepath"
	"testing"

	"github.com/ferrymq/ferry/internal/mmap"
	"github.com/stretchr/testify/require"
)

// BenchmarkQueueRead reads sequentially through a queue of 1,000,000 units in default-size
// segment files on the real file system, 32 units per call as a pull does, and reports units
// read per second.
func BenchmarkQueueRead(b *testing.B) {
	opts := DefaultOptions()
	opts.Root = filepath.Join(b.TempDir(), "consumequeue")
	opts.FS = mmap.OSFS{}
	s, err := Open(opts)
	require.NoError(b, err)
	defer s.Close()
	q := mustQueue(b, s, "BenchTopic", 0)
	const total = 1_000_000
	appendN(b, q, 0, total)
	buf := make([]Unit, 32)
	var units int64
	from := int64(0)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		n, err := q.Read(from, buf)
		if err != nil {
			b.Fatal(err)
		}
		units += int64(n)
		if from += int64(n); from >= total {
			from = 0
		}
	}
	b.ReportMetric(float64(units)/b.Elapsed().Seconds(), "units/s")
}

// BenchmarkQueueAppend measures the dispatcher's side: appending units (segment creation
// included).
func BenchmarkQueueAppend(b *testing.B) {
	opts := DefaultOptions()
	opts.Root = filepath.Join(b.TempDir(), "consumequeue")
	s, err := Open(opts)
	require.NoError(b, err)
	defer s.Close()
	q := mustQueue(b, s, "BenchTopic", 0)
	b.ReportAllocs()
	i := int64(0)
	for b.Loop() {
		if err := q.Append(i, unitFor(i)); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
