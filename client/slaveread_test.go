package client

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/broker"
	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/testutil"
)

// startSuggestingPair starts a master whose pull answers suggest the slave (broker 1:
// slaveReadEnable, and an in-memory limit of 1 byte makes every read "in disk") and a
// slave whose answers suggest the master (no limit: every read is "in memory", so the
// group's brokerId 0). A consumer that follows the suggestions alternates between them.
// It stores n messages of topic on the master and waits until the slave has them and
// the topic.
func startSuggestingPair(t *testing.T, topic string, n int) (*testutil.Cluster, *testutil.Slave, *Client) {
	t.Helper()
	c := testutil.StartCluster(t, testutil.WithBrokerOptions(func(o *broker.Options) {
		o.SlaveReadEnable = true
		o.SlaveSyncInterval = 100 * time.Millisecond
		o.Store.InMemoryMaxBytes = 1
		if o.Role == broker.RoleSlave {
			o.Store.InMemoryMaxBytes = 0
		}
	}))
	s := c.StartSlave(t, nil)
	cl, err := New(WithNameServers(c.NamesrvAddr), WithRequestTimeout(3*time.Second), WithInstanceName("suggest"))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, cl.Close()) })
	require.NoError(t, cl.Admin().CreateTopic(stepCtx(t), TopicConfig{Name: topic, ReadQueues: 1, WriteQueues: 1}, Target{}))
	p, err := cl.NewProducer("pg-suggest")
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close()) })
	for i := range n {
		_, err := p.Send(stepCtx(t), message.NewMessage(topic, []byte("m"+strconv.Itoa(i))))
		require.NoError(t, err)
	}
	end := c.Broker.Store().CommitLog().MaxOffset()
	testutil.Eventually(t, 10*time.Second, func() bool {
		resp, err := cl.invoke(stepCtx(t), s.Addr, protocol.NewRequest(protocol.GetAllTopicConfig, nil))
		if err != nil {
			return false
		}
		w, err := protocol.DecodeTopicConfigSerializeWrapper(resp.Body)
		_, known := w.TopicConfigTable[topic]
		return err == nil && known && c.Broker.Store().DispatchedOffset() >= end &&
			s.Broker.Store().DispatchedOffset() >= end && s.Broker.Store().MaxOffset(topic, 0) == int64(n)
	}, "both brokers serve the messages, the slave knows the topic")
	return c, s, cl
}

// servedBy is how many messages the broker at addr has served to pulls.
func servedBy(t *testing.T, cl *Client, addr string) int64 {
	t.Helper()
	info, err := cl.Admin().BrokerRuntimeInfo(stepCtx(t), addr)
	require.NoError(t, err)
	n, err := strconv.ParseInt(info["msgGetTotalTodayNow"], 10, 64)
	require.NoError(t, err)
	return n
}

// Each pull goes where the previous answer suggested: the first to the master, which
// suggests the slave (1); the next to the slave, which suggests the master (0); and so
// on. Offsets are read on the master throughout.
func TestPullConsumerFollowsSuggestedBroker(t *testing.T) {
	const topic, n = "SuggestPull", 6
	c, s, cl := startSuggestingPair(t, topic, n)
	pc, err := cl.NewPullConsumer("cg-suggest-pull")
	require.NoError(t, err)
	mq := MessageQueue{Topic: topic, BrokerName: "broker-a", QueueID: 0}
	for i := range n {
		m0, s0 := servedBy(t, cl, c.BrokerAddr), servedBy(t, cl, s.Addr)
		res, err := pc.Pull(stepCtx(t), mq, int64(i), 1, "*")
		require.NoError(t, err)
		m1, s1 := servedBy(t, cl, c.BrokerAddr), servedBy(t, cl, s.Addr)
		require.Equal(t, PullFound, res.Status, "pull %d: %+v", i, res)
		require.Equal(t, "m"+strconv.Itoa(i), string(res.Messages[0].Body))
		if i%2 == 0 {
			require.Equal(t, [2]int64{1, 0}, [2]int64{m1 - m0, s1 - s0}, "pull %d from the master", i)
		} else {
			require.Equal(t, [2]int64{0, 1}, [2]int64{m1 - m0, s1 - s0}, "pull %d from the slave", i)
		}
	}
	require.NoError(t, pc.CommitOffset(stepCtx(t), mq, n))
	require.Equal(t, int64(n), offsetOn(t, cl, c.BrokerAddr, "cg-suggest-pull", topic), "offsets go to the master")
}

// offsetOn is group's committed offset of queue 0 of topic on the broker at addr (-1:
// none).
func offsetOn(t *testing.T, cl *Client, addr, group, topic string) int64 {
	t.Helper()
	no := false
	resp, err := cl.invoke(stepCtx(t), addr, protocol.NewRequest(protocol.QueryConsumerOffset,
		&protocol.QueryConsumerOffsetRequestHeader{ConsumerGroup: group, Topic: topic, SetZeroIfNotFound: &no}))
	if hasCode(err, protocol.QueryNotFound) {
		return -1
	}
	require.NoError(t, err)
	off, err := offsetOf(resp)
	require.NoError(t, err)
	return off
}

// A push consumer follows the suggestions too: pulling one message at a time, it takes
// every other batch from the slave, and commits its offsets to the master.
func TestPushConsumerFollowsSuggestedBroker(t *testing.T) {
	const topic, group, n = "SuggestPush", "cg-suggest-push", 20
	c, s, cl := startSuggestingPair(t, topic, n)
	m0, s0 := servedBy(t, cl, c.BrokerAddr), servedBy(t, cl, s.Addr)
	var mu sync.Mutex
	got := map[string]int{}
	pc, err := cl.NewPushConsumer(group, topic, "*", func(_ context.Context, msgs []*MessageExt) ConsumeResult {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range msgs {
			got[string(m.Body)]++
		}
		return ConsumeSuccess
	}, WithConsumeFrom(ConsumeFromFirstOffset), WithPullBatch(1), WithCommitInterval(100*time.Millisecond))
	require.NoError(t, err)
	require.NoError(t, pc.Start(stepCtx(t)))
	testutil.Eventually(t, 20*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) == n
	}, "every message consumed")
	mu.Lock()
	for b, k := range got {
		require.Equal(t, 1, k, "%s consumed once", b)
	}
	mu.Unlock()
	fromMaster, fromSlave := servedBy(t, cl, c.BrokerAddr)-m0, servedBy(t, cl, s.Addr)-s0
	require.Equal(t, int64(n), fromMaster+fromSlave)
	// Strict alternation: the first pull (master) and every other one after it.
	require.Equal(t, int64(n/2), fromMaster, "%d from the master, %d from the slave", fromMaster, fromSlave)
	require.Equal(t, int64(n/2), fromSlave)
	testutil.Eventually(t, 10*time.Second, func() bool {
		return offsetOn(t, cl, c.BrokerAddr, group, topic) == n
	}, fmt.Sprintf("offset %d committed to the master", n))
	require.NoError(t, pc.Close())
}

// committedSum is group's committed offsets of topic's queues 0..queues-1 on the broker
// at addr, summed (queues without one count 0).
func committedSum(t *testing.T, cl *Client, addr, group, topic string, queues int32) int64 {
	t.Helper()
	var sum int64
	for q := range queues {
		no := false
		resp, err := cl.invoke(stepCtx(t), addr, protocol.NewRequest(protocol.QueryConsumerOffset,
			&protocol.QueryConsumerOffsetRequestHeader{ConsumerGroup: group, Topic: topic, QueueID: q, SetZeroIfNotFound: &no}))
		if hasCode(err, protocol.QueryNotFound) {
			continue
		}
		require.NoError(t, err)
		off, err := offsetOf(resp)
		require.NoError(t, err)
		sum += off
	}
	return sum
}

// A push consumer whose master stops goes on from the slave, committing its offsets
// there; when the master is back it pulls from it again and commits its position to it
// at once, though the position did not move since its last commit (to the slave): the
// restarted master would otherwise hold the offsets of before the outage, and a restart
// of the group would consume the outage's messages again.
func TestPushConsumerFailsOverAndBack(t *testing.T) {
	const topic, group, queues, nA, nB = "FailBack", "cg-failback", 2, 10, 20
	c := testutil.StartCluster(t, testutil.WithBrokerOptions(func(o *broker.Options) {
		o.SlaveSyncInterval = 100 * time.Millisecond
	}))
	s := c.StartSlave(t, nil)
	cl, err := New(WithNameServers(c.NamesrvAddr), WithRequestTimeout(3*time.Second), WithInstanceName("failback"))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, cl.Close()) })
	require.NoError(t, cl.Admin().CreateTopic(stepCtx(t), TopicConfig{Name: topic, ReadQueues: queues, WriteQueues: queues}, Target{}))
	p, err := cl.NewProducer("pg-failback")
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close()) })
	send := func(prefix string, n int) {
		for i := range n {
			_, err := p.Send(stepCtx(t), message.NewMessage(topic, []byte(prefix+strconv.Itoa(i))))
			require.NoError(t, err)
		}
	}

	var hold sync.RWMutex // write-locked: handlers wait, pulled messages stay cached
	var mu sync.Mutex
	got := map[string]int{}
	pc, err := cl.NewPushConsumer(group, topic, "*", func(_ context.Context, msgs []*MessageExt) ConsumeResult {
		hold.RLock()
		hold.RUnlock() //nolint:staticcheck // waiting for the test to let go is the point
		mu.Lock()
		defer mu.Unlock()
		for _, m := range msgs {
			got[string(m.Body)]++
		}
		return ConsumeSuccess
	}, WithConsumeFrom(ConsumeFromFirstOffset), WithRebalanceInterval(100*time.Millisecond),
		WithCommitInterval(100*time.Millisecond), WithQueueCacheLimits(2, 1<<20), WithPullBatch(1))
	require.NoError(t, err)
	require.NoError(t, pc.Start(stepCtx(t)))
	t.Cleanup(func() { require.NoError(t, pc.Close()) })
	consumed := func(n int) func() bool {
		return func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(got) == n
		}
	}

	send("a", nA)
	testutil.Eventually(t, 20*time.Second, consumed(nA), "the first batch consumed")
	testutil.Eventually(t, 10*time.Second, func() bool {
		return committedSum(t, cl, c.BrokerAddr, group, topic, queues) == nA
	}, "the first batch committed to the master")
	hold.Lock()
	locked := true
	t.Cleanup(func() {
		if locked {
			hold.Unlock()
		}
	})
	send("b", nB)
	end := c.Broker.Store().CommitLog().MaxOffset()
	testutil.Eventually(t, 10*time.Second, func() bool { return s.Broker.Store().DispatchedOffset() >= end },
		"the slave has the second batch")
	c.StopBroker(t)
	slaveServed := servedBy(t, cl, s.Addr)
	hold.Unlock()
	locked = false
	testutil.Eventually(t, 20*time.Second, consumed(nA+nB), "the second batch consumed with the master stopped")
	require.Positive(t, servedBy(t, cl, s.Addr)-slaveServed, "the slave served pulls")
	testutil.Eventually(t, 10*time.Second, func() bool {
		return committedSum(t, cl, s.Addr, group, topic, queues) == nA+nB
	}, "offsets committed to the slave meanwhile")

	c.RestartBroker(t)
	testutil.Eventually(t, 10*time.Second, func() bool {
		return committedSum(t, cl, c.BrokerAddr, group, topic, queues) == nA+nB
	}, "the unchanged position committed to the returned master")
	send("c", 4)
	testutil.Eventually(t, 20*time.Second, consumed(nA+nB+4), "messages sent to the returned master consumed")
	mu.Lock()
	defer mu.Unlock()
	for b, k := range got {
		require.Equal(t, 1, k, "%s consumed once", b)
	}
}

// staleSlaveSetup starts a cluster whose slave copies its master's consumer offsets only
// once, at its start (sync interval: an hour), a client of it, and topic with queues
// queues holding n messages, which the slave has too.
func staleSlaveSetup(t *testing.T, topic string, queues int32, n int) (*testutil.Cluster, *Client, *testutil.Slave) {
	t.Helper()
	c := testutil.StartCluster(t, testutil.WithBrokerOptions(func(o *broker.Options) {
		o.SlaveSyncInterval = time.Hour
	}))
	cl, err := New(WithNameServers(c.NamesrvAddr), WithRequestTimeout(3*time.Second), WithInstanceName("stale-"+topic))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, cl.Close()) })
	require.NoError(t, cl.Admin().CreateTopic(stepCtx(t), TopicConfig{Name: topic, ReadQueues: queues, WriteQueues: queues}, Target{}))
	s := c.StartSlave(t, nil)
	testutil.Eventually(t, 10*time.Second, func() bool {
		resp, err := cl.invoke(stepCtx(t), s.Addr, protocol.NewRequest(protocol.GetAllTopicConfig, nil))
		if err != nil {
			return false
		}
		w, err := protocol.DecodeTopicConfigSerializeWrapper(resp.Body)
		_, known := w.TopicConfigTable[topic]
		return err == nil && known
	}, "the slave knows the topic")
	p, err := cl.NewProducer("pg-" + topic)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close()) })
	for i := range n {
		_, err := p.Send(stepCtx(t), message.NewMessage(topic, []byte("m"+strconv.Itoa(i))))
		require.NoError(t, err)
	}
	end := c.Broker.Store().CommitLog().MaxOffset()
	testutil.Eventually(t, 10*time.Second, func() bool { return s.Broker.Store().DispatchedOffset() >= end },
		"the slave has the messages")
	return c, cl, s
}

// A queue dropped and owned again starts where this consumer got to, even when the
// committed offset it reads is behind: here the slave's, which copied its master's
// offsets once, at its start, before the group committed anything (its sync interval is
// an hour). The master stops after the group consumed and committed everything to it;
// the queues are dropped (as by a rebalance that took a stopping master's answer for an
// empty member list) and owned again from the slave, which has no offset of the group:
// started there (ConsumeFromFirstOffset: at 0), they would deliver every message again.
func TestPushConsumerRequeuedQueueKeepsPosition(t *testing.T) {
	const topic, group, queues, n = "KeepPos", "cg-keeppos", 2, 10
	c, cl, s := staleSlaveSetup(t, topic, queues, n)

	var mu sync.Mutex
	got := map[string]int{}
	pc, err := cl.NewPushConsumer(group, topic, "*", func(_ context.Context, msgs []*MessageExt) ConsumeResult {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range msgs {
			got[string(m.Body)]++
		}
		return ConsumeSuccess
	}, WithConsumeFrom(ConsumeFromFirstOffset), WithRebalanceInterval(time.Hour),
		WithCommitInterval(100*time.Millisecond))
	require.NoError(t, err)
	require.NoError(t, pc.Start(stepCtx(t)))
	t.Cleanup(func() { require.NoError(t, pc.Close()) })
	testutil.Eventually(t, 20*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) == n
	}, "every message consumed")
	testutil.Eventually(t, 10*time.Second, func() bool {
		return committedSum(t, cl, c.BrokerAddr, group, topic, queues) == n
	}, "the offsets committed to the master")
	require.Zero(t, committedSum(t, cl, s.Addr, group, topic, queues), "the slave's copy of the offsets is stale")

	c.StopBroker(t)
	pc.assign(pc.subs[0], nil)
	_, err = pc.rebalance(stepCtx(t))
	require.NoError(t, err)
	require.Len(t, pc.Queues(), queues+1, "the topic's queues owned again (and the retry topic's)")
	testutil.Eventually(t, 10*time.Second, func() bool {
		return committedSum(t, cl, s.Addr, group, topic, queues) == n
	}, "the position committed to the slave")
	// Give a queue that restarted too far back the time to pull and consume (it would
	// have committed, and pulled the whole queue, long before this).
	testutil.Eventually(t, 10*time.Second, func() bool {
		pc.mu.Lock()
		defer pc.mu.Unlock()
		for mq, q := range pc.mu.queues {
			if off, ok := q.commitOffset(); mq.Topic == topic && (!ok || off != s.Broker.Store().MaxOffset(topic, mq.QueueID)) {
				return false
			}
		}
		return true
	}, "the queues at their ends")
	mu.Lock()
	for b, k := range got {
		require.Equal(t, 1, k, "%s consumed once", b)
	}
	mu.Unlock()
	c.RestartBroker(t) // Close unregisters the consumer from it
}

// The lite-pull twin of TestPushConsumerRequeuedQueueKeepsPosition: with auto-commit, a
// queue dropped and owned again from a slave whose copy of the offsets is stale starts
// where this consumer had polled up to, not at the slave's (absent) offset, so nothing
// polled before is polled again.
func TestLitePullRequeuedQueueKeepsPosition(t *testing.T) {
	const topic, group, queues, n = "LiteKeepPos", "cg-lite-keeppos", 2, 10
	c, cl, s := staleSlaveSetup(t, topic, queues, n)

	lc := newLite(t, cl, group, WithConsumeFrom(ConsumeFromFirstOffset), WithRebalanceInterval(time.Hour),
		WithCommitInterval(100*time.Millisecond))
	require.NoError(t, lc.Subscribe(topic, "*"))
	require.NoError(t, lc.Start(stepCtx(t)))
	require.Len(t, pollN(t, lc, n, defaultPollBatch), n)
	testutil.Eventually(t, 10*time.Second, func() bool {
		return committedSum(t, cl, c.BrokerAddr, group, topic, queues) == n
	}, "the offsets committed to the master")
	require.Zero(t, committedSum(t, cl, s.Addr, group, topic, queues), "the slave's copy of the offsets is stale")

	c.StopBroker(t)
	lc.mu.Lock()
	lc.applyLocked(func(mq MessageQueue) bool { return mq.Topic == topic }, nil) // as a rebalance that saw no members
	lc.mu.Unlock()
	_, err := lc.rebalance(stepCtx(t))
	require.NoError(t, err)
	require.Len(t, lc.Assignment(), queues, "the queues owned again")
	testutil.Eventually(t, 10*time.Second, func() bool {
		lc.mu.Lock()
		defer lc.mu.Unlock()
		for _, q := range lc.mu.order {
			if !q.started || q.next != s.Broker.Store().MaxOffset(topic, q.mq.QueueID) {
				return false
			}
		}
		return true
	}, "the queues started at their ends")
	require.Empty(t, lc.Poll(stepCtx(t), 200*time.Millisecond), "nothing polled twice")
	lc.mu.Lock()
	require.Empty(t, lc.mu.reached, "each floor used once: a later replay of the queue is not skipped")
	lc.mu.Unlock()
	c.RestartBroker(t) // Close unregisters the consumer from it
}

// An offset reset from the broker also clears the floor of what the consumer had reached
// in the reset queues, owned or not: a queue owned again later starts at the reset offset.
func TestOffsetResetClearsReachedFloor(t *testing.T) {
	const topic, group = "ResetFloor", "cg-reset-floor"
	c := testutil.StartCluster(t)
	cl, err := New(WithNameServers(c.NamesrvAddr), WithRequestTimeout(3*time.Second), WithInstanceName("reset-floor"))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, cl.Close()) })
	require.NoError(t, cl.Admin().CreateTopic(stepCtx(t), TopicConfig{Name: topic, ReadQueues: 2, WriteQueues: 2}, Target{}))
	pc, err := cl.NewPushConsumer(group, topic, "*", func(context.Context, []*MessageExt) ConsumeResult { return ConsumeSuccess },
		WithRebalanceInterval(time.Hour))
	require.NoError(t, err)
	require.NoError(t, pc.Start(stepCtx(t)))
	t.Cleanup(func() { require.NoError(t, pc.Close()) })

	unowned := MessageQueue{Topic: topic, BrokerName: "elsewhere", QueueID: 7}
	other := MessageQueue{Topic: "OtherTopic", BrokerName: "elsewhere", QueueID: 0}
	pc.mu.Lock()
	pc.mu.reached[unowned], pc.mu.reached[other] = 99, 42
	pc.mu.Unlock()
	pc.resetOffsets(topic, map[protocol.MessageQueue]int64{protocol.MessageQueue(unowned): 3, protocol.MessageQueue(other): 5})
	pc.mu.Lock()
	defer pc.mu.Unlock()
	require.NotContains(t, pc.mu.reached, unowned, "the reset queue's floor is gone")
	require.Equal(t, int64(42), pc.mu.reached[other], "a queue of another topic in the table keeps its floor: the reset names one topic")
}
