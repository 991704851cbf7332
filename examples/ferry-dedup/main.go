// Command ferry-dedup sends without duplicates: it creates a topic with the dedupWindow
// attribute (the broker answers a send whose UNIQ_KEY it stored within the window with
// the first answer, storing nothing), and sends with an idempotent producer, which keeps
// a message's id across its own retries and on the message, so that the application
// resending the same message after an error is recognised too. Here the application
// sends each message twice on purpose; the broker stores it once.
//
//	cd examples && go run ./ferry-dedup
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/ferrymq/ferry/client"
	"github.com/ferrymq/ferry/message"
)

func main() {
	namesrv := flag.String("namesrv", "127.0.0.1:9876", "name server address")
	topic := flag.String("topic", "FerryDedup", "topic (created, or updated, with the window)")
	window := flag.Duration("window", 10*time.Minute, "dedupWindow of the topic")
	flag.Parse()
	if err := run(*namesrv, *topic, *window); err != nil {
		fmt.Fprintln(os.Stderr, "ferry-dedup:", err)
		os.Exit(1)
	}
}

func run(namesrv, topic string, window time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.New(client.WithNameServers(namesrv))
	if err != nil {
		return err
	}
	defer func() { _ = c.Close() }()
	// The same as: ferryctl topic create -t FerryDedup --attr dedupWindow=10m
	err = c.Admin().CreateTopic(ctx, client.TopicConfig{Name: topic, ReadQueues: 4, WriteQueues: 4,
		Attributes: map[string]string{"dedupWindow": window.String()}}, client.Target{})
	if err != nil {
		return err
	}
	p, err := c.NewProducer("example-dedup-producer", client.WithIdempotence())
	if err != nil {
		return err
	}
	defer func() { _ = p.Close() }()
	for i := range 3 {
		m := message.NewMessage(topic, fmt.Appendf(nil, "payment %d", i))
		first, err := p.Send(ctx, m) // the producer writes the message id into m
		if err != nil {
			return err
		}
		// An application that did not get an answer sends the same message again; with
		// the window the broker answers with the first send's result.
		again, err := p.Send(ctx, m)
		if err != nil {
			return err
		}
		fmt.Printf("payment %d: id %s, stored at %s; resent: stored at %s (same: %t)\n",
			i, first.MsgID, first.OffsetMsgID, again.OffsetMsgID, first.OffsetMsgID == again.OffsetMsgID)
	}
	return nil
}
