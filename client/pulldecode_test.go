package client

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/message"
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
	q = &processQueue{pc: &PushConsumer{c: c, group: "g", log: zerolog.Nop()},
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
