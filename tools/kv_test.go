package tools_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/testutil"
)

// requireFails runs ferryctl, requires exit status code and a one-line error holding
// want.
func requireFails(t *testing.T, namesrv string, code int, want string, args ...string) {
	t.Helper()
	out, errOut, got := run(t, namesrv, args...)
	require.Equal(t, code, got, "ferryctl %s: stdout %q stderr %q", strings.Join(args, " "), out, errOut)
	require.Equal(t, 1, strings.Count(strings.TrimRight(errOut, "\n"), "\n")+1, "one line: %q", errOut)
	require.Contains(t, errOut, want)
}

type kvRow struct {
	Namespace string `json:"namespace"`
	Key       string `json:"key"`
	Value     string `json:"value"`
}

// TestKVCommands: kv put, get, list and delete against a running name server, with
// JSON output and bad input.
func TestKVCommands(t *testing.T) {
	c := testutil.StartCluster(t)
	ns := c.NamesrvAddr

	var rows []kvRow
	runJSON(t, ns, &rows, "kv", "list", "-s", "app")
	require.Empty(t, rows)
	require.NotNil(t, rows, "an empty namespace lists as []")
	requireFails(t, ns, 1, `no entry "k1" in KV namespace "app"`, "kv", "get", "-s", "app", "-k", "k1")

	var put kvRow
	runJSON(t, ns, &put, "kv", "put", "--namespace", "app", "--key", "k1", "--value", "v1")
	require.Equal(t, kvRow{"app", "k1", "v1"}, put)
	runJSON(t, ns, &put, "kv", "put", "-s", "app", "-k", "k0", "-v", "")
	require.Equal(t, kvRow{"app", "k0", ""}, put)

	var got kvRow
	runJSON(t, ns, &got, "kv", "get", "-s", "app", "-k", "k1")
	require.Equal(t, kvRow{"app", "k1", "v1"}, got)
	runJSON(t, ns, &rows, "kv", "list", "-s", "app")
	require.Equal(t, []kvRow{{"app", "k0", ""}, {"app", "k1", "v1"}}, rows)

	var del struct {
		Namespace, Key string
		Deleted        bool
	}
	runJSON(t, ns, &del, "kv", "delete", "-s", "app", "-k", "k1")
	require.True(t, del.Deleted)
	require.Equal(t, "k1", del.Key)
	requireFails(t, ns, 1, "no entry", "kv", "get", "-s", "app", "-k", "k1")

	out, errOut, code := run(t, ns, "kv", "list", "-s", "app")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "KEY")
	require.Contains(t, out, "k0")

	requireFails(t, ns, 2, "-s NAMESPACE is required", "kv", "get", "-k", "k1")
	requireFails(t, ns, 2, "-k KEY is required", "kv", "delete", "-s", "app")
	requireFails(t, ns, 2, "-v VALUE is required", "kv", "put", "-s", "app", "-k", "k1")
	requireFails(t, ns, 2, "-s NAMESPACE is required", "kv", "list")
}

// TestTopicOrderConf: topic order-conf shows, sets and deletes ORDER_TOPIC_CONFIG/TOPIC,
// and the topic's route carries it.
func TestTopicOrderConf(t *testing.T) {
	c := testutil.StartCluster(t)
	c.StartBrokerGroup(t, "broker-b")
	ns := c.NamesrvAddr
	var res map[string]string
	runJSON(t, ns, &res, "topic", "create", "-t", "Ordered", "-c", "DefaultCluster", "-r", "4", "-w", "4")

	type orderConf struct {
		Topic     string `json:"topic"`
		OrderConf string `json:"orderConf"`
	}
	var oc orderConf
	runJSON(t, ns, &oc, "topic", "order-conf", "-t", "Ordered")
	require.Equal(t, orderConf{"Ordered", ""}, oc)

	runJSON(t, ns, &oc, "topic", "order-conf", "-t", "Ordered", "--set", " broker-a:2 ; broker-b:3;")
	require.Equal(t, orderConf{"Ordered", "broker-a:2;broker-b:3"}, oc)
	runJSON(t, ns, &oc, "topic", "order-conf", "-t", "Ordered")
	require.Equal(t, orderConf{"Ordered", "broker-a:2;broker-b:3"}, oc)
	var kv kvRow
	runJSON(t, ns, &kv, "kv", "get", "-s", "ORDER_TOPIC_CONFIG", "-k", "Ordered")
	require.Equal(t, "broker-a:2;broker-b:3", kv.Value)
	var route struct {
		Order string `json:"orderTopicConf"`
	}
	runJSON(t, ns, &route, "topic", "route", "-t", "Ordered")
	require.Equal(t, "broker-a:2;broker-b:3", route.Order)

	requireFails(t, ns, 1, `broker group "broker-x" is not registered`, "topic", "order-conf", "-t", "Ordered", "--set", "broker-x:2")
	requireFails(t, ns, 2, "is not broker:queues", "topic", "order-conf", "-t", "Ordered", "--set", "broker-a")
	requireFails(t, ns, 2, "positive integer", "topic", "order-conf", "-t", "Ordered", "--set", "broker-a:0")
	requireFails(t, ns, 2, "listed twice", "topic", "order-conf", "-t", "Ordered", "--set", "broker-a:1;broker-a:2")
	requireFails(t, ns, 2, "exclude each other", "topic", "order-conf", "-t", "Ordered", "--set", "broker-a:1", "--delete")
	requireFails(t, ns, 2, "-t TOPIC is required", "topic", "order-conf")
	runJSON(t, ns, &kv, "kv", "get", "-s", "ORDER_TOPIC_CONFIG", "-k", "Ordered")
	require.Equal(t, "broker-a:2;broker-b:3", kv.Value, "refused changes changed nothing")

	runJSON(t, ns, &oc, "topic", "order-conf", "-t", "Ordered", "--delete")
	require.Equal(t, orderConf{"Ordered", ""}, oc)
	var after map[string]any
	runJSON(t, ns, &after, "topic", "route", "-t", "Ordered")
	require.NotContains(t, after, "orderTopicConf")
}
