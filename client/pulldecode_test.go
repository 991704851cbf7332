package client

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/protocol"
)

// pullBody is a pull answer's body: n stored records of topic's queue 0, tagged TagA,
// with a key and a UNIQ_KEY, laid end to end.
func pullBody(tb testing.TB, topic string, n int) []byte {
	tb.Helper()
	var out []byte
	for i := range n {
		rec := message.Record{
			QueueOffset: int64(i), PhysicalOffset: int64(1000 * i), BornTimestamp: 1700000000123, StoreTimestamp: 1700000000456,
			BornHost: netip.MustParseAddrPort("192.168.1.20:54321"), StoreHost: netip.MustParseAddrPort("10.0.0.7:10911"),
			Body: make([]byte, 100), Topic: []byte(topic),
			Properties: fmt.Appendf(nil, "TAGS\x01TagA\x02KEYS\x01k%d\x02UNIQ_KEY\x01C0A8011400002A9F00000000%08X\x02", i, i),
		}
		var err error
		out, err = rec.AppendTo(out)
		require.NoError(tb, err)
	}
	return out
}

// decodeFixture is what decoding a pull body needs: a body of n messages of topic T on
// broker b (pullBody), a subscription to their tag, and a push consumer's queue of T.
func decodeFixture(tb testing.TB, n int) (body []byte, sub *subscription, q *processQueue) {
	tb.Helper()
	sub, err := newSubscription("T", "TagA", false)
	require.NoError(tb, err)
	c := &Client{log: zerolog.Nop()}
	q = &processQueue{pc: &PushConsumer{c: c, group: "g", retryTopic: protocol.RetryTopic("g"), log: zerolog.Nop()},
		mq: MessageQueue{Topic: "T", BrokerName: "b"}, sub: sub}
	return pullBody(tb, "T", n), sub, q
}

// BenchmarkPullDecode measures turning a pull body of 32 messages into messages, as the
// push consumer (push) and the pull and lite-pull consumers (pull) do; allocs/msg is per
// message.
func BenchmarkPullDecode(b *testing.B) {
	const n = 32
	body, sub, q := decodeFixture(b, n)
	for _, bc := range []struct {
		name   string
		decode func() ([]*MessageExt, error)
	}{
		{"push", func() ([]*MessageExt, error) { return q.decode(body) }},
		{"pull", func() ([]*MessageExt, error) { return decodeMessages(body, "b", sub, &q.pc.c.log) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if msgs, err := bc.decode(); err != nil || len(msgs) != n {
					b.Fatal(err, len(msgs))
				}
			}
			b.ReportMetric(testing.AllocsPerRun(100, func() { _, _ = bc.decode() })/n, "allocs/msg")
		})
	}
}

// TestParseProperties: the properties of a decoded message are what
// message.ParseProperties makes of the raw ones, malformed fragments included.
func TestParseProperties(t *testing.T) {
	for _, raw := range []string{
		"",
		"\x02",
		"\x02\x02",
		"A\x011\x02",
		"A\x011",
		"A\x011\x02B\x012\x02",
		"A\x011\x02A\x012\x02",      // the last wins
		"A\x01\x02",                 // empty value
		"\x011\x02B\x012\x02",       // empty key: skipped
		"A\x011\x012\x02B\x013\x02", // two separators: skipped
		"A1\x02B\x012\x02",          // no separator: skipped
		"A\x011\x02\x02B\x012",      // empty fragment
		"TAGS\x01x\x02UNIQ_KEY\x01ID\x02KEYS\x01k1 k2\x02",
		"A\x01\x01\x02",
	} {
		require.Equal(t, message.ParseProperties([]byte(raw)), parseProperties(raw), "%q", raw)
	}
}

// FuzzParseProperties compares parseProperties with message.ParseProperties.
func FuzzParseProperties(f *testing.F) {
	f.Add([]byte("TAGS\x01x\x02UNIQ_KEY\x01ID\x02"))
	f.Add([]byte("A\x011\x012\x02\x01B\x02C"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		require.Equal(t, message.ParseProperties(raw), parseProperties(string(raw)))
	})
}

// TestDecodeMessagesFields: every field of a decoded message is its record's, for
// records that share a pull body (one with an IPv6 store host, one of another topic, one
// without properties), and messages do not share anything they may change.
func TestDecodeMessagesFields(t *testing.T) {
	recs := []message.Record{
		{QueueID: 3, Flag: 7, QueueOffset: 10, PhysicalOffset: 1000, SysFlag: 0, BornTimestamp: 1700000000123,
			StoreTimestamp: 1700000000456, ReconsumeTimes: 2,
			BornHost: netip.MustParseAddrPort("192.168.1.20:54321"), StoreHost: netip.MustParseAddrPort("10.0.0.7:10911"),
			Body: []byte("one"), Topic: []byte("T"), Properties: []byte("TAGS\x01a\x02UNIQ_KEY\x01U1\x02")},
		{QueueID: 3, QueueOffset: 11, PhysicalOffset: 2000, SysFlag: message.SysFlagStoreHostV6 | message.SysFlagBornHostV6,
			BornTimestamp: 1, StoreTimestamp: 2,
			BornHost: netip.MustParseAddrPort("[2001:db8::1]:1"), StoreHost: netip.MustParseAddrPort("[2001:db8::2]:10911"),
			Body: []byte("two"), Topic: []byte("T"), Properties: []byte("KEYS\x01k\x02")},
		{QueueID: 3, QueueOffset: 12, PhysicalOffset: 3000,
			BornHost: netip.MustParseAddrPort("1.2.3.4:5"), StoreHost: netip.MustParseAddrPort("10.0.0.7:10911"),
			Body: []byte("three"), Topic: []byte("Other")},
	}
	var body []byte
	for _, rec := range recs {
		var err error
		body, err = rec.AppendTo(body)
		require.NoError(t, err)
	}
	log := zerolog.Nop()
	msgs, err := decodeMessages(body, "b", nil, &log)
	require.NoError(t, err)
	require.Len(t, msgs, len(recs))
	for i, m := range msgs {
		rec := recs[i]
		topic := string(rec.Topic)
		want := &MessageExt{
			Message: message.Message{Topic: topic, Flag: rec.Flag, Body: rec.Body,
				Properties: message.ParseProperties(rec.Properties)},
			MsgID: rec.MsgID(), OffsetMsgID: rec.OffsetMsgID(), Queue: MessageQueue{Topic: topic, BrokerName: "b", QueueID: 3},
			QueueOffset: rec.QueueOffset, CommitLogOffset: rec.PhysicalOffset, ReconsumeTimes: rec.ReconsumeTimes,
			BornTime: time.UnixMilli(rec.BornTimestamp), StoreTime: time.UnixMilli(rec.StoreTimestamp),
			BornHost: rec.BornHost, StoreHost: rec.StoreHost, SysFlag: rec.SysFlag,
		}
		require.Equal(t, want, m, "message %d", i)
		one, err := messageOf(&rec, "b")
		require.NoError(t, err)
		require.Equal(t, want, one, "messageOf %d", i)
	}
	msgs[0].SetProperty("X", "1")
	msgs[0].ReconsumeTimes++
	require.Empty(t, msgs[1].Property("X"))
	require.Equal(t, recs[1].ReconsumeTimes, msgs[1].ReconsumeTimes)
}

// TestDecodeMessagesFilter: with a subscription only the consumable records whose last
// TAGS property it names are built; a malformed record ends the decoding with the
// messages before it.
func TestDecodeMessagesFilter(t *testing.T) {
	sub, err := newSubscription("T", "a || b", false)
	require.NoError(t, err)
	var body []byte
	for i, r := range []struct {
		props   string
		sysFlag int32
	}{
		{"TAGS\x01a\x02", 0},
		{"TAGS\x01c\x02", 0},
		{"", 0},
		{"TAGS\x01c\x02TAGS\x01b\x02", 0}, // the last wins
		{"TAGS\x01a\x02", message.TransactionPreparedType},
		{"TAGS\x01b\x02", message.TransactionCommitType},
	} {
		rec := message.Record{QueueOffset: int64(i), SysFlag: r.sysFlag, Topic: []byte("T"), Properties: []byte(r.props),
			BornHost: netip.MustParseAddrPort("1.2.3.4:5"), StoreHost: netip.MustParseAddrPort("10.0.0.7:10911")}
		body, err = rec.AppendTo(body)
		require.NoError(t, err)
	}
	log := zerolog.Nop()
	offsets := func(msgs []*MessageExt) []int64 {
		var out []int64
		for _, m := range msgs {
			out = append(out, m.QueueOffset)
		}
		return out
	}
	msgs, err := decodeMessages(body, "b", sub, &log)
	require.NoError(t, err)
	require.Equal(t, []int64{0, 3, 5}, offsets(msgs))
	msgs, err = decodeMessages(append(body, 0, 0, 0, 1), "b", nil, &log)
	require.ErrorIs(t, err, message.ErrTruncated)
	require.Len(t, msgs, 6)
}
