package interop

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/testutil"
)

// newHashProducer starts a producer that picks the queue by the message's sharding key.
func newHashProducer(t *testing.T, c *testutil.Cluster, group string) rocketmq.Producer {
	t.Helper()
	return newProducer(t, c, group, producer.WithQueueSelector(producer.NewHashQueueSelector()))
}

// ownQueues allocates the queues of topic whose id satisfies own, and every queue of
// topic when all is set and the consumer is alone in its group. The orderly tests use it
// instead of AllocateByAveragely because the Go client does not unlock the queues it
// loses in a rebalance (removeUnnecessaryMessageQueue: "TODO orderly"): a consumer that
// started alone and locked every queue would keep its peer off half of them for the
// broker's 60 s lock expiry. The split is the one AllocateByAveragely settles on.
func ownQueues(topic string, own func(q int) bool, all bool) consumer.AllocateStrategy {
	return func(_, cid string, mqAll []*primitive.MessageQueue, cidAll []string) []*primitive.MessageQueue {
		if !slices.Contains(cidAll, cid) {
			return nil
		}
		var out []*primitive.MessageQueue
		for _, mq := range mqAll {
			if mq.Topic == topic && (own(mq.QueueId) || all && len(cidAll) == 1) {
				out = append(out, mq)
			}
		}
		return out
	}
}

// gate ends a consumer's session cleanly before it shuts down: once closed, its handler
// records nothing more and, after release, answers SuspendCurrentQueueAMoment (the
// message stays unconsumed). The Go client unlocks its queues before it stops consuming,
// so without the gate its last deliveries could overlap with the next owner's first.
type gate struct {
	mu       sync.RWMutex
	closed   bool
	released chan struct{}
}

func newGate() *gate { return &gate{released: make(chan struct{})} }

// close waits for running handlers to finish recording and stops further ones.
func (g *gate) close() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
}

// orderlyHandler records under name until g closes; poison makes it suspend the queue.
func orderlyHandler(rec *extRecorder, name string, g *gate, poison string) func(context.Context, ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
	return func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		at := time.Now()
		g.mu.RLock()
		if g.closed {
			g.mu.RUnlock()
			<-g.released
			return consumer.SuspendCurrentQueueAMoment, nil
		}
		rec.add(name, at, msgs)
		g.mu.RUnlock()
		for _, m := range msgs {
			if string(m.Body) == poison {
				return consumer.SuspendCurrentQueueAMoment, nil
			}
		}
		return consumer.ConsumeSuccess, nil
	}
}

// lockAs sends LOCK_BATCH_MQ for queues of topic as client and returns the queue ids
// the broker granted.
func (r *rawClient) lockAs(group, client, topic, bname string, queues ...int) []int {
	r.t.Helper()
	type mq struct {
		Topic      string `json:"topic"`
		BrokerName string `json:"brokerName"`
		QueueID    int    `json:"queueId"`
	}
	var set []mq
	for _, q := range queues {
		set = append(set, mq{topic, bname, q})
	}
	body, err := json.Marshal(map[string]any{"consumerGroup": group, "clientId": client, "mqSet": set})
	require.NoError(r.t, err)
	resp := r.call(protocol.LockBatchMQ, nil, body)
	require.Equal(r.t, int16(protocol.Success), resp.Code, resp.Remark)
	var out struct {
		LockOKMQSet []mq `json:"lockOKMQSet"`
	}
	require.NoError(r.t, json.Unmarshal(resp.Body, &out))
	var ids []int
	for _, m := range out.LockOKMQSet {
		ids = append(ids, m.QueueID)
	}
	return ids
}

// TestOrderlyConsumption runs two orderly consumers on a 4-queue topic that 16 keys are
// hashed onto (150 messages each, sent in order per key). Consumer "a" owns queues 0–1
// and shuts down while the second half is being consumed; "b" owns 2–3 and then every
// queue. It checks that each key stays on one queue; that within each consumer's
// session every key's messages arrive in send order without gaps or repeats; that "b"
// resumes a key taken over from "a" at or before the message after a's last (repeats
// only as a suffix restart) and nothing is lost; that the broker refuses the queues to a
// third client while they are held; and that a poison message (always suspended) is
// delivered 1 + maxReconsumeTimes times or more, ends in %DLQ%<group> once, and its
// queue moves on.
//
// It does not run with the race detector: the Go client's orderly consumer itself races
// (processQueue.takeMessages polls msgCache.Empty() without pq.mutex while the pull
// goroutine puts into msgCache under it), which the detector reports on every run.
func TestOrderlyConsumption(t *testing.T) {
	if raceDetector {
		t.Skip("the Go client's orderly push consumer has a data race (processQueue.takeMessages reads msgCache unlocked); run without -race")
	}
	const (
		topic  = "OrderTopic"
		group  = "cg-order"
		queues = 4
		keys   = 16
		perKey = 150
		maxRe  = 3
		poison = "poison"
	)
	c := testutil.StartCluster(t, withShortLevels())
	raw := newRaw(t, c.BrokerAddr)
	createTopic(t, c, topic, queues)
	bname := brokerName(t, c, topic)
	p := newHashProducer(t, c, "pg-order")
	rec := newExtRecorder()
	gA, gB := newGate(), newGate()

	pcA := newPushConsumer(t, c, group, topic, "*", orderlyHandler(rec, "a", gA, poison),
		consumer.WithConsumerOrder(true), consumer.WithMaxReconsumeTimes(maxRe),
		consumer.WithStrategy(ownQueues(topic, func(q int) bool { return q < 2 }, false)))
	testutil.Eventually(t, 10*time.Second, func() bool { return len(raw.consumerIDs(group)) == 1 }, "a registered")
	pcB := newPushConsumer(t, c, group, topic, "*", orderlyHandler(rec, "b", gB, poison),
		consumer.WithConsumerOrder(true), consumer.WithMaxReconsumeTimes(maxRe),
		consumer.WithStrategy(ownQueues(topic, func(q int) bool { return q >= 2 }, true)))
	defer pcB.Shutdown()
	testutil.Eventually(t, 10*time.Second, func() bool { return len(raw.consumerIDs(group)) == 2 }, "b registered")

	body := func(k, seq int) string { return fmt.Sprintf("k%d/%d", k, seq) }
	send := func(from, to int) ([]*primitive.SendResult, error) {
		// Worker k sends key k's messages from..to-1 one after the other.
		return trySendMsgs(p, 0, keys*(to-from), keys, func(i int) *primitive.Message {
			k, seq := i%keys, from+i/keys
			return primitive.NewMessage(topic, []byte(body(k, seq))).WithShardingKey("key-" + strconv.Itoa(k))
		})
	}
	half := perKey / 2
	res, err := send(0, half)
	require.NoError(t, err)
	keyQueue := map[int]int{}
	for i, r := range res {
		keyQueue[i%keys] = r.MessageQueue.QueueId
	}
	t.Logf("queue of each key: %v", keyQueue)

	// The poison shares key 3's queue, so that queue has later messages to move on to.
	pres, err := p.SendSync(context.Background(), primitive.NewMessage(topic, []byte(poison)).WithShardingKey("key-3"))
	require.NoError(t, err)
	pq := pres.MessageQueue.QueueId
	require.Equal(t, keyQueue[3], pq)
	dlq := protocol.DLQTopic(group)
	testutil.Eventually(t, 60*time.Second, func() bool {
		code, off := raw.offsetQuery(protocol.GetMaxOffset, map[string]string{"topic": dlq, "queueId": "0"})
		return code == protocol.Success && off > 0
	}, "poison message dead-lettered")
	// Its queue's commit passes it before the hand-over, so the next owner cannot
	// replay (and dead-letter) it a second time.
	testutil.Eventually(t, 30*time.Second, func() bool {
		off, ok := raw.consumerOffset(group, topic, pq)
		return ok && off > pres.QueueOffset
	}, "poison's queue committed past it")

	// A third client is refused queues that a consumer holds.
	require.Empty(t, raw.lockAs(group, "127.0.0.1@intruder", topic, bname, 0, 1, 2, 3), "locks held by a and b")

	// Second half: a leaves while it is being consumed.
	var second []string
	for k := range keys {
		for seq := half; seq < perKey; seq++ {
			second = append(second, body(k, seq))
		}
	}
	sendErr := make(chan error, 1)
	go func() {
		_, err := send(half, perKey)
		sendErr <- err
	}()
	testutil.Eventually(t, 60*time.Second, func() bool { return rec.countAtLeast(second, 1) >= len(second)/3 },
		"a third of the second half consumed")
	gA.close()
	handover := len(rec.snapshot())
	require.NoError(t, pcA.Shutdown())
	left := time.Now()
	close(gA.released)
	require.NoError(t, <-sendErr)
	// b locks a's queues as soon as a has unlocked them (UNLOCK_BATCH_MQ on shutdown),
	// not after the 60 s expiry.
	var takeover time.Duration
	testutil.Eventually(t, 30*time.Second, func() bool {
		for _, d := range rec.snapshot()[handover:] {
			if d.consumer == "b" && d.queue < 2 {
				takeover = d.at.Sub(left)
				return true
			}
		}
		return false
	}, "b consumes a's queues")
	t.Logf("b took over a's queues %v after a shut down", takeover)
	require.Less(t, takeover, 10*time.Second, "hand-over time")
	testutil.Eventually(t, 90*time.Second, func() bool { return rec.countAtLeast(second, 1) == len(second) },
		"every message consumed after the hand-over")
	require.Empty(t, raw.lockAs(group, "127.0.0.1@intruder", topic, bname, 0, 1, 2, 3), "locks held by b")
	raw.waitCommitted(group, topic, queues)

	// Per key: one queue; per session, consecutive; across a→b, a suffix restart.
	all := rec.snapshot()
	type run struct {
		consumer    string
		first, last int
	}
	runs := map[int][]run{}
	poisonDeliveries, poisonLast, dups := 0, -1, 0
	for i, d := range all {
		if d.body == poison {
			poisonDeliveries++
			poisonLast = i
			require.Equal(t, pq, d.queue)
			continue
		}
		var k, seq int
		_, err := fmt.Sscanf(d.body, "k%d/%d", &k, &seq)
		require.NoError(t, err, d.body)
		require.Equal(t, keyQueue[k], d.queue, "%s delivered from its key's queue", d.body)
		rs := runs[k]
		if n := len(rs); n > 0 && rs[n-1].consumer == d.consumer {
			require.Equal(t, rs[n-1].last+1, seq, "key %d: %s got seq %d after %d", k, d.consumer, seq, rs[n-1].last)
			rs[n-1].last = seq
			continue
		}
		if n := len(rs); n > 0 {
			prev := rs[n-1]
			require.Equal(t, "a", prev.consumer, "key %d: only a hands over", k)
			require.Equal(t, "b", d.consumer)
			require.LessOrEqual(t, seq, prev.last+1, "key %d: b starts at %d after a's last %d (a gap)", k, seq, prev.last)
			require.GreaterOrEqual(t, i, handover, "key %d changed hands before a left", k)
			dups += prev.last + 1 - seq
		} else {
			require.Zero(t, seq, "key %d starts at its first message", k)
		}
		runs[k] = append(rs, run{d.consumer, seq, seq})
	}
	movedOn := 0
	for i, d := range all {
		if d.queue == pq && d.offset > pres.QueueOffset {
			require.Greater(t, i, poisonLast, "%s, behind the poison in its queue, delivered before the poison's last delivery", d.body)
			movedOn++
		}
	}
	handedOver := 0
	for k := range keys {
		rs := runs[k]
		require.NotEmpty(t, rs, "key %d consumed", k)
		require.Equal(t, perKey-1, rs[len(rs)-1].last, "key %d consumed to its end", k)
		require.LessOrEqual(t, len(rs), 2, "key %d sessions %v", k, rs)
		if len(rs) == 2 {
			handedOver++
		}
		if keyQueue[k] >= 2 {
			require.Equal(t, []run{{"b", 0, perKey - 1}}, rs, "key %d on b's queue", k)
		}
	}
	t.Logf("%d keys handed over from a to b with %d repeated messages; poison delivered %d times; %d later messages of its queue delivered after it",
		handedOver, dups, poisonDeliveries, movedOn)
	require.Positive(t, handedOver, "some keys were consumed by a and then by b")
	require.GreaterOrEqual(t, poisonDeliveries, 1+maxRe, "poison delivered 1 + maxReconsumeTimes times or more")
	require.Positive(t, movedOn, "the poison's queue moved on")

	recs := raw.pullAll(dlq, 0, "*")
	require.Len(t, recs, 1, "records in %s", dlq)
	require.Equal(t, poison, string(recs[0].Body))
	require.Equal(t, topic, prop(recs[0], "RETRY_TOPIC"))
	for _, d := range all {
		require.False(t, strings.HasPrefix(d.topic, protocol.RetryTopicPrefix), "orderly consumers never see the retry topic")
	}
}
