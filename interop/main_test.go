package interop

import (
	"context"
	"fmt"
	"os"
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
	bc := &balancedConsumer{allocated: make(chan struct{}, 16)}
	all := append([]consumer.Option{
		consumer.WithNsResolver(primitive.NewPassthroughResolver([]string{c.NamesrvAddr})),
		consumer.WithGroupName(group),
		consumer.WithInstance(instance("c")),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
		consumer.WithStrategy(bc.allocate), // a test's own WithStrategy replaces it
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
const startBalanceWait = 2 * time.Second

// balancedConsumer is an official push consumer whose Shutdown first waits (at most
// startBalanceWait) until the rebalance its Start launched has allocated the queues of
// both subscriptions, the topic and the group's retry topic. That goroutine reads a flag
// of the client's that Shutdown writes without synchronisation (rmqClient.close): a data
// race inside the official client, which the race detector reports when a test ends
// within milliseconds of starting a consumer. The allocation call orders those reads
// before Shutdown.
type balancedConsumer struct {
	rocketmq.PushConsumer
	allocated chan struct{} // a value per allocation (extra ones dropped)
	once      sync.Once
}

// allocate is the consumer's strategy: AllocateByAveragely, announced on allocated.
func (c *balancedConsumer) allocate(group, id string, mqs []*primitive.MessageQueue, ids []string) []*primitive.MessageQueue {
	defer func() {
		select {
		case c.allocated <- struct{}{}:
		default:
		}
	}()
	return consumer.AllocateByAveragely(group, id, mqs, ids)
}

// Shutdown waits for the start rebalance (once), suspends the consumer — a suspended
// consumer skips the rebalances a NOTIFY_CONSUMER_IDS_CHANGED triggers, which would
// otherwise race with Shutdown the same way when another member leaves meanwhile — then
// shuts it down.
func (c *balancedConsumer) Shutdown() error {
	c.once.Do(func() {
		defer c.Suspend()
		deadline := time.After(startBalanceWait)
		for range 2 {
			select {
			case <-c.allocated:
			case <-deadline:
				return
			}
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
