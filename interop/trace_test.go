package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/client"
	"github.com/ferrymq/ferry/internal/testkit"
	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/testutil"
)

// traceEvents is the part of `ferryctl message trace -o json` the interop test reads.
type traceEvents struct {
	Events []struct {
		Event       string `json:"event"`
		Group       string `json:"group"`
		Status      string `json:"status"`
		StoreHost   string `json:"storeHost"`
		OffsetMsgID string `json:"offsetMsgId"`
	} `json:"events"`
}

// ferryctlTrace runs the real `ferryctl message trace -i id -o json`.
func ferryctlTrace(t *testing.T, c *testutil.Cluster, id string) (traceEvents, bool) {
	t.Helper()
	cmd := exec.Command(testkit.Binary(t, "github.com/ferrymq/ferry/cmd/ferryctl"), "message", "trace", "-i", id, "-o", "json")
	cmd.Env = append(cmd.Environ(), "FERRY_NAMESRV="+c.NamesrvAddr)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	var tr traceEvents
	if err := cmd.Run(); err != nil {
		require.Contains(t, errOut.String(), "no trace records", "ferryctl failed otherwise: %s", errOut.String())
		return tr, false
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &tr), out.String())
	return tr, true
}

// rawTraceRecords returns the raw records (fields split) of message id in the trace
// topic, with who wrote them told apart by the caller.
func rawTraceRecords(t *testing.T, c *testutil.Cluster, id string) [][]string {
	t.Helper()
	_, recs := newRaw(t, c.BrokerAddr).queryByKey(protocol.TraceTopic, id, false)
	var out [][]string
	for _, rec := range recs {
		for r := range strings.SplitSeq(string(rec.Body), "\x02") {
			if f := strings.Split(r, "\x01"); len(f) > 2 && slicesContain(f, id) {
				out = append(out, f)
			}
		}
	}
	return out
}

func slicesContain(f []string, s string) bool {
	for _, x := range f {
		if x == s {
			return true
		}
	}
	return false
}

// TestTraceInterop: the broker routes RMQ_SYS_TRACE_TOPIC from the start; a message from
// the official producer with tracing on and one from
// Ferry's producer with WithTrace, each consumed by an official push consumer with
// tracing on and by Ferry's push consumer with WithTrace. `ferryctl message trace` shows
// each message's whole timeline, whoever wrote its records. The official Go client has
// no trace decoder or query helper (internal/trace.go only encodes, and is internal), so
// the layout is checked the other way: every record, the official client's and Ferry's,
// decodes with Ferry's decoder and re-encodes with Ferry's encoder to the same bytes —
// the same fields in the same order with the same formatting — and the official Pub
// record's fields decode to what the send was.
//
// The official client keeps one trace client per process (instance
// INNER_TRACE_CLIENT_DEFAULT), never shut down, bound to the first name servers it was
// given: later trace configs with other name servers get none and panic. So this is the
// one test of the package that turns the official client's tracing on.
func TestTraceInterop(t *testing.T) {
	const topic = "TraceInteropTopic"
	c := testutil.StartCluster(t)
	_, ok := c.NameServer.Table().TopicRoute(protocol.TraceTopic)
	require.True(t, ok, "the trace topic is routed from the start")
	createTopic(t, c, topic, 2)
	traceCfg := func(group string) *primitive.TraceConfig {
		return &primitive.TraceConfig{GroupName: group, Access: primitive.Local,
			Resolver: primitive.NewPassthroughResolver([]string{c.NamesrvAddr})}
	}
	op := newProducer(t, c, "official-traced-pg", producer.WithTrace(traceCfg("official-traced-pg")))

	var mu sync.Mutex
	seen := map[string]int{} // message id → consumers that got it
	saw := func(id string) {
		mu.Lock()
		seen[id]++
		mu.Unlock()
	}
	newPushConsumer(t, c, "official-traced-cg", topic, "*",
		func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			for _, m := range msgs {
				saw(m.GetProperty(primitive.PropertyUniqueClientMessageIdKeyIndex))
			}
			return consumer.ConsumeSuccess, nil
		}, consumer.WithTrace(traceCfg("official-traced-cg")))

	cl, err := client.New(client.WithNameServers(c.NamesrvAddr), client.WithTrace(""))
	require.NoError(t, err)
	fp, err := cl.NewProducer("ferry-traced-pg")
	require.NoError(t, err)
	fc, err := cl.NewPushConsumer("ferry-traced-cg", topic, "*", func(_ context.Context, msgs []*client.MessageExt) client.ConsumeResult {
		for _, m := range msgs {
			saw(m.MsgID)
		}
		return client.ConsumeSuccess
	}, client.WithConsumeFrom(client.ConsumeFromFirstOffset))
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, fc.Start(ctx))

	om := primitive.NewMessage(topic, []byte("from the official producer"))
	om.WithTag("TagO")
	om.WithKeys([]string{"key-o"})
	ores, err := op.SendSync(ctx, om)
	require.NoError(t, err)
	fm := message.NewMessage(topic, []byte("from Ferry's producer"))
	fm.SetTags("TagF")
	fm.SetKeys("key-f")
	fres, err := fp.Send(ctx, fm)
	require.NoError(t, err)

	testutil.Eventually(t, 30*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return seen[ores.MsgID] == 2 && seen[fres.MsgID] == 2
	}, "both consumers got both messages")
	require.NoError(t, fc.Close())
	require.NoError(t, fp.Close())
	require.NoError(t, cl.Close())
	st := cl.TraceStats()
	require.Zero(t, st.Dropped+st.Failed, "%+v", st)

	for _, s := range []struct {
		id, offsetID, group string
	}{{ores.MsgID, ores.OffsetMsgID, "official-traced-pg"}, {fres.MsgID, fres.OffsetMsgID, "ferry-traced-pg"}} {
		var tr traceEvents
		testutil.Eventually(t, 20*time.Second, func() bool {
			var ok bool
			tr, ok = ferryctlTrace(t, c, s.id)
			n := 0
			for _, ev := range tr.Events {
				if ev.Event == "consume" && ev.Status == "CONSUMED" {
					n++
				}
			}
			return ok && len(tr.Events) == 3 && n == 2
		}, "ferryctl shows the send and both consumes of "+s.id)
		require.Equal(t, "send", tr.Events[0].Event)
		require.Equal(t, s.group, tr.Events[0].Group)
		require.Equal(t, "SEND_OK", tr.Events[0].Status)
		require.Equal(t, c.BrokerAddr, tr.Events[0].StoreHost)
		require.Equal(t, s.offsetID, tr.Events[0].OffsetMsgID)
		groups := []string{tr.Events[1].Group, tr.Events[2].Group}
		require.ElementsMatch(t, []string{"official-traced-cg", "ferry-traced-cg"}, groups)
	}

	// Layout: per writer and type, the fields of the raw records.
	fields := map[string]int{} // "writer/type" → field count
	for _, id := range []string{ores.MsgID, fres.MsgID} {
		for _, f := range rawTraceRecords(t, c, id) {
			raw := strings.Join(f, "\x01") + "\x02"
			recs, err := client.DecodeTraceRecords([]byte(raw))
			require.NoError(t, err, "%q", raw)
			require.Len(t, recs, 1, "%q", raw)
			require.Equal(t, raw, string(client.AppendTraceRecord(nil, &recs[0])),
				"Ferry's encoder writes this record exactly as its writer did")
			writer := "ferry"
			if strings.HasPrefix(recs[0].Group, "official") {
				writer = "official"
			}
			fields[writer+"/"+f[0]] = len(f)
			if writer == "official" && recs[0].Type == client.TracePub {
				require.Equal(t, client.TraceRecord{Type: client.TracePub, Timestamp: recs[0].Timestamp,
					RegionID: "DefaultRegion", Group: "official-traced-pg", Topic: topic, MsgID: ores.MsgID,
					OffsetMsgID: ores.OffsetMsgID, Tags: "TagO", Keys: "key-o", StoreHost: c.BrokerAddr,
					ClientHost: recs[0].ClientHost, BodyLength: len(om.Body), CostMs: recs[0].CostMs,
					MsgType: client.TraceMsgNormal, Success: true}, recs[0], "the official Pub record, field by field")
				require.NotEmpty(t, recs[0].ClientHost)
			}
		}
	}
	require.Equal(t, map[string]int{
		"official/Pub": 15, "official/SubBefore": 9, "official/SubAfter": 9,
		"ferry/Pub": 15, "ferry/SubBefore": 9, "ferry/SubAfter": 9,
	}, fields, "both writers' records of both messages, with the same field counts")
}
