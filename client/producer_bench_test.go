package client

import (
	"context"
	"sync"
	"testing"

	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/testutil"
)

// BenchmarkProducerSendAsync measures the client side of pipelined sends: one producer
// keeps up to 256 messages of 1 KiB in flight with SendAsync and a callback per message
// (how the benchmark harness drives it), against a broker started in this process. The
// broker's work is in the numbers too; a CPU profile separates the client's.
func BenchmarkProducerSendAsync(b *testing.B) {
	const topic = "BenchSendAsync"
	p := benchProducer(b, topic)
	b.SetBytes(1024)
	b.ReportAllocs()
	b.ResetTimer()
	sendPipelined(b, p, topic, b.N)
}

// sendPipelined sends n messages of 1 KiB to topic with SendAsync, at most 256 in flight
// (how the benchmark harness drives a producer), and returns when all are answered; a
// failed send fails the benchmark.
func sendPipelined(b *testing.B, p *Producer, topic string, n int) {
	b.Helper()
	ctx := context.Background()
	payload := make([]byte, 1024)
	window := make(chan struct{}, 256)
	var wg sync.WaitGroup
	var failed sync.Once
	for range n {
		window <- struct{}{}
		wg.Add(1)
		p.SendAsync(ctx, message.NewMessage(topic, payload), func(_ SendResult, err error) {
			if err != nil {
				failed.Do(func() { b.Error(err) })
			}
			<-window
			wg.Done()
		})
	}
	wg.Wait()
}

// BenchmarkProducerSendSync measures a lone synchronous sender: one Send of 1 KiB at a
// time against a broker started in this process, so ns/op is a whole round trip (client,
// loopback, broker). A CPU profile separates the client's share.
func BenchmarkProducerSendSync(b *testing.B) {
	const topic = "BenchSendSync"
	p := benchProducer(b, topic)
	ctx := context.Background()
	payload := make([]byte, 1024)
	b.SetBytes(int64(len(payload)))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := p.Send(ctx, message.NewMessage(topic, payload)); err != nil {
			b.Fatal(err)
		}
	}
}

// benchProducer starts a broker in this process and returns a producer (no retries) that
// has sent one message to topic, so routes and connections exist before timing starts.
// Everything is closed when the benchmark ends.
func benchProducer(b *testing.B, topic string) *Producer {
	b.Helper()
	c := testutil.StartCluster(b)
	cl, err := New(WithNameServers(c.NamesrvAddr))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cl.Close() })
	p, err := cl.NewProducer("BenchPG", WithRetries(0))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = p.Close() })
	if _, err := p.Send(context.Background(), message.NewMessage(topic, []byte("warm up"))); err != nil {
		b.Fatal(err)
	}
	return p
}
