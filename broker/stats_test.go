package broker_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/client"
	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
	"github.com/ferrymq/ferry/testutil"
)

// call sends one admin request to the broker and returns the response.
func call(t *testing.T, rc *remoting.Client, addr string, code protocol.RequestCode, h protocol.Header, body []byte) *remoting.Command {
	t.Helper()
	req := protocol.NewRequest(code, h)
	req.Body = body
	resp, err := rc.Invoke(context.Background(), addr, req)
	require.NoError(t, err)
	return resp
}

// TestAdminRequests drives the statistics, connection, subscription-group and
// configuration requests an operator's tool sends, against a broker with a producer,
// a consumer group and committed offsets.
func TestAdminRequests(t *testing.T) {
	c := testutil.StartCluster(t)
	cl, err := client.New(client.WithNameServers(c.NamesrvAddr), client.WithHeartbeat(50*time.Millisecond),
		client.WithRequestTimeout(time.Second))
	require.NoError(t, err)
	defer func() { require.NoError(t, cl.Close()) }()
	p, err := cl.NewProducer("StatsPG")
	require.NoError(t, err)
	defer func() { require.NoError(t, p.Close()) }()
	for i := range 40 {
		_, err := p.Send(context.Background(), message.NewMessage("StatsTopic", fmt.Appendf(nil, "m%d", i)))
		require.NoError(t, err)
	}
	got := make(chan struct{}, 64)
	pc, err := cl.NewPushConsumer("StatsCG", "StatsTopic", "*", func(_ context.Context, msgs []*client.MessageExt) client.ConsumeResult {
		for range msgs {
			got <- struct{}{}
		}
		return client.ConsumeSuccess
	}, client.WithCommitInterval(20*time.Millisecond), client.WithConsumeFrom(client.ConsumeFromFirstOffset))
	require.NoError(t, err)
	require.NoError(t, pc.Start(context.Background()))
	defer func() { require.NoError(t, pc.Close()) }()
	for range 40 {
		select {
		case <-got:
		case <-time.After(10 * time.Second):
			t.Fatal("consumer did not get every message")
		}
	}

	rc, err := remoting.NewClient(remoting.DefaultClientOptions())
	require.NoError(t, err)
	defer func() { require.NoError(t, rc.Close()) }()
	addr := c.BrokerAddr

	// Topic stats: 40 messages over the topic's queues, with store times.
	resp := call(t, rc, addr, protocol.GetTopicStatsInfo, &protocol.GetTopicStatsInfoRequestHeader{Topic: "StatsTopic"}, nil)
	require.Equal(t, int16(protocol.Success), resp.Code, resp.Remark)
	stats, err := protocol.DecodeTopicStatsTable(resp.Body)
	require.NoError(t, err)
	var total int64
	for mq, o := range stats.OffsetTable {
		require.Equal(t, "StatsTopic", mq.Topic)
		total += o.MaxOffset - o.MinOffset
		if o.MaxOffset > 0 {
			require.Positive(t, o.LastUpdateTimestamp)
		}
	}
	require.Equal(t, int64(40), total)
	resp = call(t, rc, addr, protocol.GetTopicStatsInfo, &protocol.GetTopicStatsInfoRequestHeader{Topic: "NoSuchTopic"}, nil)
	require.Equal(t, int16(protocol.TopicNotExist), resp.Code)

	// Consume stats: the group catches up (lag 0) once its offsets are committed.
	testutil.Eventually(t, 10*time.Second, func() bool {
		resp := call(t, rc, addr, protocol.GetConsumeStats, &protocol.GetConsumeStatsRequestHeader{ConsumerGroup: "StatsCG", Topic: "StatsTopic"}, nil)
		cs, err := protocol.DecodeConsumeStats(resp.Body)
		if err != nil || len(cs.OffsetTable) == 0 {
			return false
		}
		var lag, broker int64
		for _, o := range cs.OffsetTable {
			lag += o.BrokerOffset - o.ConsumerOffset
			broker += o.BrokerOffset
		}
		return lag == 0 && broker == 40
	}, "consume stats show the group caught up")

	// Connections.
	resp = call(t, rc, addr, protocol.GetConsumerConnectionList, &protocol.GetConsumerConnectionListRequestHeader{ConsumerGroup: "StatsCG"}, nil)
	require.Equal(t, int16(protocol.Success), resp.Code, resp.Remark)
	cc, err := protocol.DecodeConsumerConnection(resp.Body)
	require.NoError(t, err)
	require.Len(t, cc.ConnectionSet, 1)
	require.Equal(t, cl.ClientID(), cc.ConnectionSet[0].ClientID)
	require.Contains(t, cc.SubscriptionTable, "StatsTopic")
	resp = call(t, rc, addr, protocol.GetConsumerConnectionList, &protocol.GetConsumerConnectionListRequestHeader{ConsumerGroup: "Nobody"}, nil)
	require.Equal(t, int16(protocol.ConsumerNotOnline), resp.Code)
	testutil.Eventually(t, 5*time.Second, func() bool {
		resp := call(t, rc, addr, protocol.GetProducerConnectionList, &protocol.GetProducerConnectionListRequestHeader{ProducerGroup: "StatsPG"}, nil)
		pcn, err := protocol.DecodeProducerConnection(resp.Body)
		return err == nil && len(pcn.ConnectionSet) == 1
	}, "the producer's connection is listed")

	// Who consumes the topic.
	resp = call(t, rc, addr, protocol.QueryTopicConsumeByWho, &protocol.QueryTopicConsumeByWhoRequestHeader{Topic: "StatsTopic"}, nil)
	gl, err := protocol.DecodeGroupList(resp.Body)
	require.NoError(t, err)
	require.Equal(t, []string{"StatsCG"}, gl.GroupList)

	// Subscription groups: create, see it in the table, delete it with its offsets.
	sg := protocol.SubscriptionGroupConfig{GroupName: "AdminMadeCG", ConsumeEnable: true, RetryQueueNums: 1, RetryMaxTimes: 3,
		NotifyConsumerIDsChangedEnable: true, ConsumeBroadcastEnable: true}
	body, err := protocol.EncodeSubscriptionGroupConfig(&sg)
	require.NoError(t, err)
	resp = call(t, rc, addr, protocol.UpdateAndCreateSubscriptionGroup, nil, body)
	require.Equal(t, int16(protocol.Success), resp.Code, resp.Remark)
	resp = call(t, rc, addr, protocol.GetAllSubscriptionGroupConfig, nil, nil)
	require.Contains(t, string(resp.Body), `"AdminMadeCG"`)
	require.Contains(t, string(resp.Body), `"retryMaxTimes":3`)
	resp = call(t, rc, addr, protocol.DeleteSubscriptionGroup, &protocol.DeleteSubscriptionGroupRequestHeader{GroupName: "AdminMadeCG", CleanOffset: true}, nil)
	require.Equal(t, int16(protocol.Success), resp.Code, resp.Remark)
	resp = call(t, rc, addr, protocol.GetAllSubscriptionGroupConfig, nil, nil)
	require.NotContains(t, string(resp.Body), `"AdminMadeCG"`)

	// Broker config and runtime info.
	resp = call(t, rc, addr, protocol.GetBrokerConfig, nil, nil)
	require.Equal(t, int16(protocol.Success), resp.Code, resp.Remark)
	props, err := protocol.DecodeConfigProperties(resp.Body)
	require.NoError(t, err)
	require.Equal(t, "broker-a", props["brokerName"])
	require.Equal(t, "ASYNC_FLUSH", props["flushDiskType"])
	resp = call(t, rc, addr, protocol.GetBrokerRuntimeInfo, nil, nil)
	kv, err := protocol.DecodeKVTable(resp.Body)
	require.NoError(t, err)
	puts, err := strconv.ParseInt(kv.Table["msgPutTotalTodayNow"], 10, 64)
	require.NoError(t, err)
	require.GreaterOrEqual(t, puts, int64(40))
	gets, err := strconv.ParseInt(kv.Table["msgGetTotalTodayNow"], 10, 64)
	require.NoError(t, err)
	require.GreaterOrEqual(t, gets, int64(40))
	require.Equal(t, "0", kv.Table["ferryQuarantinedRanges"])
	require.NotEmpty(t, kv.Table["putTps"])
	require.NotEmpty(t, kv.Table["commitLogMaxOffset"])
}
