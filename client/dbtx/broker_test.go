package dbtx

import (
	"context"
	"database/sql"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/client"
	"github.com/ferrymq/ferry/conf"
	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/testutil"
)

// startBroker starts a name server and a broker that checks unended transactions from
// 300 ms on, every 500 ms, and redelivers retried messages after 100–200 ms.
func startBroker(t *testing.T) *testutil.Cluster {
	t.Helper()
	return testutil.StartCluster(t, testutil.WithBrokerConfig(func(b *conf.BrokerConfig) {
		b.TransactionTimeout = 300 * time.Millisecond
		b.TransactionCheckInterval = 500 * time.Millisecond
		b.DelayLevels = "100ms 100ms 100ms 100ms 100ms 100ms 200ms 200ms 200ms 200ms 200ms 200ms 200ms 200ms 200ms 200ms 200ms 200ms"
	}))
}

// newClient returns a client of c's name server, closed at cleanup (closing twice is
// fine).
func newClient(t *testing.T, c *testutil.Cluster, topics ...string) *client.Client {
	t.Helper()
	cl, err := client.New(client.WithNameServers(c.NamesrvAddr))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, cl.Close()) })
	for _, topic := range topics {
		require.NoError(t, cl.Admin().CreateTopic(context.Background(),
			client.TopicConfig{Name: topic, ReadQueues: 2, WriteQueues: 2}, client.Target{}))
	}
	return cl
}

// bodies collects the bodies a push consumer receives, with how often each came.
type bodies struct {
	mu  sync.Mutex
	got map[string]int
}

func (b *bodies) add(body string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.got == nil {
		b.got = map[string]int{}
	}
	b.got[body]++
}

func (b *bodies) count(body string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.got[body]
}

func (b *bodies) snapshot() map[string]int {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make(map[string]int, len(b.got))
	for k, v := range b.got {
		out[k] = v
	}
	return out
}

// consume starts a push consumer of topic from its first message, with handler, closed
// at cleanup.
func consume(t *testing.T, cl *client.Client, group, topic string, handler client.ConsumeFunc) {
	t.Helper()
	pc, err := cl.NewPushConsumer(group, topic, "*", handler, client.WithConsumeFrom(client.ConsumeFromFirstOffset))
	require.NoError(t, err)
	require.NoError(t, pc.Start(context.Background()))
	t.Cleanup(func() { require.NoError(t, pc.Close()) })
}

// collect consumes topic into a bodies.
func collect(t *testing.T, cl *client.Client, group, topic string) *bodies {
	b := &bodies{}
	consume(t, cl, group, topic, func(_ context.Context, msgs []*client.MessageExt) client.ConsumeResult {
		for _, m := range msgs {
			b.add(string(m.Body))
		}
		return client.ConsumeSuccess
	})
	return b
}

// outboxRow reports whether the outbox holds msgID.
func outboxRow(t *testing.T, db *sql.DB, table, msgID string) bool {
	t.Helper()
	var n int
	require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM "+table+" WHERE msg_id = ?", msgID).Scan(&n))
	return n == 1
}

// TestOutboxSendCommitAndRollback: Send commits the message with the business change and
// the outbox row, and rolls back all three when the business function fails.
func TestOutboxSendCommitAndRollback(t *testing.T) {
	c := startBroker(t)
	ctx := context.Background()
	db := openDB(t)
	ob, err := NewOutbox(ctx, db, OutboxOptions{})
	require.NoError(t, err)
	cl := newClient(t, c, "OutboxOrders")
	tp, err := cl.NewTransactionProducer("OutboxPG", ob.Checker())
	require.NoError(t, err)
	defer func() { require.NoError(t, tp.Close()) }()

	res, err := ob.Send(ctx, tp, message.NewMessage("OutboxOrders", []byte("order-1")), apply("order-1"))
	require.NoError(t, err)
	require.Equal(t, client.TransactionCommit, res.State)
	require.Equal(t, 1, applied(t, db, "order-1"))
	require.True(t, outboxRow(t, db, "ferry_outbox", res.MsgID))

	res, err = ob.Send(ctx, tp, message.NewMessage("OutboxOrders", []byte("order-2")), func(ctx context.Context, tx *sql.Tx) error {
		require.NoError(t, apply("order-2")(ctx, tx))
		return errBoom
	})
	require.ErrorIs(t, err, errBoom)
	require.Equal(t, client.TransactionRollback, res.State)
	require.NotEmpty(t, res.MsgID)
	require.Zero(t, applied(t, db, "order-2"))
	require.False(t, outboxRow(t, db, "ferry_outbox", res.MsgID))

	res, err = ob.Send(ctx, tp, message.NewMessage("OutboxOrders", []byte("order-3")), apply("order-3"))
	require.NoError(t, err)
	require.Equal(t, client.TransactionCommit, res.State)

	got := collect(t, cl, "OutboxCG", "OutboxOrders")
	testutil.Eventually(t, 15*time.Second, func() bool { return got.count("order-1") > 0 && got.count("order-3") > 0 }, "commits delivered")
	require.Equal(t, map[string]int{"order-1": 1, "order-3": 1}, got.snapshot(), "the rolled-back order is not delivered")
}

// recorder wraps a checker and records its answers by body.
type recorder struct {
	ck      client.TransactionChecker
	mu      sync.Mutex
	answers map[string][]client.TransactionState
}

func (r *recorder) Check(ctx context.Context, m *client.MessageExt) client.TransactionState {
	st := r.ck.Check(ctx, m)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.answers[string(m.Body)] = append(r.answers[string(m.Body)], st)
	return st
}

func (r *recorder) answered(body string, st client.TransactionState) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, a := range r.answers[body] {
		if a == st {
			return true
		}
	}
	return false
}

// TestOutboxCheckBackAfterCrash: a producer commits the database and "crashes" before
// END_TRANSACTION (its local transaction returns unknown, and it goes away); another
// producer of the group, on a new client, settles its transactions from the table alone:
// the committed one is committed and delivered, the one that never reached the
// database is rolled back once older than RollbackAfter, and never delivered.
func TestOutboxCheckBackAfterCrash(t *testing.T) {
	c := startBroker(t)
	ctx := context.Background()
	db := openDB(t)
	ob, err := NewOutbox(ctx, db, OutboxOptions{RollbackAfter: 2 * time.Second})
	require.NoError(t, err)

	crashed := newClient(t, c, "OutboxCrash")
	dead := client.TransactionCheckerFunc(func(context.Context, *client.MessageExt) client.TransactionState {
		return client.TransactionUnknown // a dying producer knows nothing
	})
	tp1, err := crashed.NewTransactionProducer("CrashPG", dead)
	require.NoError(t, err)
	res, err := tp1.SendInTransaction(ctx, message.NewMessage("OutboxCrash", []byte("db-committed")),
		func(ctx context.Context, _ *message.Message, res client.SendResult) client.TransactionState {
			require.NoError(t, ob.Local(ctx, tp1.Group(), res.MsgID, apply("db-committed")))
			return client.TransactionUnknown // crash after the database commit
		})
	require.NoError(t, err)
	require.Equal(t, client.TransactionUnknown, res.State)
	require.True(t, outboxRow(t, db, "ferry_outbox", res.MsgID))
	res, err = tp1.SendInTransaction(ctx, message.NewMessage("OutboxCrash", []byte("never-committed")),
		func(context.Context, *message.Message, client.SendResult) client.TransactionState {
			return client.TransactionUnknown // crash before the database commit
		})
	require.NoError(t, err)
	require.Equal(t, client.TransactionUnknown, res.State)
	require.NoError(t, tp1.Close())
	require.NoError(t, crashed.Close())

	successor := newClient(t, c)
	rec := &recorder{ck: ob.Checker(), answers: map[string][]client.TransactionState{}}
	tp2, err := successor.NewTransactionProducer("CrashPG", rec)
	require.NoError(t, err)
	defer func() { require.NoError(t, tp2.Close()) }()
	require.NoError(t, tp2.Register(ctx, "OutboxCrash"))

	got := collect(t, successor, "CrashCG", "OutboxCrash")
	testutil.Eventually(t, 20*time.Second, func() bool { return got.count("db-committed") > 0 }, "the committed transaction delivered")
	require.True(t, rec.answered("db-committed", client.TransactionCommit))
	testutil.Eventually(t, 20*time.Second, func() bool { return rec.answered("never-committed", client.TransactionRollback) },
		"the transaction without a row rolled back")

	// A transaction ended after the rollback answer is delivered; the rolled back one is not.
	res, err = ob.Send(ctx, tp2, message.NewMessage("OutboxCrash", []byte("after")), apply("after"))
	require.NoError(t, err)
	require.Equal(t, client.TransactionCommit, res.State)
	testutil.Eventually(t, 15*time.Second, func() bool { return got.count("after") > 0 }, "later commit delivered")
	require.Equal(t, map[string]int{"db-committed": 1, "after": 1}, got.snapshot())
	require.Equal(t, 1, applied(t, db, "db-committed"))
	require.Zero(t, applied(t, db, "never-committed"))
}

// TestInboxRedelivery: an inbox consumer applies each message once although messages come
// again — one through the retry topic (its first delivery committed the database, then
// the consumer "lost" the acknowledgement), all of them after the group's offsets are
// reset to the start.
func TestInboxRedelivery(t *testing.T) {
	c := startBroker(t)
	ctx := context.Background()
	db := openDB(t)
	const group = "InboxCG"
	in, err := NewInbox(ctx, db, InboxOptions{Group: group})
	require.NoError(t, err)
	cl := newClient(t, c, "InboxOrders")
	p, err := cl.NewProducer("InboxPG")
	require.NoError(t, err)
	defer func() { require.NoError(t, p.Close()) }()
	const n = 10
	ids := make([]string, n)
	for i := range n {
		res, err := p.Send(ctx, message.NewMessage("InboxOrders", []byte{'m', byte('0' + i)}))
		require.NoError(t, err)
		ids[i] = res.MsgID
	}

	var mu sync.Mutex
	calls := 0 // business function runs
	deliveries := &bodies{}
	handle := in.ConsumeFunc(func(ctx context.Context, tx *sql.Tx, m *client.MessageExt) error {
		mu.Lock()
		calls++
		mu.Unlock()
		return apply(string(m.Body))(ctx, tx)
	}, func(m *client.MessageExt, err error) { t.Errorf("%s: %v", m.Body, err) })
	consume(t, cl, group, "InboxOrders", func(ctx context.Context, msgs []*client.MessageExt) client.ConsumeResult {
		res := handle(ctx, msgs)
		for _, m := range msgs {
			deliveries.add(string(m.Body))
			if string(m.Body) == "m3" && m.ReconsumeTimes == 0 {
				return client.ConsumeRetryLater // the acknowledgement is lost after the commit
			}
		}
		return res
	})
	all := func(least int) func() bool {
		return func() bool {
			for i := range n {
				if deliveries.count(string([]byte{'m', byte('0' + i)})) < least {
					return false
				}
			}
			return true
		}
	}
	testutil.Eventually(t, 20*time.Second, all(1), "every message delivered")
	testutil.Eventually(t, 20*time.Second, func() bool { return deliveries.count("m3") >= 2 }, "m3 redelivered from the retry topic")

	_, err = cl.Admin().ResetOffsetByTime(ctx, group, "InboxOrders", time.Unix(0, 0))
	require.NoError(t, err)
	testutil.Eventually(t, 20*time.Second, all(2), "every message delivered again after the reset")
	testutil.Eventually(t, 20*time.Second, func() bool { return deliveries.count("m3") >= 3 }, "m3 a third time")

	mu.Lock()
	require.Equal(t, n, calls, "the business function ran once per message")
	mu.Unlock()
	for i := range n {
		require.Equal(t, 1, applied(t, db, string([]byte{'m', byte('0' + i)})))
	}
	require.Equal(t, n, rows(t, db, "ferry_inbox"))
	var stored []string
	r, err := db.Query("SELECT msg_id FROM ferry_inbox WHERE consumer_group = ? ORDER BY msg_id", group)
	require.NoError(t, err)
	for r.Next() {
		var id string
		require.NoError(t, r.Scan(&id))
		stored = append(stored, id)
	}
	require.NoError(t, r.Err())
	require.NoError(t, r.Close())
	require.ElementsMatch(t, ids, stored, "keyed by the producer's message ids")
}
