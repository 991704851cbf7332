package index

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/ferrymq/ferry/internal/mmap"
	"github.com/stretchr/testify/require"
)

// BenchmarkIndexQuery indexes 1,000,000 distinct keys in one default-geometry file
// (5,000,000 slots, 420 MB, on the real file system in a temp dir) and queries random keys
// over all time, reporting the 99th-percentile latency.
func BenchmarkIndexQuery(b *testing.B) {
	opts := DefaultOptions()
	opts.Dir = filepath.Join(b.TempDir(), "index")
	opts.FS = mmap.OSFS{}
	x, err := Open(opts)
	require.NoError(b, err)
	defer x.Close()
	const keys = 1_000_000
	key := func(i int) string { return fmt.Sprintf("BenchTopic#key-%07d", i) }
	b0 := time.Now().UnixMilli()
	for i := range keys {
		require.NoError(b, x.Put(key(i), int64(i)*200, b0+int64(i)/10))
	}
	require.NoError(b, x.Flush())
	rng := rand.New(rand.NewPCG(1, 2))
	names := make([]string, 4096)
	for i := range names {
		names[i] = key(rng.IntN(keys))
	}
	lat := make([]time.Duration, 0, 1<<16)
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		start := time.Now()
		got, err := x.Query(names[i%len(names)], 32, 0, math.MaxInt64)
		d := time.Since(start)
		if err != nil || len(got) != 1 {
			b.Fatalf("query %s: %v %v", names[i%len(names)], got, err)
		}
		if len(lat) < cap(lat) {
			lat = append(lat, d)
		}
		i++
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99-ns")
}

// BenchmarkIndexPut measures the dispatcher's side: one key per call, small files so that
// rolls (and their file creation) are included.
func BenchmarkIndexPut(b *testing.B) {
	opts := DefaultOptions()
	opts.Dir = filepath.Join(b.TempDir(), "index")
	opts.SlotNum, opts.MaxEntries = 500_000, 2_000_000
	x, err := Open(opts)
	require.NoError(b, err)
	defer x.Close()
	names := make([]string, 1024)
	for i := range names {
		names[i] = fmt.Sprintf("BenchTopic#key-%d", i)
	}
	b0 := time.Now().UnixMilli()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if err := x.Put(names[i%len(names)], int64(i)*200, b0+int64(i)/10); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkIndexIngestFlush models one checkpoint interval of ingest: 100,000 new keys
// (spread over the whole slot table by their hashes, as message ids are) and then a
// Flush, on real files with the default 5 million slots. It reports the process's CPU
// per key, Put and the Flush's share together: the flush's cost lies mostly in the
// kernel (page faults, write-protection, writeback), which wall time on a shared machine
// shows poorly.
func BenchmarkIndexIngestFlush(b *testing.B) {
	opts := DefaultOptions()
	opts.Dir = filepath.Join(b.TempDir(), "index")
	opts.FS = mmap.OSFS{}
	x, err := Open(opts)
	require.NoError(b, err)
	defer func() { require.NoError(b, x.Close()) }()
	const perFlush = 100_000
	names := make([]string, perFlush)
	b0 := time.Now().UnixMilli()
	var ru0, ru1 syscall.Rusage
	require.NoError(b, syscall.Getrusage(syscall.RUSAGE_SELF, &ru0))
	n := 0
	for b.Loop() {
		for i := range names {
			names[i] = fmt.Sprintf("BenchTopic#%016x", uint64(n)*0x9E3779B97F4A7C15)
			n++
		}
		for i, k := range names {
			if err := x.Put(k, int64(n-perFlush+i)*200, b0+int64(n)/100_000); err != nil {
				b.Fatal(err)
			}
		}
		if err := x.Flush(); err != nil {
			b.Fatal(err)
		}
	}
	require.NoError(b, syscall.Getrusage(syscall.RUSAGE_SELF, &ru1))
	cpu := ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano()
	b.ReportMetric(float64(cpu)/float64(n), "cpu-ns/key")
}
