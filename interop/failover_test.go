package interop

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/broker"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/testutil"
)

// Read failover: a master with a slave; the master is stopped (it unregisters, so the
// routes list only the slave) and consumers go on consuming its messages from the slave,
// from the offsets the slave copied from the master.

// failoverSyncInterval is the slaves' metadata sync interval in these tests.
const failoverSyncInterval = 200 * time.Millisecond

// startFailoverCluster starts a master and its slave with a short metadata sync.
func startFailoverCluster(t *testing.T) (*testutil.Cluster, *testutil.Slave) {
	t.Helper()
	c := testutil.StartCluster(t, testutil.WithBrokerOptions(func(o *broker.Options) {
		o.SlaveSyncInterval = failoverSyncInterval
	}))
	return c, c.StartSlave(t, nil)
}

// waitReplicated waits until the slave holds the master's whole log and its consume
// queues are built.
func waitReplicated(t *testing.T, c *testutil.Cluster, s *testutil.Slave) {
	t.Helper()
	end := c.Broker.Store().CommitLog().MaxOffset()
	testutil.Eventually(t, 20*time.Second, func() bool {
		return s.Broker.Store().CommitLog().MaxOffset() == end && s.Broker.Store().DispatchedOffset() >= end
	}, "the slave has the master's log")
}

// stopMaster stops the master and waits until the route of topic lists only the slave.
func stopMaster(t *testing.T, c *testutil.Cluster, s *testutil.Slave, topic string) {
	t.Helper()
	c.StopBroker(t)
	route, ok := c.NameServer.Table().TopicRoute(topic)
	require.True(t, ok, "the slave keeps the route alive")
	require.Len(t, route.BrokerDatas, 1)
	require.Equal(t, map[int64]string{1: s.Addr}, route.BrokerDatas[0].BrokerAddrs)
}

// committedOn sums a group's committed offsets over the queues of topic on a broker.
func committedOn(raw *rawClient, group, topic string, queues int) int64 {
	raw.t.Helper()
	var sum int64
	for q := range queues {
		if off, ok := raw.consumerOffset(group, topic, q); ok {
			sum += off
		}
	}
	return sum
}

// getTotal is a broker's msgGetTotalTodayNow (messages served to pulls).
func getTotal(raw *rawClient) int64 {
	raw.t.Helper()
	resp := raw.call(protocol.GetBrokerRuntimeInfo, nil, nil)
	table, err := protocol.DecodeKVTable(resp.Body)
	require.NoError(raw.t, err)
	n, err := strconv.ParseInt(table.Table["msgGetTotalTodayNow"], 10, 64)
	require.NoError(raw.t, err)
	return n
}

// TestFailoverFerryConsumerResumesOnSlave: a Ferry consumer consumes a first batch and
// commits it to the master; a second batch is sent; the slave copies the log and the
// offsets; the master stops. A new Ferry consumer of the group — its client now routes
// the broker group to the slave, the lowest broker id present — starts at the offsets
// committed before the master went down and consumes exactly the second batch from the
// slave, then commits its offsets to the slave.
func TestFailoverFerryConsumerResumesOnSlave(t *testing.T) {
	const topic, group, queues, n = "FailoverFerry", "cg-failover-ferry", 4, 80
	c, s := startFailoverCluster(t)
	master, slave := newRaw(t, c.BrokerAddr), newRaw(t, s.Addr)
	createTopic(t, c, topic, queues)
	p := newProducer(t, c, "pg-failover-ferry")
	first, second := bodies("first-", n), bodies("second-", n)
	sendN(t, p, topic, n, 4, func(i int) string { return first[i] })

	rec := newRecorder()
	c1 := newFerryConsumer(t, c, group, topic, "*", ferryHandler(rec, "c1"))
	rec.waitAll(t, first, 30*time.Second, "the first batch consumed from the master")
	require.NoError(t, c1.Close()) // commits
	master.waitCommitted(group, topic, queues)

	sendN(t, p, topic, n, 4, func(i int) string { return second[i] })
	waitReplicated(t, c, s)
	committed := committedOn(master, group, topic, queues)
	require.Equal(t, int64(n), committed)
	testutil.Eventually(t, 10*time.Second, func() bool {
		return committedOn(slave, group, topic, queues) == committed
	}, "the slave has the master's offsets")
	stopMaster(t, c, s, topic)
	slaveGets := getTotal(slave)

	newFerryConsumer(t, c, group, topic, "*", ferryHandler(rec, "c2"))
	rec.waitAll(t, second, 60*time.Second, "the second batch consumed from the slave")
	rec.mu.Lock()
	var again, extra int
	for _, d := range rec.all {
		if d.consumer != "c2" {
			continue
		}
		if rec.seen[d.body] > 1 {
			extra++
		}
		if strings.HasPrefix(d.body, "first-") {
			again++
		}
	}
	rec.mu.Unlock()
	// Every offset was synced before the master stopped: nothing is delivered twice.
	require.Zero(t, again, "first-batch messages consumed again")
	require.Zero(t, extra, "duplicate deliveries")
	require.GreaterOrEqual(t, getTotal(slave)-slaveGets, int64(n), "the slave served the pulls")
	testutil.Eventually(t, 20*time.Second, func() bool {
		return committedOn(slave, group, topic, queues) == 2*n
	}, "the new consumer commits its offsets to the slave")
}

// TestFailoverOfficialConsumerKeepsConsumingFromSlave: an official push consumer is
// consuming when the master stops; once its route refresh (30 s in the Go client) drops
// the master it pulls from the slave (FindBrokerAddressInSubscribe falls back to any
// address of the broker group) and consumes every message. The official Go client reads
// and commits offsets on the master only (FindBrokerAddrByName), so a consumer that
// starts while the master is down cannot start consuming: only one that was running
// fails over.
func TestFailoverOfficialConsumerKeepsConsumingFromSlave(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the Go client's 30 s route refresh")
	}
	const topic, group, queues, n, before = "FailoverOfficial", "cg-failover-official", 2, 120, 30
	c, s := startFailoverCluster(t)
	master, slave := newRaw(t, c.BrokerAddr), newRaw(t, s.Addr)
	createTopic(t, c, topic, queues)
	p := newProducer(t, c, "pg-failover-official")
	msgs := bodies("f-", n)
	sendN(t, p, topic, n, 4, func(i int) string { return msgs[i] })
	waitReplicated(t, c, s)

	rec := newRecorder()
	record := rec.handler("official")
	var pc atomic.Pointer[rocketmq.PushConsumer]
	suspended := make(chan struct{})
	handler := func(ctx context.Context, ms ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		res, err := record(ctx, ms...)
		rec.mu.Lock()
		total := len(rec.all)
		rec.mu.Unlock()
		if cur := pc.Load(); total >= before && cur != nil {
			select {
			case <-suspended:
			default:
				(*cur).Suspend() // stop pulling from the master: the rest must come from the slave
				close(suspended)
			}
		}
		return res, err
	}
	official, err := rocketmq.NewPushConsumer(
		consumer.WithNsResolver(primitive.NewPassthroughResolver([]string{c.NamesrvAddr})),
		consumer.WithGroupName(group), consumer.WithInstance(instance("c")),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
		consumer.WithPullBatchSize(4), consumer.WithPullThresholdForQueue(4))
	require.NoError(t, err)
	require.NoError(t, official.Subscribe(topic, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"}, handler))
	pc.Store(&official)
	require.NoError(t, official.Start())
	t.Cleanup(func() { _ = official.Shutdown() })
	testutil.Eventually(t, 30*time.Second, func() bool {
		select {
		case <-suspended:
			return true
		default:
			return false
		}
	}, fmt.Sprintf("%d messages consumed from the master", before))

	// The offsets the consumer commits (every 5 s) reach the master and then the slave,
	// with the topic.
	testutil.Eventually(t, 30*time.Second, func() bool {
		m := committedOn(master, group, topic, queues)
		return m >= before && committedOn(slave, group, topic, queues) == m
	}, "the consumer's offsets committed to the master and copied to the slave")
	stopMaster(t, c, s, topic)
	rec.mu.Lock()
	atStop := len(rec.all)
	rec.mu.Unlock()
	syncedAtStop := committedOn(slave, group, topic, queues)
	slaveGets := getTotal(slave)
	require.LessOrEqual(t, atStop, n/2, "the consumer stopped pulling from the master")
	official.Resume()

	rec.waitAll(t, msgs, 90*time.Second, "every message consumed, the rest from the slave")
	require.GreaterOrEqual(t, getTotal(slave)-slaveGets, int64(n-atStop), "the slave served the rest")
	rec.mu.Lock()
	dups := len(rec.all) - n
	rec.mu.Unlock()
	// Only what was consumed after the last offset sync may come again: what was counted
	// at the stop beyond the synced offsets, plus what the consumer had already pulled
	// from the master (at most a pull batch of 4 per queue) and consumed after that count,
	// whose commits could not reach the stopped master. The consumer keeps its offsets in
	// memory, so usually nothing comes again.
	require.LessOrEqual(t, int64(dups), max(0, int64(atStop)-syncedAtStop)+4*queues, "duplicates")
	t.Logf("consumed %d before the master stopped (slave had offsets for %d), %d duplicates", atStop, syncedAtStop, dups)
}
