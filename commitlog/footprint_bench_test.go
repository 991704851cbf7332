//go:build linux

package commitlog

import (
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ferrymq/ferry/internal/mmap"
	"github.com/ferrymq/ferry/message"
)

// BenchmarkFootprintAppendFaults is BenchmarkAppendAsync1KiB on a new log that was never
// appended to before the timer starts (as a new or restarted broker is), with and
// without PrefaultSegments, counting the page faults of the appending thread itself:
// major faults are appends that found their page not in the page cache yet and
// allocated it under the writer lock, which pre-faulting exists to prevent, and
// writer-sys-ns/op is the kernel time of the appending thread per append (page faults,
// zero-filling and the write-window system calls).
//
//	go test -run '^$' -bench FootprintAppendFaults ./commitlog/
func BenchmarkFootprintAppendFaults(b *testing.B) {
	b.Run("prefault", func(b *testing.B) { benchAppendFaults(b, true) })
	b.Run("noprefault", func(b *testing.B) { benchAppendFaults(b, false) })
}

func benchAppendFaults(b *testing.B, prefault bool) {
	o := DefaultOptions()
	o.PrefaultSegments = prefault
	o.FS = mmap.OSFS{}
	o.Dir = b.TempDir()
	o.SegmentSize = 256 << 20
	l, err := Open(o)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := l.Close(); err != nil {
			b.Error(err)
		}
	})
	recs := []message.Record{newRecord("BenchTopic", 0, 1024, 1)}
	b.SetBytes(int64(recs[0].Size()))
	b.ReportAllocs()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var before, after unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &before); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := l.Append(recs, false); err != nil {
			b.Fatal(err)
		}
	}
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &after); err != nil {
		b.Fatal(err)
	}
	gib := float64(l.MaxOffset()) / (1 << 30)
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
	b.ReportMetric(float64(after.Majflt-before.Majflt)/gib, "writer-majflt/GiB")
	b.ReportMetric(float64(after.Minflt-before.Minflt)/gib, "writer-minflt/GiB")
	sys := time.Duration(after.Stime.Nano() - before.Stime.Nano())
	b.ReportMetric(float64(sys.Nanoseconds())/float64(b.N), "writer-sys-ns/op")
}
