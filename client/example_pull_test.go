package client_test

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"time"

	"github.com/ferrymq/ferry/client"
)

// A lite-pull consumer in a consumer group, committing by hand after each batch is
// processed. (Not run: it needs a name server and a broker on 127.0.0.1:9876.)
func ExampleLitePullConsumer() {
	c, err := client.New(client.WithNameServers("127.0.0.1:9876"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = c.Close() }()
	lc, err := c.NewLitePullConsumer("example-pullers",
		client.WithConsumeFrom(client.ConsumeFromFirstOffset), client.WithManualCommit())
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := lc.Subscribe("example-topic", "*"); err != nil {
		fmt.Println(err)
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := lc.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = lc.Close() }()
	for ctx.Err() == nil {
		msgs := lc.Poll(ctx, time.Second)
		for _, m := range msgs {
			_ = process(ctx, m)
		}
		if len(msgs) > 0 {
			if err := lc.Commit(ctx); err != nil {
				fmt.Println(err)
			}
		}
	}
}

// Reading one queue from an explicit offset with the low-level pull consumer.
func ExamplePullConsumer() {
	c, err := client.New(client.WithNameServers("127.0.0.1:9876"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = c.Close() }()
	pc, err := c.NewPullConsumer("example-pullers")
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	queues, err := pc.FetchQueues(ctx, "example-topic")
	if err != nil {
		fmt.Println(err)
		return
	}
	mq := queues[0]
	offset, err := pc.CommittedOffset(ctx, mq) // −1: the group has none
	if err != nil {
		fmt.Println(err)
		return
	}
	offset = max(offset, 0)
	for {
		res, err := pc.PullWait(ctx, mq, offset, 32, "*", 5*time.Second)
		if err != nil {
			fmt.Println(err)
			return
		}
		for _, m := range res.Messages {
			_ = process(ctx, m)
		}
		offset = res.NextOffset
		if res.Status == client.PullNoNewMessage {
			break // caught up
		}
	}
	if err := pc.CommitOffset(ctx, mq, offset); err != nil {
		fmt.Println(err)
	}
}
