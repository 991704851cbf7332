package interop

import (
	"context"
	"io"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
	"github.com/ferrymq/ferry/testutil"
)

// wireConn is a bare TCP connection speaking frames, for checks below the remoting client.
type wireConn struct {
	t     *testing.T
	conn  net.Conn
	codec remoting.Codec
}

func dialWire(t *testing.T, addr string) *wireConn {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	return &wireConn{t: t, conn: conn}
}

// send writes cmd in serialize type st.
func (w *wireConn) send(cmd *remoting.Command, st remoting.SerializeType) {
	w.t.Helper()
	cmd.SerializeType = st
	b, err := w.codec.AppendFrame(nil, cmd)
	require.NoError(w.t, err)
	_, err = w.conn.Write(b)
	require.NoError(w.t, err)
}

// read reads one frame (10 s bound).
func (w *wireConn) read() *remoting.Command {
	w.t.Helper()
	require.NoError(w.t, w.conn.SetReadDeadline(time.Now().Add(10*time.Second)))
	var head [4]byte
	_, err := io.ReadFull(w.conn, head[:])
	require.NoError(w.t, err)
	n, err := remoting.ParseLength(head[:], remoting.DefaultMaxFrameSize)
	require.NoError(w.t, err)
	frame := make([]byte, n)
	_, err = io.ReadFull(w.conn, frame)
	require.NoError(w.t, err)
	cmd, err := w.codec.DecodeFrame(frame)
	require.NoError(w.t, err)
	return cmd
}

// TestWireRules checks header-level rules of the protocol on a bare connection: responses
// copy the request's opaque and serialize type, oneway requests get no response, and
// unknown codes are answered 3 in either codec.
func TestWireRules(t *testing.T) {
	c := testutil.StartCluster(t)
	w := dialWire(t, c.BrokerAddr)
	maxReq := func(opaque int32, flag int32) *remoting.Command {
		req := remoting.NewRequest(int16(protocol.GetMaxOffset), map[string]string{"topic": "WireTopic", "queueId": "0"})
		req.Opaque, req.Flag = opaque, flag
		return req
	}
	// A oneway request (flag bit 1) is served silently: the next frame read answers the
	// request after it.
	w.send(maxReq(41, remoting.FlagOneway), remoting.SerializeJSON)
	unknown := remoting.NewRequest(777, nil)
	unknown.Opaque, unknown.Flag = 42, remoting.FlagOneway
	w.send(unknown, remoting.SerializeJSON)
	for i, st := range []remoting.SerializeType{remoting.SerializeJSON, remoting.SerializeRocketMQ, remoting.SerializeJSON} {
		opaque := int32(100 + i)
		w.send(maxReq(opaque, 0), st)
		resp := w.read()
		require.Equal(t, opaque, resp.Opaque, "response to opaque %d", opaque)
		require.True(t, resp.IsResponse())
		require.Equal(t, st, resp.SerializeType, "response codec follows the request")
		require.Equal(t, int16(protocol.Success), resp.Code)
		require.Equal(t, "0", resp.Ext("offset"))

		u := remoting.NewRequest(int16(9000+i), map[string]string{"a": "b"})
		u.Opaque = opaque + 50
		w.send(u, st)
		resp = w.read()
		require.Equal(t, opaque+50, resp.Opaque)
		require.Equal(t, st, resp.SerializeType)
		require.Equal(t, int16(protocol.RequestCodeNotSupported), resp.Code)
	}
}

// TestLongPollSharedConnection checks long polling on one connection, as the official
// client uses it: a held pull does not delay other requests on the connection, it is
// answered as soon as a message arrives, and without one it is held for its timeout
// (never answered at once, which would make the Go client spin).
func TestLongPollSharedConnection(t *testing.T) {
	const topic = "LongPollTopic"
	c := testutil.StartCluster(t)
	createTopic(t, c, topic, 2)
	raw := newRaw(t, c.BrokerAddr)
	pull := func(q int, timeout time.Duration) *remoting.Command {
		return remoting.NewRequest(int16(protocol.PullMessage), map[string]string{
			"consumerGroup": "cg-longpoll", "topic": topic, "queueId": strconv.Itoa(q), "queueOffset": "0",
			"maxMsgNums": "32", "sysFlag": "6", "commitOffset": "0", "subscription": "*", "subVersion": "0",
			"suspendTimeoutMillis": strconv.FormatInt(timeout.Milliseconds(), 10), "expressionType": "TAG",
		})
	}
	type answer struct {
		resp *remoting.Command
		err  error
		at   time.Time
	}
	held := make(chan answer, 1)
	start := time.Now()
	require.NoError(t, raw.cli.InvokeAsync(context.Background(), c.BrokerAddr, pull(0, 20*time.Second), func(resp *remoting.Command, err error) {
		held <- answer{resp, err, time.Now()}
	}))
	timedOut := make(chan answer, 1)
	require.NoError(t, raw.cli.InvokeAsync(context.Background(), c.BrokerAddr, pull(1, time.Second), func(resp *remoting.Command, err error) {
		timedOut <- answer{resp, err, time.Now()}
	}))

	// Other requests on the same connection are answered while both pulls are held.
	for range 20 {
		require.Zero(t, raw.maxOffset(topic, 0))
	}
	select {
	case a := <-held:
		t.Fatalf("pull on an empty queue answered at once: %+v", a)
	default:
	}

	// The 1 s pull ends with PULL_NOT_FOUND after about its timeout.
	select {
	case a := <-timedOut:
		require.NoError(t, a.err)
		require.Equal(t, int16(protocol.PullNotFound), a.resp.Code)
		require.Equal(t, "0", a.resp.Ext("nextBeginOffset"))
		require.GreaterOrEqual(t, a.at.Sub(start), 900*time.Millisecond, "held for its suspend timeout")
	case <-time.After(15 * time.Second):
		t.Fatal("a pull held beyond its suspend timeout")
	}

	// A message on queue 0 wakes the 20 s pull.
	h := protocol.SendMessageRequestHeader{ProducerGroup: "raw", Topic: topic, DefaultTopic: "TBW102",
		DefaultTopicQueueNums: 4, QueueID: 0, BornTimestamp: time.Now().UnixMilli()}
	var ext remoting.Ext
	h.EncodeExtV2(&ext)
	sentAt := time.Now()
	require.Equal(t, int16(protocol.Success), raw.call(protocol.SendMessageV2, ext.Map(), []byte("wake up")).Code)
	select {
	case a := <-held:
		require.NoError(t, a.err)
		require.Equal(t, int16(protocol.Success), a.resp.Code, a.resp.Remark)
		recs := decodeRecords(t, a.resp.Body)
		require.Len(t, recs, 1)
		require.Equal(t, "wake up", string(recs[0].Body))
		require.Equal(t, "1", a.resp.Ext("nextBeginOffset"))
		require.Less(t, a.at.Sub(sentAt), 10*time.Second, "woken by the message, not by the timeout")
	case <-time.After(15 * time.Second):
		t.Fatal("held pull not woken by a new message")
	}
}
