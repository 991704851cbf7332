//go:build linux

package interop

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ferrymq/ferry/client"
	"github.com/ferrymq/ferry/message"
)

// BenchmarkFerryClient measures Ferry's own Go client against a ferry standalone child
// process (async flush), with the official client's async4 in the same run for
// comparison:
//
//	go test -run '^$' -bench FerryClient -benchtime=200000x -count=3 ./interop/
//
// Sub-benchmarks (b.N messages in total):
//
//   - ferry-async4-1KiB / ferry-async4-128B: 4 producers, each on its own Client (its own
//     connection), SendAsync with at most 256 in flight per producer; the client batches
//     them automatically.
//   - ferry-sync1-1KiB: one producer, one Send at a time; p50-us and p99-us.
//   - official-async4-1KiB: BenchmarkBrokerCPU's async4 with the official client.
//
// Metrics as in BenchmarkBrokerCPU: msgs/s, broker-us/msg, client-us/msg (CPU µs per
// message of the broker process and of this process), broker-cores, client-cores.
// FERRY_BENCH_PPROF=<file> profiles the broker during ferry-async4-1KiB into
// <file>.ferry-async4 (see BenchmarkBrokerCPU).
func BenchmarkFerryClient(b *testing.B) {
	profile := os.Getenv(benchPprofEnv)
	proc := startFerryProcess(b, profile != "")
	kib, small := make([]byte, 1024), make([]byte, 128)
	warm := newFerryProducers(b, proc, 4)
	if err := ferrySendAsyncN(warm, benchWarmup, kib); err != nil {
		b.Fatalf("warm-up: %v", err)
	}
	prof := func(suffix string) string {
		if profile == "" {
			return ""
		}
		return profile + suffix
	}
	b.Run("ferry-async4-1KiB", func(b *testing.B) { benchFerryAsync(b, proc, kib, prof(".ferry-async4")) })
	b.Run("ferry-async4-128B", func(b *testing.B) { benchFerryAsync(b, proc, small, "") })
	b.Run("ferry-sync1-1KiB", func(b *testing.B) { benchFerrySync(b, proc, kib) })
	b.Run("official-async4-1KiB", func(b *testing.B) { benchBrokerAsync(b, proc, kib, "") })
}

// newFerryProducers starts n producers, each on its own Client; closed at cleanup.
func newFerryProducers(b *testing.B, proc *ferryProc, n int) []*client.Producer {
	b.Helper()
	ps := make([]*client.Producer, n)
	for i := range ps {
		c, err := client.New(client.WithNameServers(proc.namesrvAddr), client.WithInstanceName(fmt.Sprintf("bench-%d", i)),
			client.WithRequestTimeout(benchSendTimeout))
		if err != nil {
			b.Fatal(err)
		}
		p, err := c.NewProducer("bench-ferry-client")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() {
			_ = p.Close()
			_ = c.Close()
		})
		ps[i] = p
	}
	return ps
}

// ferrySendAsyncN sends n messages spread over the producers, at most benchAsyncWindow in
// flight per producer, and waits for every result.
func ferrySendAsyncN(ps []*client.Producer, n int, body []byte) error {
	var failures atomic.Int64
	var firstErr atomic.Pointer[error]
	var wg sync.WaitGroup
	for i, p := range ps {
		share := n / len(ps)
		if i < n%len(ps) {
			share++
		}
		wg.Go(func() {
			window := make(chan struct{}, benchAsyncWindow)
			var inflight sync.WaitGroup
			done := func(_ client.SendResult, err error) {
				if err != nil {
					failures.Add(1)
					firstErr.CompareAndSwap(nil, &err)
				}
				<-window
				inflight.Done()
			}
			for range share {
				if failures.Load() > 0 {
					break
				}
				window <- struct{}{}
				inflight.Add(1)
				p.SendAsync(context.Background(), message.NewMessage(benchCPUTopic, body), done)
			}
			inflight.Wait()
		})
	}
	wg.Wait()
	if f := failures.Load(); f > 0 {
		return fmt.Errorf("%d sends failed, first: %w", f, *firstErr.Load())
	}
	return nil
}

func benchFerryAsync(b *testing.B, proc *ferryProc, body []byte, profile string) {
	ps := newFerryProducers(b, proc, 4)
	if err := ferrySendAsyncN(ps, 4, body); err != nil { // routes and connections
		b.Fatal(err)
	}
	proc.waitIdle(b, benchIdleTimeout)
	profiled := startBenchProfile(b, proc, profile)
	var m cpuMeter
	m.begin(b, proc)
	err := ferrySendAsyncN(ps, b.N, body)
	m.end(b, proc)
	profiled()
	if err != nil {
		b.Fatal(err)
	}
	m.report(b, b.N)
}

func benchFerrySync(b *testing.B, proc *ferryProc, body []byte) {
	p := newFerryProducers(b, proc, 1)[0]
	ctx := context.Background()
	if _, err := p.Send(ctx, message.NewMessage(benchCPUTopic, body)); err != nil {
		b.Fatal(err)
	}
	lat := make([]time.Duration, b.N)
	proc.waitIdle(b, benchIdleTimeout)
	var m cpuMeter
	m.begin(b, proc)
	for i := range b.N {
		t0 := time.Now()
		if _, err := p.Send(ctx, message.NewMessage(benchCPUTopic, body)); err != nil {
			b.Fatalf("send %d: %v", i, err)
		}
		lat[i] = time.Since(t0)
	}
	m.end(b, proc)
	slices.Sort(lat)
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
	b.ReportMetric(us(lat[len(lat)/2]), "p50-us")
	b.ReportMetric(us(lat[len(lat)*99/100]), "p99-us")
	m.report(b, b.N)
}
