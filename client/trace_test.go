package client

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/testutil"
)

// traceRecordsOf finds the trace records of message id in topic, as ferryctl does.
func traceRecordsOf(t *testing.T, cl *Client, topic, id string) []TraceRecord {
	t.Helper()
	found, err := cl.Admin().QueryByKey(context.Background(), topic, id, time.Time{}, time.Time{}, 0)
	if err != nil {
		require.ErrorIs(t, err, ErrNotFound)
		return nil
	}
	var out []TraceRecord
	for _, m := range found {
		recs, err := DecodeTraceRecords(m.Body)
		require.NoError(t, err)
		for _, r := range recs {
			if r.MsgID == id {
				out = append(out, r)
			}
		}
	}
	return out
}

// ofType picks the records of one type.
func ofType(recs []TraceRecord, typ TraceType) []TraceRecord {
	var out []TraceRecord
	for _, r := range recs {
		if r.Type == typ {
			out = append(out, r)
		}
	}
	return out
}

// TestTraceSendAndConsume: with WithTrace, a sent and consumed message has a Pub, a
// SubBefore and a SubAfter record in the trace topic, found by its message id.
func TestTraceSendAndConsume(t *testing.T) {
	c := testutil.StartCluster(t)
	for _, traceTopic := range []string{"", "MyTraceTopic"} {
		want := traceTopic
		if want == "" {
			want = protocol.TraceTopic
		} else {
			newRawBroker(t, c).createTopic(want, 1)
		}
		t.Run(want, func(t *testing.T) {
			topic := "Traced" + traceTopic
			cl, err := New(WithNameServers(c.NamesrvAddr), WithTrace(traceTopic))
			require.NoError(t, err)
			p, err := cl.NewProducer("trace-pg")
			require.NoError(t, err)
			ctx := context.Background()
			msg := message.NewMessage(topic, []byte("hello"))
			msg.SetTags("TagA")
			msg.SetKeys("order-1", "order-2")
			res, err := p.Send(ctx, msg)
			require.NoError(t, err)

			got := make(chan string, 1)
			pc, err := cl.NewPushConsumer("trace-cg", topic, "*", func(_ context.Context, msgs []*MessageExt) ConsumeResult {
				for _, m := range msgs {
					select {
					case got <- m.MsgID:
					default:
					}
				}
				return ConsumeSuccess
			}, WithConsumeFrom(ConsumeFromFirstOffset))
			require.NoError(t, err)
			require.NoError(t, pc.Start(ctx))
			select {
			case id := <-got:
				require.Equal(t, res.MsgID, id)
			case <-time.After(20 * time.Second):
				t.Fatal("the message was not consumed")
			}
			require.NoError(t, pc.Close())
			require.NoError(t, p.Close())
			require.NoError(t, cl.Close(), "Close flushes the queued records")
			st := cl.TraceStats()
			require.Equal(t, int64(3), st.Recorded, "%+v", st)
			require.Equal(t, st.Recorded, st.Sent, "%+v", st)

			reader := newTestClient(t, c)
			var recs []TraceRecord
			testutil.Eventually(t, 10*time.Second, func() bool {
				recs = traceRecordsOf(t, reader, want, res.MsgID)
				return len(recs) == 3
			}, "three trace records of the message")
			pub := ofType(recs, TracePub)
			require.Len(t, pub, 1)
			require.Equal(t, TraceRecord{Type: TracePub, Timestamp: pub[0].Timestamp, RegionID: "DefaultRegion",
				Group: "trace-pg", Topic: topic, MsgID: res.MsgID, OffsetMsgID: res.OffsetMsgID, Tags: "TagA",
				Keys: "order-1 order-2", StoreHost: c.BrokerAddr, ClientHost: cl.host.String(), BodyLength: 5,
				CostMs: pub[0].CostMs, MsgType: TraceMsgNormal, Success: true}, pub[0])
			before, after := ofType(recs, TraceSubBefore), ofType(recs, TraceSubAfter)
			require.Len(t, before, 1)
			require.Len(t, after, 1)
			require.Equal(t, "trace-cg", before[0].Group)
			require.Equal(t, cl.host.String(), before[0].ClientHost)
			require.Equal(t, "order-1 order-2", before[0].Keys)
			require.NotEmpty(t, before[0].RequestID)
			require.Equal(t, before[0].RequestID, after[0].RequestID, "SubAfter names its SubBefore")
			require.True(t, after[0].Success)
			require.Equal(t, "trace-cg", after[0].Group)
			require.GreaterOrEqual(t, after[0].Timestamp, before[0].Timestamp)
			require.GreaterOrEqual(t, before[0].Timestamp, pub[0].Timestamp-1000)

			// Business keys find the records too (the trace message's KEYS).
			require.NotEmpty(t, traceRecordsOf(t, reader, want, res.MsgID))
			found, err := reader.Admin().QueryByKey(ctx, want, "order-2", time.Time{}, time.Time{}, 0)
			require.NoError(t, err)
			require.NotEmpty(t, found)
		})
	}
}

// TestTraceNeverBlocks: a stalled trace sender fills the bounded queue; records past it
// are dropped and counted while recording stays non-blocking, and Close sends the rest.
func TestTraceNeverBlocks(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	var bodies [][]byte
	var keys [][]string
	send := func(ctx context.Context, msg *message.Message, done func(error)) {
		mu.Lock()
		bodies = append(bodies, msg.Body)
		keys = append(keys, msg.Keys())
		first := len(bodies) == 1
		mu.Unlock()
		go func() {
			if first {
				<-release
			}
			done(nil)
		}()
	}
	o := DefaultTraceOptions()
	o.QueueSize, o.MaxInflight, o.BatchRecords, o.Linger = 4, 1, 2, time.Millisecond
	closed := false
	tr := startTracer(o, zerolog.Nop(), "10.0.0.1", message.NewUniqKeyGenerator(localIPv4(), 1), send, time.Second,
		func() error { closed = true; return nil })

	start := time.Now()
	for i := range 1000 {
		tr.record(&TraceRecord{Type: TracePub, MsgID: "M" + string(rune('a'+i%26)), Keys: "k"})
	}
	require.Less(t, time.Since(start), time.Second, "recording never waits for the sender")
	require.Positive(t, tr.dropped.Load())
	require.Equal(t, int64(1000), tr.recorded.Load()+tr.dropped.Load())
	close(release)
	require.NoError(t, tr.close())
	require.True(t, closed)
	require.Equal(t, tr.recorded.Load(), tr.sent.Load(), "Close sends every queued record")
	tr.record(&TraceRecord{Type: TracePub, MsgID: "late"})
	require.Equal(t, int64(1001), tr.recorded.Load()+tr.dropped.Load(), "after Close records are dropped")

	n := 0
	for i, b := range bodies {
		recs, err := DecodeTraceRecords(b)
		require.NoError(t, err)
		require.LessOrEqual(t, len(recs), 2, "BatchRecords")
		n += len(recs)
		for _, r := range recs {
			require.Contains(t, keys[i], r.MsgID, "the trace message is keyed by its records' ids")
		}
		require.Contains(t, keys[i], "k")
	}
	require.Equal(t, int(tr.sent.Load()), n)
	require.NoError(t, tr.close(), "idempotent")
}

// TestTraceConsumeOutcomes: a failed handler is recorded as such; TRACE_ON=false
// messages are not recorded; a failed trace message is counted.
func TestTraceConsumeOutcomes(t *testing.T) {
	var mu sync.Mutex
	var recs []TraceRecord
	send := func(_ context.Context, msg *message.Message, done func(error)) {
		r, err := DecodeTraceRecords(msg.Body)
		require.NoError(t, err)
		mu.Lock()
		recs = append(recs, r...)
		mu.Unlock()
		done(errors.New("broker gone"))
	}
	tr := startTracer(DefaultTraceOptions(), zerolog.Nop(), "10.0.0.1", message.NewUniqKeyGenerator(localIPv4(), 1),
		send, time.Second, func() error { return nil })
	traced := &MessageExt{MsgID: "A", ReconsumeTimes: 3}
	quiet := &MessageExt{MsgID: "B"}
	quiet.SetProperty(message.PropertyTraceSwitch, "false")
	res := ConsumeRetryLater
	tr.consumeTrace("cg", []*MessageExt{traced, quiet})(&res)
	require.NoError(t, tr.close())
	require.Equal(t, int64(2), tr.failed.Load())
	require.Len(t, recs, 2)
	require.True(t, slices.ContainsFunc(recs, func(r TraceRecord) bool {
		return r.Type == TraceSubBefore && r.MsgID == "A" && r.RetryTimes == 3 && r.Group == "cg"
	}), "%+v", recs)
	require.True(t, slices.ContainsFunc(recs, func(r TraceRecord) bool {
		return r.Type == TraceSubAfter && r.MsgID == "A" && !r.Success && r.ContextCode == traceConsumeFailed
	}), "%+v", recs)

	var nilTracer *tracer
	res = ConsumeSuccess
	nilTracer.consumeTrace("cg", []*MessageExt{traced})(&res)
	require.NoError(t, nilTracer.close())
	bad := DefaultTraceOptions()
	bad.Topic, bad.QueueSize = "bad topic!", 0
	_, err := New(WithNameServers("127.0.0.1:9876"), WithTraceOptions(bad))
	require.ErrorIs(t, err, ErrInvalidOptions)
	require.Contains(t, err.Error(), "trace topic")
	require.Contains(t, err.Error(), "queue size 0")
}

// TestTraceCloseIsBounded: with a broker that never answers, Close gives up on what is
// left after one request timeout in all, counting it failed, instead of one timeout per
// trace message.
func TestTraceCloseIsBounded(t *testing.T) {
	send := func(ctx context.Context, _ *message.Message, done func(error)) {
		go func() {
			<-ctx.Done()
			done(ctx.Err())
		}()
	}
	o := DefaultTraceOptions()
	o.BatchRecords, o.MaxInflight = 1, 1
	tr := startTracer(o, zerolog.Nop(), "10.0.0.1", message.NewUniqKeyGenerator(localIPv4(), 1), send,
		200*time.Millisecond, func() error { return nil })
	for range 50 {
		tr.record(&TraceRecord{Type: TraceSubAfter, MsgID: "M"})
	}
	start := time.Now()
	require.NoError(t, tr.close())
	require.Less(t, time.Since(start), 2*time.Second, "50 trace messages would take 10 s one timeout each")
	require.Equal(t, int64(50), tr.recorded.Load())
	require.Equal(t, int64(50), tr.failed.Load()+tr.sent.Load())
	require.Zero(t, tr.sent.Load())
}

// In a namespace, the trace topic is the namespaced one the producers send to: a send to
// it is not traced again (which would trace trace messages forever).
func TestTraceTopicInANamespace(t *testing.T) {
	c, err := New(WithNameServers("127.0.0.1:1"), WithNamespace("ns"), WithTrace("MyTrace"))
	require.NoError(t, err)
	defer func() { require.NoError(t, c.Close()) }()
	require.Equal(t, "ns%MyTrace", c.tracer.wireTopic)
	before := c.tracer.recorded.Load()
	c.tracer.sentTrace("pg", queue{addr: "127.0.0.1:1"}, &batch{key: laneKey{topic: "ns%MyTrace"}}, nil, nil, time.Millisecond)
	require.Equal(t, before, c.tracer.recorded.Load(), "a trace message's send is not traced")
	out := &outgoing{topic: "ns%Orders", uniq: "U1"}
	c.tracer.sentTrace("pg", queue{addr: "127.0.0.1:1"}, &batch{key: laneKey{topic: "ns%Orders"}, outs: []*outgoing{out}},
		nil, errors.New("no answer"), time.Millisecond)
	require.Equal(t, before+1, c.tracer.recorded.Load(), "another topic's send is")
}
