package interop

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/testutil"
)

// TestAdminCallsReachOfficialConsumer drives the admin requests the broker carries out
// with calls to a live official push consumer: INVOKE_BROKER_TO_RESET_OFFSET (the
// broker's RESET_CONSUMER_CLIENT_OFFSET makes it read the topic again from the start),
// CONSUME_MESSAGE_DIRECTLY (its handler gets one stored message) and
// GET_CONSUMER_RUNNING_INFO (its subscriptions and queues, with and without a goroutine
// dump, which the Go client writes unescaped).
func TestAdminCallsReachOfficialConsumer(t *testing.T) {
	const (
		topic  = "AdminCallTopic"
		group  = "cg-admin-calls"
		queues = 2
		n      = 10
	)
	c := testutil.StartCluster(t)
	raw := newRaw(t, c.BrokerAddr)
	createTopic(t, c, topic, queues)
	p := newProducer(t, c, "pg-admin-calls")
	sent := bodies("reset-", n)
	results := sendN(t, p, topic, n, 2, func(i int) string { return sent[i] })
	rec := newRecorder()
	newPushConsumer(t, c, group, topic, "*", rec.handler("official"))
	rec.waitAll(t, sent, 30*time.Second, "first reading")
	raw.waitCommitted(group, topic, queues)
	for _, b := range sent {
		require.Equal(t, 1, rec.count(b), "%s read once before the reset", b)
	}
	var clientID string
	testutil.Eventually(t, 10*time.Second, func() bool {
		ids := raw.consumerIDs(group)
		if len(ids) == 1 {
			clientID = ids[0]
		}
		return clientID != ""
	}, "the consumer is registered")

	// Reset to the earliest offset: the broker stores 0s and tells the consumer, which
	// (after its 10 s pause) reads every message again.
	resp := raw.call(protocol.InvokeBrokerToResetOffset, map[string]string{
		"topic": topic, "group": group, "timestamp": "0", "isForce": "true"}, nil)
	require.Equal(t, int16(protocol.Success), resp.Code, resp.Remark)
	table, err := protocol.DecodeResetOffsetBody(resp.Body)
	require.NoError(t, err)
	bname := brokerName(t, c, topic)
	require.Len(t, table.OffsetTable, queues)
	for q := range queues {
		off, ok := table.OffsetTable[protocol.MessageQueue{Topic: topic, BrokerName: bname, QueueID: int32(q)}]
		require.True(t, ok, "queue %d in the answer", q)
		require.Zero(t, off, "queue %d reset to its first message", q)
	}
	// The Go client sleeps 10 s, drops the queues and takes them back at its next
	// rebalance (every 20 s), so a loaded machine can take a while.
	testutil.Eventually(t, 120*time.Second, func() bool {
		for _, b := range sent {
			if rec.count(b) < 2 {
				return false
			}
		}
		return true
	}, "every message read again after the reset")
	raw.waitCommitted(group, topic, queues)

	// Consume one message directly: the consumer's handler gets it once more.
	before := rec.count(sent[3])
	resp = raw.call(protocol.ConsumeMessageDirectly, map[string]string{
		"consumerGroup": group, "clientId": clientID, "msgId": results[3].OffsetMsgID}, nil)
	require.Equal(t, int16(protocol.Success), resp.Code, resp.Remark)
	res, err := protocol.DecodeConsumeMessageDirectlyResult(resp.Body)
	require.NoError(t, err)
	require.Equal(t, protocol.CMResultSuccess, res.ConsumeResult)
	require.Equal(t, before+1, rec.count(sent[3]), "the handler got the message")

	// Running info, through the broker.
	for _, jstack := range []bool{false, true} {
		resp = raw.call(protocol.GetConsumerRunningInfo, map[string]string{
			"consumerGroup": group, "clientId": clientID, "jstackEnable": strconv.FormatBool(jstack)}, nil)
		require.Equal(t, int16(protocol.Success), resp.Code, resp.Remark)
		info, err := protocol.DecodeConsumerRunningInfo(resp.Body)
		require.NoError(t, err, "%s", resp.Body)
		var topics []string
		for _, s := range info.SubscriptionSet {
			topics = append(topics, s.Topic)
		}
		require.Contains(t, topics, topic)
		require.Equal(t, "CONSUME_PASSIVELY", info.Properties[protocol.PropConsumeType])
		for q := range queues {
			mq := protocol.MessageQueue{Topic: topic, BrokerName: bname, QueueID: int32(q)}
			require.Contains(t, info.MQTable, mq)
			require.Equal(t, raw.maxOffset(topic, q), info.MQTable[mq].CommitOffset, "queue %d consumed to the end", q)
		}
		require.Equal(t, jstack, strings.Contains(info.Jstack, "goroutine"), "a dump only when asked")
	}

	// A client that is not there.
	resp = raw.call(protocol.GetConsumerRunningInfo, map[string]string{"consumerGroup": group, "clientId": "10.9.9.9@nobody"}, nil)
	require.Equal(t, int16(protocol.ConsumerNotOnline), resp.Code)
	resp = raw.call(protocol.ConsumeMessageDirectly, map[string]string{
		"consumerGroup": group, "clientId": "10.9.9.9@nobody", "msgId": results[0].OffsetMsgID}, nil)
	require.Equal(t, int16(protocol.ConsumerNotOnline), resp.Code)
}
