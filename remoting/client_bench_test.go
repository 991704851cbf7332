//go:build unix

package remoting

import (
	"runtime/metrics"
	"syscall"
	"testing"
	"time"
)

// BenchmarkInvokeSerial measures one caller sending one request at a time (1 KiB echo,
// msgpack header), over plain TCP and TLS: the path of a lone synchronous sender. Besides
// the latency percentiles of benchEcho it reports the process's CPU time per request
// (server and client together, as both run in this process).
func BenchmarkInvokeSerial(b *testing.B) {
	b.Run("plain", func(b *testing.B) {
		defer reportCPU(b)()
		benchEcho(b, SerializeMsgpack, 1, 1024, echoSetup{})
	})
	b.Run("tls", func(b *testing.B) {
		pki := newTestPKI(b)
		defer reportCPU(b)()
		benchEcho(b, SerializeMsgpack, 1, 1024, echoSetup{server: pki.serverTLS(TLSEnforcing), client: pki.clientTLS()})
	})
}

// reportCPU returns a function that reports, per benchmark iteration since reportCPU was
// called, the process's user+system CPU time and how many times a goroutine was
// scheduled to run after waiting (the runtime samples these: about one in eight), and
// the voluntary context switches of its threads.
func reportCPU(b *testing.B) func() {
	start, sched, csw := cpuTime(), schedCount(), contextSwitches()
	return func() {
		if b.N > 0 {
			b.ReportMetric(float64(contextSwitches()-csw)/float64(b.N), "csw/op")
			b.ReportMetric(float64((cpuTime()-start).Nanoseconds())/float64(b.N)/1e3, "cpu-µs/op")
			b.ReportMetric(float64(schedCount()-sched)/float64(b.N), "sched/op")
		}
	}
}

// contextSwitches is the number of voluntary context switches of the process's threads.
func contextSwitches() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Nvcsw
}

// schedCount is the number of times goroutines went from runnable to running (the count
// of the runtime's scheduling latency histogram).
func schedCount() uint64 {
	s := []metrics.Sample{{Name: "/sched/latencies:seconds"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindFloat64Histogram {
		return 0
	}
	var n uint64
	for _, c := range s[0].Value.Float64Histogram().Counts {
		n += c
	}
	return n
}

// cpuTime is the process's user plus system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
