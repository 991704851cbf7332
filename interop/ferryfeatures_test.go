package interop

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/client"
	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/testutil"
)

// newFerryClient returns a Ferry client of its own (own client id), closed at cleanup.
func newFerryClient(t *testing.T, c *testutil.Cluster, opts ...client.Option) *client.Client {
	t.Helper()
	cl, err := client.New(append([]client.Option{client.WithNameServers(c.NamesrvAddr),
		client.WithInstanceName(instance("ferry"))}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, cl.Close()) })
	return cl
}

// newFerryProducer returns a producer of group on cl, closed at cleanup.
func newFerryProducer(t *testing.T, cl *client.Client, group string) *client.Producer {
	t.Helper()
	p, err := cl.NewProducer(group)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close()) })
	return p
}

// TestFerrySQL92BesideOfficial: Ferry's push consumer with client.SQL92 and the official
// push consumer with the same SQL92 selector, on the messages the official producer sent,
// each get exactly the matching messages, once.
func TestFerrySQL92BesideOfficial(t *testing.T) {
	const topic, n = "FerrySql92", 300
	const expr = "n >= 100 AND (color = 'red' OR TAGS = 'TagB')"
	c := testutil.StartCluster(t)
	createTopic(t, c, topic, 4)
	p := newProducer(t, c, "pg-ferry-sql")
	color := func(i int) string { return []string{"red", "blue", "green"}[i%3] }
	tag := func(i int) string { return []string{"TagA", "TagB"}[i%2] }
	var want []string
	all := bodies("fsql-", n)
	sendMsgs(t, p, 0, n, 8, func(i int) *primitive.Message {
		m := primitive.NewMessage(topic, []byte(all[i]))
		m.WithTag(tag(i))
		m.WithProperty("n", strconv.Itoa(i))
		m.WithProperty("color", color(i))
		return m
	})
	for i, b := range all {
		if i >= 100 && (color(i) == "red" || tag(i) == "TagB") {
			want = append(want, b)
		}
	}
	ferry, official := newRecorder(), newRecorder()
	newFerryConsumer(t, c, "cg-ferry-sql", topic, client.SQL92(expr), ferryHandler(ferry, "ferry"))
	newSelectorConsumer(t, c, "cg-official-sql", topic, consumer.MessageSelector{Type: consumer.SQL92, Expression: expr},
		official.handler("official"))
	ferry.waitAll(t, want, 60*time.Second, "the Ferry SQL92 consumer's messages")
	official.waitAll(t, want, 60*time.Second, "the official SQL92 consumer's messages")
	for name, rec := range map[string]*recorder{"ferry": ferry, "official": official} {
		got, total := rec.since(0)
		require.Len(t, got, len(want), "%s: nothing the expression does not match, nothing twice (%d)", name, total)
		for _, b := range want {
			require.Equal(t, 1, rec.count(b), "%s: %s once", name, b)
		}
	}
}

// TestFerryRequestAnsweredByOfficial: Request from Ferry's producer is answered by an
// official consumer (CreateReplyMessage, its body set, sent by an official producer).
func TestFerryRequestAnsweredByOfficial(t *testing.T) {
	const topic, n = "FerryRequest", 30
	c := testutil.StartCluster(t)
	createTopic(t, c, topic, 2)
	replier := newProducer(t, c, "pg-official-replier")
	replyErrs := make(chan error, n)
	// The requester has its answer before the replier's SendSync returns, and the
	// official producer's Shutdown races with a send in flight: the gate lets the last
	// reply finish, and stops further ones, before anything is shut down.
	var gate sync.RWMutex
	stopped := false
	newPushConsumer(t, c, "cg-official-replier", topic, "*", func(ctx context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		gate.RLock()
		defer gate.RUnlock()
		if stopped {
			return consumer.ConsumeRetryLater, nil
		}
		for _, m := range msgs {
			reply, err := consumer.CreateReplyMessage(m, nil)
			if err == nil {
				reply.Body = []byte("official: " + string(m.Body)) // the Go client leaves it empty
				_, err = replier.SendSync(ctx, reply)
			}
			if err != nil {
				replyErrs <- err
			}
		}
		return consumer.ConsumeSuccess, nil
	})
	t.Cleanup(func() { // runs before the consumer's and the replier's shutdowns
		gate.Lock()
		stopped = true
		gate.Unlock()
	})
	p := newFerryProducer(t, newFerryClient(t, c), "pg-ferry-requester")
	for i := range n {
		body := fmt.Sprintf("ask-%d", i)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		reply, err := p.Request(ctx, message.NewMessage(topic, []byte(body)))
		cancel()
		select {
		case rerr := <-replyErrs:
			require.NoError(t, rerr, "the official replier")
		default:
		}
		require.NoError(t, err, "request %d", i)
		require.Equal(t, "official: "+body, string(reply.Body))
		require.Equal(t, protocol.ReplyTopic("DefaultCluster"), reply.Topic)
		require.NotEmpty(t, reply.Property(message.PropertyCorrelationID))
	}
}

// TestFerryNamespaceWithOfficial: a Ferry client and the official clients in the same
// namespace share a topic: each consumer gets what both producers sent, Ferry's with the
// topic named without the namespace, and the groups are namespaced on the broker.
func TestFerryNamespaceWithOfficial(t *testing.T) {
	const ns, topic, n = "tenant-x", "NsShared", 40
	c := testutil.StartCluster(t)
	createTopic(t, c, ns+"%"+topic, 2)
	cl := newFerryClient(t, c, client.WithNamespace(ns))
	fp := newFerryProducer(t, cl, "pg-ns-ferry")
	op := newProducer(t, c, "pg-ns-official", producer.WithNamespace(ns))
	fromFerry, fromOfficial := bodies("ns-ferry-", n), bodies("ns-official-", n)
	for i := range n {
		res, err := fp.Send(context.Background(), message.NewMessage(topic, []byte(fromFerry[i])))
		require.NoError(t, err)
		require.Equal(t, ns+"%"+topic, res.Topic)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err = op.SendSync(ctx, primitive.NewMessage(topic, []byte(fromOfficial[i])))
		cancel()
		require.NoError(t, err)
	}
	everything := append(append([]string(nil), fromFerry...), fromOfficial...)

	ferry, official := newRecorder(), newRecorder()
	topics := make(chan string, 2*n)
	fc, err := cl.NewPushConsumer("cg-ns-ferry", topic, "*", func(ctx context.Context, msgs []*client.MessageExt) client.ConsumeResult {
		for _, m := range msgs {
			select {
			case topics <- m.Topic:
			default: // more than 2n deliveries: the counts below fail
			}
		}
		return ferryHandler(ferry, "ferry")(ctx, msgs)
	}, client.WithConsumeFrom(client.ConsumeFromFirstOffset))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, fc.Start(ctx))
	t.Cleanup(func() { require.NoError(t, fc.Close()) })
	newPushConsumer(t, c, "cg-ns-official", topic, "*", official.handler("official"), consumer.WithNamespace(ns))

	ferry.waitAll(t, everything, 60*time.Second, "the namespaced Ferry consumer gets both producers' messages")
	official.waitAll(t, everything, 60*time.Second, "the namespaced official consumer gets both producers' messages")
	for range 2 * n {
		require.Equal(t, topic, <-topics, "Ferry's consumer sees the topic without the namespace")
	}
	raw := newRaw(t, c.BrokerAddr)
	require.NotEmpty(t, raw.consumerIDs(ns+"%cg-ns-ferry"), "the Ferry group is namespaced on the broker")
	require.NotEmpty(t, raw.consumerIDs(ns+"%cg-ns-official"), "as the official one is")
}

// TestFerryTimerDeliverAfter: timer messages Ferry's producer sends with SetDeliverAfter
// (and SetDeliverAt) reach the official consumer only once their time has come: every
// delivery is recorded at or after it, and all of them arrive.
func TestFerryTimerDeliverAfter(t *testing.T) {
	const topic, n, delay = "FerryTimer", 20, 3 * time.Second
	c := testutil.StartCluster(t)
	createTopic(t, c, topic, 2)
	rec := newExtRecorder()
	newPushConsumer(t, c, "cg-ferry-timer", topic, "*", rec.handler("official", nil))
	p := newFerryProducer(t, newFerryClient(t, c), "pg-ferry-timer")
	due := map[string]time.Time{}
	all := bodies("timer-", n)
	for i, b := range all {
		m := message.NewMessage(topic, []byte(b))
		// Timers have millisecond precision: the broker adds a relative delay to its
		// clock in whole ms, and TIMER_DELIVER_MS is whole ms.
		sent := time.Now().Truncate(time.Millisecond)
		if i%2 == 0 {
			m.SetDeliverAfter(delay + time.Duration(i)*100*time.Millisecond)
			due[b] = sent.Add(delay + time.Duration(i)*100*time.Millisecond)
		} else {
			m.SetDeliverAt(sent.Add(delay))
			due[b] = sent.Add(delay)
		}
		_, err := p.Send(context.Background(), m)
		require.NoError(t, err)
	}
	testutil.Eventually(t, 60*time.Second, func() bool { return rec.countAtLeast(all, 1) == n }, "every timer message delivered")
	for _, b := range all {
		ds := rec.of(b)
		require.Len(t, ds, 1, "%s once", b)
		require.False(t, ds[0].at.Before(due[b]), "%s delivered at %v, due %v", b, ds[0].at, due[b])
		require.GreaterOrEqual(t, ds[0].store, due[b].UnixMilli(), "%s stored in its topic at its time", b)
	}
}
