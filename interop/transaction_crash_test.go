package interop

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/conf"
	"github.com/ferrymq/ferry/internal/testkit"
	"github.com/ferrymq/ferry/testutil"
)

// txChild is the child side of TestTransactionsSurviveProducerKill (args: the name
// server's address and a count n): a transactional producer that sends n half messages,
// answers UNKNOWN for all of them, prints SENT and waits to be killed.
func txChild(args []string) {
	ns := args[0]
	n, _ := strconv.Atoi(args[1])
	p, err := rocketmq.NewTransactionProducer(unknownListener{},
		producer.WithNsResolver(primitive.NewPassthroughResolver([]string{ns})),
		producer.WithGroupName("tx-kill-pg"), producer.WithInstanceName("tx-child"))
	if err == nil {
		err = p.Start()
	}
	for i := 0; err == nil && i < n; i++ {
		_, err = p.SendMessageInTransaction(context.Background(), primitive.NewMessage("TxKillTopic", []byte(fmt.Sprintf("tx-%d", i))))
	}
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(2)
	}
	fmt.Println("SENT")
	select {}
}

type unknownListener struct{}

func (unknownListener) ExecuteLocalTransaction(*primitive.Message) primitive.LocalTransactionState {
	return primitive.UnkonwnState
}

func (unknownListener) CheckLocalTransaction(*primitive.MessageExt) primitive.LocalTransactionState {
	return primitive.UnkonwnState
}

// decidingListener commits even-numbered transactions and rolls back odd ones when asked.
type decidingListener struct {
	mu     sync.Mutex
	checks map[string]int
}

func (l *decidingListener) ExecuteLocalTransaction(m *primitive.Message) primitive.LocalTransactionState {
	if string(m.Body) == "warm-up" {
		return primitive.CommitMessageState
	}
	return primitive.UnkonwnState
}

func (l *decidingListener) CheckLocalTransaction(m *primitive.MessageExt) primitive.LocalTransactionState {
	l.mu.Lock()
	l.checks[string(m.Body)]++
	l.mu.Unlock()
	i, _ := strconv.Atoi(strings.TrimPrefix(string(m.Body), "tx-"))
	if i%2 == 0 {
		return primitive.CommitMessageState
	}
	return primitive.RollbackMessageState
}

// startDecider starts a transactional producer in group tx-kill-pg that resolves checks.
func startDecider(t *testing.T, c *testutil.Cluster) *decidingListener {
	t.Helper()
	l := &decidingListener{checks: map[string]int{}}
	p, err := rocketmq.NewTransactionProducer(l,
		producer.WithNsResolver(primitive.NewPassthroughResolver([]string{c.NamesrvAddr})),
		producer.WithGroupName("tx-kill-pg"), producer.WithInstanceName(instance("tx-decider")))
	require.NoError(t, err)
	require.NoError(t, p.Start())
	t.Cleanup(func() {
		// The broker first: the Go client races with itself when a check-back arrives
		// while it shuts down (rmqClient.Shutdown vs InvokeOneWay).
		c.StopBroker(t)
		_ = p.Shutdown()
	})
	// The Go client heartbeats only to brokers of topics it has routes for, so the broker
	// learns of this producer (and can check it) once it has sent to the topic.
	_, err = p.SendMessageInTransaction(context.Background(), primitive.NewMessage("TxKillTopic", []byte("warm-up")))
	require.NoError(t, err)
	return l
}

// expectResolved consumes TxKillTopic and checks that exactly the even transactions of
// 0..n-1 arrive, once each.
func expectResolved(t *testing.T, c *testutil.Cluster, group string, n int) {
	t.Helper()
	col := newCollector()
	pc := newPushConsumer(t, c, group, "TxKillTopic", "*", col.handler)
	defer func() { _ = pc.Shutdown() }()
	testutil.Eventually(t, 90*time.Second, func() bool { return col.total.Load() >= int64(n/2+1) }, "committed transactions delivered")
	col.mu.Lock()
	defer col.mu.Unlock()
	for i := range n {
		want := 0
		if i%2 == 0 {
			want = 1
		}
		require.Equal(t, want, col.count[fmt.Sprintf("tx-%d", i)], "tx-%d", i)
	}
}

func txClusterOptions() testutil.Option {
	return testutil.WithBrokerConfig(func(b *conf.BrokerConfig) {
		b.TransactionTimeout = time.Second
		b.TransactionCheckInterval = time.Second
	})
}

// A producer killed with SIGKILL right after sending half messages: a new producer process
// of the same group resolves every one of them through check-back.
func TestTransactionsSurviveProducerKill(t *testing.T) {
	c := testutil.StartCluster(t, txClusterOptions())
	const n = 40
	child := testkit.StartChild(t, "tx", c.NamesrvAddr, strconv.Itoa(n))
	require.Equal(t, "SENT", child.Line(t, 60*time.Second), "child output")
	child.Kill(t)

	l := startDecider(t, c)
	expectResolved(t, c, "tx-kill-cg", n)
	l.mu.Lock()
	defer l.mu.Unlock()
	for b, k := range l.checks {
		require.LessOrEqual(t, k, 3, "%s checked %d times after it was resolved", b, k)
	}
}

// A broker restarted with unresolved half messages resolves all of them afterwards.
func TestTransactionsSurviveBrokerRestart(t *testing.T) {
	c := testutil.StartCluster(t, testutil.WithBrokerConfig(func(b *conf.BrokerConfig) {
		b.TransactionTimeout = time.Hour // nothing is checked before the restart
		b.TransactionCheckInterval = time.Second
	}))
	const n = 1000
	p, err := rocketmq.NewTransactionProducer(unknownListener{},
		producer.WithNsResolver(primitive.NewPassthroughResolver([]string{c.NamesrvAddr})),
		producer.WithGroupName("tx-kill-pg"), producer.WithInstanceName(instance("tx-sender")))
	require.NoError(t, err)
	require.NoError(t, p.Start())
	for i := range n {
		_, err := p.SendMessageInTransaction(context.Background(), primitive.NewMessage("TxKillTopic", []byte(fmt.Sprintf("tx-%d", i))))
		require.NoError(t, err)
	}
	require.NoError(t, p.Shutdown())

	c.SetBrokerConfig(func(b *conf.BrokerConfig) { b.TransactionTimeout = time.Second })
	c.RestartBroker(t)
	startDecider(t, c)
	expectResolved(t, c, "tx-restart-cg", n)
}
