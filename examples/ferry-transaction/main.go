// Command ferry-transaction ties messages to a local transaction with Ferry's
// transactional producer: even orders commit, odd ones roll back, and the checker answers
// the broker's check-back for transactions left unknown.
//
//	cd examples && go run ./ferry-transaction
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/ferrymq/ferry/client"
	"github.com/ferrymq/ferry/message"
)

func main() {
	namesrv := flag.String("namesrv", "127.0.0.1:9876", "name server address")
	topic := flag.String("topic", "FerryOrders", "topic")
	flag.Parse()
	if err := run(*namesrv, *topic); err != nil {
		fmt.Fprintln(os.Stderr, "ferry-transaction:", err)
		os.Exit(1)
	}
}

// decide is the "local transaction": orders with an even number are saved.
func decide(order int) client.TransactionState {
	if order%2 == 0 {
		return client.TransactionCommit
	}
	return client.TransactionRollback
}

func run(namesrv, topic string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.New(client.WithNameServers(namesrv))
	if err != nil {
		return err
	}
	defer func() { _ = c.Close() }()
	// The checker answers the broker when a transaction's outcome is unknown (the local
	// transaction said so, or a producer died before ending it).
	checker := client.TransactionCheckerFunc(func(_ context.Context, m *client.MessageExt) client.TransactionState {
		order, err := strconv.Atoi(m.Property("order"))
		if err != nil {
			return client.TransactionRollback
		}
		return decide(order)
	})
	tp, err := c.NewTransactionProducer("example-tx-producer", checker)
	if err != nil {
		return err
	}
	defer func() { _ = tp.Close() }()
	for order := range 4 {
		m := message.NewMessage(topic, fmt.Appendf(nil, "order %d paid", order))
		m.SetProperty("order", strconv.Itoa(order))
		res, err := tp.SendInTransaction(ctx, m, func(context.Context, *message.Message, client.SendResult) client.TransactionState {
			return decide(order)
		})
		if err != nil {
			return err
		}
		fmt.Printf("order %d: %s\n", order, res.State)
	}
	return nil
}
