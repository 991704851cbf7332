package interop

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/testutil"
)

// TestPushConsumerGroup runs a clustering push-consumer group on an 8-queue topic: two
// consumers receive each of 20,000 messages exactly once; a third joins and nothing sent
// around the rebalance is lost; a consumer that restarts resumes from the committed
// offsets, so nothing consumed before is delivered again.
func TestPushConsumerGroup(t *testing.T) {
	const (
		topic  = "GroupTopic"
		group  = "cg-group"
		queues = 8
		bulk   = 20000
	)
	c := testutil.StartCluster(t)
	raw := newRaw(t, c.BrokerAddr)
	createTopic(t, c, topic, queues)
	p := newProducer(t, c, "pg-group")
	probe := newManualProducer(t, c, "pg-group-probe")
	rec := newRecorder()

	c1 := newPushConsumer(t, c, group, topic, "*", rec.handler("c1"))
	defer c1.Shutdown()
	c2 := newPushConsumer(t, c, group, topic, "*", rec.handler("c2"))
	defer c2.Shutdown()
	owners := waitStableAssignment(t, c, probe, rec, topic, queues, []string{"c1", "c2"})
	t.Logf("two consumers own %v", owners)

	// Phase 1: 20,000 messages, each delivered exactly once.
	_, mark := rec.since(0)
	start := time.Now()
	phase1 := bodies("m-", bulk)
	results := sendN(t, p, topic, bulk, 8, func(i int) string { return phase1[i] })
	t.Logf("sent %d messages in %v", bulk, time.Since(start))
	rec.waitAll(t, phase1, 120*time.Second, "20,000 messages consumed")
	t.Logf("consumed %d messages in %v", bulk, time.Since(start))
	raw.waitCommitted(group, topic, queues)
	got, _ := rec.since(mark)
	checkExactlyOnce(t, got, phase1, owners)
	sentAt := make(map[string]string, bulk)
	for i, r := range results {
		sentAt[phase1[i]] = fmt.Sprintf("%d/%d", r.MessageQueue.QueueId, r.QueueOffset)
	}
	for _, d := range got {
		require.Equal(t, sentAt[d.body], fmt.Sprintf("%d/%d", d.queue, d.offset), "%s delivered from where it was stored", d.body)
	}

	// Phase 2: a third consumer joins; messages sent while the group rebalances and after
	// it settled all arrive (duplicates are allowed around a rebalance).
	c3 := newPushConsumer(t, c, group, topic, "*", rec.handler("c3"))
	stopC3 := true
	defer func() {
		if stopC3 {
			_ = c3.Shutdown()
		}
	}()
	during := bodies("n-", 2000)
	sendN(t, p, topic, len(during), 4, func(i int) string { return during[i] })
	rec.waitAll(t, during, 60*time.Second, "messages sent during the rebalance consumed")
	owners = waitStableAssignment(t, c, probe, rec, topic, queues, []string{"c1", "c2", "c3"})
	t.Logf("three consumers own %v", owners)
	after := bodies("a-", 2000)
	_, mark = rec.since(0)
	sendN(t, p, topic, len(after), 4, func(i int) string { return after[i] })
	rec.waitAll(t, after, 60*time.Second, "messages sent after the rebalance consumed")
	got, _ = rec.since(mark)
	byC3 := 0
	for _, d := range got {
		if d.consumer == "c3" && strings.HasPrefix(d.body, "a-") {
			byC3++
		}
	}
	require.Positive(t, byC3, "the third consumer took a share after the rebalance")

	// Phase 3: everything is consumed and committed; c3 restarts as a new consumer of the
	// same group. Nothing delivered before may come again, to anyone.
	raw.waitCommitted(group, topic, queues)
	_, mark = rec.since(0)
	require.NoError(t, c3.Shutdown())
	stopC3 = false
	c3b := newPushConsumer(t, c, group, topic, "*", rec.handler("c3b"))
	defer c3b.Shutdown()
	owners = waitStableAssignment(t, c, probe, rec, topic, queues, []string{"c1", "c2", "c3b"})
	t.Logf("after the restart %v", owners)
	final := bodies("r-", 1000)
	sendN(t, p, topic, len(final), 4, func(i int) string { return final[i] })
	rec.waitAll(t, final, 60*time.Second, "messages sent after the restart consumed")
	raw.waitCommitted(group, topic, queues)
	got, _ = rec.since(mark)
	byC3b := 0
	for _, d := range got {
		require.False(t, strings.HasPrefix(d.body, "m-") || strings.HasPrefix(d.body, "n-") || strings.HasPrefix(d.body, "a-"),
			"%s received %s (queue %d offset %d) again after the restart", d.consumer, d.body, d.queue, d.offset)
		if d.consumer == "c3b" && strings.HasPrefix(d.body, "r-") {
			byC3b++
		}
	}
	require.Positive(t, byC3b, "the restarted consumer consumed its share")
	for _, b := range final {
		require.Equal(t, 1, rec.count(b), "%s delivered once", b)
	}
}

// checkExactlyOnce checks that deliveries hold each body of want exactly once and nothing
// else, each at its own queue position and, when owners is given, from its queue's owner.
func checkExactlyOnce(t *testing.T, got []delivery, want []string, owners map[int]string) {
	t.Helper()
	wanted := make(map[string]bool, len(want))
	for _, b := range want {
		wanted[b] = true
	}
	seen := make(map[string]int, len(want))
	at := map[string]string{}
	dups := 0
	for _, d := range got {
		require.True(t, wanted[d.body], "unexpected delivery %q", d.body)
		seen[d.body]++
		if seen[d.body] > 1 {
			dups++
		}
		if owners != nil {
			require.Equal(t, owners[d.queue], d.consumer, "%s from queue %d delivered to its owner", d.body, d.queue)
		}
		pos := fmt.Sprintf("%d/%d", d.queue, d.offset)
		if prev, ok := at[pos]; ok && prev != d.body {
			t.Fatalf("queue position %s delivered both %s and %s", pos, prev, d.body)
		}
		at[pos] = d.body
	}
	require.Zero(t, dups, "duplicate deliveries")
	require.Len(t, seen, len(want), "distinct messages delivered")
	if owners != nil {
		perQueue := map[int]int{}
		for _, d := range got {
			perQueue[d.queue]++
		}
		require.Len(t, perQueue, len(owners), "every queue carried messages")
	}
}
