//go:build linux && (failoverstress || failoverpartition)

package interop

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/client"
	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
)

// The load of the failover acceptance harnesses: producers of both client kinds (Ferry's
// and the official Go client) sending synchronously at a fixed rate, each message with a
// key of its own, every acknowledgement recorded with when its send started, when it was
// acknowledged and which broker stored it (the store host of its offset message id); and
// the read-back at the end by a consumer of each kind.

// foKind is a client kind.
type foKind int

const (
	foFerry    foKind = iota // Ferry's client (package client)
	foOfficial               // the official RocketMQ Go client
)

// foKinds are both kinds, in report order.
var foKinds = []foKind{foFerry, foOfficial}

// String names the kind in reports.
func (k foKind) String() string {
	if k == foFerry {
		return "ferry"
	}
	return "official"
}

// foAck is one acknowledged send.
type foAck struct {
	kind      foKind
	start, at time.Time // the send's start and its acknowledgement
	store     string    // host:port of the broker that stored the message
}

// foProducer is one producer: it sends keys <prefix>-<seq>, seq from 0.
type foProducer struct {
	kind   foKind
	prefix string
	send   func(ctx context.Context, key string, body []byte) (store string, err error)
	close  func()

	sent  atomic.Int64 // keys prefix-0 … prefix-(sent-1) were attempted
	fails atomic.Int64
	mu    sync.Mutex
	acks  []foAck
	acked []string
	errs  map[string]int // failure messages (their first 80 bytes), counted
}

// foBody is the body of key: the key, '|', then filler up to 128 bytes.
func foBody(key string) []byte {
	b := make([]byte, 128)
	n := copy(b, key+"|")
	for i := n; i < len(b); i++ {
		b[i] = 'a' + byte(i%26)
	}
	return b
}

// foKeyOf is the key a body carries.
func foKeyOf(body []byte) string {
	s, _, _ := strings.Cut(string(body), "|")
	return s
}

// newFerryFOProducer is a producer of Ferry's client with its defaults (retries, route
// refresh after a failed connection), on its own Client.
func newFerryFOProducer(t *testing.T, ns, prefix, topic string) *foProducer {
	t.Helper()
	cl, err := client.New(client.WithNameServers(ns), client.WithInstanceName(instance("fo-f")))
	require.NoError(t, err)
	p, err := cl.NewProducer("fo-pg-ferry")
	require.NoError(t, err)
	return &foProducer{kind: foFerry, prefix: prefix,
		send: func(ctx context.Context, key string, body []byte) (string, error) {
			m := message.NewMessage(topic, body)
			m.SetKeys(key)
			r, err := p.Send(ctx, m)
			if err != nil {
				return "", err
			}
			return storeHost(r.OffsetMsgID), nil
		},
		close: func() { _ = p.Close(); _ = cl.Close() }}
}

// newOfficialFOProducer is a producer of the official Go client with its defaults (two
// retries, routes from the name server every 30 s), on its own client instance.
func newOfficialFOProducer(t *testing.T, ns, prefix, topic string) *foProducer {
	t.Helper()
	p, err := rocketmq.NewProducer(
		producer.WithNsResolver(primitive.NewPassthroughResolver([]string{ns})),
		producer.WithGroupName("fo-pg-go"),
		producer.WithInstanceName(instance("fo-o")))
	require.NoError(t, err)
	require.NoError(t, p.Start())
	return &foProducer{kind: foOfficial, prefix: prefix,
		send: func(ctx context.Context, key string, body []byte) (string, error) {
			m := primitive.NewMessage(topic, body)
			m.WithKeys([]string{key})
			r, err := p.SendSync(ctx, m)
			if err != nil {
				return "", err
			}
			if r.Status != primitive.SendOK {
				return "", fmt.Errorf("send status %d", r.Status)
			}
			return storeHost(r.OffsetMsgID), nil
		},
		close: func() { _ = p.Shutdown() }}
}

// storeHost is the store host of an offset message id ("" when it does not decode).
func storeHost(offsetMsgID string) string {
	addr, _, err := message.DecodeOffsetMsgID(offsetMsgID)
	if err != nil {
		return ""
	}
	return addr.String()
}

// foProducers starts two producers of each kind on topic.
func foProducers(t *testing.T, ns, topic string) []*foProducer {
	t.Helper()
	return []*foProducer{
		newFerryFOProducer(t, ns, "f0", topic), newFerryFOProducer(t, ns, "f1", topic),
		newOfficialFOProducer(t, ns, "o0", topic), newOfficialFOProducer(t, ns, "o1", topic),
	}
}

// printSummary prints v as one JSON line on standard output.
func printSummary(t *testing.T, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	fmt.Println(string(b))
}

// foLoad runs producers until stopped.
type foLoad struct {
	ps   []*foProducer
	stop atomic.Bool
	wg   sync.WaitGroup
}

// startFOLoad makes every producer send one message at a time, at most rate a second,
// until halt.
func startFOLoad(t *testing.T, ps []*foProducer, rate int) *foLoad {
	t.Helper()
	l := &foLoad{ps: ps}
	for _, p := range ps {
		l.wg.Go(func() {
			tick := time.NewTicker(time.Second / time.Duration(rate))
			defer tick.Stop()
			for !l.stop.Load() {
				<-tick.C
				seq := p.sent.Add(1) - 1
				key := p.prefix + "-" + strconv.FormatInt(seq, 10)
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
				start := time.Now()
				store, err := p.send(ctx, key, foBody(key))
				at := time.Now()
				cancel()
				p.mu.Lock()
				if err == nil {
					p.acks = append(p.acks, foAck{kind: p.kind, start: start, at: at, store: store})
					p.acked = append(p.acked, key)
				} else {
					p.fails.Add(1)
					if p.errs == nil {
						p.errs = map[string]int{}
					}
					msg := err.Error()
					if len(msg) > 80 {
						msg = msg[:80]
					}
					p.errs[msg]++
				}
				p.mu.Unlock()
			}
		})
	}
	t.Cleanup(func() {
		l.halt()
		for _, p := range ps {
			p.close()
		}
	})
	return l
}

// halt stops sending and waits for the sends in flight (each bounded by its 3 s context).
func (l *foLoad) halt() {
	l.stop.Store(true)
	l.wg.Wait()
}

// acks returns every acknowledgement of every producer.
func (l *foLoad) acks() []foAck {
	var all []foAck
	for _, p := range l.ps {
		p.mu.Lock()
		all = append(all, p.acks...)
		p.mu.Unlock()
	}
	return all
}

// ackedFrom counts the acknowledgements of kind by the broker at store whose send started
// at or after since.
func (l *foLoad) ackedFrom(kind foKind, store string, since time.Time) int {
	n := 0
	for _, p := range l.ps {
		if p.kind != kind {
			continue
		}
		p.mu.Lock()
		for i := len(p.acks) - 1; i >= 0 && !p.acks[i].start.Before(since); i-- {
			if p.acks[i].store == store {
				n++
			}
		}
		p.mu.Unlock()
	}
	return n
}

// ackedKeys returns every acknowledged key, by kind.
func (l *foLoad) ackedKeys() map[foKind][]string {
	out := map[foKind][]string{}
	for _, p := range l.ps {
		p.mu.Lock()
		out[p.kind] = append(out[p.kind], p.acked...)
		p.mu.Unlock()
	}
	return out
}

// failures counts the failed sends by kind, and returns the most frequent failure
// messages (for the log).
func (l *foLoad) failures() (map[foKind]int64, []string) {
	out := map[foKind]int64{}
	msgs := map[string]int{}
	for _, p := range l.ps {
		out[p.kind] += p.fails.Load()
		p.mu.Lock()
		for m, n := range p.errs {
			msgs[p.kind.String()+": "+m] += n
		}
		p.mu.Unlock()
	}
	var top []string
	for m, n := range msgs {
		top = append(top, fmt.Sprintf("%6d× %s", n, m))
	}
	slices.Sort(top)
	slices.Reverse(top)
	return out, top[:min(len(top), 8)]
}

// wasSent reports whether key is one a producer attempted.
func (l *foLoad) wasSent(key string) bool {
	prefix, seq, ok := strings.Cut(key, "-")
	if !ok {
		return false
	}
	n, err := strconv.ParseInt(seq, 10, 64)
	if err != nil {
		return false
	}
	for _, p := range l.ps {
		if p.prefix == prefix {
			return n >= 0 && n < p.sent.Load()
		}
	}
	return false
}

// foReader collects the keys a consumer receives.
type foReader struct {
	mu   sync.Mutex
	seen map[string]int
}

// add records a received body.
func (r *foReader) add(body []byte) {
	r.mu.Lock()
	r.seen[foKeyOf(body)]++
	r.mu.Unlock()
}

// missing counts the keys of want not received.
func (r *foReader) missing(want []string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, k := range want {
		if r.seen[k] == 0 {
			n++
		}
	}
	return n
}

// foreign returns the received keys that were never sent, and how many keys were
// received in all.
func (r *foReader) foreign(l *foLoad) ([]string, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for k := range r.seen {
		if !l.wasSent(k) {
			out = append(out, k)
		}
	}
	return out, len(r.seen)
}

// readWithFerry starts a push consumer of Ferry's client reading topic from its start.
func readWithFerry(t *testing.T, ns, topic string) *foReader {
	t.Helper()
	r := &foReader{seen: map[string]int{}}
	cl, err := client.New(client.WithNameServers(ns), client.WithInstanceName(instance("fo-rf")))
	require.NoError(t, err)
	pc, err := cl.NewPushConsumer("fo-read-ferry", topic, "*", func(_ context.Context, msgs []*client.MessageExt) client.ConsumeResult {
		for _, m := range msgs {
			r.add(m.Body)
		}
		return client.ConsumeSuccess
	}, client.WithConsumeFrom(client.ConsumeFromFirstOffset), client.WithConsumeBatch(32))
	require.NoError(t, err)
	require.NoError(t, pc.Start(context.Background()))
	t.Cleanup(func() { _ = pc.Close(); _ = cl.Close() })
	return r
}

// readWithOfficial starts a push consumer of the official Go client reading topic from
// its start.
func readWithOfficial(t *testing.T, ns, topic string) *foReader {
	t.Helper()
	r := &foReader{seen: map[string]int{}}
	pc, err := rocketmq.NewPushConsumer(
		consumer.WithNsResolver(primitive.NewPassthroughResolver([]string{ns})),
		consumer.WithGroupName("fo-read-go"),
		consumer.WithInstance(instance("fo-ro")),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
		consumer.WithConsumeMessageBatchMaxSize(32))
	require.NoError(t, err)
	bc := &balancedConsumer{PushConsumer: pc}
	require.NoError(t, pc.Subscribe(topic, consumer.MessageSelector{}, func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		for _, m := range msgs {
			r.add(m.Body)
		}
		return consumer.ConsumeSuccess, nil
	}))
	require.NoError(t, pc.Start())
	t.Cleanup(func() { _ = bc.Shutdown() })
	return r
}

// foMillis is a duration in whole milliseconds, for the JSON summaries.
func foMillis(d time.Duration) int64 { return d.Milliseconds() }

// maxAckGap is the longest time in [from, to] without an acknowledgement of kind (by
// any of its producers), the window's ends counting as acknowledgements.
func (l *foLoad) maxAckGap(kind foKind, from, to time.Time) time.Duration {
	times := []time.Time{from, to}
	for _, a := range l.acks() {
		if a.kind == kind && a.at.After(from) && a.at.Before(to) {
			times = append(times, a.at)
		}
	}
	slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })
	var gap time.Duration
	for i := 1; i < len(times); i++ {
		gap = max(gap, times[i].Sub(times[i-1]))
	}
	return gap
}

// pullAll reads every message of topic's queues (0..queues-1) from the broker at addr,
// from the start, and calls fn with each record.
func pullAll(t *testing.T, rc *remoting.Client, addr, topic string, queues int32, fn func(rec message.Record)) error {
	t.Helper()
	for q := range queues {
		for off := int64(0); ; {
			req := protocol.NewRequest(protocol.PullMessage, &protocol.PullMessageRequestHeader{
				ConsumerGroup: "fo-check", Topic: topic, QueueID: q, QueueOffset: off, MaxMsgNums: 256,
				SysFlag: protocol.PullFlagSubscription, Subscription: "*"})
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			resp, err := rc.Invoke(ctx, addr, req)
			cancel()
			if err != nil {
				return fmt.Errorf("pull %s q%d@%d from %s: %w", topic, q, off, addr, err)
			}
			if resp.Code != int16(protocol.Success) {
				break // PULL_NOT_FOUND / OFFSET_OVERFLOW: the queue's end
			}
			recs := decodeRecords(t, resp.Body)
			if len(recs) == 0 {
				break
			}
			for _, r := range recs {
				fn(r)
				off = r.QueueOffset + 1
			}
		}
	}
	return nil
}
