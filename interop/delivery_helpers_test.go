package interop

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/conf"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/testutil"
)

// Shared by the delivery tests (delay levels, timer messages, retry and DLQ, orderly and
// broadcast consumption).

// shortLevels is an 18-level table of 100 ms steps, so that every level, and the retry
// schedule (level 3 + reconsume times), fits in a test.
var shortLevels = func() string {
	f := make([]string, 18)
	for i := range f {
		f[i] = fmt.Sprintf("%dms", 100*(i+1))
	}
	return strings.Join(f, " ")
}()

// levelDelay is the delay of level n (1-based) in shortLevels.
func levelDelay(n int) time.Duration { return time.Duration(n) * 100 * time.Millisecond }

// withShortLevels configures the broker with shortLevels.
func withShortLevels() testutil.Option {
	return testutil.WithBrokerConfig(func(c *conf.BrokerConfig) { c.DelayLevels = shortLevels })
}

// extDelivery is one message as a consumer saw it.
type extDelivery struct {
	consumer  string
	at        time.Time // when the handler was called
	done      time.Time // when the handler had decided and was about to return
	topic     string
	body      string
	key       string
	msgID     string
	offsetID  string // OffsetMsgId: store host and commit-log offset
	queue     int
	offset    int64
	store     int64 // StoreTimestamp, Unix ms
	born      int64 // BornTimestamp, Unix ms
	reconsume int32
	sched     string // DELAY and timer properties the delivered message still has
}

// extRecorder keeps every delivery in order, with the fields of MessageExt the delivery
// tests check. Its handler returns decide(msg) for each single-message call.
type extRecorder struct {
	mu     sync.Mutex
	all    []extDelivery
	byBody map[string][]int // body → indexes into all
}

func newExtRecorder() *extRecorder { return &extRecorder{byBody: map[string][]int{}} }

// handler returns a consume function recording under name; decide picks the result
// (ConsumeSuccess when nil).
func (r *extRecorder) handler(name string, decide func(*primitive.MessageExt) consumer.ConsumeResult) func(context.Context, ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
	return func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		at := time.Now()
		res := consumer.ConsumeSuccess
		for _, m := range msgs {
			if decide != nil {
				if d := decide(m); d != consumer.ConsumeSuccess {
					res = d
				}
			}
		}
		r.add(name, at, msgs)
		return res, nil
	}
}

// add records msgs as delivered to name at at.
func (r *extRecorder) add(name string, at time.Time, msgs []*primitive.MessageExt) {
	done := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range msgs {
		q := -1
		if m.Queue != nil {
			q = m.Queue.QueueId
		}
		body := string(m.Body)
		var sched []string
		for _, k := range []string{"DELAY", "TIMER_DELIVER_MS", "TIMER_DELAY_SEC", "TIMER_DELAY_MS", "TIMER_OUT_MS"} {
			if v := m.GetProperty(k); v != "" {
				sched = append(sched, k+"="+v)
			}
		}
		r.byBody[body] = append(r.byBody[body], len(r.all))
		r.all = append(r.all, extDelivery{consumer: name, at: at, done: done, topic: m.Topic, body: body, key: m.GetKeys(), msgID: m.MsgId, offsetID: m.OffsetMsgId,
			queue: q, offset: m.QueueOffset, store: m.StoreTimestamp, born: m.BornTimestamp, reconsume: m.ReconsumeTimes,
			sched: strings.Join(sched, ",")})
	}
}

// of returns the deliveries of body in order.
func (r *extRecorder) of(body string) []extDelivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]extDelivery, 0, len(r.byBody[body]))
	for _, i := range r.byBody[body] {
		out = append(out, r.all[i])
	}
	return out
}

// snapshot returns every delivery so far.
func (r *extRecorder) snapshot() []extDelivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.all)
}

// countAtLeast reports how many of bodies were delivered at least n times.
func (r *extRecorder) countAtLeast(bodies []string, n int) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := 0
	for _, b := range bodies {
		if len(r.byBody[b]) >= n {
			k++
		}
	}
	return k
}

// sendMsgs sends build(i) for i in from..to-1 with SendSync from workers goroutines and
// fails the test on an error. Worker w sends the i ≡ w (mod workers), one after another.
func sendMsgs(t *testing.T, p rocketmq.Producer, from, to, workers int, build func(i int) *primitive.Message) []*primitive.SendResult {
	t.Helper()
	out, err := trySendMsgs(p, from, to, workers, build)
	require.NoError(t, err)
	return out
}

// trySendMsgs is sendMsgs for goroutines other than the test's: it returns the first error.
func trySendMsgs(p rocketmq.Producer, from, to, workers int, build func(i int) *primitive.Message) ([]*primitive.SendResult, error) {
	out := make([]*primitive.SendResult, to-from)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := from + w; i < to; i += workers {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				res, err := p.SendSync(ctx, build(i))
				cancel()
				if err == nil && res.Status != primitive.SendOK {
					err = fmt.Errorf("status %v", res.Status)
				}
				if err != nil {
					errs <- fmt.Errorf("send %d: %w", i, err)
					return
				}
				out[i-from] = res
			}
		}()
	}
	wg.Wait()
	close(errs)
	return out, <-errs
}

// topicCount is the number of records in a topic: the sum of its queues' max offsets.
func (r *rawClient) topicCount(topic string, queues int) int64 {
	r.t.Helper()
	var n int64
	for q := range queues {
		n += r.maxOffset(topic, q)
	}
	return n
}

// consumerIDs is GET_CONSUMER_LIST_BY_GROUP.
func (r *rawClient) consumerIDs(group string) []string {
	r.t.Helper()
	resp := r.call(protocol.GetConsumerListByGroup, map[string]string{"consumerGroup": group}, nil)
	if resp.Code != int16(protocol.Success) {
		return nil
	}
	ids, err := protocol.DecodeConsumerIDList(resp.Body)
	require.NoError(r.t, err)
	return ids
}

// prepareRetryTopic makes the broker create group's retry topic and publish its route
// before the test's consumer starts: a raw client heartbeats as a member of the group
// (which creates %RETRY%<group>) and unregisters again. The Go push consumer looks up the
// routes of its topics, including the retry topic, before its first heartbeat and then
// only every 30 s, so a group's first consumer would otherwise see retries only after up
// to 30 s. (A short-lived official consumer would do too, but the Go client races when
// shut down during its first rebalance.)
func prepareRetryTopic(t *testing.T, raw *rawClient, c *testutil.Cluster, group, topic string) {
	t.Helper()
	const client = "127.0.0.1@retry-topic-warmup"
	hb, err := protocol.EncodeHeartbeatData(&protocol.HeartbeatData{ClientID: client, ConsumerDataSet: []protocol.ConsumerData{{
		GroupName: group, ConsumeType: "CONSUME_PASSIVELY", MessageModel: "CLUSTERING", ConsumeFromWhere: "CONSUME_FROM_FIRST_OFFSET",
		SubscriptionDataSet: []protocol.SubscriptionData{{Topic: topic, SubString: "*", ExpressionType: "TAG"}},
	}}})
	require.NoError(t, err)
	resp := raw.call(protocol.HeartBeat, nil, hb)
	require.Equal(t, int16(protocol.Success), resp.Code, resp.Remark)
	testutil.Eventually(t, 10*time.Second, func() bool {
		_, ok := c.NameServer.Table().TopicRoute(protocol.RetryTopic(group))
		return ok
	}, "route of the retry topic published")
	resp = raw.call(protocol.UnregisterClient, map[string]string{"clientID": client, "consumerGroup": group}, nil)
	require.Equal(t, int16(protocol.Success), resp.Code, resp.Remark)
	require.Empty(t, raw.consumerIDs(group), "warm-up client unregistered")
}

// percentiles returns the p-th percentiles (0..100) of ds by nearest rank.
func percentiles(ds []time.Duration, ps ...float64) []time.Duration {
	if len(ds) == 0 {
		return make([]time.Duration, len(ps))
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	out := make([]time.Duration, len(ps))
	for i, p := range ps {
		k := int(p/100*float64(len(s))+0.999999) - 1
		out[i] = s[min(max(k, 0), len(s)-1)]
	}
	return out
}

// cleanLocalOffsets removes, at cleanup, the local offset files that broadcasting Go
// consumers with these instance names write: <base>/<group>/<ip>@<instance>/offset.json,
// where base is $HOME/.rocketmq_client_go unless rocketmq.client.localOffsetStoreDir is
// set. Directories left empty are removed too, base only if the test created it.
func cleanLocalOffsets(t *testing.T, instances ...string) {
	t.Helper()
	base := os.Getenv("rocketmq.client.localOffsetStoreDir")
	if base == "" {
		base = filepath.Join(os.Getenv("HOME"), ".rocketmq_client_go")
	}
	_, err := os.Stat(base)
	existed := err == nil
	t.Cleanup(func() {
		for _, in := range instances {
			dirs, _ := filepath.Glob(filepath.Join(base, "*", "*@"+in))
			for _, d := range dirs {
				_ = os.RemoveAll(d)
				_ = os.Remove(filepath.Dir(d)) // the group directory, if now empty
			}
		}
		if !existed {
			_ = os.Remove(base)
		}
	})
}
