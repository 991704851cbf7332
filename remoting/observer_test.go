package remoting

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// answer is one RequestObserver report.
type answer struct {
	request, response int16
	held              bool
	elapsed           time.Duration
}

// recorder is a RequestObserver keeping every report.
type recorder struct {
	mu  sync.Mutex
	got []answer
	new chan struct{} // a report arrived (buffered 1)
}

func newRecorder() *recorder { return &recorder{new: make(chan struct{}, 1)} }

func (r *recorder) Answered(request, response int16, held bool, elapsed time.Duration) {
	r.mu.Lock()
	r.got = append(r.got, answer{request, response, held, elapsed})
	r.mu.Unlock()
	select {
	case r.new <- struct{}{}:
	default:
	}
}

// wait returns the reports once there are n of them.
func (r *recorder) wait(t *testing.T, n int) []answer {
	t.Helper()
	for {
		r.mu.Lock()
		got := append([]answer(nil), r.got...)
		r.mu.Unlock()
		if len(got) >= n {
			return got
		}
		select {
		case <-r.new:
		case <-time.After(10 * time.Second):
			t.Fatalf("%d reports of %d after 10s: %+v", len(got), n, got)
		}
	}
}

// The Observer hears of every answered request with its code and the answer's: handled,
// failed, deferred (held, with the time it was held counted), refused by a full pool,
// unsupported — and never of a oneway request.
func TestObserverSeesEveryAnswer(t *testing.T) {
	rec := newRecorder()
	release := make(chan struct{})
	entered := make(chan struct{}, 16)
	var (
		deferMu sync.Mutex
		deferCh Channel
		deferRq *Command
	)
	s := testServer(t, func(o *ServerOptions) { o.Observer = rec }, map[int16]Handler{
		codeEcho: echo,
		codeFail: HandlerFunc(func(context.Context, Channel, *Command) (*Command, error) {
			return nil, &CodeError{Code: 17, Remark: "no"}
		}),
		codeDefer: HandlerFunc(func(_ context.Context, ch Channel, req *Command) (*Command, error) {
			deferMu.Lock()
			deferCh, deferRq = ch, req
			deferMu.Unlock()
			entered <- struct{}{}
			return nil, nil
		}),
		codeBlock: HandlerFunc(func(_ context.Context, _ Channel, req *Command) (*Command, error) {
			entered <- struct{}{}
			<-release
			return NewResponse(req, CodeSuccess, ""), nil
		}),
		codeOneway: HandlerFunc(func(_ context.Context, _ Channel, req *Command) (*Command, error) {
			return NewResponse(req, CodeSuccess, "never sent"), nil
		}),
	})
	c := testClient(t, nil)
	addr := s.Addr().String()
	ctx := context.Background()

	resp, err := c.Invoke(ctx, addr, NewRequest(codeEcho, nil))
	require.NoError(t, err)
	require.Equal(t, CodeSuccess, resp.Code)
	resp, err = c.Invoke(ctx, addr, NewRequest(codeFail, nil))
	require.NoError(t, err)
	require.Equal(t, int16(17), resp.Code)
	resp, err = c.Invoke(ctx, addr, NewRequest(4242, nil))
	require.NoError(t, err)
	require.Equal(t, CodeRequestCodeNotSupported, resp.Code)
	require.NoError(t, c.InvokeOneway(ctx, addr, NewRequest(codeOneway, nil)))
	got := rec.wait(t, 3)
	require.Equal(t, []answer{{codeEcho, CodeSuccess, false, got[0].elapsed}, {codeFail, 17, false, got[1].elapsed},
		{4242, CodeRequestCodeNotSupported, false, got[2].elapsed}}, got[:3])
	for _, a := range got[:3] {
		require.Positive(t, a.elapsed, "%+v", a)
	}

	// A deferred answer is reported held, and its latency covers the time it was held.
	deferred := make(chan *Command, 1)
	require.NoError(t, c.InvokeAsync(ctx, addr, NewRequest(codeDefer, nil), func(resp *Command, err error) {
		require.NoError(t, err)
		deferred <- resp
	}))
	<-entered
	heldFrom := time.Now()
	rec.mu.Lock()
	require.Len(t, rec.got, 3, "nothing reported before the answer; the oneway request never")
	rec.mu.Unlock()
	deferMu.Lock()
	heldFor := time.Since(heldFrom)
	require.NoError(t, deferCh.Reply(deferRq, NewResponse(deferRq, CodeSuccess, "later")))
	deferMu.Unlock()
	require.Equal(t, "later", (<-deferred).Remark)
	got = rec.wait(t, 4)
	require.Equal(t, codeDefer, got[3].request)
	require.True(t, got[3].held)
	require.GreaterOrEqual(t, got[3].elapsed, heldFor)

	// 4 workers and 4 queue slots of the slow pool: the 9th and 10th are refused.
	results := make(chan int16, 10)
	for range 10 {
		require.NoError(t, c.InvokeAsync(ctx, addr, NewRequest(codeBlock, nil), func(resp *Command, err error) {
			require.NoError(t, err)
			results <- resp.Code
		}))
	}
	for range 2 {
		require.Equal(t, CodeSystemBusy, <-results)
	}
	close(release)
	for range 8 {
		require.Equal(t, CodeSuccess, <-results)
	}
	got = rec.wait(t, 14)
	busy := 0
	for _, a := range got[4:] {
		require.Equal(t, codeBlock, a.request)
		if a.response == CodeSystemBusy {
			busy++
		}
	}
	require.Equal(t, 2, busy)
}

// A frame refused for the request-bytes limit is reported as answered SYSTEM_BUSY.
func TestObserverSeesRefusedFrames(t *testing.T) {
	rec := newRecorder()
	release, entered := make(chan struct{}), make(chan struct{}, 1)
	s := testServer(t, func(o *ServerOptions) {
		o.Observer = rec
		o.MaxFrameSize = 1 << 20
		o.MaxConnRequestBytes = 1 << 20
		o.MaxRequestBytes = 1 << 20
	}, map[int16]Handler{codeEcho: echo, codeBlock: HandlerFunc(func(_ context.Context, _ Channel, req *Command) (*Command, error) {
		entered <- struct{}{}
		<-release
		return NewResponse(req, CodeSuccess, ""), nil
	})})
	conn, err := net.Dial("tcp", s.Addr().String())
	require.NoError(t, err)
	defer conn.Close()
	var codec Codec
	// The first frame is held by its handler; the second does not fit beside it in the
	// 1 MiB per-connection budget and is refused from its header.
	frame, err := codec.AppendFrame(nil, &Command{Code: codeBlock, Opaque: 9, Body: make([]byte, 1<<20-1024)})
	require.NoError(t, err)
	_, err = conn.Write(frame)
	require.NoError(t, err)
	<-entered
	frame, err = codec.AppendFrame(nil, &Command{Code: codeEcho, Opaque: 10, Body: make([]byte, 1<<20-1024)})
	require.NoError(t, err)
	_, err = conn.Write(frame)
	require.NoError(t, err)
	resp := readFrame(t, conn)
	require.Equal(t, int32(10), resp.Opaque)
	require.Equal(t, CodeSystemBusy, resp.Code)
	require.Equal(t, []answer{{codeEcho, CodeSystemBusy, false, rec.wait(t, 1)[0].elapsed}}, rec.wait(t, 1))
	close(release)
	require.Equal(t, int32(9), readFrame(t, conn).Opaque)
	got := rec.wait(t, 2)
	require.Equal(t, codeBlock, got[1].request)
	require.Equal(t, CodeSuccess, got[1].response)
}

// Without an Observer nothing is stamped.
func TestNoObserverNoStamp(t *testing.T) {
	s, err := NewServer(DefaultServerOptions())
	require.NoError(t, err)
	cmd := &Command{Code: codeEcho}
	s.stamp(cmd)
	require.Zero(t, cmd.arrived)
	s.opts.Observer = newRecorder()
	s.stamp(cmd)
	require.Positive(t, cmd.arrived)
}
