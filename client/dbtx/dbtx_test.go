package dbtx

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	_ "modernc.org/sqlite" // the database/sql driver "sqlite"

	"github.com/ferrymq/ferry/client"
	"github.com/ferrymq/ferry/internal/leaktest"
	"github.com/ferrymq/ferry/internal/testkit"
	"github.com/ferrymq/ferry/message"
)

// TestMain checks that nothing leaves a goroutine behind (the database's connection
// opener stops when the test closes it); the in-process broker's netpoll pollers stay.
func TestMain(m *testing.M) {
	if os.Getenv(crashChildEnv) != "" { // a child of TestOutboxAndInboxSurviveKills
		os.Exit(runCrashChild())
	}
	goleak.VerifyTestMain(m, leaktest.Netpoll()...)
}

// openDB opens a new SQLite file in t.TempDir() with the settings the package docs
// recommend, and a business table: applied(id, n) counts how often each id was applied.
func openDB(t *testing.T) *sql.DB {
	t.Helper()
	path := filepath.Join(t.TempDir(), "app.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(20000)&_pragma=journal_mode(WAL)&_txlock=immediate")
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	_, err = db.Exec("CREATE TABLE applied (id TEXT PRIMARY KEY, n INTEGER NOT NULL)")
	require.NoError(t, err)
	return db
}

// apply is a business change: it counts one more application of id.
func apply(id string) TxFunc {
	return func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, "INSERT INTO applied (id, n) VALUES (?, 1) ON CONFLICT(id) DO UPDATE SET n = n + 1", id)
		return err
	}
}

// applied is how often id was applied (committed).
func applied(t *testing.T, db *sql.DB, id string) int {
	t.Helper()
	var n int
	err := db.QueryRow("SELECT n FROM applied WHERE id = ?", id).Scan(&n)
	if errors.Is(err, sql.ErrNoRows) {
		return 0
	}
	require.NoError(t, err)
	return n
}

// rows counts the rows of table.
func rows(t *testing.T, db *sql.DB, table string) int {
	t.Helper()
	var n int
	require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM "+table).Scan(&n))
	return n
}

// ext is a consumed (or checked) message with UNIQ_KEY id, born at born.
func ext(id string, born time.Time) *client.MessageExt {
	m := &client.MessageExt{Message: *message.NewMessage("T", []byte(id)), MsgID: id, BornTime: born}
	m.SetUniqKey(id)
	return m
}

var errBoom = errors.New("boom")

func TestOptionsValidate(t *testing.T) {
	require.NoError(t, OutboxOptions{}.Validate())
	require.NoError(t, InboxOptions{Group: "G"}.Validate())
	for name, err := range map[string]error{
		"outbox table":    OutboxOptions{Table: "a;drop"}.Validate(),
		"outbox dotted":   OutboxOptions{Table: "s.t"}.Validate(),
		"outbox dialect":  OutboxOptions{Dialect: Dialect(7)}.Validate(),
		"outbox negative": OutboxOptions{RollbackAfter: -time.Second}.Validate(),
		"outbox short":    OutboxOptions{RollbackAfter: 10 * time.Millisecond}.Validate(),
		"inbox group":     InboxOptions{}.Validate(),
		"inbox table":     InboxOptions{Group: "G", Table: "1t"}.Validate(),
		"inbox dialect":   InboxOptions{Group: "G", Dialect: -1}.Validate(),
	} {
		require.ErrorIs(t, err, ErrInvalidOptions, name)
	}
	_, err := NewOutbox(context.Background(), nil, OutboxOptions{})
	require.ErrorIs(t, err, ErrInvalidOptions)
	_, err = NewInbox(context.Background(), openDB(t), InboxOptions{Group: "bad group!"})
	require.ErrorIs(t, err, ErrInvalidOptions)
}

// TestDialectStatements pins the SQL of the dialects that are not run here.
func TestDialectStatements(t *testing.T) {
	require.Equal(t, "INSERT INTO t (a, b) VALUES (?, ?) ON CONFLICT DO NOTHING", SQLite.insertIfAbsent("t", "a", "b"))
	require.Equal(t, "INSERT INTO t (a, b) VALUES ($1, $2) ON CONFLICT DO NOTHING", PostgreSQL.insertIfAbsent("t", "a", "b"))
	require.Equal(t, "INSERT IGNORE INTO t (a, b) VALUES (?, ?)", MySQL.insertIfAbsent("t", "a", "b"))
	require.Equal(t, "DELETE FROM t WHERE a < $1 AND b = $2", PostgreSQL.bind("DELETE FROM t WHERE a < ? AND b = ?"))
	require.Equal(t, []string{"CREATE TABLE IF NOT EXISTS t (x BIGINT, INDEX t_created_idx (created_at))"}, MySQL.createTable("t", "x BIGINT"))
	require.Equal(t, []string{"CREATE TABLE IF NOT EXISTS t (x BIGINT)", "CREATE INDEX IF NOT EXISTS t_created_idx ON t (created_at)"},
		PostgreSQL.createTable("t", "x BIGINT"))
	require.Equal(t, "postgresql", PostgreSQL.String())
	require.Equal(t, "Dialect(9)", Dialect(9).String())
}

// TestOutboxLocalAndChecker: the checker answers from the table alone — commit for a
// committed local transaction, unknown for a young one without a row, rollback once it
// is older than RollbackAfter — and a failed, slow or duplicate local transaction leaves
// neither the business change nor the row.
func TestOutboxLocalAndChecker(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	clk := testkit.NewClock(time.Unix(1_800_000_000, 0))
	opts := OutboxOptions{Table: "my_outbox", RollbackAfter: time.Minute, Now: clk.Now}
	ob, err := NewOutbox(ctx, db, opts)
	require.NoError(t, err)
	_, err = NewOutbox(ctx, db, opts)
	require.NoError(t, err, "creating again finds the table")
	require.Equal(t, "my_outbox", ob.Table())
	ck := ob.Checker()
	t0 := clk.Now()

	err = ob.Local(ctx, "PG", "id-1", apply("order-1"))
	require.NoError(t, err)
	require.Equal(t, client.TransactionCommit, StateOf(err))
	require.Equal(t, 1, applied(t, db, "order-1"))
	require.Equal(t, client.TransactionCommit, ck.Check(ctx, ext("id-1", t0)))

	err = ob.Local(ctx, "PG", "id-2", func(ctx context.Context, tx *sql.Tx) error {
		require.NoError(t, apply("order-2")(ctx, tx))
		return errBoom
	})
	require.ErrorIs(t, err, errBoom)
	require.Equal(t, client.TransactionRollback, StateOf(err))
	require.Zero(t, applied(t, db, "order-2"))
	require.Equal(t, client.TransactionUnknown, ck.Check(ctx, ext("id-2", t0)), "young: may still commit")
	clk.Add(time.Minute)
	require.Equal(t, client.TransactionUnknown, ck.Check(ctx, ext("id-2", t0)), "exactly RollbackAfter old")
	clk.Add(time.Millisecond)
	require.Equal(t, client.TransactionRollback, ck.Check(ctx, ext("id-2", t0)))
	require.Equal(t, client.TransactionUnknown, ck.Check(ctx, ext("id-2", time.Time{})), "no born time: never rolled back")

	err = ob.Local(ctx, "PG", "id-3", func(ctx context.Context, tx *sql.Tx) error {
		clk.Add(30 * time.Second) // half of RollbackAfter
		return apply("order-3")(ctx, tx)
	})
	require.ErrorIs(t, err, ErrTooSlow)
	require.Equal(t, client.TransactionRollback, StateOf(err))
	require.Zero(t, applied(t, db, "order-3"))

	err = ob.Local(ctx, "PG", "id-1", apply("order-1"))
	require.Error(t, err, "the id is the primary key")
	require.Equal(t, client.TransactionRollback, StateOf(err))
	require.Equal(t, 1, applied(t, db, "order-1"), "the duplicate's change rolled back")
	require.Equal(t, 1, rows(t, db, "my_outbox"))
	require.Equal(t, client.TransactionUnknown, StateOf(fmt.Errorf("x: %w", ErrCommitUnknown)))

	err = ob.Local(ctx, "PG", "", apply("order-4"))
	require.ErrorIs(t, err, ErrInvalidOptions)
	err = ob.Local(ctx, "PG", strings.Repeat("i", 129), apply("order-4"))
	require.ErrorIs(t, err, ErrInvalidOptions)
	require.Zero(t, applied(t, db, "order-4"))

	clk.Add(time.Minute)
	require.NoError(t, ob.Local(ctx, "PG", "id-5", apply("order-5")))
	n, err := ob.Purge(ctx, 30*time.Second)
	require.NoError(t, err)
	require.EqualValues(t, 1, n, "id-1 is 2m30s old, id-5 new")
	require.Equal(t, client.TransactionRollback, ck.Check(ctx, ext("id-1", t0)), "purged too early: rolled back")
	require.Equal(t, client.TransactionCommit, ck.Check(ctx, ext("id-5", t0)))
	_, err = ob.Purge(ctx, 0)
	require.ErrorIs(t, err, ErrInvalidOptions)
}

// TestOutboxCheckerDatabaseDown: a checker that cannot read the table answers unknown.
func TestOutboxCheckerDatabaseDown(t *testing.T) {
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "down.db"))
	require.NoError(t, err)
	ob, err := NewOutbox(context.Background(), db, OutboxOptions{RollbackAfter: time.Second})
	require.NoError(t, err)
	require.NoError(t, db.Close())
	require.Equal(t, client.TransactionUnknown, ob.Checker().Check(context.Background(), ext("old", time.Unix(0, 0))))
}

// TestInboxHandle: a message is applied once per group, a failed change leaves no row
// (the redelivery applies it), Key chooses the key, Purge deletes a group's old rows.
func TestInboxHandle(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	clk := testkit.NewClock(time.Unix(1_800_000_000, 0))
	in, err := NewInbox(ctx, db, InboxOptions{Group: "CG", Now: clk.Now})
	require.NoError(t, err)
	require.Equal(t, "ferry_inbox", in.Table())
	other, err := NewInbox(ctx, db, InboxOptions{Group: "OtherCG", Now: clk.Now})
	require.NoError(t, err)

	skipped, err := in.Handle(ctx, ext("m1", time.Time{}), apply("a"))
	require.NoError(t, err)
	require.False(t, skipped)
	skipped, err = in.Handle(ctx, ext("m1", time.Time{}), apply("a"))
	require.NoError(t, err)
	require.True(t, skipped)
	require.Equal(t, 1, applied(t, db, "a"))
	skipped, err = other.Handle(ctx, ext("m1", time.Time{}), apply("a"))
	require.NoError(t, err)
	require.False(t, skipped, "another group applies it too")
	require.Equal(t, 2, applied(t, db, "a"))

	skipped, err = in.Handle(ctx, ext("m2", time.Time{}), func(ctx context.Context, tx *sql.Tx) error {
		require.NoError(t, apply("b")(ctx, tx))
		return errBoom
	})
	require.ErrorIs(t, err, errBoom)
	require.False(t, skipped)
	require.Zero(t, applied(t, db, "b"))
	skipped, err = in.Handle(ctx, ext("m2", time.Time{}), apply("b"))
	require.NoError(t, err)
	require.False(t, skipped, "the failed attempt left no row")
	require.Equal(t, 1, applied(t, db, "b"))

	byOrder, err := NewInbox(ctx, db, InboxOptions{Group: "ByOrder", Table: "by_order",
		Key: func(m *client.MessageExt) string { return m.Property("order") }})
	require.NoError(t, err)
	m3, m4 := ext("m3", time.Time{}), ext("m4", time.Time{})
	m3.SetProperty("order", "o-1")
	m4.SetProperty("order", "o-1")
	skipped, err = byOrder.Handle(ctx, m3, apply("c"))
	require.NoError(t, err)
	require.False(t, skipped)
	skipped, err = byOrder.Handle(ctx, m4, apply("c"))
	require.NoError(t, err)
	require.True(t, skipped, "same order, another message id")
	_, err = byOrder.Handle(ctx, ext("m5", time.Time{}), apply("c"))
	require.ErrorIs(t, err, ErrInvalidOptions, "no key")
	long := ext("m6", time.Time{})
	long.SetProperty("order", strings.Repeat("x", 129))
	_, err = byOrder.Handle(ctx, long, apply("c"))
	require.ErrorIs(t, err, ErrInvalidOptions, "key too long")
	require.Equal(t, 1, applied(t, db, "c"))

	clk.Add(time.Hour)
	skipped, err = in.Handle(ctx, ext("m6", time.Time{}), apply("d"))
	require.NoError(t, err)
	require.False(t, skipped)
	n, err := in.Purge(ctx, time.Minute)
	require.NoError(t, err)
	require.EqualValues(t, 2, n, "m1 and m2 of CG; not OtherCG's m1, not the new m6")
	require.Equal(t, 2, rows(t, db, "ferry_inbox"), "OtherCG m1, CG m6")
	skipped, err = in.Handle(ctx, ext("m1", time.Time{}), apply("a"))
	require.NoError(t, err)
	require.False(t, skipped, "purged: applied again")
}

// TestInboxConcurrentDuplicates: deliveries of the same messages running at once apply
// each message exactly once.
func TestInboxConcurrentDuplicates(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	in, err := NewInbox(ctx, db, InboxOptions{Group: "CG"})
	require.NoError(t, err)
	const msgs, copies = 10, 6
	var done atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, msgs*copies)
	start := make(chan struct{})
	for c := range copies {
		for i := range msgs {
			wg.Go(func() {
				<-start
				id := fmt.Sprintf("m%d", (i+c)%msgs)
				skipped, err := in.Handle(ctx, ext(id, time.Time{}), apply(id))
				if err != nil {
					errs <- err
					return
				}
				if !skipped {
					done.Add(1)
				}
			})
		}
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.EqualValues(t, msgs, done.Load(), "one delivery of each message applied it")
	for i := range msgs {
		require.Equal(t, 1, applied(t, db, fmt.Sprintf("m%d", i)))
	}
	require.Equal(t, msgs, rows(t, db, "ferry_inbox"))
}
