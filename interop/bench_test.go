package interop

import (
	"context"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/ferrymq/ferry/internal/testutil"
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
