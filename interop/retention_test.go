package interop

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/client"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/store"
	"github.com/ferrymq/ferry/testutil"
)

// TestRetentionOfficialConsumerBehind: the official Go client's push consumer, whose
// committed offset lies below a queue's minimum raised by the topic's retentionTime, is
// moved to the minimum (PULL_OFFSET_MOVED, RocketMQ's OFFSET_TOO_SMALL path) and receives
// only the messages retention keeps; the broker counts the skip.
func TestRetentionOfficialConsumerBehind(t *testing.T) {
	const topic, group = "RetentionOfficial", "retention-official-cg"
	clockMs := &atomic.Int64{}
	clockMs.Store(time.Now().UnixMilli())
	c := testutil.StartCluster(t, testutil.WithStoreOptions(func(o *store.Options) {
		o.Clock = func() time.Time { return time.UnixMilli(clockMs.Load()) }
		o.CleanInterval = 5 * time.Millisecond
	}))
	fc, err := client.New(client.WithNameServers(c.NamesrvAddr), client.WithInstanceName(instance("ret-admin")))
	require.NoError(t, err)
	t.Cleanup(func() { _ = fc.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, fc.Admin().CreateTopic(ctx, client.TopicConfig{Name: topic, ReadQueues: 1, WriteQueues: 1,
		Attributes: map[string]string{"retentionTime": "1h"}}, client.Target{}))

	p := newProducer(t, c, "retention-official-pg")
	sendN(t, p, topic, 4, 1, func(i int) string { return "old-" + strconv.Itoa(i) })
	clockMs.Add(time.Hour.Milliseconds())
	sendN(t, p, topic, 3, 1, func(i int) string { return "new-" + strconv.Itoa(i) })
	raw := newRaw(t, c.BrokerAddr)
	testutil.Eventually(t, 10*time.Second, func() bool { return raw.minOffset(topic, 0) == 4 },
		"GET_MIN_OFFSET moved past the expired messages")

	// The group committed offset 0 before the messages expired.
	resp := raw.call(protocol.UpdateConsumerOffset, map[string]string{"consumerGroup": group, "topic": topic,
		"queueId": "0", "commitOffset": "0"}, nil)
	require.Equal(t, int16(protocol.Success), resp.Code, resp.Remark)

	rec := newRecorder()
	newPushConsumer(t, c, group, topic, "*", rec.handler("c"))
	rec.waitAll(t, []string{"new-0", "new-1", "new-2"}, 30*time.Second, "the kept messages consumed")
	for _, b := range []string{"old-0", "old-1", "old-2", "old-3"} {
		require.Zero(t, rec.count(b), "expired %s is never delivered", b)
	}
	ictx, icancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer icancel()
	info, err := fc.Admin().BrokerRuntimeInfo(ictx, brokerName(t, c, topic))
	require.NoError(t, err)
	require.Equal(t, "4", info["ferryPullSkippedMessages"], "the skip is counted")
}
