package dbtx

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/client"
	"github.com/ferrymq/ferry/internal/testkit"
	"github.com/ferrymq/ferry/message"
)

// The crash test of the outbox and the inbox: a producer process writes orders through
// the outbox and a consumer process ships them through the inbox, each in its own SQLite
// file, while the test SIGKILLs them at random points and starts them again. At the end
// every order the producer's database holds was shipped exactly once, and nothing else
// was: no business change lost, none repeated, whatever the kills cut (the database
// commit and END_TRANSACTION, the business change and the consumer's offset commit).

// The child processes are this test binary run again with crashChildEnv set to its role;
// TestMain hands them to runCrashChild instead of the tests.
const (
	crashChildEnv = "FERRY_DBTX_CRASH_CHILD"
	crashNamesrv  = "FERRY_DBTX_CRASH_NAMESRV"
	crashDB       = "FERRY_DBTX_CRASH_DB"
	crashOrders   = 400 // orders the producer makes in all
	crashTopic    = "CrashOrders"
	crashPGroup   = "crash-pg"
	crashCGroup   = "crash-cg"
)

// openCrashDB opens a child's SQLite file.
func openCrashDB(path string) (*sql.DB, error) {
	return sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(20000)&_pragma=journal_mode(WAL)&_txlock=immediate")
}

// runCrashChild runs the role named by crashChildEnv until it is killed (the producer
// stops sending after crashOrders orders but goes on answering check-backs) and returns
// the process's exit status.
func runCrashChild() int {
	ctx := context.Background()
	db, err := openCrashDB(os.Getenv(crashDB))
	if err == nil {
		switch os.Getenv(crashChildEnv) {
		case "producer":
			err = crashProducer(ctx, db)
		case "consumer":
			err = crashConsumer(ctx, db)
		default:
			err = errors.New("unknown role")
		}
	}
	fmt.Fprintln(os.Stderr, "crash child:", err)
	return 1
}

// crashProducer makes orders 0..crashOrders-1, each an orders row and a committed
// message in one outbox transaction, continuing after the last order its database holds.
func crashProducer(ctx context.Context, db *sql.DB) error {
	if _, err := db.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS orders (id INTEGER PRIMARY KEY)"); err != nil {
		return err
	}
	ob, err := NewOutbox(ctx, db, OutboxOptions{RollbackAfter: 2 * time.Second})
	if err != nil {
		return err
	}
	cl, err := client.New(client.WithNameServers(os.Getenv(crashNamesrv)))
	if err != nil {
		return err
	}
	tp, err := cl.NewTransactionProducer(crashPGroup, ob.Checker())
	if err != nil {
		return err
	}
	for {
		var next int
		if err := db.QueryRowContext(ctx, "SELECT COALESCE(MAX(id), -1) + 1 FROM orders").Scan(&next); err != nil {
			return err
		}
		if next >= crashOrders {
			select {} // answer check-backs until killed
		}
		msg := message.NewMessage(crashTopic, []byte(strconv.Itoa(next)))
		_, _ = ob.Send(ctx, tp, msg, func(ctx context.Context, tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, "INSERT INTO orders (id) VALUES (?)", next)
			return err
		}) // a failure is settled by the check-back, or the order is made again
	}
}

// crashConsumer ships every order it receives: a shipments row, applied once through the
// inbox. shipments has no key, so a repeated change would show as a second row.
func crashConsumer(ctx context.Context, db *sql.DB) error {
	if _, err := db.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS shipments (order_id INTEGER NOT NULL)"); err != nil {
		return err
	}
	in, err := NewInbox(ctx, db, InboxOptions{Group: crashCGroup})
	if err != nil {
		return err
	}
	cl, err := client.New(client.WithNameServers(os.Getenv(crashNamesrv)))
	if err != nil {
		return err
	}
	pc, err := cl.NewPushConsumer(crashCGroup, crashTopic, "*", in.ConsumeFunc(
		func(ctx context.Context, tx *sql.Tx, m *client.MessageExt) error {
			_, err := tx.ExecContext(ctx, "INSERT INTO shipments (order_id) VALUES (?)", string(m.Body))
			return err
		}, nil), client.WithConsumeFrom(client.ConsumeFromFirstOffset))
	if err != nil {
		return err
	}
	if err := pc.Start(ctx); err != nil {
		return err
	}
	select {} // until killed
}

// crashProc is a running child.
type crashProc struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// startCrashChild starts role on the cluster's name server with its database at dbPath;
// its output goes to the test log when it exits.
func startCrashChild(t *testing.T, role, namesrv, dbPath string) *crashProc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+role, crashNamesrv+"="+namesrv, crashDB+"="+dbPath)
	out, err := os.Create(dbPath + ".log")
	require.NoError(t, err)
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(t, cmd.Start())
	p := &crashProc{cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		_ = out.Close()
		close(p.done)
	}()
	t.Cleanup(func() { p.kill() })
	return p
}

// kill SIGKILLs the child and waits for it to be gone.
func (p *crashProc) kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

// countRows counts a table's rows (0 while the table does not exist yet).
func countRows(db *sql.DB, table string) int {
	var n int
	if err := db.QueryRow("SELECT COUNT(*) FROM " + table).Scan(&n); err != nil {
		return 0
	}
	return n
}

func TestOutboxAndInboxSurviveKills(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes; -short")
	}
	c := startBroker(t)
	newClient(t, c, crashTopic)
	dir := t.TempDir()
	pPath, cPath := filepath.Join(dir, "producer.db"), filepath.Join(dir, "consumer.db")
	pdb, err := openCrashDB(pPath)
	require.NoError(t, err)
	t.Cleanup(func() { _ = pdb.Close() })
	cdb, err := openCrashDB(cPath)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cdb.Close() })

	// Rounds: both run until the producer has made a few more orders and the consumer
	// shipped a few more (or the producer is done), then one or both are killed.
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	var prod, cons *crashProc
	for round := range 8 {
		if prod == nil {
			prod = startCrashChild(t, "producer", c.NamesrvAddr, pPath)
		}
		if cons == nil {
			cons = startCrashChild(t, "consumer", c.NamesrvAddr, cPath)
		}
		made, shipped := countRows(pdb, "orders"), countRows(cdb, "shipments")
		wantMade, wantShipped := min(made+5+rng.IntN(20), crashOrders), shipped+1+rng.IntN(10)
		testkit.Eventually(t, 60*time.Second, func() bool {
			return countRows(pdb, "orders") >= wantMade && (countRows(cdb, "shipments") >= wantShipped || countRows(cdb, "shipments") >= countRows(pdb, "orders"))
		}, fmt.Sprintf("round %d: progress to %d orders, %d shipments", round, wantMade, wantShipped))
		switch rng.IntN(3) {
		case 0:
			prod.kill()
			prod = nil
		case 1:
			cons.kill()
			cons = nil
		default:
			prod.kill()
			cons.kill()
			prod, cons = nil, nil
		}
	}
	if prod == nil { // the last ones run until the test's cleanup kills them
		startCrashChild(t, "producer", c.NamesrvAddr, pPath)
	}
	if cons == nil {
		startCrashChild(t, "consumer", c.NamesrvAddr, cPath)
	}
	testkit.Eventually(t, 120*time.Second, func() bool {
		return countRows(pdb, "orders") == crashOrders && countRows(cdb, "shipments") >= crashOrders
	}, "every order made and shipped")

	// Exactly once: each order the producer's database holds has one shipment, and there
	// is no other shipment.
	orders := map[int]bool{}
	r, err := pdb.Query("SELECT id FROM orders")
	require.NoError(t, err)
	for r.Next() {
		var id int
		require.NoError(t, r.Scan(&id))
		orders[id] = true
	}
	require.NoError(t, r.Err())
	require.NoError(t, r.Close())
	shipments := map[int]int{}
	r, err = cdb.Query("SELECT order_id FROM shipments")
	require.NoError(t, err)
	for r.Next() {
		var id int
		require.NoError(t, r.Scan(&id))
		shipments[id]++
	}
	require.NoError(t, r.Err())
	require.NoError(t, r.Close())
	require.Len(t, orders, crashOrders)
	for id := range crashOrders {
		require.True(t, orders[id], "order %d made", id)
		require.Equal(t, 1, shipments[id], "order %d shipped once", id)
	}
	require.Len(t, shipments, crashOrders, "nothing shipped that was not ordered")
}
