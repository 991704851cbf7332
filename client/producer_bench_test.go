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
	c := testutil.StartCluster(b)
	cl, err := New(WithNameServers(c.NamesrvAddr))
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = cl.Close() }()
	p, err := cl.NewProducer("BenchPG", WithRetries(0))
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = p.Close() }()
	ctx := context.Background()
	const topic = "BenchSendAsync"
	if _, err := p.Send(ctx, message.NewMessage(topic, []byte("warm up"))); err != nil {
		b.Fatal(err)
	}
	payload := make([]byte, 1024)
	window := make(chan struct{}, 256)
	var wg sync.WaitGroup
	var failed sync.Once
	b.SetBytes(int64(len(payload)))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
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
	c := testutil.StartCluster(b)
	cl, err := New(WithNameServers(c.NamesrvAddr))
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = cl.Close() }()
	p, err := cl.NewProducer("BenchPG", WithRetries(0))
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = p.Close() }()
	ctx := context.Background()
	const topic = "BenchSendSync"
	if _, err := p.Send(ctx, message.NewMessage(topic, []byte("warm up"))); err != nil {
		b.Fatal(err)
	}
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
