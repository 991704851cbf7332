//go:build unix

package client

import (
	"context"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ferrymq/ferry/testutil"
)

// BenchmarkPushConsume measures the push consumer reading back stored messages: b.N
// messages of 1 KiB, stored beforehand in the 8 queues of a topic on a broker started in
// this process, consumed from the first offset by a new group with pull and consume
// batches of 32 and a handler that only counts (how the benchmark harness drives it).
// Besides ns/op and allocs/op (both per message) it reports the process's CPU time per
// message (broker and client together: a CPU profile separates them). Run it with a fixed
// count, e.g. -benchtime=100000x, so the messages are stored once per run.
func BenchmarkPushConsume(b *testing.B) {
	c := testutil.StartCluster(b)
	cl, err := New(WithNameServers(c.NamesrvAddr))
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = cl.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const topic = "BenchConsume"
	if err := cl.Admin().CreateTopic(ctx, TopicConfig{Name: topic, ReadQueues: 8, WriteQueues: 8},
		Target{Brokers: []string{c.BrokerAddr}}); err != nil {
		b.Fatal(err)
	}
	storeMessages(b, cl, topic, b.N)

	var count atomic.Int64
	done := make(chan struct{})
	var mu sync.Mutex
	n := int64(b.N)
	handler := func(_ context.Context, msgs []*MessageExt) ConsumeResult {
		mu.Lock()
		defer mu.Unlock()
		for range msgs {
			if count.Add(1) == n {
				close(done)
			}
		}
		return ConsumeSuccess
	}
	pc, err := cl.NewPushConsumer("BenchConsumeGroup", topic, "*", handler,
		WithConsumeFrom(ConsumeFromFirstOffset), WithConsumeBatch(32), WithPullBatch(32))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(1024)
	b.ReportAllocs()
	b.ResetTimer()
	cpu := processCPU()
	if err := pc.Start(ctx); err != nil {
		b.Fatal(err)
	}
	select {
	case <-done:
	case <-ctx.Done():
		b.Fatalf("consumed %d of %d: %v", count.Load(), n, ctx.Err())
	}
	b.StopTimer()
	b.ReportMetric(float64((processCPU()-cpu).Nanoseconds())/float64(b.N)/1e3, "cpu-µs/op")
	if err := pc.Close(); err != nil {
		b.Fatal(err)
	}
}

// storeMessages sends n messages of 1 KiB to topic, at most 256 in flight.
func storeMessages(b *testing.B, cl *Client, topic string, n int) {
	b.Helper()
	p, err := cl.NewProducer("BenchConsumePG", WithRetries(2))
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = p.Close() }()
	sendPipelined(b, p, topic, n)
	if b.Failed() {
		b.FailNow()
	}
}

// processCPU is the process's user plus system CPU time.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
