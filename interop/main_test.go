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
	testkit.RunChildRole(map[string]func([]string){"tx": txChild, "ferrytx": ferryTxChild,
		"ferrytxm": ferryTxMultiChild})
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

// rebalanceWait bounds how long a balancedConsumer's Shutdown waits for rebalances in
// flight to end.
const rebalanceWait = 5 * time.Second

// balancedConsumer is an official push consumer whose Shutdown first suspends it, then
// waits (at most rebalanceWait) until no rebalance of the official client is running in
// this process. A rebalance reads a flag of the client's that Shutdown writes without
// synchronisation (rmqClient.close): a data race inside the official client, which the
// race detector reports when a rebalance overlaps Shutdown — the one Start launches, or
// one a NOTIFY_CONSUMER_IDS_CHANGED triggers when another member leaves just before.
// Suspending stops new notify-triggered rebalances (their pause check is an atomic, an
// ordered edge); a rebalance's end, seen in a goroutine dump, orders its reads before
// Shutdown's write. Nothing of the client's signals either, hence the dump. Left open: the
// client's periodic rebalance (every 20 s) ignores the pause and may start in between.
type balancedConsumer struct {
	rocketmq.PushConsumer
	once sync.Once
}

// rebalanceFrames are what a goroutine dump shows of a rebalance of the official client
// under way: the goroutine Start launches (other goroutines of Start are created by
// Start.func1 and the like), one waiting for the client's rebalance lock without checking
// the pause, and one balancing.
var rebalanceFrames = [][]byte{
	[]byte("created by github.com/apache/rocketmq-client-go/v2/consumer.(*pushConsumer).Start in goroutine"),
	[]byte("rocketmq-client-go/v2/internal.(*rmqClient).RebalanceImmediately("),
	[]byte("rocketmq-client-go/v2/consumer.(*defaultConsumer).doBalance"),
}

// rebalanceRunning reports whether an official push consumer's rebalance is under way in
// this process (a goroutine dump, grown until it fits).
func rebalanceRunning() bool {
	buf := make([]byte, 1<<16)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			for _, f := range rebalanceFrames {
				if bytes.Contains(buf[:n], f) {
					return true
				}
			}
			return false
		}
		buf = make([]byte, 2*len(buf))
	}
}

// Shutdown suspends the consumer, waits (once) until no rebalance is running, then shuts
// it down.
func (c *balancedConsumer) Shutdown() error {
	c.once.Do(func() {
		c.Suspend()
		deadline := time.Now().Add(rebalanceWait)
		for rebalanceRunning() && time.Now().Before(deadline) {
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
