package tools_test

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/testutil"
)

// runJSON runs ferryctl with -o json, requires exit status 0 and decodes stdout into v.
func runJSON(t *testing.T, namesrv string, v any, args ...string) {
	t.Helper()
	out, errOut, code := run(t, namesrv, append(args, "-o", "json")...)
	require.Equal(t, 0, code, "ferryctl %s: %s", strings.Join(args, " "), errOut)
	require.NoError(t, json.Unmarshal([]byte(out), v), "ferryctl %s printed %s", strings.Join(args, " "), out)
}

// TestAdminSession goes from an empty broker to finding messages by id, key and offset and
// reading a group's lag, as docs/ferryctl.md's session does.
func TestAdminSession(t *testing.T) {
	c := testutil.StartCluster(t)
	ns := c.NamesrvAddr

	var cluster []struct {
		Cluster, Broker, Addr string
		BrokerID              int64 `json:"brokerId"`
	}
	runJSON(t, ns, &cluster, "cluster", "list")
	require.Len(t, cluster, 1)
	require.Equal(t, c.BrokerAddr, cluster[0].Addr)

	var res map[string]string
	runJSON(t, ns, &res, "topic", "create", "-t", "Session", "-r", "2", "-w", "2")
	require.Equal(t, "created", res["result"])
	var topics []string
	runJSON(t, ns, &topics, "topic", "list")
	require.Contains(t, topics, "Session")
	var route struct {
		Queues []struct {
			Broker                  string
			ReadQueues, WriteQueues int32
		}
	}
	runJSON(t, ns, &route, "topic", "route", "-t", "Session")
	require.Len(t, route.Queues, 1)
	require.Equal(t, int32(2), route.Queues[0].WriteQueues)

	var sent []struct {
		MsgID       string `json:"msgId"`
		OffsetMsgID string `json:"offsetMsgId"`
		QueueID     int32  `json:"queueId"`
		QueueOffset int64  `json:"queueOffset"`
	}
	runJSON(t, ns, &sent, "send", "-t", "Session", "--keys", "order-42", "--tags", "created", "--count", "6", "hello session")
	require.Len(t, sent, 6)

	testutil.Eventually(t, 10*time.Second, func() bool { // dispatch follows the log within ms
		var status []struct {
			MinOffset, MaxOffset int64
		}
		runJSON(t, ns, &status, "topic", "status", "-t", "Session")
		var stored int64
		for _, q := range status {
			stored += q.MaxOffset - q.MinOffset
		}
		return stored == 6
	}, "topic status counts the 6 messages")

	type found struct {
		MsgID       string `json:"msgId"`
		OffsetMsgID string `json:"offsetMsgId"`
		QueueID     int32  `json:"queueId"`
		QueueOffset int64  `json:"queueOffset"`
		Tags        string
		Body        string
	}
	var byOffsetID, byUniq, byKey, byOffset []found
	runJSON(t, ns, &byOffsetID, "message", "query", "-i", sent[2].OffsetMsgID)
	require.Len(t, byOffsetID, 1)
	require.Equal(t, sent[2].MsgID, byOffsetID[0].MsgID)
	runJSON(t, ns, &byUniq, "message", "query", "-t", "Session", "-i", sent[3].MsgID)
	require.Len(t, byUniq, 1)
	require.Equal(t, sent[3].OffsetMsgID, byUniq[0].OffsetMsgID)
	runJSON(t, ns, &byKey, "message", "query", "-t", "Session", "-k", "order-42")
	require.Len(t, byKey, 6)
	runJSON(t, ns, &byOffset, "message", "print", "-t", "Session", "-q", "1", "--offset", "0")
	require.Len(t, byOffset, 1)
	require.Equal(t, "hello session", byOffset[0].Body)
	require.Equal(t, "created", byOffset[0].Tags)
	var hexed []found
	runJSON(t, ns, &hexed, "message", "print", "-i", sent[0].OffsetMsgID, "--body", "hex", "--max-body", "5")
	require.Equal(t, "68656c6c6f…", hexed[0].Body, `"hello" in hex, truncated`)

	// Consume 4 of the 6 as group G: its lag is then 2 in all.
	_, errOut, code := run(t, ns, "consume", "-t", "Session", "-g", "G", "--from", "first", "--count", "4", "--timeout", "20s", "-o", "json")
	require.Equal(t, 0, code, errOut)
	var progress []struct {
		Group  string
		Lag    int64
		Queues []struct {
			BrokerOffset, ConsumerOffset, Lag int64
		}
	}
	testutil.Eventually(t, 10*time.Second, func() bool {
		progress = nil
		out, _, code := run(t, ns, "consumer", "progress", "-g", "G", "-t", "Session", "-o", "json")
		return code == 0 && json.Unmarshal([]byte(out), &progress) == nil && len(progress) == 1 && progress[0].Lag == 2
	}, "lag = sent − consumed")
	var byTopic []struct{ Group string }
	runJSON(t, ns, &byTopic, "consumer", "progress", "-t", "Session")
	require.Len(t, byTopic, 1)
	require.Equal(t, "G", byTopic[0].Group)

	// Reset G to the earliest offset (offline group): its lag is 6 again.
	var reset []struct{ ConsumerOffset int64 }
	runJSON(t, ns, &reset, "consumer", "reset-offset", "-g", "G", "-t", "Session", "--to-earliest")
	require.Len(t, reset, 2)
	for _, r := range reset {
		require.Zero(t, r.ConsumerOffset)
	}
	runJSON(t, ns, &progress, "consumer", "progress", "-g", "G", "-t", "Session")
	require.Equal(t, int64(6), progress[0].Lag)

	// Groups, broker status and config.
	runJSON(t, ns, &res, "group", "create", "-g", "Billing", "--retry-max-times", "3")
	var groups map[string]struct {
		RetryMaxTimes int32 `json:"retryMaxTimes"`
	}
	runJSON(t, ns, &groups, "group", "list")
	require.Equal(t, int32(3), groups["Billing"].RetryMaxTimes)
	runJSON(t, ns, &res, "group", "delete", "-g", "Billing", "--clean-offsets")
	groups = nil // Unmarshal into a map merges
	runJSON(t, ns, &groups, "group", "list")
	require.NotContains(t, groups, "Billing")
	var kv map[string]string
	runJSON(t, ns, &kv, "broker", "status")
	require.NotEmpty(t, kv["commitLogMaxOffset"])
	runJSON(t, ns, &kv, "broker", "config")
	require.Equal(t, "broker-a", kv["brokerName"])

	runJSON(t, ns, &res, "topic", "delete", "-t", "Session")
	_, errOut, code = run(t, ns, "topic", "route", "-t", "Session")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "Session")
}

func TestAdminBadInput(t *testing.T) {
	c := testutil.StartCluster(t)
	for _, args := range [][]string{
		{"message", "query", "-i", "not-an-id"},
		{"message", "query", "-t", "NoSuchTopic", "-k", "k"},
		{"topic", "route", "-t", "NoSuchTopic"},
		{"consumer", "connections", "-g", "NoSuchGroup"},
	} {
		_, errOut, code := run(t, c.NamesrvAddr, args...)
		require.Equal(t, 1, code, "%v: %s", args, errOut)
		require.Equal(t, 1, strings.Count(strings.TrimSpace(errOut), "\n")+1, "%v: one line: %q", args, errOut)
	}
	_, errOut, code := run(t, c.NamesrvAddr, "message", "query")
	require.Equal(t, 2, code, errOut)
	_, errOut, code = run(t, c.NamesrvAddr, "consumer", "reset-offset", "-g", "G", "-t", "T", "--to-earliest", "--to-latest")
	require.Equal(t, 2, code, errOut)
}

// TestUpdatesConnectionsAndBenchConsume covers the commands the session test does not:
// topic and group updates, both connection lists and bench consume.
func TestUpdatesConnectionsAndBenchConsume(t *testing.T) {
	c := testutil.StartCluster(t)
	ns := c.NamesrvAddr
	var res map[string]string
	runJSON(t, ns, &res, "topic", "create", "-t", "Upd", "-r", "2", "-w", "2")
	runJSON(t, ns, &res, "topic", "update", "-t", "Upd", "-r", "4", "-w", "4")
	require.Equal(t, "updated", res["result"])
	var route struct {
		Queues []struct {
			ReadQueues, WriteQueues int32
			Perm                    string
		}
	}
	testutil.Eventually(t, 10*time.Second, func() bool {
		runJSON(t, ns, &route, "topic", "route", "-t", "Upd")
		return len(route.Queues) == 1 && route.Queues[0].WriteQueues == 4
	}, "the route shows the new queue count")
	require.Equal(t, "RW-", route.Queues[0].Perm)

	runJSON(t, ns, &res, "group", "create", "-g", "UpdG", "--retry-max-times", "3")
	runJSON(t, ns, &res, "group", "update", "-g", "UpdG", "--retry-max-times", "7")
	var groups map[string]struct {
		RetryMaxTimes int32 `json:"retryMaxTimes"`
	}
	runJSON(t, ns, &groups, "group", "list")
	require.Equal(t, int32(7), groups["UpdG"].RetryMaxTimes)

	var sent []struct {
		MsgID string `json:"msgId"`
	}
	runJSON(t, ns, &sent, "send", "-t", "Upd", "-g", "UpdProducer", "--count", "50", "x")
	require.Len(t, sent, 50)

	// A consumer running in the background (ferryctl consume) shows up in the connection
	// list with its subscription; then bench consume reads the topic's 50 messages.
	consumer := exec.Command(ferryctl(t), "consume", "-t", "Upd", "-g", "UpdG", "--from", "first", "--timeout", "30s")
	consumer.Env = append(consumer.Environ(), "FERRY_NAMESRV="+ns)
	require.NoError(t, consumer.Start())
	defer func() { _ = consumer.Process.Kill(); _ = consumer.Wait() }()
	var conns struct {
		ConnectionSet []struct {
			ClientID string `json:"clientId"`
		} `json:"connectionSet"`
		SubscriptionTable map[string]any `json:"subscriptionTable"`
	}
	testutil.Eventually(t, 10*time.Second, func() bool {
		out, _, code := run(t, ns, "consumer", "connections", "-g", "UpdG", "-o", "json")
		return code == 0 && json.Unmarshal([]byte(out), &conns) == nil && len(conns.ConnectionSet) == 1
	}, "the running consumer is listed")
	require.Contains(t, conns.SubscriptionTable, "Upd")
	// A producer running in the background (bench produce) is listed with its group.
	producer := exec.Command(ferryctl(t), "bench", "produce", "-t", "UpdBench", "-g", "UpdProducer", "--producers", "1",
		"--window", "1", "--duration", "30s")
	producer.Env = append(producer.Environ(), "FERRY_NAMESRV="+ns)
	require.NoError(t, producer.Start())
	defer func() { _ = producer.Process.Kill(); _ = producer.Wait() }()
	testutil.Eventually(t, 10*time.Second, func() bool {
		var producers []struct {
			ClientID string `json:"clientId"`
		}
		out, _, code := run(t, ns, "producer", "connections", "-g", "UpdProducer", "-o", "json")
		return code == 0 && json.Unmarshal([]byte(out), &producers) == nil && len(producers) == 1
	}, "the running producer is listed")

	var rep struct {
		Kind     string `json:"kind"`
		Messages int64  `json:"messages"`
	}
	runJSON(t, ns, &rep, "bench", "consume", "-t", "Upd", "--count", "50", "--duration", "20s")
	require.Equal(t, "consume", rep.Kind)
	require.Equal(t, int64(50), rep.Messages)
}
