package interop

import (
	"context"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
	"github.com/ferrymq/ferry/testutil"
)

// TestImpostorRegistrationIsRefused replays the attack of the security issue: an
// anonymous REGISTER_BROKER naming a live broker, with the impostor's address (refused),
// and the same frame with the real address on a connection that closes at once (it only
// shares the registration). Neither moves nor removes the live broker's routes nor
// changes its queue data, and the official producer keeps sending to the real broker.
func TestImpostorRegistrationIsRefused(t *testing.T) {
	const topic = "TakeoverTopic"
	c := testutil.StartCluster(t)
	createTopic(t, c, topic, 2)
	name := brokerName(t, c, topic)
	route, ok := c.NameServer.Table().TopicRoute(topic)
	require.True(t, ok)
	want := route.BrokerDatas[0].BrokerAddrs

	register := func(addr string) *remoting.Command {
		t.Helper()
		cli, err := remoting.NewClient(remoting.DefaultClientOptions())
		require.NoError(t, err)
		defer func() { require.NoError(t, cli.Close()) }() // the connection closes at once
		body, err := protocol.EncodeRegisterBrokerBody(&protocol.RegisterBrokerBody{TopicConfigSerializeWrapper: protocol.TopicConfigSerializeWrapper{
			TopicConfigTable: map[string]protocol.TopicConfig{topic: {TopicName: topic, ReadQueueNums: 8, WriteQueueNums: 8, Perm: 6}},
			DataVersion:      protocol.DataVersion{Counter: 999, Timestamp: time.Now().UnixMilli()}}})
		require.NoError(t, err)
		req := protocol.NewRequest(protocol.RegisterBroker, &protocol.RegisterBrokerRequestHeader{BrokerName: name, BrokerAddr: addr,
			ClusterName: "DefaultCluster", BrokerID: 0})
		req.Body = body
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := cli.Invoke(ctx, c.NamesrvAddr, req)
		require.NoError(t, err)
		return resp
	}
	resp := register("127.0.0.1:1")
	require.Equal(t, int16(protocol.SystemError), resp.Code)
	require.Contains(t, resp.Remark, "is bound to cluster DefaultCluster")
	// The real address: it only shares the live broker's registration (its queue data
	// are not read), and its connection closing removes nothing.
	resp = register(want[0])
	require.Equal(t, int16(protocol.Success), resp.Code, resp.Remark)

	// The impostor's connections are closed: the routes are the real broker's.
	testutil.Eventually(t, 5*time.Second, func() bool { return len(c.NameServer.Table().Brokers()) == 1 }, "one broker")
	route, ok = c.NameServer.Table().TopicRoute(topic)
	require.True(t, ok, "the route did not vanish")
	require.Equal(t, want, route.BrokerDatas[0].BrokerAddrs)
	require.EqualValues(t, 2, route.QueueDatas[0].WriteQueueNums, "the impostor's queue data was not taken")

	p := newProducer(t, c, "pg-takeover")
	raw := newRaw(t, c.BrokerAddr)
	before := raw.maxOffset(topic, 0) + raw.maxOffset(topic, 1)
	for range 20 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		res, err := p.SendSync(ctx, primitive.NewMessage(topic, []byte("x")))
		cancel()
		require.NoError(t, err)
		require.Equal(t, primitive.SendOK, res.Status)
	}
	testutil.Eventually(t, 10*time.Second, func() bool { return raw.maxOffset(topic, 0)+raw.maxOffset(topic, 1) == before+20 },
		"the real broker stored all 20")
}
