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
	"github.com/apache/rocketmq-client-go/v2/admin"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
	"github.com/ferrymq/ferry/testutil"
)

// rawClient sends requests the official Go client never sends, with Ferry's own remoting
// client, to one server address.
type rawClient struct {
	t    *testing.T
	cli  *remoting.Client
	addr string
}

// newRaw returns a remoting client for addr, closed at cleanup.
func newRaw(t *testing.T, addr string) *rawClient {
	t.Helper()
	opts := remoting.DefaultClientOptions()
	opts.RequestTimeout = 10 * time.Second
	cli, err := remoting.NewClient(opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cli.Close() })
	return &rawClient{t: t, cli: cli, addr: addr}
}

// call sends one request and fails the test on a transport error.
func (r *rawClient) call(code protocol.RequestCode, ext map[string]string, body []byte) *remoting.Command {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := remoting.NewRequest(int16(code), ext)
	req.Body = body
	resp, err := r.cli.Invoke(ctx, r.addr, req)
	require.NoError(r.t, err, "request %d", code)
	return resp
}

// viewByOffsetID resolves an offset message id with VIEW_MESSAGE_BY_ID: it checks that the
// id names this broker and returns the decoded record.
func (r *rawClient) viewByOffsetID(id string) message.Record {
	r.t.Helper()
	host, off, err := message.DecodeOffsetMsgID(id)
	require.NoError(r.t, err, "offset msg id %q", id)
	require.Equal(r.t, r.addr, host.String(), "store host in offset msg id %s", id)
	resp := r.call(protocol.ViewMessageByID, map[string]string{"offset": strconv.FormatInt(off, 10)}, nil)
	require.Equal(r.t, int16(protocol.Success), resp.Code, "VIEW_MESSAGE_BY_ID %s: %s", id, resp.Remark)
	rec, n, err := message.DecodeRecord(resp.Body)
	require.NoError(r.t, err)
	require.Equal(r.t, len(resp.Body), n, "body is exactly one record")
	require.Equal(r.t, off, rec.PhysicalOffset)
	return rec
}

// queryByKey runs QUERY_MESSAGE for topic#key over the last hour (uniq marks a UNIQ_KEY
// lookup) and returns the response code and the decoded records.
func (r *rawClient) queryByKey(topic, key string, uniq bool) (protocol.ResponseCode, []message.Record) {
	r.t.Helper()
	now := time.Now()
	ext := map[string]string{
		"topic":          topic,
		"key":            key,
		"maxNum":         "32",
		"beginTimestamp": strconv.FormatInt(now.Add(-time.Hour).UnixMilli(), 10),
		"endTimestamp":   strconv.FormatInt(now.Add(time.Hour).UnixMilli(), 10),
	}
	if uniq {
		ext["_UNIQUE_KEY_QUERY"] = "true"
	}
	resp := r.call(protocol.QueryMessage, ext, nil)
	return protocol.ResponseCode(resp.Code), decodeRecords(r.t, resp.Body)
}

// queryOne waits until QUERY_MESSAGE finds exactly one record for key (the index is
// written asynchronously) and returns it.
func (r *rawClient) queryOne(topic, key string, uniq bool) message.Record {
	r.t.Helper()
	var recs []message.Record
	testutil.Eventually(r.t, 10*time.Second, func() bool {
		var code protocol.ResponseCode
		code, recs = r.queryByKey(topic, key, uniq)
		return code == protocol.Success && len(recs) > 0
	}, fmt.Sprintf("QUERY_MESSAGE finds %s#%s (uniq=%v)", topic, key, uniq))
	require.Len(r.t, recs, 1, "exactly one record for %s#%s", topic, key)
	return recs[0]
}

// offsetQuery sends one of the queue offset requests and returns the code and ext offset.
func (r *rawClient) offsetQuery(code protocol.RequestCode, ext map[string]string) (protocol.ResponseCode, int64) {
	r.t.Helper()
	resp := r.call(code, ext, nil)
	off := int64(-1)
	if v, ok := resp.ExtFields.Get("offset"); ok {
		var err error
		off, err = strconv.ParseInt(v, 10, 64)
		require.NoError(r.t, err)
	}
	return protocol.ResponseCode(resp.Code), off
}

// maxOffset is GET_MAX_OFFSET of a queue.
func (r *rawClient) maxOffset(topic string, q int) int64 {
	r.t.Helper()
	code, off := r.offsetQuery(protocol.GetMaxOffset, map[string]string{"topic": topic, "queueId": strconv.Itoa(q)})
	require.Equal(r.t, protocol.Success, code)
	return off
}

// minOffset is GET_MIN_OFFSET of a queue.
func (r *rawClient) minOffset(topic string, q int) int64 {
	r.t.Helper()
	code, off := r.offsetQuery(protocol.GetMinOffset, map[string]string{"topic": topic, "queueId": strconv.Itoa(q)})
	require.Equal(r.t, protocol.Success, code)
	return off
}

// consumerOffset is QUERY_CONSUMER_OFFSET of a group on a queue; ok is false on
// QUERY_NOT_FOUND. Java clients send setZeroIfNotFound=false to see what is really stored.
func (r *rawClient) consumerOffset(group, topic string, q int) (int64, bool) {
	r.t.Helper()
	code, off := r.offsetQuery(protocol.QueryConsumerOffset, map[string]string{
		"consumerGroup": group, "topic": topic, "queueId": strconv.Itoa(q), "setZeroIfNotFound": "false",
	})
	if code == protocol.QueryNotFound {
		return 0, false
	}
	require.Equal(r.t, protocol.Success, code)
	return off, true
}

// waitCommitted waits until the broker holds, for every queue of topic, a committed offset
// of group equal to the queue's max offset: everything was consumed and the commit (the
// client persists every 5 s) has arrived.
func (r *rawClient) waitCommitted(group, topic string, queues int) {
	r.t.Helper()
	testutil.Eventually(r.t, 60*time.Second, func() bool {
		for q := range queues {
			off, ok := r.consumerOffset(group, topic, q)
			if maxOff := r.maxOffset(topic, q); maxOff > 0 && (!ok || off != maxOff) {
				return false
			}
		}
		return true
	}, fmt.Sprintf("group %s committed all of %s", group, topic))
}

// decodeRecords decodes records laid end to end.
func decodeRecords(t *testing.T, body []byte) []message.Record {
	t.Helper()
	var out []message.Record
	for len(body) > 0 {
		rec, n, err := message.DecodeRecord(body)
		require.NoError(t, err)
		out = append(out, rec)
		body = body[n:]
	}
	return out
}

// prop returns a record property ("" when absent).
func prop(rec message.Record, key string) string {
	v, _ := rec.Property(key)
	return string(v)
}

// newAdmin returns an official admin client, closed at cleanup.
func newAdmin(t *testing.T, c *testutil.Cluster) admin.Admin {
	t.Helper()
	a, err := admin.NewAdmin(admin.WithResolver(primitive.NewPassthroughResolver([]string{c.NamesrvAddr})))
	require.NoError(t, err)
	t.Cleanup(func() { _ = a.Close() })
	return a
}

// createTopic creates a topic with queues read and write queues through the official admin
// client and checks that the route is published before the call returns.
func createTopic(t *testing.T, c *testutil.Cluster, topic string, queues int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, newAdmin(t, c).CreateTopic(ctx, admin.WithTopicCreate(topic), admin.WithBrokerAddrCreate(c.BrokerAddr),
		admin.WithReadQueueNums(queues), admin.WithWriteQueueNums(queues)))
	route, ok := c.NameServer.Table().TopicRoute(topic)
	require.True(t, ok, "route of %s published before CREATE_TOPIC returned", topic)
	require.Len(t, route.QueueDatas, 1)
	require.EqualValues(t, queues, route.QueueDatas[0].WriteQueueNums)
	require.EqualValues(t, queues, route.QueueDatas[0].ReadQueueNums)
}

// sendN sends n messages body(i) to topic with SendSync from workers goroutines and
// returns their send results indexed by i.
func sendN(t *testing.T, p rocketmq.Producer, topic string, n, workers int, body func(int) string) []*primitive.SendResult {
	t.Helper()
	out := make([]*primitive.SendResult, n)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += workers {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				res, err := p.SendSync(ctx, primitive.NewMessage(topic, []byte(body(i))))
				cancel()
				if err == nil && res.Status != primitive.SendOK {
					err = fmt.Errorf("status %v", res.Status)
				}
				if err != nil {
					errs <- fmt.Errorf("send %d: %w", i, err)
					return
				}
				out[i] = res
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	return out
}

// delivery is one message handed to a consumer.
type delivery struct {
	consumer string
	body     string
	queue    int
	offset   int64
}

// recorder collects deliveries from several consumers of one group.
type recorder struct {
	mu   sync.Mutex
	all  []delivery
	seen map[string]int // body → deliveries
}

func newRecorder() *recorder { return &recorder{seen: map[string]int{}} }

// handler returns a consume function that records deliveries under name.
func (r *recorder) handler(name string) func(context.Context, ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
	return func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, m := range msgs {
			q := -1
			if m.Queue != nil {
				q = m.Queue.QueueId
			}
			r.all = append(r.all, delivery{consumer: name, body: string(m.Body), queue: q, offset: m.QueueOffset})
			r.seen[string(m.Body)]++
		}
		return consumer.ConsumeSuccess, nil
	}
}

// count returns how many times body was delivered.
func (r *recorder) count(body string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seen[body]
}

// since returns the deliveries recorded from index i on, and the current length.
func (r *recorder) since(i int) ([]delivery, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]delivery(nil), r.all[i:]...), len(r.all)
}

// distinct counts how many of the bodies have been delivered at least once.
func (r *recorder) distinct(bodies []string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, b := range bodies {
		if r.seen[b] > 0 {
			n++
		}
	}
	return n
}

// waitAll waits until every body has been delivered at least once.
func (r *recorder) waitAll(t *testing.T, bodies []string, timeout time.Duration, what string) {
	t.Helper()
	testutil.Eventually(t, timeout, func() bool { return r.distinct(bodies) == len(bodies) }, what)
}

// bodies returns prefix-0 … prefix-(n-1).
func bodies(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = prefix + strconv.Itoa(i)
	}
	return out
}

// brokerName returns the name of the broker hosting topic.
func brokerName(t *testing.T, c *testutil.Cluster, topic string) string {
	t.Helper()
	route, ok := c.NameServer.Table().TopicRoute(topic)
	require.True(t, ok, "route of %s", topic)
	return route.BrokerDatas[0].BrokerName
}

// newManualProducer starts a producer that sends to the queue named in each message.
func newManualProducer(t *testing.T, c *testutil.Cluster, group string) rocketmq.Producer {
	t.Helper()
	return newProducer(t, c, group, producer.WithQueueSelector(producer.NewManualQueueSelector()))
}

// waitStableAssignment sends probe rounds (one message per queue) until two rounds in a
// row were each consumed exactly once, by the same owner per queue, with every consumer in
// names owning at least one queue: the group's rebalance has settled. It returns the
// owner of each queue.
func waitStableAssignment(t *testing.T, c *testutil.Cluster, p rocketmq.Producer, rec *recorder, topic string, queues int, names []string) map[int]string {
	t.Helper()
	bname := brokerName(t, c, topic)
	var last map[int]string
	stable := 0
	for round := 0; round < 30 && stable < 2; round++ {
		probes := make([]string, queues)
		for q := range queues {
			probes[q] = fmt.Sprintf("probe-%s-%d-%d", topic, round, q)
			msg := primitive.NewMessage(topic, []byte(probes[q]))
			msg.Queue = &primitive.MessageQueue{Topic: topic, BrokerName: bname, QueueId: q}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_, err := p.SendSync(ctx, msg)
			cancel()
			require.NoError(t, err)
		}
		rec.waitAll(t, probes, 60*time.Second, "probe round consumed")
		owners := map[int]string{}
		ok := true
		rec.mu.Lock()
		for _, d := range rec.all {
			if !strings.HasPrefix(d.body, fmt.Sprintf("probe-%s-%d-", topic, round)) {
				continue
			}
			if _, dup := owners[d.queue]; dup {
				ok = false
			}
			owners[d.queue] = d.consumer
		}
		rec.mu.Unlock()
		got := map[string]bool{}
		for _, o := range owners {
			got[o] = true
		}
		for _, n := range names {
			ok = ok && got[n]
		}
		ok = ok && len(owners) == queues && len(got) == len(names)
		if ok && fmt.Sprint(owners) == fmt.Sprint(last) {
			stable++
		} else if ok {
			stable = 1
		} else {
			stable = 0
		}
		last = owners
	}
	require.Equal(t, 2, stable, "assignment of %s to %v settled (last %v)", topic, names, last)
	return last
}
