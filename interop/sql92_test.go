package interop

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/testutil"
)

// TestSQL92Subscriptions: an official push consumer subscribing with an SQL92 selector
// gets exactly the messages it matches, a TAG consumer of the same topic gets its own, and
// a malformed expression is refused (heartbeat, CHECK_CLIENT_CONFIG and pulls answer
// SUBSCRIPTION_PARSE_FAILED naming it) instead of delivering everything.
func TestSQL92Subscriptions(t *testing.T) {
	const topic, n = "SqlTopic", 240
	c := testutil.StartCluster(t)
	createTopic(t, c, topic, 3)
	p := newProducer(t, c, "pg-sql")
	color := func(i int) string { return []string{"red", "blue", "green"}[i%3] }
	tag := func(i int) string { return []string{"TagA", "TagB"}[i%2] }
	var wantSQL, wantTag []string
	for i := range n {
		body := fmt.Sprintf("sql-%d", i)
		msg := primitive.NewMessage(topic, []byte(body))
		msg.WithTag(tag(i))
		msg.WithProperty("n", strconv.Itoa(i))
		msg.WithProperty("color", color(i))
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := p.SendSync(ctx, msg)
		cancel()
		require.NoError(t, err)
		if i >= 100 && color(i) == "red" {
			wantSQL = append(wantSQL, body)
		}
		if tag(i) == "TagA" {
			wantTag = append(wantTag, body)
		}
	}
	sqlRec, tagRec, badRec := newRecorder(), newRecorder(), newRecorder()
	newSelectorConsumer(t, c, "cg-sql", topic, consumer.MessageSelector{Type: consumer.SQL92, Expression: "n >= 100 AND color = 'red'"},
		sqlRec.handler("sql"))
	newPushConsumer(t, c, "cg-sql-tag", topic, "TagA", tagRec.handler("tag"))
	newSelectorConsumer(t, c, "cg-sql-bad", topic, consumer.MessageSelector{Type: consumer.SQL92, Expression: "n >>= 1"},
		badRec.handler("bad"))
	sqlRec.waitAll(t, wantSQL, 60*time.Second, "the SQL92 consumer's messages")
	tagRec.waitAll(t, wantTag, 60*time.Second, "the TAG consumer's messages")
	_, got := sqlRec.since(0)
	require.Equal(t, len(wantSQL), got, "nothing the expression does not match")
	_, got = tagRec.since(0)
	require.Equal(t, len(wantTag), got)
	_, got = badRec.since(0)
	require.Zero(t, got, "a malformed expression delivers nothing")

	raw := newRaw(t, c.BrokerAddr)
	bad := protocol.SubscriptionData{Topic: topic, SubString: "n >>= 1", ExpressionType: protocol.ExpressionSQL92, SubVersion: 1}
	body, err := protocol.EncodeCheckClientRequestBody(&protocol.CheckClientRequestBody{ClientID: "x@1", Group: "cg-sql-bad", SubscriptionData: &bad})
	require.NoError(t, err)
	resp := raw.call(protocol.CheckClientConfig, nil, body)
	require.Equal(t, int16(protocol.SubscriptionParseFailed), resp.Code)
	require.Contains(t, resp.Remark, "n >>= 1")
	good := bad
	good.SubString = "color IN ('red', 'blue')"
	body, err = protocol.EncodeCheckClientRequestBody(&protocol.CheckClientRequestBody{ClientID: "x@1", Group: "cg-sql-bad", SubscriptionData: &good})
	require.NoError(t, err)
	resp = raw.call(protocol.CheckClientConfig, nil, body)
	require.Equal(t, int16(protocol.Success), resp.Code, resp.Remark)

	hb, err := protocol.EncodeHeartbeatData(&protocol.HeartbeatData{ClientID: "x@1", ConsumerDataSet: []protocol.ConsumerData{{
		GroupName: "cg-sql-raw", ConsumeType: "CONSUME_PASSIVELY", MessageModel: "CLUSTERING", ConsumeFromWhere: "CONSUME_FROM_FIRST_OFFSET",
		SubscriptionDataSet: []protocol.SubscriptionData{bad}}}})
	require.NoError(t, err)
	resp = raw.call(protocol.HeartBeat, nil, hb)
	require.Equal(t, int16(protocol.SubscriptionParseFailed), resp.Code)
	require.Contains(t, resp.Remark, "cg-sql-raw")
	resp = raw.call(protocol.PullMessage, map[string]string{"consumerGroup": "cg-sql-raw", "topic": topic, "queueId": "0",
		"queueOffset": "0", "maxMsgNums": "32", "sysFlag": "0", "commitOffset": "0", "suspendTimeoutMillis": "0",
		"subscription": "", "subVersion": "0"}, nil)
	require.Equal(t, int16(protocol.SubscriptionParseFailed), resp.Code, "a pull of the refused subscription")
}
