package interop

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
	"github.com/ferrymq/ferry/testutil"
)

// TestBrokerRestartKeepsState restarts the broker on its data directory and checks that
// messages, topics (routes and queue counts), subscription groups, the key index and
// consumer offsets survive, and that the official clients carry on.
func TestBrokerRestartKeepsState(t *testing.T) {
	const (
		topic, autoTopic = "RestartTopic", "RestartAutoTopic"
		group            = "cg-restart"
		queues           = 6
	)
	c := testutil.StartCluster(t)
	createTopic(t, c, topic, queues)
	p := newProducer(t, c, "pg-restart")
	before := bodies("before-", 300)
	sendN(t, p, topic, len(before), 4, func(i int) string { return before[i] })
	autoRes := sendN(t, p, autoTopic, 40, 2, func(i int) string { return "auto-" + strconv.Itoa(i) })

	// A group consumes everything sent so far and commits it; another group stays up
	// across the restart.
	raw := newRaw(t, c.BrokerAddr)
	rec := newRecorder()
	pc := newPushConsumer(t, c, group, topic, "*", rec.handler("first"))
	live := newRecorder()
	pcLive := newPushConsumer(t, c, "cg-restart-live", topic, "*", live.handler("live"))
	defer pcLive.Shutdown()
	rec.waitAll(t, before, 60*time.Second, "messages consumed before the restart")
	raw.waitCommitted(group, topic, queues)
	require.NoError(t, pc.Shutdown())

	// More messages nobody has consumed yet, with keys.
	pending := bodies("pending-", 200)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	pendingIDs := make([]string, len(pending))
	for i, b := range pending {
		msg := primitive.NewMessage(topic, []byte(b))
		msg.WithKeys([]string{"restart-key-" + strconv.Itoa(i)})
		res, err := p.SendSync(ctx, msg)
		require.NoError(t, err)
		pendingIDs[i] = res.OffsetMsgID
	}
	committed := make([]int64, queues)
	maxes := make([]int64, queues)
	for q := range queues {
		var ok bool
		committed[q], ok = raw.consumerOffset(group, topic, q)
		require.True(t, ok)
		maxes[q] = raw.maxOffset(topic, q)
	}

	live.waitAll(t, append(append([]string(nil), before...), pending...), 60*time.Second, "live group consumed all")
	raw.waitCommitted("cg-restart-live", topic, queues)

	c.RestartBroker(t)

	// Topics: routes with their queue counts, and the broker's own config (queue 5 of the
	// 6-queue topic is writable; an auto-created replacement would have only 4).
	for tp, n := range map[string]int32{topic: queues, autoTopic: 4, protocol.RetryTopic(group): 1} {
		route, ok := c.NameServer.Table().TopicRoute(tp)
		require.True(t, ok, "route of %s after the restart", tp)
		require.Equal(t, n, route.QueueDatas[0].WriteQueueNums, "queues of %s", tp)
	}
	h := protocol.SendMessageRequestHeader{ProducerGroup: "raw", Topic: topic, DefaultTopic: "TBW102",
		DefaultTopicQueueNums: 4, QueueID: queues - 1, BornTimestamp: time.Now().UnixMilli()}
	var ext remoting.Ext
	h.EncodeExtV2(&ext)
	resp := raw.call(protocol.SendMessageV2, ext.Map(), []byte("raw-after-restart"))
	require.Equal(t, int16(protocol.Success), resp.Code, resp.Remark)
	require.Equal(t, strconv.Itoa(queues-1), resp.Ext("queueId"))
	groups, err := newAdmin(t, c).GetAllSubscriptionGroup(ctx, c.BrokerAddr, 5*time.Second)
	require.NoError(t, err)
	_, ok := groups.SubscriptionGroupTable[group]
	require.True(t, ok, "subscription group %s kept", group)

	// Messages, offsets and the index.
	for q := range queues {
		off, ok := raw.consumerOffset(group, topic, q)
		require.True(t, ok, "offset of queue %d kept", q)
		require.Equal(t, committed[q], off, "committed offset of queue %d", q)
		want := maxes[q]
		if q == queues-1 {
			want++ // the raw send above
		}
		require.Equal(t, want, raw.maxOffset(topic, q), "max offset of queue %d", q)
	}
	for i, id := range pendingIDs {
		require.Equal(t, pending[i], string(raw.viewByOffsetID(id).Body))
	}
	for _, i := range []int{0, 77, 199} {
		require.Equal(t, pending[i], string(raw.queryOne(topic, "restart-key-"+strconv.Itoa(i), false).Body))
	}
	for _, r := range autoRes[:5] {
		require.Equal(t, autoTopic, string(raw.viewByOffsetID(r.OffsetMsgID).Topic))
	}

	// The same producer keeps sending.
	after := bodies("after-", 50)
	sendN(t, p, topic, len(after), 2, func(i int) string { return after[i] })

	// The group resumes where it stopped: only what it had not consumed arrives.
	rec2 := newRecorder()
	pc2 := newPushConsumer(t, c, group, topic, "*", rec2.handler("second"))
	defer pc2.Shutdown()
	want := append(append(append([]string(nil), pending...), after...), "raw-after-restart")
	rec2.waitAll(t, want, 60*time.Second, "messages pending at the restart consumed")
	raw.waitCommitted(group, topic, queues)
	got, _ := rec2.since(0)
	for _, d := range got {
		require.False(t, strings.HasPrefix(d.body, "before-"), "%s consumed again after the restart", d.body)
	}
	checkExactlyOnce(t, got, want, nil)

	// A new group still finds every message from the beginning.
	rec3 := newRecorder()
	pc3 := newPushConsumer(t, c, "cg-restart-new", topic, "*", rec3.handler("new"))
	defer pc3.Shutdown()
	rec3.waitAll(t, append(append([]string(nil), before...), want...), 60*time.Second, "all messages readable after the restart")

	// The consumer that stayed up reconnects and carries on without repeats. (Its pulls
	// carry no subscription, so, as with RocketMQ, they fail with SUBSCRIPTION_NOT_EXIST
	// until its next heartbeat, up to 30 s after the restart.)
	live.waitAll(t, want, 90*time.Second, "the live consumer resumed after the restart")
	raw.waitCommitted("cg-restart-live", topic, queues)
	got, _ = live.since(0)
	checkExactlyOnce(t, got, append(append([]string(nil), before...), want...), nil)
}
