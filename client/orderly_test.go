package client

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
	"github.com/ferrymq/ferry/testutil"
)

// orderedDelivery is one message as an orderly test handler saw it.
type orderedDelivery struct {
	consumer  string
	key, seq  int // from the body "k<key>/<seq>"
	queue     int32
	offset    int64
	reconsume int32
	failed    bool // the handler call it was part of failed
}

// orderLog records orderly deliveries in handler-call order, and catches two handler
// calls running at once on one queue — across all the consumers using it.
type orderLog struct {
	mu       sync.Mutex
	all      []orderedDelivery
	inFlight map[MessageQueue]int
	overlaps int
}

func newOrderLog() *orderLog { return &orderLog{inFlight: map[MessageQueue]int{}} }

// handler records each call under name; fail decides whether a call fails. (It runs on
// the consumer's goroutines: it reports with assert, never require.)
func (l *orderLog) handler(t *testing.T, name string, fail func(*MessageExt) bool) ConsumeFunc {
	return func(_ context.Context, msgs []*MessageExt) ConsumeResult {
		mq := msgs[0].Queue
		l.mu.Lock()
		if l.inFlight[mq]++; l.inFlight[mq] > 1 {
			l.overlaps++
		}
		l.mu.Unlock()
		runtime.Gosched() // give another call of the queue, if one could start, a chance to overlap
		res := ConsumeSuccess
		for _, m := range msgs {
			assert.Equal(t, mq, m.Queue, "a batch holds messages of one queue")
			if fail != nil && fail(m) {
				res = ConsumeRetryLater
			}
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		l.inFlight[mq]--
		for _, m := range msgs {
			var k, seq int
			_, err := fmt.Sscanf(string(m.Body), "k%d/%d", &k, &seq)
			assert.NoError(t, err, string(m.Body))
			l.all = append(l.all, orderedDelivery{consumer: name, key: k, seq: seq, queue: m.Queue.QueueID,
				offset: m.QueueOffset, reconsume: m.ReconsumeTimes, failed: res != ConsumeSuccess})
		}
		return res
	}
}

func (l *orderLog) snapshot() []orderedDelivery {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]orderedDelivery(nil), l.all...)
}

// consumedThrough reports whether every key in keys has been consumed (successfully) up
// to seq last.
func (l *orderLog) consumedThrough(keys []int, last int) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	top := map[int]int{}
	for _, d := range l.all {
		if !d.failed && d.seq >= top[d.key] {
			top[d.key] = d.seq + 1
		}
	}
	for _, k := range keys {
		if top[k] <= last {
			return false
		}
	}
	return true
}

// checkOrder checks the deliveries of each key against the orderly contract and returns
// how many deliveries were re-deliveries across a handover. Per key, with s(i) the
// sequence number of its i-th delivery in handler-call order:
//
//   - s(1) = 0, and s(i) ≤ s(i-1) + 1: a message is never handed to a handler before every
//     earlier message of its key has been (no gap, no overtaking);
//   - s(i) ≤ s(i-1) — a re-delivery — happens only right after a failed call (a local
//     retry: then s(i) restarts the failed batch's part of the key, by the same consumer)
//     or at a handover to another consumer; either way the messages from s(i) on come
//     again contiguously, by the rule above;
//   - every key is consumed up to last, from one queue.
func checkOrder(t *testing.T, ds []orderedDelivery, keys, last int) (handoverRepeats int) {
	t.Helper()
	byKey := map[int][]orderedDelivery{}
	for _, d := range ds {
		byKey[d.key] = append(byKey[d.key], d)
	}
	for k := range keys {
		kd := byKey[k]
		require.NotEmpty(t, kd, "key %d consumed", k)
		require.Zero(t, kd[0].seq, "key %d starts at its first message", k)
		top := 0
		for i := 1; i < len(kd); i++ {
			prev, d := kd[i-1], kd[i]
			require.Equal(t, kd[0].queue, d.queue, "key %d stays on one queue", k)
			require.LessOrEqual(t, d.seq, prev.seq+1, "key %d: %s got %d right after %d (%s): a gap", k, d.consumer, d.seq, prev.seq, prev.consumer)
			if d.seq <= prev.seq {
				switch {
				case prev.failed:
					require.Equal(t, prev.consumer, d.consumer, "key %d: a retry comes from the same consumer", k)
				case prev.consumer != d.consumer:
					handoverRepeats += prev.seq + 1 - d.seq
				default:
					require.Failf(t, "re-delivery without failure or handover", "key %d: %s got %d after %d", k, d.consumer, d.seq, prev.seq)
				}
			}
			top = max(top, d.seq)
		}
		require.Equal(t, last, top, "key %d consumed to its end", k)
	}
	return handoverRepeats
}

// sendKeys sends, for each key in parallel and within a key one after the other, the
// messages k<key>/<seq> for seq in from..to-1 with sharding key key-<key>, and returns
// the queue of each key.
func sendKeys(t *testing.T, p *Producer, topic string, keys, from, to int) map[int]int32 {
	t.Helper()
	queueOf, err := trySendKeys(p, topic, keys, from, to)
	require.NoError(t, err)
	return queueOf
}

// trySendKeys is sendKeys for goroutines other than the test's.
func trySendKeys(p *Producer, topic string, keys, from, to int) (map[int]int32, error) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	queueOf := map[int]int32{}
	errs := make(chan error, keys)
	for k := range keys {
		wg.Go(func() {
			for seq := from; seq < to; seq++ {
				m := message.NewMessage(topic, fmt.Appendf(nil, "k%d/%d", k, seq))
				m.SetShardingKey("key-" + strconv.Itoa(k))
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				res, err := p.Send(ctx, m)
				cancel()
				if err != nil {
					errs <- fmt.Errorf("send k%d/%d: %w", k, seq, err)
					return
				}
				mu.Lock()
				queueOf[k] = res.QueueID
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	return queueOf, <-errs
}

// lockAs sends LOCK_BATCH_MQ (or UNLOCK_BATCH_MQ) for mqs as clientID and returns the
// queue ids granted.
func (r *rawBroker) lockAs(code protocol.RequestCode, group, clientID string, mqs []MessageQueue) []int32 {
	r.t.Helper()
	b := protocol.LockBatchRequestBody{ConsumerGroup: group, ClientID: clientID}
	for _, mq := range mqs {
		b.MQSet = append(b.MQSet, protocol.MessageQueue(mq))
	}
	body, err := protocol.EncodeLockBatchRequestBody(&b)
	require.NoError(r.t, err)
	req := remoting.NewRequest(int16(code), nil)
	req.Body = body
	resp := r.call(req)
	require.Equal(r.t, int16(protocol.Success), resp.Code, resp.Remark)
	if code != protocol.LockBatchMQ {
		return nil
	}
	out, err := protocol.DecodeLockBatchResponseBody(resp.Body)
	require.NoError(r.t, err)
	var ids []int32
	for _, mq := range out.LockOKMQSet {
		ids = append(ids, mq.QueueID)
	}
	return ids
}

// queuesOf lists topic's queues.
func queuesOf(t *testing.T, cl *Client, topic string) []MessageQueue {
	t.Helper()
	rqs, err := cl.readQueues(context.Background(), topic)
	require.NoError(t, err)
	var out []MessageQueue
	for _, rq := range rqs {
		out = append(out, rq.mq)
	}
	return out
}

// TestOrderlyKeepsKeyOrderAcrossHandovers runs two orderly consumers of one group (batches
// of three) on a 4-queue topic that 16 keys are hashed onto: a starts alone, b joins
// while the first half is being consumed (a hands two queues over), and a leaves (Close)
// while the second half is being consumed (b takes everything). Per key the deliveries
// keep send order across both handovers (checkOrder), and since a queue's owner commits
// before it unlocks and the next one reads the offset after it locks, nothing is
// delivered twice. No two handler calls of one queue ever overlap, across both
// consumers; while b runs, another client cannot lock its queues, and after b's Close it
// can.
func TestOrderlyKeepsKeyOrderAcrossHandovers(t *testing.T) {
	const (
		topic, group = "OrderlyTopic", "cg-orderly"
		keys, perKey = 16, 80
	)
	c := testutil.StartCluster(t)
	raw := newRawBroker(t, c)
	raw.createTopic(topic, 4)
	pcl := newMember(t, c, "orderly-producer")
	p, err := pcl.NewProducer("pg-orderly", WithSelector(HashSelector))
	require.NoError(t, err)
	defer func() { require.NoError(t, p.Close()) }()
	log := newOrderLog()
	allKeys := make([]int, keys)
	for k := range allKeys {
		allKeys[k] = k
	}
	opts := []ConsumerOption{WithOrderly(), WithConsumeBatch(3), WithConsumeGoroutines(4)}

	a := startConsumer(t, newMember(t, c, "orderly-a"), group, topic, "*", log.handler(t, "a", nil), opts...)
	testutil.Eventually(t, 10*time.Second, func() bool { return len(topicQueues(a, topic)) == 4 }, "a owns every queue")

	// First half; b joins while it is being consumed.
	half := perKey / 2
	type sendResult struct {
		queueOf map[int]int32
		err     error
	}
	sent := make(chan sendResult, 1)
	go func() {
		q, err := trySendKeys(p, topic, keys, 0, half)
		sent <- sendResult{q, err}
	}()
	testutil.Eventually(t, 30*time.Second, func() bool { return log.consumedThrough(allKeys, 5) }, "first half under way")
	b := startConsumer(t, newMember(t, c, "orderly-b"), group, topic, "*", log.handler(t, "b", nil), opts...)
	testutil.Eventually(t, 20*time.Second, func() bool {
		return len(topicQueues(a, topic)) == 2 && len(topicQueues(b, topic)) == 2
	}, "a and b own two queues each")
	first := <-sent
	require.NoError(t, first.err)
	queueOf := first.queueOf
	testutil.Eventually(t, 30*time.Second, func() bool { return log.consumedThrough(allKeys, half-1) }, "first half consumed")

	// Second half; a leaves while it is being consumed.
	go func() {
		_, err := trySendKeys(p, topic, keys, half, perKey)
		sent <- sendResult{err: err}
	}()
	testutil.Eventually(t, 30*time.Second, func() bool { return log.consumedThrough(allKeys, half+5) }, "second half under way")
	require.NoError(t, a.Close())
	require.NoError(t, (<-sent).err)
	testutil.Eventually(t, 30*time.Second, func() bool { return log.consumedThrough(allKeys, perKey-1) }, "second half consumed")
	// a may have consumed its queues' share before it left: b then takes them over after
	// the last message was consumed.
	testutil.Eventually(t, 20*time.Second, func() bool { return len(topicQueues(b, topic)) == 4 }, "b owns every queue")

	ds := log.snapshot()
	repeats := checkOrder(t, ds, keys, perKey-1)
	require.Zero(t, log.overlaps, "two handler calls of one queue ran at once")
	consumers := map[int]map[string]bool{}
	for _, d := range ds {
		require.Equal(t, queueOf[d.key], d.queue, "k%d/%d delivered from its key's queue", d.key, d.seq)
		require.False(t, d.failed)
		if consumers[d.key] == nil {
			consumers[d.key] = map[string]bool{}
		}
		consumers[d.key][d.consumer] = true
	}
	handedOver := 0
	for _, cs := range consumers {
		if len(cs) == 2 {
			handedOver++
		}
	}
	t.Logf("%d deliveries, %d keys consumed by both a and b, %d repeated across handovers", len(ds), handedOver, repeats)
	require.Positive(t, handedOver, "some keys changed hands")
	require.Zero(t, repeats, "the next owner starts exactly after the consumed prefix")
	require.Len(t, ds, keys*perKey, "each message delivered once")

	mqs := queuesOf(t, pcl, topic)
	require.Empty(t, raw.lockAs(protocol.LockBatchMQ, group, "127.0.0.1@intruder", mqs), "b holds every lock")
	require.NoError(t, b.Close())
	require.Len(t, raw.lockAs(protocol.LockBatchMQ, group, "127.0.0.1@intruder", mqs), 4, "b released its locks on Close")
	for q := range int32(4) {
		require.Equal(t, raw.maxOffset(topic, q), raw.committed(group, topic, q), "queue %d committed to its end", q)
	}
}

// TestOrderlyRetryBlocksOnlyItsQueue: queue i of a 4-queue topic gets k<i>/0..k<i>/19.
// Group "hold" (batches of four) fails every call holding k1/5 until released: queue 1
// stops there — later messages of it are not delivered — while queues 0, 2 and 3 are
// consumed to their end; the failed batch comes again every suspend time with
// ReconsumeTimes one higher, and once released queue 1 goes on in order. Group "dead"
// (max reconsume times 2) fails k2/5 always: it is delivered 3 times, lands in
// %DLQ%dead once, and queue 2 moves on in order. Nothing goes through the retry topic.
func TestOrderlyRetryBlocksOnlyItsQueue(t *testing.T) {
	const topic, n = "OrderlyRetryTopic", 20
	c := testutil.StartCluster(t)
	raw := newRawBroker(t, c)
	raw.createTopic(topic, 4)
	cl := newMember(t, c, "orderly-retry")
	byKey := QueueSelectorFunc(func(m *message.Message, qs []MessageQueue) int {
		i, _ := strconv.Atoi(strings.TrimPrefix(m.ShardingKey(), "key-"))
		return i % len(qs)
	})
	p, err := cl.NewProducer("pg-orderly-retry", WithSelector(byKey))
	require.NoError(t, err)
	defer func() { require.NoError(t, p.Close()) }()
	sendKeys(t, p, topic, 4, 0, n)

	release := make(chan struct{})
	released := func() bool {
		select {
		case <-release:
			return true
		default:
			return false
		}
	}
	hold, dead := newOrderLog(), newOrderLog()
	startConsumer(t, cl, "hold", topic, "*", hold.handler(t, "hold", func(m *MessageExt) bool {
		return string(m.Body) == "k1/5" && !released()
	}), WithOrderly(), WithConsumeBatch(4), WithSuspendTime(20*time.Millisecond), WithMaxReconsumeTimes(1000))
	startConsumer(t, newMember(t, c, "orderly-dead"), "dead", topic, "*", dead.handler(t, "dead", func(m *MessageExt) bool {
		return string(m.Body) == "k2/5"
	}), WithOrderly(), WithSuspendTime(20*time.Millisecond), WithMaxReconsumeTimes(2))

	// hold: queue 1 blocked at k1/5, the others consumed.
	failures := func() int {
		k := 0
		for _, d := range hold.snapshot() {
			if d.key == 1 && d.seq == 5 && d.failed {
				k++
			}
		}
		return k
	}
	testutil.Eventually(t, 30*time.Second, func() bool {
		return hold.consumedThrough([]int{0, 2, 3}, n-1) && failures() >= 3
	}, "queues 0, 2, 3 consumed while k1/5 keeps failing")
	var held []orderedDelivery
	for _, d := range hold.snapshot() {
		if d.key == 1 {
			held = append(held, d)
			// Only in the failing batch (k1/5 and at most three after it).
			require.True(t, d.seq < 5 || d.seq <= 8 && d.failed, "k1/%d consumed while k1/5 blocks queue 1", d.seq)
		}
	}
	close(release)
	testutil.Eventually(t, 30*time.Second, func() bool { return hold.consumedThrough([]int{1}, n-1) }, "queue 1 consumed after the release")
	checkOrder(t, hold.snapshot(), 4, n-1)
	var reconsumes []int32
	for _, d := range hold.snapshot() {
		if d.key == 1 && d.seq == 5 {
			reconsumes = append(reconsumes, d.reconsume)
		}
	}
	for i, rc := range reconsumes {
		require.EqualValues(t, i, rc, "delivery %d of k1/5 counts its failures", i)
	}
	t.Logf("k1/5 delivered %d times; queue 1 deliveries while blocked: %d", len(reconsumes), len(held))

	// dead: k2/5 three times, then the DLQ, and queue 2 goes on.
	dlq := protocol.DLQTopic("dead")
	testutil.Eventually(t, 30*time.Second, func() bool {
		return dead.consumedThrough([]int{0, 1, 3}, n-1) && dead.consumedThrough([]int{2}, 4) && raw.maxOffset(dlq, 0) == 1
	}, "k2/5 dead-lettered")
	testutil.Eventually(t, 30*time.Second, func() bool {
		for _, d := range dead.snapshot() {
			if d.key == 2 && d.seq == n-1 {
				return true
			}
		}
		return false
	}, "queue 2 moved on past k2/5")
	var poison []int32
	lastPoison, firstAfter := -1, -1
	for i, d := range dead.snapshot() {
		switch {
		case d.key == 2 && d.seq == 5:
			poison = append(poison, d.reconsume)
			lastPoison = i
			require.True(t, d.failed)
		case d.key == 2 && d.seq > 5 && firstAfter < 0:
			firstAfter = i
		}
	}
	require.Equal(t, []int32{0, 1, 2}, poison, "k2/5: 1 + max reconsume times deliveries")
	require.Greater(t, firstAfter, lastPoison, "queue 2 moved on only after k2/5 was dead-lettered")
	recs := raw.records(dlq, 0)
	require.Len(t, recs, 1)
	require.Equal(t, "k2/5", string(recs[0].Body))
	v, _ := recs[0].Property(message.PropertyRetryTopic)
	require.Equal(t, topic, string(v))
	require.Zero(t, raw.maxOffset(protocol.RetryTopic("dead"), 0), "nothing went through the retry topic")
	require.Zero(t, raw.maxOffset(protocol.DLQTopic("hold"), 0), "hold dead-lettered nothing")
}

// TestOrderlyConsumesOnlyLockedQueues: another client holds the lock of queue 0 before
// the consumer starts; the consumer owns every queue but consumes only 1–3 until that
// lock is released, then queue 0 too, in order.
func TestOrderlyConsumesOnlyLockedQueues(t *testing.T) {
	const topic, group = "OrderlyLockTopic", "cg-orderly-lock"
	c := testutil.StartCluster(t)
	raw := newRawBroker(t, c)
	raw.createTopic(topic, 4)
	cl := newMember(t, c, "orderly-lock")
	mqs := queuesOf(t, cl, topic)
	const intruder = "127.0.0.1@intruder"
	require.Equal(t, []int32{0}, raw.lockAs(protocol.LockBatchMQ, group, intruder, mqs[:1]))

	byKey := QueueSelectorFunc(func(m *message.Message, qs []MessageQueue) int {
		i, _ := strconv.Atoi(strings.TrimPrefix(m.ShardingKey(), "key-"))
		return i % len(qs)
	})
	p, err := cl.NewProducer("pg-orderly-lock", WithSelector(byKey))
	require.NoError(t, err)
	defer func() { require.NoError(t, p.Close()) }()
	log := newOrderLog()
	pc := startConsumer(t, cl, group, topic, "*", log.handler(t, "c", nil), WithOrderly())
	sendKeys(t, p, topic, 4, 0, 10)
	testutil.Eventually(t, 30*time.Second, func() bool { return log.consumedThrough([]int{1, 2, 3}, 9) }, "queues 1–3 consumed")
	require.Len(t, topicQueues(pc, topic), 4, "the consumer owns queue 0 too")
	for _, d := range log.snapshot() {
		require.NotZero(t, d.queue, "k%d/%d consumed from queue 0 while another client holds its lock", d.key, d.seq)
	}
	raw.lockAs(protocol.UnlockBatchMQ, group, intruder, mqs[:1])
	testutil.Eventually(t, 10*time.Second, func() bool { return log.consumedThrough([]int{0}, 9) }, "queue 0 consumed once unlocked")
	checkOrder(t, log.snapshot(), 4, 9)
}

// TestOrderlyOptionsAreValidated covers the options added for orderly, broadcasting and
// allocation.
func TestOrderlyOptionsAreValidated(t *testing.T) {
	cl, err := New(WithNameServers("127.0.0.1:1"))
	require.NoError(t, err)
	defer func() { require.NoError(t, cl.Close()) }()
	h := func(context.Context, []*MessageExt) ConsumeResult { return ConsumeSuccess }
	for _, opt := range []ConsumerOption{WithSuspendTime(0), WithSuspendTime(2 * time.Hour), WithAllocation(nil)} {
		_, err := cl.NewPushConsumer("g", "T", "*", h, opt)
		require.ErrorIs(t, err, ErrInvalidOptions)
	}
	pc, err := cl.NewPushConsumer("g", "T", "*", h, WithBroadcasting(), WithOffsetsDir(t.TempDir()))
	require.NoError(t, err)
	require.Len(t, pc.subs, 1, "broadcasting consumers have no retry topic")
	require.Equal(t, protocol.Broadcasting, pc.consumerData().MessageModel)
	pc, err = cl.NewPushConsumer("g", "T", "*", h, WithOrderly(), WithAllocation(AllocateConsistentHash(0)))
	require.NoError(t, err)
	require.Len(t, pc.subs, 2)
	require.Equal(t, protocol.Clustering, pc.consumerData().MessageModel)
}

// TestOrderlyBufferAndLockState drives one queue's orderly state without a broker:
// messages below the pull offset or repeated are ignored, batches come from the head in
// order, a pending (failed) batch comes back as is, consumed messages advance the commit
// offset; a lock is trusted for lockMaxLive after it was granted, and Close-like
// cancellation ends a waiting consume loop.
func TestOrderlyBufferAndLockState(t *testing.T) {
	pc := &PushConsumer{opts: defaultConsumerOptions()}
	pc.opts.orderly, pc.opts.broadcast, pc.opts.consumeBatch = true, true, 3
	q := &processQueue{pc: pc, wake: make(chan struct{}, 1), ready: make(chan struct{}, 1), locked: make(chan struct{})}
	q.ctx, q.cancel = context.WithCancel(context.Background())
	msg := func(off int64) *MessageExt {
		return &MessageExt{QueueOffset: off, Message: message.Message{Body: []byte("x")}}
	}
	offsets := func(ms []*MessageExt) []int64 {
		var out []int64
		for _, m := range ms {
			out = append(out, m.QueueOffset)
		}
		return out
	}
	q.start(5)
	in := q.advance([]*MessageExt{msg(3), msg(5), msg(6), msg(7), msg(8), msg(9)}, 10)
	require.Equal(t, []int64{5, 6, 7, 8, 9}, offsets(in), "an offset below the pull position is ignored")
	b := q.nextBatch(nil)
	require.Equal(t, []int64{5, 6, 7}, offsets(b))
	require.Equal(t, offsets(b), offsets(q.nextBatch(b)), "a failed batch is retried as is")
	q.consumed(b)
	off, _ := q.commitOffset()
	require.EqualValues(t, 8, off, "the consumed prefix")
	require.Equal(t, []int64{10}, offsets(q.advance([]*MessageExt{msg(8), msg(9), msg(10)}, 11)), "repeats are ignored")
	require.Equal(t, []int64{8, 9, 10}, offsets(q.nextBatch(nil)))
	q.consumed(q.nextBatch(nil))
	off, _ = q.commitOffset()
	require.EqualValues(t, 11, off)
	q.cancel()
	require.Nil(t, q.nextBatch(nil), "nothing buffered and the queue stopped")

	now := time.Now()
	require.False(t, q.held(now))
	require.False(t, q.wasLocked())
	q.setLocked(now)
	q.setLocked(now) // renewals do not close locked twice
	<-q.locked
	require.True(t, q.held(now.Add(lockMaxLive-time.Millisecond)))
	require.False(t, q.held(now.Add(lockMaxLive)), "an unrenewed lock is not trusted after lockMaxLive")
	require.True(t, q.wasLocked())
}
