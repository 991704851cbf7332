package interop

import (
	"fmt"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/testutil"
)

// TestRetryAndDeadLetter runs a concurrent push consumer with maxReconsumeTimes 3 that
// answers ConsumeRetryLater, every time, for 1% of 3,000 messages (chosen by key). Each
// failing message must be delivered exactly 1 + 3 times, with reconsume times 0..3, each
// redelivery n no earlier than the delay of level 2 + n (the broker's 3 + reconsume
// times, with shortLevels: 300, 400, 500 ms) after the failed attempt returned; then it
// must be in %DLQ%<group> exactly once, with its origin. Every other message is delivered
// exactly once.
func TestRetryAndDeadLetter(t *testing.T) {
	const (
		topic   = "RetryTopic"
		group   = "cg-retry"
		queues  = 4
		total   = 3000
		maxRe   = 3
		failMod = 100
	)
	c := testutil.StartCluster(t, withShortLevels())
	raw := newRaw(t, c.BrokerAddr)
	createTopic(t, c, topic, queues)
	p := newProducer(t, c, "pg-retry")

	body := func(i int) string { return fmt.Sprintf("retry-%d", i) }
	key := func(i int) string { return fmt.Sprintf("key-%d", i) }
	failing := map[string]bool{}
	var good, bad []string
	for i := range total {
		if i%failMod == 42 {
			failing[key(i)] = true
			bad = append(bad, body(i))
		} else {
			good = append(good, body(i))
		}
	}
	rec := newExtRecorder()
	decide := func(m *primitive.MessageExt) consumer.ConsumeResult {
		if failing[m.GetKeys()] {
			return consumer.ConsumeRetryLater
		}
		return consumer.ConsumeSuccess
	}
	prepareRetryTopic(t, raw, c, group, topic)
	pc := newPushConsumer(t, c, group, topic, "*", rec.handler("c", decide), consumer.WithMaxReconsumeTimes(maxRe))
	defer pc.Shutdown()

	start := time.Now()
	sendMsgs(t, p, 0, total, 8, func(i int) *primitive.Message {
		return primitive.NewMessage(topic, []byte(body(i))).WithKeys([]string{key(i)})
	})
	dlq := protocol.DLQTopic(group)
	dlqCount := func() int64 {
		code, off := raw.offsetQuery(protocol.GetMaxOffset, map[string]string{"topic": dlq, "queueId": "0"})
		if code != protocol.Success {
			return 0
		}
		return off
	}
	testutil.Eventually(t, 60*time.Second, func() bool {
		return rec.countAtLeast(good, 1) == len(good) && rec.countAtLeast(bad, 1+maxRe) == len(bad) &&
			dlqCount() >= int64(len(bad))
	}, "good messages consumed, failing ones retried and dead-lettered")
	t.Logf("all consumed and %d dead-lettered in %v", len(bad), time.Since(start))
	// Everything consumed is committed, so nothing is still on its way back.
	raw.waitCommitted(group, topic, queues)
	raw.waitCommitted(group, protocol.RetryTopic(group), 1)

	for _, b := range good {
		ds := rec.of(b)
		require.Len(t, ds, 1, "%s delivered once", b)
		require.Zero(t, ds[0].reconsume, "%s reconsume times", b)
	}
	gaps := make([][]time.Duration, maxRe+1)
	for _, b := range bad {
		ds := rec.of(b)
		require.Len(t, ds, 1+maxRe, "%s delivered 1 + maxReconsumeTimes times", b)
		for n, d := range ds {
			require.EqualValues(t, n, d.reconsume, "%s delivery %d reconsume times", b, n)
			require.Equal(t, topic, d.topic, "%s delivery %d topic (restored from RETRY_TOPIC)", b, n)
			require.Empty(t, d.sched, "%s delivery %d keeps no DELAY", b, n)
			if n == 0 {
				continue
			}
			// The broker decides in whole ms (store times are ms), hence the 1 ms.
			prev, wait := ds[n-1].done, levelDelay(2+n)
			require.GreaterOrEqual(t, d.at.Sub(prev), wait-time.Millisecond, "%s redelivery %d came %v after the failure, before level %d's %v",
				b, n, d.at.Sub(prev), 2+n, wait)
			require.GreaterOrEqual(t, d.store, prev.UnixMilli()+wait.Milliseconds(), "%s redelivery %d stored before its level delay", b, n)
			gaps[n] = append(gaps[n], d.at.Sub(prev))
		}
	}
	for n := 1; n <= maxRe; n++ {
		ps := percentiles(gaps[n], 0, 50, 100)
		t.Logf("redelivery %d (level %d, %v): gap after the failure min %v p50 %v max %v", n, 2+n, levelDelay(2+n), ps[0], ps[1], ps[2])
	}

	// An official consumer of another group reads the DLQ: exactly the failing messages.
	dlqRec := newExtRecorder()
	dc := newPushConsumer(t, c, "cg-retry-dlq-reader", dlq, "*", dlqRec.handler("dlq", nil))
	defer dc.Shutdown()
	testutil.Eventually(t, 60*time.Second, func() bool { return dlqRec.countAtLeast(bad, 1) == len(bad) }, "DLQ consumed")
	require.Len(t, dlqRec.snapshot(), len(bad), "DLQ deliveries")

	// Each failing message is in the DLQ exactly once, with its origin.
	recs := raw.pullAll(dlq, 0, "*")
	inDLQ := map[string]message.Record{}
	for _, r := range recs {
		b := string(r.Body)
		_, dup := inDLQ[b]
		require.False(t, dup, "%s dead-lettered twice", b)
		inDLQ[b] = r
	}
	require.Len(t, recs, len(bad), "records in %s", dlq)
	for _, b := range bad {
		r, ok := inDLQ[b]
		require.True(t, ok, "%s in %s", b, dlq)
		first := rec.of(b)[0]
		require.Equal(t, topic, prop(r, message.PropertyRetryTopic), "%s RETRY_TOPIC", b)
		// The Go client sends its MsgId (UNIQ_KEY) as originMsgId; Java's broker would
		// store the offset message id of the first copy instead. Either names it.
		require.Contains(t, []string{first.msgID, first.offsetID}, prop(r, message.PropertyOriginMessageID),
			"%s ORIGIN_MESSAGE_ID names the first delivery", b)
		require.Equal(t, first.key, prop(r, message.PropertyKeys), "%s keeps its keys", b)
		require.EqualValues(t, maxRe+1, r.ReconsumeTimes, "%s reconsume times in the DLQ", b)
		require.Empty(t, prop(r, message.PropertyDelayLevel), "%s DELAY in the DLQ", b)
	}
}
