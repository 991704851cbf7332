// Command ferry-consumer consumes a topic with Ferry's push consumer (clustering: start
// several and they share the queues) until interrupted or idle.
//
//	cd examples && go run ./ferry-consumer -topic FerryExample
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sync/atomic"
	"time"

	"github.com/ferrymq/ferry/client"
)

func main() {
	namesrv := flag.String("namesrv", "127.0.0.1:9876", "name server address")
	topic := flag.String("topic", "FerryExample", "topic")
	group := flag.String("group", "example-consumer", "consumer group")
	idle := flag.Duration("idle", 5*time.Second, "stop after this long without a message")
	flag.Parse()
	if err := run(*namesrv, *topic, *group, *idle); err != nil {
		fmt.Fprintln(os.Stderr, "ferry-consumer:", err)
		os.Exit(1)
	}
}

func run(namesrv, topic, group string, idle time.Duration) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	c, err := client.New(client.WithNameServers(namesrv))
	if err != nil {
		return err
	}
	defer func() { _ = c.Close() }()
	var count, last atomic.Int64
	last.Store(time.Now().UnixNano())
	pc, err := c.NewPushConsumer(group, topic, "*", func(_ context.Context, msgs []*client.MessageExt) client.ConsumeResult {
		for _, m := range msgs {
			if count.Add(1) <= 5 {
				fmt.Printf("queue %d offset %d tags %q: %s\n", m.Queue.QueueID, m.QueueOffset, m.Tags(), m.Body)
			}
		}
		last.Store(time.Now().UnixNano())
		return client.ConsumeSuccess // ConsumeRetryLater would redeliver through the retry topic
	}, client.WithConsumeFrom(client.ConsumeFromFirstOffset))
	if err != nil {
		return err
	}
	if err := pc.Start(ctx); err != nil {
		return err
	}
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for ctx.Err() == nil && time.Since(time.Unix(0, last.Load())) < idle {
		select {
		case <-ctx.Done():
		case <-t.C:
		}
	}
	if err := pc.Close(); err != nil { // commits the offsets of what was consumed
		return err
	}
	fmt.Printf("consumed %d messages\n", count.Load())
	return nil
}
