package interop

import (
	"fmt"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/testutil"
)

// TestBroadcastConsumption runs three push consumers of one group in BroadCasting mode
// on a 4-queue topic: each takes every queue and receives every message exactly once,
// including delayed ones.
func TestBroadcastConsumption(t *testing.T) {
	const (
		topic  = "BroadcastTopic"
		group  = "cg-broadcast"
		queues = 4
		total  = 600
	)
	c := testutil.StartCluster(t, withShortLevels())
	createTopic(t, c, topic, queues)
	p := newProducer(t, c, "pg-broadcast")
	// Broadcasting consumers keep their offsets in local files named after the client
	// id, so the instance names must not repeat across runs.
	run := time.Now().UnixNano()
	names := []string{"x", "y", "z"}
	var instances []string
	for _, n := range names {
		instances = append(instances, fmt.Sprintf("bc-%s-%d", n, run))
	}
	cleanLocalOffsets(t, instances...)
	rec := newExtRecorder()
	for i, n := range names {
		pc := newPushConsumer(t, c, group, topic, "*", rec.handler(n, nil),
			consumer.WithConsumerModel(consumer.BroadCasting), consumer.WithInstance(instances[i]))
		defer pc.Shutdown()
	}
	want := bodies("bc-", total)
	sendMsgs(t, p, 0, total, 4, func(i int) *primitive.Message {
		msg := primitive.NewMessage(topic, []byte(want[i]))
		if i%10 == 0 {
			msg.WithDelayTimeLevel(i%18 + 1)
		}
		return msg
	})
	testutil.Eventually(t, 60*time.Second, func() bool { return rec.countAtLeast(want, len(names)) == total },
		"every consumer received every message")
	for _, b := range want {
		per := map[string]int{}
		for _, d := range rec.of(b) {
			per[d.consumer]++
		}
		for _, n := range names {
			require.Equal(t, 1, per[n], "%s received %s once", n, b)
		}
	}
	queuesOf := map[string]map[int]bool{}
	for _, d := range rec.snapshot() {
		if queuesOf[d.consumer] == nil {
			queuesOf[d.consumer] = map[int]bool{}
		}
		queuesOf[d.consumer][d.queue] = true
	}
	for _, n := range names {
		require.Len(t, queuesOf[n], queues, "%s consumed every queue", n)
	}
}
