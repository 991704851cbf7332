// Command ferry-orderly sends the events of a few orders with a sharding key (each order's
// events go to one queue, in order) and consumes them with an orderly consumer, which
// handles each queue one message at a time while holding the queue's lock.
//
//	cd examples && go run ./ferry-orderly
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/ferrymq/ferry/client"
	"github.com/ferrymq/ferry/message"
)

func main() {
	namesrv := flag.String("namesrv", "127.0.0.1:9876", "name server address")
	topic := flag.String("topic", "FerryOrderEvents", "topic")
	flag.Parse()
	if err := run(*namesrv, *topic); err != nil {
		fmt.Fprintln(os.Stderr, "ferry-orderly:", err)
		os.Exit(1)
	}
}

func run(namesrv, topic string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := client.New(client.WithNameServers(namesrv))
	if err != nil {
		return err
	}
	defer func() { _ = c.Close() }()
	p, err := c.NewProducer("example-orderly-producer", client.WithSelector(client.HashSelector))
	if err != nil {
		return err
	}
	defer func() { _ = p.Close() }()
	orders := []string{"order-1", "order-2", "order-3"}
	steps := []string{"created", "paid", "shipped", "delivered"}
	for _, step := range steps {
		for _, o := range orders {
			m := message.NewMessage(topic, []byte(o+" "+step))
			m.SetShardingKey(o)
			if _, err := p.Send(ctx, m); err != nil {
				return err
			}
		}
	}
	want := len(orders) * len(steps)
	var mu sync.Mutex
	seen := 0
	done := make(chan struct{})
	pc, err := c.NewPushConsumer("example-orderly-consumer", topic, "*",
		func(_ context.Context, msgs []*client.MessageExt) client.ConsumeResult {
			mu.Lock()
			defer mu.Unlock()
			for _, m := range msgs {
				fmt.Printf("queue %d: %s\n", m.Queue.QueueID, m.Body)
				if seen++; seen == want {
					close(done)
				}
			}
			return client.ConsumeSuccess
		}, client.WithOrderly(), client.WithConsumeFrom(client.ConsumeFromFirstOffset))
	if err != nil {
		return err
	}
	if err := pc.Start(ctx); err != nil {
		return err
	}
	select {
	case <-done:
	case <-ctx.Done():
		return fmt.Errorf("consumed %d of %d events: %w", seen, want, ctx.Err())
	}
	return pc.Close()
}
