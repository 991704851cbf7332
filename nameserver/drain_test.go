package nameserver

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
)

func writePerm(code protocol.RequestCode, broker string) *remoting.Command {
	return protocol.NewRequest(code, &protocol.BrokerWritePermRequestHeader{BrokerName: broker})
}

// routePerms returns broker name → perm of a topic's route.
func routePerms(t *testing.T, c *remoting.Client, ns, topic string) map[string]int {
	t.Helper()
	resp := invoke(t, c, ns, routeRequest(topic))
	require.Equal(t, int16(protocol.Success), resp.Code, resp.Remark)
	route, err := goClientDecodeRoute(resp.Body)
	require.NoError(t, err)
	out := map[string]int{}
	for _, q := range route.Queues {
		out[q.BrokerName] = q.Perm
	}
	return out
}

// TestServerDrainSurvivesRegistration: a drained group's queues lose the write bit
// in routes, keep losing it across registrations (new data version included), and
// get back the perms the broker registered on undrain.
func TestServerDrainSurvivesRegistration(t *testing.T) {
	s := startServer(t, nil)
	c := newClient(t, remoting.SerializeJSON)
	ns := s.Addr()
	a := regHeader("DefaultCluster", "broker-a", "10.0.0.5:10911", 0)
	b := regHeader("DefaultCluster", "broker-b", "10.0.0.6:10911", 0)
	require.Equal(t, int16(protocol.Success), invoke(t, c, ns, registerRequest(t, a,
		regBody(1, topicConfig("T1", 4, 6), topicConfig("T2", 4, 6), topicConfig("RO", 4, 4)))).Code)
	require.Equal(t, int16(protocol.Success), invoke(t, c, ns, registerRequest(t, b, regBody(1, topicConfig("T1", 4, 6)))).Code)

	resp := invoke(t, c, ns, writePerm(protocol.WipeWritePermOfBroker, "broker-a"))
	require.Equal(t, int16(protocol.Success), resp.Code, resp.Remark)
	require.Equal(t, "3", resp.Ext("wipeTopicCount"))
	require.Equal(t, map[string]int{"broker-a": 4, "broker-b": 6}, routePerms(t, c, ns, "T1"))

	// The broker's periodic registration, then one with a new data version.
	require.Equal(t, int16(protocol.Success), invoke(t, c, ns, registerRequest(t, a,
		regBody(1, topicConfig("T1", 4, 6), topicConfig("T2", 4, 6), topicConfig("RO", 4, 4)))).Code)
	require.Equal(t, int16(protocol.Success), invoke(t, c, ns, registerRequest(t, a,
		regBody(2, topicConfig("T1", 4, 6), topicConfig("T2", 4, 6), topicConfig("RO", 4, 4), topicConfig("T3", 2, 6)))).Code)
	require.Equal(t, map[string]int{"broker-a": 4, "broker-b": 6}, routePerms(t, c, ns, "T1"))
	require.Equal(t, map[string]int{"broker-a": 4}, routePerms(t, c, ns, "T3"), "a topic created while drained is drained")

	resp = invoke(t, c, ns, getKV(NamespaceDrainedBrokers, "broker-a"))
	require.Equal(t, int16(protocol.Success), resp.Code, "the drain is recorded in the KV config")

	resp = invoke(t, c, ns, writePerm(protocol.AddWritePermOfBroker, "broker-a"))
	require.Equal(t, int16(protocol.Success), resp.Code, resp.Remark)
	require.Equal(t, "4", resp.Ext("addTopicCount"))
	require.Equal(t, map[string]int{"broker-a": 6, "broker-b": 6}, routePerms(t, c, ns, "T1"))
	require.Equal(t, map[string]int{"broker-a": 4}, routePerms(t, c, ns, "RO"), "a read-only topic stays read-only")
	require.Empty(t, s.Table().Drained())

	resp = invoke(t, c, ns, writePerm(protocol.WipeWritePermOfBroker, "nobody"))
	require.Equal(t, int16(protocol.Success), resp.Code, resp.Remark)
	require.Equal(t, "0", resp.Ext("wipeTopicCount"))
	resp = invoke(t, c, ns, remoting.NewRequest(int16(protocol.WipeWritePermOfBroker), nil))
	require.Equal(t, int16(protocol.SystemError), resp.Code)
	require.Contains(t, resp.Remark, "brokerName")
}

// TestServerDrainThroughKVNamespace: putting and deleting FERRY_DRAINED_BROKERS
// entries drains and undrains.
func TestServerDrainThroughKVNamespace(t *testing.T) {
	s := startServer(t, nil)
	c := newClient(t, remoting.SerializeJSON)
	ns := s.Addr()
	a := regHeader("DefaultCluster", "broker-a", "10.0.0.5:10911", 0)
	require.Equal(t, int16(protocol.Success), invoke(t, c, ns, registerRequest(t, a, regBody(1, topicConfig("T1", 4, 6)))).Code)
	require.Equal(t, int16(protocol.Success), invoke(t, c, ns, putKV(NamespaceDrainedBrokers, "broker-a", "x")).Code)
	require.Equal(t, map[string]int{"broker-a": 4}, routePerms(t, c, ns, "T1"))
	require.Equal(t, int16(protocol.Success), invoke(t, c, ns, deleteKV(NamespaceDrainedBrokers, "broker-a")).Code)
	require.Equal(t, map[string]int{"broker-a": 6}, routePerms(t, c, ns, "T1"))
}
