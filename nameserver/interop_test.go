// The official RocketMQ Go producer fetches routes from this name server.

package nameserver

import (
	"context"
	"net"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"
	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
)

// sentMessage is what the fake broker saw of one send.
type sentMessage struct {
	topic   string
	queueID int32
	body    string
}

// startFakeBroker starts a remoting server that answers HEART_BEAT and the
// send requests with a fixed SUCCESS (offset msgId per spec §6.1/§8.5), which
// is all a producer needs from a broker.
func startFakeBroker(t *testing.T) (addr string, sent <-chan sentMessage) {
	t.Helper()
	rs, err := remoting.NewServer(remoting.DefaultServerOptions())
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	host, err := netip.ParseAddrPort(ln.Addr().String())
	require.NoError(t, err)

	ch := make(chan sentMessage, 16)
	var offset atomic.Int64
	send := remoting.HandlerFunc(func(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
		h, err := protocol.DecodeSendMessageRequestHeader(protocol.RequestCode(req.Code), req.ExtFields)
		if err != nil {
			return nil, err
		}
		queueID := max(h.QueueID, 0)
		n := offset.Add(1) - 1
		select {
		case ch <- sentMessage{topic: h.Topic, queueID: queueID, body: string(req.Body)}:
		default:
		}
		resp := remoting.NewResponse(req, int16(protocol.Success), "")
		resp.ExtFields = protocol.NewExt(&protocol.SendMessageResponseHeader{
			MsgID:       message.OffsetMsgID(host, n*100),
			QueueID:     queueID,
			QueueOffset: n,
			MsgRegion:   "DefaultRegion",
		})
		return resp, nil
	})
	heartbeat := remoting.HandlerFunc(func(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
		resp := remoting.NewResponse(req, int16(protocol.Success), "")
		resp.Version = remoting.Version
		return resp, nil
	})
	require.NoError(t, rs.Handle(int16(protocol.HeartBeat), "", heartbeat))
	require.NoError(t, rs.Handle(int16(protocol.SendMessage), "", send))
	require.NoError(t, rs.Handle(int16(protocol.SendMessageV2), "", send))
	require.NoError(t, rs.Start(ln))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		require.NoError(t, rs.Shutdown(ctx))
	})
	return host.String(), ch
}

func TestOfficialProducerSendsThroughTheRoute(t *testing.T) {
	rlog.SetLogLevel("error")
	ns := startServer(t, nil)
	brokerAddr, sent := startFakeBroker(t)

	// The fake broker registers through a connection that stays open.
	reg := newClient(t, remoting.SerializeJSON)
	h := regHeader("DefaultCluster", "broker-interop", brokerAddr, 0)
	perm := protocol.PermRead | protocol.PermWrite
	resp := invoke(t, reg, ns.Addr(), registerRequest(t, h, regBody(1,
		topicConfig("InteropTopic", 4, perm),
		topicConfig(protocol.AutoCreateTopicKey, 8, perm|protocol.PermInherit))))
	require.Equal(t, int16(protocol.Success), resp.Code, resp.Remark)

	// producer.NewDefaultProducer is what rocketmq.NewProducer returns; the
	// root package would also pull in the consumer and its dependencies.
	p, err := producer.NewDefaultProducer(
		producer.WithNsResolver(primitive.NewPassthroughResolver([]string{ns.Addr()})),
		producer.WithGroupName("ferry_ns_interop"),
		producer.WithInstanceName("ferry-ns-interop"),
		producer.WithRetry(1),
		producer.WithSendMsgTimeout(3*time.Second),
	)
	require.NoError(t, err)
	require.NoError(t, p.Start())
	defer func() { require.NoError(t, p.Shutdown()) }()

	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()

	for _, topic := range []string{"InteropTopic", "AutoCreatedViaTBW102"} {
		res, err := p.SendSync(ctx, primitive.NewMessage(topic, []byte("hello "+topic)))
		require.NoError(t, err, topic)
		require.Equal(t, primitive.SendOK, res.Status, res.String())
		require.Equal(t, "broker-interop", res.MessageQueue.BrokerName)
		require.Equal(t, topic, res.MessageQueue.Topic)
		require.NotEmpty(t, res.OffsetMsgID)

		select {
		case m := <-sent:
			require.Equal(t, topic, m.topic)
			require.Equal(t, "hello "+topic, m.body)
			require.Equal(t, int32(res.MessageQueue.QueueId), m.queueID)
		case <-ctx.Done():
			t.Fatal("the fake broker saw no send")
		}
	}
}
