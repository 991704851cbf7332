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

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
)

// benchPprofEnv names the environment variable that makes BenchmarkBrokerCPU profile the
// broker during its timed loops.
const benchPprofEnv = "FERRY_BENCH_PPROF"

// BenchmarkBrokerCPU measures what one message costs the broker, end to end with the
// official Go client. Unlike the other benchmarks of this package it runs the broker as a
// child process: the real ferry binary, built into a temporary directory and started once
// for all sub-benchmarks and -count repetitions (`ferry standalone`, async flush, free
// loopback ports). The broker's CPU time, read from its process CPU clock before and after
// each timed loop, is thus separate from the client's (this process's own CPU clock).
// Before the sub-benchmarks the broker is warmed up with 20,000 messages, and each timed
// loop starts once the broker is idle, so that neither the background pre-faulting of the
// next 1 GiB commit-log segment after startup (about 1.5 s of CPU) nor the tail of the
// previous run is billed to it. Recommended workload:
//
//	go test -run '^$' -bench BrokerCPU -benchtime=50000x -count=3 ./interop/
//
// Sub-benchmarks, 1 KiB bodies, b.N messages in total (pipelined4, described at
// benchBrokerPipelined, uses Ferry's own transport instead of the official client):
//
//   - async4: 4 producers (each its own instance name, so its own connection) sending
//     with SendAsync, at most 256 in flight per producer. Throughput and the CPU cost per
//     message on both sides: compare broker-cores and client-cores to see which side is
//     the bottleneck (both share the machine).
//   - sync1: one producer sending with SendSync, one message at a time; the latency of
//     every send is recorded.
//
// Metrics: broker-us/msg and client-us/msg (CPU µs per message, user + system, of the
// broker process and of this benchmark process), broker-sys-us/msg (the broker's system
// part, in 10 ms clock ticks: meaningful for runs of a second or more), broker-cores and
// client-cores (CPU time divided by the wall time), msgs/s, and for sync1 p50-us and
// p99-us.
//
// FERRY_BENCH_PPROF=<file> starts the broker with --pprof-listen and profiles it during
// each timed loop (not the 1-message probes): a 10 s CPU profile into <file> (async4),
// <file>.sync1 (sync1) and <file>.pipelined4, and the heap profile right after a forced GC
// (/debug/pprof/heap?gc=1, whose alloc_objects and alloc_space samples count allocations
// since the start) before and after the loop into <file>.allocs.base and <file>.allocs (and
// <file>.sync1.allocs…); their difference is the loop's allocations. Read them with, for
// example,
//
//	go tool pprof -top -cum <file>
//	go tool pprof -sample_index=alloc_objects -top -base <file>.allocs.base <file>.allocs
//
// The CPU profile covers 10 s whatever the loop's length, so use a workload that lasts
// about that long (-benchtime=200000x for async4); sampling costs the broker a little CPU
// of its own. With -count, the files of the last run remain. The allocation profile is
// sampled (one sample per 512 KiB); for exact objects per message add
// GODEBUG=memprofilerate=1, which the child inherits (and which slows both processes, so
// ignore that run's CPU figures).
func BenchmarkBrokerCPU(b *testing.B) {
	profile := os.Getenv(benchPprofEnv)
	proc := startFerryProcess(b, profile != "")
	body := make([]byte, 1024)
	syncProfile := ""
	if profile != "" {
		syncProfile = profile + ".sync1"
	}
	// A fresh broker is slower for a while (heap and goroutine stacks growing, first use
	// of its threads): warm it up so that every timed run measures the steady state.
	warm := newAsyncProducers(b, proc, body)
	if err := sendAsyncN(warm, benchWarmup, body); err != nil {
		b.Fatalf("warm-up: %v", err)
	}
	for _, p := range warm {
		_ = p.Shutdown()
	}
	b.Run("async4", func(b *testing.B) { benchBrokerAsync(b, proc, body, profile) })
	b.Run("sync1", func(b *testing.B) { benchBrokerSync(b, proc, body, syncProfile) })
	pipeProfile := ""
	if profile != "" {
		pipeProfile = profile + ".pipelined4"
	}
	b.Run("pipelined4", func(b *testing.B) { benchBrokerPipelined(b, proc, body, pipeProfile) })
}

// benchBrokerPipelined is the pipelined4 sub-benchmark: the same 1 KiB SEND_MESSAGE_V2
// requests with the official client's JSON header, but sent by Ferry's own transport
// (remoting.Client: 4 connections, 256 requests in flight on each, queued frames written
// together). It shows what a message costs the broker when requests arrive pipelined
// rather than one per system call, as from the official client.
func benchBrokerPipelined(b *testing.B, proc *ferryProc, body []byte, profile string) {
	co := remoting.DefaultClientOptions()
	co.ConnsPerAddr = benchAsyncClients
	co.SerializeType = remoting.SerializeJSON
	cli, err := remoting.NewClient(co)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = cli.Close() }()
	h := protocol.SendMessageRequestHeader{ProducerGroup: "bench-cpu-pipelined", Topic: benchCPUTopic,
		DefaultTopic: protocol.AutoCreateTopicKey, DefaultTopicQueueNums: 4, QueueID: -1}
	send := func(cb func(*remoting.Command, error)) error {
		h.BornTimestamp = time.Now().UnixMilli()
		req := remoting.NewRequestExt(int16(protocol.SendMessageV2), nil)
		h.EncodeExtV2(&req.ExtFields)
		req.Body = body
		return cli.InvokeAsync(context.Background(), proc.brokerAddr, req, cb)
	}
	proc.waitIdle(b, benchIdleTimeout)
	profiled := startBenchProfile(b, proc, profile)
	var m cpuMeter
	m.begin(b, proc)
	window := make(chan struct{}, benchAsyncClients*benchAsyncWindow)
	var (
		wg       sync.WaitGroup
		failures atomic.Int64
		firstErr atomic.Value
	)
	for range b.N {
		if failures.Load() > 0 {
			break
		}
		window <- struct{}{}
		wg.Add(1)
		err := send(func(resp *remoting.Command, err error) {
			if err == nil && resp.Code != int16(protocol.Success) {
				err = fmt.Errorf("code %d: %s", resp.Code, resp.Remark)
			}
			if err != nil && failures.Add(1) == 1 {
				firstErr.Store(err)
			}
			<-window
			wg.Done()
		})
		if err != nil {
			if failures.Add(1) == 1 {
				firstErr.Store(err)
			}
			<-window
			wg.Done()
		}
	}
	wg.Wait()
	m.end(b, proc)
	profiled()
	if f := failures.Load(); f > 0 {
		b.Fatalf("%d sends failed, first: %v", f, firstErr.Load())
	}
	m.report(b, b.N)
}

const (
	benchCPUTopic     = "BenchBrokerCPU"
	benchAsyncClients = 4
	benchAsyncWindow  = 256 // sends in flight per producer
	benchWarmup       = 20000
	benchSendTimeout  = time.Minute
	// benchIdleTimeout bounds the wait for an idle broker before a timed loop.
	benchIdleTimeout = time.Minute
)

// newBenchProducer starts an official producer against proc, with its own instance name
// (its own client and connection), and sends one message to warm it up: topic route,
// connection, and on the very first call the topic's auto-creation.
func newBenchProducer(b *testing.B, proc *ferryProc, group string, body []byte) rocketmq.Producer {
	b.Helper()
	p, err := rocketmq.NewProducer(
		producer.WithNsResolver(primitive.NewPassthroughResolver([]string{proc.namesrvAddr})),
		producer.WithGroupName(group), producer.WithInstanceName(instance(group)), producer.WithRetry(2),
		// The default 3 s is too short for 1,024 sends in flight on a shared, overloaded
		// machine; the benchmark measures cost, not timeouts.
		producer.WithSendMsgTimeout(benchSendTimeout))
	if err != nil {
		b.Fatal(err)
	}
	if err := p.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = p.Shutdown() })
	res, err := p.SendSync(context.Background(), primitive.NewMessage(benchCPUTopic, body))
	if err == nil && res.Status != primitive.SendOK {
		err = fmt.Errorf("status %v", res.Status)
	}
	if err != nil {
		b.Fatalf("warm-up send: %v", err)
	}
	return p
}

// cpuMeter measures the wall time and both processes' CPU time of a timed section.
type cpuMeter struct {
	start                time.Time
	broker0, client0     time.Duration
	brokerSys0           time.Duration
	wall, broker, client time.Duration
	brokerSys            time.Duration
}

func (m *cpuMeter) begin(b *testing.B, proc *ferryProc) {
	b.ResetTimer()
	_, m.brokerSys0 = proc.cpuTicks(b)
	m.broker0, m.client0 = proc.cpu(b), selfCPU(b)
	m.start = time.Now()
}

func (m *cpuMeter) end(b *testing.B, proc *ferryProc) {
	m.wall = time.Since(m.start)
	m.broker, m.client = proc.cpu(b)-m.broker0, selfCPU(b)-m.client0
	_, sys := proc.cpuTicks(b)
	m.brokerSys = sys - m.brokerSys0
	b.StopTimer()
}

// report adds the throughput and CPU metrics for n messages.
func (m *cpuMeter) report(b *testing.B, n int) {
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
	b.ReportMetric(us(m.broker)/float64(n), "broker-us/msg")
	b.ReportMetric(us(m.brokerSys)/float64(n), "broker-sys-us/msg")
	b.ReportMetric(us(m.client)/float64(n), "client-us/msg")
	b.ReportMetric(m.broker.Seconds()/m.wall.Seconds(), "broker-cores")
	b.ReportMetric(m.client.Seconds()/m.wall.Seconds(), "client-cores")
	b.ReportMetric(float64(n)/m.wall.Seconds(), "msgs/s")
}

// benchBrokerAsync is the async4 sub-benchmark; profile, when not empty, is the file of the
// CPU profile to take (see BenchmarkBrokerCPU and startBenchProfile).
func benchBrokerAsync(b *testing.B, proc *ferryProc, body []byte, profile string) {
	ps := newAsyncProducers(b, proc, body)
	proc.waitIdle(b, benchIdleTimeout)
	profiled := startBenchProfile(b, proc, profile)
	var m cpuMeter
	m.begin(b, proc)
	err := sendAsyncN(ps, b.N, body)
	m.end(b, proc)
	profiled()
	if err != nil {
		b.Fatal(err)
	}
	m.report(b, b.N)
}

// newAsyncProducers starts the async4 producers; they are shut down at cleanup.
func newAsyncProducers(b *testing.B, proc *ferryProc, body []byte) []rocketmq.Producer {
	b.Helper()
	ps := make([]rocketmq.Producer, benchAsyncClients)
	for i := range ps {
		ps[i] = newBenchProducer(b, proc, "bench-cpu-async", body)
	}
	return ps
}

// sendAsyncN sends n messages in total, spread evenly over the producers, with SendAsync
// and at most benchAsyncWindow in flight per producer, and waits for every callback. After
// a failure the producers stop sending; the error counts the failures and gives the first.
func sendAsyncN(ps []rocketmq.Producer, n int, body []byte) error {
	var (
		failures atomic.Int64
		firstErr error
		errOnce  sync.Once
	)
	fail := func(err error) {
		failures.Add(1)
		errOnce.Do(func() { firstErr = err })
	}
	var wg sync.WaitGroup
	for i, p := range ps {
		share := n / len(ps)
		if i < n%len(ps) {
			share++
		}
		wg.Go(func() {
			window := make(chan struct{}, benchAsyncWindow)
			var inflight sync.WaitGroup
			done := func(_ context.Context, res *primitive.SendResult, err error) {
				if err == nil && res.Status != primitive.SendOK {
					err = fmt.Errorf("status %v", res.Status)
				}
				if err != nil {
					fail(err)
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
				if err := p.SendAsync(context.Background(), done, primitive.NewMessage(benchCPUTopic, body)); err != nil {
					fail(err)
					<-window
					inflight.Done()
				}
			}
			inflight.Wait()
		})
	}
	wg.Wait()
	if f := failures.Load(); f > 0 {
		return fmt.Errorf("%d sends failed, first: %w", f, firstErr)
	}
	return nil
}

// benchBrokerSync is the sync1 sub-benchmark; profile as for benchBrokerAsync.
func benchBrokerSync(b *testing.B, proc *ferryProc, body []byte, profile string) {
	p := newBenchProducer(b, proc, "bench-cpu-sync", body)
	lat := make([]time.Duration, b.N)
	proc.waitIdle(b, benchIdleTimeout)
	profiled := startBenchProfile(b, proc, profile)
	var m cpuMeter
	m.begin(b, proc)
	for i := range b.N {
		t0 := time.Now()
		res, err := p.SendSync(context.Background(), primitive.NewMessage(benchCPUTopic, body))
		lat[i] = time.Since(t0)
		if err == nil && res.Status != primitive.SendOK {
			err = fmt.Errorf("status %v", res.Status)
		}
		if err != nil {
			b.Fatalf("send %d: %v", i, err)
		}
	}
	m.end(b, proc)
	profiled()
	slices.Sort(lat)
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
	b.ReportMetric(us(lat[len(lat)/2]), "p50-us")
	b.ReportMetric(us(lat[len(lat)*99/100]), "p99-us")
	m.report(b, b.N)
}

// startBenchProfile, when file is not empty and the run is not the 1-message probe, saves
// the broker's heap profile to file.allocs.base and starts a 10 s CPU profile into file.
// The function it returns saves the heap profile again, to file.allocs, and waits for the
// CPU profile. The heap profiles are taken after a forced GC, so that they account for
// every allocation made until then (the runtime publishes them at the end of a cycle).
func startBenchProfile(b *testing.B, proc *ferryProc, file string) func() {
	b.Helper()
	if file == "" || b.N <= 1 {
		return func() {}
	}
	if err := proc.fetchPprof("heap?gc=1", file+".allocs.base"); err != nil {
		b.Fatal(err)
	}
	cpu := make(chan error, 1)
	go func() { cpu <- proc.fetchPprof("profile?seconds=10", file) }()
	return func() {
		if err := proc.fetchPprof("heap?gc=1", file+".allocs"); err != nil {
			b.Error(err)
		}
		if err := <-cpu; err != nil {
			b.Error(err)
		}
	}
}
