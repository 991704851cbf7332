package commitlog

import (
	"fmt"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/ferrymq/ferry/internal/mmap"
	"github.com/ferrymq/ferry/message"
)

// benchLog opens a log on real files with 256 MiB segments (rollovers are rare but do
// happen) in a temporary directory removed afterwards.
func benchLog(b *testing.B, mode FlushMode) *Log {
	b.Helper()
	return benchLogWith(b, mode, nil)
}

// benchLogWith is benchLog with a change to the options.
func benchLogWith(b *testing.B, mode FlushMode, change func(*Options)) *Log {
	b.Helper()
	o := DefaultOptions()
	o.FS = mmap.OSFS{}
	o.Dir = b.TempDir()
	o.SegmentSize = 256 << 20
	o.FlushMode = mode
	if change != nil {
		change(&o)
	}
	l, err := Open(o)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := l.Close(); err != nil {
			b.Error(err)
		}
	})
	return l
}

// processCPU returns the user and system CPU time the process has used so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func reportRate(b *testing.B) {
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}

// BenchmarkAppendAsync1KiB: one writer, 1 KiB bodies, async flush. Must not allocate.
func BenchmarkAppendAsync1KiB(b *testing.B) {
	l := benchLog(b, FlushAsync)
	recs := []message.Record{newRecord("BenchTopic", 0, 1024, 1)}
	b.SetBytes(int64(recs[0].Size()))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := l.Append(recs, false); err != nil {
			b.Fatal(err)
		}
	}
	reportRate(b)
}

// BenchmarkAppendAsyncPath compares the two FlushAsync append paths on real files: the
// stage and one pwrite per append (the default) and encoding straight into the mapping
// (MappedAsyncAppends), for single 1 KiB records and batches of 32 (what a batching
// client sends). Run it with -benchtime long enough to cross many pages (e.g. 2s): the
// cost being compared is the first touch of each page.
func BenchmarkAppendAsyncPath(b *testing.B) {
	for _, path := range []struct {
		name   string
		mapped bool
	}{{"pwrite", false}, {"mapped", true}} {
		for _, batch := range []int{1, 4, 16, 32} {
			b.Run(fmt.Sprintf("path=%s/batch=%d", path.name, batch), func(b *testing.B) {
				l := benchLogWith(b, FlushAsync, func(o *Options) { o.MappedAsyncAppends = path.mapped })
				recs := make([]message.Record, batch)
				for i := range recs {
					recs[i] = newRecord("BenchTopic", 0, 1024, i)
				}
				b.SetBytes(int64(batch * recs[0].Size()))
				b.ReportAllocs()
				cpu0 := processCPU(b)
				for b.Loop() {
					if _, err := l.Append(recs, false); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "msgs/s")
				// CPU of the whole process (the service goroutine's pre-faulting and the
				// flusher included) per record: steadier than wall time on a shared machine.
				b.ReportMetric(float64((processCPU(b)-cpu0).Nanoseconds())/float64(b.N*batch), "cpu-ns/msg")
			})
		}
	}
}

// BenchmarkAppendSync64: 64 concurrent appenders waiting for durability (group commit).
func BenchmarkAppendSync64(b *testing.B) {
	l := benchLog(b, FlushSync)
	size := newRecord("BenchTopic", 0, 1024, 1)
	b.SetBytes(int64(size.Size()))
	b.ReportAllocs()
	b.SetParallelism(max(64/runtime.GOMAXPROCS(0), 1))
	b.RunParallel(func(pb *testing.PB) {
		recs := []message.Record{newRecord("BenchTopic", 0, 1024, 1)}
		for pb.Next() {
			res, err := l.Append(recs, true)
			if err != nil || !res.Durable {
				b.Errorf("append: %v, %+v", err, res)
				return
			}
		}
	})
	reportRate(b)
	if st := l.Stats(); st.GroupCommits > 0 {
		b.ReportMetric(float64(st.GroupCommitWaiters)/float64(st.GroupCommits), "msgs/commit")
		b.ReportMetric(float64(st.FlushTime.Microseconds())/float64(st.Flushes), "µs/flush")
	}
}

// BenchmarkAppendManyQueues: single 1 KiB appends spread over 8 or 10,000 topic-queues
// (the cost of the queue-offset table).
func BenchmarkAppendManyQueues(b *testing.B) {
	for _, queues := range []int{8, 10_000} {
		b.Run(fmt.Sprintf("queues=%d", queues), func(b *testing.B) {
			l := benchLog(b, FlushAsync)
			recs := make([]message.Record, queues)
			for i := range recs {
				recs[i] = newRecord(fmt.Sprintf("BenchTopic-%d", i/8), int32(i%8), 1024, i)
			}
			b.SetBytes(int64(recs[0].Size()))
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := l.Append(recs[i:i+1], false); err != nil {
					b.Fatal(err)
				}
				if i++; i == queues {
					i = 0
				}
			}
			reportRate(b)
		})
	}
}

// BenchmarkTailBehindWriter is the dispatcher's pattern: batches of 32 1 KiB records
// appended (through the stage and pwrite) and read back at once by an iterator that
// tails the log. It reports the process's CPU per record, appends included.
func BenchmarkTailBehindWriter(b *testing.B) {
	l := benchLog(b, FlushAsync)
	recs := make([]message.Record, 32)
	for i := range recs {
		recs[i] = newRecord("BenchTopic", 0, 1024, i)
	}
	it := l.NewIterator(0)
	defer it.Close()
	b.ReportAllocs()
	cpu0 := processCPU(b)
	n := 0
	for b.Loop() {
		if _, err := l.Append(recs, false); err != nil {
			b.Fatal(err)
		}
		for it.Next() {
			n++
		}
		if it.Err() != nil {
			b.Fatal(it.Err())
		}
	}
	if n != b.N*len(recs) {
		b.Fatalf("read %d records of %d", n, b.N*len(recs))
	}
	b.ReportMetric(float64((processCPU(b)-cpu0).Nanoseconds())/float64(n), "cpu-ns/msg")
}
