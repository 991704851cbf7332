// Command ferry-producer sends messages with Ferry's own Go client: one synchronous send
// with tags, keys and a property, a burst of asynchronous sends (batched by the client),
// and an explicit batch.
//
//	go run ./cmd/ferry standalone                 # in one terminal, from the repository root
//	cd examples && go run ./ferry-producer        # in another
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
	topic := flag.String("topic", "FerryExample", "topic")
	n := flag.Int("n", 1000, "asynchronous sends")
	flag.Parse()
	if err := run(*namesrv, *topic, *n); err != nil {
		fmt.Fprintln(os.Stderr, "ferry-producer:", err)
		os.Exit(1)
	}
}

func run(namesrv, topic string, n int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.New(client.WithNameServers(namesrv))
	if err != nil {
		return err
	}
	defer func() { _ = c.Close() }()
	p, err := c.NewProducer("example-producer")
	if err != nil {
		return err
	}
	defer func() { _ = p.Close() }()

	// One synchronous send: Send returns once the broker stored the message.
	m := message.NewMessage(topic, []byte("order 42 created"))
	m.SetTags("created")
	m.SetKeys("order-42")
	m.SetProperty("region", "eu")
	res, err := p.Send(ctx, m)
	if err != nil {
		return err
	}
	fmt.Printf("sent %s to %s queue %d offset %d\n", res.MsgID, res.BrokerName, res.QueueID, res.QueueOffset)

	// Many asynchronous sends: the client batches them while requests are in flight.
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failed int
	start := time.Now()
	for i := range n {
		wg.Add(1)
		p.SendAsync(ctx, message.NewMessage(topic, fmt.Appendf(nil, "event %d", i)), func(_ client.SendResult, err error) {
			defer wg.Done()
			if err != nil {
				mu.Lock()
				failed++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	fmt.Printf("%d asynchronous sends in %v, %d failed\n", n, time.Since(start).Round(time.Millisecond), failed)

	// An explicit batch: one request, one result per message.
	rs, err := p.SendBatch(ctx, []*message.Message{
		message.NewMessage(topic, []byte("batch 1")), message.NewMessage(topic, []byte("batch 2"))})
	if err != nil {
		return err
	}
	fmt.Printf("batch stored at offsets %d and %d of queue %d\n", rs[0].QueueOffset, rs[1].QueueOffset, rs[0].QueueID)
	return nil
}
