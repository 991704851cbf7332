package tools_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/client"
	"github.com/ferrymq/ferry/testutil"
)

// deliveries counts what a push consumer's handler got, by message id.
type deliveries struct {
	mu sync.Mutex
	by map[string]int
}

func (d *deliveries) handler(_ context.Context, msgs []*client.MessageExt) client.ConsumeResult {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, m := range msgs {
		d.by[m.MsgID]++
	}
	return client.ConsumeSuccess
}

func (d *deliveries) count(id string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.by[id]
}

// atLeast reports whether each id was delivered at least n times.
func (d *deliveries) atLeast(ids []string, n int) bool {
	for _, id := range ids {
		if d.count(id) < n {
			return false
		}
	}
	return true
}

// TestConsumerCalls drives the commands that reach a live consumer — Ferry's own push
// consumer, running in this process — through the broker: consumer reset-offset makes it
// read everything again, message resend hands its handler one message, consumer
// running-info shows its subscription and queues.
func TestConsumerCalls(t *testing.T) {
	const (
		topic = "CallTopic"
		group = "CallGroup"
	)
	c := testutil.StartCluster(t)
	ns := c.NamesrvAddr
	var res map[string]string
	runJSON(t, ns, &res, "topic", "create", "-t", topic, "-r", "2", "-w", "2")
	var sent []struct {
		MsgID       string `json:"msgId"`
		OffsetMsgID string `json:"offsetMsgId"`
	}
	runJSON(t, ns, &sent, "send", "-t", topic, "--count", "6", "call me")
	require.Len(t, sent, 6)
	ids := make([]string, len(sent))
	for i, s := range sent {
		ids[i] = s.MsgID
	}

	cl, err := client.New(client.WithNameServers(ns), client.WithInstanceName("calls-test"))
	require.NoError(t, err)
	defer func() { require.NoError(t, cl.Close()) }()
	got := &deliveries{by: map[string]int{}}
	pc, err := cl.NewPushConsumer(group, topic, "*", got.handler,
		client.WithConsumeFrom(client.ConsumeFromFirstOffset), client.WithCommitInterval(100*time.Millisecond))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, pc.Start(ctx))
	defer func() { require.NoError(t, pc.Close()) }()
	testutil.Eventually(t, 20*time.Second, func() bool { return got.atLeast(ids, 1) }, "every message consumed")
	lag := func() int64 {
		var progress []struct{ Lag int64 }
		runJSON(t, ns, &progress, "consumer", "progress", "-g", group, "-t", topic)
		require.Len(t, progress, 1)
		return progress[0].Lag
	}
	testutil.Eventually(t, 10*time.Second, func() bool { return lag() == 0 }, "offsets committed")
	for _, id := range ids {
		require.Equal(t, 1, got.count(id), "%s consumed once before the reset", id)
	}

	// Reset the online group to the earliest offset: the consumer reads it all again.
	var reset []struct {
		QueueID        int32 `json:"queueId"`
		ConsumerOffset int64 `json:"consumerOffset"`
	}
	runJSON(t, ns, &reset, "consumer", "reset-offset", "-g", group, "-t", topic, "--to-earliest")
	require.Len(t, reset, 2)
	for _, r := range reset {
		require.Zero(t, r.ConsumerOffset, "queue %d", r.QueueID)
	}
	testutil.Eventually(t, 20*time.Second, func() bool { return got.atLeast(ids, 2) }, "every message consumed again")
	testutil.Eventually(t, 10*time.Second, func() bool { return lag() == 0 }, "offsets committed after the re-read")

	// Running info: the consumer's subscriptions, its queues consumed to the end.
	var infos []struct {
		ClientID      string            `json:"clientId"`
		Properties    map[string]string `json:"properties"`
		Subscriptions []struct {
			Topic      string `json:"topic"`
			Expression string `json:"expression"`
		} `json:"subscriptions"`
		Queues []struct {
			Topic        string `json:"topic"`
			QueueID      int32  `json:"queueId"`
			CommitOffset int64  `json:"commitOffset"`
		} `json:"queues"`
	}
	runJSON(t, ns, &infos, "consumer", "running-info", "-g", group)
	require.Len(t, infos, 1)
	info := infos[0]
	require.Equal(t, cl.ClientID(), info.ClientID)
	require.Equal(t, group, info.Properties["consumerGroup"])
	require.Contains(t, info.Subscriptions, struct {
		Topic      string `json:"topic"`
		Expression string `json:"expression"`
	}{topic, "*"})
	var committed int64
	for _, q := range info.Queues {
		if q.Topic == topic {
			committed += q.CommitOffset
		}
	}
	require.Equal(t, int64(len(sent)), committed, "the queues of %s, read to the end: %+v", topic, info.Queues)

	// Resend by offset id (to the first online consumer) and by client id with -c.
	var out struct {
		MsgID         string `json:"msgId"`
		ClientID      string `json:"clientId"`
		ConsumeResult string `json:"consumeResult"`
	}
	before := got.count(ids[2])
	runJSON(t, ns, &out, "message", "resend", "-i", sent[2].OffsetMsgID, "-g", group)
	require.Equal(t, "CR_SUCCESS", out.ConsumeResult)
	require.Equal(t, ids[2], out.MsgID)
	require.Equal(t, cl.ClientID(), out.ClientID)
	require.Equal(t, before+1, got.count(ids[2]), "the live consumer's handler got the message")
	before = got.count(ids[4])
	runJSON(t, ns, &out, "message", "resend", "-t", topic, "-i", ids[4], "-g", group, "-c", cl.ClientID())
	require.Equal(t, "CR_SUCCESS", out.ConsumeResult)
	require.Equal(t, before+1, got.count(ids[4]))

	// A client that is not online, a group without consumers: one-line errors.
	for _, args := range [][]string{
		{"message", "resend", "-i", sent[0].OffsetMsgID, "-g", group, "-c", "10.9.9.9@nobody"},
		{"message", "resend", "-i", sent[0].OffsetMsgID, "-g", "NoSuchGroup"},
		{"consumer", "running-info", "-g", group, "-c", "10.9.9.9@nobody"},
	} {
		_, errOut, code := run(t, ns, args...)
		require.Equal(t, 1, code, "%v: %s", args, errOut)
		require.Equal(t, 1, strings.Count(strings.TrimSpace(errOut), "\n")+1, "%v: one line: %q", args, errOut)
	}
	_, errOut, code := run(t, ns, "message", "resend", "-g", group)
	require.Equal(t, 2, code, errOut)
}
