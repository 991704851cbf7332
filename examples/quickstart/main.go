// Command quickstart sends ten messages to a running Ferry with the official RocketMQ Go
// client and consumes them back.
//
//	go run ./cmd/ferry standalone          # in one terminal, from the repository root
//	cd examples && go run ./quickstart     # in another
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"
)

func main() {
	namesrv := flag.String("namesrv", "127.0.0.1:9876", "name server address")
	topic := flag.String("topic", "QuickStart", "topic to use")
	count := flag.Int("n", 10, "messages to send")
	flag.Parse()
	rlog.SetLogLevel("error")
	if err := run(*namesrv, *topic, *count); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

func run(namesrv, topic string, n int) error {
	resolver := primitive.NewPassthroughResolver([]string{namesrv})
	p, err := rocketmq.NewProducer(producer.WithNsResolver(resolver), producer.WithGroupName("quickstart-producer"))
	if err != nil {
		return err
	}
	if err := p.Start(); err != nil {
		return err
	}
	defer func() { _ = p.Shutdown() }()
	for i := range n {
		msg := primitive.NewMessage(topic, []byte(fmt.Sprintf("hello ferry %d", i)))
		msg.WithTag("greeting")
		res, err := p.SendSync(context.Background(), msg)
		if err != nil {
			return fmt.Errorf("send: %w", err)
		}
		fmt.Printf("sent %s to queue %d at offset %d\n", res.MsgID, res.MessageQueue.QueueId, res.QueueOffset)
	}

	var got atomic.Int64
	done := make(chan struct{})
	c, err := rocketmq.NewPushConsumer(consumer.WithNsResolver(resolver), consumer.WithGroupName("quickstart-consumer"),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	if err != nil {
		return err
	}
	err = c.Subscribe(topic, consumer.MessageSelector{Type: consumer.TAG, Expression: "greeting"},
		func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			for _, m := range msgs {
				fmt.Printf("received %q (queue %d, offset %d)\n", m.Body, m.Queue.QueueId, m.QueueOffset)
				if got.Add(1) == int64(n) {
					close(done)
				}
			}
			return consumer.ConsumeSuccess, nil
		})
	if err != nil {
		return err
	}
	if err := c.Start(); err != nil {
		return err
	}
	defer func() { _ = c.Shutdown() }()
	select {
	case <-done:
		fmt.Println("done")
		return nil
	case <-time.After(60 * time.Second):
		return fmt.Errorf("received %d of %d messages within 60 s", got.Load(), n)
	}
}
