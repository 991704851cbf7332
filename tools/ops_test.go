package tools_test

import (
	"bufio"
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/client"
	"github.com/ferrymq/ferry/testutil"
)

// listedMessage is what the tests read of message list's messages.
type listedMessage struct {
	MsgID       string `json:"msgId"`
	Broker      string `json:"broker"`
	QueueID     int32  `json:"queueId"`
	QueueOffset int64  `json:"queueOffset"`
	StoreTime   string `json:"storeTime"`
	Body        string `json:"body"`
}

type messageList struct {
	Topic     string          `json:"topic"`
	Count     int             `json:"count"`
	Truncated bool            `json:"truncated"`
	Messages  []listedMessage `json:"messages"`
}

func storeTime(t *testing.T, m listedMessage) time.Time {
	t.Helper()
	ts, err := time.Parse(time.RFC3339Nano, m.StoreTime)
	require.NoError(t, err)
	return ts
}

func TestMessageList(t *testing.T) {
	c := testutil.StartCluster(t)
	ns := c.NamesrvAddr
	var res map[string]string
	runJSON(t, ns, &res, "topic", "create", "-t", "ListT", "-r", "2", "-w", "2")
	var sent []struct {
		MsgID string `json:"msgId"`
	}
	ids := map[string]bool{}
	for i := range 4 { // four runs: store times a few ms apart
		runJSON(t, ns, &sent, "send", "-t", "ListT", "--count", "2", "batch-"+strconv.Itoa(i))
		for _, s := range sent {
			ids[s.MsgID] = true
		}
	}
	require.Len(t, ids, 8)

	var all messageList
	testutil.Eventually(t, 10*time.Second, func() bool {
		runJSON(t, ns, &all, "message", "list", "-t", "ListT")
		return all.Count == 8
	}, "message list finds the 8 messages")
	require.False(t, all.Truncated)
	queues := map[int32]bool{}
	for i, m := range all.Messages {
		require.True(t, ids[m.MsgID], "message %s was sent", m.MsgID)
		queues[m.QueueID] = true
		if i > 0 {
			require.False(t, storeTime(t, m).Before(storeTime(t, all.Messages[i-1])), "ordered by store time")
		}
	}
	require.Len(t, queues, 2, "both queues are read")

	// A range: from the 3rd message's store time (RFC 3339, whole seconds are too coarse:
	// Unix ms) to the 6th's.
	begin, end := storeTime(t, all.Messages[2]), storeTime(t, all.Messages[5])
	var want []string
	for _, m := range all.Messages {
		if st := storeTime(t, m); !st.Before(begin) && !st.After(end) {
			want = append(want, m.MsgID)
		}
	}
	var part messageList
	runJSON(t, ns, &part, "message", "list", "-t", "ListT", "--begin", strconv.FormatInt(begin.UnixMilli(), 10),
		"--end", end.Format(time.RFC3339Nano))
	var got []string
	for _, m := range part.Messages {
		got = append(got, m.MsgID)
	}
	require.ElementsMatch(t, want, got)
	require.GreaterOrEqual(t, len(got), 4)

	// --max: the oldest, with a note.
	out, errOut, code := run(t, ns, "message", "list", "-t", "ListT", "--max", "3", "-o", "json")
	require.Equal(t, 0, code, errOut)
	var cut messageList
	require.NoError(t, json.Unmarshal([]byte(out), &cut))
	require.True(t, cut.Truncated)
	require.Equal(t, 3, cut.Count)
	require.Equal(t, all.Messages[0].StoreTime, cut.Messages[0].StoreTime)
	require.Contains(t, errOut, "showing the first 3 messages")

	// A range after everything: nothing.
	runJSON(t, ns, &part, "message", "list", "-t", "ListT", "--begin", time.Now().Add(time.Hour).Format(time.RFC3339))
	require.Zero(t, part.Count)
	require.NotNil(t, part.Messages)

	_, errOut, code = run(t, ns, "message", "list", "-t", "ListT", "--begin", "2026-12-02T10:00:00Z", "--end", "2026-12-01T10:00:00Z")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "is after --end")
	_, errOut, code = run(t, ns, "message", "list", "-t", "ListT", "--end", "yesterday")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "RFC 3339")
	_, _, code = run(t, ns, "message", "list", "-t", "NoSuchTopic")
	require.Equal(t, 1, code)
}

type dlqList struct {
	Group    string `json:"group"`
	Count    int    `json:"count"`
	Messages []struct {
		MsgID          string `json:"msgId"`
		OriginMsgID    string `json:"originMsgId"`
		OriginTopic    string `json:"originTopic"`
		ReconsumeTimes int32  `json:"reconsumeTimes"`
		StoreTime      string `json:"storeTime"`
		Tags           string `json:"tags"`
		Body           string `json:"body"`
	} `json:"messages"`
}

func TestDLQListAndResend(t *testing.T) {
	c := testutil.StartCluster(t)
	ns := c.NamesrvAddr
	var sent []struct {
		MsgID string `json:"msgId"`
	}
	runJSON(t, ns, &sent, "send", "-t", "DlqT", "--tags", "created", "--keys", "order-7", "-p", "color=red", "--count", "2", "dead body")
	require.Len(t, sent, 2)

	// A group that fails everything and may not retry: both messages go to %DLQ%DlqG.
	cl, err := client.New(client.WithNameServers(ns), client.WithHeartbeat(50*time.Millisecond))
	require.NoError(t, err)
	defer func() { require.NoError(t, cl.Close()) }()
	var failed atomic.Int64
	pc, err := cl.NewPushConsumer("DlqG", "DlqT", "*", func(_ context.Context, msgs []*client.MessageExt) client.ConsumeResult {
		failed.Add(int64(len(msgs)))
		return client.ConsumeRetryLater
	}, client.WithMaxReconsumeTimes(0), client.WithConsumeFrom(client.ConsumeFromFirstOffset))
	require.NoError(t, err)
	require.NoError(t, pc.Start(context.Background()))
	var dl dlqList
	testutil.Eventually(t, 20*time.Second, func() bool {
		out, _, code := run(t, ns, "dlq", "list", "-g", "DlqG", "-o", "json")
		return code == 0 && json.Unmarshal([]byte(out), &dl) == nil && dl.Count == 2
	}, "both messages reach the dead-letter queue")
	require.NoError(t, pc.Close())
	require.GreaterOrEqual(t, failed.Load(), int64(2))
	sentIDs := []string{sent[0].MsgID, sent[1].MsgID}
	for _, m := range dl.Messages {
		require.Equal(t, "DlqT", m.OriginTopic)
		require.Contains(t, sentIDs, m.MsgID)
		require.Contains(t, sentIDs, m.OriginMsgID)
		require.Equal(t, int32(1), m.ReconsumeTimes, "delivered once, failed once")
		require.Equal(t, "created", m.Tags)
		require.Equal(t, "dead body", m.Body)
		require.NotEmpty(t, m.StoreTime)
	}

	var rs struct {
		Resent  int `json:"resent"`
		Skipped int `json:"skipped"`
		Results []struct {
			MsgID, OriginTopic, NewMsgID string
		} `json:"results"`
	}
	runJSON(t, ns, &rs, "dlq", "resend", "-g", "DlqG", "-i", sent[1].MsgID)
	require.Equal(t, 1, rs.Resent)
	require.Equal(t, "DlqT", rs.Results[0].OriginTopic)
	require.Equal(t, sent[1].MsgID, rs.Results[0].NewMsgID, "the resent copy keeps the message's id")

	// A new group reads the topic: the two originals and the resent copy, which kept body,
	// tags, keys and the user property, and lost the broker's retry bookkeeping.
	out, errOut, code := run(t, ns, "consume", "-t", "DlqT", "-g", "DlqCheck", "--from", "first", "--count", "3", "-o", "json")
	require.Equal(t, 0, code, errOut)
	var got []map[string]any
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var m map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &m), sc.Text())
		got = append(got, m)
	}
	require.Len(t, got, 3)
	copies := 0
	for _, m := range got {
		require.Equal(t, "dead body", m["body"])
		require.Equal(t, "created", m["tags"])
		props := m["properties"].(map[string]any)
		require.Equal(t, "red", props["color"])
		require.Equal(t, "order-7", props["KEYS"])
		require.NotContains(t, props, "RETRY_TOPIC")
		require.NotContains(t, props, "ORIGIN_MESSAGE_ID")
		if m["msgId"] == sent[1].MsgID {
			copies++
		}
	}
	require.Equal(t, 2, copies, "the original and its resent copy")

	runJSON(t, ns, &rs, "dlq", "resend", "-g", "DlqG", "--all")
	require.Equal(t, 2, rs.Resent)
	require.Zero(t, rs.Skipped)

	_, errOut, code = run(t, ns, "dlq", "resend", "-g", "DlqG", "--all", "-i", sent[0].MsgID)
	require.Equal(t, 2, code, errOut)
	_, errOut, code = run(t, ns, "dlq", "resend", "-g", "DlqG", "-i", "C0A8000100002A9F0000000000000001")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "no dead letter of group DlqG")
	_, errOut, code = run(t, ns, "dlq", "list", "-g", "NoDeadLetters")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "has no dead-letter topic")
}

type trafficRow struct {
	Broker string `json:"broker"`
	Kind   string `json:"kind"`
	Topic  string `json:"topic"`
	Group  string `json:"group"`
	Minute struct {
		Messages    int64   `json:"messages"`
		TPS         float64 `json:"tps"`
		Bytes       int64   `json:"bytes"`
		BytesPerSec float64 `json:"bytesPerSec"`
		PerCall     float64 `json:"perCall"`
	} `json:"minute"`
	Hour struct {
		Messages int64 `json:"messages"`
	} `json:"hour"`
}

func TestTopicAndGroupStats(t *testing.T) {
	c := testutil.StartCluster(t)
	ns := c.NamesrvAddr
	var sent []json.RawMessage
	runJSON(t, ns, &sent, "send", "-t", "StatsT", "--count", "10", "0123456789")
	out, errOut, code := run(t, ns, "consume", "-t", "StatsT", "-g", "StatsG", "--from", "first", "--count", "10", "-o", "json")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, 10, strings.Count(out, "\n"))

	var rows []trafficRow
	runJSON(t, ns, &rows, "topic", "stats", "-t", "StatsT")
	var put *trafficRow
	for i := range rows {
		if rows[i].Kind == "put" {
			put = &rows[i]
		}
	}
	require.NotNil(t, put, "%+v", rows)
	require.Equal(t, "StatsT", put.Topic)
	require.Equal(t, int64(10), put.Minute.Messages)
	require.Equal(t, int64(10), put.Hour.Messages)
	require.Positive(t, put.Minute.TPS)
	require.GreaterOrEqual(t, put.Minute.Bytes, int64(100), "10 bodies of 10 bytes, and their properties")
	require.InDelta(t, 1, put.Minute.PerCall, 1e-9, "ferryctl send sends one message a request")

	runJSON(t, ns, &rows, "group", "stats", "-g", "StatsG", "-t", "StatsT")
	require.Len(t, rows, 1)
	require.Equal(t, "get", rows[0].Kind)
	require.Equal(t, "StatsG", rows[0].Group)
	require.Equal(t, int64(10), rows[0].Minute.Messages)
	require.Positive(t, rows[0].Minute.Bytes)

	// Every topic the group has offsets for.
	runJSON(t, ns, &rows, "group", "stats", "-g", "StatsG")
	byTopic := map[string]int64{}
	for _, r := range rows {
		byTopic[r.Topic] = r.Minute.Messages
	}
	require.Equal(t, int64(10), byTopic["StatsT"], "%+v", rows)

	out, errOut, code = run(t, ns, "topic", "stats", "-t", "StatsT")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "MSGS (1m)")
	_, errOut, code = run(t, ns, "group", "stats")
	require.Equal(t, 2, code, errOut)
}

func TestCloneOffsets(t *testing.T) {
	c := testutil.StartCluster(t)
	ns := c.NamesrvAddr
	var res map[string]string
	runJSON(t, ns, &res, "topic", "create", "-t", "CloneT", "-r", "3", "-w", "3")
	var sent []json.RawMessage
	runJSON(t, ns, &sent, "send", "-t", "CloneT", "--count", "9", "x")

	cl, err := client.New(client.WithNameServers(ns))
	require.NoError(t, err)
	defer func() { require.NoError(t, cl.Close()) }()
	a := cl.Admin()
	r, err := a.TopicRoute(context.Background(), "CloneT")
	require.NoError(t, err)
	broker := r.Brokers[0].Name
	for q, off := range map[int32]int64{0: 2, 1: 1} { // queue 2: no offset
		require.NoError(t, a.UpdateConsumerOffset(context.Background(), "CloneSrc",
			client.MessageQueue{Topic: "CloneT", BrokerName: broker, QueueID: q}, off))
	}

	var copies []struct {
		QueueID int32 `json:"queueId"`
		Offset  int64 `json:"offset"`
		Copied  bool  `json:"copied"`
	}
	runJSON(t, ns, &copies, "consumer", "clone-offsets", "--src", "CloneSrc", "--dst", "CloneDst", "-t", "CloneT")
	require.Len(t, copies, 3)
	require.Equal(t, []int64{2, 1, -1}, []int64{copies[0].Offset, copies[1].Offset, copies[2].Offset})
	require.Equal(t, []bool{true, true, false}, []bool{copies[0].Copied, copies[1].Copied, copies[2].Copied})

	got, err := a.ConsumerOffsets(context.Background(), "CloneDst", "CloneT")
	require.NoError(t, err)
	require.Len(t, got, 3)
	require.Equal(t, []int64{2, 1, -1}, []int64{got[0].ConsumerOffset, got[1].ConsumerOffset, got[2].ConsumerOffset})

	_, errOut, code := run(t, ns, "consumer", "clone-offsets", "--src", "CloneSrc", "-t", "CloneT")
	require.Equal(t, 2, code, errOut)
	_, errOut, code = run(t, ns, "consumer", "clone-offsets", "--src", "CloneSrc", "--dst", "CloneSrc", "-t", "CloneT")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "same group")
}
