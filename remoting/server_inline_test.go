package remoting

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// countingTransport counts the socket writes of a connection.
type countingTransport struct {
	transport
	writes *atomic.Int64
}

func (t countingTransport) writeVec(vec [][]byte) error {
	t.writes.Add(1)
	return t.transport.writeVec(vec)
}

// inlineServer starts a server whose routes are given with their options; viaStd serves
// its plain connections on the std path (a permissive TLS port) instead of the reactor.
// It returns the server and the counts of its socket writes and recycled frames.
func inlineServer(t *testing.T, viaStd bool, mutate func(*ServerOptions), routes map[int16]RouteOptions,
	handlers map[int16]Handler) (s *Server, writes, recycled *atomic.Int64) {
	t.Helper()
	opts := DefaultServerOptions()
	if viaStd {
		opts.TLS = newTestPKI(t).serverTLS(TLSPermissive)
	}
	if mutate != nil {
		mutate(&opts)
	}
	s, err := NewServer(opts)
	require.NoError(t, err)
	s.plainViaStd = viaStd
	writes, recycled = new(atomic.Int64), new(atomic.Int64)
	s.wrapTr = func(tr transport) transport { return countingTransport{tr, writes} }
	s.recycled = func() { recycled.Add(1) }
	for code, h := range handlers {
		require.NoError(t, s.HandleRoute(code, h, routes[code]))
	}
	ServeTest(t, s, nil)
	return s, writes, recycled
}

// eachReader runs f with the connection read by the reactor and by a std goroutine.
func eachReader(t *testing.T, f func(t *testing.T, viaStd bool)) {
	t.Run("reactor", func(t *testing.T) { f(t, false) })
	t.Run("std", func(t *testing.T) { f(t, true) })
}

// burst encodes reqs into one buffer, numbering them from opaque 1.
func burst(t *testing.T, reqs ...*Command) []byte {
	t.Helper()
	var codec Codec
	var out []byte
	for i, req := range reqs {
		req.Opaque = int32(i + 1)
		var err error
		out, err = codec.AppendFrame(out, req)
		require.NoError(t, err)
	}
	return out
}

func TestHandleRouteOptions(t *testing.T) {
	s, err := NewServer(DefaultServerOptions())
	require.NoError(t, err)
	require.Error(t, s.HandleRoute(codeEcho, echo, RouteOptions{Inline: true, Pool: DefaultPool}), "an inline route has no pool")
	require.Error(t, s.HandleRoute(codeEcho, echo, RouteOptions{Pool: "nope"}), "unknown pool")
	require.NoError(t, s.HandleRoute(codeEcho, echo, RouteOptions{Inline: true, ReuseFrames: true}))
	require.NoError(t, s.Handle(codeFail, "", echo))
	require.Equal(t, []int16{codeEcho, codeFail}, s.Codes())
	o, ok := s.Route(codeEcho)
	require.True(t, ok)
	require.Equal(t, RouteOptions{Inline: true, ReuseFrames: true}, o)
	o, ok = s.Route(codeFail)
	require.True(t, ok)
	require.Equal(t, RouteOptions{Pool: DefaultPool}, o)
	_, ok = s.Route(codeBlock)
	require.False(t, ok)
}

// The answers to one read's requests — inline handlers, a panic, an unknown code — leave
// in one socket write, in order; a oneway request gets none.
func TestInlineBurstIsAnsweredInOneWrite(t *testing.T) {
	eachReader(t, func(t *testing.T, viaStd bool) {
		rec := newRecorder()
		inline := RouteOptions{Inline: true}
		s, writes, recycled := inlineServer(t, viaStd, func(o *ServerOptions) { o.Observer = rec },
			map[int16]RouteOptions{codeEcho: {Inline: true, ReuseFrames: true}, codePanic: inline, codeOneway: inline},
			map[int16]Handler{
				codeEcho:   echo,
				codePanic:  HandlerFunc(func(context.Context, Channel, *Command) (*Command, error) { panic("inline boom") }),
				codeOneway: echo,
			})
		const echoes = 12
		var reqs []*Command
		for range echoes {
			reqs = append(reqs, NewRequest(codeEcho, map[string]string{"k": "v"}))
		}
		oneway := NewRequest(codeOneway, nil)
		oneway.Flag |= FlagOneway
		reqs = append(reqs, NewRequest(codePanic, nil), oneway, NewRequest(4242, nil))
		conn := dial(t, s)
		_, err := conn.Write(burst(t, reqs...))
		require.NoError(t, err)

		for i := range echoes {
			resp := readFrame(t, conn)
			require.Equal(t, int32(i+1), resp.Opaque)
			require.Equal(t, CodeSuccess, resp.Code)
			require.Equal(t, "v", resp.Ext("k"))
		}
		resp := readFrame(t, conn)
		require.Equal(t, int32(echoes+1), resp.Opaque)
		require.Equal(t, CodeSystemError, resp.Code)
		require.Contains(t, resp.Remark, "inline boom")
		resp = readFrame(t, conn)
		require.Equal(t, int32(echoes+3), resp.Opaque, "no answer to the oneway request")
		require.Equal(t, CodeRequestCodeNotSupported, resp.Code)
		require.Equal(t, int64(1), writes.Load(), "one socket write for the burst")

		got := rec.wait(t, echoes+2)
		require.Len(t, got, echoes+2, "the oneway request is not observed")
		require.Equal(t, answer{codePanic, CodeSystemError, false, got[echoes].elapsed}, got[echoes])
		require.Eventually(t, func() bool { return recycled.Load() == echoes }, 5*time.Second, time.Millisecond,
			"the reusing route's frames are recycled")
		require.Eventually(t, func() bool { return s.RequestBytes() == 0 }, 5*time.Second, time.Millisecond)
		for _, c := range s.conns() {
			require.Zero(t, c.inflight.Load())
		}
	})
}

// A worker's answer is written while the reader is still busy with its burst: it is not
// held until the burst ends.
func TestWorkerAnswerIsNotHeldByTheBurst(t *testing.T) {
	eachReader(t, func(t *testing.T, viaStd bool) {
		gotPooled := make(chan struct{})
		s, _, _ := inlineServer(t, viaStd, nil,
			map[int16]RouteOptions{codeBlock: {Inline: true}, codeEcho: {}},
			map[int16]Handler{
				codeEcho: echo,
				// Blocks the reader (breaking the inline contract on purpose) until the
				// test has read the worker's answer.
				codeBlock: HandlerFunc(func(ctx context.Context, _ Channel, req *Command) (*Command, error) {
					select {
					case <-gotPooled:
						return NewResponse(req, CodeSuccess, "inline"), nil
					case <-time.After(10 * time.Second):
						return nil, errors.New("the worker's answer was held")
					}
				}),
			})
		conn := dial(t, s)
		_, err := conn.Write(burst(t, NewRequest(codeEcho, nil), NewRequest(codeBlock, nil), NewRequest(codeEcho, nil)))
		require.NoError(t, err)
		resp := readFrame(t, conn)
		require.Equal(t, int32(1), resp.Opaque)
		close(gotPooled)
		seen := map[int32]string{}
		for range 2 {
			resp := readFrame(t, conn)
			seen[resp.Opaque] = resp.Remark
			require.Equal(t, CodeSuccess, resp.Code, resp.Remark)
		}
		require.Equal(t, map[int32]string{2: "inline", 3: ""}, seen)
	})
}

// While the server shuts down, an inline code is refused with SYSTEM_BUSY as a pooled
// one is, and an inline request in flight is drained.
func TestInlineRouteDuringShutdown(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	s, err := NewServer(DefaultServerOptions())
	require.NoError(t, err)
	require.NoError(t, s.HandleRoute(codeBlock, HandlerFunc(func(_ context.Context, _ Channel, req *Command) (*Command, error) {
		close(entered)
		<-release
		return NewResponse(req, CodeSuccess, "drained"), nil
	}), RouteOptions{Inline: true}))
	require.NoError(t, s.HandleRoute(codeEcho, echo, RouteOptions{Inline: true}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	require.NoError(t, s.Start(ln))
	held, probe := dial(t, s), dial(t, s)
	_, err = held.Write(burst(t, NewRequest(codeBlock, nil)))
	require.NoError(t, err)
	<-entered
	shutdownDone := shutdownInBackground(s)
	require.Eventually(t, s.closing.Load, 5*time.Second, time.Millisecond)
	_, err = probe.Write(burst(t, NewRequest(codeEcho, nil)))
	require.NoError(t, err)
	require.Equal(t, CodeSystemBusy, readFrame(t, probe).Code)
	close(release)
	resp := readFrame(t, held)
	require.Equal(t, "drained", resp.Remark)
	require.NoError(t, <-shutdownDone)
}

// A corked queue holding corkMaxBytes or corkMaxFrames is flushed by the reader before
// its burst ends, and a non-reader write flushes at once, taking the corked frames along.
func TestOutQueueCork(t *testing.T) {
	var codec Codec
	var flushed [][]byte
	q := outQueue{codec: &codec, flush: func(vec [][]byte) error {
		var all []byte
		for _, p := range vec {
			all = append(all, p...)
		}
		flushed = append(flushed, all)
		return nil
	}}
	frame := func(opaque int32, body int) *Command {
		return &Command{Opaque: opaque, Flag: FlagResponse, Body: make([]byte, body)}
	}
	q.cork()
	require.NoError(t, q.writeFromReader(frame(1, 10)))
	require.NoError(t, q.writeFromReader(frame(2, 10)))
	require.Empty(t, flushed, "held while corked")
	require.NoError(t, q.write(frame(3, 10)))
	require.Len(t, flushed, 1, "a worker's write flushes at once")
	require.NoError(t, q.writeFromReader(frame(4, corkMaxBytes)))
	require.Len(t, flushed, 2, "a full cork is flushed")
	require.NoError(t, q.writeFromReader(frame(5, 10)))
	require.NoError(t, q.uncork())
	require.Len(t, flushed, 3)
	require.NoError(t, q.uncork(), "nothing queued")
	require.Len(t, flushed, 3)
	q.cork()
	for i := range corkMaxFrames + 1 {
		require.NoError(t, q.writeFromReader(frame(int32(6+i), 10)))
	}
	require.Len(t, flushed, 4, "%d frames fill the cork", corkMaxFrames)
	require.NoError(t, q.uncork())
	require.Len(t, flushed, 5)

	var opaques []int32
	for _, f := range flushed {
		for len(f) > 0 {
			n, err := ParseLength(f, DefaultMaxFrameSize)
			require.NoError(t, err)
			cmd, err := codec.DecodeFrame(f[LengthFieldSize : LengthFieldSize+n])
			require.NoError(t, err)
			opaques = append(opaques, cmd.Opaque)
			f = f[LengthFieldSize+n:]
		}
	}
	want := []int32{1, 2, 3, 4, 5}
	for i := range corkMaxFrames + 1 {
		want = append(want, int32(6+i))
	}
	require.Equal(t, want, opaques, "nothing lost or reordered")
}
