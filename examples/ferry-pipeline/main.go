// Command ferry-pipeline runs an exactly-once consume-transform-produce loop with
// client/pipeline: it reads lines from FerryLines, splits them into words and sends one
// message per word to FerryWords; each batch of words is sent in one transaction with
// the lines' consumer offset, so each line's words appear exactly once even when the
// program is killed and started again (or runs twice at once) at any moment.
//
//	cd examples && go run ./ferry-pipeline            # sends 100 lines, transforms them, prints the counts
//	cd examples && go run ./ferry-pipeline -send=0    # only transforms what is there
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/ferrymq/ferry/client"
	"github.com/ferrymq/ferry/client/pipeline"
	"github.com/ferrymq/ferry/message"
)

func main() {
	namesrv := flag.String("namesrv", "127.0.0.1:9876", "name server address")
	send := flag.Int("send", 100, "lines to send before transforming")
	runFor := flag.Duration("for", 10*time.Second, "how long to run the pipeline")
	flag.Parse()
	if err := run(*namesrv, *send, *runFor); err != nil {
		fmt.Fprintln(os.Stderr, "ferry-pipeline:", err)
		os.Exit(1)
	}
}

func run(namesrv string, send int, runFor time.Duration) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	c, err := client.New(client.WithNameServers(namesrv))
	if err != nil {
		return err
	}
	defer func() { _ = c.Close() }()
	// Input and output must be on one broker group: a transaction is committed by one.
	for _, topic := range []string{"FerryLines", "FerryWords"} {
		if err := c.Admin().CreateTopic(ctx, client.TopicConfig{Name: topic}, client.Target{}); err != nil {
			return err
		}
	}
	if send > 0 {
		p, err := c.NewProducer("example-lines")
		if err != nil {
			return err
		}
		for i := range send {
			line := fmt.Sprintf("the ferry crosses the river %d times", i%3+1)
			if _, err := p.Send(ctx, message.NewMessage("FerryLines", []byte(line))); err != nil {
				_ = p.Close()
				return err
			}
		}
		if err := p.Close(); err != nil {
			return err
		}
	}
	split := func(_ context.Context, in *client.MessageExt) ([]*message.Message, error) {
		var out []*message.Message
		for _, w := range strings.Fields(string(in.Body)) {
			m := message.NewMessage("FerryWords", []byte(w))
			m.SetKeys(w)
			out = append(out, m)
		}
		return out, nil
	}
	p, err := pipeline.New(c, pipeline.Options{Group: "example-word-split", Input: "FerryLines", Transform: split})
	if err != nil {
		return err
	}
	runCtx, cancel := context.WithTimeout(ctx, runFor)
	defer cancel()
	if err := p.Run(runCtx); err != nil {
		return err
	}
	st := p.Stats()
	fmt.Printf("%d lines -> %d words in %d transactions (%d conflicts, %d retried)\n",
		st.Inputs, st.Outputs, st.Transactions, st.Conflicts, st.Failures)
	return nil
}
