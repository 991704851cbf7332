package interop

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/client"
	"github.com/ferrymq/ferry/testutil"
)

// TestFerryOrderlyReadsOfficialHashProducer: the official producer sends 12 keys × 60
// messages with its hash queue selector (each key's messages one after the other), and
// Ferry's orderly push consumer (batches of four) gets every key's messages exactly
// once, in send order, from the key's queue, never two calls of one queue at once. While
// it runs, another client cannot lock its queues; after its Close it can, and the offsets
// are committed to the end of each queue.
func TestFerryOrderlyReadsOfficialHashProducer(t *testing.T) {
	const (
		topic, group = "FerryOrderlyTopic", "cg-ferry-orderly"
		queues       = 4
		keys, perKey = 12, 60
	)
	c := testutil.StartCluster(t)
	createTopic(t, c, topic, queues)
	raw := newRaw(t, c.BrokerAddr)
	bname := brokerName(t, c, topic)

	type got struct {
		seq   int
		queue int
	}
	var mu sync.Mutex
	byKey := map[int][]got{}
	inFlight := map[int]int{}
	overlaps := 0
	pc := newFerryConsumer(t, c, group, topic, "*", func(_ context.Context, msgs []*client.MessageExt) client.ConsumeResult {
		q := int(msgs[0].Queue.QueueID)
		mu.Lock()
		if inFlight[q]++; inFlight[q] > 1 {
			overlaps++
		}
		mu.Unlock()
		runtime.Gosched() // give another call of the queue, if one could start, a chance to overlap
		mu.Lock()
		defer mu.Unlock()
		inFlight[q]--
		for _, m := range msgs {
			var k, seq int
			_, err := fmt.Sscanf(string(m.Body), "o%d/%d", &k, &seq)
			assert.NoError(t, err, string(m.Body))
			byKey[k] = append(byKey[k], got{seq: seq, queue: int(m.Queue.QueueID)})
		}
		return client.ConsumeSuccess
	}, client.WithOrderly(), client.WithConsumeBatch(4))

	// Worker k sends key k's messages in order.
	res := sendMsgs(t, newHashProducer(t, c, "pg-ferry-orderly"), 0, keys*perKey, keys, func(i int) *primitive.Message {
		k, seq := i%keys, i/keys
		return primitive.NewMessage(topic, fmt.Appendf(nil, "o%d/%d", k, seq)).WithShardingKey("key-" + strconv.Itoa(k))
	})
	keyQueue := map[int]int{}
	for i, r := range res {
		keyQueue[i%keys] = r.MessageQueue.QueueId
	}
	testutil.Eventually(t, 30*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, g := range byKey {
			n += len(g)
		}
		return n >= keys*perKey
	}, "every message consumed")
	require.Empty(t, raw.lockAs(group, "127.0.0.1@intruder", topic, bname, 0, 1, 2, 3), "the Ferry consumer holds every queue lock")
	require.NoError(t, pc.Close())
	require.ElementsMatch(t, []int{0, 1, 2, 3}, raw.lockAs(group, "127.0.0.1@intruder", topic, bname, 0, 1, 2, 3),
		"the locks are released on Close")

	mu.Lock()
	defer mu.Unlock()
	require.Zero(t, overlaps, "two handler calls of one queue ran at once")
	for k := range keys {
		gs := byKey[k]
		require.Len(t, gs, perKey, "key %d: each message once", k)
		for i, g := range gs {
			require.Equal(t, i, g.seq, "key %d: delivery %d out of order", k, i)
			require.Equal(t, keyQueue[k], g.queue, "key %d from its queue", k)
		}
	}
	for q := range queues {
		off, ok := raw.consumerOffset(group, topic, q)
		require.True(t, ok, "queue %d committed", q)
		require.Equal(t, raw.maxOffset(topic, q), off, "queue %d committed to its end", q)
	}
}
