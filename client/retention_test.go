package client

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/store"
	"github.com/ferrymq/ferry/testutil"
)

// retentionEnv is a cluster whose store runs on a settable clock and runs its cleaner
// (and so the retention pass) every few milliseconds.
type retentionEnv struct {
	*adminEnv
	clockMs *atomic.Int64
}

func newRetentionEnv(t *testing.T) *retentionEnv {
	clockMs := &atomic.Int64{}
	clockMs.Store(time.Now().UnixMilli())
	c := testutil.StartCluster(t, testutil.WithStoreOptions(func(o *store.Options) {
		o.Clock = func() time.Time { return time.UnixMilli(clockMs.Load()) }
		o.CleanInterval = 5 * time.Millisecond
	}))
	return &retentionEnv{adminEnv: newAdminEnvOn(t, c, "retention"), clockMs: clockMs}
}

// sendBodies sends one message per body to queue 0 of a one-queue topic.
func (e *retentionEnv) sendBodies(topic, prefix string, n int) {
	for i := range n {
		_, err := e.p.Send(adminCtx(e.t), message.NewMessage(topic, fmt.Appendf(nil, "%s-%02d", prefix, i)))
		require.NoError(e.t, err)
	}
}

// minOffset is queue 0's minimum offset as the broker reports it (GET_TOPIC_STATS_INFO
// or GET_MIN_OFFSET).
func (e *retentionEnv) minOffset(topic string) int64 {
	st, err := e.a.TopicStats(adminCtx(e.t), topic)
	require.NoError(e.t, err)
	require.Len(e.t, st.Queues, 1)
	return st.Queues[0].MinOffset
}

// consumeBehind commits offset 0 for group, starts a push consumer and returns the
// bodies it received, sorted, once want have arrived.
func (e *retentionEnv) consumeBehind(group, topic string, want int) []string {
	mq := MessageQueue{Topic: topic, BrokerName: e.broker, QueueID: 0}
	require.NoError(e.t, e.a.UpdateConsumerOffset(adminCtx(e.t), group, mq, 0))
	var mu sync.Mutex
	var got []string
	startConsumer(e.t, e.cl, group, topic, "*", func(_ context.Context, msgs []*MessageExt) ConsumeResult {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range msgs {
			got = append(got, string(m.Body))
		}
		return ConsumeSuccess
	})
	testutil.Eventually(e.t, 20*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) >= want
	}, "the consumer received the retained messages")
	mu.Lock()
	defer mu.Unlock()
	out := append([]string(nil), got...)
	sort.Strings(out) // consumed concurrently: in no order
	return out
}

// skips reads the broker's skip counters.
func (e *retentionEnv) skips() (pulls, messages, expired string) {
	info, err := e.a.BrokerRuntimeInfo(adminCtx(e.t), e.broker)
	require.NoError(e.t, err)
	return info["ferryPullOffsetTooSmall"], info["ferryPullSkippedMessages"], info["ferryRetentionExpired"]
}

func TestRetentionTimeWithConsumerBehind(t *testing.T) {
	const topic = "RetentionTime"
	e := newRetentionEnv(t)
	require.NoError(t, e.a.CreateTopic(adminCtx(t), TopicConfig{Name: topic, ReadQueues: 1, WriteQueues: 1,
		Attributes: map[string]string{"retentionTime": "1h"}}, Target{}))
	e.sendBodies(topic, "old", 5)
	e.clockMs.Add(time.Hour.Milliseconds())
	e.sendBodies(topic, "new", 3)
	testutil.Eventually(t, 10*time.Second, func() bool { return e.minOffset(topic) == 5 },
		"the queue's minimum moved past the hour-old messages")

	got := e.consumeBehind("retention-time-cg", topic, 3)
	require.Equal(t, []string{"new-00", "new-01", "new-02"}, got, "no expired message is delivered")
	pulls, messages, expired := e.skips()
	require.Equal(t, "1", pulls, "the consumer's pull below the minimum is counted")
	require.Equal(t, "5", messages)
	require.Equal(t, "5", expired)

	// The expiry survives a restart (the store's clock now says nothing is old).
	e.clockMs.Add(-time.Hour.Milliseconds())
	e.c.RestartBroker(t)
	require.Equal(t, int64(5), e.minOffset(topic))
}

func TestRetentionBytesWithConsumerBehind(t *testing.T) {
	const topic = "RetentionBytes"
	e := newRetentionEnv(t)
	require.NoError(t, e.a.CreateTopic(adminCtx(t), TopicConfig{Name: topic, ReadQueues: 1, WriteQueues: 1}, Target{}))
	e.sendBodies(topic, "msg", 20)
	require.Zero(t, e.minOffset(topic), "no limit yet")

	// Records of this test are about 200 bytes each: 2KiB keeps the newest ten or so.
	require.NoError(t, e.a.UpdateTopic(adminCtx(t), TopicConfig{Name: topic, ReadQueues: 1, WriteQueues: 1,
		Attributes: map[string]string{"retentionBytes": "2KiB"}}))
	var minOff int64
	testutil.Eventually(t, 10*time.Second, func() bool { minOff = e.minOffset(topic); return minOff > 0 },
		"the queue's minimum moved past the oldest messages")
	require.Less(t, minOff, int64(20))

	got := e.consumeBehind("retention-bytes-cg", topic, int(20-minOff))
	require.Len(t, got, int(20-minOff))
	require.Equal(t, fmt.Sprintf("msg-%02d", minOff), got[0], "consumption resumes at the new minimum")
	for _, b := range got {
		require.True(t, strings.HasPrefix(b, "msg-"))
	}
	pulls, messages, _ := e.skips()
	require.Equal(t, "1", pulls)
	require.Equal(t, fmt.Sprint(minOff), messages)
}
