package message_test

import (
	"bytes"
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/message"
)

// interopCase is one record plus what the official Go client must see.
type interopCase struct {
	rec       message.Record
	body      []byte // body the client hands to the user (inflated)
	bornHost  string // client's "ip:port" rendering
	storeHost string
	msgID     string // expected MsgId ("" = the offset id)
}

func props(t *testing.T, m map[string]string) []byte {
	t.Helper()
	b, err := message.EncodeProperties(m)
	require.NoError(t, err)
	return b
}

// TestInteropClientDecodesFerryRecords encodes a batch of records with Ferry's
// codec, lays them end to end as a pull response body, and decodes the batch
// with the official RocketMQ Go client, checking every field it exposes.
func TestInteropClientDecodesFerryRecords(t *testing.T) {
	uniq := message.NewUniqKeyGenerator(netip.MustParseAddr("192.168.1.20"), 4242).Next()
	plain := bytes.Repeat([]byte("compress me please "), 400)
	compressed, err := message.Compress(plain, message.DefaultCompressLevel)
	require.NoError(t, err)
	require.Less(t, len(compressed), len(plain))

	base := message.Record{
		QueueID:          2,
		Flag:             11,
		SysFlag:          message.SysFlagMultiTags,
		BornTimestamp:    1700000000123,
		BornHost:         netip.MustParseAddrPort("192.168.1.20:54321"),
		StoreTimestamp:   1700000000456,
		StoreHost:        netip.MustParseAddrPort("10.0.0.7:10911"),
		ReconsumeTimes:   1,
		PreparedTxOffset: 0,
		Topic:            []byte("TopicTest"),
	}
	cases := []interopCase{}
	add := func(mut func(c *interopCase)) {
		c := interopCase{rec: base, bornHost: "192.168.1.20:54321", storeHost: "10.0.0.7:10911"}
		mut(&c)
		if c.body == nil {
			c.body = c.rec.Body
		}
		cases = append(cases, c)
	}
	add(func(c *interopCase) {
		c.rec.Body = []byte("hello from ferry")
		c.rec.Properties = props(t, map[string]string{
			message.PropertyTags: "TagA", message.PropertyKeys: "order-1 order-2", message.PropertyUniqKey: uniq,
			message.PropertyCluster: "DefaultCluster", "中文键": "值",
		})
		c.msgID = uniq
	})
	add(func(c *interopCase) {
		c.rec.QueueID, c.rec.Flag, c.rec.ReconsumeTimes = 0, -1, 16
		c.rec.BornHost = netip.MustParseAddrPort("[2001:db8::1234:5678]:40000")
		c.bornHost = "2001:db8::1234:5678:40000"
		c.rec.Body = []byte{0, 1, 2, 0xFF}
		c.rec.Properties = props(t, map[string]string{message.PropertyTags: "TagB"})
	})
	add(func(c *interopCase) {
		c.rec.StoreHost = netip.MustParseAddrPort("[fe80::1]:10912")
		c.storeHost = "fe80::1:10912"
		c.rec.SysFlag = message.WithTransactionType(0, message.TransactionCommitType)
		c.rec.PreparedTxOffset = 123456789
		c.rec.Body = []byte("committed")
		c.rec.Properties = props(t, map[string]string{message.PropertyTransactionPrepared: "true", message.PropertyProducerGroup: "pg"})
	})
	add(func(c *interopCase) {
		c.rec.SysFlag |= message.SysFlagCompressed
		c.rec.Body = compressed
		c.body = plain
		c.rec.Properties = props(t, map[string]string{message.PropertyTags: "TagZ"})
	})
	add(func(c *interopCase) {
		c.rec.BornHost = netip.MustParseAddrPort("[2001:db8::9]:1")
		c.bornHost = "2001:db8::9:1"
		c.rec.StoreHost = netip.MustParseAddrPort("[2001:db8::a]:65535")
		c.storeHost = "2001:db8::a:65535"
		c.rec.Topic = []byte(strings.Repeat("T", message.MaxTopicLength))
		c.rec.Body = []byte{}
		c.rec.Properties = nil
	})

	var buf []byte
	for i := range cases {
		c := &cases[i]
		c.rec.QueueOffset = int64(100 + i)
		c.rec.PhysicalOffset = int64(1<<30) + int64(len(buf))
		buf, err = c.rec.AppendTo(buf)
		require.NoError(t, err)
	}

	msgs := primitive.DecodeMessage(buf)
	require.Len(t, msgs, len(cases))
	for i, m := range msgs {
		c := cases[i]
		r := c.rec
		require.Equal(t, string(r.Topic), m.Topic, "topic %d", i)
		require.Equal(t, c.body, []byte(m.Body), "body %d", i)
		require.Equal(t, r.Flag, m.Flag, "flag %d", i)
		require.Equal(t, int(r.QueueID), m.Queue.QueueId, "queue id %d", i)
		require.Equal(t, r.QueueOffset, m.QueueOffset, "queue offset %d", i)
		require.Equal(t, r.PhysicalOffset, m.CommitLogOffset, "commit log offset %d", i)
		wantSys := r.SysFlag
		if r.BornHost.Addr().Is6() {
			wantSys |= message.SysFlagBornHostV6
		}
		if r.StoreHost.Addr().Is6() {
			wantSys |= message.SysFlagStoreHostV6
		}
		require.Equal(t, wantSys, m.SysFlag, "sysflag %d", i)
		require.Equal(t, r.BornTimestamp, m.BornTimestamp, "born ts %d", i)
		require.Equal(t, r.StoreTimestamp, m.StoreTimestamp, "store ts %d", i)
		require.Equal(t, c.bornHost, m.BornHost, "born host %d", i)
		require.Equal(t, c.storeHost, m.StoreHost, "store host %d", i)
		require.Equal(t, r.ReconsumeTimes, m.ReconsumeTimes, "reconsume %d", i)
		require.Equal(t, r.PreparedTxOffset, m.PreparedTransactionOffset, "prepared offset %d", i)
		require.Equal(t, message.ParseProperties(r.Properties), m.GetProperties(), "properties %d", i)
		require.Equal(t, int32(r.Size()), m.StoreSize, "store size %d", i)
		require.Equal(t, message.BodyCRC(r.Body), m.BodyCRC, "body crc %d", i)

		offsetID := message.OffsetMsgID(r.StoreHost, r.PhysicalOffset)
		require.Equal(t, offsetID, m.OffsetMsgId, "offset msg id %d", i)
		wantID := c.msgID
		if wantID == "" {
			wantID = offsetID
		}
		require.Equal(t, wantID, m.MsgId, "msg id %d", i)

		// Ferry decodes the same buffer to the same view.
		dec, _, err := message.DecodeRecord(buf[r.PhysicalOffset-(1<<30):])
		require.NoError(t, err)
		require.Equal(t, m.MsgId, dec.MsgID())
		require.Equal(t, m.OffsetMsgId, dec.OffsetMsgID())
	}
}

// TestInteropClientParsesOffsetMsgID checks that the official client's
// UnmarshalMsgID reads Ferry's offset message ids.
func TestInteropClientParsesOffsetMsgID(t *testing.T) {
	for _, tc := range []struct {
		host     string
		offset   int64
		wantAddr string
	}{
		{"10.0.0.7:10911", 0, "10.0.0.7"},
		{"192.168.100.200:65535", 1<<40 + 12345, "192.168.100.200"},
		{"[2001:db8::ff00:42:8329]:10911", 987654321, "[2001:db8::ff00:42:8329]"},
	} {
		host := netip.MustParseAddrPort(tc.host)
		id := message.OffsetMsgID(host, tc.offset)
		got, err := primitive.UnmarshalMsgID([]byte(id))
		require.NoError(t, err, id)
		require.Equal(t, tc.wantAddr, got.Addr)
		require.Equal(t, int(host.Port()), got.Port)
		require.Equal(t, tc.offset, got.Offset)

		// And the client's own offset ids decode with Ferry.
		clientID := primitive.CreateMessageId(host.Addr().AsSlice(), int32(host.Port()), tc.offset)
		require.Equal(t, clientID, id)
		dh, doff, err := message.DecodeOffsetMsgID(clientID)
		require.NoError(t, err)
		require.Equal(t, host, dh)
		require.Equal(t, tc.offset, doff)
	}
}

// TestInteropProperties checks that the client's property codec and Ferry's
// agree both ways.
func TestInteropProperties(t *testing.T) {
	want := map[string]string{"TAGS": "TagA", "KEYS": "a b", "UNIQ_KEY": "X", "E": ""}
	cm := primitive.NewMessage("T", []byte("b"))
	cm.WithProperties(want)
	require.Equal(t, want, message.ParseProperties([]byte(cm.MarshallProperties())))

	enc := props(t, want)
	var back primitive.Message
	back.UnmarshalProperties(append([]byte("junk\x02a\x01b\x01c\x02"), enc...))
	require.Equal(t, want, back.GetProperties())
	require.Equal(t, want, message.ParseProperties(append([]byte("junk\x02a\x01b\x01c\x02"), enc...)))
}

// TestInteropPropertiesAgreeWithClientParser compares ParseProperties with the
// client's parser on random inputs over the separator alphabet. The only
// intended difference: Ferry skips pairs with an empty key.
func TestInteropPropertiesAgreeWithClientParser(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte{'a', 'b', 0x01, 0x02}
	for range 5000 {
		in := make([]byte, rng.IntN(14))
		for i := range in {
			in[i] = alphabet[rng.IntN(len(alphabet))]
		}
		var cm primitive.Message
		cm.UnmarshalProperties(in)
		want := cm.GetProperties()
		delete(want, "")
		require.Equal(t, want, message.ParseProperties(in), "%q", in)
		for k, v := range want {
			got, ok := message.LookupProperty(in, k)
			require.True(t, ok)
			require.Equal(t, v, string(got))
		}
	}
}
