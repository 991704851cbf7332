package client

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/testutil"
)

// adminEnv is a cluster with a client, its Admin and a producer.
type adminEnv struct {
	t  *testing.T
	c  *testutil.Cluster
	cl *Client
	a  *Admin
	p  *Producer
	// broker is the test broker's name.
	broker string
}

func newAdminEnv(t *testing.T) *adminEnv {
	t.Helper()
	return newAdminEnvOn(t, testutil.StartCluster(t), "admin")
}

// newAdminEnvOn is newAdminEnv on a cluster already started; name names the client's
// instance and (with "-pg") its producer group.
func newAdminEnvOn(t *testing.T, c *testutil.Cluster, name string) *adminEnv {
	t.Helper()
	cl, err := New(WithNameServers(c.NamesrvAddr), WithInstanceName(name))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, cl.Close()) })
	p, err := cl.NewProducer(name + "-pg")
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close()) })
	e := &adminEnv{t: t, c: c, cl: cl, a: cl.Admin(), p: p}
	ci, err := e.a.ClusterInfo(adminCtx(t))
	require.NoError(t, err)
	b, _, ok := ci.brokerAt(c.BrokerAddr)
	require.True(t, ok, "the test broker is in the cluster info: %+v", ci)
	e.broker = b.Name
	return e
}

// adminCtx bounds a test step.
func adminCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// createTopic creates topic with n read and write queues on every broker.
func (e *adminEnv) createTopic(topic string, n int32) {
	e.t.Helper()
	require.NoError(e.t, e.a.CreateTopic(adminCtx(e.t), TopicConfig{Name: topic, ReadQueues: n, WriteQueues: n}, Target{}))
}

// send sends one message per body, with keys from keys(i) when set, and returns the
// results in order.
func (e *adminEnv) send(topic string, bodies [][]byte, keys func(i int) []string) []SendResult {
	e.t.Helper()
	out := make([]SendResult, len(bodies))
	for i, b := range bodies {
		m := message.NewMessage(topic, b)
		if keys != nil {
			m.SetKeys(keys(i)...)
		}
		m.SetProperty("seq", fmt.Sprint(i))
		res, err := e.p.Send(adminCtx(e.t), m)
		require.NoError(e.t, err)
		out[i] = res
	}
	return out
}

// waitQueued waits until topic's queues hold n messages (the broker dispatches to the
// consume queues after it acknowledges a send).
func (e *adminEnv) waitQueued(topic string, n int64) {
	e.t.Helper()
	testutil.Eventually(e.t, 10*time.Second, func() bool {
		st, err := e.a.TopicStats(adminCtx(e.t), topic)
		return err == nil && st.Messages() == n
	}, fmt.Sprintf("%s holds %d messages", topic, n))
}

// served skips the test when err says the server does not serve the request yet.
func served(t *testing.T, err error, what string) {
	t.Helper()
	if isNotSupported(err) {
		t.Skipf("%s: not served by Ferry yet: %v", what, err)
	}
}

func bodies(prefix string, n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = fmt.Appendf(nil, "%s-%d", prefix, i)
	}
	return out
}

// TestAdminTopicLifecycle creates a topic, finds it in the route, the topic list, the
// cluster and the stats, updates it, and deletes it from broker and name server.
func TestAdminTopicLifecycle(t *testing.T) {
	const topic = "AdminTopic"
	e := newAdminEnv(t)
	ctx := adminCtx(t)

	require.NoError(t, e.a.CreateTopic(ctx, TopicConfig{Name: topic, ReadQueues: 3, WriteQueues: 3}, Target{Brokers: []string{e.broker}}))
	r, err := e.a.TopicRoute(ctx, topic)
	require.NoError(t, err)
	require.Equal(t, []QueueInfo{{Broker: e.broker, ReadQueues: 3, WriteQueues: 3, Perm: protocol.PermRead | protocol.PermWrite}}, r.Queues)
	require.Len(t, r.Brokers, 1)
	require.Equal(t, e.c.BrokerAddr, r.Brokers[0].MasterAddr())

	topics, err := e.a.ListTopics(ctx)
	require.NoError(t, err)
	require.Contains(t, topics, topic)
	require.True(t, slices.IsSorted(topics))

	ci, err := e.a.ClusterInfo(ctx)
	require.NoError(t, err)
	cluster := ci.Brokers[e.broker].Cluster
	require.Contains(t, ci.Clusters[cluster], e.broker)
	require.Equal(t, e.c.BrokerAddr, ci.Brokers[e.broker].MasterAddr())

	st, err := e.a.TopicStats(ctx, topic)
	require.NoError(t, err)
	require.Len(t, st.Queues, 3)
	for i, q := range st.Queues {
		require.Equal(t, QueueStats{Queue: MessageQueue{Topic: topic, BrokerName: e.broker, QueueID: int32(i)}}, q)
	}

	sent := e.send(topic, bodies("m", 7), nil)
	perQueue := map[int32]int64{}
	for _, s := range sent {
		perQueue[s.QueueID]++
	}
	testutil.Eventually(t, 10*time.Second, func() bool {
		st, err = e.a.TopicStats(ctx, topic)
		return err == nil && st.Messages() == 7
	}, "topic stats count the 7 messages")
	for _, q := range st.Queues {
		require.Equal(t, perQueue[q.Queue.QueueID], q.MaxOffset, "queue %d", q.Queue.QueueID)
		require.Zero(t, q.MinOffset)
		require.Equal(t, q.MaxOffset > 0, !q.LastUpdate.IsZero(), "queue %d last update %v", q.Queue.QueueID, q.LastUpdate)
		if q.MaxOffset > 0 {
			require.WithinDuration(t, time.Now(), q.LastUpdate, time.Minute)
		}
	}

	// Update: only the queue counts change; the permission is kept.
	require.NoError(t, e.a.UpdateTopic(ctx, TopicConfig{Name: topic, ReadQueues: 5, WriteQueues: 5}))
	r, err = e.a.TopicRoute(ctx, topic)
	require.NoError(t, err)
	require.Equal(t, []QueueInfo{{Broker: e.broker, ReadQueues: 5, WriteQueues: 5, Perm: protocol.PermRead | protocol.PermWrite}}, r.Queues)
	require.NoError(t, e.a.UpdateTopic(ctx, TopicConfig{Name: topic, Perm: protocol.PermRead}))
	r, err = e.a.TopicRoute(ctx, topic)
	require.NoError(t, err)
	require.Equal(t, []QueueInfo{{Broker: e.broker, ReadQueues: 5, WriteQueues: 5, Perm: protocol.PermRead}}, r.Queues)

	require.NoError(t, e.a.DeleteTopic(ctx, topic, Target{}))
	_, err = e.a.TopicRoute(ctx, topic)
	require.ErrorIs(t, err, ErrNoRoute)
	require.ErrorIs(t, err, ErrBroker)
	topics, err = e.a.ListTopics(ctx)
	require.NoError(t, err)
	require.NotContains(t, topics, topic)
	require.ErrorIs(t, e.a.DeleteTopic(ctx, topic, Target{}), ErrNoRoute)
	require.ErrorIs(t, e.a.UpdateTopic(ctx, TopicConfig{Name: topic}), ErrNoRoute)

	// The cluster target, then the address target, create it again.
	require.NoError(t, e.a.CreateTopic(ctx, TopicConfig{Name: topic, WriteQueues: 2}, Target{Cluster: cluster}))
	r, err = e.a.TopicRoute(ctx, topic)
	require.NoError(t, err)
	require.Equal(t, []QueueInfo{{Broker: e.broker, ReadQueues: 2, WriteQueues: 2, Perm: protocol.PermRead | protocol.PermWrite}}, r.Queues)
	require.NoError(t, e.a.DeleteTopic(ctx, topic, Target{Brokers: []string{e.c.BrokerAddr}}))
	_, err = e.a.TopicRoute(ctx, topic)
	require.ErrorIs(t, err, ErrNoRoute)
}

// TestAdminTopicBadInput: malformed configs and unknown targets fail before anything is
// sent; the broker's refusal of a system topic is a *BrokerError.
func TestAdminTopicBadInput(t *testing.T) {
	e := newAdminEnv(t)
	ctx := adminCtx(t)
	err := e.a.CreateTopic(ctx, TopicConfig{Name: "bad topic"}, Target{})
	require.ErrorIs(t, err, ErrInvalidArgument)
	require.ErrorIs(t, err, protocol.ErrInvalidName)
	require.ErrorIs(t, e.a.CreateTopic(ctx, TopicConfig{Name: "T", ReadQueues: -1}, Target{}), ErrInvalidArgument)
	require.ErrorIs(t, e.a.CreateTopic(ctx, TopicConfig{Name: "T", Perm: 0x10}, Target{}), ErrInvalidArgument)
	require.ErrorIs(t, e.a.CreateTopic(ctx, TopicConfig{Name: "T", FilterType: "SQL"}, Target{}), ErrInvalidArgument)
	err = e.a.CreateTopic(ctx, TopicConfig{Name: "T"}, Target{Cluster: "NoSuchCluster"})
	require.ErrorIs(t, err, ErrInvalidArgument)
	require.ErrorContains(t, err, "NoSuchCluster")
	err = e.a.CreateTopic(ctx, TopicConfig{Name: "T"}, Target{Brokers: []string{"no-such-broker"}})
	require.ErrorIs(t, err, ErrInvalidArgument)
	require.ErrorContains(t, err, "no-such-broker")

	err = e.a.CreateTopic(ctx, TopicConfig{Name: protocol.AutoCreateTopicKey}, Target{})
	var be *BrokerError
	require.ErrorAs(t, err, &be)
	require.Equal(t, protocol.InvalidParameter, be.Code)
	require.Equal(t, e.c.BrokerAddr, be.Addr)
	require.ErrorContains(t, err, e.broker)

	_, err = e.a.TopicRoute(ctx, "NoSuchTopic")
	require.ErrorIs(t, err, ErrNoRoute)
	require.ErrorAs(t, err, &be)
	require.Equal(t, protocol.TopicNotExist, be.Code)
	_, err = e.a.TopicStats(ctx, "NoSuchTopic")
	require.ErrorIs(t, err, ErrNoRoute)
}

// TestAdminTopicStatsByOffsets: the per-queue fallback agrees with the broker's own
// GET_TOPIC_STATS_INFO when it has one, and with what was sent.
func TestAdminTopicStatsByOffsets(t *testing.T) {
	const topic = "AdminStatsFallback"
	e := newAdminEnv(t)
	ctx := adminCtx(t)
	e.createTopic(topic, 2)
	sent := e.send(topic, bodies("s", 9), nil)
	last := map[int32]SendResult{}
	for _, s := range sent {
		last[s.QueueID] = s
	}
	r, err := e.a.TopicRoute(ctx, topic)
	require.NoError(t, err)
	var got []QueueStats
	testutil.Eventually(t, 10*time.Second, func() bool {
		got, err = e.a.topicStatsByOffsets(ctx, brokerRef{name: e.broker, addr: e.c.BrokerAddr}, r.messageQueues(e.broker))
		var n int64
		for _, q := range got {
			n += q.MaxOffset - q.MinOffset
		}
		return err == nil && n == 9
	}, "the fallback counts the 9 messages")
	for _, q := range got {
		s, ok := last[q.Queue.QueueID]
		if !ok {
			require.Zero(t, q.MaxOffset)
			continue
		}
		require.Equal(t, s.QueueOffset+1, q.MaxOffset)
		m, err := e.a.QueryByOffset(ctx, topic, e.broker, q.Queue.QueueID, s.QueueOffset)
		require.NoError(t, err)
		require.Equal(t, m.StoreTime, q.LastUpdate)
	}
	st, err := e.a.TopicStats(ctx, topic)
	require.NoError(t, err)
	require.Equal(t, got, st.Queues)
}

// TestAdminQueryMessages finds sent messages by key, by both kinds of id and by queue
// offset, with their bodies, properties and positions.
func TestAdminQueryMessages(t *testing.T) {
	const topic, n = "AdminQuery", 12
	e := newAdminEnv(t)
	ctx := adminCtx(t)
	e.createTopic(topic, 3)
	bs := bodies("q", n)
	// A large compressible body goes compressed; queries must inflate it.
	bs = append(bs, bytes.Repeat([]byte("compressible "), 1000))
	sent := e.send(topic, bs, func(i int) []string { return []string{fmt.Sprintf("key-%d", i), "common"} })
	lastKey := fmt.Sprintf("key-%d", n)
	testutil.Eventually(t, 10*time.Second, func() bool {
		_, err := e.a.QueryByKey(ctx, topic, lastKey, time.Time{}, time.Time{}, 0)
		return err == nil
	}, "the index has the last message")
	e.waitQueued(topic, n+1)

	check := func(m *MessageExt, i int) {
		t.Helper()
		s := sent[i]
		require.Equal(t, bs[i], m.Body, "message %d", i)
		require.Equal(t, topic, m.Topic)
		require.Equal(t, fmt.Sprint(i), m.Property("seq"))
		require.Equal(t, []string{fmt.Sprintf("key-%d", i), "common"}, m.Keys())
		require.Equal(t, s.MsgID, m.MsgID)
		require.Equal(t, s.OffsetMsgID, m.OffsetMsgID)
		require.Equal(t, MessageQueue{Topic: topic, BrokerName: s.BrokerName, QueueID: s.QueueID}, m.Queue)
		require.Equal(t, s.QueueOffset, m.QueueOffset)
		require.Equal(t, e.c.BrokerAddr, m.StoreHost.String())
		require.WithinDuration(t, time.Now(), m.StoreTime, time.Minute)
		_, off, err := message.DecodeOffsetMsgID(s.OffsetMsgID)
		require.NoError(t, err)
		require.Equal(t, off, m.CommitLogOffset)
	}

	for _, i := range []int{0, 5, n} {
		key := fmt.Sprintf("key-%d", i)
		msgs, err := e.a.QueryByKey(ctx, topic, key, time.Now().Add(-time.Hour), time.Now().Add(time.Hour), 10)
		require.NoError(t, err, key)
		require.Len(t, msgs, 1, key)
		check(msgs[0], i)

		msgs, err = e.a.QueryByID(ctx, topic, sent[i].MsgID)
		require.NoError(t, err)
		require.Len(t, msgs, 1)
		check(msgs[0], i)

		msgs, err = e.a.QueryByID(ctx, "", sent[i].OffsetMsgID)
		require.NoError(t, err)
		require.Len(t, msgs, 1)
		check(msgs[0], i)
		// With a topic, the offset id is tried as a UNIQ_KEY first, then found as an
		// offset id; lower case works too.
		msgs, err = e.a.QueryByID(ctx, topic, strings.ToLower(sent[i].OffsetMsgID))
		require.NoError(t, err)
		require.Len(t, msgs, 1)
		check(msgs[0], i)

		m, err := e.a.QueryByOffset(ctx, topic, sent[i].BrokerName, sent[i].QueueID, sent[i].QueueOffset)
		require.NoError(t, err)
		check(m, i)
		m, err = e.a.QueryByOffset(ctx, topic, "", sent[i].QueueID, sent[i].QueueOffset)
		require.NoError(t, err)
		check(m, i)
	}

	// A key shared by every message: all of them, or the newest few, by store time.
	all, err := e.a.QueryByKey(ctx, topic, "common", time.Time{}, time.Time{}, 0)
	require.NoError(t, err)
	require.Len(t, all, n+1)
	seen := map[string]bool{}
	for i, m := range all {
		seen[m.MsgID] = true
		if i > 0 {
			require.False(t, m.StoreTime.Before(all[i-1].StoreTime))
		}
	}
	for _, s := range sent {
		require.True(t, seen[s.MsgID], s.MsgID)
	}
	few, err := e.a.QueryByKey(ctx, topic, "common", time.Time{}, time.Time{}, 4)
	require.NoError(t, err)
	require.Len(t, few, 4)
	require.Equal(t, all[len(all)-4:], few)

	// A time range that ends before the messages were stored finds nothing.
	_, err = e.a.QueryByKey(ctx, topic, "key-1", time.Time{}, all[0].StoreTime.Add(-time.Hour), 0)
	require.ErrorIs(t, err, ErrNotFound)
}

// TestAdminQueryBadInput: malformed ids, unknown topics, ids of nothing and offsets
// outside a queue give errors that say so.
func TestAdminQueryBadInput(t *testing.T) {
	const topic = "AdminQueryBad"
	e := newAdminEnv(t)
	ctx := adminCtx(t)
	e.createTopic(topic, 2)
	sent := e.send(topic, bodies("b", 3), nil)
	e.waitQueued(topic, 3)

	for _, id := range []string{"", "xyz", strings.Repeat("A", 31), strings.Repeat("G", 32), strings.Repeat("0", 40)} {
		_, err := e.a.QueryByID(ctx, topic, id)
		require.ErrorIs(t, err, ErrInvalidArgument, "%q", id)
		require.ErrorIs(t, err, message.ErrBadMsgID, "%q", id)
	}

	// A well-formed id nobody stored: its "store host" is no broker, so nothing is dialled.
	ghost := message.OffsetMsgID(netip.MustParseAddrPort("10.255.255.1:1"), 1234)
	start := time.Now()
	_, err := e.a.QueryByID(ctx, topic, ghost)
	require.ErrorIs(t, err, ErrNotFound)
	require.ErrorContains(t, err, "10.255.255.1:1")
	require.Less(t, time.Since(start), 2*time.Second)

	// An offset id of the real broker at an offset with no record.
	_, err = e.a.QueryByID(ctx, "", message.OffsetMsgID(netip.MustParseAddrPort(e.c.BrokerAddr), 1<<40))
	require.ErrorIs(t, err, ErrNotFound)

	// A client id looked up in an unknown topic.
	_, err = e.a.QueryByID(ctx, "NoSuchTopic", sent[0].MsgID)
	require.ErrorIs(t, err, ErrNoRoute)
	require.ErrorIs(t, err, ErrNotFound)
	_, err = e.a.QueryByKey(ctx, "NoSuchTopic", "k", time.Time{}, time.Time{}, 0)
	require.ErrorIs(t, err, ErrNoRoute)
	_, err = e.a.QueryByKey(ctx, topic, "no-such-key", time.Time{}, time.Time{}, 0)
	require.ErrorIs(t, err, ErrNotFound)
	for _, key := range []string{"", "two words"} {
		_, err = e.a.QueryByKey(ctx, topic, key, time.Time{}, time.Time{}, 0)
		require.ErrorIs(t, err, ErrInvalidArgument, "%q", key)
	}
	_, err = e.a.QueryByKey(ctx, topic, "k", time.Now(), time.Now().Add(-time.Hour), 0)
	require.ErrorIs(t, err, ErrInvalidArgument)

	s := sent[0]
	var maxOff int64
	for _, r := range sent {
		if r.QueueID == s.QueueID {
			maxOff = max(maxOff, r.QueueOffset+1)
		}
	}
	_, err = e.a.QueryByOffset(ctx, topic, s.BrokerName, s.QueueID, maxOff+5)
	require.ErrorIs(t, err, ErrNotFound)
	require.ErrorContains(t, err, fmt.Sprintf("holds offsets [0, %d)", maxOff))
	_, err = e.a.QueryByOffset(ctx, topic, s.BrokerName, 7, 0)
	require.ErrorIs(t, err, ErrInvalidArgument)
	_, err = e.a.QueryByOffset(ctx, topic, "no-such-broker", 0, 0)
	require.ErrorIs(t, err, ErrInvalidArgument)
	_, err = e.a.QueryByOffset(ctx, topic, s.BrokerName, 0, -1)
	require.ErrorIs(t, err, ErrInvalidArgument)
	_, err = e.a.QueryByOffset(ctx, "NoSuchTopic", s.BrokerName, 0, 0)
	require.ErrorIs(t, err, ErrNoRoute)
}

// TestAdminConsumerOffsetsAndReset commits offsets through the admin, reads them back
// with the lag, and resets them by time, back and forward.
func TestAdminConsumerOffsetsAndReset(t *testing.T) {
	const topic, group = "AdminOffsets", "admin-cg"
	e := newAdminEnv(t)
	ctx := adminCtx(t)
	e.createTopic(topic, 2)
	sent := e.send(topic, bodies("o", 10), nil)
	count := map[int32]int64{}
	for _, s := range sent {
		count[s.QueueID]++
	}
	q0 := MessageQueue{Topic: topic, BrokerName: e.broker, QueueID: 0}
	q1 := MessageQueue{Topic: topic, BrokerName: e.broker, QueueID: 1}

	var ps []QueueProgress
	testutil.Eventually(t, 10*time.Second, func() bool {
		var err error
		ps, err = e.a.ConsumerOffsets(ctx, group, topic)
		return err == nil && len(ps) == 2 && ps[0].BrokerOffset+ps[1].BrokerOffset == 10
	}, "the queues hold the 10 messages")
	require.Equal(t, []QueueProgress{{Queue: q0, BrokerOffset: count[0], ConsumerOffset: -1},
		{Queue: q1, BrokerOffset: count[1], ConsumerOffset: -1}}, ps)
	require.Equal(t, count[0], ps[0].Lag())

	require.NoError(t, e.a.UpdateConsumerOffset(ctx, group, q0, 2))
	ps, err := e.a.ConsumerOffsets(ctx, group, topic)
	require.NoError(t, err)
	require.Equal(t, int64(2), ps[0].ConsumerOffset)
	require.Equal(t, count[0]-2, ps[0].Lag())
	require.Equal(t, int64(-1), ps[1].ConsumerOffset)

	st, err := e.a.ConsumeStats(ctx, group, topic)
	require.NoError(t, err)
	require.Equal(t, group, st.Group)
	require.Len(t, st.Queues, 2)
	require.Equal(t, q0, st.Queues[0].Queue)
	require.Equal(t, int64(2), st.Queues[0].ConsumerOffset)
	require.Equal(t, count[0], st.Queues[0].BrokerOffset)
	require.Equal(t, count[1], st.Queues[1].BrokerOffset)
	require.Equal(t, 10-2, int(st.Lag()))

	// Offsets at the end: no lag.
	require.NoError(t, e.a.UpdateConsumerOffset(ctx, group, q0, count[0]))
	require.NoError(t, e.a.UpdateConsumerOffset(ctx, group, q1, count[1]))
	st, err = e.a.ConsumeStats(ctx, group, topic)
	require.NoError(t, err)
	require.Zero(t, st.Lag())

	// Reset to before the first message: back to 0; to after the last: the ends.
	reset, err := e.a.ResetOffsetByTime(ctx, group, topic, time.Now().Add(-time.Hour))
	require.NoError(t, err)
	require.Equal(t, map[MessageQueue]int64{q0: 0, q1: 0}, reset)
	ps, err = e.a.ConsumerOffsets(ctx, group, topic)
	require.NoError(t, err)
	require.Equal(t, []int64{0, 0}, []int64{ps[0].ConsumerOffset, ps[1].ConsumerOffset})
	reset, err = e.a.ResetOffsetByTime(ctx, group, topic, time.Now().Add(time.Hour))
	require.NoError(t, err)
	require.Equal(t, map[MessageQueue]int64{q0: count[0], q1: count[1]}, reset)
	ps, err = e.a.ConsumerOffsets(ctx, group, topic)
	require.NoError(t, err)
	require.Equal(t, []int64{count[0], count[1]}, []int64{ps[0].ConsumerOffset, ps[1].ConsumerOffset})

	// Bad input.
	require.ErrorIs(t, e.a.UpdateConsumerOffset(ctx, group, MessageQueue{Topic: topic, BrokerName: e.broker, QueueID: 2}, 0), ErrInvalidArgument)
	require.ErrorIs(t, e.a.UpdateConsumerOffset(ctx, group, q0, -3), ErrInvalidArgument)
	require.ErrorIs(t, e.a.UpdateConsumerOffset(ctx, "bad group", q0, 0), ErrInvalidArgument)
	_, err = e.a.ConsumerOffsets(ctx, group, "NoSuchTopic")
	require.ErrorIs(t, err, ErrNoRoute)
	_, err = e.a.ResetOffsetByTime(ctx, group, "NoSuchTopic", time.Now())
	require.ErrorIs(t, err, ErrNoRoute)
}

// TestAdminGroupsAndConnections: an online push consumer and producer show up in the
// connection lists and consume-by-who; subscription groups are created and deleted.
func TestAdminGroupsAndConnections(t *testing.T) {
	const topic, group = "AdminConns", "admin-conn-cg"
	e := newAdminEnv(t)
	ctx := adminCtx(t)
	e.createTopic(topic, 2)
	e.send(topic, bodies("c", 4), nil)

	cl, err := New(WithNameServers(e.c.NamesrvAddr), WithInstanceName("admin-consumer"))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, cl.Close()) })
	pc, err := cl.NewPushConsumer(group, topic, "*", func(context.Context, []*MessageExt) ConsumeResult { return ConsumeSuccess },
		WithConsumeFrom(ConsumeFromFirstOffset))
	require.NoError(t, err)
	require.NoError(t, pc.Start(ctx))
	t.Cleanup(func() { require.NoError(t, pc.Close()) })

	// Subscription groups (201 is served; 200 and 207 may not be yet).
	groups, err := e.a.SubscriptionGroups(ctx, e.broker)
	require.NoError(t, err)
	require.Contains(t, groups, group, "the consumer's group was created on its first request")

	t.Run("ConnectionsAndConsumers", func(t *testing.T) {
		cc, err := e.a.ConsumerConnections(ctx, group)
		served(t, err, "GET_CONSUMER_CONNECTION_LIST")
		require.NoError(t, err)
		require.Len(t, cc.ConnectionSet, 1)
		require.Equal(t, cl.ClientID(), cc.ConnectionSet[0].ClientID)
		require.Contains(t, cc.SubscriptionTable, topic)
		_, err = e.a.ConsumerConnections(ctx, "admin-nobody")
		var be *BrokerError
		require.ErrorAs(t, err, &be)
		require.Equal(t, protocol.ConsumerNotOnline, be.Code)

		prods, err := e.a.ProducerConnections(ctx, "admin-pg")
		served(t, err, "GET_PRODUCER_CONNECTION_LIST")
		require.NoError(t, err)
		require.Len(t, prods, 1)
		require.Equal(t, e.cl.ClientID(), prods[0].ClientID)

		by, err := e.a.ConsumedBy(ctx, topic)
		served(t, err, "QUERY_TOPIC_CONSUME_BY_WHO")
		require.NoError(t, err)
		require.Equal(t, []string{group}, by)
	})

	t.Run("ResetWithOnlineConsumer", func(t *testing.T) {
		// Does the broker serve INVOKE_BROKER_TO_RESET_OFFSET? (Asked for a group with no
		// member and no offsets, so the answer changes nothing.)
		_, perr := e.cl.invoke(ctx, e.c.BrokerAddr, protocol.NewRequest(protocol.InvokeBrokerToResetOffset,
			&protocol.ResetOffsetRequestHeader{Topic: topic, Group: "admin-probe", Timestamp: time.Now().UnixMilli(), IsForce: true}))
		_, err := e.a.ResetOffsetByTime(ctx, group, topic, time.Now().Add(-time.Hour))
		if isNotSupported(perr) {
			// Without it nothing can tell the online consumer: a clear refusal.
			require.ErrorContains(t, err, "cannot tell its 1 online consumers")
			return
		}
		require.NoError(t, err)
	})

	t.Run("SubscriptionGroups", func(t *testing.T) {
		cfg := protocol.DefaultSubscriptionGroupConfig("admin-sg")
		cfg.RetryMaxTimes = 3
		err := e.a.CreateSubscriptionGroup(ctx, cfg, Target{})
		served(t, err, "UPDATE_AND_CREATE_SUBSCRIPTIONGROUP")
		require.NoError(t, err)
		groups, err := e.a.SubscriptionGroups(ctx, e.c.BrokerAddr)
		require.NoError(t, err)
		require.Contains(t, groups, "admin-sg")
		require.Equal(t, int32(3), groups["admin-sg"].RetryMaxTimes)
		err = e.a.DeleteSubscriptionGroup(ctx, "admin-sg", true, Target{Brokers: []string{e.broker}})
		served(t, err, "DELETE_SUBSCRIPTIONGROUP")
		require.NoError(t, err)
		groups, err = e.a.SubscriptionGroups(ctx, e.broker)
		require.NoError(t, err)
		require.NotContains(t, groups, "admin-sg")
		require.ErrorIs(t, e.a.CreateSubscriptionGroup(ctx, protocol.DefaultSubscriptionGroupConfig("bad group"), Target{}), ErrInvalidArgument)
	})
}

// TestAdminBrokerAndNameServerInfo: runtime info, config, KV config and cluster topics,
// each skipped while Ferry does not serve it.
func TestAdminBrokerAndNameServerInfo(t *testing.T) {
	e := newAdminEnv(t)
	ctx := adminCtx(t)
	t.Run("RuntimeInfo", func(t *testing.T) {
		info, err := e.a.BrokerRuntimeInfo(ctx, e.broker)
		served(t, err, "GET_BROKER_RUNTIME_INFO")
		require.NoError(t, err)
		require.NotEmpty(t, info["bootTimestamp"])
	})
	t.Run("Config", func(t *testing.T) {
		cfg, err := e.a.BrokerConfig(ctx, e.c.BrokerAddr)
		served(t, err, "GET_BROKER_CONFIG")
		require.NoError(t, err)
		require.Equal(t, e.broker, cfg["brokerName"])
	})
	t.Run("ClusterTopics", func(t *testing.T) {
		e.createTopic("AdminClusterTopic", 1)
		ci, err := e.a.ClusterInfo(ctx)
		require.NoError(t, err)
		topics, err := e.a.ClusterTopics(ctx, ci.Brokers[e.broker].Cluster)
		served(t, err, "GET_TOPICS_BY_CLUSTER")
		require.NoError(t, err)
		require.Contains(t, topics, "AdminClusterTopic")
	})
	t.Run("KVConfig", func(t *testing.T) {
		require.NoError(t, e.a.PutKVConfig(ctx, "ADMIN_NS", "k", "v"))
		v, err := e.a.KVConfig(ctx, "ADMIN_NS", "k")
		require.NoError(t, err)
		require.Equal(t, "v", v)
		all, err := e.a.KVList(ctx, "ADMIN_NS")
		require.NoError(t, err)
		require.Equal(t, map[string]string{"k": "v"}, all)
		require.NoError(t, e.a.DeleteKVConfig(ctx, "ADMIN_NS", "k"))
		_, err = e.a.KVConfig(ctx, "ADMIN_NS", "k")
		require.ErrorIs(t, err, ErrNotFound)
	})
	_, err := e.a.BrokerConfig(ctx, "no-such-broker")
	require.ErrorIs(t, err, ErrInvalidArgument)
	require.ErrorIs(t, e.a.PutKVConfig(ctx, "", "k", "v"), ErrInvalidArgument)
}

// TestAdminResolveTargets checks the selection of brokers without a server.
func TestAdminResolveTargets(t *testing.T) {
	ci := &ClusterInfo{
		Clusters: map[string][]string{"c1": {"a", "b"}, "c2": {"c"}},
		Brokers: map[string]BrokerInfo{
			"a": {Cluster: "c1", Name: "a", Addrs: map[int64]string{0: "10.0.0.1:10911", 1: "10.0.0.2:10911"}},
			"b": {Cluster: "c1", Name: "b", Addrs: map[int64]string{1: "10.0.0.3:10911"}},
			"c": {Cluster: "c2", Name: "c", Addrs: map[int64]string{0: "10.0.0.4:10911"}},
		},
	}
	require.Equal(t, []brokerRef{{"a", "10.0.0.1:10911"}, {"c", "10.0.0.4:10911"}}, ci.masters(""))
	require.Equal(t, []brokerRef{{"a", "10.0.0.1:10911"}}, ci.masters("c1"))
	b, addr, ok := ci.brokerAt("10.0.0.2:10911")
	require.True(t, ok)
	require.Equal(t, "a", b.Name)
	require.Equal(t, "10.0.0.2:10911", addr)
	_, _, ok = ci.brokerAt("10.0.0.9:10911")
	require.False(t, ok)

	r, err := resolveBroker(ci, "c")
	require.NoError(t, err)
	require.Equal(t, brokerRef{"c", "10.0.0.4:10911"}, r)
	r, err = resolveBroker(ci, "10.0.0.3:10911")
	require.NoError(t, err)
	require.Equal(t, brokerRef{"b", "10.0.0.3:10911"}, r)
	_, err = resolveBroker(ci, "b")
	require.ErrorIs(t, err, ErrInvalidArgument, "b has no master")
	_, err = resolveBroker(ci, "zzz")
	require.ErrorIs(t, err, ErrInvalidArgument)

	p := QueueProgress{BrokerOffset: 10, ConsumerOffset: -1}
	require.Equal(t, int64(10), p.Lag())
	p.ConsumerOffset = 12
	require.Zero(t, p.Lag())
	require.NoError(t, checkMsgID(strings.Repeat("a", 56)))
	require.NoError(t, checkMsgID(strings.Repeat("F", 32)))
}
