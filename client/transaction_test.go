package client

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/conf"
	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/testutil"
)

// txCluster checks unresolved half messages about a second after they are stored (the
// transaction service scans every second) and again every second.
func txCluster(t *testing.T, edit ...func(*conf.BrokerConfig)) *testutil.Cluster {
	t.Helper()
	return testutil.StartCluster(t, testutil.WithBrokerConfig(func(b *conf.BrokerConfig) {
		b.TransactionTimeout = 300 * time.Millisecond
		b.TransactionCheckInterval = time.Second
		for _, f := range edit {
			f(b)
		}
	}))
}

// txChecker answers checks by body prefix ("commit-" → commit, "rollback-" → rollback,
// anything else unknown) and records what it was asked.
type txChecker struct {
	mu    sync.Mutex
	asked map[string]int
	msgs  map[string]*MessageExt
}

func newTxChecker() *txChecker {
	return &txChecker{asked: map[string]int{}, msgs: map[string]*MessageExt{}}
}

func (k *txChecker) Check(_ context.Context, m *MessageExt) TransactionState {
	b := string(m.Body)
	k.mu.Lock()
	k.asked[b]++
	k.msgs[b] = m
	k.mu.Unlock()
	switch {
	case strings.Contains(b, "commit-"):
		return TransactionCommit
	case strings.Contains(b, "rollback-"):
		return TransactionRollback
	}
	return TransactionUnknown
}

func (k *txChecker) times(body string) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.asked[body]
}

func (k *txChecker) msg(body string) *MessageExt {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.msgs[body]
}

// returns is a local transaction that checks what it is given and returns st.
func returns(t *testing.T, group string, st TransactionState) LocalTransaction {
	return func(_ context.Context, m *message.Message, res SendResult) TransactionState {
		require.Equal(t, "true", m.Property(message.PropertyTransactionPrepared))
		require.Equal(t, group, m.Property(message.PropertyProducerGroup))
		require.Equal(t, m.UniqKey(), res.MsgID)
		require.Len(t, res.OffsetMsgID, message.OffsetMsgIDLenV4)
		return st
	}
}

// TestTxCommitRollbackAndCheckBack: a commit is consumable as soon as SendInTransaction
// returns, a rollback never is, and unknown or panicking local transactions are settled
// by the check-back — committed ones delivered once, rolled-back ones never; transactions
// ended by SendInTransaction are not checked.
func TestTxCommitRollbackAndCheckBack(t *testing.T) {
	c := txCluster(t)
	raw := newRawBroker(t, c)
	raw.createTopic("TxTopic", 2)
	cl := newTestClient(t, c)
	ck := newTxChecker()
	tp, err := cl.NewTransactionProducer("TxPG", ck)
	require.NoError(t, err)
	defer func() { require.NoError(t, tp.Close()) }()
	ctx := context.Background()
	send := func(body string, local LocalTransaction) (TransactionResult, error) {
		m := message.NewMessage("TxTopic", []byte(body))
		m.SetTags("TagT")
		m.SetKeys("k-" + body)
		res, err := tp.SendInTransaction(ctx, m, local)
		require.NotContains(t, m.Properties, message.PropertyTransactionPrepared, "the caller's message is not modified")
		return res, err
	}

	res, err := send("direct-commit", returns(t, "TxPG", TransactionCommit))
	require.NoError(t, err)
	require.Equal(t, TransactionCommit, res.State)
	require.Equal(t, res.MsgID, res.TransactionID)
	stored := func(body string) *message.Record {
		for q := range int32(2) {
			for _, rec := range raw.records("TxTopic", q) {
				if string(rec.Body) == body {
					return &rec
				}
			}
		}
		return nil
	}
	testutil.Eventually(t, 5*time.Second, func() bool { return stored("direct-commit") != nil }, "commit stored")
	rec := stored("direct-commit")
	require.Equal(t, message.TransactionCommitType, message.TransactionType(rec.SysFlag))
	props := message.ParseProperties(rec.Properties)
	require.Equal(t, res.MsgID, props[message.PropertyUniqKey])
	require.Equal(t, "TagT", props[message.PropertyTags])

	res, err = send("direct-rollback", returns(t, "TxPG", TransactionRollback))
	require.NoError(t, err)
	require.Equal(t, TransactionRollback, res.State)
	res, err = send("check-commit-0", returns(t, "TxPG", TransactionUnknown))
	require.NoError(t, err)
	require.Equal(t, TransactionUnknown, res.State)
	unknownID := res.MsgID
	_, err = send("check-rollback-0", returns(t, "TxPG", TransactionUnknown))
	require.NoError(t, err)
	res, err = send("panic-commit-0", func(context.Context, *message.Message, SendResult) TransactionState { panic("boom") })
	require.ErrorIs(t, err, ErrLocalTransactionPanicked)
	require.NotErrorIs(t, err, ErrTransactionNotEnded)
	require.Equal(t, TransactionUnknown, res.State)
	require.NotEmpty(t, res.OffsetMsgID)

	d := newDeliveries()
	startConsumer(t, cl, "TxCG", "TxTopic", "*", d.handler("c", nil))
	want := []string{"direct-commit", "check-commit-0", "panic-commit-0"}
	testutil.Eventually(t, 20*time.Second, func() bool {
		return d.got(want, 1) == len(want) && ck.times("check-rollback-0") > 0
	}, "committed transactions delivered, the rolled-back one checked")

	m := ck.msg("check-commit-0")
	require.Equal(t, "TxTopic", m.Topic, "the checker sees the real topic")
	require.Equal(t, unknownID, m.MsgID)
	require.Equal(t, "TxPG", m.Property(message.PropertyProducerGroup))
	require.Equal(t, "TagT", m.Tags())

	// A commit sent after everything else is delivered after the rolled-back answers were
	// stored; by then nothing rolled back has shown up, nor anything twice.
	_, err = send("last-commit", returns(t, "TxPG", TransactionCommit))
	require.NoError(t, err)
	testutil.Eventually(t, 10*time.Second, func() bool { return d.got([]string{"last-commit"}, 1) == 1 }, "last commit delivered")
	for _, b := range append(want, "last-commit") {
		require.Len(t, d.of(b), 1, "%s delivered once", b)
	}
	for _, b := range []string{"direct-rollback", "check-rollback-0"} {
		require.Empty(t, d.of(b), "%s delivered", b)
		require.Nil(t, stored(b), "%s stored in the real topic", b)
	}
	require.Zero(t, ck.times("direct-commit"), "an ended transaction was checked")
	require.Zero(t, ck.times("direct-rollback"), "an ended transaction was checked")
}

// TestTxIllegalAndClosed: messages and arguments the broker would refuse are refused
// before anything is sent, the local transaction does not run, and a closed producer
// refuses calls.
func TestTxIllegalAndClosed(t *testing.T) {
	c := txCluster(t)
	cl := newTestClient(t, c)
	_, err := cl.NewTransactionProducer("TxIllegalPG", nil)
	require.ErrorIs(t, err, ErrInvalidOptions)
	_, err = cl.NewTransactionProducer("bad group!", newTxChecker())
	require.ErrorIs(t, err, ErrInvalidOptions)
	_, err = cl.NewTransactionProducer("TxIllegalPG", newTxChecker(), WithRetries(-1))
	require.ErrorIs(t, err, ErrInvalidOptions)
	tp, err := cl.NewTransactionProducer("TxIllegalPG", newTxChecker(), WithMaxBodySize(16))
	require.NoError(t, err)
	_, err = cl.NewTransactionProducer("TxIllegalPG", newTxChecker())
	require.ErrorIs(t, err, ErrInvalidOptions, "one transaction producer per group and client")

	ran := false
	local := func(context.Context, *message.Message, SendResult) TransactionState {
		ran = true
		return TransactionCommit
	}
	ctx := context.Background()
	for name, m := range map[string]*message.Message{
		"nil":        nil,
		"no topic":   message.NewMessage("", []byte("x")),
		"bad topic":  message.NewMessage("bad topic!", []byte("x")),
		"empty body": message.NewMessage("TxIllegal", nil),
		"too large":  message.NewMessage("TxIllegal", make([]byte, 17)),
	} {
		_, err := tp.SendInTransaction(ctx, m, local)
		require.ErrorIs(t, err, ErrIllegalMessage, name)
	}
	_, err = tp.SendInTransaction(ctx, message.NewMessage("TxIllegal", []byte("x")), nil)
	require.ErrorIs(t, err, ErrInvalidOptions)
	require.False(t, ran, "a local transaction ran for a refused message")

	require.NoError(t, tp.Close())
	require.NoError(t, tp.Close())
	_, err = tp.SendInTransaction(ctx, message.NewMessage("TxIllegal", []byte("x")), local)
	require.ErrorIs(t, err, ErrClosed)
	require.False(t, ran)
	// The group is free again.
	tp2, err := cl.NewTransactionProducer("TxIllegalPG", newTxChecker())
	require.NoError(t, err)
	require.NoError(t, tp2.Close())
}

// TestTxCheckAfterReconnect: transactions left unknown before a broker restart are
// checked after it, over the connections the client opened again — heartbeats register
// the group on them — and the committed one is delivered.
func TestTxCheckAfterReconnect(t *testing.T) {
	c := txCluster(t, func(b *conf.BrokerConfig) { b.TransactionTimeout = time.Hour })
	newRawBroker(t, c).createTopic("TxReconnect", 1)
	cl, err := New(WithNameServers(c.NamesrvAddr), WithHeartbeat(50*time.Millisecond))
	require.NoError(t, err)
	defer func() { require.NoError(t, cl.Close()) }()
	ck := newTxChecker()
	tp, err := cl.NewTransactionProducer("TxReconnectPG", ck)
	require.NoError(t, err)
	defer func() { require.NoError(t, tp.Close()) }()
	ctx := context.Background()
	for _, b := range []string{"re-commit-0", "re-rollback-0"} {
		_, err := tp.SendInTransaction(ctx, message.NewMessage("TxReconnect", []byte(b)), returns(t, "TxReconnectPG", TransactionUnknown))
		require.NoError(t, err)
	}

	c.SetBrokerConfig(func(b *conf.BrokerConfig) { b.TransactionTimeout = 300 * time.Millisecond })
	c.RestartBroker(t)
	testutil.Eventually(t, 20*time.Second, func() bool {
		return ck.times("re-commit-0") > 0 && ck.times("re-rollback-0") > 0
	}, "both transactions checked after the restart")
	d := newDeliveries()
	startConsumer(t, cl, "TxReconnectCG", "TxReconnect", "*", d.handler("c", nil))
	testutil.Eventually(t, 10*time.Second, func() bool { return d.got([]string{"re-commit-0"}, 1) == 1 }, "committed after the restart")
	_, err = tp.SendInTransaction(ctx, message.NewMessage("TxReconnect", []byte("re-last")), returns(t, "TxReconnectPG", TransactionCommit))
	require.NoError(t, err)
	testutil.Eventually(t, 10*time.Second, func() bool { return d.got([]string{"re-last"}, 1) == 1 }, "last commit delivered")
	require.Len(t, d.of("re-commit-0"), 1)
	require.Empty(t, d.of("re-rollback-0"))
}

// TestTxCloseWaitsForInFlight: Close waits for a local transaction in progress, which
// still ends its transaction; the producer's check workers stop (goleak checks).
func TestTxCloseWaitsForInFlight(t *testing.T) {
	c := txCluster(t)
	newRawBroker(t, c).createTopic("TxClose", 1)
	cl := newTestClient(t, c)
	tp, err := cl.NewTransactionProducer("TxClosePG", newTxChecker())
	require.NoError(t, err)
	started, release := make(chan struct{}), make(chan struct{})
	type outcome struct {
		res TransactionResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := tp.SendInTransaction(context.Background(), message.NewMessage("TxClose", []byte("slow")),
			func(context.Context, *message.Message, SendResult) TransactionState {
				close(started)
				<-release
				return TransactionCommit
			})
		done <- outcome{res, err}
	}()
	<-started
	closed := make(chan error, 1)
	go func() { closed <- tp.Close() }()
	select {
	case <-closed:
		t.Fatal("Close returned while a local transaction was running")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	select {
	case err := <-closed:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return")
	}
	o := <-done
	require.NoError(t, o.err)
	require.Equal(t, TransactionCommit, o.res.State)
}
