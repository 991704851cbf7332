package client_test

import (
	"context"
	"fmt"
	"os"
	"os/signal"

	"github.com/ferrymq/ferry/client"
	"github.com/ferrymq/ferry/message"
)

// A producer sending synchronously and asynchronously. (Not run: it needs a name server
// and a broker on 127.0.0.1:9876, e.g. `go run ./cmd/ferry standalone`.)
func ExampleProducer() {
	c, err := client.New(client.WithNameServers("127.0.0.1:9876"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = c.Close() }()
	p, err := c.NewProducer("example-group")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = p.Close() }()

	msg := message.NewMessage("example-topic", []byte("hello"))
	msg.SetTags("greeting")
	msg.SetKeys("order-42")
	res, err := p.Send(context.Background(), msg)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("stored as", res.MsgID, "in queue", res.QueueID, "at offset", res.QueueOffset)

	done := make(chan struct{})
	p.SendAsync(context.Background(), message.NewMessage("example-topic", []byte("later")), func(r client.SendResult, err error) {
		defer close(done)
		if err != nil {
			fmt.Println(err)
		}
	})
	<-done
}

// Ordered messages: the same sharding key always goes to the same queue, in order.
func ExampleHashSelector() {
	c, err := client.New(client.WithNameServers("127.0.0.1:9876"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = c.Close() }()
	p, err := c.NewProducer("orders", client.WithSelector(client.HashSelector))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = p.Close() }()
	for _, step := range []string{"created", "paid", "shipped"} {
		msg := message.NewMessage("order-events", []byte(step))
		msg.SetShardingKey("order-42")
		if _, err := p.Send(context.Background(), msg); err != nil {
			fmt.Println(err)
			return
		}
	}
}

// A push consumer in clustering mode: the members of "example-consumers" share the
// topic's queues. (Not run: it needs a name server and a broker on 127.0.0.1:9876.)
func ExamplePushConsumer() {
	c, err := client.New(client.WithNameServers("127.0.0.1:9876"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = c.Close() }()
	pc, err := c.NewPushConsumer("example-consumers", "example-topic", "greeting || farewell",
		func(ctx context.Context, msgs []*client.MessageExt) client.ConsumeResult {
			for _, m := range msgs {
				if err := process(ctx, m); err != nil {
					return client.ConsumeRetryLater // delivered again later, then dead-lettered
				}
			}
			return client.ConsumeSuccess
		},
		client.WithConsumeFrom(client.ConsumeFromFirstOffset),
		client.WithMaxReconsumeTimes(3))
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := pc.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	<-ctx.Done() // consume until interrupted

	// Close commits the consumed offsets and leaves the group.
	if err := pc.Close(); err != nil {
		fmt.Println(err)
	}
}

// process stands for the application's work.
func process(_ context.Context, m *client.MessageExt) error {
	fmt.Println(m.MsgID, m.Tags(), m.Keys(), string(m.Body))
	return nil
}
