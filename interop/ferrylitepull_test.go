package interop

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/client"
	"github.com/ferrymq/ferry/testutil"
)

// newFerryLite returns Ferry's lite-pull consumer on its own client (own client id),
// both closed at cleanup; the caller subscribes or assigns, then starts it.
func newFerryLite(t *testing.T, c *testutil.Cluster, group string, opts ...client.LitePullOption) *client.LitePullConsumer {
	t.Helper()
	cl, err := client.New(client.WithNameServers(c.NamesrvAddr), client.WithInstanceName(instance("ferry-lite")))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, cl.Close()) })
	lc, err := cl.NewLitePullConsumer(group, append([]client.LitePullOption{client.WithConsumeFrom(client.ConsumeFromFirstOffset)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, lc.Close()) })
	return lc
}

// pollAll polls lc until want messages arrived, failing after timeout.
func pollAll(t *testing.T, lc *client.LitePullConsumer, want int, timeout time.Duration) []*client.MessageExt {
	t.Helper()
	var out []*client.MessageExt
	deadline := time.Now().Add(timeout)
	for len(out) < want {
		require.True(t, time.Now().Before(deadline), "only %d of %d messages polled", len(out), want)
		out = append(out, lc.Poll(context.Background(), 100*time.Millisecond)...)
	}
	return out
}

// TestFerryLitePullReadsOfficialProducer: messages the official producer sends — with
// tags, keys, user properties, and one body it compresses — are polled exactly once by
// Ferry's lite-pull consumer subscribed to one tag as the only member of its group, with
// everything intact; the other tag is filtered out, and Close commits every queue to its
// end.
func TestFerryLitePullReadsOfficialProducer(t *testing.T) {
	const topic, group, n = "OfficialToFerryLite", "cg-official-to-ferry-lite", 300
	c := testutil.StartCluster(t)
	createTopic(t, c, topic, 4)
	raw := newRaw(t, c.BrokerAddr)
	p := newProducer(t, c, "pg-official-to-ferry-lite")
	big := bytes.Repeat([]byte("compressible "), 1000) // 13 KB: the official producer zips it
	body := func(i int) []byte {
		if i == 0 {
			return big
		}
		return []byte(fmt.Sprintf("o2fl-%d", i))
	}
	results := sendMsgs(t, p, 0, n, 4, func(i int) *primitive.Message {
		m := primitive.NewMessage(topic, body(i))
		m.WithTag([]string{"TagA", "TagB"}[i%2])
		m.WithKeys([]string{"key-" + strconv.Itoa(i), "shared"})
		m.WithProperty("idx", strconv.Itoa(i))
		return m
	})

	lc := newFerryLite(t, c, group)
	require.NoError(t, lc.Subscribe(topic, "TagA"))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, lc.Start(ctx))
	got := map[int][]*client.MessageExt{}
	for _, m := range pollAll(t, lc, n/2, 30*time.Second) {
		i, err := strconv.Atoi(m.Property("idx"))
		if err != nil {
			i = -1
		}
		got[i] = append(got[i], m)
	}
	require.Empty(t, lc.Poll(ctx, 100*time.Millisecond), "nothing more")
	require.Len(t, lc.Assignment(), 4, "the only member owns every queue")
	require.NoError(t, lc.Close())

	require.Len(t, got, n/2, "only TagA messages")
	for i := 0; i < n; i += 2 {
		ms := got[i]
		require.Len(t, ms, 1, "message %d polled once", i)
		m, res := ms[0], results[i]
		require.Equal(t, body(i), m.Body, "message %d body", i)
		require.Equal(t, topic, m.Topic)
		require.Equal(t, "TagA", m.Tags())
		require.Equal(t, []string{"key-" + strconv.Itoa(i), "shared"}, m.Keys())
		require.Equal(t, res.MsgID, m.MsgID, "message %d id", i)
		require.Equal(t, res.OffsetMsgID, m.OffsetMsgID, "message %d offset id", i)
		require.Equal(t, res.MessageQueue.QueueId, int(m.Queue.QueueID))
		require.Equal(t, res.QueueOffset, m.QueueOffset)
	}
	for q := range 4 {
		off, ok := raw.consumerOffset(group, topic, q)
		require.True(t, ok, "queue %d committed", q)
		require.Equal(t, raw.maxOffset(topic, q), off, "queue %d committed to its end (TagB counts as consumed)", q)
	}
}

// TestFerryLitePullOffsetsUsedByOfficialPush: offsets committed by Ferry's lite-pull
// consumer (manual Commit after polling everything) are where the official push
// consumer of the same group starts: it gets exactly the messages sent afterwards,
// none of the earlier ones, although it would start from the first offset without a
// committed one.
func TestFerryLitePullOffsetsUsedByOfficialPush(t *testing.T) {
	const topic, group, n = "FerryLiteToOfficial", "cg-ferry-lite-to-official", 200
	c := testutil.StartCluster(t)
	createTopic(t, c, topic, 4)
	raw := newRaw(t, c.BrokerAddr)
	p := newProducer(t, c, "pg-ferry-lite-to-official")
	first := bodies("before-", n)
	sendN(t, p, topic, n, 4, func(i int) string { return first[i] })

	lc := newFerryLite(t, c, group, client.WithManualCommit())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	mqs, err := lc.FetchQueues(ctx, topic)
	require.NoError(t, err)
	require.Len(t, mqs, 4)
	require.NoError(t, lc.Assign(mqs...))
	require.NoError(t, lc.Start(ctx))
	seen := map[string]int{}
	for _, m := range pollAll(t, lc, n, 30*time.Second) {
		seen[string(m.Body)]++
	}
	require.Len(t, seen, n)
	require.NoError(t, lc.Commit(ctx))
	require.NoError(t, lc.Close())
	for q := range 4 {
		off, ok := raw.consumerOffset(group, topic, q)
		require.True(t, ok, "queue %d committed", q)
		require.Equal(t, raw.maxOffset(topic, q), off, "queue %d committed to its end", q)
	}

	second := bodies("after-", n)
	sendN(t, p, topic, n, 4, func(i int) string { return second[i] })
	rec := newRecorder()
	newPushConsumer(t, c, group, topic, "*", rec.handler("official"))
	rec.waitAll(t, second, 30*time.Second, "the official consumer got the new messages")
	for _, b := range second {
		require.Equal(t, 1, rec.count(b), "%s consumed once", b)
	}
	require.Zero(t, rec.distinct(first), "nothing before the offsets Ferry's consumer committed")
}
