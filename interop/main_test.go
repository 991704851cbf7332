package interop

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"
	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/internal/testkit"
	"github.com/ferrymq/ferry/testutil"
)

func TestMain(m *testing.M) {
	rlog.SetLogLevel("fatal")
	testkit.RunChildRole(map[string]func([]string){"tx": txChild, "ferrytx": ferryTxChild})
	os.Exit(testkit.Main(m).Run())
}

// seq numbers client instances so each gets its own client object in the Go client.
var seq atomic.Int64

func instance(prefix string) string { return fmt.Sprintf("%s-%d", prefix, seq.Add(1)) }

// newProducer starts an official producer against the cluster.
func newProducer(t *testing.T, c *testutil.Cluster, group string, opts ...producer.Option) rocketmq.Producer {
	t.Helper()
	all := append([]producer.Option{
		producer.WithNsResolver(primitive.NewPassthroughResolver([]string{c.NamesrvAddr})),
		producer.WithGroupName(group),
		producer.WithInstanceName(instance("p")),
		producer.WithRetry(2),
	}, opts...)
	p, err := rocketmq.NewProducer(all...)
	require.NoError(t, err)
	require.NoError(t, p.Start())
	t.Cleanup(func() { _ = p.Shutdown() })
	return p
}

// collector records deliveries per message body.
type collector struct {
	mu    sync.Mutex
	count map[string]int
	total atomic.Int64
}

func newCollector() *collector { return &collector{count: map[string]int{}} }

func (c *collector) handler(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
	c.mu.Lock()
	for _, m := range msgs {
		c.count[string(m.Body)]++
	}
	c.mu.Unlock()
	c.total.Add(int64(len(msgs)))
	return consumer.ConsumeSuccess, nil
}

// newPushConsumer starts an official push consumer subscribed to topic with expr.
func newPushConsumer(t *testing.T, c *testutil.Cluster, group, topic, expr string, h func(context.Context, ...*primitive.MessageExt) (consumer.ConsumeResult, error), opts ...consumer.Option) rocketmq.PushConsumer {
	t.Helper()
	return newSelectorConsumer(t, c, group, topic, consumer.MessageSelector{Type: consumer.TAG, Expression: expr}, h, opts...)
}

// newSelectorConsumer starts an official push consumer subscribed to topic with sel.
func newSelectorConsumer(t *testing.T, c *testutil.Cluster, group, topic string, sel consumer.MessageSelector, h func(context.Context, ...*primitive.MessageExt) (consumer.ConsumeResult, error), opts ...consumer.Option) rocketmq.PushConsumer {
	t.Helper()
	bc := &balancedConsumer{}
	all := append([]consumer.Option{
		consumer.WithNsResolver(primitive.NewPassthroughResolver([]string{c.NamesrvAddr})),
		consumer.WithGroupName(group),
		consumer.WithInstance(instance("c")),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
	}, opts...)
	pc, err := rocketmq.NewPushConsumer(all...)
	require.NoError(t, err)
	bc.PushConsumer = pc
	require.NoError(t, pc.Subscribe(topic, sel, h))
	require.NoError(t, pc.Start())
	t.Cleanup(func() { _ = bc.Shutdown() }) // Shutdown is idempotent; tests may stop it earlier
	return bc
}

// startBalanceWait bounds how long a balancedConsumer's Shutdown waits for its start
// rebalance.
const startBalanceWait = 5 * time.Second

// balancedConsumer is an official push consumer whose Shutdown first waits (at most
// startBalanceWait) until the rebalance goroutine its Start launched has ended. That
// goroutine reads a flag of the client's that Shutdown writes without synchronisation
// (rmqClient.close): a data race inside the official client, which the race detector
// reports when a test ends within a second of starting a consumer. Counting allocation
// calls did not order it: rebalances are serialised, and one triggered by a group change
// can allocate every subscription before the start goroutine even runs.
type balancedConsumer struct {
	rocketmq.PushConsumer
	once sync.Once
}

// startRebalanceCreator is how a goroutine dump names the creator of the rebalance
// goroutine an official push consumer's Start launches (its other goroutines are
// created by Start.func1 and the like).
const startRebalanceCreator = "created by github.com/apache/rocketmq-client-go/v2/consumer.(*pushConsumer).Start in goroutine"

// startRebalanceRunning reports whether a push consumer's start rebalance goroutine is
// still running in this process (a goroutine dump, grown until it fits).
func startRebalanceRunning() bool {
	buf := make([]byte, 1<<16)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return bytes.Contains(buf[:n], []byte(startRebalanceCreator))
		}
		buf = make([]byte, 2*len(buf))
	}
}

// Shutdown waits for the start rebalance to end (once), suspends the consumer — a
// suspended consumer skips the rebalances a NOTIFY_CONSUMER_IDS_CHANGED triggers, which
// would otherwise race with Shutdown the same way when another member leaves meanwhile —
// then shuts it down. The wait polls a goroutine dump: the goroutine's end is what orders
// its reads before Shutdown's write, and nothing of the client's signals it.
func (c *balancedConsumer) Shutdown() error {
	c.once.Do(func() {
		defer c.Suspend()
		deadline := time.Now().Add(startBalanceWait)
		for startRebalanceRunning() && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
	})
	return c.PushConsumer.Shutdown()
}

func TestSendAndConsumeWithOfficialClient(t *testing.T) {
	c := testutil.StartCluster(t)
	p := newProducer(t, c, "pg-basic")
	const n = 200
	for i := range n {
		msg := primitive.NewMessage("BasicTopic", []byte(fmt.Sprintf("msg-%d", i)))
		msg.WithTag("TagA")
		msg.WithKeys([]string{fmt.Sprintf("key-%d", i)})
		res, err := p.SendSync(context.Background(), msg)
		require.NoError(t, err)
		require.Equal(t, primitive.SendOK, res.Status)
		require.Len(t, res.OffsetMsgID, 32)
	}
	col := newCollector()
	pc := newPushConsumer(t, c, "cg-basic", "BasicTopic", "*", col.handler)
	defer pc.Shutdown()
	testutil.Eventually(t, 60*time.Second, func() bool { return col.total.Load() >= n }, "all messages consumed")
	col.mu.Lock()
	defer col.mu.Unlock()
	for i := range n {
		require.GreaterOrEqual(t, col.count[fmt.Sprintf("msg-%d", i)], 1, "msg-%d delivered", i)
	}
}
