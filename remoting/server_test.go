package remoting

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/ferrymq/ferry/internal/leaktest"
	"github.com/ferrymq/ferry/internal/testkit"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, leaktest.Netpoll()...)
}

const (
	codeEcho    int16 = 1000
	codeBlock   int16 = 1001
	codeDefer   int16 = 1002
	codeFail    int16 = 1003
	codeOneway  int16 = 1004
	codeCallMe  int16 = 1005
	codePanic   int16 = 1006
	codeAskBack int16 = 2000 // a request the server sends to the client
)

// testServer starts a server on 127.0.0.1:0 with the given handlers and stops it at cleanup.
func testServer(t *testing.T, mutate func(*ServerOptions), handlers map[int16]Handler) *Server {
	t.Helper()
	opts := DefaultServerOptions()
	opts.Pools = append(opts.Pools, PoolOptions{Name: "slow", Workers: 4, QueueSize: 4})
	if mutate != nil {
		mutate(&opts)
	}
	s, err := NewServer(opts)
	require.NoError(t, err)
	for code, h := range handlers {
		pool := DefaultPool
		if code == codeBlock {
			pool = "slow"
		}
		require.NoError(t, s.Handle(code, pool, h))
	}
	ServeTest(t, s, nil)
	return s
}

func testClient(t *testing.T, mutate func(*ClientOptions)) *Client {
	t.Helper()
	opts := DefaultClientOptions()
	if mutate != nil {
		mutate(&opts)
	}
	c, err := NewClient(opts)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, c.Close()) })
	return c
}

var echo = HandlerFunc(func(_ context.Context, _ Channel, req *Command) (*Command, error) {
	resp := NewResponse(req, CodeSuccess, "")
	resp.ExtFields = req.ExtFields
	resp.Body = req.Body
	return resp, nil
})

func TestOutOfOrderResponsesWhileAHandlerBlocks(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	s := testServer(t, nil, map[int16]Handler{
		codeEcho: echo,
		codeBlock: HandlerFunc(func(_ context.Context, _ Channel, req *Command) (*Command, error) {
			entered <- struct{}{}
			<-release
			return NewResponse(req, CodeSuccess, "released"), nil
		}),
	})
	c := testClient(t, nil)
	addr := s.Addr().String()

	blocked := make(chan *Command, 1)
	go func() {
		resp, err := c.Invoke(context.Background(), addr, NewRequest(codeBlock, nil))
		if err == nil {
			blocked <- resp
		}
		close(blocked)
	}()
	<-entered
	// While the first request is held, many others on the same connection complete.
	for i := range 50 {
		resp, err := c.Invoke(context.Background(), addr, NewRequest(codeEcho, map[string]string{"i": strconv.Itoa(i)}))
		require.NoError(t, err)
		require.Equal(t, strconv.Itoa(i), resp.Ext("i"))
	}
	select {
	case <-blocked:
		t.Fatal("blocked request answered before release")
	default:
	}
	close(release)
	resp, ok := <-blocked
	require.True(t, ok)
	require.Equal(t, "released", resp.Remark)
	require.Len(t, s.Channels(), 1, "all requests shared one connection")
}

func TestDeferredReplyAndHandlerErrors(t *testing.T) {
	var held sync.Map
	s := testServer(t, nil, map[int16]Handler{
		codeDefer: HandlerFunc(func(_ context.Context, ch Channel, req *Command) (*Command, error) {
			held.Store(req.Ext("id"), func() { _ = ch.Reply(req, NewResponse(req, CodeSuccess, "later")) })
			return nil, nil
		}),
		codeFail: HandlerFunc(func(_ context.Context, _ Channel, req *Command) (*Command, error) {
			if req.Ext("typed") == "true" {
				return nil, &CodeError{Code: 17, Remark: "no topic"}
			}
			return nil, errors.New("boom")
		}),
		codePanic: HandlerFunc(func(context.Context, Channel, *Command) (*Command, error) { panic("bad handler") }),
	})
	c := testClient(t, nil)
	addr := s.Addr().String()

	resp, err := c.Invoke(context.Background(), addr, NewRequest(codeFail, nil))
	require.NoError(t, err)
	require.Equal(t, CodeSystemError, resp.Code)
	require.Equal(t, "boom", resp.Remark)
	resp, err = c.Invoke(context.Background(), addr, NewRequest(codeFail, map[string]string{"typed": "true"}))
	require.NoError(t, err)
	require.Equal(t, int16(17), resp.Code)
	resp, err = c.Invoke(context.Background(), addr, NewRequest(codePanic, nil))
	require.NoError(t, err)
	require.Equal(t, CodeSystemError, resp.Code)
	require.Contains(t, resp.Remark, "bad handler")

	done := make(chan *Command, 1)
	require.NoError(t, c.InvokeAsync(context.Background(), addr, NewRequest(codeDefer, map[string]string{"id": "x"}),
		func(resp *Command, err error) {
			if err == nil {
				done <- resp
			}
			close(done)
		}))
	var answer any
	require.Eventually(t, func() bool { var ok bool; answer, ok = held.Load("x"); return ok }, 5*time.Second, time.Millisecond)
	answer.(func())()
	got, ok := <-done
	require.True(t, ok)
	require.Equal(t, "later", got.Remark)
}

func TestUnknownCodeAnsweredNotSupported(t *testing.T) {
	s := testServer(t, nil, map[int16]Handler{codeEcho: echo})
	c := testClient(t, nil)
	resp, err := c.Invoke(context.Background(), s.Addr().String(), NewRequest(4242, nil))
	require.NoError(t, err)
	require.Equal(t, CodeRequestCodeNotSupported, resp.Code)
	require.Contains(t, resp.Remark, "4242")
}

func TestServerInitiatedRequestAnsweredByClient(t *testing.T) {
	var serverSide atomic.Value
	s := testServer(t, nil, map[int16]Handler{
		codeCallMe: HandlerFunc(func(_ context.Context, ch Channel, req *Command) (*Command, error) {
			serverSide.Store(ch)
			return NewResponse(req, CodeSuccess, ""), nil
		}),
	})
	for _, st := range []SerializeType{SerializeJSON, SerializeRocketMQ, SerializeMsgpack} {
		t.Run(st.String(), func(t *testing.T) {
			c := testClient(t, func(o *ClientOptions) { o.SerializeType = st })
			var seenType atomic.Int32
			c.Handle(codeAskBack, HandlerFunc(func(_ context.Context, _ Channel, req *Command) (*Command, error) {
				seenType.Store(int32(req.SerializeType))
				resp := NewResponse(req, CodeSuccess, "client says "+req.Ext("q"))
				return resp, nil
			}))
			_, err := c.Invoke(context.Background(), s.Addr().String(), NewRequest(codeCallMe, nil))
			require.NoError(t, err)
			ch := serverSide.Load().(Channel)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			resp, err := ch.Invoke(ctx, NewRequest(codeAskBack, map[string]string{"q": "state?"}))
			require.NoError(t, err)
			require.Equal(t, "client says state?", resp.Remark)
			require.Equal(t, int32(st), seenType.Load(), "server request uses the peer's last type")

			// A request code the client has no handler for is answered, not ignored.
			resp, err = ch.Invoke(ctx, NewRequest(codeAskBack+1, nil))
			require.NoError(t, err)
			require.Equal(t, CodeRequestCodeNotSupported, resp.Code)
		})
	}
}

func TestOnewayRequestsGetNoResponse(t *testing.T) {
	got := make(chan string, 10)
	s := testServer(t, nil, map[int16]Handler{
		codeOneway: HandlerFunc(func(_ context.Context, _ Channel, req *Command) (*Command, error) {
			got <- req.Ext("n")
			return NewResponse(req, CodeSuccess, "must not be sent"), nil
		}),
		codeEcho: echo,
	})
	conn, err := net.Dial("tcp", s.Addr().String())
	require.NoError(t, err)
	defer conn.Close()
	var codec Codec
	oneway := &Command{Code: codeOneway, Flag: FlagOneway, Opaque: 1, ExtFields: ExtOf(map[string]string{"n": "1"})}
	frame, err := codec.AppendFrame(nil, oneway)
	require.NoError(t, err)
	// An unknown code sent oneway gets no answer either.
	frame, err = codec.AppendFrame(frame, &Command{Code: 4242, Flag: FlagOneway, Opaque: 2})
	require.NoError(t, err)
	frame, err = codec.AppendFrame(frame, &Command{Code: codeEcho, Opaque: 3})
	require.NoError(t, err)
	_, err = conn.Write(frame)
	require.NoError(t, err)
	require.Equal(t, "1", <-got)
	// The only frame that comes back is the echo's response.
	resp := readFrame(t, conn)
	require.Equal(t, int32(3), resp.Opaque)
	require.True(t, resp.IsResponse())

	// The client's oneway call returns once written.
	c := testClient(t, nil)
	require.NoError(t, c.InvokeOneway(context.Background(), s.Addr().String(),
		NewRequest(codeOneway, map[string]string{"n": "2"})))
	require.Equal(t, "2", <-got)
}

func TestTimeouts(t *testing.T) {
	var mu sync.Mutex
	var late []func()
	s := testServer(t, nil, map[int16]Handler{
		codeDefer: HandlerFunc(func(_ context.Context, ch Channel, req *Command) (*Command, error) {
			mu.Lock()
			late = append(late, func() { _ = ch.Reply(req, NewResponse(req, CodeSuccess, "too late")) })
			mu.Unlock()
			return nil, nil
		}),
	})
	// Answer the held requests at the end: the client has given up on them and drops the
	// late responses, and the server can drain for shutdown.
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, f := range late {
			f()
		}
	})
	c := testClient(t, func(o *ClientOptions) { o.RequestTimeout = 50 * time.Millisecond })
	addr := s.Addr().String()

	_, err := c.Invoke(context.Background(), addr, NewRequest(codeDefer, nil))
	require.ErrorIs(t, err, ErrTimeout, "default request timeout")

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	_, err = c.Invoke(ctx, addr, NewRequest(codeDefer, nil))
	require.ErrorIs(t, err, ErrTimeout, "context deadline")

	done := make(chan error, 1)
	require.NoError(t, c.InvokeAsync(context.Background(), addr, NewRequest(codeDefer, nil),
		func(_ *Command, err error) { done <- err }))
	require.ErrorIs(t, <-done, ErrTimeout, "async timeout")

	_, err = c.Invoke(context.Background(), "127.0.0.1:1", NewRequest(codeDefer, nil))
	require.ErrorIs(t, err, ErrConnClosed, "dial failure")
}

func TestOversizedFrameClosesOnlyThatConnection(t *testing.T) {
	s := testServer(t, func(o *ServerOptions) { o.MaxFrameSize = 1 << 20 }, map[int16]Handler{codeEcho: echo})
	c := testClient(t, nil)
	addr := s.Addr().String()
	_, err := c.Invoke(context.Background(), addr, NewRequest(codeEcho, nil))
	require.NoError(t, err)

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	bad, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer bad.Close()
	var hdr [8]byte
	binary.BigEndian.PutUint32(hdr[:], 1<<30) // claims a 1 GiB frame
	_, err = bad.Write(hdr[:])
	require.NoError(t, err)
	require.NoError(t, bad.SetReadDeadline(time.Now().Add(5*time.Second)))
	_, err = bad.Read(make([]byte, 1))
	require.ErrorIs(t, err, io.EOF, "server closes the connection")
	runtime.ReadMemStats(&after)
	require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(256<<20), "the claimed 1 GiB was never allocated")

	resp, err := c.Invoke(context.Background(), addr, NewRequest(codeEcho, map[string]string{"k": "v"}))
	require.NoError(t, err)
	require.Equal(t, "v", resp.Ext("k"))
}

func TestGarbageOnOneConnectionLeavesOthersWorking(t *testing.T) {
	s := testServer(t, nil, map[int16]Handler{codeEcho: echo})
	addr := s.Addr().String()
	c := testClient(t, nil)

	var wg sync.WaitGroup
	stop := make(chan struct{})
	var served atomic.Int64
	errs := make(chan error, 4)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				resp, err := c.Invoke(context.Background(), addr, NewRequest(codeEcho, map[string]string{"i": strconv.Itoa(i)}))
				if err != nil || resp.Ext("i") != strconv.Itoa(i) {
					errs <- errors.Join(err, errors.New("bad echo"))
					return
				}
				served.Add(1)
			}
		}()
	}
	garbage := [][]byte{
		{0, 0, 0, 12, 0, 0, 0, 8, 'n', 'o', 't', ' ', 'j', 's', 'o', 'n'},                // bad JSON header
		{0, 0, 0, 6, 9, 0, 0, 2, '{', '}'},                                               // unknown serialize type
		{0, 0, 0, 6, 0, 0, 0, 99, '{', '}'},                                              // header longer than frame
		{0xff, 0xff, 0xff, 0xff, 1, 2, 3},                                                // negative length
		[]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"),                                      // another protocol
		{0, 0, 0, 10, 1, 0, 0, 6, 0, 1, 2, 3, 4, 5},                                      // short binary header
		{0, 0, 0, 8, 2, 0, 0, 4, 0x94, 1, 2, 3},                                          // short msgpack header
		{0, 0, 0, 0x20, 0, 0, 0, 0x1c, '{', '"', 'c', 'o', 'd', 'e', '"', ':', '1', '}'}, // truncated then closed
	}
	for _, g := range garbage {
		conn, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		_, err = conn.Write(g)
		require.NoError(t, err)
		if g[3] == 0x20 {
			require.NoError(t, conn.Close()) // peer vanishes mid-frame
			continue
		}
		require.NoError(t, conn.SetReadDeadline(time.Now().Add(5*time.Second)))
		_, err = conn.Read(make([]byte, 64))
		require.Error(t, err, "garbage %q: server closes the connection without answering", g)
		require.NoError(t, conn.Close())
	}
	n := served.Load()
	for deadline := time.Now().Add(5 * time.Second); served.Load() <= n+100; {
		select {
		case err := <-errs:
			t.Fatalf("a well-behaved connection failed: %v", err)
		case <-time.After(time.Millisecond):
		}
		require.True(t, time.Now().Before(deadline), "the well-behaved connection is no longer served")
	}
	close(stop)
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
}

func TestResponsesUseTheRequestHeaderType(t *testing.T) {
	s := testServer(t, nil, map[int16]Handler{codeEcho: echo})
	conn, err := net.Dial("tcp", s.Addr().String())
	require.NoError(t, err)
	defer conn.Close()
	var codec Codec
	// Interleave the three types on one connection, plus an unknown code per type.
	for i, st := range []SerializeType{SerializeMsgpack, SerializeJSON, SerializeRocketMQ, SerializeJSON, SerializeMsgpack} {
		for _, code := range []int16{codeEcho, 4242} {
			req := &Command{Code: code, Opaque: int32(i*10 + int(code%7)), SerializeType: st}
			frame, err := codec.AppendFrame(nil, req)
			require.NoError(t, err)
			_, err = conn.Write(frame)
			require.NoError(t, err)
			resp := readFrame(t, conn)
			require.Equal(t, st, resp.SerializeType, "request %d", i)
			require.Equal(t, req.Opaque, resp.Opaque)
		}
	}
}

func TestFullPoolAnswersSystemBusy(t *testing.T) {
	release := make(chan struct{})
	s := testServer(t, nil, map[int16]Handler{
		codeBlock: HandlerFunc(func(_ context.Context, _ Channel, req *Command) (*Command, error) {
			<-release
			return NewResponse(req, CodeSuccess, ""), nil
		}),
	})
	c := testClient(t, nil)
	addr := s.Addr().String()
	// 4 workers + 4 queue slots; the 9th and later are refused at once.
	results := make(chan int16, 12)
	for range 12 {
		require.NoError(t, c.InvokeAsync(context.Background(), addr, NewRequest(codeBlock, nil), func(resp *Command, err error) {
			if err != nil {
				results <- -1
				return
			}
			results <- resp.Code
		}))
	}
	for range 4 {
		require.Equal(t, CodeSystemBusy, <-results)
	}
	close(release)
	for range 8 {
		require.Equal(t, CodeSuccess, <-results)
	}
}

func TestGracefulShutdownDrainsInFlight(t *testing.T) {
	opts := DefaultServerOptions()
	release := make(chan struct{})
	entered := make(chan struct{}, 3)
	s, err := NewServer(opts)
	require.NoError(t, err)
	require.NoError(t, s.Handle(codeBlock, "", HandlerFunc(func(_ context.Context, _ Channel, req *Command) (*Command, error) {
		entered <- struct{}{}
		<-release
		return NewResponse(req, CodeSuccess, "drained"), nil
	})))
	require.NoError(t, s.Handle(codeEcho, "", echo))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	require.NoError(t, s.Start(ln))
	c := testClient(t, func(o *ClientOptions) { o.RequestTimeout = 10 * time.Second })
	addr := s.Addr().String()
	results := make(chan *Command, 3)
	for range 3 {
		require.NoError(t, c.InvokeAsync(context.Background(), addr, NewRequest(codeBlock, nil), func(resp *Command, err error) {
			if err != nil {
				resp = nil
			}
			results <- resp
		}))
		<-entered
	}
	shutdownDone := shutdownInBackground(s)
	// New requests during the drain are refused, the held ones are still answered.
	require.Eventually(t, func() bool {
		resp, err := c.Invoke(context.Background(), addr, NewRequest(codeEcho, nil))
		return err == nil && resp.Code == CodeSystemBusy
	}, 5*time.Second, time.Millisecond)
	select {
	case <-shutdownDone:
		t.Fatal("shutdown returned while requests were in flight")
	default:
	}
	close(release)
	for range 3 {
		resp := <-results
		require.NotNil(t, resp)
		require.Equal(t, "drained", resp.Remark)
	}
	require.NoError(t, <-shutdownDone)
	_, err = net.DialTimeout("tcp", addr, time.Second)
	require.Error(t, err, "listener closed")
}

func TestIdleConnectionsAreClosed(t *testing.T) {
	closed := make(chan uint64, 1)
	s := testServer(t, func(o *ServerOptions) {
		o.IdleTimeout = 100 * time.Millisecond
		o.OnClose = func(ch Channel) {
			// Later connections may idle out too (a slow machine), and shutdown closes the
			// last one: only the first close matters, and OnClose must never block.
			select {
			case closed <- ch.ID():
			default:
			}
		}
	}, map[int16]Handler{codeEcho: echo})
	c := testClient(t, nil)
	_, err := c.Invoke(context.Background(), s.Addr().String(), NewRequest(codeEcho, nil))
	require.NoError(t, err)
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("idle connection not closed")
	}
	// Once the client has seen the close, it reconnects on next use.
	require.Eventually(t, func() bool {
		resp, err := c.Invoke(context.Background(), s.Addr().String(), NewRequest(codeEcho, map[string]string{"again": "1"}))
		return err == nil && resp.Ext("again") == "1"
	}, 5*time.Second, time.Millisecond)
}

func TestClientConnectionPool(t *testing.T) {
	s := testServer(t, nil, map[int16]Handler{codeEcho: echo})
	c := testClient(t, func(o *ClientOptions) { o.ConnsPerAddr = 3 })
	for range 9 {
		_, err := c.Invoke(context.Background(), s.Addr().String(), NewRequest(codeEcho, nil))
		require.NoError(t, err)
	}
	require.Len(t, s.Channels(), 3)
	require.NoError(t, c.Close())
	_, err := c.Invoke(context.Background(), s.Addr().String(), NewRequest(codeEcho, nil))
	require.ErrorIs(t, err, ErrClosed)
	require.Eventually(t, func() bool { return len(s.Channels()) == 0 }, 5*time.Second, time.Millisecond)
}

func TestPendingCallsFailWhenServerGoesAway(t *testing.T) {
	opts := DefaultServerOptions()
	s, err := NewServer(opts)
	require.NoError(t, err)
	entered := make(chan struct{})
	require.NoError(t, s.Handle(codeDefer, "", HandlerFunc(func(_ context.Context, ch Channel, _ *Command) (*Command, error) {
		close(entered)
		return nil, ch.Close()
	})))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	require.NoError(t, s.Start(ln))
	c := testClient(t, func(o *ClientOptions) { o.RequestTimeout = 10 * time.Second })
	_, err = c.Invoke(context.Background(), s.Addr().String(), NewRequest(codeDefer, nil))
	require.ErrorIs(t, err, ErrConnClosed)
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	// The deferred request was never answered: shutdown reports the drain timeout.
	require.ErrorIs(t, s.Shutdown(ctx), context.DeadlineExceeded)
}

// readFrame reads one frame from a raw connection.
func readFrame(t *testing.T, conn net.Conn) *Command {
	t.Helper()
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(5*time.Second)))
	var head [4]byte
	_, err := io.ReadFull(conn, head[:])
	require.NoError(t, err)
	n, err := ParseLength(head[:], DefaultMaxFrameSize)
	require.NoError(t, err)
	frame := make([]byte, n)
	_, err = io.ReadFull(conn, frame)
	require.NoError(t, err)
	var codec Codec
	cmd, err := codec.DecodeFrame(frame)
	require.NoError(t, err)
	return cmd
}

func TestZeroCopyBodiesAndWrittenCallback(t *testing.T) {
	written := make(chan error, 1)
	big := make([]byte, 1<<20)
	for i := range big {
		big[i] = byte(i * 7)
	}
	s := testServer(t, nil, map[int16]Handler{
		codeEcho: echo,
		codeDefer: HandlerFunc(func(_ context.Context, _ Channel, req *Command) (*Command, error) {
			resp := NewResponse(req, CodeSuccess, "")
			resp.Body = []byte("head|")
			resp.BodyVec = [][]byte{big[:10], {}, big[10:]}
			resp.OnWritten = func(err error) { written <- err }
			return resp, nil
		}),
	})
	c := testClient(t, nil)
	resp, err := c.Invoke(context.Background(), s.Addr().String(), NewRequest(codeDefer, nil))
	require.NoError(t, err)
	require.NoError(t, <-written, "OnWritten reports success")
	require.Equal(t, "head|", string(resp.Body[:5]))
	require.Equal(t, big, resp.Body[5:])

	// A large request body (referenced, not copied, on the way out) echoes intact.
	req := NewRequest(codeEcho, nil)
	req.Body = big
	resp, err = c.Invoke(context.Background(), s.Addr().String(), req)
	require.NoError(t, err)
	require.Equal(t, big, resp.Body)
}

// Shutdown right after Start must not hang (netpoll's Serve may not have begun yet).
func TestShutdownRightAfterStart(t *testing.T) {
	for range 20 {
		s, err := NewServer(DefaultServerOptions())
		require.NoError(t, err)
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		require.NoError(t, s.Start(ln))
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		require.NoError(t, s.Shutdown(ctx))
		cancel()
	}
}

// A response that cannot be encoded (here a header over the 24-bit limit) is replaced by
// SYSTEM_ERROR naming the reason; the caller never waits for its timeout.
func TestUnencodableResponseIsAnsweredWithAnError(t *testing.T) {
	const codeHuge int16 = 1007
	huge := strings.Repeat("x", 17<<20)
	s := testServer(t, nil, map[int16]Handler{codeHuge: HandlerFunc(func(_ context.Context, _ Channel, req *Command) (*Command, error) {
		resp := NewResponse(req, CodeSuccess, "")
		resp.ExtFields.Set("msgId", huge)
		return resp, nil
	})})
	c := testClient(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := c.Invoke(ctx, s.Addr().String(), NewRequest(codeHuge, nil))
	require.NoError(t, err)
	require.Equal(t, CodeSystemError, resp.Code)
	require.Contains(t, resp.Remark, "header too large")
}

// A TLS client on a plain port is told apart from a garbage frame: the log says TLS is
// not enabled there, and the connection is closed (the handshake fails at once).
func TestTLSHandshakeOnPlainPortIsRecognised(t *testing.T) {
	var logs testkit.Buffer
	s := testServer(t, func(o *ServerOptions) { o.Logger = zerolog.New(&logs) }, map[int16]Handler{codeEcho: echo})
	conn, err := tls.Dial("tcp", s.Addr().String(), &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // the handshake is meant to fail
	if err == nil {
		_ = conn.Close()
	}
	require.Error(t, err, "the handshake cannot succeed")
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), "TLS is not enabled on this port") },
		5*time.Second, time.Millisecond)
	require.Contains(t, logs.String(), ErrTLSNotEnabled.Error())
}

// shutdownInBackground starts s.Shutdown (bounded by 10 s) on its own goroutine and
// returns the channel its result arrives on.
func shutdownInBackground(s *Server) <-chan error {
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		done <- s.Shutdown(ctx)
	}()
	return done
}
