package nameserver

import (
	"bytes"
	"fmt"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/protocol"
)

var t0 = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

func newTable(t testing.TB, mutate func(*RouteTableOptions)) *RouteTable {
	t.Helper()
	opts := DefaultRouteTableOptions()
	if mutate != nil {
		mutate(&opts)
	}
	rt, err := NewRouteTable(opts)
	require.NoError(t, err)
	return rt
}

func regHeader(cluster, name, addr string, id int64) *protocol.RegisterBrokerRequestHeader {
	return &protocol.RegisterBrokerRequestHeader{
		ClusterName:  cluster,
		BrokerName:   name,
		BrokerAddr:   addr,
		BrokerID:     id,
		HAServerAddr: "ha-" + addr,
	}
}

func topicConfig(name string, queues, perm int32) protocol.TopicConfig {
	return protocol.TopicConfig{
		TopicName: name, ReadQueueNums: queues, WriteQueueNums: queues,
		Perm: perm, TopicFilterType: protocol.SingleTag,
	}
}

func regBody(counter int64, topics ...protocol.TopicConfig) *protocol.RegisterBrokerBody {
	table := make(map[string]protocol.TopicConfig, len(topics))
	for _, tc := range topics {
		table[tc.TopicName] = tc
	}
	return &protocol.RegisterBrokerBody{TopicConfigSerializeWrapper: protocol.TopicConfigSerializeWrapper{
		TopicConfigTable: table,
		DataVersion:      protocol.DataVersion{Counter: counter, Timestamp: 1700000000000},
	}}
}

func mustRegister(t *testing.T, rt *RouteTable, h *protocol.RegisterBrokerRequestHeader,
	b *protocol.RegisterBrokerBody, ch uint64, now time.Time) RegisterResult {
	t.Helper()
	res, err := rt.RegisterBroker(h, b, Registrant{ChannelID: ch}, now)
	require.NoError(t, err)
	return res
}

func routeQueues(t *testing.T, rt *RouteTable, topic string) map[string]int32 {
	t.Helper()
	route, ok := rt.TopicRoute(topic)
	if !ok {
		return nil
	}
	out := map[string]int32{}
	for _, q := range route.QueueDatas {
		out[q.BrokerName] = q.WriteQueueNums
	}
	return out
}

func TestRegisterMasterAndSlave(t *testing.T) {
	rt := newTable(t, nil)
	res := mustRegister(t, rt, regHeader("c1", "broker-a", "10.0.0.5:10911", 0),
		regBody(1, topicConfig("TopicA", 4, protocol.PermRead|protocol.PermWrite)), 1, t0)
	require.True(t, res.NewAddress)
	require.True(t, res.TopicsUpdated)
	require.Empty(t, res.MasterAddr, "a master is told no master address")

	res = mustRegister(t, rt, regHeader("c1", "broker-a", "10.0.0.6:10911", 1),
		regBody(7, topicConfig("SlaveOnly", 2, 6)), 2, t0)
	require.True(t, res.NewAddress)
	require.False(t, res.TopicsUpdated, "a slave never writes queue data")
	require.Equal(t, "10.0.0.5:10911", res.MasterAddr)
	require.Equal(t, "ha-10.0.0.5:10911", res.HAServerAddr)

	route, ok := rt.TopicRoute("TopicA")
	require.True(t, ok)
	require.Equal(t, []protocol.QueueData{{BrokerName: "broker-a", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6}},
		route.QueueDatas)
	require.Len(t, route.BrokerDatas, 1)
	require.Equal(t, "c1", route.BrokerDatas[0].Cluster)
	require.Equal(t, map[int64]string{0: "10.0.0.5:10911", 1: "10.0.0.6:10911"}, route.BrokerDatas[0].BrokerAddrs)

	_, ok = rt.TopicRoute("SlaveOnly")
	require.False(t, ok)
	_, ok = rt.TopicRoute("Unknown")
	require.False(t, ok)

	// The returned route is a copy.
	route.BrokerDatas[0].BrokerAddrs[0] = "changed"
	again, _ := rt.TopicRoute("TopicA")
	require.Equal(t, "10.0.0.5:10911", again.BrokerDatas[0].BrokerAddrs[0])
}

func TestRouteJSONAsTheGoClientReadsIt(t *testing.T) {
	rt := newTable(t, nil)
	mustRegister(t, rt, regHeader("DefaultCluster", "broker-a", "10.0.0.5:10911", 0),
		regBody(1, topicConfig("TopicA", 4, 6)), 1, t0)
	mustRegister(t, rt, regHeader("DefaultCluster", "broker-a", "10.0.0.6:10911", 1), regBody(1), 2, t0)
	mustRegister(t, rt, regHeader("DefaultCluster", "broker-b", "[::1]:10911", 0),
		regBody(1, topicConfig("TopicA", 2, 6), topicConfig("Other", 1, 6)), 3, t0)
	mustRegister(t, rt, regHeader("DefaultCluster", "broker-c", "10.0.0.9:10911", 0),
		regBody(1, topicConfig("Other", 1, 6)), 4, t0)

	route, ok := rt.TopicRoute("TopicA")
	require.True(t, ok)
	body, err := protocol.EncodeTopicRouteData(&route)
	require.NoError(t, err)

	require.NotContains(t, string(body), " ", "compact JSON")
	require.NotContains(t, string(body), "\n")
	require.Contains(t, string(body), `"brokerAddrs":{"0":"10.0.0.5:10911","1":"10.0.0.6:10911"}`)
	require.Equal(t, 2, bytes.Count(body, []byte(`"brokerAddrs":`)), "brokerAddrs in every BrokerData")
	require.NotContains(t, string(body), "broker-c", "only the brokers hosting the topic")
	require.NotContains(t, string(body), "orderTopicConf")

	got, err := goClientDecodeRoute(body)
	require.NoError(t, err)
	require.Empty(t, got.OrderTopicConf)
	require.Equal(t, []goRouteQueue{
		{BrokerName: "broker-a", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6},
		{BrokerName: "broker-b", ReadQueueNums: 2, WriteQueueNums: 2, Perm: 6},
	}, got.Queues)
	require.Equal(t, []goRouteBroker{
		{Cluster: "DefaultCluster", BrokerName: "broker-a", Addrs: map[int64]string{0: "10.0.0.5:10911", 1: "10.0.0.6:10911"}},
		{Cluster: "DefaultCluster", BrokerName: "broker-b", Addrs: map[int64]string{0: "[::1]:10911"}},
	}, got.Brokers)
}

func TestTopicsRewrittenOnlyWhenTheMastersDataVersionChanges(t *testing.T) {
	rt := newTable(t, nil)
	h := regHeader("c1", "broker-a", "10.0.0.5:10911", 0)
	mustRegister(t, rt, h, regBody(1, topicConfig("T", 4, 6)), 1, t0)

	// Same version, different content: a liveness refresh only.
	res := mustRegister(t, rt, h, regBody(1, topicConfig("T", 8, 6), topicConfig("New", 1, 6)), 1, t0.Add(time.Second))
	require.False(t, res.Changed())
	require.Equal(t, map[string]int32{"broker-a": 4}, routeQueues(t, rt, "T"))
	require.Nil(t, routeQueues(t, rt, "New"))

	// New version: rewritten.
	res = mustRegister(t, rt, h, regBody(2, topicConfig("T", 8, 6), topicConfig("New", 1, 6)), 1, t0.Add(2*time.Second))
	require.True(t, res.TopicsUpdated)
	require.Equal(t, map[string]int32{"broker-a": 8}, routeQueues(t, rt, "T"))
	require.Equal(t, map[string]int32{"broker-a": 1}, routeQueues(t, rt, "New"))

	// Any field of the version counts (timestamp here).
	b := regBody(2, topicConfig("T", 3, 6), topicConfig("New", 1, 6))
	b.TopicConfigSerializeWrapper.DataVersion.Timestamp++
	res = mustRegister(t, rt, h, b, 1, t0.Add(3*time.Second))
	require.True(t, res.TopicsUpdated)
	require.Equal(t, map[string]int32{"broker-a": 3}, routeQueues(t, rt, "T"))

	// A slave with a newer version changes nothing.
	mustRegister(t, rt, regHeader("c1", "broker-a", "10.0.0.6:10911", 1), regBody(99, topicConfig("T", 16, 6)), 2, t0)
	require.Equal(t, map[string]int32{"broker-a": 3}, routeQueues(t, rt, "T"))

	// A registration without a body is an empty table with version zero.
	res = mustRegister(t, rt, h, nil, 1, t0.Add(4*time.Second))
	require.True(t, res.TopicsUpdated)
	require.Equal(t, []string{"New", "T"}, res.RemovedTopics)
	require.Empty(t, rt.TopicList())
}

func TestTopicRemovedWhenTheBrokerDropsIt(t *testing.T) {
	rt := newTable(t, nil)
	a := regHeader("c1", "broker-a", "10.0.0.5:10911", 0)
	b := regHeader("c1", "broker-b", "10.0.0.7:10911", 0)
	mustRegister(t, rt, a, regBody(1, topicConfig("T", 4, 6), topicConfig("Keep", 4, 6)), 1, t0)
	mustRegister(t, rt, b, regBody(1, topicConfig("T", 2, 6)), 2, t0)
	require.Equal(t, map[string]int32{"broker-a": 4, "broker-b": 2}, routeQueues(t, rt, "T"))

	res := mustRegister(t, rt, a, regBody(2, topicConfig("Keep", 4, 6)), 1, t0)
	require.Equal(t, []string{"T"}, res.RemovedTopics)
	require.Equal(t, map[string]int32{"broker-b": 2}, routeQueues(t, rt, "T"))
	require.Equal(t, map[string]int32{"broker-a": 4}, routeQueues(t, rt, "Keep"))

	mustRegister(t, rt, b, regBody(2), 2, t0)
	_, ok := rt.TopicRoute("T")
	require.False(t, ok, "a topic without queue data disappears")
	require.Equal(t, []string{"Keep"}, rt.TopicList())

	t.Run("RetainUnlistedTopics", func(t *testing.T) {
		rt := newTable(t, func(o *RouteTableOptions) { o.RetainUnlistedTopics = true })
		mustRegister(t, rt, a, regBody(1, topicConfig("T", 4, 6)), 1, t0)
		res := mustRegister(t, rt, a, regBody(2, topicConfig("Increment", 1, 6)), 1, t0)
		require.Empty(t, res.RemovedTopics)
		require.Equal(t, []string{"Increment", "T"}, rt.TopicList())
	})
}

func TestExpiry(t *testing.T) {
	rt := newTable(t, nil)
	master := regHeader("c1", "broker-a", "10.0.0.5:10911", 0)
	slave := regHeader("c1", "broker-a", "10.0.0.6:10911", 1)
	slave.HeartbeatTimeoutMillis = 10_000
	mustRegister(t, rt, master, regBody(1, topicConfig("T", 4, 6)), 1, t0)
	mustRegister(t, rt, slave, regBody(1), 2, t0)

	require.Empty(t, rt.ExpireBrokers(t0.Add(10*time.Second)), "expiry needs last update + timeout < now")
	require.Equal(t, []string{"10.0.0.6:10911"}, rt.ExpireBrokers(t0.Add(10*time.Second+time.Millisecond)))
	route, ok := rt.TopicRoute("T")
	require.True(t, ok)
	require.Equal(t, map[int64]string{0: "10.0.0.5:10911"}, route.BrokerDatas[0].BrokerAddrs)

	// A registration refreshes liveness.
	mustRegister(t, rt, master, regBody(1, topicConfig("T", 4, 6)), 1, t0.Add(100*time.Second))
	require.Empty(t, rt.ExpireBrokers(t0.Add(200*time.Second)))
	require.Equal(t, []string{"10.0.0.5:10911"}, rt.ExpireBrokers(t0.Add(220*time.Second+time.Millisecond)))

	_, ok = rt.TopicRoute("T")
	require.False(t, ok)
	require.Empty(t, rt.TopicList())
	require.Empty(t, rt.Brokers())
	info := rt.ClusterInfo()
	require.Empty(t, info.BrokerAddrTable)
	require.Empty(t, info.ClusterAddrTable)
}

func TestMasterExpiryKeepsTheSlavesRoute(t *testing.T) {
	rt := newTable(t, nil)
	master := regHeader("c1", "broker-a", "10.0.0.5:10911", 0)
	master.HeartbeatTimeoutMillis = 1000
	mustRegister(t, rt, master, regBody(1, topicConfig("T", 4, 6)), 1, t0)
	mustRegister(t, rt, regHeader("c1", "broker-a", "10.0.0.6:10911", 1), regBody(1), 2, t0.Add(time.Minute))

	require.Equal(t, []string{"10.0.0.5:10911"}, rt.ExpireBrokers(t0.Add(2*time.Second)))
	route, ok := rt.TopicRoute("T")
	require.True(t, ok, "consumers can still read from the slave")
	require.Equal(t, map[int64]string{1: "10.0.0.6:10911"}, route.BrokerDatas[0].BrokerAddrs)

	res := mustRegister(t, rt, regHeader("c1", "broker-a", "10.0.0.6:10911", 1), regBody(1), 2, t0.Add(time.Minute))
	require.Empty(t, res.MasterAddr, "no master, no masterAddr")
	require.Empty(t, res.HAServerAddr)
}

func TestRemoveByChannel(t *testing.T) {
	rt := newTable(t, nil)
	mustRegister(t, rt, regHeader("c1", "broker-a", "10.0.0.5:10911", 0), regBody(1, topicConfig("A", 4, 6)), 1, t0)
	mustRegister(t, rt, regHeader("c1", "broker-b", "10.0.0.7:10911", 0), regBody(1, topicConfig("B", 4, 6)), 2, t0)

	require.Empty(t, rt.RemoveByChannel(0))
	require.Empty(t, rt.RemoveByChannel(42))
	require.Equal(t, []string{"10.0.0.5:10911"}, rt.RemoveByChannel(1))
	_, ok := rt.TopicRoute("A")
	require.False(t, ok)
	_, ok = rt.TopicRoute("B")
	require.True(t, ok)

	// broker-b reconnects and registers on a new channel while the old one is still
	// open: it shares the binding, and the old channel's late close must not remove it.
	res, err := rt.RegisterBroker(regHeader("c1", "broker-b", "10.0.0.7:10911", 0), regBody(1, topicConfig("B", 4, 6)),
		Registrant{ChannelID: 3}, t0)
	require.NoError(t, err)
	require.True(t, res.Shared)
	require.True(t, res.Joined)
	require.Empty(t, rt.RemoveByChannel(2))
	_, ok = rt.TopicRoute("B")
	require.True(t, ok)
	require.Equal(t, []string{"10.0.0.7:10911"}, rt.RemoveByChannel(3))
	require.Empty(t, rt.ClusterInfo().ClusterAddrTable)
}

func TestDeleteTopic(t *testing.T) {
	rt := newTable(t, nil)
	a := regHeader("c1", "broker-a", "10.0.0.5:10911", 0)
	b := regHeader("c2", "broker-b", "10.0.0.7:10911", 0)
	mustRegister(t, rt, a, regBody(1, topicConfig("T", 4, 6), topicConfig("U", 4, 6)), 1, t0)
	mustRegister(t, rt, b, regBody(1, topicConfig("T", 2, 6)), 2, t0)

	require.False(t, rt.DeleteTopic("Nope", ""))
	require.False(t, rt.DeleteTopic("T", "no-such-cluster"))
	require.False(t, rt.DeleteTopic("U", "c2"), "c2 does not host U")

	require.True(t, rt.DeleteTopic("T", "c1"))
	require.Equal(t, map[string]int32{"broker-b": 2}, routeQueues(t, rt, "T"))
	require.True(t, rt.DeleteTopic("T", "c2"))
	_, ok := rt.TopicRoute("T")
	require.False(t, ok)
	require.Equal(t, []string{"U"}, rt.TopicList())

	require.True(t, rt.DeleteTopic("U", ""))
	require.Empty(t, rt.TopicList())

	// A refresh with the same data version does not bring it back; a new version does.
	mustRegister(t, rt, a, regBody(1, topicConfig("T", 4, 6), topicConfig("U", 4, 6)), 1, t0)
	require.Empty(t, rt.TopicList())
	mustRegister(t, rt, a, regBody(2, topicConfig("T", 4, 6), topicConfig("U", 4, 6)), 1, t0)
	require.Equal(t, []string{"T", "U"}, rt.TopicList())
}

func TestSlaveGetsMasterAddrOnceTheMasterIsAlive(t *testing.T) {
	rt := newTable(t, nil)
	slave := regHeader("c1", "broker-a", "10.0.0.6:10911", 1)
	res := mustRegister(t, rt, slave, regBody(1), 2, t0)
	require.Empty(t, res.MasterAddr, "slave registered before its master")

	master := regHeader("c1", "broker-a", "10.0.0.5:10911", 0)
	master.HAServerAddr = "10.0.0.5:10912"
	mustRegister(t, rt, master, regBody(1, topicConfig("T", 4, 6)), 1, t0)
	res = mustRegister(t, rt, slave, regBody(1), 2, t0)
	require.Equal(t, "10.0.0.5:10911", res.MasterAddr)
	require.Equal(t, "10.0.0.5:10912", res.HAServerAddr)
	require.False(t, res.Changed())

	rt.RemoveByChannel(1)
	res = mustRegister(t, rt, slave, regBody(1), 2, t0)
	require.Empty(t, res.MasterAddr)
}

func TestAutoCreateTemplateTopicRoute(t *testing.T) {
	rt := newTable(t, nil)
	_, ok := rt.TopicRoute(protocol.AutoCreateTopicKey)
	require.False(t, ok)
	perm := protocol.PermRead | protocol.PermWrite | protocol.PermInherit
	mustRegister(t, rt, regHeader("c1", "broker-a", "10.0.0.5:10911", 0),
		regBody(1, topicConfig(protocol.AutoCreateTopicKey, 8, perm)), 1, t0)
	route, ok := rt.TopicRoute(protocol.AutoCreateTopicKey)
	require.True(t, ok)
	require.Equal(t, int32(7), route.QueueDatas[0].Perm)
	require.True(t, protocol.PermInheritable(route.QueueDatas[0].Perm))
	require.Equal(t, "10.0.0.5:10911", route.BrokerDatas[0].MasterAddr())
}

func TestAddressMovesAndDisplacement(t *testing.T) {
	open := map[uint64]bool{1: true, 2: true}
	rt := newTable(t, func(o *RouteTableOptions) { o.ChannelOpen = func(id uint64) bool { return open[id] } })
	mustRegister(t, rt, regHeader("c1", "broker-a", "10.0.0.5:10911", 0), regBody(1, topicConfig("T", 4, 6)), 1, t0)
	mustRegister(t, rt, regHeader("c1", "broker-a", "10.0.0.6:10911", 1), regBody(1), 2, t0)

	// The slave cannot take id 0 while the master's connection holds it.
	_, err := rt.RegisterBroker(regHeader("c1", "broker-a", "10.0.0.6:10911", 0), regBody(5, topicConfig("T", 8, 6)),
		Registrant{ChannelID: 2}, t0)
	require.ErrorIs(t, err, ErrTakeover)
	route, _ := rt.TopicRoute("T")
	require.Equal(t, map[int64]string{0: "10.0.0.5:10911", 1: "10.0.0.6:10911"}, route.BrokerDatas[0].BrokerAddrs)

	// Nor once the master's connection closed (before the close was handled): id 0
	// stays bound to the master's address until its registration expires.
	open[1] = false
	_, err = rt.RegisterBroker(regHeader("c1", "broker-a", "10.0.0.6:10911", 0), regBody(5, topicConfig("T", 8, 6)),
		Registrant{ChannelID: 2}, t0.Add(time.Minute))
	require.ErrorIs(t, err, ErrTakeover)

	// Once it expired, the slave is promoted: its address leaves id 1, and the old
	// master's address is displaced from id 0.
	t1 := t0.Add(DefaultRouteTableOptions().BrokerExpiry + time.Second)
	res := mustRegister(t, rt, regHeader("c1", "broker-a", "10.0.0.6:10911", 0), regBody(5, topicConfig("T", 8, 6)), 2, t1)
	require.True(t, res.NewAddress)
	require.True(t, res.TopicsUpdated)
	require.Equal(t, "10.0.0.5:10911", res.Displaced)
	route, _ = rt.TopicRoute("T")
	require.Equal(t, map[int64]string{0: "10.0.0.6:10911"}, route.BrokerDatas[0].BrokerAddrs)
	require.Equal(t, int32(8), route.QueueDatas[0].WriteQueueNums)
	require.Len(t, rt.Brokers(), 1, "the displaced address has no liveness record left")
	require.Empty(t, rt.RemoveByChannel(1))

	// The address re-registers as another broker name: refused while its binding
	// holds, even on the connection holding it. With admin credentials it leaves
	// broker-a, which had no other address and disappears with its queue data.
	_, err = rt.RegisterBroker(regHeader("c1", "broker-z", "10.0.0.6:10911", 0), regBody(1, topicConfig("Z", 1, 6)),
		Registrant{ChannelID: 2}, t1)
	require.ErrorIs(t, err, ErrTakeover)
	_, err = rt.RegisterBroker(regHeader("c1", "broker-z", "10.0.0.6:10911", 0), regBody(1, topicConfig("Z", 1, 6)),
		Registrant{ChannelID: 2, Trusted: true}, t1)
	require.NoError(t, err)
	_, ok := rt.TopicRoute("T")
	require.False(t, ok)
	info := rt.ClusterInfo()
	require.Equal(t, map[string][]string{"c1": {"broker-z"}}, info.ClusterAddrTable)

	// The group moves to another cluster (admin credentials again).
	_, err = rt.RegisterBroker(regHeader("c2", "broker-z", "10.0.0.6:10911", 0), regBody(1, topicConfig("Z", 1, 6)),
		Registrant{ChannelID: 2}, t1)
	require.ErrorIs(t, err, ErrTakeover)
	_, err = rt.RegisterBroker(regHeader("c2", "broker-z", "10.0.0.6:10911", 0), regBody(1, topicConfig("Z", 1, 6)),
		Registrant{ChannelID: 2, Trusted: true}, t1)
	require.NoError(t, err)
	info = rt.ClusterInfo()
	require.Equal(t, map[string][]string{"c2": {"broker-z"}}, info.ClusterAddrTable)
	require.Equal(t, "c2", info.BrokerAddrTable["broker-z"].Cluster)
}

func TestUnregisterBroker(t *testing.T) {
	rt := newTable(t, nil)
	mustRegister(t, rt, regHeader("c1", "broker-a", "10.0.0.5:10911", 0), regBody(1, topicConfig("T", 4, 6)), 1, t0)
	mustRegister(t, rt, regHeader("c1", "broker-a", "10.0.0.6:10911", 1), regBody(1), 2, t0)
	unregister := func(cluster, addr, name string, id int64, ch uint64) bool {
		t.Helper()
		ok, err := rt.UnregisterBroker(cluster, addr, name, id, Registrant{ChannelID: ch}, t0)
		require.NoError(t, err)
		return ok
	}

	require.False(t, unregister("c1", "10.0.0.6:10911", "broker-a", 0, 2), "wrong id")
	require.False(t, unregister("c9", "10.0.0.6:10911", "broker-a", 1, 2), "wrong cluster")
	require.False(t, unregister("c1", "10.0.0.6:10911", "broker-b", 1, 2), "wrong name")
	require.False(t, unregister("c1", "10.9.9.9:10911", "broker-a", 1, 2), "unknown address")
	_, err := rt.UnregisterBroker("c1", "10.0.0.6:10911", "broker-a", 1, Registrant{ChannelID: 9}, t0)
	require.ErrorIs(t, err, ErrTakeover, "another live connection's registration")

	require.True(t, unregister("c1", "10.0.0.6:10911", "broker-a", 1, 2))
	route, ok := rt.TopicRoute("T")
	require.True(t, ok)
	require.Equal(t, map[int64]string{0: "10.0.0.5:10911"}, route.BrokerDatas[0].BrokerAddrs)
	require.True(t, unregister("c1", "10.0.0.5:10911", "broker-a", 0, 1))
	_, ok = rt.TopicRoute("T")
	require.False(t, ok)
}

func TestRegisterRejectsUnusableRequests(t *testing.T) {
	rt := newTable(t, nil)
	for name, h := range map[string]*protocol.RegisterBrokerRequestHeader{
		"nil":          nil,
		"no name":      regHeader("c1", "", "10.0.0.5:10911", 0),
		"no cluster":   regHeader("", "b", "10.0.0.5:10911", 0),
		"no address":   regHeader("c1", "b", "", 0),
		"comma":        regHeader("c1", "b", "10.0.0.5:1,10.0.0.6:2", 0),
		"quote":        regHeader("c1", "b", `10.0.0.5:1"`, 0),
		"space":        regHeader("c1", "b", "10.0.0.5: 1", 0),
		"negative id":  regHeader("c1", "b", "10.0.0.5:10911", -1),
		"non-ascii":    regHeader("c1", "b", "höst:1", 0),
		"control byte": regHeader("c1", "b", "host:1\n", 0),
	} {
		_, err := rt.RegisterBroker(h, regBody(1, topicConfig("T", 1, 6)), Registrant{ChannelID: 1}, t0)
		require.ErrorIs(t, err, ErrInvalidRegistration, name)
	}
	require.Empty(t, rt.TopicList())
	require.Empty(t, rt.Brokers())
}

func TestTopicNameFallsBackToTheTableKey(t *testing.T) {
	rt := newTable(t, nil)
	b := regBody(1)
	b.TopicConfigSerializeWrapper.TopicConfigTable = map[string]protocol.TopicConfig{
		"Keyed": {ReadQueueNums: 2, WriteQueueNums: 2, Perm: 6},
		"":      {ReadQueueNums: 2, WriteQueueNums: 2, Perm: 6},
	}
	mustRegister(t, rt, regHeader("c1", "broker-a", "10.0.0.5:10911", 0), b, 1, t0)
	require.Equal(t, []string{"Keyed"}, rt.TopicList())
}

func TestClusterInfoAndBrokers(t *testing.T) {
	rt := newTable(t, nil)
	h := regHeader("c1", "broker-a", "10.0.0.5:10911", 0)
	h.HeartbeatTimeoutMillis = 30_000
	h.ZoneName = "zone-1"
	mustRegister(t, rt, h, regBody(3), 1, t0)
	mustRegister(t, rt, regHeader("c1", "broker-b", "10.0.0.7:10911", 0), regBody(1), 2, t0)
	mustRegister(t, rt, regHeader("c2", "broker-c", "10.0.0.8:10911", 0), regBody(1), 3, t0)

	info := rt.ClusterInfo()
	require.Equal(t, map[string][]string{"c1": {"broker-a", "broker-b"}, "c2": {"broker-c"}}, info.ClusterAddrTable)
	require.Equal(t, "zone-1", info.BrokerAddrTable["broker-a"].ZoneName)
	body, err := protocol.EncodeClusterInfo(&info)
	require.NoError(t, err)
	require.Contains(t, string(body), `"broker-a":{"brokerAddrs":{"0":"10.0.0.5:10911"}`)

	brokers := rt.Brokers()
	require.Len(t, brokers, 3)
	require.Equal(t, BrokerInfo{
		Cluster: "c1", BrokerName: "broker-a", BrokerID: 0, Addr: "10.0.0.5:10911", HAServerAddr: "ha-10.0.0.5:10911",
		LastUpdate: t0, Timeout: 30 * time.Second, DataVersion: protocol.DataVersion{Counter: 3, Timestamp: 1700000000000},
	}, brokers[0])
	require.Equal(t, 120*time.Second, brokers[1].Timeout)
}

func TestRouteTableOptions(t *testing.T) {
	_, err := NewRouteTable(RouteTableOptions{})
	require.Error(t, err)
	require.NoError(t, DefaultRouteTableOptions().Validate())
}

func TestRouteTableConcurrentUse(t *testing.T) {
	rt := newTable(t, nil)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := range 200 {
				h := regHeader("c1", fmt.Sprintf("broker-%d", g), fmt.Sprintf("10.0.%d.%d:10911", g, i%3), int64(i%3))
				_, err := rt.RegisterBroker(h, regBody(int64(i), topicConfig("T", 4, 6)), Registrant{ChannelID: uint64(g + 1)}, t0)
				if err != nil {
					panic(err)
				}
				if i%50 == 0 {
					rt.RemoveByChannel(uint64(g + 1))
				}
			}
		}()
		go func() {
			defer wg.Done()
			for range 200 {
				if route, ok := rt.TopicRoute("T"); ok {
					if _, err := protocol.EncodeTopicRouteData(&route); err != nil {
						panic(err)
					}
				}
				_ = rt.ClusterInfo()
				_ = rt.TopicList()
				rt.ExpireBrokers(t0)
			}
		}()
	}
	wg.Wait()
	require.Equal(t, []string{"T"}, rt.TopicList())
}

// genuineIP and impostorIP are the remote addresses of a broker advertising
// 10.0.0.5:10911 and of an impostor on another host.
var (
	genuineIP  = netip.MustParseAddr("10.0.0.5")
	impostorIP = netip.MustParseAddr("10.6.6.6")
)

// bindingTable is a route table whose connections are open while open says so, with
// broker-a (c1, id 0) registered at 10.0.0.5:10911 on channel 1 from its own host,
// hosting topic T with 4 queues.
func bindingTable(t *testing.T) (*RouteTable, map[uint64]bool) {
	t.Helper()
	open := map[uint64]bool{1: true}
	rt := newTable(t, func(o *RouteTableOptions) { o.ChannelOpen = func(id uint64) bool { return open[id] } })
	_, err := rt.RegisterBroker(regHeader("c1", "broker-a", "10.0.0.5:10911", 0), regBody(1, topicConfig("T", 4, 6)),
		Registrant{ChannelID: 1, IP: genuineIP}, t0)
	require.NoError(t, err)
	return rt, open
}

// requireRoute checks T's route: served by broker-a at addrs with queues write queues,
// or not served when addrs is nil.
func requireRoute(t *testing.T, rt *RouteTable, addrs map[int64]string, queues int32) {
	t.Helper()
	route, ok := rt.TopicRoute("T")
	if addrs == nil {
		require.False(t, ok, "T is not served: %+v", route)
		return
	}
	require.True(t, ok, "T is served")
	require.Equal(t, addrs, route.BrokerDatas[0].BrokerAddrs)
	require.Equal(t, queues, route.QueueDatas[0].WriteQueueNums)
}

// An impostor's registration cannot take a live broker's name and id or its address,
// move its group to another cluster, nor unregister it.
func TestRegistrationTakeover(t *testing.T) {
	rt, _ := bindingTable(t)
	want := map[int64]string{0: "10.0.0.5:10911"}
	impostor := Registrant{ChannelID: 7, IP: impostorIP}
	_, err := rt.RegisterBroker(regHeader("c1", "broker-a", "10.6.6.6:10911", 0), regBody(1, topicConfig("T", 8, 6)), impostor, t0)
	require.ErrorIs(t, err, ErrTakeover, "another address for the live id")
	_, err = rt.RegisterBroker(regHeader("c1", "broker-evil", "10.0.0.5:10911", 0), regBody(1), impostor, t0)
	require.ErrorIs(t, err, ErrTakeover, "the live address under another name")
	_, err = rt.RegisterBroker(regHeader("c1", "broker-a", "10.0.0.5:10911", 1), regBody(1), impostor, t0)
	require.ErrorIs(t, err, ErrTakeover, "the live address under another id")
	_, err = rt.RegisterBroker(regHeader("c2", "broker-a", "10.0.0.5:10911", 0), regBody(1), impostor, t0)
	require.ErrorIs(t, err, ErrTakeover, "the live address in another cluster")
	_, err = rt.RegisterBroker(regHeader("c2", "broker-a", "10.6.6.6:10911", 1), regBody(1), impostor, t0)
	require.ErrorIs(t, err, ErrTakeover, "the group moved to another cluster")
	_, err = rt.UnregisterBroker("c1", "10.0.0.5:10911", "broker-a", 0, impostor, t0)
	require.ErrorIs(t, err, ErrTakeover)
	require.Empty(t, rt.RemoveByChannel(7), "the impostor's connection owns nothing")
	requireRoute(t, rt, want, 4)

	// The same frame as the broker's, from another connection, only shares the
	// binding: the queue data stay the holder's, and its close removes nothing.
	res, err := rt.RegisterBroker(regHeader("c1", "broker-a", "10.0.0.5:10911", 0), regBody(9, topicConfig("T", 8, 6)), impostor, t0)
	require.NoError(t, err)
	require.True(t, res.Shared)
	require.True(t, res.Joined)
	require.False(t, res.TopicsUpdated)
	res, err = rt.RegisterBroker(regHeader("c1", "broker-a", "10.0.0.5:10911", 0), regBody(9, topicConfig("T", 8, 6)), impostor, t0)
	require.NoError(t, err)
	require.True(t, res.Shared)
	require.False(t, res.Joined, "already shared")
	requireRoute(t, rt, want, 4)
	require.Empty(t, rt.RemoveByChannel(7))
	requireRoute(t, rt, want, 4)

	// Trusted (admin credentials): it may rebind.
	_, err = rt.RegisterBroker(regHeader("c1", "broker-a", "10.6.6.6:10911", 0), regBody(1, topicConfig("T", 8, 6)),
		Registrant{ChannelID: 7, IP: impostorIP, Trusted: true}, t0)
	require.NoError(t, err)
	requireRoute(t, rt, map[int64]string{0: "10.6.6.6:10911"}, 8)
}

// The race: the broker's connection closes (crash or restart) and an impostor
// keeps registering its name. The binding outlives the connection: the route is not
// served, nothing else may take it until it expires, and the broker coming back on a
// new connection gets it back at once.
func TestBindingOutlivesTheConnection(t *testing.T) {
	for _, tc := range []struct {
		name  string
		close func(rt *RouteTable, open map[uint64]bool)
	}{
		{"close handled", func(rt *RouteTable, open map[uint64]bool) {
			open[1] = false
			require.Equal(t, []string{"10.0.0.5:10911"}, rt.RemoveByChannel(1))
		}},
		{"close not yet handled", func(_ *RouteTable, open map[uint64]bool) { open[1] = false }},
		{"unregistered", func(rt *RouteTable, open map[uint64]bool) {
			ok, err := rt.UnregisterBroker("c1", "10.0.0.5:10911", "broker-a", 0, Registrant{ChannelID: 1, IP: genuineIP}, t0)
			require.NoError(t, err)
			require.True(t, ok)
			open[1] = false
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt, open := bindingTable(t)
			tc.close(rt, open)
			if tc.name != "close not yet handled" {
				requireRoute(t, rt, nil, 0)
				require.Empty(t, rt.Brokers())
			}

			impostor := Registrant{ChannelID: 7, IP: impostorIP}
			open[7] = true
			now := t0.Add(time.Second)
			for _, h := range []*protocol.RegisterBrokerRequestHeader{
				regHeader("c1", "broker-a", "10.6.6.6:10911", 0),
				regHeader("c1", "broker-evil", "10.0.0.5:10911", 0),
				regHeader("c2", "broker-a", "10.0.0.5:10911", 0),
				regHeader("c1", "broker-a", "10.0.0.5:10911", 1),
				regHeader("c2", "broker-a", "10.6.6.6:10911", 1), // the group into another cluster
			} {
				_, err := rt.RegisterBroker(h, regBody(1, topicConfig("T", 8, 6)), impostor, now)
				require.ErrorIs(t, err, ErrTakeover, "%+v", h)
			}
			ok, err := rt.UnregisterBroker("c1", "10.0.0.5:10911", "broker-a", 0, impostor, now)
			if tc.name == "close not yet handled" {
				// As the close would: the route goes, the binding stays.
				require.NoError(t, err)
				require.True(t, ok)
			} else {
				require.NoError(t, err)
				require.False(t, ok, "nothing served to unregister")
			}
			requireRoute(t, rt, nil, 0)

			// The broker comes back on a new connection: its route is back at once.
			open[2] = true
			res, err := rt.RegisterBroker(regHeader("c1", "broker-a", "10.0.0.5:10911", 0), regBody(2, topicConfig("T", 4, 6)),
				Registrant{ChannelID: 2, IP: genuineIP}, now)
			require.NoError(t, err)
			require.True(t, res.Reclaimed)
			require.True(t, res.TopicsUpdated)
			requireRoute(t, rt, map[int64]string{0: "10.0.0.5:10911"}, 4)
			_, err = rt.RegisterBroker(regHeader("c1", "broker-a", "10.6.6.6:10911", 0), regBody(1, topicConfig("T", 8, 6)), impostor, now)
			require.ErrorIs(t, err, ErrTakeover)
			requireRoute(t, rt, map[int64]string{0: "10.0.0.5:10911"}, 4)
		})
	}
}

// A reserved binding lasts until the registration's timeout passes, then anyone may
// register the name; admin credentials release it at once.
func TestReservedBindingExpires(t *testing.T) {
	rt, open := bindingTable(t)
	open[1] = false
	rt.RemoveByChannel(1)
	impostor := Registrant{ChannelID: 7, IP: impostorIP}
	expiry := t0.Add(DefaultRouteTableOptions().BrokerExpiry)

	require.Empty(t, rt.ExpireBrokers(expiry), "not yet expired")
	_, err := rt.RegisterBroker(regHeader("c1", "broker-a", "10.6.6.6:10911", 0), regBody(1, topicConfig("T", 8, 6)), impostor, expiry)
	require.ErrorIs(t, err, ErrTakeover)
	require.Contains(t, err.Error(), "registered from 10.0.0.5 until 2025-01-02T03:06:05Z")

	// Expired but not yet swept: the registration goes through.
	later := expiry.Add(time.Millisecond)
	_, err = rt.RegisterBroker(regHeader("c1", "broker-a", "10.6.6.6:10911", 0), regBody(1, topicConfig("T", 8, 6)), impostor, later)
	require.NoError(t, err)
	requireRoute(t, rt, map[int64]string{0: "10.6.6.6:10911"}, 8)
	_, err = rt.RegisterBroker(regHeader("c1", "broker-a", "10.0.0.5:10911", 0), regBody(1, topicConfig("T", 4, 6)),
		Registrant{ChannelID: 2, IP: genuineIP}, later)
	require.ErrorIs(t, err, ErrTakeover, "the old reservation is gone, the new holder's binding counts")

	// Swept.
	rt2, open2 := bindingTable(t)
	open2[1] = false
	rt2.RemoveByChannel(1)
	require.Equal(t, []string{"10.0.0.5:10911"}, rt2.ExpireBrokers(later))
	_, err = rt2.RegisterBroker(regHeader("c1", "broker-a", "10.6.6.6:10911", 0), regBody(1, topicConfig("T", 8, 6)), impostor, later)
	require.NoError(t, err)

	// A heartbeatTimeoutMillis shortens it; admin credentials release it at once.
	rt3 := newTable(t, nil)
	h := regHeader("c1", "broker-a", "10.0.0.5:10911", 0)
	h.HeartbeatTimeoutMillis = 1000
	_, err = rt3.RegisterBroker(h, regBody(1, topicConfig("T", 4, 6)), Registrant{ChannelID: 1, IP: genuineIP}, t0)
	require.NoError(t, err)
	rt3.RemoveByChannel(1)
	_, err = rt3.RegisterBroker(regHeader("c1", "broker-a", "10.6.6.6:10911", 0), regBody(1), impostor, t0.Add(time.Second))
	require.ErrorIs(t, err, ErrTakeover)
	ok, err := rt3.UnregisterBroker("c1", "10.0.0.5:10911", "broker-a", 0, impostor, t0)
	require.NoError(t, err)
	require.False(t, ok, "an untrusted request does not release a reservation")
	ok, err = rt3.UnregisterBroker("c1", "10.0.0.5:10911", "broker-a", 0, Registrant{ChannelID: 8, Trusted: true}, t0)
	require.NoError(t, err)
	require.True(t, ok)
	_, err = rt3.RegisterBroker(regHeader("c1", "broker-a", "10.6.6.6:10911", 0), regBody(1), impostor, t0.Add(time.Second))
	require.NoError(t, err)
}

// Connections sharing a binding: when the holder's connection closes another one takes
// it over, so the route stays; a connection from the advertised host replaces a holder
// from elsewhere, and only the holder's registrations write the queue data.
func TestSharedBindingHandover(t *testing.T) {
	rt, open := bindingTable(t)
	open[7] = true
	impostor := Registrant{ChannelID: 7, IP: impostorIP}
	want := map[int64]string{0: "10.0.0.5:10911"}
	res, err := rt.RegisterBroker(regHeader("c1", "broker-a", "10.0.0.5:10911", 0), regBody(9, topicConfig("T", 8, 6)), impostor, t0)
	require.NoError(t, err)
	require.True(t, res.Shared)

	// The broker's connection closes: the impostor's, sharing the binding, holds it.
	open[1] = false
	require.Empty(t, rt.RemoveByChannel(1))
	requireRoute(t, rt, want, 4)
	res, err = rt.RegisterBroker(regHeader("c1", "broker-a", "10.0.0.5:10911", 0), regBody(9, topicConfig("T", 8, 6)), impostor, t0)
	require.NoError(t, err)
	require.False(t, res.Shared, "it holds the binding now")
	requireRoute(t, rt, want, 8)

	// The broker comes back from its advertised host: it takes the binding back.
	open[2] = true
	res, err = rt.RegisterBroker(regHeader("c1", "broker-a", "10.0.0.5:10911", 0), regBody(2, topicConfig("T", 4, 6)),
		Registrant{ChannelID: 2, IP: genuineIP}, t0)
	require.NoError(t, err)
	require.False(t, res.Shared)
	require.True(t, res.TopicsUpdated)
	requireRoute(t, rt, want, 4)
	res, err = rt.RegisterBroker(regHeader("c1", "broker-a", "10.0.0.5:10911", 0), regBody(9, topicConfig("T", 8, 6)), impostor, t0)
	require.NoError(t, err)
	require.True(t, res.Shared)
	requireRoute(t, rt, want, 4)

	// From the same host (loopback, NAT) the holder is kept.
	open[3] = true
	res, err = rt.RegisterBroker(regHeader("c1", "broker-a", "10.0.0.5:10911", 0), regBody(9, topicConfig("T", 8, 6)),
		Registrant{ChannelID: 3, IP: genuineIP}, t0)
	require.NoError(t, err)
	require.True(t, res.Shared)
	requireRoute(t, rt, want, 4)

	// A sharing connection's unregistration withdraws only itself; the holder's hands
	// the binding to a sharing connection from the advertised host.
	ok, err := rt.UnregisterBroker("c1", "10.0.0.5:10911", "broker-a", 0, impostor, t0)
	require.NoError(t, err)
	require.False(t, ok)
	ok, err = rt.UnregisterBroker("c1", "10.0.0.5:10911", "broker-a", 0, Registrant{ChannelID: 2, IP: genuineIP}, t0)
	require.NoError(t, err)
	require.False(t, ok, "channel 3 holds it now")
	requireRoute(t, rt, want, 4)
	require.Empty(t, rt.RemoveByChannel(7), "channel 7 withdrew")
	require.Equal(t, []string{"10.0.0.5:10911"}, rt.RemoveByChannel(3))
	requireRoute(t, rt, nil, 0)
}

// A broker advertising a host name (no IP to compare) is recognised by the address it
// first registered from: after its connection closed and an impostor elsewhere
// re-registered its exact binding, the broker coming back from that address takes the
// binding back; a third address only shares it.
func TestBindingPrefersItsFirstRegistrant(t *testing.T) {
	open := map[uint64]bool{1: true, 2: true, 3: true, 7: true}
	rt := newTable(t, func(o *RouteTableOptions) { o.ChannelOpen = func(id uint64) bool { return open[id] } })
	h := regHeader("c1", "broker-a", "broker-a.example:10911", 0)
	home := netip.MustParseAddr("192.168.1.5")
	want := map[int64]string{0: "broker-a.example:10911"}
	_, err := rt.RegisterBroker(h, regBody(1, topicConfig("T", 4, 6)), Registrant{ChannelID: 1, IP: home}, t0)
	require.NoError(t, err)
	open[1] = false
	rt.RemoveByChannel(1)

	impostor := Registrant{ChannelID: 7, IP: impostorIP}
	res, err := rt.RegisterBroker(h, regBody(9, topicConfig("T", 8, 6)), impostor, t0)
	require.NoError(t, err)
	require.True(t, res.Reclaimed, "nothing tells it from the broker yet")
	requireRoute(t, rt, want, 8)

	res, err = rt.RegisterBroker(h, regBody(1, topicConfig("T", 4, 6)), Registrant{ChannelID: 2, IP: home}, t0)
	require.NoError(t, err)
	require.False(t, res.Shared, "the first registrant's address outranks the impostor")
	requireRoute(t, rt, want, 4)
	res, err = rt.RegisterBroker(h, regBody(9, topicConfig("T", 8, 6)), impostor, t0)
	require.NoError(t, err)
	require.True(t, res.Shared)
	res, err = rt.RegisterBroker(h, regBody(5, topicConfig("T", 2, 6)), Registrant{ChannelID: 3, IP: netip.MustParseAddr("10.9.9.9")}, t0)
	require.NoError(t, err)
	require.True(t, res.Shared)
	requireRoute(t, rt, want, 4)
}

// Any connection may come to hold a binding (by repeating it while the broker is
// away), so holding it gives no right to change it: an impostor that re-registered the
// broker's exact binding still cannot point the name at its own address.
func TestHolderCannotRebind(t *testing.T) {
	rt, open := bindingTable(t)
	open[1] = false
	rt.RemoveByChannel(1)
	open[7] = true
	impostor := Registrant{ChannelID: 7, IP: impostorIP}
	res, err := rt.RegisterBroker(regHeader("c1", "broker-a", "10.0.0.5:10911", 0), regBody(9, topicConfig("T", 8, 6)), impostor, t0)
	require.NoError(t, err)
	require.True(t, res.Reclaimed)
	for _, h := range []*protocol.RegisterBrokerRequestHeader{
		regHeader("c1", "broker-a", "10.6.6.6:10911", 0),
		regHeader("c1", "broker-evil", "10.0.0.5:10911", 0),
		regHeader("c1", "broker-a", "10.0.0.5:10911", 1),
		regHeader("c2", "broker-a", "10.0.0.5:10911", 0),
	} {
		_, err := rt.RegisterBroker(h, regBody(9, topicConfig("T", 8, 6)), impostor, t0)
		require.ErrorIs(t, err, ErrTakeover, "%+v", h)
	}
	requireRoute(t, rt, map[int64]string{0: "10.0.0.5:10911"}, 8)
}
