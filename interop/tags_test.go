package interop

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/testutil"
)

// tagOf is the tag of tagged message i ("" = no tag). "Aa" and "BB" have the same Java
// hash code, so only an exact string check tells them apart.
var tagCycle = []string{"TagA", "TagB", "TagC", "标签", "", "TagAB", "Aa", "BB", "标签2"}

func tagOf(i int) string { return tagCycle[i%len(tagCycle)] }

// TestTagSubscriptions checks that TAG subscriptions, including a non-ASCII tag and tags
// with colliding hash codes, deliver exactly the matching messages, through push
// consumers (subscription from the heartbeat) and a lite pull consumer (subscription in
// each pull).
func TestTagSubscriptions(t *testing.T) {
	const topic, queues, n = "TagTopic", 4, 450
	c := testutil.StartCluster(t)
	raw := newRaw(t, c.BrokerAddr)
	createTopic(t, c, topic, queues)
	p := newProducer(t, c, "pg-tags")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := range n {
		msg := primitive.NewMessage(topic, []byte(fmt.Sprintf("tag-%d-%s", i, tagOf(i))))
		if tag := tagOf(i); tag != "" {
			msg.WithTag(tag)
		}
		res, err := p.SendSync(ctx, msg)
		require.NoError(t, err)
		require.Equal(t, primitive.SendOK, res.Status)
	}
	expect := func(tags ...string) []string {
		var out []string
		for i := range n {
			for _, tag := range tags {
				if tagOf(i) == tag {
					out = append(out, fmt.Sprintf("tag-%d-%s", i, tag))
				}
			}
		}
		return out
	}

	cases := []struct {
		group, expr string
		want        []string
		pull        bool
	}{
		{"cg-tag-ab", "TagA || TagB", expect("TagA", "TagB"), false},
		{"cg-tag-cn", "标签", expect("标签"), false},
		{"cg-tag-aa", "Aa", expect("Aa"), false},
		{"cg-tag-all", "*", expect(tagCycle...), false},
		{"cg-tag-pull", "标签 || TagC || BB", expect("标签", "TagC", "BB"), true},
	}
	recs := make([]*recorder, len(cases))
	for i, tc := range cases {
		recs[i] = newRecorder()
		if tc.pull {
			startPoller(t, c, tc.group, topic, tc.expr, recs[i].handler("pull"))
			continue
		}
		pc := newPushConsumer(t, c, tc.group, topic, tc.expr, recs[i].handler("push"))
		defer pc.Shutdown()
	}
	// The broker itself filters by tag: a raw pull with a subscription returns only the
	// matching records (by hash code: "Aa" and "BB" collide, the client tells them apart).
	for _, sub := range []struct {
		expr    string
		allowed []string
		want    int
	}{
		{"标签", []string{"标签"}, len(expect("标签"))},
		{"TagA || TagB", []string{"TagA", "TagB"}, len(expect("TagA", "TagB"))},
		{"Aa", []string{"Aa", "BB"}, len(expect("Aa", "BB"))},
	} {
		got := 0
		for q := range queues {
			for _, r := range raw.pullAll(topic, q, sub.expr) {
				require.Contains(t, sub.allowed, prop(r, message.PropertyTags), "raw pull of %q returned %s", sub.expr, r.Body)
				got++
			}
		}
		require.Equal(t, sub.want, got, "records pulled with %q", sub.expr)
	}

	for i, tc := range cases {
		recs[i].waitAll(t, tc.want, 60*time.Second, "messages matching "+tc.expr)
		// Once the group has committed the whole topic, every delivery has happened.
		raw.waitCommitted(tc.group, topic, queues)
		got, _ := recs[i].since(0)
		checkExactlyOnce(t, got, tc.want, nil)
	}
}

// startPoller starts a lite pull consumer (Subscribe + Poll + ACK) feeding h until the
// test ends, then persists its offsets and shuts it down.
func startPoller(t *testing.T, c *testutil.Cluster, group, topic, expr string,
	h func(context.Context, ...*primitive.MessageExt) (consumer.ConsumeResult, error), opts ...consumer.Option,
) rocketmq.PullConsumer {
	t.Helper()
	pc, err := rocketmq.NewPullConsumer(append([]consumer.Option{
		consumer.WithNsResolver(primitive.NewPassthroughResolver([]string{c.NamesrvAddr})),
		consumer.WithGroupName(group),
		consumer.WithInstance(instance("lp")),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
	}, opts...)...)
	require.NoError(t, err)
	require.NoError(t, pc.Subscribe(topic, consumer.MessageSelector{Type: consumer.TAG, Expression: expr}))
	require.NoError(t, pc.Start())
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			cr, err := pc.Poll(ctx, time.Second)
			if err != nil {
				if !consumer.IsNoNewMsgError(err) && !errors.Is(err, context.Canceled) {
					t.Errorf("poll: %v", err)
					return
				}
				// Commit what was acknowledged so the broker sees progress.
				_ = pc.PersistOffset(context.Background(), topic)
				continue
			}
			res, _ := h(ctx, cr.GetMsgList()...)
			pc.ACK(ctx, cr, res)
		}
	}()
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		_ = pc.Shutdown()
	})
	return pc
}

// pullAll reads a whole queue with raw PULL_MESSAGE requests carrying the subscription
// expr (sysFlag 0x4, no suspension) and returns the records.
func (r *rawClient) pullAll(topic string, q int, expr string) []message.Record {
	r.t.Helper()
	var out []message.Record
	maxOff := r.maxOffset(topic, q)
	for off := int64(0); off < maxOff; {
		resp := r.call(protocol.PullMessage, map[string]string{
			"consumerGroup": "raw-puller", "topic": topic, "queueId": strconv.Itoa(q),
			"queueOffset": strconv.FormatInt(off, 10), "maxMsgNums": "32", "sysFlag": "4", "commitOffset": "0",
			"suspendTimeoutMillis": "0", "subscription": expr, "subVersion": "0", "expressionType": "TAG",
		}, nil)
		code := protocol.ResponseCode(resp.Code)
		require.Contains(r.t, []protocol.ResponseCode{protocol.Success, protocol.PullRetryImmediately}, code, "pull %s/%d@%d: %s", topic, q, off, resp.Remark)
		next, err := strconv.ParseInt(resp.Ext("nextBeginOffset"), 10, 64)
		require.NoError(r.t, err)
		require.Greater(r.t, next, off, "pull makes progress")
		for _, rec := range decodeRecords(r.t, resp.Body) {
			require.GreaterOrEqual(r.t, rec.QueueOffset, off)
			require.Less(r.t, rec.QueueOffset, next)
			require.EqualValues(r.t, q, rec.QueueID)
			out = append(out, rec)
		}
		off = next
	}
	return out
}
