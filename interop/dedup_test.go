package interop

import (
	"context"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/broker"
	"github.com/ferrymq/ferry/client"
	"github.com/ferrymq/ferry/conf"
	"github.com/ferrymq/ferry/internal/testkit"
	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
	"github.com/ferrymq/ferry/testutil"
)

// createTopicWithAttributes creates topic on the cluster's broker with a raw
// UPDATE_AND_CREATE_TOPIC carrying RocketMQ 5 attribute changes, and returns the answer.
func createTopicWithAttributes(t *testing.T, c *testutil.Cluster, topic, attrs string) *remoting.Command {
	t.Helper()
	h := protocol.CreateTopicRequestHeader{Topic: topic, DefaultTopic: "TBW102", ReadQueueNums: 4, WriteQueueNums: 4,
		Perm: protocol.PermRead | protocol.PermWrite, TopicFilterType: protocol.SingleTag, Attributes: attrs}
	var ext remoting.Ext
	h.EncodeExt(&ext)
	return newRaw(t, c.BrokerAddr).call(protocol.UpdateAndCreateTopic, ext.Map(), nil)
}

// runtimeInfo reads one key of the broker's GET_BROKER_RUNTIME_INFO table.
func runtimeInfo(t *testing.T, addr, key string) string {
	t.Helper()
	resp := newRaw(t, addr).call(protocol.GetBrokerRuntimeInfo, nil, nil)
	require.Equal(t, int16(protocol.Success), resp.Code)
	kv, err := protocol.DecodeKVTable(resp.Body)
	require.NoError(t, err)
	return kv.Table[key]
}

// storedCopies counts the records of topic whose UNIQ_KEY is key on the cluster's broker,
// once it has indexed everything it stored so far.
func storedCopies(t *testing.T, c *testutil.Cluster, topic, key string) int {
	t.Helper()
	return copiesOn(t, c.Broker, c.BrokerAddr, topic, key)
}

// copiesOn counts the records of topic whose UNIQ_KEY is key on broker b at addr.
func copiesOn(t *testing.T, b *broker.Broker, addr, topic, key string) int {
	t.Helper()
	st := b.Store()
	_, end := st.CommitLogRange()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, st.WaitDispatched(ctx, end))
	code, recs := newRaw(t, addr).queryByKey(topic, key, true)
	if code == protocol.QueryNotFound {
		return 0
	}
	require.Equal(t, protocol.Success, code)
	return len(recs)
}

func TestTopicAttributesAreCheckedAndKept(t *testing.T) {
	c := testutil.StartCluster(t)
	require.Equal(t, int16(protocol.Success), createTopicWithAttributes(t, c, "AttrTopic", "+dedupWindow=10m").Code)
	for _, bad := range []string{"+dedupWindow=forever", "+dedupWindow=100h", "+noSuchAttribute=1", "-message.type", "dedupWindow=1m"} {
		resp := createTopicWithAttributes(t, c, "AttrTopic", bad)
		require.Equal(t, int16(protocol.InvalidParameter), resp.Code, bad)
		require.NotEmpty(t, resp.Remark, bad)
	}
	// An update without attributes keeps them; a removal drops one.
	require.Equal(t, int16(protocol.Success), createTopicWithAttributes(t, c, "AttrTopic", "").Code)
	require.Equal(t, map[string]string{"dedupWindow": "10m"}, topicAttributes(t, c, "AttrTopic"))
	require.Equal(t, int16(protocol.Success), createTopicWithAttributes(t, c, "AttrTopic", "-dedupWindow,+message.type=NORMAL").Code)
	require.Equal(t, map[string]string{"message.type": "NORMAL"}, topicAttributes(t, c, "AttrTopic"))
	c.RestartBroker(t)
	require.Equal(t, map[string]string{"message.type": "NORMAL"}, topicAttributes(t, c, "AttrTopic"), "kept in topics.json")
}

// topicAttributes reads a topic's attributes from GET_ALL_TOPIC_CONFIG.
func topicAttributes(t *testing.T, c *testutil.Cluster, topic string) map[string]string {
	t.Helper()
	resp := newRaw(t, c.BrokerAddr).call(protocol.GetAllTopicConfig, nil, nil)
	require.Equal(t, int16(protocol.Success), resp.Code)
	w, err := protocol.DecodeTopicConfigSerializeWrapper(resp.Body)
	require.NoError(t, err)
	cfg, ok := w.TopicConfigTable[topic]
	require.True(t, ok)
	return cfg.Attributes
}

// TestDedupWindowStoresRetriesOnce loses the answer of a stored send between the broker
// and a client (a fault-injecting proxy the broker advertises), Ferry's and then the
// official one: the client retries with the same UNIQ_KEY. A topic with a dedup window stores the message once and
// answers the retry with the first result; a topic without one stores it twice (the fault
// is real). After a restart the window is still there: a third send of the key stores
// nothing.
func TestDedupWindowStoresRetriesOnce(t *testing.T) {
	c := testutil.StartCluster(t)
	proxy := testkit.StartProxy(t, c.BrokerAddr)
	// The name server keeps the first binding of the broker's name to its own address
	// until it expires: the broker comes back under another name at the proxy's.
	c.SetBrokerConfig(func(cfg *conf.BrokerConfig) { cfg.BrokerName = "dedup-broker" })
	c.SetBrokerOptions(func(o *broker.Options) { o.AdvertisedAddr = proxy.Addr() })
	c.RestartBroker(t)
	require.Equal(t, int16(protocol.Success), createTopicWithAttributes(t, c, "DedupTopic", "+dedupWindow=10m").Code)
	require.Equal(t, int16(protocol.Success), createTopicWithAttributes(t, c, "PlainTopic", "").Code)
	p := newProducer(t, c, "dedup-producer")

	send := func(topic string) *primitive.SendResult {
		// A first send opens the producer's connection, so the cut hits a send's answer.
		_, err := p.SendSync(context.Background(), primitive.NewMessage(topic, []byte("warm-up")))
		require.NoError(t, err)
		cuts := proxy.RepliesCut()
		proxy.CutReplies(1)
		msg := primitive.NewMessage(topic, []byte("exactly once"))
		res, err := p.SendSync(context.Background(), msg)
		require.NoError(t, err, "the client's retry succeeds")
		require.Equal(t, cuts+1, proxy.RepliesCut(), "one answer was lost")
		return res
	}

	// Ferry's client: its retry of an unanswered send keeps the message's UNIQ_KEY too.
	fc, err := client.New(client.WithNameServers(c.NamesrvAddr), client.WithInstanceName(instance("dedup-ferry")))
	require.NoError(t, err)
	t.Cleanup(func() { _ = fc.Close() })
	fp, err := fc.NewProducer("dedup-ferry-producer")
	require.NoError(t, err)
	t.Cleanup(func() { _ = fp.Close() })
	_, err = fp.Send(context.Background(), message.NewMessage("DedupTopic", []byte("warm-up")))
	require.NoError(t, err)
	cuts := proxy.RepliesCut()
	proxy.CutReplies(1)
	fres, err := fp.Send(context.Background(), message.NewMessage("DedupTopic", []byte("exactly once, ferry")))
	require.NoError(t, err, "the client's retry succeeds")
	require.Equal(t, cuts+1, proxy.RepliesCut(), "one answer was lost")
	require.Equal(t, 1, storedCopies(t, c, "DedupTopic", fres.MsgID), "stored once")
	require.Equal(t, "1", runtimeInfo(t, c.BrokerAddr, "ferryDedupDuplicates"))

	res := send("DedupTopic")
	require.Equal(t, 1, storedCopies(t, c, "DedupTopic", res.MsgID), "stored once")
	require.Equal(t, "2", runtimeInfo(t, c.BrokerAddr, "ferryDedupDuplicates"))
	plain := send("PlainTopic")
	require.Equal(t, 2, storedCopies(t, c, "PlainTopic", plain.MsgID), "without a window the retry is stored again")

	// The window survives a restart: the table is refilled from the store.
	c.RestartBroker(t)
	props, err := message.EncodeProperties(map[string]string{message.PropertyUniqKey: res.MsgID})
	require.NoError(t, err)
	h := protocol.SendMessageRequestHeader{ProducerGroup: "raw", Topic: "DedupTopic", DefaultTopic: "TBW102",
		QueueID: -1, BornTimestamp: time.Now().UnixMilli(), Properties: string(props)}
	var ext remoting.Ext
	h.EncodeExtV2(&ext)
	resp := newRaw(t, c.BrokerAddr).call(protocol.SendMessageV2, ext.Map(), []byte("exactly once"))
	require.Equal(t, int16(protocol.Success), resp.Code)
	var rh protocol.SendMessageResponseHeader
	require.NoError(t, rh.DecodeExt(resp.ExtFields))
	require.Equal(t, res.OffsetMsgID, rh.MsgID, "answered with the first send's message id")
	require.Equal(t, res.QueueOffset, rh.QueueOffset)
	require.Equal(t, 1, storedCopies(t, c, "DedupTopic", res.MsgID))
}

// TestIdempotentProducerRetriesOnItsGroup: two broker groups hold a topic with a dedup
// window, and the answer of one send to the first group is lost. Ferry's producer retries
// on another group by default (the message is then stored once in each); with
// WithIdempotence it retries on the same group, whose memory answers it: one copy.
func TestIdempotentProducerRetriesOnItsGroup(t *testing.T) {
	c := testutil.StartCluster(t)
	other := c.StartBrokerGroup(t, "broker-b")
	proxy := testkit.StartProxy(t, c.BrokerAddr)
	c.SetBrokerConfig(func(cfg *conf.BrokerConfig) { cfg.BrokerName = "dedup-broker" })
	c.SetBrokerOptions(func(o *broker.Options) { o.AdvertisedAddr = proxy.Addr() })
	c.RestartBroker(t)

	fc, err := client.New(client.WithNameServers(c.NamesrvAddr), client.WithInstanceName(instance("idem")))
	require.NoError(t, err)
	t.Cleanup(func() { _ = fc.Close() })
	const topic = "IdemTopic"
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, fc.Admin().CreateTopic(ctx, client.TopicConfig{Name: topic, ReadQueues: 2, WriteQueues: 2,
		Attributes: map[string]string{"dedupWindow": "10m"}}, client.Target{}))

	// copies sends messages one at a time with the next answer from the proxied group
	// armed to be lost, until a send went there; it returns how many copies of that
	// message the two groups hold.
	copies := func(p *client.Producer, name string) int {
		for i := range 8 { // both groups' connections open before the cut
			_, err := p.Send(context.Background(), message.NewMessage(topic, []byte("warm-up")))
			require.NoError(t, err, "warm-up %d", i)
		}
		cuts := proxy.RepliesCut()
		proxy.CutReplies(1)
		var res client.SendResult
		for i := 0; proxy.RepliesCut() == cuts; i++ {
			require.Less(t, i, 100, "%s: no send reached the proxied group", name)
			res, err = p.Send(context.Background(), message.NewMessage(topic, []byte(name)))
			require.NoError(t, err)
		}
		return copiesOn(t, c.Broker, c.BrokerAddr, topic, res.MsgID) + copiesOn(t, other.Broker, other.Addr, topic, res.MsgID)
	}
	plain, err := fc.NewProducer("idem-plain")
	require.NoError(t, err)
	t.Cleanup(func() { _ = plain.Close() })
	require.Equal(t, 2, copies(plain, "plain"), "a retry on the other group is another copy")

	idem, err := fc.NewProducer("idem-idem", client.WithIdempotence())
	require.NoError(t, err)
	t.Cleanup(func() { _ = idem.Close() })
	require.Equal(t, 1, copies(idem, "idempotent"))

	// The id is fixed on the message: sending it again stores nothing.
	msg := message.NewMessage(topic, []byte("again"))
	first, err := idem.Send(context.Background(), msg)
	require.NoError(t, err)
	require.Equal(t, first.MsgID, msg.UniqKey())
	second, err := idem.Send(context.Background(), msg)
	require.NoError(t, err)
	require.Equal(t, first.QueueOffset, second.QueueOffset)
	require.Equal(t, first.BrokerName, second.BrokerName)
	require.Equal(t, 1, copiesOn(t, c.Broker, c.BrokerAddr, topic, first.MsgID)+copiesOn(t, other.Broker, other.Addr, topic, first.MsgID))
}
