// Command ferry-inbox consumes orders (those ferry-outbox sends) into a SQLite database
// exactly once per message, through an idempotent consumer (client/dbtx): the shipment
// row and the inbox row with the message id commit in one database transaction, and a
// message whose id is already in the inbox is skipped. Run it twice with -from-start:
// the second run is delivered every message again and ships nothing.
//
//	cd examples && go run ./ferry-inbox -db shop.db -from-start
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sync/atomic"
	"time"

	_ "modernc.org/sqlite" // the database/sql driver "sqlite"

	"github.com/ferrymq/ferry/client"
	"github.com/ferrymq/ferry/client/dbtx"
)

func main() {
	namesrv := flag.String("namesrv", "127.0.0.1:9876", "name server address")
	topic := flag.String("topic", "FerryOrders", "topic")
	group := flag.String("group", "example-inbox-consumer", "consumer group")
	dbPath := flag.String("db", "ferry-shop.db", "SQLite database file (created when missing)")
	fromStart := flag.Bool("from-start", false, "reset the group's offsets to the first message before consuming")
	idle := flag.Duration("idle", 5*time.Second, "stop after this long without a message")
	flag.Parse()
	if err := run(*namesrv, *topic, *group, *dbPath, *fromStart, *idle); err != nil {
		fmt.Fprintln(os.Stderr, "ferry-inbox:", err)
		os.Exit(1)
	}
}

func run(namesrv, topic, group, dbPath string, fromStart bool, idle time.Duration) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	db, err := sql.Open("sqlite", "file:"+dbPath+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_txlock=immediate")
	if err != nil {
		return err
	}
	defer func() { _ = db.Close() }()
	if _, err := db.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS shipments (msg_id TEXT NOT NULL, order_text TEXT NOT NULL)"); err != nil {
		return err
	}
	in, err := dbtx.NewInbox(ctx, db, dbtx.InboxOptions{Group: group}) // table ferry_inbox
	if err != nil {
		return err
	}
	c, err := client.New(client.WithNameServers(namesrv))
	if err != nil {
		return err
	}
	defer func() { _ = c.Close() }()
	if fromStart {
		if _, err := c.Admin().ResetOffsetByTime(ctx, group, topic, time.Unix(0, 0)); err != nil {
			fmt.Fprintln(os.Stderr, "ferry-inbox: reset offsets (fine on a first run):", err)
		}
	}
	var delivered, shipped, last atomic.Int64
	last.Store(time.Now().UnixNano())
	handle := in.ConsumeFunc(func(ctx context.Context, tx *sql.Tx, m *client.MessageExt) error {
		// Runs only for a message not yet in the inbox, in the transaction that records it.
		_, err := tx.ExecContext(ctx, "INSERT INTO shipments (msg_id, order_text) VALUES (?, ?)", m.MsgID, string(m.Body))
		if err == nil {
			shipped.Add(1)
			fmt.Printf("shipping %q (message %s)\n", m.Body, m.MsgID)
		}
		return err
	}, func(m *client.MessageExt, err error) {
		fmt.Fprintf(os.Stderr, "ferry-inbox: message %s: %v (will be redelivered)\n", m.MsgID, err)
	})
	pc, err := c.NewPushConsumer(group, topic, "*", func(ctx context.Context, msgs []*client.MessageExt) client.ConsumeResult {
		delivered.Add(int64(len(msgs)))
		last.Store(time.Now().UnixNano())
		return handle(ctx, msgs)
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
	if err := pc.Close(); err != nil {
		return err
	}
	// The deliveries not shipped were already in the inbox (or failed, to come again).
	fmt.Printf("%d deliveries, %d shipped\n", delivered.Load(), shipped.Load())
	return nil
}
