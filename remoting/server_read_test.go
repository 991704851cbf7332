package remoting

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/internal/testkit"
)

// readFrameErr reads one frame from a raw connection; unlike readFrame it may be called
// from any goroutine.
func readFrameErr(conn net.Conn, deadline time.Duration) (*Command, error) {
	if err := conn.SetReadDeadline(time.Now().Add(deadline)); err != nil {
		return nil, err
	}
	var head [4]byte
	if _, err := io.ReadFull(conn, head[:]); err != nil {
		return nil, err
	}
	n, err := ParseLength(head[:], DefaultMaxFrameSize)
	if err != nil {
		return nil, err
	}
	frame := make([]byte, n)
	if _, err := io.ReadFull(conn, frame); err != nil {
		return nil, err
	}
	var codec Codec
	return codec.DecodeFrame(frame)
}

// bigEcho returns a whole echo request frame whose length field is frameLen.
func bigEcho(t *testing.T, opaque int32, frameLen int) []byte {
	t.Helper()
	head := partialFrameHead(t, opaque, frameLen)
	frame := make([]byte, LengthFieldSize+frameLen)
	copy(frame, head)
	for i := len(head); i < len(frame); i++ {
		frame[i] = byte(i)
	}
	return frame
}

// smallEcho returns a whole echo request frame with a 3-byte body.
func smallEcho(t testing.TB, opaque int32) []byte {
	t.Helper()
	var codec Codec
	req := NewRequest(codeEcho, nil)
	req.Opaque, req.Body = opaque, []byte("hi!")
	frame, err := codec.AppendFrame(nil, req)
	require.NoError(t, err)
	return frame
}

func dial(t *testing.T, s *Server) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", s.Addr().String())
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// Many connections each hold part of a large frame: the server-wide budget admits as many
// as fit, answers the rest SYSTEM_BUSY from their headers and discards their bodies, keeps
// serving small requests, and gets every byte back when the connections close.
func TestServerWideRequestBytesLimit(t *testing.T) {
	const (
		frameLen = 1<<20 - 1<<10 // four fit in 4 MiB, five do not
		conns    = 8
	)
	var logs testkit.Buffer
	s := testServer(t, func(o *ServerOptions) {
		o.MaxFrameSize = 1 << 20
		o.MaxConnRequestBytes = 1 << 20
		o.MaxRequestBytes = 4 << 20
		o.Logger = zerolog.New(&logs)
	}, map[int16]Handler{codeEcho: echo})

	busy := make(chan *Command, conns)
	held := make([]net.Conn, conns)
	for i := range held {
		conn := dial(t, s)
		held[i] = conn
		frame := bigEcho(t, int32(i), frameLen)
		_, err := conn.Write(frame[:len(frame)/2])
		require.NoError(t, err)
		go func() {
			// Admitted connections hear nothing until they close.
			if resp, err := readFrameErr(conn, time.Minute); err == nil {
				busy <- resp
			}
		}()
	}
	require.Eventually(t, func() bool { return len(busy) == conns-4 && s.RequestBytes() == 4*frameLen },
		10*time.Second, time.Millisecond, "four frames admitted, the others answered SYSTEM_BUSY")
	for range conns - 4 {
		resp := <-busy
		require.Equal(t, CodeSystemBusy, resp.Code)
		require.True(t, resp.IsResponse())
		require.Contains(t, resp.Remark, "MaxRequestBytes=4194304")
	}
	require.Contains(t, logs.String(), "frame refused with SYSTEM_BUSY")

	// A whole big frame on a new connection is refused too; its body is skipped, so the
	// small request behind it on the same connection is read and served.
	late := dial(t, s)
	_, err := late.Write(append(bigEcho(t, 100, frameLen), smallEcho(t, 101)...))
	require.NoError(t, err)
	resp := readFrame(t, late)
	require.Equal(t, CodeSystemBusy, resp.Code)
	require.Equal(t, int32(100), resp.Opaque)
	resp = readFrame(t, late)
	require.Equal(t, CodeSuccess, resp.Code)
	require.Equal(t, int32(101), resp.Opaque)
	require.Equal(t, "hi!", string(resp.Body))

	// Small requests on other connections are still served.
	c := testClient(t, nil)
	resp, err = c.Invoke(context.Background(), s.Addr().String(), NewRequest(codeEcho, map[string]string{"k": "v"}))
	require.NoError(t, err)
	require.Equal(t, "v", resp.Ext("k"))

	for _, conn := range append(held, late) {
		require.NoError(t, conn.Close())
	}
	require.Eventually(t, func() bool { return s.RequestBytes() == 0 }, 10*time.Second, time.Millisecond,
		"closing the connections returns their bytes")

	// With the budget back, a big frame is accepted.
	req := NewRequest(codeEcho, nil)
	req.Body = bigEcho(t, 0, frameLen-1024)[LengthFieldSize:]
	resp, err = c.Invoke(context.Background(), s.Addr().String(), req)
	require.NoError(t, err)
	require.Equal(t, CodeSuccess, resp.Code)
	require.Equal(t, req.Body, resp.Body)
	require.Eventually(t, func() bool { return s.RequestBytes() == 0 }, 10*time.Second, time.Millisecond)
}

// One connection may not hold more than MaxConnRequestBytes; other connections are not
// affected, and the connection's bytes come back when its request is answered.
func TestPerConnectionRequestBytesLimit(t *testing.T) {
	const frameLen = 600 << 10
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	s := testServer(t, func(o *ServerOptions) {
		o.MaxFrameSize = 1 << 20
		o.MaxConnRequestBytes = 1 << 20
		o.MaxRequestBytes = 64 << 20
	}, map[int16]Handler{
		codeEcho: echo,
		codeBlock: HandlerFunc(func(_ context.Context, _ Channel, req *Command) (*Command, error) {
			entered <- struct{}{}
			<-release
			return NewResponse(req, CodeSuccess, "released"), nil
		}),
	})
	a := dial(t, s)
	var codec Codec
	blockReq := NewRequest(codeBlock, nil)
	blockReq.Opaque, blockReq.Body = 1, make([]byte, frameLen-100)
	blockFrame, err := codec.AppendFrame(nil, blockReq)
	require.NoError(t, err)
	_, err = a.Write(blockFrame)
	require.NoError(t, err)
	<-entered
	require.Equal(t, int64(len(blockFrame)-LengthFieldSize), s.RequestBytes(), "the handled request holds its bytes")

	// A second big frame on the same connection is refused by the connection's limit; a
	// small one behind it is still served.
	_, err = a.Write(append(bigEcho(t, 2, frameLen), smallEcho(t, 3)...))
	require.NoError(t, err)
	resp := readFrame(t, a)
	require.Equal(t, int32(2), resp.Opaque)
	require.Equal(t, CodeSystemBusy, resp.Code)
	require.Contains(t, resp.Remark, "MaxConnRequestBytes=1048576")
	resp = readFrame(t, a)
	require.Equal(t, int32(3), resp.Opaque)
	require.Equal(t, CodeSuccess, resp.Code)

	// Another connection can send the same frame.
	b := dial(t, s)
	_, err = b.Write(bigEcho(t, 4, frameLen))
	require.NoError(t, err)
	resp = readFrame(t, b)
	require.Equal(t, CodeSuccess, resp.Code)
	require.Len(t, resp.Body, frameLen-(len(partialFrameHead(t, 4, frameLen))-LengthFieldSize))

	close(release)
	resp = readFrame(t, a)
	require.Equal(t, int32(1), resp.Opaque)
	require.Equal(t, "released", resp.Remark)
	require.Eventually(t, func() bool { return s.RequestBytes() == 0 }, 10*time.Second, time.Millisecond)
	_, err = a.Write(bigEcho(t, 5, frameLen))
	require.NoError(t, err)
	resp = readFrame(t, a)
	require.Equal(t, int32(5), resp.Opaque)
	require.Equal(t, CodeSuccess, resp.Code)
}

// A response frame that does not fit fails the server's waiting Invoke with
// ErrRequestBytesLimit instead of leaving it to time out.
func TestRefusedResponseFailsTheInvoke(t *testing.T) {
	invokeErr := make(chan error, 1)
	s := testServer(t, func(o *ServerOptions) {
		o.MaxFrameSize = 1 << 20
		o.MaxConnRequestBytes = 1 << 20
		o.Logger = zerolog.New(zerolog.NewTestWriter(t))
	}, map[int16]Handler{
		codeCallMe: HandlerFunc(func(ctx context.Context, ch Channel, req *Command) (*Command, error) {
			ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			_, err := ch.Invoke(ctx, NewRequest(codeAskBack, nil))
			invokeErr <- err
			return nil, err
		}),
	})
	conn := dial(t, s)
	var codec Codec
	call := NewRequest(codeCallMe, nil)
	call.Opaque = 7
	frame, err := codec.AppendFrame(nil, call)
	require.NoError(t, err)
	_, err = conn.Write(frame)
	require.NoError(t, err)
	ask := readFrame(t, conn)
	require.Equal(t, codeAskBack, ask.Code)

	// The answer is a maximal frame; with the pending request's bytes it exceeds the
	// connection's limit.
	answer := NewResponse(ask, CodeSuccess, "")
	head, err := codec.AppendFrame(nil, answer)
	require.NoError(t, err)
	binary.BigEndian.PutUint32(head, 1<<20)
	_, err = conn.Write(append(head, make([]byte, 1<<20-(len(head)-LengthFieldSize))...))
	require.NoError(t, err)
	err = <-invokeErr
	require.ErrorIs(t, err, ErrRequestBytesLimit)
	require.Contains(t, err.Error(), "MaxConnRequestBytes")
	resp := readFrame(t, conn)
	require.Equal(t, int32(7), resp.Opaque)
	require.Equal(t, CodeSystemError, resp.Code)
	require.Contains(t, resp.Remark, "request bytes limit")
	require.Eventually(t, func() bool { return s.RequestBytes() == 0 }, 10*time.Second, time.Millisecond)
}

func TestRequestBytesOptions(t *testing.T) {
	o := DefaultServerOptions()
	require.NoError(t, o.Validate())
	conn, total := o.requestLimits()
	require.Equal(t, int64(32<<20), conn)
	require.Equal(t, int64(DefaultMaxRequestBytes), total)
	o.MaxFrameSize = 512 << 20 // a raised frame limit raises the derived limits with it
	require.NoError(t, o.Validate())
	conn, total = o.requestLimits()
	require.Equal(t, int64(1<<30), conn)
	require.Equal(t, int64(1<<30), total)

	for name, tc := range map[string]struct {
		mutate func(*ServerOptions)
		want   string
	}{
		"negative total":       {func(o *ServerOptions) { o.MaxRequestBytes = -1 }, "must not be negative"},
		"negative conn":        {func(o *ServerOptions) { o.MaxConnRequestBytes = -1 }, "must not be negative"},
		"conn below frame":     {func(o *ServerOptions) { o.MaxConnRequestBytes = 1 << 20 }, "below MaxFrameSize"},
		"total below conn":     {func(o *ServerOptions) { o.MaxRequestBytes = 16 << 20 }, "below the per-connection limit"},
		"total below explicit": {func(o *ServerOptions) { o.MaxConnRequestBytes, o.MaxRequestBytes = 20<<20, 18<<20 }, "below the per-connection limit"},
	} {
		t.Run(name, func(t *testing.T) {
			o := DefaultServerOptions()
			tc.mutate(&o)
			err := o.Validate()
			require.Error(t, err)
			require.True(t, strings.Contains(err.Error(), tc.want), err.Error())
			_, err = NewServer(o)
			require.Error(t, err)
		})
	}
}
