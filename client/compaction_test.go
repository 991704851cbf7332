package client

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/conf"
	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/store"
	"github.com/ferrymq/ferry/testutil"
)

// compactionEnv is a cluster whose store runs on a settable clock and runs its cleaner
// (and so a compaction round) every few milliseconds, with small commit-log segments
// that the cleanup deletes, at any hour, once they are a minute old.
type compactionEnv struct {
	*adminEnv
	clockMs *atomic.Int64
	pc      *PullConsumer
}

func newCompactionEnv(t *testing.T) *compactionEnv {
	clockMs := &atomic.Int64{}
	clockMs.Store(time.Now().UnixMilli())
	c := testutil.StartCluster(t, testutil.WithBrokerConfig(func(cfg *conf.BrokerConfig) {
		cfg.MaxMessageSize = 64 << 10
		cfg.CommitLogSegmentSize = 256 << 10
	}), testutil.WithStoreOptions(func(o *store.Options) {
		o.Clock = func() time.Time { return time.UnixMilli(clockMs.Load()) }
		o.CleanInterval = 5 * time.Millisecond
		o.CompactionReadsPerRound = 64 // many rounds, each a slice of the work
		o.FileReservedTime = time.Minute
		o.DeleteWhen = []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23}
	}))
	e := &compactionEnv{adminEnv: newAdminEnvOn(t, c, "compaction"), clockMs: clockMs}
	pc, err := e.cl.NewPullConsumer("compaction-reader")
	require.NoError(t, err)
	e.pc = pc
	return e
}

// sent is what a producer learned of one acknowledged message.
type sent struct {
	key   string
	body  string
	queue int32
	off   int64
}

// readAll pulls every queue of topic from offset 0 as a fresh reader, at least up to
// the offsets of msgs (a send is acknowledged before its message is dispatched to the
// queue, so the reader waits for them) and then to the queue's end, and returns what it
// got, per queue in offset order.
func (e *compactionEnv) readAll(topic string, msgs []sent) map[int32][]sent {
	until := map[int32]int64{}
	for _, m := range msgs {
		until[m.queue] = max(until[m.queue], m.off+1)
	}
	qs, err := e.pc.FetchQueues(adminCtx(e.t), topic)
	require.NoError(e.t, err)
	out := map[int32][]sent{}
	for _, mq := range qs {
		out[mq.QueueID] = nil
		for off := int64(0); ; {
			wait := time.Duration(0)
			if off < until[mq.QueueID] {
				wait = time.Second // an acknowledged message is on its way to the queue
			}
			r, err := e.pc.PullWait(adminCtx(e.t), mq, off, 32, "*", wait)
			require.NoError(e.t, err)
			if r.Status == PullNoNewMessage {
				if off >= until[mq.QueueID] {
					break
				}
				continue
			}
			if r.Status == PullOffsetIllegal && off == 0 && r.NextOffset > 0 {
				off = r.NextOffset // the cleanup moved the queue's minimum to its first live message
				continue
			}
			require.Contains(e.t, []PullStatus{PullFound, PullNoMatchedMessage}, r.Status, "offset %d", off)
			for _, m := range r.Messages {
				var key string
				if ks := m.Keys(); len(ks) > 0 {
					key = ks[0]
				}
				out[mq.QueueID] = append(out[mq.QueueID], sent{key: key, body: string(m.Body), queue: mq.QueueID, off: m.QueueOffset})
			}
			require.Greater(e.t, r.NextOffset, off)
			off = r.NextOffset
		}
	}
	return out
}

// latestPerKey returns each key's latest acknowledged message (the highest offset of
// its queue) among msgs.
func latestPerKey(msgs []sent) map[string]sent {
	latest := map[string]sent{}
	for _, m := range msgs {
		if l, ok := latest[m.key]; !ok || m.off > l.off {
			latest[m.key] = m
		}
	}
	return latest
}

func TestCompactedTopicWithConcurrentProducers(t *testing.T) {
	const (
		topic     = "Compacted"
		producers = 4
		keys      = 24
		perProd   = 120
	)
	e := newCompactionEnv(t)
	require.NoError(t, e.a.CreateTopic(adminCtx(t), TopicConfig{Name: topic, ReadQueues: 2, WriteQueues: 2,
		Attributes: map[string]string{"cleanupPolicy": "compact", "deleteRetention": "1h"}}, Target{}))

	var mu sync.Mutex
	var acked []sent
	record := func(key, body string, r SendResult) {
		mu.Lock()
		acked = append(acked, sent{key: key, body: body, queue: r.QueueID, off: r.QueueOffset})
		mu.Unlock()
	}
	snapshot := func() []sent {
		mu.Lock()
		defer mu.Unlock()
		return append([]sent(nil), acked...)
	}
	var wg sync.WaitGroup
	for p := range producers {
		pr, err := e.cl.NewProducer(fmt.Sprintf("compaction-pg-%d", p), WithSelector(HashSelector))
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, pr.Close()) })
		wg.Go(func() {
			for i := range perProd {
				key := fmt.Sprintf("key-%02d", (i*7+p)%keys)
				body := fmt.Sprintf("p%d-%03d", p, i)
				m := message.NewMessage(topic, []byte(body))
				m.SetKeys(key)
				r, err := pr.Send(context.Background(), m)
				if !assertNoError(t, err) {
					return
				}
				record(key, body, r)
			}
		})
	}

	// Readers from offset 0 while the producers write and the rounds run: every key's
	// latest message acknowledged before the read started is read, or a later one of
	// the key is.
	for range 3 {
		acked := snapshot()
		before := latestPerKey(acked)
		got := e.readAll(topic, acked)
		seen := map[string]int64{}
		for _, msgs := range got {
			for _, m := range msgs {
				seen[m.key] = max(seen[m.key], m.off+1)
			}
		}
		for key, l := range before {
			require.Greater(t, seen[key], l.off, "key %s: its latest (queue %d offset %d) was not read, nor a later one", key, l.queue, l.off)
		}
	}
	wg.Wait()
	all := snapshot()
	require.Len(t, all, producers*perProd)

	// Delete one key with a tombstone, on the queue its messages went to.
	tp, err := e.cl.NewProducer("compaction-tomb-pg", WithSelector(HashSelector))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, tp.Close()) })
	_, err = tp.Send(adminCtx(t), &message.Message{Topic: topic})
	require.ErrorIs(t, err, ErrIllegalMessage, "Send still refuses an empty body")
	_, err = tp.SendTombstone(adminCtx(t), message.NewMessage(topic, []byte("x")))
	require.ErrorIs(t, err, ErrIllegalMessage, "a tombstone has no body")
	tr, err := tp.SendTombstone(adminCtx(t), NewTombstone(topic, "key-05"))
	require.NoError(t, err)
	all = append(all, sent{key: "key-05", queue: tr.QueueID, off: tr.QueueOffset})

	// Once the rounds have caught up, a fresh reader gets exactly the latest message of
	// every key (the tombstone included, during its delay), at its original offset.
	latest := latestPerKey(all)
	want := map[int32]map[sent]bool{0: {}, 1: {}}
	for _, l := range latest {
		want[l.queue][l] = true
	}
	marked := func() int64 {
		info, err := e.a.BrokerRuntimeInfo(adminCtx(t), e.broker)
		require.NoError(t, err)
		n, err := strconv.ParseInt(info["ferryCompactionMarked"], 10, 64)
		require.NoError(t, err)
		return n
	}
	testutil.Eventually(t, 20*time.Second, func() bool { return marked() == int64(len(all)-keys) },
		"every superseded message is marked")
	check := func(what string) {
		got := e.readAll(topic, all)
		for q, msgs := range got {
			have := map[sent]bool{}
			for _, m := range msgs {
				have[m] = true
			}
			require.Equal(t, want[q], have, "%s: queue %d", what, q)
		}
	}
	check("after compaction")

	// After the tombstone's delay it goes too, and the key with it.
	e.clockMs.Add(time.Hour.Milliseconds())
	testutil.Eventually(t, 20*time.Second, func() bool { return marked() == int64(len(all)-keys+1) },
		"the tombstone is marked after its delay")
	delete(want[latest["key-05"].queue], latest["key-05"])
	check("after the tombstone's delay")

	// A restart keeps all of it.
	e.c.RestartBroker(t)
	check("after a restart")

	// The commit log's cleanup deletes the segments the messages were written in (the
	// store's clock says they are an hour old): the latest values are copied forward
	// first and stay readable at their offsets, also after another restart.
	fp, err := e.cl.NewProducer("compaction-filler-pg")
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, fp.Close()) })
	e.createTopic("Filler", 1)
	info := func(key string) int64 {
		m, err := e.a.BrokerRuntimeInfo(adminCtx(t), e.broker)
		require.NoError(t, err)
		n, err := strconv.ParseInt(m[key], 10, 64)
		require.NoError(t, err, key)
		return n
	}
	for range 160 { // about 640 KiB: the segments the topic's messages are in fill up
		_, err := fp.Send(adminCtx(t), message.NewMessage("Filler", make([]byte, 4<<10)))
		require.NoError(t, err)
	}
	e.clockMs.Add(2 * time.Minute.Milliseconds()) // the filler too is old now
	testutil.Eventually(t, 20*time.Second, func() bool { return info("commitLogMinOffset") >= 512<<10 },
		"the cleanup deleted the first segments")
	require.Equal(t, int64(keys-1), info("ferryCompactionRelocated"), "every live message was copied")
	check("after the commit log's cleanup")
	e.c.RestartBroker(t)
	check("after the cleanup and a restart")
}

// assertNoError reports err without stopping a goroutine's test the wrong way.
func assertNoError(t *testing.T, err error) bool {
	t.Helper()
	if err != nil {
		t.Errorf("send: %v", err)
		return false
	}
	return true
}

// A slave compacts its own store and copies nothing: it keeps the segments holding live
// messages until the master's copies have been replicated to it, then lets them go and
// serves the latest values from the replicated copies.
func TestCompactedTopicOnASlave(t *testing.T) {
	const topic = "CompactedReplicated"
	e := newCompactionEnv(t)
	slave := e.c.StartSlave(t, nil)
	require.NoError(t, e.a.CreateTopic(adminCtx(t), TopicConfig{Name: topic, ReadQueues: 1, WriteQueues: 1,
		Attributes: map[string]string{"cleanupPolicy": "compact"}}, Target{}))
	for i := range 50 {
		m := message.NewMessage(topic, fmt.Appendf(nil, "v%02d", i))
		m.SetKeys(fmt.Sprintf("k%d", i%10))
		_, err := e.p.Send(adminCtx(t), m)
		require.NoError(t, err)
	}
	master, replica := e.c.Broker.Store(), slave.Broker.Store()
	testutil.Eventually(t, 20*time.Second, func() bool {
		return master.CompactionStats().Marked == 40 && replica.CompactionStats().Marked == 40
	}, "master and slave marked the 40 superseded messages (the slave once it has the topic's config)")

	e.createTopic("Filler", 1)
	for range 160 {
		_, err := e.p.Send(adminCtx(t), message.NewMessage("Filler", make([]byte, 4<<10)))
		require.NoError(t, err)
	}
	e.clockMs.Add(2 * time.Minute.Milliseconds())
	testutil.Eventually(t, 20*time.Second, func() bool {
		lo, _ := replica.CommitLogRange()
		return lo >= 512<<10
	}, "the slave deleted its first segments")
	lo, _ := master.CommitLogRange()
	require.GreaterOrEqual(t, lo, int64(512<<10), "the master deleted them first")
	require.Equal(t, int64(10), master.CompactionStats().Copied)
	require.Zero(t, replica.CompactionStats().Copied, "a slave appends nothing")
	require.Equal(t, int64(10), replica.CompactionStats().Relocated, "it follows the master's copies")

	var got []string
	for off := replica.MinOffset(topic, 0); off < replica.MaxOffset(topic, 0); {
		r, err := replica.PullMessages(topic, 0, off, 32, 1<<20, nil)
		require.NoError(t, err)
		for _, b := range r.Messages {
			rec, _, err := message.DecodeRecord(b)
			require.NoError(t, err)
			got = append(got, fmt.Sprintf("%d:%s", rec.QueueOffset, rec.Body))
		}
		off = r.NextBeginOffset
		r.Release()
	}
	var want []string
	for i := 40; i < 50; i++ {
		want = append(want, fmt.Sprintf("%d:v%02d", i, i))
	}
	require.Equal(t, want, got, "the slave serves every latest value from the copies")
}
