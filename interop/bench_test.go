package interop

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/ferrymq/ferry/testutil"
)

type commitListener struct{}

func (commitListener) ExecuteLocalTransaction(*primitive.Message) primitive.LocalTransactionState {
	return primitive.CommitMessageState
}

func (commitListener) CheckLocalTransaction(*primitive.MessageExt) primitive.LocalTransactionState {
	return primitive.CommitMessageState
}

// BenchmarkOfficialClientSend compares plain sync sends with transactional sends that
// commit at once, one official Go producer, 1 KiB bodies, against an in-process broker.
func BenchmarkOfficialClientSend(b *testing.B) {
	c := testutil.StartCluster(b)
	body := make([]byte, 1024)
	resolver := primitive.NewPassthroughResolver([]string{c.NamesrvAddr})
	b.Run("sync", func(b *testing.B) {
		p, err := rocketmq.NewProducer(producer.WithNsResolver(resolver), producer.WithGroupName("bench-pg"),
			producer.WithInstanceName(instance("bench")))
		if err != nil || p.Start() != nil {
			b.Fatal(err)
		}
		defer func() { _ = p.Shutdown() }()
		if _, err := p.SendSync(context.Background(), primitive.NewMessage("BenchSync", body)); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		start := time.Now()
		for range b.N {
			if _, err := p.SendSync(context.Background(), primitive.NewMessage("BenchSync", body)); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
	})
	b.Run("transactional", func(b *testing.B) {
		p, err := rocketmq.NewTransactionProducer(commitListener{}, producer.WithNsResolver(resolver),
			producer.WithGroupName("bench-tx-pg"), producer.WithInstanceName(instance("bench-tx")))
		if err != nil || p.Start() != nil {
			b.Fatal(err)
		}
		defer func() { _ = p.Shutdown() }()
		if _, err := p.SendMessageInTransaction(context.Background(), primitive.NewMessage("BenchTx", body)); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		start := time.Now()
		for range b.N {
			if _, err := p.SendMessageInTransaction(context.Background(), primitive.NewMessage("BenchTx", body)); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
	})
}

// BenchmarkOfficialClientThroughput: 4 official producers sending 1 KiB messages with
// SendSync concurrently (each its own client and connection).
func BenchmarkOfficialClientThroughput(b *testing.B) {
	c := testutil.StartCluster(b)
	resolver := primitive.NewPassthroughResolver([]string{c.NamesrvAddr})
	body := make([]byte, 1024)
	const producers = 4
	ps := make([]rocketmq.Producer, producers)
	for i := range ps {
		p, err := rocketmq.NewProducer(producer.WithNsResolver(resolver), producer.WithGroupName("bench-tp"),
			producer.WithInstanceName(instance("bench-tp")))
		if err != nil || p.Start() != nil {
			b.Fatal(err)
		}
		defer func() { _ = p.Shutdown() }()
		if _, err := p.SendSync(context.Background(), primitive.NewMessage("BenchThroughput", body)); err != nil {
			b.Fatal(err)
		}
		ps[i] = p
	}
	b.ResetTimer()
	start := time.Now()
	done := make(chan error, producers)
	for i := range producers {
		go func() {
			var err error
			for j := i; j < b.N && err == nil; j += producers {
				_, err = ps[i].SendSync(context.Background(), primitive.NewMessage("BenchThroughput", body))
			}
			done <- err
		}()
	}
	for range producers {
		if err := <-done; err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
}

// BenchmarkOfficialClientPullLatency: a push consumer waits in a long poll; each iteration
// sends one message and measures the time until the consumer's handler has it.
func BenchmarkOfficialClientPullLatency(b *testing.B) {
	c := testutil.StartCluster(b)
	resolver := primitive.NewPassthroughResolver([]string{c.NamesrvAddr})
	p, err := rocketmq.NewProducer(producer.WithNsResolver(resolver), producer.WithGroupName("bench-lat-pg"),
		producer.WithInstanceName(instance("bench-lat")))
	if err != nil || p.Start() != nil {
		b.Fatal(err)
	}
	defer func() { _ = p.Shutdown() }()
	// The first message creates the topic; a consumer needs its route to start.
	if _, err := p.SendSync(context.Background(), primitive.NewMessage("BenchLatency", []byte("warm"))); err != nil {
		b.Fatal(err)
	}
	got := make(chan time.Time, 1)
	pc, err := rocketmq.NewPushConsumer(consumer.WithNsResolver(resolver), consumer.WithGroupName("bench-lat-cg"),
		consumer.WithInstance(instance("bench-lat-c")), consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	if err != nil {
		b.Fatal(err)
	}
	err = pc.Subscribe("BenchLatency", consumer.MessageSelector{Type: consumer.TAG, Expression: "*"},
		func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			for range msgs {
				got <- time.Now()
			}
			return consumer.ConsumeSuccess, nil
		})
	if err != nil {
		b.Fatal(err)
	}
	testutil.Eventually(b, 10*time.Second, func() bool {
		_, ok := c.NameServer.Table().TopicRoute("BenchLatency")
		return ok
	}, "auto-created topic registered")
	if err := pc.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = pc.Shutdown() }()
	select {
	case <-got:
	case <-time.After(60 * time.Second):
		b.Fatal("consumer never started")
	}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		if _, err := p.SendSync(context.Background(), primitive.NewMessage("BenchLatency", []byte("x"))); err != nil {
			b.Fatal(err)
		}
		select {
		case t1 := <-got:
			lat = append(lat, t1.Sub(t0))
		case <-time.After(30 * time.Second):
			b.Fatal("message not received")
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}
