package tools_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/client"
	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/testutil"
)

// traceJSON is `message trace -o json`'s output.
type traceJSON struct {
	MsgID      string `json:"msgId"`
	TraceTopic string `json:"traceTopic"`
	Events     []struct {
		Event           string `json:"event"`
		Time            string `json:"time"`
		Group           string `json:"group"`
		ClientHost      string `json:"clientHost"`
		CostMs          int64  `json:"costMs"`
		Success         bool   `json:"success"`
		Status          string `json:"status"`
		Topic           string `json:"topic"`
		Keys            string `json:"keys"`
		StoreHost       string `json:"storeHost"`
		OffsetMsgID     string `json:"offsetMsgId"`
		CommitLogOffset *int64 `json:"commitLogOffset"`
		RequestID       string `json:"requestId"`
		RetryTimes      *int   `json:"retryTimes"`
	} `json:"events"`
}

// sendAndConsumeTraced sends one message with Ferry's client tracing into traceTopic
// ("" the default), consumes it as group cg and closes the client (flushing its
// records). It returns the send result.
func sendAndConsumeTraced(t *testing.T, c *testutil.Cluster, topic, traceTopic string) client.SendResult {
	t.Helper()
	cl, err := client.New(client.WithNameServers(c.NamesrvAddr), client.WithTrace(traceTopic))
	require.NoError(t, err)
	ctx := context.Background()
	p, err := cl.NewProducer("trace-pg")
	require.NoError(t, err)
	msg := message.NewMessage(topic, []byte("traced"))
	msg.SetKeys("order-7")
	res, err := p.Send(ctx, msg)
	require.NoError(t, err)
	got := make(chan struct{}, 1)
	pc, err := cl.NewPushConsumer("trace-cg", topic, "*", func(context.Context, []*client.MessageExt) client.ConsumeResult {
		select {
		case got <- struct{}{}:
		default:
		}
		return client.ConsumeSuccess
	}, client.WithConsumeFrom(client.ConsumeFromFirstOffset))
	require.NoError(t, err)
	require.NoError(t, pc.Start(ctx))
	select {
	case <-got:
	case <-time.After(20 * time.Second):
		t.Fatal("not consumed")
	}
	require.NoError(t, pc.Close())
	require.NoError(t, p.Close())
	require.NoError(t, cl.Close())
	return res
}

func TestMessageTrace(t *testing.T) {
	c := testutil.StartCluster(t)
	ns := c.NamesrvAddr
	res := sendAndConsumeTraced(t, c, "TraceCtl", "")

	var tr traceJSON
	testutil.Eventually(t, 10*time.Second, func() bool {
		tr = traceJSON{}
		runJSON(t, ns, &tr, "message", "trace", "-i", res.MsgID)
		return len(tr.Events) == 2 && tr.Events[1].Status == "CONSUMED"
	}, "a send and a finished consume")
	require.Equal(t, res.MsgID, tr.MsgID)
	require.Equal(t, "RMQ_SYS_TRACE_TOPIC", tr.TraceTopic)
	send, cons := tr.Events[0], tr.Events[1]
	require.Equal(t, "send", send.Event)
	require.Equal(t, "trace-pg", send.Group)
	require.True(t, send.Success)
	require.Equal(t, "SEND_OK", send.Status)
	require.Equal(t, "TraceCtl", send.Topic)
	require.Equal(t, "order-7", send.Keys)
	require.Equal(t, c.BrokerAddr, send.StoreHost)
	require.Equal(t, res.OffsetMsgID, send.OffsetMsgID)
	_, off, err := message.DecodeOffsetMsgID(res.OffsetMsgID)
	require.NoError(t, err)
	require.NotNil(t, send.CommitLogOffset)
	require.Equal(t, off, *send.CommitLogOffset)
	require.NotEmpty(t, send.ClientHost)
	sendTime, err := time.Parse(time.RFC3339Nano, send.Time)
	require.NoError(t, err)

	require.Equal(t, "consume", cons.Event)
	require.Equal(t, "trace-cg", cons.Group)
	require.True(t, cons.Success)
	require.Equal(t, send.ClientHost, cons.ClientHost)
	require.NotEmpty(t, cons.RequestID)
	require.NotNil(t, cons.RetryTimes)
	require.Zero(t, *cons.RetryTimes)
	consTime, err := time.Parse(time.RFC3339Nano, cons.Time)
	require.NoError(t, err)
	require.False(t, consTime.Before(sendTime), "the timeline is in time order")

	out, errOut, code := run(t, ns, "message", "trace", "-i", res.MsgID)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "message "+res.MsgID+", trace topic RMQ_SYS_TRACE_TOPIC")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 4, out)
	require.Regexp(t, `^TIME\s+EVENT\s+GROUP\s+CLIENT HOST\s+COST\s+STATUS\s+STORE HOST\s+COMMIT-LOG OFFSET\s+RETRIES`, lines[1])
	require.Regexp(t, `\ssend\s+trace-pg\s+\S+\s+\d+ms\s+SEND_OK\s+`+c.BrokerAddr, lines[2])
	require.Regexp(t, `\sconsume\s+trace-cg\s+\S+\s+\d+ms\s+CONSUMED\s+-\s+-\s+0$`, lines[3])

	// Another trace topic, chosen on both sides.
	runJSON(t, ns, &map[string]string{}, "topic", "create", "-t", "MyTraces", "-r", "1", "-w", "1")
	res2 := sendAndConsumeTraced(t, c, "TraceCtl2", "MyTraces")
	testutil.Eventually(t, 10*time.Second, func() bool {
		tr = traceJSON{}
		runJSON(t, ns, &tr, "message", "trace", "-i", res2.MsgID, "--trace-topic", "MyTraces")
		return len(tr.Events) == 2 && tr.Events[1].Status == "CONSUMED"
	}, "the records are in the chosen topic")
	_, errOut, code = run(t, ns, "message", "trace", "-i", res2.MsgID)
	require.Equal(t, 1, code, "not in the default topic: %s", errOut)
	require.Contains(t, errOut, "no trace records of message "+res2.MsgID+" in RMQ_SYS_TRACE_TOPIC")
	require.Equal(t, 1, strings.Count(strings.TrimSpace(errOut), "\n")+1, "one line: %q", errOut)
}

func TestMessageTraceBadInput(t *testing.T) {
	c := testutil.StartCluster(t)
	_, errOut, code := run(t, c.NamesrvAddr, "message", "trace")
	require.Equal(t, 2, code, errOut)
	require.Contains(t, errOut, "-i/--id is required")
	for _, args := range [][]string{
		{"message", "trace", "-i", "not-an-id"},
		{"message", "trace", "-i", strings.Repeat("G", 32)},
		{"message", "trace", "-i", strings.Repeat("A", 32), "--trace-topic", "NoSuchTraceTopic"},
		{"message", "trace", "-i", strings.Repeat("A", 32)},
	} {
		_, errOut, code := run(t, c.NamesrvAddr, args...)
		require.Equal(t, 1, code, "%v: %s", args, errOut)
		require.Equal(t, 1, strings.Count(strings.TrimSpace(errOut), "\n")+1, "%v: one line: %q", args, errOut)
	}
	_, errOut, _ = run(t, c.NamesrvAddr, "message", "trace", "-i", strings.Repeat("A", 32))
	require.Contains(t, errOut, "no trace records")
}
