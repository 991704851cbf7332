// Command ferry-tx-messages sends several messages, to two topics, as one transaction
// with Ferry's transactional producer: an order's "paid" event and its "ship" request
// become visible together when the local transaction commits, or not at all. The broker
// asks the checker once per transaction when its outcome is unknown.
//
//	cd examples && go run ./ferry-tx-messages
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
	flag.Parse()
	if err := run(*namesrv); err != nil {
		fmt.Fprintln(os.Stderr, "ferry-tx-messages:", err)
		os.Exit(1)
	}
}

func run(namesrv string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.New(client.WithNameServers(namesrv))
	if err != nil {
		return err
	}
	defer func() { _ = c.Close() }()
	// Both topics must be on one broker group: a transaction is committed by one broker.
	for _, topic := range []string{"FerryPayments", "FerryShipments"} {
		if err := c.Admin().CreateTopic(ctx, client.TopicConfig{Name: topic}, client.Target{}); err != nil {
			return err
		}
	}
	// The checker gets the transaction's messages back (client.TransactionMessages) and
	// answers for all of them at once; here nothing stays unknown, so it rolls back.
	checker := client.TransactionCheckerFunc(func(context.Context, *client.MessageExt) client.TransactionState {
		return client.TransactionRollback
	})
	tp, err := c.NewTransactionProducer("example-tx-messages", checker)
	if err != nil {
		return err
	}
	defer func() { _ = tp.Close() }()
	for order := range 3 {
		msgs := []*message.Message{
			message.NewMessage("FerryPayments", fmt.Appendf(nil, "order %d paid", order)),
			message.NewMessage("FerryShipments", fmt.Appendf(nil, "ship order %d", order)),
		}
		res, err := tp.SendMessagesInTransaction(ctx, msgs,
			func(context.Context, []*message.Message, client.MessagesTransactionResult) client.TransactionState {
				if order == 1 {
					return client.TransactionRollback // the local work failed: neither message is seen
				}
				return client.TransactionCommit
			})
		if err != nil {
			return err
		}
		fmt.Printf("order %d: %s (%d messages)\n", order, res.State, len(res.Messages))
	}
	return nil
}
