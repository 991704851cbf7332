package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/testutil"
	"github.com/ferrymq/ferry/tools"
)

// ferryctl runs ferryctl's Main against c and returns stdout, stderr and the exit status.
func ferryctl(c *testutil.Cluster, args ...string) (string, string, int) {
	var out, errOut bytes.Buffer
	code := tools.Main(context.Background(), append(args, "-n", c.NamesrvAddr), &out, &errOut)
	return out.String(), errOut.String(), code
}

// TestFerryctlDLQWithOfficialClients dead-letters a message an official consumer keeps
// failing, finds it with ferryctl dlq list (its original topic from the RETRY_TOPIC the
// broker set on the official client's send-back) and sends it back with dlq resend: an
// official consumer of another group gets the copy with its id, tag, key and user
// property.
func TestFerryctlDLQWithOfficialClients(t *testing.T) {
	const (
		topic = "DlqInteropTopic"
		group = "cg-dlq-interop"
	)
	c := testutil.StartCluster(t)
	createTopic(t, c, topic, 2)
	p := newProducer(t, c, "pg-dlq-interop")
	msg := primitive.NewMessage(topic, []byte("dead-interop")).WithTag("tag-a").WithKeys([]string{"key-9"})
	msg.WithProperty("color", "blue")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sent, err := p.SendSync(ctx, msg)
	require.NoError(t, err)

	failing := newPushConsumer(t, c, group, topic, "*", func(context.Context, ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		return consumer.ConsumeRetryLater, nil
	}, consumer.WithMaxReconsumeTimes(0))
	var list struct {
		Count    int `json:"count"`
		Messages []struct {
			MsgID       string `json:"msgId"`
			OriginTopic string `json:"originTopic"`
			Tags        string `json:"tags"`
		} `json:"messages"`
	}
	testutil.Eventually(t, 30*time.Second, func() bool {
		out, _, code := ferryctl(c, "dlq", "list", "-g", group, "-o", "json")
		return code == 0 && json.Unmarshal([]byte(out), &list) == nil && list.Count == 1
	}, "the failed message is in the DLQ")
	require.NoError(t, failing.Shutdown())
	require.Equal(t, topic, list.Messages[0].OriginTopic)
	require.Equal(t, sent.MsgID, list.Messages[0].MsgID)
	require.Equal(t, "tag-a", list.Messages[0].Tags)

	var mu sync.Mutex
	var got []*primitive.MessageExt
	newPushConsumer(t, c, "cg-dlq-interop-reader", topic, "*", func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, msgs...)
		return consumer.ConsumeSuccess, nil
	})
	out, errOut, code := ferryctl(c, "dlq", "resend", "-g", group, "-i", sent.MsgID, "-o", "json")
	require.Equal(t, 0, code, errOut)
	var rs struct {
		Resent int `json:"resent"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rs), out)
	require.Equal(t, 1, rs.Resent)

	testutil.Eventually(t, 30*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) >= 2
	}, "the reader gets the original and the resent copy")
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, got, 2)
	for _, m := range got {
		require.Equal(t, "dead-interop", string(m.Body))
		require.Equal(t, sent.MsgID, m.MsgId, "the copy keeps the message's id")
		require.Equal(t, "tag-a", m.GetTags())
		require.Equal(t, "key-9", m.GetKeys())
		require.Equal(t, "blue", m.GetProperty("color"))
		require.Empty(t, m.GetProperty(primitive.PropertyRetryTopic))
		require.Zero(t, m.ReconsumeTimes)
	}
}
