package interop

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/internal/testkit"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
	"github.com/ferrymq/ferry/testutil"
)

// TestAdminCallsReachOfficialConsumer drives the admin requests the broker carries out
// with calls to a live official push consumer: INVOKE_BROKER_TO_RESET_OFFSET (the
// broker's RESET_CONSUMER_CLIENT_OFFSET makes it read the topic again from the start),
// CONSUME_MESSAGE_DIRECTLY (its handler gets one stored message) and
// GET_CONSUMER_RUNNING_INFO (its subscriptions and queues, with and without a goroutine
// dump, which the Go client writes unescaped).
//
// The reset is sent half a persist period away from the consumer's periodic offset
// commits (see resetMoment): the Go client commits the reset offsets itself, oneway, 10 s
// after it got the reset, and a periodic commit of its old offsets sent a few
// milliseconds earlier may be applied after it by the broker's workers (as by RocketMQ's
// consumer-manage executor). The client then asks the broker for its offsets, gets the
// old ones and never reads again. Sent right after waitCommitted (which the client's first persist,
// 10 s after its start, satisfies), the reset put the two commits milliseconds apart.
func TestAdminCallsReachOfficialConsumer(t *testing.T) {
	const (
		topic  = "AdminCallTopic"
		group  = "cg-admin-calls"
		queues = 2
		n      = 10
	)
	c := testutil.StartCluster(t)
	raw := newRaw(t, c.BrokerAddr)
	createTopic(t, c, topic, queues)
	p := newProducer(t, c, "pg-admin-calls")
	sent := bodies("reset-", n)
	results := sendN(t, p, topic, n, 2, func(i int) string { return sent[i] })
	rec := newRecorder()
	started := time.Now() // the consumer's offset persists are timed from its start
	newPushConsumer(t, c, group, topic, "*", rec.handler("official"))
	rec.waitAll(t, sent, 30*time.Second, "first reading")
	raw.waitCommitted(group, topic, queues)
	for _, b := range sent {
		require.Equal(t, 1, rec.count(b), "%s read once before the reset", b)
	}
	var clientID string
	testutil.Eventually(t, 10*time.Second, func() bool {
		ids := raw.consumerIDs(group)
		if len(ids) == 1 {
			clientID = ids[0]
		}
		return clientID != ""
	}, "the consumer is registered")

	// Reset to the earliest offset: the broker stores 0s and tells the consumer, which
	// (after its 10 s pause) reads every message again. Not a wait for a condition: the
	// moment is chosen away from the client's offset persists.
	time.Sleep(time.Until(resetMoment(started, time.Now())))
	watch := watchOffsets(t, raw, group, topic, queues)
	resp := raw.call(protocol.InvokeBrokerToResetOffset, map[string]string{
		"topic": topic, "group": group, "timestamp": "0", "isForce": "true"}, nil)
	require.Equal(t, int16(protocol.Success), resp.Code, resp.Remark)
	table, err := protocol.DecodeResetOffsetBody(resp.Body)
	require.NoError(t, err)
	bname := brokerName(t, c, topic)
	require.Len(t, table.OffsetTable, queues)
	for q := range queues {
		off, ok := table.OffsetTable[protocol.MessageQueue{Topic: topic, BrokerName: bname, QueueID: int32(q)}]
		require.True(t, ok, "queue %d in the answer", q)
		require.Zero(t, off, "queue %d reset to its first message", q)
	}
	// The Go client sleeps 10 s, commits the reset offsets, drops the queues and takes
	// them back at the offsets the broker then answers, so a loaded machine can take a
	// while. On failure the message shows what the broker held meanwhile and where the
	// consumer's queues stand.
	if !testkit.Until(120*time.Second, time.Millisecond, func() bool {
		for _, b := range sent {
			if rec.count(b) < 2 {
				return false
			}
		}
		return true
	}) {
		t.Fatalf("not every message was read again after the reset; the group's offsets on the broker since the reset: %s; the consumer's queues: %s",
			watch, consumerQueues(raw, group, clientID))
	}
	watch.close()
	raw.waitCommitted(group, topic, queues)

	// Consume one message directly: the consumer's handler gets it once more.
	before := rec.count(sent[3])
	resp = raw.call(protocol.ConsumeMessageDirectly, map[string]string{
		"consumerGroup": group, "clientId": clientID, "msgId": results[3].OffsetMsgID}, nil)
	require.Equal(t, int16(protocol.Success), resp.Code, resp.Remark)
	res, err := protocol.DecodeConsumeMessageDirectlyResult(resp.Body)
	require.NoError(t, err)
	require.Equal(t, protocol.CMResultSuccess, res.ConsumeResult)
	require.Equal(t, before+1, rec.count(sent[3]), "the handler got the message")

	// Running info, through the broker.
	for _, jstack := range []bool{false, true} {
		resp = raw.call(protocol.GetConsumerRunningInfo, map[string]string{
			"consumerGroup": group, "clientId": clientID, "jstackEnable": strconv.FormatBool(jstack)}, nil)
		require.Equal(t, int16(protocol.Success), resp.Code, resp.Remark)
		info, err := protocol.DecodeConsumerRunningInfo(resp.Body)
		require.NoError(t, err, "%s", resp.Body)
		var topics []string
		for _, s := range info.SubscriptionSet {
			topics = append(topics, s.Topic)
		}
		require.Contains(t, topics, topic)
		require.Equal(t, "CONSUME_PASSIVELY", info.Properties[protocol.PropConsumeType])
		for q := range queues {
			mq := protocol.MessageQueue{Topic: topic, BrokerName: bname, QueueID: int32(q)}
			require.Contains(t, info.MQTable, mq)
			require.Equal(t, raw.maxOffset(topic, q), info.MQTable[mq].CommitOffset, "queue %d consumed to the end", q)
		}
		require.Equal(t, jstack, strings.Contains(info.Jstack, "goroutine"), "a dump only when asked")
	}

	// A client that is not there.
	resp = raw.call(protocol.GetConsumerRunningInfo, map[string]string{"consumerGroup": group, "clientId": "10.9.9.9@nobody"}, nil)
	require.Equal(t, int16(protocol.ConsumerNotOnline), resp.Code)
	resp = raw.call(protocol.ConsumeMessageDirectly, map[string]string{
		"consumerGroup": group, "clientId": "10.9.9.9@nobody", "msgId": results[0].OffsetMsgID}, nil)
	require.Equal(t, int16(protocol.ConsumerNotOnline), resp.Code)
}

// Offset persistence of the official Go client (v2, as pinned in go.mod): rmqClient.Start
// schedules a commit of every queue's offset 10 s after the client starts, then every 5 s
// (internal/client.go, "schedule persist offset"), each a oneway UPDATE_CONSUMER_OFFSET.
// pushConsumer.ResetOffset (consumer/push_consumer.go) drops the queues, sleeps 10 s,
// then stores the reset offsets and commits them (removeUnnecessaryMessageQueue), also
// oneway, and resume's rebalance takes the queues back at what QUERY_CONSUMER_OFFSET
// answers (computePullFromWhereWithException). The periodic commits go on during the
// pause, with the old offsets.
const (
	goClientFirstPersist = 10 * time.Second
	goClientPersistEvery = 5 * time.Second
)

// resetMoment is the first moment not before now that lies half a persist period after
// one of the persists of a Go consumer started at started, and after its first one. The
// client's reset pause is two periods, so a reset sent then is committed by the client
// 2.5 s away from its periodic commits: only a worker stalled that long could apply them
// out of order.
func resetMoment(started, now time.Time) time.Time {
	at := started.Add(goClientFirstPersist + goClientPersistEvery/2)
	for at.Before(now) {
		at = at.Add(goClientPersistEvery)
	}
	return at
}

// offsetWatch records every change of a group's committed offsets on the broker, polled
// with QUERY_CONSUMER_OFFSET every millisecond, with the time since the watch started:
// the trace of who overwrote what around a reset.
type offsetWatch struct {
	start time.Time
	stop  chan struct{}
	done  chan struct{}
	once  sync.Once
	mu    sync.Mutex
	log   []string
}

// watchOffsets starts watching group's offsets of the queues of topic; the watch stops at
// close or at the test's cleanup.
func watchOffsets(t *testing.T, raw *rawClient, group, topic string, queues int) *offsetWatch {
	w := &offsetWatch{start: time.Now(), stop: make(chan struct{}), done: make(chan struct{})}
	go w.run(raw, group, topic, queues)
	t.Cleanup(w.close)
	return w
}

func (w *offsetWatch) run(raw *rawClient, group, topic string, queues int) {
	defer close(w.done)
	last := make([]string, queues)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		for q := range queues {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			resp, err := raw.cli.Invoke(ctx, raw.addr, remoting.NewRequest(int16(protocol.QueryConsumerOffset), map[string]string{
				"consumerGroup": group, "topic": topic, "queueId": strconv.Itoa(q), "setZeroIfNotFound": "false"}))
			cancel()
			if err != nil {
				continue
			}
			v := "none"
			if resp.Code == int16(protocol.Success) {
				v = resp.Ext("offset")
			}
			if v != last[q] {
				last[q] = v
				w.mu.Lock()
				w.log = append(w.log, fmt.Sprintf("+%v q%d=%s", time.Since(w.start).Round(time.Millisecond), q, v))
				w.mu.Unlock()
			}
		}
		select {
		case <-w.stop:
			return
		case <-tick.C:
		}
	}
}

// close stops the watch and waits for it; it is idempotent.
func (w *offsetWatch) close() {
	w.once.Do(func() { close(w.stop) })
	<-w.done
}

// String lists the changes seen.
func (w *offsetWatch) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.log, ", ")
}

// consumerQueues asks a consumer, through the broker, for its queues and their offsets
// (GET_CONSUMER_RUNNING_INFO), for a failure message.
func consumerQueues(raw *rawClient, group, clientID string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := raw.cli.Invoke(ctx, raw.addr, remoting.NewRequest(int16(protocol.GetConsumerRunningInfo), map[string]string{
		"consumerGroup": group, "clientId": clientID, "jstackEnable": "false"}))
	if err != nil {
		return err.Error()
	}
	info, err := protocol.DecodeConsumerRunningInfo(resp.Body)
	if err != nil {
		return fmt.Sprintf("code %d %s: %v", resp.Code, resp.Remark, err)
	}
	var out []string
	for mq, pq := range info.MQTable {
		out = append(out, fmt.Sprintf("%s/%d commit %d cached %d dropped %v", mq.Topic, mq.QueueID, pq.CommitOffset, pq.CachedMsgCount, pq.Dropped))
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}
