package interop

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/store"
	"github.com/ferrymq/ferry/testutil"
)

// TestConsumeFromTimestamp checks that push and lite pull consumers with
// ConsumeFromTimestamp start at the first message stored at or after the timestamp.
//
// A group without a committed offset only searches by time when QUERY_CONSUMER_OFFSET
// answers QUERY_NOT_FOUND, which (as in RocketMQ) happens only once the head of the queue
// has been cleaned up; a queue that still holds offset 0 answers 0. So the test runs the
// store on a clock it can move: old messages are written, the clock jumps two hours, the
// cleaner deletes the expired commit-log segments (the queues' min offsets rise above 0,
// though some old messages remain), then new messages are written after a timestamp T.
func TestConsumeFromTimestamp(t *testing.T) {
	const topic, queues = "TsTopic", 4
	var shift atomic.Int64
	clock := func() time.Time { return time.Now().Add(time.Duration(shift.Load())) }
	c := testutil.StartCluster(t, testutil.WithStoreOptions(func(o *store.Options) {
		o.Clock = clock
		o.SegmentSize = 64 << 10
		o.MaxMessageSize = 16 << 10
		o.UnitsPerFile = 8
		o.FileReservedTime = time.Hour
		o.DeleteWhen = []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23}
		o.CleanInterval = 20 * time.Millisecond
		o.DiskMaxUsedRatio, o.DiskForceCleanRatio, o.DiskFullRatio = 1, 1, 1
	}))
	raw := newRaw(t, c.BrokerAddr)
	createTopic(t, c, topic, queues)
	p := newProducer(t, c, "pg-ts")
	pad := strings.Repeat("x", 1000)
	sendN(t, p, topic, 400, 4, func(i int) string { return fmt.Sprintf("old-%d-%s", i, pad) })
	dispatched := func(n int64) {
		t.Helper()
		testutil.Eventually(t, 30*time.Second, func() bool {
			var total int64
			for q := range queues {
				total += raw.maxOffset(topic, q)
			}
			return total == n
		}, fmt.Sprintf("%d messages in the consume queues", n))
	}
	dispatched(400)

	shift.Store(int64(2 * time.Hour))
	testutil.Eventually(t, 30*time.Second, func() bool {
		for q := range queues {
			if raw.minOffset(topic, q) == 0 {
				return false
			}
		}
		return true
	}, "expired segments cleaned up")
	starts := make([]int64, queues)
	remaining := int64(0)
	for q := range queues {
		starts[q] = raw.maxOffset(topic, q)
		remaining += starts[q] - raw.minOffset(topic, q)
	}
	require.Positive(t, remaining, "old messages remain readable, so starting too early would show")
	t.Logf("new messages start at %v", starts)

	ts := clock().Truncate(time.Second).Add(time.Second)
	testutil.Eventually(t, 2*time.Second, func() bool { return !clock().Before(ts) }, "store clock reaches T")
	newer := bodies("new-", 40)
	sendN(t, p, topic, len(newer), 2, func(i int) string { return newer[i] })
	dispatched(400 + int64(len(newer)))

	// SEARCH_OFFSET_BY_TIMESTAMP: T → the first new message; far past → min; future → max.
	for q := range queues {
		search := func(at time.Time) int64 {
			code, off := raw.offsetQuery(protocol.SearchOffsetByTimestamp, map[string]string{
				"topic": topic, "queueId": strconv.Itoa(q), "timestamp": strconv.FormatInt(at.UnixMilli(), 10)})
			require.Equal(t, protocol.Success, code)
			return off
		}
		require.Equal(t, starts[q], search(ts), "offset at T in queue %d", q)
		require.Equal(t, raw.minOffset(topic, q), search(time.UnixMilli(1)), "offset at the epoch in queue %d", q)
		require.Equal(t, raw.maxOffset(topic, q), search(clock().Add(time.Hour)), "offset in the future in queue %d", q)
		_, found := raw.consumerOffset("cg-ts-push", topic, q)
		require.False(t, found)
	}

	for q := range queues {
		minOff, maxOff := raw.minOffset(topic, q), raw.maxOffset(topic, q)
		// A new group gets QUERY_NOT_FOUND on a queue whose head was cleaned up (it would
		// get 0 on an untouched one), so the client searches by time.
		code, _ := raw.offsetQuery(protocol.QueryConsumerOffset, map[string]string{
			"consumerGroup": "cg-ts-push", "topic": topic, "queueId": strconv.Itoa(q)})
		require.Equal(t, protocol.QueryNotFound, code, "queue %d", q)
		// Pull outcomes around the bounds (spec §7.1).
		for _, pc := range []struct {
			from, next int64
			code       protocol.ResponseCode
		}{{0, minOff, protocol.PullOffsetMoved}, {maxOff, maxOff, protocol.PullNotFound}, {maxOff + 10, maxOff, protocol.PullOffsetMoved}} {
			resp := raw.call(protocol.PullMessage, map[string]string{
				"consumerGroup": "cg-raw", "topic": topic, "queueId": strconv.Itoa(q), "queueOffset": strconv.FormatInt(pc.from, 10),
				"maxMsgNums": "32", "sysFlag": "4", "commitOffset": "0", "suspendTimeoutMillis": "0", "subscription": "*", "subVersion": "0",
			}, nil)
			require.Equal(t, int16(pc.code), resp.Code, "pull queue %d from %d", q, pc.from)
			require.Equal(t, strconv.FormatInt(pc.next, 10), resp.Ext("nextBeginOffset"), "pull queue %d from %d", q, pc.from)
			require.Equal(t, strconv.FormatInt(minOff, 10), resp.Ext("minOffset"))
			require.Equal(t, strconv.FormatInt(maxOff, 10), resp.Ext("maxOffset"))
		}
	}

	// The official client parses the timestamp as UTC.
	stamp := ts.UTC().Format("20060102150405")
	check := func(rec *recorder, group string) {
		t.Helper()
		rec.waitAll(t, newer, 60*time.Second, group+" consumed the new messages")
		raw.waitCommitted(group, topic, queues)
		got, _ := rec.since(0)
		for _, d := range got {
			require.GreaterOrEqual(t, d.offset, starts[d.queue], "%s: %.12s at queue %d offset %d is older than T", group, d.body, d.queue, d.offset)
		}
		checkExactlyOnce(t, got, newer, nil)
	}
	push := newRecorder()
	pc := newPushConsumer(t, c, "cg-ts-push", topic, "*", push.handler("push"),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromTimestamp), consumer.WithConsumeTimestamp(stamp))
	defer pc.Shutdown()
	check(push, "cg-ts-push")

	pull := newRecorder()
	startPoller(t, c, "cg-ts-pull", topic, "*", pull.handler("pull"),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromTimestamp), consumer.WithConsumeTimestamp(stamp))
	check(pull, "cg-ts-pull")
}

// TestLitePullOffsets checks that the lite pull consumer reads every queue from offset 0
// in order (Poll) and that PullFrom returns exactly the requested range.
func TestLitePullOffsets(t *testing.T) {
	const topic, queues, n = "LitePullTopic", 4, 200
	c := testutil.StartCluster(t)
	raw := newRaw(t, c.BrokerAddr)
	createTopic(t, c, topic, queues)
	p := newProducer(t, c, "pg-litepull")
	results := sendN(t, p, topic, n, 4, func(i int) string { return "lp-" + strconv.Itoa(i) })
	at := map[string]string{} // "queue/offset" → body
	for i, r := range results {
		at[fmt.Sprintf("%d/%d", r.MessageQueue.QueueId, r.QueueOffset)] = "lp-" + strconv.Itoa(i)
	}

	// Poll: every message once, at the position its send result named, in queue order.
	rec := newRecorder()
	startPoller(t, c, "cg-litepull", topic, "*", rec.handler("poll"))
	want := bodies("lp-", n)
	rec.waitAll(t, want, 60*time.Second, "polled everything")
	raw.waitCommitted("cg-litepull", topic, queues)
	got, _ := rec.since(0)
	checkExactlyOnce(t, got, want, nil)
	next := map[int]int64{}
	for _, d := range got {
		require.Equal(t, at[fmt.Sprintf("%d/%d", d.queue, d.offset)], d.body, "message at queue %d offset %d", d.queue, d.offset)
		require.Equal(t, next[d.queue], d.offset, "queue %d read in order", d.queue)
		next[d.queue]++
	}

	// A group with no committed offset gets 0 on a queue that still holds offset 0.
	code, off := raw.offsetQuery(protocol.QueryConsumerOffset, map[string]string{
		"consumerGroup": "cg-never", "topic": topic, "queueId": "0"})
	require.Equal(t, protocol.Success, code)
	require.Zero(t, off)

	// PullFrom: exact ranges. The consumer is assigned no queue, so no background pulls or
	// rebalances race with PullFrom inside the official client (PullFrom writes to the
	// consumer and to the queue it is given; hence also the copies below).
	pc, err := rocketmq.NewPullConsumer(
		consumer.WithNsResolver(primitive.NewPassthroughResolver([]string{c.NamesrvAddr})),
		consumer.WithGroupName("cg-pullfrom"),
		consumer.WithInstance(instance("pf")),
	)
	require.NoError(t, err)
	require.NoError(t, pc.Assign(topic, nil))
	require.NoError(t, pc.Start())
	defer pc.Shutdown()
	routeMQs, err := pc.GetTopicRouteInfo(topic)
	require.NoError(t, err)
	require.Len(t, routeMQs, queues)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, routeMQ := range routeMQs {
		mq := &primitive.MessageQueue{Topic: routeMQ.Topic, BrokerName: routeMQ.BrokerName, QueueId: routeMQ.QueueId}
		maxOff := raw.maxOffset(topic, mq.QueueId)
		for _, from := range []int64{0, 7, maxOff - 3} {
			res, err := pc.PullFrom(ctx, mq, from, 10)
			require.NoError(t, err)
			require.Equal(t, primitive.PullFound, res.Status, "queue %d from %d", mq.QueueId, from)
			msgs := res.GetMessageExts()
			require.Len(t, msgs, int(min(10, maxOff-from)), "queue %d from %d", mq.QueueId, from)
			for i, m := range msgs {
				require.Equal(t, from+int64(i), m.QueueOffset)
				require.Equal(t, at[fmt.Sprintf("%d/%d", mq.QueueId, m.QueueOffset)], string(m.Body))
			}
			require.Equal(t, from+int64(len(msgs)), res.NextBeginOffset)
			require.Equal(t, maxOff, res.MaxOffset)
			require.Zero(t, res.MinOffset)
		}
		res, err := pc.PullFrom(ctx, mq, maxOff+5, 10)
		require.NoError(t, err)
		require.Equal(t, primitive.PullOffsetIllegal, res.Status, "queue %d beyond the end", mq.QueueId)
		require.Equal(t, maxOff, res.NextBeginOffset)
		off, err := pc.OffsetForTimestamp(mq, time.Now().Add(time.Hour).UnixMilli())
		require.NoError(t, err)
		require.Equal(t, maxOff, off, "offset for a future time")
	}
}
