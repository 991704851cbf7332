package interop

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/conf"
	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
	"github.com/ferrymq/ferry/testutil"
)

// sendV2 sends body to topic with a raw SEND_MESSAGE_V2 and returns the response.
func (r *rawClient) sendV2(topic string, body []byte) *remoting.Command {
	r.t.Helper()
	h := protocol.SendMessageRequestHeader{
		ProducerGroup: "raw-producer", Topic: topic, DefaultTopic: "TBW102", DefaultTopicQueueNums: 4,
		QueueID: -1, BornTimestamp: time.Now().UnixMilli(),
	}
	var ext remoting.Ext
	h.EncodeExtV2(&ext)
	return r.call(protocol.SendMessageV2, ext.Map(), body)
}

// batchHeader is a SEND_BATCH_MESSAGE header (V2 keys) with wrapper properties props.
func batchHeader(topic, props string) map[string]string {
	h := protocol.SendMessageRequestHeader{ProducerGroup: "raw", Topic: topic, DefaultTopic: "TBW102",
		DefaultTopicQueueNums: 4, QueueID: -1, BornTimestamp: time.Now().UnixMilli(), Properties: props, Batch: true}
	var ext remoting.Ext
	h.EncodeExtV2(&ext)
	return ext.Map()
}

// batchBody encodes batch items (spec §6.2) with the given bodies and no properties.
func batchBody(bodies ...string) []byte {
	var b []byte
	for _, body := range bodies {
		b = binary.BigEndian.AppendUint32(b, uint32(22+len(body)))
		b = append(b, make([]byte, 12)...) // magic, body CRC, flag
		b = binary.BigEndian.AppendUint32(b, uint32(len(body)))
		b = append(b, body...)
		b = binary.BigEndian.AppendUint16(b, 0)
	}
	return b
}

// frame builds a remoting frame from a serialize type, a header and a body.
func frame(typ byte, header, body []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(4+len(header)+len(body)))
	b = binary.BigEndian.AppendUint32(b, uint32(typ)<<24|uint32(len(header)))
	return append(append(b, header...), body...)
}

// expectClosed writes junk on a fresh connection and checks that the broker closes it
// (any response it writes first is ignored).
func expectClosed(t *testing.T, addr, what string, junk []byte) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	require.NoError(t, err)
	defer conn.Close()
	_, err = conn.Write(junk)
	require.NoError(t, err, what)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
	_, err = io.Copy(io.Discard, conn)
	require.False(t, errors.Is(err, os.ErrDeadlineExceeded), "%s: broker kept the connection open", what)
}

// TestBadInput feeds malformed frames, unknown codes, illegal topics and oversized bodies
// to the broker: each is refused as the spec says, a broken connection is closed on its
// own, and the official producer and a well-behaved raw connection keep working.
func TestBadInput(t *testing.T) {
	c := testutil.StartCluster(t)
	p := newProducer(t, c, "pg-bad")
	raw := newRaw(t, c.BrokerAddr)
	sendOK := func(what string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		res, err := p.SendSync(ctx, primitive.NewMessage("BadInputTopic", []byte("still working")))
		require.NoError(t, err, "official producer after %s", what)
		require.Equal(t, primitive.SendOK, res.Status)
		require.Equal(t, int16(protocol.Success), raw.sendV2("BadInputTopic", []byte("raw still working")).Code, "raw connection after %s", what)
	}
	sendOK("start")

	t.Run("unknown request codes", func(t *testing.T) {
		bin := remoting.DefaultClientOptions()
		bin.SerializeType = remoting.SerializeRocketMQ
		binCli, err := remoting.NewClient(bin)
		require.NoError(t, err)
		defer binCli.Close()
		for _, code := range []int16{999, 12345, int16(protocol.RegisterBroker), -7} { // REGISTER_BROKER is the name server's
			resp := raw.call(protocol.RequestCode(code), map[string]string{"x": "y"}, []byte("body"))
			require.Equal(t, int16(protocol.RequestCodeNotSupported), resp.Code, "JSON request code %d", code)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			resp, err := binCli.Invoke(ctx, c.BrokerAddr, remoting.NewRequest(code, nil))
			cancel()
			require.NoError(t, err)
			require.Equal(t, int16(protocol.RequestCodeNotSupported), resp.Code, "ROCKETMQ request code %d", code)
		}
		sendOK("unknown codes")
	})

	t.Run("malformed frames close only their connection", func(t *testing.T) {
		rng := rand.New(rand.NewPCG(1, 2))
		garbage := make([]byte, 4096)
		for i := range garbage {
			garbage[i] = byte(rng.UintN(256))
		}
		garbage[0] = 0x7f // a length far beyond the frame limit
		hugeLen := binary.BigEndian.AppendUint32(nil, 64<<20)
		hugeLen = append(hugeLen, bytes.Repeat([]byte{1}, 64)...)
		cases := []struct {
			name string
			junk []byte
		}{
			{"random bytes", garbage},
			{"an HTTP request", []byte("GET / HTTP/1.1\r\nHost: broker\r\n\r\n")},
			{"a 64 MiB length", hugeLen},
			{"a length shorter than the fixed header", binary.BigEndian.AppendUint32(nil, 2)},
			{"a negative length", []byte{0xff, 0xff, 0xff, 0xf0, 0, 0, 0, 0}},
			{"a header longer than the frame", append(binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, 8), 1000), 1, 2, 3, 4)},
			{"an unknown serialize type", frame(7, []byte(`{"code":30}`), nil)},
			{"a JSON header that is not JSON", frame(0, []byte(`{"code":30,"extFields":{`), nil)},
			{"a JSON header with a string code", frame(0, []byte(`{"code":"thirty","language":"GO","version":317,"opaque":1,"flag":0}`), nil)},
			{"a JSON header with an out-of-range code", frame(0, []byte(`{"code":70000,"language":"GO","version":317,"opaque":1,"flag":0}`), nil)},
			{"a truncated binary header", frame(1, []byte{0, 30, 9, 1}, nil)},
			{"a binary header with an ext length past its end", frame(1, append([]byte{0, 30, 9, 1, 0xdf, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0}, 0x7f, 0, 0, 0), nil)},
		}
		for _, tc := range cases {
			expectClosed(t, c.BrokerAddr, tc.name, tc.junk)
			sendOK(tc.name)
		}
	})

	t.Run("bad ext fields are answered, not fatal", func(t *testing.T) {
		// Required send header fields missing or not numbers.
		resp := raw.call(protocol.SendMessageV2, map[string]string{"b": "BadInputTopic"}, []byte("x"))
		require.NotEqual(t, int16(protocol.Success), resp.Code)
		resp = raw.call(protocol.PullMessage, map[string]string{"consumerGroup": "g", "topic": "BadInputTopic", "queueId": "zero"}, nil)
		require.NotEqual(t, int16(protocol.Success), resp.Code)
		resp = raw.call(protocol.ViewMessageByID, map[string]string{"offset": "-1"}, nil)
		require.Equal(t, int16(protocol.SystemError), resp.Code)
		resp = raw.call(protocol.ViewMessageByID, map[string]string{"offset": "999999999999"}, nil)
		require.Equal(t, int16(protocol.SystemError), resp.Code)
		// An offset inside a record is not a record.
		good := raw.sendV2("BadInputTopic", []byte("a record"))
		_, off, err := message.DecodeOffsetMsgID(good.Ext("msgId"))
		require.NoError(t, err)
		for _, d := range []int64{1, 4, 20, 90} {
			resp = raw.call(protocol.ViewMessageByID, map[string]string{"offset": strconv.FormatInt(off+d, 10)}, nil)
			require.Equal(t, int16(protocol.SystemError), resp.Code, "VIEW at record start + %d", d)
		}
		// Undecodable bodies.
		resp = raw.call(protocol.HeartBeat, nil, []byte("{not json"))
		require.Equal(t, int16(protocol.SystemError), resp.Code)
		for _, body := range [][]byte{[]byte("short"), bytes.Repeat([]byte{0, 0, 0, 30}, 8), batchBody("ok", "ok")[:40]} {
			resp = raw.call(protocol.SendBatchMessage, batchHeader("BadInputTopic", ""), body)
			require.Equal(t, int16(protocol.MessageIllegal), resp.Code, "batch body %x", body)
		}
		// Queue ids out of range.
		h := protocol.SendMessageRequestHeader{ProducerGroup: "raw", Topic: "BadInputTopic", DefaultTopic: "TBW102",
			DefaultTopicQueueNums: 4, QueueID: 64, BornTimestamp: time.Now().UnixMilli()}
		var ext remoting.Ext
		h.EncodeExtV2(&ext)
		resp = raw.call(protocol.SendMessageV2, ext.Map(), []byte("x"))
		require.Equal(t, int16(protocol.InvalidParameter), resp.Code, resp.Remark)
		resp = raw.call(protocol.PullMessage, map[string]string{
			"consumerGroup": "g", "topic": "BadInputTopic", "queueId": "64", "queueOffset": "0", "maxMsgNums": "32",
			"sysFlag": "4", "commitOffset": "0", "suspendTimeoutMillis": "0", "subscription": "*", "subVersion": "0",
		}, nil)
		require.Equal(t, int16(protocol.InvalidParameter), resp.Code, resp.Remark)
		sendOK("bad ext fields")
	})

	t.Run("refused sends", func(t *testing.T) {
		for _, topic := range []string{protocol.ScheduleTopic, protocol.TransHalfTopic, protocol.TransOpHalfTopic} {
			resp := raw.sendV2(topic, []byte("x"))
			require.Equal(t, int16(protocol.NoPermission), resp.Code, "send to %s", topic)
		}
		for _, topic := range []string{protocol.AutoCreateTopicKey, protocol.ScheduleTopic, "rmq_sys_mine"} {
			resp := raw.call(protocol.UpdateAndCreateTopic, map[string]string{
				"topic": topic, "defaultTopic": "TBW102", "readQueueNums": "4", "writeQueueNums": "4",
				"perm": "6", "topicFilterType": "SINGLE_TAG", "order": "false",
			}, nil)
			require.Equal(t, int16(protocol.InvalidParameter), resp.Code, "create %s", topic)
		}
		// Queue counts and permissions must be 32-bit integers in range.
		for _, bad := range []map[string]string{
			{"readQueueNums": "abc"}, {"writeQueueNums": "4294967300"}, {"perm": "6.0"},
			{"readQueueNums": "-1"}, {"writeQueueNums": "0", "readQueueNums": "0"}, {"perm": "64"},
		} {
			ext := map[string]string{"topic": "BadQueuesTopic", "defaultTopic": "TBW102", "readQueueNums": "4",
				"writeQueueNums": "4", "perm": "6", "topicFilterType": "SINGLE_TAG", "order": "false"}
			for k, v := range bad {
				ext[k] = v
			}
			resp := raw.call(protocol.UpdateAndCreateTopic, ext, nil)
			require.Equal(t, int16(protocol.InvalidParameter), resp.Code, "create with %v", bad)
		}
		_, ok := c.NameServer.Table().TopicRoute("BadQueuesTopic")
		require.False(t, ok)

		// Batches may not go to a retry topic, nor carry a delay level (spec §6.2).
		resp := raw.call(protocol.SendBatchMessage, batchHeader(protocol.RetryTopic("cg-bad"), ""), batchBody("a", "b"))
		require.Equal(t, int16(protocol.MessageIllegal), resp.Code, "batch to a retry topic: %s", resp.Remark)
		resp = raw.call(protocol.SendBatchMessage, batchHeader("BadInputTopic", "DELAY\x013\x02"), batchBody("a", "b"))
		require.Equal(t, int16(protocol.MessageIllegal), resp.Code, "batch with a delay level: %s", resp.Remark)
		resp = raw.call(protocol.SendBatchMessage, batchHeader("BadInputTopic", ""), batchBody("a", "b"))
		require.Equal(t, int16(protocol.Success), resp.Code, "a plain batch: %s", resp.Remark)
		require.Len(t, strings.Split(resp.Ext("msgId"), ","), 2)

		// Properties longer than 32,767 bytes.
		msg := primitive.NewMessage("BadInputTopic", []byte("x"))
		msg.WithKeys([]string{strings.Repeat("k", 40000)})
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_, err := p.SendSync(ctx, msg)
		require.Error(t, err)
		require.Contains(t, err.Error(), "CODE: 13")
		sendOK("refused sends")
	})

	t.Run("illegal topic names", func(t *testing.T) {
		for _, topic := range []string{"bad topic!", strings.Repeat("t", 200), "tab\ttopic", "标签"} {
			resp := raw.sendV2(topic, []byte("x"))
			require.Equal(t, int16(protocol.InvalidParameter), resp.Code, "SEND_MESSAGE_V2 to %q: %s", topic, resp.Remark)
			resp = raw.call(protocol.UpdateAndCreateTopic, map[string]string{
				"topic": topic, "defaultTopic": "TBW102", "readQueueNums": "4", "writeQueueNums": "4",
				"perm": "6", "topicFilterType": "SINGLE_TAG", "order": "false",
			}, nil)
			require.Equal(t, int16(protocol.InvalidParameter), resp.Code, "UPDATE_AND_CREATE_TOPIC %q", topic)

			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			_, err := p.SendSync(ctx, primitive.NewMessage(topic, []byte("x")))
			cancel()
			require.Error(t, err, "official producer to %q", topic)
			require.Contains(t, err.Error(), "CODE: 29", "official producer to %q", topic)
			_, ok := c.NameServer.Table().TopicRoute(topic)
			require.False(t, ok, "no route for %q", topic)
		}
		sendOK("illegal topics")
	})

	t.Run("oversized bodies", func(t *testing.T) {
		before := raw.maxOffset("BigBodyTopic", 0)
		createTopic(t, c, "BigBodyTopic", 1)
		big := make([]byte, 5<<20)
		rng := rand.New(rand.NewPCG(3, 4))
		for i := range big {
			big[i] = byte(rng.UintN(256))
		}
		resp := raw.sendV2("BigBodyTopic", big)
		require.Equal(t, int16(protocol.MessageIllegal), resp.Code, "5 MiB raw send: %s", resp.Remark)
		resp = raw.sendV2("BigBodyTopic", big[:4<<20+1])
		require.Equal(t, int16(protocol.MessageIllegal), resp.Code, "4 MiB + 1 raw send: %s", resp.Remark)
		resp = raw.sendV2("BigBodyTopic", big[:4<<20])
		require.Equal(t, int16(protocol.Success), resp.Code, "exactly 4 MiB is allowed: %s", resp.Remark)

		// The Go client compresses the random body (it stays > 4 MiB) and sends it.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, err := p.SendSync(ctx, primitive.NewMessage("BigBodyTopic", big))
		cancel()
		require.Error(t, err)
		require.Contains(t, err.Error(), "CODE: 13")
		require.Equal(t, before+1, raw.maxOffset("BigBodyTopic", 0), "only the 4 MiB message was stored")
		rec := raw.viewByOffsetID(resp.Ext("msgId"))
		require.Equal(t, big[:4<<20], rec.Body)
		sendOK("oversized bodies")
	})
}

// TestUnknownTopicWithoutAutoCreate checks TOPIC_NOT_EXIST when auto-creation is off.
func TestUnknownTopicWithoutAutoCreate(t *testing.T) {
	c := testutil.StartCluster(t, testutil.WithBrokerConfig(func(cfg *conf.BrokerConfig) { cfg.AutoCreateTopic = false }))
	raw := newRaw(t, c.BrokerAddr)

	resp := raw.sendV2("NoSuchTopic", []byte("x"))
	require.Equal(t, int16(protocol.TopicNotExist), resp.Code, resp.Remark)
	h := protocol.SendMessageRequestHeader{ProducerGroup: "raw", Topic: "NoSuchTopic", DefaultTopic: "TBW102",
		DefaultTopicQueueNums: 4, QueueID: 0, BornTimestamp: time.Now().UnixMilli()}
	var ext remoting.Ext
	h.EncodeExt(&ext)
	resp = raw.call(protocol.SendMessage, ext.Map(), []byte("x"))
	require.Equal(t, int16(protocol.TopicNotExist), resp.Code, "SEND_MESSAGE V1: %s", resp.Remark)
	resp = raw.call(protocol.PullMessage, map[string]string{
		"consumerGroup": "g", "topic": "NoSuchTopic", "queueId": "0", "queueOffset": "0", "maxMsgNums": "32",
		"sysFlag": "6", "commitOffset": "0", "suspendTimeoutMillis": "1000", "subscription": "*", "subVersion": "0",
	}, nil)
	require.Equal(t, int16(protocol.TopicNotExist), resp.Code, "PULL_MESSAGE: %s", resp.Remark)

	p := newProducer(t, c, "pg-noauto")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := p.SendSync(ctx, primitive.NewMessage("NoSuchTopic", []byte("x")))
	// Without auto-creation there is no TBW102 template route either (as in RocketMQ), so
	// the official producer finds no route and never reaches the broker.
	require.Error(t, err)
	require.Contains(t, err.Error(), "route info not found")
	_, ok := c.NameServer.Table().TopicRoute("TBW102")
	require.False(t, ok, "no TBW102 route without auto-creation")
	_, ok = c.NameServer.Table().TopicRoute("NoSuchTopic")
	require.False(t, ok, "the topic was not created")
	require.Zero(t, raw.maxOffset("NoSuchTopic", 0))

	// A topic created by an administrator works.
	createTopic(t, c, "AdminMadeTopic", 2)
	res, err := p.SendSync(ctx, primitive.NewMessage("AdminMadeTopic", []byte("y")))
	require.NoError(t, err)
	require.Equal(t, primitive.SendOK, res.Status)
}
