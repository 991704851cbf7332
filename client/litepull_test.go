package client

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/testutil"
)

// stepCtx bounds one test step.
func stepCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// byQueue indexes send results: queue id → offset → body.
func byQueue(sent map[string]SendResult) map[int32]map[int64]string {
	out := map[int32]map[int64]string{}
	for b, r := range sent {
		if out[r.QueueID] == nil {
			out[r.QueueID] = map[int64]string{}
		}
		out[r.QueueID][r.QueueOffset] = b
	}
	return out
}

// sendSync sends bodies one at a time with tags[i] (when set) and returns the results.
func sendSync(t *testing.T, p *Producer, topic string, bodies []string, tags []string) []SendResult {
	t.Helper()
	out := make([]SendResult, len(bodies))
	for i, b := range bodies {
		m := message.NewMessage(topic, []byte(b))
		if tags != nil {
			m.SetTags(tags[i])
		}
		r, err := p.Send(stepCtx(t), m)
		require.NoError(t, err)
		out[i] = r
	}
	return out
}

// sendEven sends bodies one at a time, so round robin spreads them evenly over the
// queues, and returns the results by body.
func sendEven(t *testing.T, p *Producer, topic string, bodies []string) map[string]SendResult {
	t.Helper()
	out := make(map[string]SendResult, len(bodies))
	for i, r := range sendSync(t, p, topic, bodies, nil) {
		out[bodies[i]] = r
	}
	return out
}

// waitDispatched waits until the broker has dispatched n messages to queue q of topic
// (a pull sees them from then on).
func waitDispatched(t *testing.T, raw *rawBroker, topic string, q int32, n int64) {
	t.Helper()
	testutil.Eventually(t, 10*time.Second, func() bool { return raw.maxOffset(topic, q) >= n },
		"messages dispatched to "+topic+" queue "+strconv.Itoa(int(q)))
}

// newLite creates a lite-pull consumer closed at cleanup.
func newLite(t *testing.T, cl *Client, group string, opts ...LitePullOption) *LitePullConsumer {
	t.Helper()
	lc, err := cl.NewLitePullConsumer(group, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, lc.Close()) })
	return lc
}

// pollN polls until n messages arrived (failing after 20 s) and checks that no Poll
// returned more than batch messages and that each queue's messages come in offset order.
func pollN(t *testing.T, lc *LitePullConsumer, n, batch int) []*MessageExt {
	t.Helper()
	var out []*MessageExt
	last := map[MessageQueue]int64{}
	deadline := time.Now().Add(20 * time.Second)
	for len(out) < n {
		require.True(t, time.Now().Before(deadline), "only %d of %d messages polled", len(out), n)
		msgs := lc.Poll(context.Background(), 100*time.Millisecond)
		require.LessOrEqual(t, len(msgs), batch, "poll batch bound")
		for _, m := range msgs {
			if prev, ok := last[m.Queue]; ok {
				require.Greater(t, m.QueueOffset, prev, "queue %s in order", m.Queue)
			}
			last[m.Queue] = m.QueueOffset
		}
		out = append(out, msgs...)
	}
	return out
}

// buffered is how many messages each queue holds unpolled.
func (lc *LitePullConsumer) buffered() map[MessageQueue]int {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	out := map[MessageQueue]int{}
	for mq, q := range lc.mu.queues {
		out[mq] = len(q.buf)
	}
	return out
}

// TestPullConsumerExplicitOffsets: a pull at an explicit offset returns exactly the
// stored messages from there (bounded by maxNums), the tag filter keeps only matching
// ones, and the offsets at and past the end, below it in an empty queue, and a
// non-matching tail get their statuses and corrected next offsets. Long polling holds,
// and committed offsets written by the pull consumer are what the admin API reports.
func TestPullConsumerExplicitOffsets(t *testing.T) {
	const topic, filtered, empty, group = "PullExplicit", "PullFiltered", "PullEmpty", "cg-pull-explicit"
	c := testutil.StartCluster(t)
	raw := newRawBroker(t, c)
	raw.createTopic(topic, 2)
	raw.createTopic(filtered, 1)
	raw.createTopic(empty, 1)
	cl := newMember(t, c, "pull")
	p, err := cl.NewProducer("pg-pull")
	require.NoError(t, err)
	defer func() { require.NoError(t, p.Close()) }()
	idx := byQueue(sendEven(t, p, topic, names("pull-", 60)))
	require.Len(t, idx, 2, "both queues got messages")
	for q, stored := range idx {
		waitDispatched(t, raw, topic, q, int64(len(stored)))
	}

	pc, err := cl.NewPullConsumer(group)
	require.NoError(t, err)
	ctx := stepCtx(t)
	mqs, err := pc.FetchQueues(ctx, topic)
	require.NoError(t, err)
	require.Len(t, mqs, 2)
	for _, mq := range mqs {
		stored := idx[mq.QueueID]
		n := int64(len(stored))
		require.GreaterOrEqual(t, n, int64(8), "queue %d holds enough", mq.QueueID)

		res, err := pc.Pull(ctx, mq, 0, 1024, "*")
		require.NoError(t, err)
		require.Equal(t, PullFound, res.Status)
		require.Len(t, res.Messages, int(n))
		for i, m := range res.Messages {
			require.Equal(t, int64(i), m.QueueOffset)
			require.Equal(t, stored[int64(i)], string(m.Body))
			require.Equal(t, mq, m.Queue)
			require.Equal(t, topic, m.Topic)
		}
		require.Equal(t, n, res.NextOffset)
		require.Equal(t, int64(0), res.MinOffset)
		require.Equal(t, n, res.MaxOffset)

		res, err = pc.Pull(ctx, mq, 3, 4, "")
		require.NoError(t, err)
		require.Equal(t, PullFound, res.Status)
		var offs []int64
		for _, m := range res.Messages {
			offs = append(offs, m.QueueOffset)
			require.Equal(t, stored[m.QueueOffset], string(m.Body))
		}
		require.Equal(t, []int64{3, 4, 5, 6}, offs, "exactly maxNums messages from the offset")
		require.Equal(t, int64(7), res.NextOffset)

		res, err = pc.Pull(ctx, mq, n, 10, "*")
		require.NoError(t, err)
		require.Equal(t, PullNoNewMessage, res.Status, "at the end")
		require.Empty(t, res.Messages)
		require.Equal(t, n, res.NextOffset)

		res, err = pc.Pull(ctx, mq, n+5, 10, "*")
		require.NoError(t, err)
		require.Equal(t, PullOffsetIllegal, res.Status, "past the end")
		require.Equal(t, n, res.NextOffset)
	}

	// Tags: three TagA then three TagB in one queue.
	fmq := MessageQueue{Topic: filtered, BrokerName: mqs[0].BrokerName, QueueID: 0}
	sendSync(t, p, filtered, names("f-", 6), []string{"TagA", "TagA", "TagA", "TagB", "TagB", "TagB"})
	waitDispatched(t, raw, filtered, 0, 6)
	res, err := pc.Pull(ctx, fmq, 0, 32, "TagB")
	require.NoError(t, err)
	require.Equal(t, PullFound, res.Status)
	require.Equal(t, []string{"f-3", "f-4", "f-5"}, bodiesOf(res.Messages))
	res, err = pc.Pull(ctx, fmq, 3, 32, "TagA || TagC")
	require.NoError(t, err)
	require.Equal(t, PullNoMatchedMessage, res.Status, "only TagB left")
	require.Empty(t, res.Messages)
	require.Equal(t, int64(6), res.NextOffset)

	// Long polling: the broker holds a pull at the end, and answers it when a message comes.
	start := time.Now()
	res, err = pc.PullWait(ctx, fmq, 6, 32, "*", 300*time.Millisecond)
	require.NoError(t, err)
	require.Equal(t, PullNoNewMessage, res.Status)
	require.GreaterOrEqual(t, time.Since(start), 250*time.Millisecond, "held by the broker")
	got := make(chan PullResult, 1)
	go func() {
		r, err := pc.PullWait(context.Background(), fmq, 6, 32, "*", 15*time.Second)
		if err != nil {
			r.Status = -1
		}
		got <- r
	}()
	sendSync(t, p, filtered, []string{"f-6"}, nil)
	select {
	case r := <-got:
		require.Equal(t, PullFound, r.Status)
		require.Equal(t, []string{"f-6"}, bodiesOf(r.Messages))
	case <-time.After(10 * time.Second):
		t.Fatal("a held pull was not answered by a new message")
	}

	// An empty queue: offset 0 is its end, anything else illegal.
	emq := MessageQueue{Topic: empty, BrokerName: mqs[0].BrokerName, QueueID: 0}
	res, err = pc.Pull(ctx, emq, 0, 1, "*")
	require.NoError(t, err)
	require.Equal(t, PullNoNewMessage, res.Status)
	res, err = pc.Pull(ctx, emq, 3, 1, "*")
	require.NoError(t, err)
	require.Equal(t, PullOffsetIllegal, res.Status)
	require.Equal(t, int64(0), res.NextOffset)

	// Committed offsets and queue bounds.
	mq := mqs[1]
	off, err := pc.CommittedOffset(ctx, mq)
	require.NoError(t, err)
	require.Equal(t, int64(-1), off, "nothing committed yet")
	require.NoError(t, pc.CommitOffset(ctx, mq, 5))
	off, err = pc.CommittedOffset(ctx, mq)
	require.NoError(t, err)
	require.Equal(t, int64(5), off)
	progress, err := cl.Admin().ConsumerOffsets(ctx, group, topic)
	require.NoError(t, err)
	for _, qp := range progress {
		want := int64(-1)
		if qp.Queue == mq {
			want = 5
		}
		require.Equal(t, want, qp.ConsumerOffset, "queue %s", qp.Queue)
	}
	lo, err := pc.MinOffset(ctx, mq)
	require.NoError(t, err)
	hi, err := pc.MaxOffset(ctx, mq)
	require.NoError(t, err)
	require.Equal(t, int64(0), lo)
	require.Equal(t, int64(len(idx[mq.QueueID])), hi)
	at, err := pc.OffsetByTime(ctx, mq, time.Now().Add(time.Hour))
	require.NoError(t, err)
	require.Equal(t, hi, at, "all messages are older")

	// Bad input.
	for _, call := range []func() error{
		func() error { _, err := pc.Pull(ctx, mq, -1, 1, "*"); return err },
		func() error { _, err := pc.Pull(ctx, mq, 0, 0, "*"); return err },
		func() error { _, err := pc.Pull(ctx, mq, 0, maxPullNums+1, "*"); return err },
		func() error {
			_, err := pc.Pull(ctx, MessageQueue{Topic: "bad topic", BrokerName: "b"}, 0, 1, "*")
			return err
		},
		func() error { _, err := pc.Pull(ctx, MessageQueue{Topic: topic}, 0, 1, "*"); return err },
		func() error { _, err := pc.Pull(ctx, mq, 0, 1, "||"); return err },
		func() error { return pc.CommitOffset(ctx, mq, -2) },
		func() error { _, err := pc.FetchQueues(ctx, "bad topic"); return err },
	} {
		require.ErrorIs(t, call(), ErrInvalidArgument)
	}
	_, err = pc.Pull(ctx, MessageQueue{Topic: topic, BrokerName: mq.BrokerName, QueueID: 9}, 0, 1, "*")
	require.ErrorIs(t, err, ErrBroker, "a queue id past the topic's queues")
	_, err = pc.FetchQueues(ctx, "NoSuchTopic")
	require.ErrorIs(t, err, ErrNoRoute)
	_, err = pc.Pull(ctx, MessageQueue{Topic: topic, BrokerName: "no-such-broker"}, 0, 1, "*")
	require.ErrorIs(t, err, ErrNoRoute)
	_, err = cl.NewPullConsumer("bad group")
	require.ErrorIs(t, err, ErrInvalidOptions)
}

func bodiesOf(msgs []*MessageExt) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = string(m.Body)
	}
	return out
}

// TestLitePullAssignPollSeekCommit: an assigning lite-pull consumer polls every message
// once (buffers bounded per queue, polls bounded by the poll batch, each queue in
// order); Seek back re-reads a queue; Commit stores the polled positions (and a seek
// position), which the admin API reports and a new consumer of the group resumes from.
func TestLitePullAssignPollSeekCommit(t *testing.T) {
	const topic, group, n, bound, batch = "LiteAssign", "cg-lite-assign", 200, 10, 7
	c := testutil.StartCluster(t)
	raw := newRawBroker(t, c)
	raw.createTopic(topic, 4)
	cl := newMember(t, c, "lite-assign")
	p, err := cl.NewProducer("pg-lite-assign")
	require.NoError(t, err)
	defer func() { require.NoError(t, p.Close()) }()
	sent := sendEven(t, p, topic, names("la-", n))
	idx := byQueue(sent)
	require.Len(t, idx, 4)

	lc := newLite(t, cl, group, WithConsumeFrom(ConsumeFromFirstOffset), WithManualCommit(), WithPollBatch(batch),
		WithQueueCacheLimits(bound, 1<<20), WithPullBatch(4))
	ctx := stepCtx(t)
	mqs, err := lc.FetchQueues(ctx, topic)
	require.NoError(t, err)
	require.NoError(t, lc.Assign(mqs...))
	require.NoError(t, lc.Start(ctx))
	require.Equal(t, mqs, lc.Assignment())

	// Nothing polled yet: every buffer fills up to the bound and no further.
	testutil.Eventually(t, 10*time.Second, func() bool {
		for _, k := range lc.buffered() {
			if k != bound {
				return false
			}
		}
		return true
	}, "every queue's buffer full")
	for mq, k := range lc.buffered() {
		require.Equal(t, bound, k, "queue %s buffer bound", mq)
	}

	msgs := pollN(t, lc, n, batch)
	seen := map[string]int{}
	for _, m := range msgs {
		seen[string(m.Body)]++
		require.Equal(t, sent[string(m.Body)].QueueOffset, m.QueueOffset)
		require.Equal(t, sent[string(m.Body)].MsgID, m.MsgID)
	}
	require.Len(t, seen, n, "every message polled")
	for b, k := range seen {
		require.Equal(t, 1, k, "%s polled once", b)
	}
	require.Empty(t, lc.Poll(ctx, 50*time.Millisecond), "nothing more")

	// Seek back: the queue is read again from there, in order.
	q0 := mqs[0]
	require.NoError(t, lc.Seek(q0, 0))
	again := pollN(t, lc, len(idx[q0.QueueID]), batch)
	for i, m := range again {
		require.Equal(t, q0, m.Queue)
		require.Equal(t, int64(i), m.QueueOffset)
		require.Equal(t, idx[q0.QueueID][int64(i)], string(m.Body))
	}

	// Commit: every queue at its end; then a seek position.
	require.NoError(t, lc.Commit(ctx))
	progress, err := cl.Admin().ConsumerOffsets(ctx, group, topic)
	require.NoError(t, err)
	require.Len(t, progress, 4)
	for _, qp := range progress {
		require.Equal(t, qp.BrokerOffset, qp.ConsumerOffset, "queue %s committed to its end", qp.Queue)
	}
	q1 := mqs[1]
	require.NoError(t, lc.Seek(q1, 2))
	require.NoError(t, lc.Commit(ctx))
	off, err := lc.Committed(ctx, q1)
	require.NoError(t, err)
	require.Equal(t, int64(2), off)
	require.NoError(t, lc.Close())
	off, err = lc.Committed(ctx, q1)
	require.NoError(t, err)
	require.Equal(t, int64(2), off, "a manual-commit consumer commits nothing on Close")

	// A new consumer of the group resumes at the committed offsets: q1 from offset 2.
	lc2 := newLite(t, newMember(t, c, "lite-assign-2"), group, WithConsumeFrom(ConsumeFromFirstOffset), WithManualCommit())
	require.NoError(t, lc2.Assign(mqs...))
	require.NoError(t, lc2.Start(ctx))
	rest := pollN(t, lc2, len(idx[q1.QueueID])-2, defaultPollBatch)
	for i, m := range rest {
		require.Equal(t, q1, m.Queue)
		require.Equal(t, int64(i+2), m.QueueOffset)
	}
	require.Empty(t, lc2.Poll(ctx, 50*time.Millisecond), "nothing before the committed offsets")
}

// TestLitePullAutoCommitOnClose: with auto-commit (interval long enough not to fire),
// Close commits each queue's position after what Poll returned — not what was only
// buffered — and nothing is committed before.
func TestLitePullAutoCommitOnClose(t *testing.T) {
	const topic, group, n = "LiteAutoCommit", "cg-lite-auto", 60
	c := testutil.StartCluster(t)
	raw := newRawBroker(t, c)
	raw.createTopic(topic, 2)
	cl := newMember(t, c, "lite-auto")
	p, err := cl.NewProducer("pg-lite-auto")
	require.NoError(t, err)
	defer func() { require.NoError(t, p.Close()) }()
	sendEven(t, p, topic, names("auto-", n))

	lc := newLite(t, cl, group, WithConsumeFrom(ConsumeFromFirstOffset), WithCommitInterval(time.Hour), WithPollBatch(5))
	ctx := stepCtx(t)
	mqs, err := lc.FetchQueues(ctx, topic)
	require.NoError(t, err)
	require.NoError(t, lc.Assign(mqs...))
	require.NoError(t, lc.Start(ctx))
	polled := pollN(t, lc, 15, 5)
	want := map[MessageQueue]int64{}
	for _, mq := range mqs {
		want[mq] = 0
	}
	for _, m := range polled {
		require.Equal(t, want[m.Queue], m.QueueOffset, "each queue polled from 0 without gaps")
		want[m.Queue] = m.QueueOffset + 1
	}
	progress, err := cl.Admin().ConsumerOffsets(ctx, group, topic)
	require.NoError(t, err)
	for _, qp := range progress {
		require.Equal(t, int64(-1), qp.ConsumerOffset, "nothing committed before Close")
	}
	require.NoError(t, lc.Close())
	progress, err = cl.Admin().ConsumerOffsets(ctx, group, topic)
	require.NoError(t, err)
	require.Len(t, progress, 2)
	for _, qp := range progress {
		require.Equal(t, want[qp.Queue], qp.ConsumerOffset, "queue %s committed after the polled messages", qp.Queue)
		require.Less(t, qp.ConsumerOffset, qp.BrokerOffset, "buffered messages are not committed")
	}
}

// TestLitePullPauseResume: a paused queue is neither pulled nor polled; the others go
// on; resumed, it delivers what it missed.
func TestLitePullPauseResume(t *testing.T) {
	const topic, group, n = "LitePause", "cg-lite-pause", 40
	c := testutil.StartCluster(t)
	raw := newRawBroker(t, c)
	raw.createTopic(topic, 2)
	cl := newMember(t, c, "lite-pause")
	lc := newLite(t, cl, group, WithConsumeFrom(ConsumeFromFirstOffset))
	ctx := stepCtx(t)
	mqs, err := lc.FetchQueues(ctx, topic)
	require.NoError(t, err)
	require.NoError(t, lc.Assign(mqs...))
	lc.Pause(mqs[0])
	require.NoError(t, lc.Start(ctx))
	p, err := cl.NewProducer("pg-lite-pause")
	require.NoError(t, err)
	defer func() { require.NoError(t, p.Close()) }()
	idx := byQueue(sendEven(t, p, topic, names("pause-", n)))

	first := pollN(t, lc, len(idx[mqs[1].QueueID]), defaultPollBatch)
	for _, m := range first {
		require.Equal(t, mqs[1], m.Queue, "only the running queue")
	}
	require.Empty(t, lc.Poll(ctx, 50*time.Millisecond))
	require.Zero(t, lc.buffered()[mqs[0]], "the paused queue is not pulled")
	lc.Resume(mqs[0])
	rest := pollN(t, lc, len(idx[mqs[0].QueueID]), defaultPollBatch)
	for _, m := range rest {
		require.Equal(t, mqs[0], m.Queue)
	}

	// Paused with messages buffered: Poll holds them back until Resume.
	idx = byQueue(sendEven(t, p, topic, names("pause2-", n)))
	testutil.Eventually(t, 10*time.Second, func() bool {
		b := lc.buffered()
		return b[mqs[0]] == len(idx[mqs[0].QueueID]) && b[mqs[1]] == len(idx[mqs[1].QueueID])
	}, "both queues buffered")
	lc.Pause(mqs[1])
	for _, m := range pollN(t, lc, len(idx[mqs[0].QueueID]), defaultPollBatch) {
		require.Equal(t, mqs[0], m.Queue, "the paused queue's buffer is held back")
	}
	require.Empty(t, lc.Poll(ctx, 50*time.Millisecond))
	lc.Resume(mqs[1])
	for _, m := range pollN(t, lc, len(idx[mqs[1].QueueID]), defaultPollBatch) {
		require.Equal(t, mqs[1], m.Queue)
	}
}

// TestLitePullSubscribeSplitsQueues: two subscribed lite-pull consumers of a group split
// the topic's queues two and two, and together poll every message once, each from its
// own queues; when one closes (committing), the other takes every queue over and reads
// only what is new.
func TestLitePullSubscribeSplitsQueues(t *testing.T) {
	const topic, group, n = "LiteSubscribe", "cg-lite-sub", 200
	c := testutil.StartCluster(t)
	raw := newRawBroker(t, c)
	raw.createTopic(topic, 4)
	opts := []LitePullOption{WithConsumeFrom(ConsumeFromFirstOffset), WithRebalanceInterval(time.Second)}
	ctx := stepCtx(t)
	start := func(name string) *LitePullConsumer {
		lc := newLite(t, newMember(t, c, name), group, opts...)
		require.NoError(t, lc.Subscribe(topic, "*"))
		require.NoError(t, lc.Start(ctx))
		return lc
	}
	a, b := start("lite-sub-a"), start("lite-sub-b")
	testutil.Eventually(t, 20*time.Second, func() bool {
		qa, qb := a.Assignment(), b.Assignment()
		return len(qa) == 2 && len(qb) == 2 && !slices.ContainsFunc(qa, func(q MessageQueue) bool { return slices.Contains(qb, q) })
	}, "the queues split two and two")
	owned := map[MessageQueue]string{}
	for _, q := range a.Assignment() {
		owned[q] = "a"
	}
	for _, q := range b.Assignment() {
		owned[q] = "b"
	}

	cl := newMember(t, c, "lite-sub-producer")
	p, err := cl.NewProducer("pg-lite-sub")
	require.NoError(t, err)
	defer func() { require.NoError(t, p.Close()) }()
	first := names("sub-", n)
	sendAll(t, p, topic, first, nil)

	var mu sync.Mutex
	seen := map[string][]string{}
	poll := func(lc *LitePullConsumer, name string, stop <-chan struct{}, wg *sync.WaitGroup) {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			for _, m := range lc.Poll(context.Background(), 50*time.Millisecond) {
				mu.Lock()
				seen[string(m.Body)] = append(seen[string(m.Body)], name+"@"+strconv.Itoa(int(m.Queue.QueueID)))
				if owned[m.Queue] != name {
					seen["misrouted"] = append(seen["misrouted"], name+" got "+m.Queue.String())
				}
				mu.Unlock()
			}
		}
	}
	count := func(bodies []string) int {
		mu.Lock()
		defer mu.Unlock()
		k := 0
		for _, b := range bodies {
			if len(seen[b]) > 0 {
				k++
			}
		}
		return k
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	go poll(a, "a", stop, &wg)
	go poll(b, "b", stop, &wg)
	testutil.Eventually(t, 20*time.Second, func() bool { return count(first) == n }, "every message polled")
	close(stop)
	wg.Wait()
	mu.Lock()
	require.Empty(t, seen["misrouted"])
	per := map[byte]int{}
	for _, body := range first {
		require.Len(t, seen[body], 1, "%s polled once: %v", body, seen[body])
		per[seen[body][0][0]]++
	}
	mu.Unlock()
	require.Positive(t, per['a'])
	require.Positive(t, per['b'])

	// a leaves, committing what it polled; b takes its queues over from there.
	require.NoError(t, a.Close())
	testutil.Eventually(t, 20*time.Second, func() bool { return len(b.Assignment()) == 4 }, "b owns every queue")
	for q := range owned {
		owned[q] = "b"
	}
	second := names("sub2-", 40)
	sendAll(t, p, topic, second, nil)
	stop = make(chan struct{})
	wg.Add(1)
	go poll(b, "b", stop, &wg)
	testutil.Eventually(t, 20*time.Second, func() bool { return count(second) == len(second) }, "b polled the new messages")
	close(stop)
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	require.Empty(t, seen["misrouted"])
	for _, body := range append(first, second...) {
		require.Len(t, seen[body], 1, "%s polled once: %v", body, seen[body])
	}
}

// TestLitePullOptionsAndMisuse: invalid options and calls are refused with the
// package's sentinels; a consumer that is not running polls nothing.
func TestLitePullOptionsAndMisuse(t *testing.T) {
	c := testutil.StartCluster(t)
	cl := newMember(t, c, "lite-misuse")
	for _, opts := range [][]LitePullOption{
		{WithOrderly()}, {WithBroadcasting()}, {WithPollBatch(0)}, {WithPollBatch(maxPullNums + 1)},
		{WithPullBatch(0)}, {WithQueueCacheLimits(0, 1)}, {WithCommitInterval(0)}, {nil},
	} {
		_, err := cl.NewLitePullConsumer("cg-misuse", opts...)
		require.ErrorIs(t, err, ErrInvalidOptions)
	}
	_, err := cl.NewLitePullConsumer("bad group")
	require.ErrorIs(t, err, ErrInvalidOptions)

	mq := MessageQueue{Topic: "Misuse", BrokerName: "b", QueueID: 0}
	lc := newLite(t, cl, "cg-misuse")
	require.Nil(t, lc.Poll(context.Background(), time.Hour), "not started: at once")
	require.ErrorIs(t, lc.Seek(mq, 0), ErrInvalidArgument, "not owned")
	require.ErrorIs(t, lc.Assign(MessageQueue{Topic: "Misuse"}), ErrInvalidArgument)
	require.NoError(t, lc.Subscribe("Misuse", "*"))
	require.ErrorIs(t, lc.Assign(mq), ErrInvalidOptions, "subscribes already")
	require.ErrorIs(t, lc.Subscribe("Misuse", "||"), ErrInvalidOptions)

	la := newLite(t, cl, "cg-misuse-assign")
	require.NoError(t, la.Assign(mq))
	require.ErrorIs(t, la.Subscribe("Misuse", "*"), ErrInvalidOptions, "assigns already")
	require.ErrorIs(t, la.Seek(mq, -1), ErrInvalidArgument)
	require.NoError(t, la.Seek(mq, 3), "owned before Start")

	// One subscribed consumer per group and client, push or lite.
	ctx := stepCtx(t)
	require.NoError(t, lc.Start(ctx))
	require.ErrorIs(t, lc.Start(ctx), ErrInvalidOptions)
	require.ErrorIs(t, lc.Subscribe("Other", "*"), ErrInvalidOptions, "subscribe after Start")
	dup := newLite(t, cl, "cg-misuse")
	require.NoError(t, dup.Subscribe("Misuse", "*"))
	require.ErrorIs(t, dup.Start(ctx), ErrInvalidOptions)
	pc, err := cl.NewPushConsumer("cg-misuse-push", "Misuse", "*", func(context.Context, []*MessageExt) ConsumeResult { return ConsumeSuccess })
	require.NoError(t, err)
	require.NoError(t, pc.Start(ctx))
	defer func() { require.NoError(t, pc.Close()) }()
	lp := newLite(t, cl, "cg-misuse-push")
	require.NoError(t, lp.Subscribe("Misuse", "*"))
	require.ErrorIs(t, lp.Start(ctx), ErrInvalidOptions)

	require.NoError(t, lc.Close())
	require.NoError(t, lc.Close(), "idempotent")
	require.ErrorIs(t, lc.Commit(ctx), ErrClosed)
	require.ErrorIs(t, lc.Start(ctx), ErrClosed)
	require.Nil(t, lc.Poll(ctx, time.Hour), "closed: at once")
}
