package client

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/ferrymq/ferry/internal/leaktest"
	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
	"github.com/ferrymq/ferry/testutil"
)

// TestMain checks that the client leaves no goroutine behind; the ignored ones are the
// in-process broker's netpoll pollers, started once per process and never stopped.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, leaktest.Netpoll()...)
}

func newTestClient(t *testing.T, c *testutil.Cluster) *Client {
	t.Helper()
	cl, err := New(WithNameServers(c.NamesrvAddr))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, cl.Close()) })
	return cl
}

// storedBodies pulls every message of a topic's queue straight from the broker.
func storedBodies(t *testing.T, c *testutil.Cluster, topic string, queues int) map[string]message.Record {
	t.Helper()
	rc, err := remoting.NewClient(remoting.DefaultClientOptions())
	require.NoError(t, err)
	defer func() { require.NoError(t, rc.Close()) }()
	out := map[string]message.Record{}
	for q := range queues {
		off := int64(0)
		for range 10_000 {
			req := protocol.NewRequest(protocol.PullMessage, &protocol.PullMessageRequestHeader{
				ConsumerGroup: "check", Topic: topic, QueueID: int32(q), QueueOffset: off, MaxMsgNums: 256,
				SysFlag: protocol.PullFlagSubscription, Subscription: "*"})
			resp, err := rc.Invoke(context.Background(), c.BrokerAddr, req)
			require.NoError(t, err)
			if resp.Code != int16(protocol.Success) {
				break
			}
			for b := resp.Body; len(b) > 0; {
				var rec message.Record
				n, err := rec.Decode(b)
				require.NoError(t, err)
				rec.Body = append([]byte(nil), rec.Body...)
				rec.Properties = append([]byte(nil), rec.Properties...)
				out[string(rec.Body)] = rec
				b = b[n:]
				off = rec.QueueOffset + 1
			}
		}
	}
	return out
}

func TestSendSyncAsyncBatchAndOneway(t *testing.T) {
	c := testutil.StartCluster(t)
	cl := newTestClient(t, c)
	p, err := cl.NewProducer("PG")
	require.NoError(t, err)
	ctx := context.Background()

	msg := message.NewMessage("ClientTopic", []byte("sync-0"))
	msg.SetTags("TagA")
	msg.SetKeys("k1", "k2")
	res, err := p.Send(ctx, msg)
	require.NoError(t, err)
	require.Len(t, res.MsgID, 32)
	require.NotEmpty(t, res.OffsetMsgID)
	_, isFerry := cl.ferry.Load(c.BrokerAddr)
	require.True(t, isFerry, "the broker said it is Ferry: msgpack headers from now on")

	// Many concurrent async sends: batched automatically, each with its own result.
	const n = 2000
	var wg sync.WaitGroup
	var mu sync.Mutex
	results := map[string]SendResult{}
	for i := range n {
		wg.Add(1)
		p.SendAsync(ctx, message.NewMessage("ClientTopic", fmt.Appendf(nil, "async-%d", i)), func(r SendResult, err error) {
			defer wg.Done()
			require.NoError(t, err)
			mu.Lock()
			results[fmt.Sprintf("async-%d", i)] = r
			mu.Unlock()
		})
	}
	wg.Wait()
	rs, err := p.SendBatch(ctx, []*message.Message{
		message.NewMessage("ClientTopic", []byte("batch-0")), message.NewMessage("ClientTopic", []byte("batch-1"))})
	require.NoError(t, err)
	require.Len(t, rs, 2)
	require.Equal(t, rs[0].QueueOffset+1, rs[1].QueueOffset)
	require.NoError(t, p.SendOneway(ctx, message.NewMessage("ClientTopic", []byte("oneway-0"))))
	require.NoError(t, p.Close())

	testutil.Eventually(t, 10*time.Second, func() bool {
		return len(storedBodies(t, c, "ClientTopic", 4)) == n+4
	}, "every message stored")
	stored := storedBodies(t, c, "ClientTopic", 4)
	first := stored["sync-0"]
	tags, _ := message.LookupProperty(first.Properties, message.PropertyTags)
	require.Equal(t, "TagA", string(tags))
	require.Equal(t, res.MsgID, first.MsgID())
	offsets := map[string]bool{}
	for body, r := range results {
		rec, ok := stored[body]
		require.True(t, ok, body)
		require.Equal(t, r.MsgID, rec.MsgID(), "the result names the stored message")
		require.Equal(t, r.QueueOffset, rec.QueueOffset)
		require.Equal(t, r.QueueID, rec.QueueID)
		k := fmt.Sprint(r.QueueID, "/", r.QueueOffset)
		require.False(t, offsets[k], "two results claim %s", k)
		offsets[k] = true
	}
}

func TestIllegalMessagesAreRefusedClientSide(t *testing.T) {
	c := testutil.StartCluster(t)
	cl := newTestClient(t, c)
	p, err := cl.NewProducer("PG", WithMaxBodySize(1024), WithMaxMessageSize(1536))
	require.NoError(t, err)
	defer func() { require.NoError(t, p.Close()) }()
	_, err = p.Send(context.Background(), message.NewMessage("bad topic!", []byte("x")))
	require.ErrorIs(t, err, ErrIllegalMessage)
	_, err = p.Send(context.Background(), message.NewMessage("T", []byte(strings.Repeat("x", 2048))))
	require.ErrorIs(t, err, ErrIllegalMessage)
	_, err = p.Send(context.Background(), message.NewMessage("T", nil))
	require.ErrorIs(t, err, ErrIllegalMessage)
}

func TestNameServerDownIsAClearError(t *testing.T) {
	cl, err := New(WithNameServers("127.0.0.1:1"))
	require.NoError(t, err)
	defer func() { require.NoError(t, cl.Close()) }()
	p, err := cl.NewProducer("PG")
	require.NoError(t, err)
	defer func() { require.NoError(t, p.Close()) }()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = p.Send(ctx, message.NewMessage("T", []byte("x")))
	require.ErrorIs(t, err, ErrNoRoute)
	require.NoError(t, ctx.Err(), "a refused connection fails fast, not at the deadline")
}

// TestCloseDuringInflightSends closes a producer while thousands of sends are in flight or
// waiting in batches: every callback runs exactly once, and nothing hangs.
func TestCloseDuringInflightSends(t *testing.T) {
	c := testutil.StartCluster(t)
	cl := newTestClient(t, c)
	p, err := cl.NewProducer("PG")
	require.NoError(t, err)
	ctx := context.Background()
	_, err = p.Send(ctx, message.NewMessage("CloseTopic", []byte("first")))
	require.NoError(t, err)
	const n = 3000
	var calls sync.WaitGroup
	var okN, errN atomicCount
	calls.Add(n)
	for i := range n {
		p.SendAsync(ctx, message.NewMessage("CloseTopic", fmt.Appendf(nil, "m-%d", i)), func(_ SendResult, err error) {
			if err != nil {
				errN.add()
				require.ErrorIs(t, err, ErrClosed)
			} else {
				okN.add()
			}
			calls.Done()
		})
		if i == n/2 {
			require.NoError(t, p.Close())
		}
	}
	calls.Wait()
	require.Equal(t, int64(n), okN.get()+errN.get())
	require.Positive(t, okN.get(), "the sends before Close completed")
	require.Positive(t, errN.get(), "the sends after Close were refused")
	_, err = p.Send(ctx, message.NewMessage("CloseTopic", []byte("late")))
	require.ErrorIs(t, err, ErrClosed)
}

// TestBrokerGoneFailsWithinTheDeadline stops the only broker: a send fails with an error
// before its context's deadline instead of hanging.
func TestBrokerGoneFailsWithinTheDeadline(t *testing.T) {
	c := testutil.StartCluster(t)
	cl := newTestClient(t, c)
	p, err := cl.NewProducer("PG", WithRetries(1))
	require.NoError(t, err)
	defer func() { require.NoError(t, p.Close()) }()
	ctx := context.Background()
	_, err = p.Send(ctx, message.NewMessage("GoneTopic", []byte("before")))
	require.NoError(t, err)
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	require.NoError(t, c.Broker.Shutdown(sctx))
	c.Broker = nil
	dctx, dcancel := context.WithTimeout(ctx, 3*time.Second)
	defer dcancel()
	_, err = p.Send(dctx, message.NewMessage("GoneTopic", []byte("after")))
	require.Error(t, err)
	require.NoError(t, dctx.Err(), "the failure came before the deadline: %v", err)
}

// atomicCount is a test counter.
type atomicCount struct{ n atomic.Int64 }

func (a *atomicCount) add()       { a.n.Add(1) }
func (a *atomicCount) get() int64 { return a.n.Load() }

// TestAsyncBatchesKeepEveryMessageIntact sends many messages of varied sizes and
// properties from several goroutines, so batch bodies and prepared messages are reused
// from one batch to the next, and checks every stored record against its message and
// its result.
func TestAsyncBatchesKeepEveryMessageIntact(t *testing.T) {
	c := testutil.StartCluster(t)
	cl := newTestClient(t, c)
	p, err := cl.NewProducer("PGIntact")
	require.NoError(t, err)
	ctx := context.Background()
	const topic, senders, each = "IntactTopic", 4, 600
	long := strings.Repeat("v", 200) // spills out of the inline property buffer
	var wg sync.WaitGroup
	var mu sync.Mutex
	results := map[string]SendResult{}
	for s := range senders {
		wg.Go(func() {
			var sent sync.WaitGroup
			for i := range each {
				body := fmt.Sprintf("s%d-m%d-", s, i) + strings.Repeat("x", (i*37)%3000)
				msg := message.NewMessage(topic, []byte(body))
				msg.SetKeys(fmt.Sprintf("key-%d-%d", s, i))
				if i%3 == 0 {
					msg.SetProperty("long", long)
				}
				sent.Add(1)
				p.SendAsync(ctx, msg, func(r SendResult, err error) {
					defer sent.Done()
					if !assert.NoError(t, err) {
						return
					}
					mu.Lock()
					results[body] = r
					mu.Unlock()
				})
			}
			sent.Wait()
		})
	}
	wg.Wait()
	require.Len(t, results, senders*each)
	testutil.Eventually(t, 10*time.Second, func() bool {
		return len(storedBodies(t, c, topic, 4)) == senders*each
	}, "every message stored")
	stored := storedBodies(t, c, topic, 4)
	ids := map[string]bool{}
	for body, r := range results {
		rec, ok := stored[body]
		require.True(t, ok, "stored %.20q", body)
		require.Equal(t, r.MsgID, rec.MsgID(), "the result names the stored message")
		require.False(t, ids[r.MsgID], "two results with message id %s", r.MsgID)
		ids[r.MsgID] = true
		require.Equal(t, r.QueueOffset, rec.QueueOffset)
		var s, i int
		_, err := fmt.Sscanf(body, "s%d-m%d-", &s, &i)
		require.NoError(t, err)
		keys, _ := message.LookupProperty(rec.Properties, message.PropertyKeys)
		require.Equal(t, fmt.Sprintf("key-%d-%d", s, i), string(keys))
		v, found := message.LookupProperty(rec.Properties, "long")
		require.Equal(t, i%3 == 0, found)
		if found {
			require.Equal(t, long, string(v))
		}
	}
}
