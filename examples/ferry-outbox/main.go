// Command ferry-outbox saves orders in a SQLite database and announces each with a
// transactional message, through a transactional outbox (client/dbtx): the order, the
// outbox row with the message id, and the message commit together or not at all. An
// order the database refuses (here: a negative amount) rolls its message back. If the
// program died between the database commit and the end of the transaction, any producer
// of the group would commit the message from the outbox table when the broker checks
// back. Consume the orders with ferry-inbox.
//
//	cd examples && go run ./ferry-outbox -db shop.db
package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	_ "modernc.org/sqlite" // the database/sql driver "sqlite"

	"github.com/ferrymq/ferry/client"
	"github.com/ferrymq/ferry/client/dbtx"
	"github.com/ferrymq/ferry/message"
)

func main() {
	namesrv := flag.String("namesrv", "127.0.0.1:9876", "name server address")
	topic := flag.String("topic", "FerryOrders", "topic")
	dbPath := flag.String("db", "ferry-shop.db", "SQLite database file (created when missing)")
	flag.Parse()
	if err := run(*namesrv, *topic, *dbPath); err != nil {
		fmt.Fprintln(os.Stderr, "ferry-outbox:", err)
		os.Exit(1)
	}
}

// errNegative is the business's refusal.
var errNegative = errors.New("negative amount")

func run(namesrv, topic, dbPath string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// A busy timeout and immediate transactions let concurrent writers wait for each
	// other; WAL lets readers run beside them.
	db, err := sql.Open("sqlite", "file:"+dbPath+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_txlock=immediate")
	if err != nil {
		return err
	}
	defer func() { _ = db.Close() }()
	if _, err := db.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS orders (id INTEGER PRIMARY KEY AUTOINCREMENT, item TEXT NOT NULL, amount INTEGER NOT NULL)"); err != nil {
		return err
	}
	ob, err := dbtx.NewOutbox(ctx, db, dbtx.OutboxOptions{}) // table ferry_outbox
	if err != nil {
		return err
	}
	c, err := client.New(client.WithNameServers(namesrv))
	if err != nil {
		return err
	}
	defer func() { _ = c.Close() }()
	// The outbox's checker answers the broker's check-backs from the table alone.
	tp, err := c.NewTransactionProducer("example-outbox-producer", ob.Checker())
	if err != nil {
		return err
	}
	defer func() { _ = tp.Close() }()
	for _, o := range []struct {
		item   string
		amount int
	}{{"kettle", 35}, {"teapot", -1}, {"cups", 12}} {
		m := message.NewMessage(topic, fmt.Appendf(nil, "%s %d", o.item, o.amount))
		m.SetKeys(o.item)
		res, err := ob.Send(ctx, tp, m, func(ctx context.Context, tx *sql.Tx) error {
			if o.amount < 0 {
				return errNegative
			}
			_, err := tx.ExecContext(ctx, "INSERT INTO orders (item, amount) VALUES (?, ?)", o.item, o.amount)
			return err
		})
		switch {
		case errors.Is(err, errNegative):
			fmt.Printf("%s: refused (%v); message %s %s\n", o.item, err, res.MsgID, res.State)
		case err != nil:
			return err
		default:
			fmt.Printf("%s: saved; message %s %s\n", o.item, res.MsgID, res.State)
		}
	}
	// Rows must outlive the broker's check-backs of their messages; a day is plenty.
	n, err := ob.Purge(ctx, 24*time.Hour)
	if err != nil {
		return err
	}
	fmt.Printf("purged %d outbox rows older than a day\n", n)
	return nil
}
