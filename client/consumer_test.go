package client

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/conf"
	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
	"github.com/ferrymq/ferry/testutil"
)

// rawBroker sends requests straight to the test broker.
type rawBroker struct {
	t   *testing.T
	rc  *remoting.Client
	adr string
}

func newRawBroker(t *testing.T, c *testutil.Cluster) *rawBroker {
	t.Helper()
	rc, err := remoting.NewClient(remoting.DefaultClientOptions())
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, rc.Close()) })
	return &rawBroker{t: t, rc: rc, adr: c.BrokerAddr}
}

func (r *rawBroker) call(req *remoting.Command) *remoting.Command {
	r.t.Helper()
	resp, err := r.rc.Invoke(context.Background(), r.adr, req)
	require.NoError(r.t, err)
	return resp
}

// createTopic creates topic with queues read and write queues.
func (r *rawBroker) createTopic(topic string, queues int32) {
	r.t.Helper()
	resp := r.call(protocol.NewRequest(protocol.UpdateAndCreateTopic, &protocol.CreateTopicRequestHeader{
		Topic: topic, DefaultTopic: protocol.AutoCreateTopicKey, ReadQueueNums: queues, WriteQueueNums: queues,
		Perm: protocol.PermRead | protocol.PermWrite}))
	require.Equal(r.t, int16(protocol.Success), resp.Code, resp.Remark)
}

// offset sends an offset request and returns its code and offset.
func (r *rawBroker) offset(code protocol.RequestCode, h protocol.Header) (protocol.ResponseCode, int64) {
	r.t.Helper()
	resp := r.call(protocol.NewRequest(code, h))
	var oh protocol.OffsetResponseHeader
	if resp.Code == int16(protocol.Success) {
		require.NoError(r.t, oh.DecodeExt(resp.ExtFields))
	}
	return protocol.ResponseCode(resp.Code), oh.Offset
}

func (r *rawBroker) maxOffset(topic string, q int32) int64 {
	_, off := r.offset(protocol.GetMaxOffset, &protocol.GetMaxOffsetRequestHeader{Topic: topic, QueueID: q})
	return off
}

// committed is the group's committed offset of a queue (-1: none).
func (r *rawBroker) committed(group, topic string, q int32) int64 {
	no := false
	code, off := r.offset(protocol.QueryConsumerOffset, &protocol.QueryConsumerOffsetRequestHeader{
		ConsumerGroup: group, Topic: topic, QueueID: q, SetZeroIfNotFound: &no})
	if code != protocol.Success {
		return -1
	}
	return off
}

// records pulls every record of one queue.
func (r *rawBroker) records(topic string, q int32) []message.Record {
	r.t.Helper()
	var out []message.Record
	for off := int64(0); ; {
		resp := r.call(protocol.NewRequest(protocol.PullMessage, &protocol.PullMessageRequestHeader{
			ConsumerGroup: "raw-check", Topic: topic, QueueID: q, QueueOffset: off, MaxMsgNums: 256,
			SysFlag: protocol.PullFlagSubscription, Subscription: "*"}))
		if resp.Code != int16(protocol.Success) {
			return out
		}
		for b := resp.Body; len(b) > 0; {
			rec, n, err := message.DecodeRecord(b)
			require.NoError(r.t, err)
			out = append(out, rec)
			b = b[n:]
			off = rec.QueueOffset + 1
		}
	}
}

// delivery is one message as a test handler saw it.
type delivery struct {
	consumer  string
	seq       int
	topic     string
	queue     MessageQueue
	offset    int64
	reconsume int32
	msg       *MessageExt
}

// deliveries records what handlers got, by body.
type deliveries struct {
	mu     sync.Mutex
	seq    int
	byBody map[string][]delivery
}

func newDeliveries() *deliveries { return &deliveries{byBody: map[string][]delivery{}} }

// handler records each message under name and returns decide's verdict (success when
// decide is nil).
func (d *deliveries) handler(name string, decide func(*MessageExt) ConsumeResult) ConsumeFunc {
	return func(_ context.Context, msgs []*MessageExt) ConsumeResult {
		res := ConsumeSuccess
		d.mu.Lock()
		for _, m := range msgs {
			d.seq++
			b := string(m.Body)
			d.byBody[b] = append(d.byBody[b], delivery{consumer: name, seq: d.seq, topic: m.Topic, queue: m.Queue,
				offset: m.QueueOffset, reconsume: m.ReconsumeTimes, msg: m})
		}
		d.mu.Unlock()
		if decide != nil {
			for _, m := range msgs {
				if r := decide(m); r != ConsumeSuccess {
					res = r
				}
			}
		}
		return res
	}
}

func (d *deliveries) of(body string) []delivery {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.byBody[body])
}

// got counts the bodies delivered at least n times.
func (d *deliveries) got(bodies []string, n int) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	k := 0
	for _, b := range bodies {
		if len(d.byBody[b]) >= n {
			k++
		}
	}
	return k
}

func names(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = prefix + strconv.Itoa(i)
	}
	return out
}

// newMember returns a client with its own instance name (so its own client id).
func newMember(t *testing.T, c *testutil.Cluster, instance string) *Client {
	t.Helper()
	cl, err := New(WithNameServers(c.NamesrvAddr), WithInstanceName(instance))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, cl.Close()) })
	return cl
}

// startConsumer creates and starts a push consumer, closed at cleanup.
func startConsumer(t *testing.T, cl *Client, group, topic, expr string, h ConsumeFunc, opts ...ConsumerOption) *PushConsumer {
	t.Helper()
	pc, err := cl.NewPushConsumer(group, topic, expr, h, append([]ConsumerOption{WithConsumeFrom(ConsumeFromFirstOffset)}, opts...)...)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, pc.Start(ctx))
	t.Cleanup(func() { require.NoError(t, pc.Close()) })
	return pc
}

// sendAll sends one message per body with Ferry's producer (automatic batching) and
// returns the results by body.
func sendAll(t *testing.T, p *Producer, topic string, bodies []string, build func(*message.Message, int)) map[string]SendResult {
	t.Helper()
	var wg sync.WaitGroup
	var mu sync.Mutex
	out := make(map[string]SendResult, len(bodies))
	var failed atomic.Int64
	for i, b := range bodies {
		m := message.NewMessage(topic, []byte(b))
		if build != nil {
			build(m, i)
		}
		wg.Add(1)
		p.SendAsync(context.Background(), m, func(r SendResult, err error) {
			defer wg.Done()
			if err != nil {
				failed.Add(1)
				return
			}
			mu.Lock()
			out[b] = r
			mu.Unlock()
		})
	}
	wg.Wait()
	require.Zero(t, failed.Load(), "failed sends")
	return out
}

func topicQueues(pc *PushConsumer, topic string) []MessageQueue {
	var out []MessageQueue
	for _, q := range pc.Queues() {
		if q.Topic == topic {
			out = append(out, q)
		}
	}
	return out
}

// TestPushConsumerConsumesEachMessageOnce produces with Ferry's producer and consumes
// with a tag subscription: every matching message exactly once with what the producer
// set, none of the others, and on Close every queue's offset committed up to its end
// (filtered messages count as consumed).
func TestPushConsumerConsumesEachMessageOnce(t *testing.T) {
	const topic, group, n = "ConsumeOnce", "cg-once", 600
	c := testutil.StartCluster(t)
	raw := newRawBroker(t, c)
	raw.createTopic(topic, 4)
	cl := newMember(t, c, "once")
	p, err := cl.NewProducer("pg-once")
	require.NoError(t, err)
	defer func() { require.NoError(t, p.Close()) }()

	all := names("once-", n)
	var wanted, other []string
	sent := sendAll(t, p, topic, all, func(m *message.Message, i int) {
		m.SetTags([]string{"TagA", "TagB", "TagC"}[i%3])
		m.SetKeys("k-"+strconv.Itoa(i), "order")
		m.SetProperty("color", "red")
	})
	for i, b := range all {
		if i%3 == 1 {
			other = append(other, b)
		} else {
			wanted = append(wanted, b)
		}
	}

	d := newDeliveries()
	var maxBatch atomic.Int64
	h := d.handler("c", nil)
	pc := startConsumer(t, cl, group, topic, "TagA || TagC", func(ctx context.Context, msgs []*MessageExt) ConsumeResult {
		for cur := maxBatch.Load(); int64(len(msgs)) > cur && !maxBatch.CompareAndSwap(cur, int64(len(msgs))); cur = maxBatch.Load() {
		}
		return h(ctx, msgs)
	}, WithConsumeBatch(4))
	testutil.Eventually(t, 30*time.Second, func() bool { return d.got(wanted, 1) == len(wanted) }, "every TagA/TagC message consumed")
	require.NoError(t, pc.Close())

	require.LessOrEqual(t, maxBatch.Load(), int64(4), "batches of at most WithConsumeBatch messages")
	for _, b := range wanted {
		ds := d.of(b)
		require.Len(t, ds, 1, "%s delivered once", b)
		m, res := ds[0].msg, sent[b]
		require.Equal(t, topic, m.Topic)
		require.Equal(t, res.MsgID, m.MsgID, "%s message id", b)
		require.Equal(t, res.OffsetMsgID, m.OffsetMsgID)
		require.Equal(t, res.QueueID, m.Queue.QueueID)
		require.Equal(t, res.QueueOffset, m.QueueOffset)
		require.Equal(t, []string{"k-" + strings.TrimPrefix(b, "once-"), "order"}, m.Keys())
		require.Contains(t, []string{"TagA", "TagC"}, m.Tags())
		require.Equal(t, "red", m.Property("color"))
		require.Zero(t, m.ReconsumeTimes)
		require.False(t, m.BornTime.IsZero() || m.StoreTime.IsZero() || m.StoreTime.Before(m.BornTime.Add(-time.Second)))
	}
	require.Zero(t, d.got(other, 1), "TagB messages are filtered out")
	for q := range int32(4) {
		require.Equal(t, raw.maxOffset(topic, q), raw.committed(group, topic, q), "queue %d committed to its end on Close", q)
	}
}

// TestPushConsumersShareAndHandOver runs two consumers of one group that rebalance and
// commit only when told to (hour-long intervals), so what moves the queues is
// NOTIFY_CONSUMER_IDS_CHANGED and what commits is a queue drop or Close. When b joins,
// a drops half its queues and commits them; then they split the queues and together
// consume each message once; when a leaves while messages keep coming, b takes its
// queues over from the committed offsets, and nothing is lost. A message may be
// delivered twice only across a handover (first by the old owner, then by the new).
func TestPushConsumersShareAndHandOver(t *testing.T) {
	const topic, group = "ShareTopic", "cg-share"
	c := testutil.StartCluster(t)
	raw := newRawBroker(t, c)
	raw.createTopic(topic, 4)
	pcl := newMember(t, c, "share-producer")
	// Each message hashed to a queue by its body: every queue gets its share.
	p, err := pcl.NewProducer("pg-share", WithSelector(HashSelector))
	require.NoError(t, err)
	defer func() { require.NoError(t, p.Close()) }()
	spread := func(m *message.Message, _ int) { m.SetShardingKey(string(m.Body)) }
	d := newDeliveries()
	onlyWhenTold := []ConsumerOption{WithRebalanceInterval(time.Hour), WithCommitInterval(time.Hour)}
	handedOver := func(bodies []string, from, to string) int {
		t.Helper()
		dups := 0
		for _, body := range bodies {
			ds := d.of(body)
			require.NotEmpty(t, ds, "%s delivered", body)
			if len(ds) == 1 {
				continue
			}
			dups++
			require.Len(t, ds, 2, "%s delivered at most twice", body)
			require.Equal(t, []string{from, to}, []string{ds[0].consumer, ds[1].consumer}, "%s: a duplicate comes from the handover", body)
		}
		return dups
	}

	a := startConsumer(t, newMember(t, c, "share-a"), group, topic, "*", d.handler("a", nil), onlyWhenTold...)
	testutil.Eventually(t, 10*time.Second, func() bool { return len(topicQueues(a, topic)) == 4 }, "a owns every queue")
	zero := names("zero-", 200)
	sendAll(t, p, topic, zero, spread)
	testutil.Eventually(t, 30*time.Second, func() bool { return d.got(zero, 1) == len(zero) }, "zero batch consumed by a")

	b := startConsumer(t, newMember(t, c, "share-b"), group, topic, "*", d.handler("b", nil), onlyWhenTold...)
	testutil.Eventually(t, 20*time.Second, func() bool {
		qa, qb := topicQueues(a, topic), topicQueues(b, topic)
		return len(qa) == 2 && len(qb) == 2 && !slices.Contains(qa, qb[0]) && !slices.Contains(qa, qb[1])
	}, "the two members own two queues each")
	owned := map[string][]MessageQueue{"a": topicQueues(a, topic), "b": topicQueues(b, topic)}
	testutil.Eventually(t, 10*time.Second, func() bool {
		for _, mq := range owned["b"] {
			if raw.committed(group, topic, mq.QueueID) != raw.maxOffset(topic, mq.QueueID) {
				return false
			}
		}
		return true
	}, "a committed the queues it dropped")
	t.Logf("zero batch duplicates across the first handover: %d of %d", handedOver(zero, "a", "b"), len(zero))

	first := names("first-", 400)
	sendAll(t, p, topic, first, spread)
	testutil.Eventually(t, 30*time.Second, func() bool { return d.got(first, 1) == len(first) }, "first batch consumed")
	per := map[string]int{}
	for _, body := range first {
		ds := d.of(body)
		require.Len(t, ds, 1, "%s delivered once", body)
		require.Contains(t, owned[ds[0].consumer], ds[0].queue, "%s consumed by its queue's owner", body)
		per[ds[0].consumer]++
	}
	require.Positive(t, per["a"], "a consumed its share")
	require.Positive(t, per["b"], "b consumed its share")

	// a leaves while messages keep coming.
	second := names("second-", 400)
	sending := make(chan struct{})
	go func() {
		defer close(sending)
		for chunk := range slices.Chunk(second, 20) {
			sendAll(t, p, topic, chunk, spread)
		}
	}()
	testutil.Eventually(t, 30*time.Second, func() bool { return d.got(second[:40], 1) == 40 }, "second batch under way")
	require.NoError(t, a.Close())
	testutil.Eventually(t, 20*time.Second, func() bool { return len(topicQueues(b, topic)) == 4 }, "b owns every queue")
	<-sending
	testutil.Eventually(t, 30*time.Second, func() bool { return d.got(second, 1) == len(second) }, "second batch consumed")
	t.Logf("duplicates across the handover: %d of %d", handedOver(second, "a", "b"), len(second))

	third := names("third-", 200)
	sendAll(t, p, topic, third, spread)
	testutil.Eventually(t, 30*time.Second, func() bool { return d.got(third, 1) == len(third) }, "third batch consumed")
	for _, body := range third {
		ds := d.of(body)
		require.Len(t, ds, 1, "%s delivered once", body)
		require.Equal(t, "b", ds[0].consumer)
	}
}

// TestPushConsumerRetryThenDeadLetter: a handler that always fails a message, with max
// reconsume times 2, sees it three times (reconsume times 0, 1, 2, on its original topic)
// and then the broker holds exactly one copy in %DLQ%<group>. A handler that panics once
// gets the message again. Everything else is consumed once.
func TestPushConsumerRetryThenDeadLetter(t *testing.T) {
	const topic, group = "RetryTopic", "cg-retry"
	levels := make([]string, 18)
	for i := range levels {
		levels[i] = fmt.Sprintf("%dms", 100*(i+1))
	}
	c := testutil.StartCluster(t, testutil.WithBrokerConfig(func(bc *conf.BrokerConfig) {
		bc.DelayLevels = strings.Join(levels, " ")
	}))
	raw := newRawBroker(t, c)
	raw.createTopic(topic, 2)
	cl := newMember(t, c, "retry")
	p, err := cl.NewProducer("pg-retry")
	require.NoError(t, err)
	defer func() { require.NoError(t, p.Close()) }()

	good, bad := names("good-", 40), names("bad-", 5)
	const panicky = "panic-once"
	var panicked atomic.Bool
	d := newDeliveries()
	pc := startConsumer(t, cl, group, topic, "*", d.handler("c", func(m *MessageExt) ConsumeResult {
		switch {
		case strings.HasPrefix(string(m.Body), "bad-"):
			return ConsumeRetryLater
		case string(m.Body) == panicky && panicked.CompareAndSwap(false, true):
			panic("first delivery")
		}
		return ConsumeSuccess
	}), WithMaxReconsumeTimes(2))
	sent := sendAll(t, p, topic, append(append(slices.Clone(good), bad...), panicky), func(m *message.Message, i int) {
		m.SetKeys("key-" + strconv.Itoa(i))
	})

	dlq := protocol.DLQTopic(group)
	testutil.Eventually(t, 30*time.Second, func() bool {
		return d.got(good, 1) == len(good) && d.got(bad, 3) == len(bad) && d.got([]string{panicky}, 2) == 1 &&
			raw.maxOffset(dlq, 0) >= int64(len(bad))
	}, "good messages consumed, bad ones retried twice and dead-lettered")
	require.NoError(t, pc.Close())

	for _, body := range good {
		require.Len(t, d.of(body), 1, "%s delivered once", body)
	}
	pd := d.of(panicky)
	require.Len(t, pd, 2, "the panicking handler's message is delivered again, once")
	require.EqualValues(t, 1, pd[1].reconsume)
	for _, body := range bad {
		ds := d.of(body)
		require.Len(t, ds, 3, "%s: 1 + max reconsume times deliveries", body)
		for i, del := range ds {
			require.EqualValues(t, i, del.reconsume, "%s delivery %d", body, i)
			require.Equal(t, topic, del.topic, "%s delivery %d has its original topic", body, i)
			require.Equal(t, sent[body].MsgID, del.msg.MsgID, "%s keeps its id", body)
			if i > 0 {
				require.Equal(t, protocol.RetryTopic(group), del.queue.Topic, "%s redelivery %d comes from the retry topic", body, i)
			}
		}
	}
	recs := raw.records(dlq, 0)
	require.Len(t, recs, len(bad), "exactly one DLQ copy per failing message")
	seen := map[string]bool{}
	for _, r := range recs {
		body := string(r.Body)
		require.True(t, strings.HasPrefix(body, "bad-"), body)
		require.False(t, seen[body], "%s dead-lettered twice", body)
		seen[body] = true
		v, _ := r.Property(message.PropertyRetryTopic)
		require.Equal(t, topic, string(v))
	}
}

func TestAllocateAverage(t *testing.T) {
	qs := []int{0, 1, 2, 3, 4, 5, 6, 7}
	for _, tc := range []struct {
		queues  []int
		members []string
		want    map[string][]int
	}{
		{qs, []string{"a"}, map[string][]int{"a": qs}},
		{qs, []string{"a", "b"}, map[string][]int{"a": {0, 1, 2, 3}, "b": {4, 5, 6, 7}}},
		{qs, []string{"a", "b", "c"}, map[string][]int{"a": {0, 1, 2}, "b": {3, 4, 5}, "c": {6, 7}}},
		{qs[:3], []string{"a", "b", "c", "d"}, map[string][]int{"a": {0}, "b": {1}, "c": {2}, "d": nil}},
		{qs[:5], []string{"a", "b"}, map[string][]int{"a": {0, 1, 2}, "b": {3, 4}}},
		{qs, []string{"a", "b", "c", "d", "e"}, map[string][]int{"a": {0, 1}, "b": {2, 3}, "c": {4, 5}, "d": {6}, "e": {7}}},
	} {
		var union []int
		for _, m := range tc.members {
			got := allocateAverage(tc.queues, tc.members, m)
			require.Equal(t, tc.want[m], got, "%d queues, members %v, %s", len(tc.queues), tc.members, m)
			union = append(union, got...)
		}
		require.Equal(t, tc.queues, union, "every queue allocated exactly once")
	}
	require.Nil(t, allocateAverage(qs, []string{"a"}, "stranger"))
}

// TestCommitOffsetIsLowestUnconsumed completes messages out of order: the offset to
// commit never passes a message still being handled.
func TestCommitOffsetIsLowestUnconsumed(t *testing.T) {
	pc := &PushConsumer{opts: defaultConsumerOptions()}
	q := &processQueue{pc: pc, wake: make(chan struct{}, 1)}
	_, ok := q.commitOffset()
	require.False(t, ok, "nothing to commit before the start offset is known")
	q.start(10)
	off, _ := q.commitOffset()
	require.EqualValues(t, 10, off)
	msgs := make([]*MessageExt, 5)
	for i := range msgs {
		msgs[i] = &MessageExt{QueueOffset: int64(10 + 2*i), Message: message.Message{Body: []byte("x")}} // 10 12 14 16 18
	}
	q.advance(msgs, 21) // 11, 13, ... and 19, 20 were filtered by the broker
	off, _ = q.commitOffset()
	require.EqualValues(t, 10, off)
	q.markDone([]*MessageExt{msgs[2], msgs[4]})
	off, _ = q.commitOffset()
	require.EqualValues(t, 10, off, "14 and 18 done, 10 still running")
	q.markDone(msgs[:1])
	off, _ = q.commitOffset()
	require.EqualValues(t, 12, off)
	q.markDone(msgs[1:2])
	off, _ = q.commitOffset()
	require.EqualValues(t, 16, off, "12 and 14 done: 16 is the lowest unconsumed")
	require.Equal(t, 1, q.mu.count)
	q.markDone(msgs[3:4])
	off, _ = q.commitOffset()
	require.EqualValues(t, 21, off, "all done: the next pull offset")
	q.markDone(msgs[3:4]) // twice is harmless
	require.Zero(t, q.mu.count)
	require.Zero(t, q.mu.bytes)
}

func TestSubscriptionExpressions(t *testing.T) {
	s, err := newSubscription("T", " * ", false)
	require.NoError(t, err)
	require.Equal(t, "*", s.expr)
	require.True(t, s.matches("anything"))
	s, err = newSubscription("T", "TagA ||TagB|| TagA ||  ", false)
	require.NoError(t, err)
	require.Equal(t, "TagA || TagB", s.expr)
	require.Equal(t, []string{"TagA", "TagB"}, s.tags)
	require.Equal(t, []int32{int32(message.TagsHash("TagA")), int32(message.TagsHash("TagB"))}, s.codes)
	require.True(t, s.matches("TagB"))
	require.False(t, s.matches("TagC"))
	_, err = newSubscription("T", "||", false)
	require.ErrorIs(t, err, ErrInvalidOptions)
}

func TestPushConsumerOptionsAreValidated(t *testing.T) {
	c := testutil.StartCluster(t)
	cl := newTestClient(t, c)
	h := func(context.Context, []*MessageExt) ConsumeResult { return ConsumeSuccess }
	for _, opt := range []ConsumerOption{WithConsumeGoroutines(0), WithConsumeBatch(0), WithPullBatch(-1),
		WithQueueCacheLimits(0, 1), WithMaxReconsumeTimes(-1), WithCommitInterval(0), WithConsumeFrom(ConsumeFrom(9))} {
		_, err := cl.NewPushConsumer("g", "T", "*", h, opt)
		require.ErrorIs(t, err, ErrInvalidOptions)
	}
	_, err := cl.NewPushConsumer("g", "bad topic!", "*", h)
	require.ErrorIs(t, err, ErrInvalidOptions)
	_, err = cl.NewPushConsumer("g", "T", "*", nil)
	require.ErrorIs(t, err, ErrInvalidOptions)

	// One consumer per group and client; Start twice fails; Close is idempotent.
	first := startConsumer(t, cl, "g", "T", "*", h)
	second, err := cl.NewPushConsumer("g", "T", "*", h)
	require.NoError(t, err)
	require.ErrorIs(t, second.Start(context.Background()), ErrInvalidOptions)
	require.ErrorIs(t, first.Start(context.Background()), ErrInvalidOptions)
	require.NoError(t, first.Close())
	require.NoError(t, first.Close())
	require.ErrorIs(t, first.Start(context.Background()), ErrClosed)
}

func TestPushConsumerStartWithoutNameServer(t *testing.T) {
	cl, err := New(WithNameServers("127.0.0.1:1"))
	require.NoError(t, err)
	defer func() { require.NoError(t, cl.Close()) }()
	pc, err := cl.NewPushConsumer("g", "T", "*", func(context.Context, []*MessageExt) ConsumeResult { return ConsumeSuccess })
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.ErrorIs(t, pc.Start(ctx), ErrNoRoute)
	require.NoError(t, ctx.Err(), "a refused connection fails fast")
}
