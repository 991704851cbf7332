package interop

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/testutil"
)

// sent is one message the official producer sent, with what the broker answered.
type sent struct {
	body, key, tag string
	uniq           string // SendResult.MsgID (the UNIQ_KEY), "" for batch items and oneway
	offsetID       string // the offset message id, "" for oneway
	queue          int
	queueOffset    int64
}

// TestSendModes sends sync, async, oneway and batch messages to an auto-created topic and
// to topics created by the official admin client and by a raw UPDATE_AND_CREATE_TOPIC, and
// resolves every one by offset id (VIEW_MESSAGE_BY_ID), by key and by UNIQ_KEY
// (QUERY_MESSAGE).
func TestSendModes(t *testing.T) {
	c := testutil.StartCluster(t)
	raw := newRaw(t, c.BrokerAddr)

	createTopic(t, c, "SendAdminTopic", 4)
	resp := raw.call(protocol.UpdateAndCreateTopic, map[string]string{
		"topic": "SendRawTopic", "defaultTopic": "TBW102", "readQueueNums": "3", "writeQueueNums": "3",
		"perm": "6", "topicFilterType": "SINGLE_TAG", "order": "false",
	}, nil)
	require.Equal(t, int16(protocol.Success), resp.Code, resp.Remark)
	route, ok := c.NameServer.Table().TopicRoute("SendRawTopic")
	require.True(t, ok, "route published before UPDATE_AND_CREATE_TOPIC returned")
	require.EqualValues(t, 3, route.QueueDatas[0].WriteQueueNums)

	// Updating the topic replaces its queue counts and republishes the route at once.
	resp = raw.call(protocol.UpdateAndCreateTopic, map[string]string{
		"topic": "SendRawTopic", "defaultTopic": "TBW102", "readQueueNums": "5", "writeQueueNums": "5",
		"perm": "6", "topicFilterType": "SINGLE_TAG", "order": "false",
	}, nil)
	require.Equal(t, int16(protocol.Success), resp.Code, resp.Remark)
	route, _ = c.NameServer.Table().TopicRoute("SendRawTopic")
	require.EqualValues(t, 5, route.QueueDatas[0].WriteQueueNums)

	p := newProducer(t, c, "pg-send")
	for _, topic := range []string{"SendAutoTopic", "SendAdminTopic", "SendRawTopic"} {
		msgs := sendAllModes(t, p, topic)
		want := map[string]int{"SendAutoTopic": 4, "SendAdminTopic": 4, "SendRawTopic": 5}[topic]
		route, ok := c.NameServer.Table().TopicRoute(topic)
		require.True(t, ok, "route of %s", topic)
		require.EqualValues(t, want, route.QueueDatas[0].WriteQueueNums, "queues of %s", topic)

		// Every message is stored exactly once: the queues hold exactly what was sent
		// (oneway sends have no result, so wait for them first).
		stored := func() int64 {
			var total int64
			for q := range want {
				total += raw.maxOffset(topic, q)
			}
			return total
		}
		testutil.Eventually(t, 10*time.Second, func() bool { return stored() >= int64(len(msgs)) }, "oneway sends stored")
		require.EqualValues(t, len(msgs), stored(), "messages stored in %s", topic)

		for _, m := range msgs {
			checkResolvable(t, raw, topic, m)
		}
		// A key shared by the ten messages of one mode finds all ten.
		for _, mode := range []string{"sync", "async", "oneway", "batch"} {
			code, recs := raw.queryByKey(topic, "shared-"+mode, false)
			require.Equal(t, protocol.Success, code)
			got := map[string]bool{}
			for _, r := range recs {
				got[string(r.Body)] = true
			}
			require.Len(t, got, 10, "distinct messages with key shared-%s in %s", mode, topic)
		}
	}
}

// sendAllModes sends 10 sync, 10 async, 10 oneway messages and a batch of 10 to topic.
func sendAllModes(t *testing.T, p rocketmq.Producer, topic string) []sent {
	t.Helper()
	newMsg := func(mode string, i int) (*primitive.Message, sent) {
		s := sent{body: fmt.Sprintf("%s-%s-%d", topic, mode, i), key: fmt.Sprintf("key-%s-%s-%d", topic, mode, i), tag: "Tag" + mode}
		m := primitive.NewMessage(topic, []byte(s.body))
		m.WithTag(s.tag)
		m.WithKeys([]string{s.key, "shared-" + mode})
		return m, s
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out []sent
	fromResult := func(s sent, res *primitive.SendResult) sent {
		require.Equal(t, primitive.SendOK, res.Status)
		s.uniq, s.offsetID, s.queue, s.queueOffset = res.MsgID, res.OffsetMsgID, res.MessageQueue.QueueId, res.QueueOffset
		require.NotEmpty(t, s.uniq)
		require.Len(t, s.offsetID, message.OffsetMsgIDLenV4)
		return s
	}

	for i := range 10 {
		m, s := newMsg("sync", i)
		res, err := p.SendSync(ctx, m)
		require.NoError(t, err)
		out = append(out, fromResult(s, res))
	}

	var mu sync.Mutex
	var wg sync.WaitGroup
	var asyncErrs []error
	for i := range 10 {
		m, s := newMsg("async", i)
		wg.Add(1)
		require.NoError(t, p.SendAsync(ctx, func(_ context.Context, res *primitive.SendResult, err error) {
			defer wg.Done()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				asyncErrs = append(asyncErrs, err)
				return
			}
			out = append(out, fromResult(s, res))
		}, m))
	}
	waitGroup(t, &wg, 30*time.Second, "async send callbacks")
	require.Empty(t, asyncErrs)

	for i := range 10 {
		m, s := newMsg("oneway", i)
		require.NoError(t, p.SendOneWay(ctx, m))
		out = append(out, s)
	}

	var batch []*primitive.Message
	var items []sent
	for i := range 10 {
		m, s := newMsg("batch", i)
		batch = append(batch, m)
		items = append(items, s)
	}
	res, err := p.SendSync(ctx, batch...)
	require.NoError(t, err)
	require.Equal(t, primitive.SendOK, res.Status)
	ids := strings.Split(res.OffsetMsgID, ",")
	require.Len(t, ids, len(items), "one offset id per batch item")
	for i := range items {
		items[i].offsetID, items[i].queue, items[i].queueOffset = ids[i], res.MessageQueue.QueueId, res.QueueOffset+int64(i)
	}
	return append(out, items...)
}

// checkResolvable resolves one sent message by offset id, key and UNIQ_KEY.
func checkResolvable(t *testing.T, raw *rawClient, topic string, m sent) {
	t.Helper()
	check := func(rec message.Record, how string) {
		t.Helper()
		require.Equal(t, m.body, string(rec.Body), "%s: body", how)
		require.Equal(t, topic, string(rec.Topic), "%s: topic", how)
		require.Equal(t, m.tag, prop(rec, message.PropertyTags), "%s: tag", how)
		if m.offsetID != "" {
			require.EqualValues(t, m.queue, rec.QueueID, "%s: queue", how)
			require.Equal(t, m.queueOffset, rec.QueueOffset, "%s: queue offset", how)
			require.Equal(t, m.offsetID, rec.OffsetMsgID(), "%s: offset id", how)
		}
		if m.uniq != "" {
			require.Equal(t, m.uniq, prop(rec, message.PropertyUniqKey), "%s: UNIQ_KEY", how)
		}
	}
	if m.offsetID != "" {
		check(raw.viewByOffsetID(m.offsetID), "VIEW_MESSAGE_BY_ID "+m.offsetID)
	}
	byKey := raw.queryOne(topic, m.key, false)
	check(byKey, "QUERY_MESSAGE key "+m.key)
	// Oneway and batch items have no client UNIQ_KEY in the result: use the one the
	// record carries (the broker adds one when the client did not).
	uniq := m.uniq
	if uniq == "" {
		uniq = prop(byKey, message.PropertyUniqKey)
		require.NotEmpty(t, uniq, "stored record of %s has a UNIQ_KEY", m.body)
	}
	check(raw.queryOne(topic, uniq, true), "QUERY_MESSAGE uniq "+uniq)
	// A key that was never sent is not found, nor is a key outside the time window.
	code, recs := raw.queryByKey(topic, m.key+"-missing", false)
	require.Equal(t, protocol.QueryNotFound, code)
	require.Empty(t, recs)
	past := time.Now().Add(-24 * time.Hour).UnixMilli()
	resp := raw.call(protocol.QueryMessage, map[string]string{"topic": topic, "key": m.key, "maxNum": "32",
		"beginTimestamp": strconv.FormatInt(past, 10), "endTimestamp": strconv.FormatInt(past+1000, 10)}, nil)
	require.Equal(t, int16(protocol.QueryNotFound), resp.Code, "key %s outside the window", m.key)
}

// waitGroup waits for wg with a bound.
func waitGroup(t *testing.T, wg *sync.WaitGroup, timeout time.Duration, what string) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(timeout):
		t.Fatalf("timed out after %v waiting for %s", timeout, what)
	}
}
