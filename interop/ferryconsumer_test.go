package interop

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/client"
	"github.com/ferrymq/ferry/testutil"
)

// newFerryConsumer starts Ferry's push consumer on its own client (own client id), both
// closed at cleanup.
func newFerryConsumer(t *testing.T, c *testutil.Cluster, group, topic, expr string, h client.ConsumeFunc, opts ...client.ConsumerOption) *client.PushConsumer {
	t.Helper()
	cl, err := client.New(client.WithNameServers(c.NamesrvAddr), client.WithInstanceName(instance("ferry")))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, cl.Close()) })
	pc, err := cl.NewPushConsumer(group, topic, expr, h, append([]client.ConsumerOption{client.WithConsumeFrom(client.ConsumeFromFirstOffset)}, opts...)...)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, pc.Start(ctx))
	t.Cleanup(func() { require.NoError(t, pc.Close()) })
	return pc
}

// ferryHandler records Ferry deliveries in rec under name, like recorder.handler does
// for the official consumer.
func ferryHandler(rec *recorder, name string) client.ConsumeFunc {
	return func(_ context.Context, msgs []*client.MessageExt) client.ConsumeResult {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		for _, m := range msgs {
			rec.all = append(rec.all, delivery{consumer: name, body: string(m.Body), queue: int(m.Queue.QueueID), offset: m.QueueOffset})
			rec.seen[string(m.Body)]++
		}
		return client.ConsumeSuccess
	}
}

// TestFerryConsumerReadsOfficialProducer: messages the official producer sends — with
// tags, keys, user properties, and one body large enough for it to compress — are
// consumed exactly once by Ferry's push consumer subscribed to one tag, with everything
// intact; the other tag is filtered out, and on Close the offsets are committed to the
// end of each queue.
func TestFerryConsumerReadsOfficialProducer(t *testing.T) {
	const topic, group, n = "OfficialToFerry", "cg-official-to-ferry", 300
	c := testutil.StartCluster(t)
	createTopic(t, c, topic, 4)
	raw := newRaw(t, c.BrokerAddr)
	p := newProducer(t, c, "pg-official-to-ferry")
	big := bytes.Repeat([]byte("compressible "), 1000) // 13 KB: the official producer zips it
	body := func(i int) []byte {
		if i == 0 {
			return big
		}
		return []byte(fmt.Sprintf("o2f-%d", i))
	}
	results := sendMsgs(t, p, 0, n, 4, func(i int) *primitive.Message {
		m := primitive.NewMessage(topic, body(i))
		m.WithTag([]string{"TagA", "TagB"}[i%2])
		m.WithKeys([]string{"key-" + strconv.Itoa(i), "shared"})
		m.WithProperty("idx", strconv.Itoa(i))
		return m
	})

	var mu sync.Mutex
	got := map[int][]*client.MessageExt{}
	pc := newFerryConsumer(t, c, group, topic, "TagA", func(_ context.Context, msgs []*client.MessageExt) client.ConsumeResult {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range msgs {
			i, err := strconv.Atoi(m.Property("idx"))
			if err != nil {
				i = -1
			}
			got[i] = append(got[i], m)
		}
		return client.ConsumeSuccess
	})
	testutil.Eventually(t, 30*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) >= n/2
	}, "every TagA message consumed")
	require.NoError(t, pc.Close())

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, got, n/2, "only TagA messages")
	for i := 0; i < n; i += 2 {
		ms := got[i]
		require.Len(t, ms, 1, "message %d delivered once", i)
		m, res := ms[0], results[i]
		require.Equal(t, body(i), m.Body, "message %d body", i)
		require.Equal(t, topic, m.Topic)
		require.Equal(t, "TagA", m.Tags())
		require.Equal(t, []string{"key-" + strconv.Itoa(i), "shared"}, m.Keys())
		require.Equal(t, res.MsgID, m.MsgID, "message %d id", i)
		require.Equal(t, res.OffsetMsgID, m.OffsetMsgID, "message %d offset id", i)
		require.Equal(t, res.MessageQueue.QueueId, int(m.Queue.QueueID))
		require.Equal(t, res.QueueOffset, m.QueueOffset)
		require.Zero(t, m.ReconsumeTimes)
	}
	for q := range 4 {
		off, ok := raw.consumerOffset(group, topic, q)
		require.True(t, ok, "queue %d committed", q)
		require.Equal(t, raw.maxOffset(topic, q), off, "queue %d committed to its end", q)
	}
}

// TestFerryConsumerSharesGroupWithOfficial: one official and one Ferry push consumer in
// the same group agree on the allocation — each owns two of the four queues — and
// together consume every message exactly once, each from its own queues.
func TestFerryConsumerSharesGroupWithOfficial(t *testing.T) {
	const topic, group, queues, n = "MixedGroupTopic", "cg-mixed", 4, 400
	c := testutil.StartCluster(t)
	createTopic(t, c, topic, queues)
	raw := newRaw(t, c.BrokerAddr)
	prepareRetryTopic(t, raw, c, group, topic)

	rec := newRecorder()
	official := newPushConsumer(t, c, group, topic, "*", rec.handler("official"))
	newFerryConsumer(t, c, group, topic, "*", ferryHandler(rec, "ferry"))
	probe := newManualProducer(t, c, "pg-mixed-probe")
	owners := waitStableAssignment(t, c, probe, rec, topic, queues, []string{"official", "ferry"})

	_, from := rec.since(0)
	all := bodies("mixed-", n)
	sendN(t, newProducer(t, c, "pg-mixed"), topic, n, 4, func(i int) string { return all[i] })
	rec.waitAll(t, all, 30*time.Second, "every message consumed by the group")
	ds, _ := rec.since(from)
	per := map[string]int{}
	for _, b := range all {
		require.Equal(t, 1, rec.count(b), "%s consumed once by the group", b)
	}
	for _, d := range ds {
		if !strings.HasPrefix(d.body, "mixed-") {
			continue // a late probe
		}
		require.Equal(t, owners[d.queue], d.consumer, "%s consumed by the owner of queue %d", d.body, d.queue)
		per[d.consumer]++
	}
	require.Positive(t, per["official"], "the official consumer got messages")
	require.Positive(t, per["ferry"], "the Ferry consumer got messages")
	require.Equal(t, n, per["official"]+per["ferry"])
	// The official consumer leaves first, while the group is stable: were the Ferry consumer
	// to leave first (cleanups run in reverse), the broker's NOTIFY_CONSUMER_IDS_CHANGED
	// could reach the official client during its Shutdown, whose rebalance then reads a
	// flag Shutdown writes unsynchronised (a data race inside the official client).
	require.NoError(t, official.Shutdown())
}
