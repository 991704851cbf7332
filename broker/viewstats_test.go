package broker_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/client"
	"github.com/ferrymq/ferry/internal/testkit"
	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
	"github.com/ferrymq/ferry/testutil"
)

// TestViewBrokerStatsData reads the put and get figures of VIEW_BROKER_STATS_DATA after
// a batch send and a pull, and RocketMQ's answer for a statistic never counted.
func TestViewBrokerStatsData(t *testing.T) {
	c := testutil.StartCluster(t)
	cl, err := client.New(client.WithNameServers(c.NamesrvAddr))
	require.NoError(t, err)
	defer func() { require.NoError(t, cl.Close()) }()
	p, err := cl.NewProducer("ViewStatsPG")
	require.NoError(t, err)
	defer func() { require.NoError(t, p.Close()) }()
	msgs := make([]*message.Message, 4)
	for i := range msgs {
		msgs[i] = message.NewMessage("ViewStatsT", []byte("0123456789"))
	}
	res, err := p.SendBatch(context.Background(), msgs)
	require.NoError(t, err)
	pc, err := cl.NewPullConsumer("ViewStatsCG")
	require.NoError(t, err)
	require.Len(t, res, 4)
	mq := client.MessageQueue{Topic: "ViewStatsT", BrokerName: res[0].BrokerName, QueueID: res[0].QueueID}
	var got, answers int // the broker dispatches to the queue in the background
	testkit.Eventually(t, 10*time.Second, func() bool {
		pr, err := pc.Pull(context.Background(), mq, int64(got), 32, "*")
		if err != nil { // the name servers learn an auto-created topic with the next registration
			return false
		}
		if len(pr.Messages) > 0 {
			got, answers = got+len(pr.Messages), answers+1
		}
		return got == 4
	}, "the pull consumer gets the 4 messages")

	rc, err := remoting.NewClient(remoting.DefaultClientOptions())
	require.NoError(t, err)
	defer func() { require.NoError(t, rc.Close()) }()
	view := func(name, key string) *remoting.Command {
		return call(t, rc, c.BrokerAddr, protocol.ViewBrokerStatsData,
			&protocol.ViewBrokerStatsDataRequestHeader{StatsName: name, StatsKey: key}, nil)
	}
	for _, tc := range []struct {
		name, key string
		calls     int
	}{
		{protocol.StatsTopicPutNums, "ViewStatsT", 1},
		{protocol.StatsGroupGetNums, "ViewStatsT@ViewStatsCG", answers},
	} {
		resp := view(tc.name, tc.key)
		require.Equal(t, int16(protocol.Success), resp.Code, resp.Remark)
		d, err := protocol.DecodeBrokerStatsData(resp.Body)
		require.NoError(t, err)
		require.Equal(t, int64(4), d.StatsMinute.Sum, tc.name)
		require.Equal(t, int64(4), d.StatsHour.Sum, tc.name)
		require.Equal(t, int64(4), d.StatsDay.Sum, tc.name)
		require.InDelta(t, 4/float64(tc.calls), d.StatsMinute.AvgPT, 1e-9, "%s: messages per batch request or pull answer", tc.name)
		require.Positive(t, d.StatsMinute.TPS)
	}
	resp := view(protocol.StatsTopicPutSize, "ViewStatsT")
	d, err := protocol.DecodeBrokerStatsData(resp.Body)
	require.NoError(t, err)
	require.Greater(t, d.StatsMinute.Sum, int64(40), "4 bodies of 10 bytes, and the records around them")

	// GET_TOPIC_STATS_INFO and GET_CONSUME_STATS carry the minute's rates.
	resp = call(t, rc, c.BrokerAddr, protocol.GetTopicStatsInfo, &protocol.GetTopicStatsInfoRequestHeader{Topic: "ViewStatsT"}, nil)
	ts, err := protocol.DecodeTopicStatsTable(resp.Body)
	require.NoError(t, err)
	require.Positive(t, ts.TopicPutTps)
	cs, err := cl.Admin().ConsumeStats(context.Background(), "ViewStatsCG", "ViewStatsT")
	require.NoError(t, err)
	require.Positive(t, cs.ConsumeTPS)
	cs, err = cl.Admin().ConsumeStats(context.Background(), "ViewStatsNobody", "ViewStatsT")
	require.NoError(t, err)
	require.Zero(t, cs.ConsumeTPS, "a group that got nothing")

	resp = view(protocol.StatsTopicPutNums, "NeverSent")
	require.Equal(t, int16(protocol.SystemError), resp.Code)
	require.Equal(t, "The stats <TOPIC_PUT_NUMS> <NeverSent> not exist", resp.Remark)

	_, err = cl.Admin().BrokerStats(context.Background(), res[0].BrokerName, protocol.StatsGroupGetNums, "ViewStatsT@Nobody")
	require.ErrorIs(t, err, client.ErrNotFound)
	size, err := cl.Admin().BrokerStats(context.Background(), c.BrokerAddr, protocol.StatsGroupGetSize, "ViewStatsT@ViewStatsCG")
	require.NoError(t, err)
	require.Greater(t, size.StatsMinute.Sum, int64(40))
}
