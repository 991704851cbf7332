package client

import (
	"bufio"
	"context"
	"crypto/sha256"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/testutil"
)

// BenchmarkChunked100MiBRoundTrip sends a 100 MiB message (25 chunks, not compressible)
// through a broker started in this process and reads it back whole with a pull
// consumer, checking its hash. Besides the time it reports the memory of each half,
// above what the process held before it (the sender's body included while sending,
// freed before receiving):
//
//	send-live-MiB   the peak of the Go heap's live objects (marked by a GC) while sending
//	recv-live-MiB   the same while receiving
//	send-heap-MiB   the peak of the Go heap's objects, garbage not yet swept included
//	recv-heap-MiB   (with GOGC=100 up to the live heap again in garbage)
//	hwm-MiB         the growth of the process's peak resident set (VmHWM, reset first)
//	                over the round trip, the broker's newly mapped commit log included
//
// (heap sampled every millisecond from runtime/metrics; the broker runs in this process,
// so its request buffers count too). Bounded memory shows as a receive peak of about the
// message (its reassembly buffer) plus a few chunks, and a send peak of a few chunks:
// never multiples of the message.
func BenchmarkChunked100MiBRoundTrip(b *testing.B) {
	const topic, size = "BenchChunked", 100 << 20
	c := testutil.StartCluster(b)
	cl, err := New(WithNameServers(c.NamesrvAddr))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cl.Close() })
	if err := cl.Admin().CreateTopic(context.Background(), TopicConfig{Name: topic, ReadQueues: 1, WriteQueues: 1},
		Target{Brokers: []string{c.BrokerAddr}}); err != nil {
		b.Fatal(err)
	}
	p, err := cl.NewProducer("BenchChunkedPG")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = p.Close() })
	if _, err := p.Send(context.Background(), message.NewMessage(topic, []byte("warm up"))); err != nil {
		b.Fatal(err)
	}
	pull, err := cl.NewPullConsumer("BenchChunkedCG")
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	mqs, err := pull.FetchQueues(ctx, topic)
	if err != nil {
		b.Fatal(err)
	}
	var sendPeak, recvPeak, sendLive, recvLive, hwm int64
	b.SetBytes(size)
	b.ResetTimer()
	for i := range b.N {
		body := randomBody(size, byte(i))
		sum := sha256.Sum256(body)
		runtime.GC()
		base, baseLive := heapNow()
		rss := resetHWM()
		stop := sampleHeap()
		res, err := p.Send(ctx, message.NewMessage(topic, body))
		if err != nil {
			b.Fatal(err)
		}
		peak, live := stop()
		sendPeak, sendLive = max(sendPeak, peak-base), max(sendLive, live-baseLive)
		body = nil //nolint:ineffassign,wastedassign // freed before receiving
		runtime.GC()
		base, baseLive = heapNow()
		stop = sampleHeap()
		mq := mqs[0]
		for _, q := range mqs {
			if q.BrokerName == res.BrokerName && q.QueueID == res.QueueID {
				mq = q
			}
		}
		got := receiveWhole(b, pull, mq, res.QueueOffset, res.MsgID)
		peak, live = stop()
		recvPeak, recvLive = max(recvPeak, peak-base), max(recvLive, live-baseLive)
		if sha256.Sum256(got) != sum {
			b.Fatal("body differs")
		}
		hwm = max(hwm, procStatus("VmHWM:")-rss)
	}
	b.ReportMetric(float64(sendLive)/(1<<20), "send-live-MiB")
	b.ReportMetric(float64(recvLive)/(1<<20), "recv-live-MiB")
	b.ReportMetric(float64(sendPeak)/(1<<20), "send-heap-MiB")
	b.ReportMetric(float64(recvPeak)/(1<<20), "recv-heap-MiB")
	b.ReportMetric(float64(hwm)/(1<<20), "hwm-MiB")
}

// receiveWhole pulls mq from offset until the message id arrives whole.
func receiveWhole(b *testing.B, pull *PullConsumer, mq MessageQueue, offset int64, id string) []byte {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		res, err := pull.PullWait(ctx, mq, offset, 32, "*", time.Second)
		if err != nil {
			b.Fatal(err)
		}
		for _, m := range res.Messages {
			if m.MsgID == id {
				return m.Body
			}
		}
		offset = res.NextOffset
	}
}

// heapNow is the bytes of heap objects (live and not yet swept) and of the live heap
// the last GC marked.
func heapNow() (objects, live int64) {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64()), int64(s[1].Value.Uint64())
}

// sampleHeap samples heapNow every millisecond until the returned function is called;
// that returns the peaks.
func sampleHeap() func() (objects, live int64) {
	var peak, peakLive atomic.Int64
	sample := func() {
		o, l := heapNow()
		peak.Store(max(peak.Load(), o))
		peakLive.Store(max(peakLive.Load(), l))
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			sample()
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	})
	return func() (int64, int64) {
		close(done)
		wg.Wait()
		runtime.GC() // the live heap at the end, marked
		sample()
		return peak.Load(), peakLive.Load()
	}
}

// resetHWM resets the process's peak resident set (VmHWM) to its current one, which it
// returns.
func resetHWM() int64 {
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
	return procStatus("VmRSS:")
}

// procStatus is the value of a /proc/self/status line in bytes, 0 where /proc is
// missing.
func procStatus(key string) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), key); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}
