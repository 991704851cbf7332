package remoting

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// choppyReader hands out its data a few bytes at a time, with a deadline error before
// every piece, as a socket read by goroutines whose deadlines pass.
type choppyReader struct {
	data  []byte
	piece int
	fail  bool
}

func (r *choppyReader) Read(p []byte) (int, error) {
	if r.fail = !r.fail; r.fail {
		return 0, fmt.Errorf("read: %w", os.ErrDeadlineExceeded)
	}
	if len(r.data) == 0 {
		return 0, errors.New("EOF")
	}
	n := copy(p[:min(len(p), r.piece)], r.data)
	r.data = r.data[n:]
	return n, nil
}

func TestClientReaderResumesAfterDeadlines(t *testing.T) {
	var codec Codec
	var stream []byte
	var want []string
	for i, size := range []int{0, 1, 10, 100, 31, 32, 33, 500, 7} {
		cmd := &Command{Code: int16(i), Opaque: int32(i), Body: bytes.Repeat([]byte{byte('a' + i)}, size), SerializeType: SerializeMsgpack}
		var err error
		stream, err = codec.AppendFrame(stream, cmd)
		require.NoError(t, err)
		want = append(want, string(cmd.Body))
	}
	for _, piece := range []int{1, 3, 7, 64, 4096} {
		t.Run(fmt.Sprint(piece), func(t *testing.T) {
			src := &choppyReader{data: stream, piece: piece}
			// A 64-byte buffer, so that the larger frames are read straight into their own.
			cr := clientReader{src: src, max: DefaultMaxFrameSize, buf: make([]byte, 64)}
			var got []string
			for len(got) < len(want) {
				frame, err := cr.next()
				if err != nil {
					require.ErrorIs(t, err, os.ErrDeadlineExceeded)
					continue
				}
				cmd, err := codec.DecodeFrame(frame)
				require.NoError(t, err)
				require.Equal(t, int32(len(got)), cmd.Opaque)
				got = append(got, string(cmd.Body))
			}
			require.Equal(t, want, got)
		})
	}
}

// loneCallerSetups are the transports the reader-token tests run on.
func loneCallerSetups(t *testing.T) map[string]func(*ServerOptions, *ClientOptions) {
	pki := newTestPKI(t)
	return map[string]func(*ServerOptions, *ClientOptions){
		"plain": func(*ServerOptions, *ClientOptions) {},
		"tls": func(so *ServerOptions, co *ClientOptions) {
			if so != nil {
				so.TLS = pki.serverTLS(TLSEnforcing)
			}
			if co != nil {
				co.TLS = pki.clientTLS()
			}
		},
	}
}

// onlyConn returns the client's one connection to addr.
func onlyConn(t *testing.T, c *Client, addr string) *clientConn {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	cc := c.mu.addrs[addr].slots[0].Load()
	require.NotNil(t, cc)
	return cc
}

func TestLoneCallerReadsItsOwnResponses(t *testing.T) {
	for name, setup := range loneCallerSetups(t) {
		t.Run(name, func(t *testing.T) {
			var (
				late  = make(chan func(), 4)
				entry = make(chan struct{}, 4)
			)
			var serverSide atomic.Value
			s := testServer(t, func(o *ServerOptions) { setup(o, nil) }, map[int16]Handler{
				codeEcho: echo,
				codeDefer: HandlerFunc(func(_ context.Context, ch Channel, req *Command) (*Command, error) {
					late <- func() { _ = ch.Reply(req, NewResponse(req, CodeSuccess, "too late")) }
					entry <- struct{}{}
					return nil, nil
				}),
				codeCallMe: HandlerFunc(func(_ context.Context, ch Channel, req *Command) (*Command, error) {
					serverSide.Store(ch)
					return NewResponse(req, CodeSuccess, ""), nil
				}),
			})
			t.Cleanup(func() {
				for range len(late) {
					(<-late)()
				}
			})
			c := testClient(t, func(o *ClientOptions) { setup(nil, o) })
			c.Handle(codeAskBack, HandlerFunc(func(_ context.Context, _ Channel, req *Command) (*Command, error) {
				return NewResponse(req, CodeSuccess, "answered"), nil
			}))
			addr := s.Addr().String()
			ctx := context.Background()
			big := bytes.Repeat([]byte("0123456789abcdef"), 20<<10) // 320 KiB: many reads
			echoOnce := func(body []byte) {
				t.Helper()
				resp, err := c.Invoke(ctx, addr, &Command{Code: codeEcho, Body: body})
				require.NoError(t, err)
				require.Equal(t, body, resp.Body)
			}
			echoOnce([]byte("first"))
			cc := onlyConn(t, c, addr)
			before := cc.ownReads.Load()
			for i := range 20 {
				echoOnce([]byte(fmt.Sprint("call ", i)))
			}
			echoOnce(big)
			require.Equal(t, before+21, cc.ownReads.Load(), "a lone caller reads its own responses")

			// Its deadline passes while it reads: a timeout, and the connection goes on.
			tctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
			_, err := c.Invoke(tctx, addr, NewRequest(codeDefer, nil))
			cancel()
			require.ErrorIs(t, err, ErrTimeout)
			echoOnce(big)
			require.Equal(t, before+22, cc.ownReads.Load(), "the caller that timed out left the token free")

			// Its context is cancelled (no deadline) while it reads.
			cctx, cancel := context.WithCancel(ctx)
			go func() {
				<-entry
				<-entry // the first deferred call's entry, then this one's
				cancel()
			}()
			_, err = c.Invoke(cctx, addr, NewRequest(codeDefer, nil))
			require.ErrorIs(t, err, context.Canceled)
			require.ErrorIs(t, err, ErrTimeout)
			echoOnce(big)
			require.False(t, cc.isClosed())
			require.Equal(t, before+23, cc.ownReads.Load(), "the cancelled caller left the token free")

			// With no call pending the connection is still read: the server's requests are
			// answered, and its closing is noticed.
			_, err = c.Invoke(ctx, addr, NewRequest(codeCallMe, nil))
			require.NoError(t, err)
			ch := serverSide.Load().(Channel)
			sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			resp, err := ch.Invoke(sctx, NewRequest(codeAskBack, nil))
			require.NoError(t, err)
			require.Equal(t, "answered", resp.Remark)
			echoOnce([]byte("again alone"))
			require.NoError(t, ch.Close())
			require.Eventually(t, cc.isClosed, 5*time.Second, time.Millisecond)
			echoOnce([]byte("on a new connection"))
		})
	}
}

func TestSyncAndAsyncCallersShareAConnection(t *testing.T) {
	for name, setup := range loneCallerSetups(t) {
		t.Run(name, func(t *testing.T) {
			s := testServer(t, func(o *ServerOptions) { setup(o, nil) }, map[int16]Handler{codeEcho: echo})
			c := testClient(t, func(o *ClientOptions) { setup(nil, o) })
			addr := s.Addr().String()
			ctx := context.Background()
			var wg sync.WaitGroup
			errs := make(chan error, 64)
			for w := range 6 {
				wg.Go(func() {
					for i := range 300 {
						body := bytes.Repeat([]byte{byte(w)}, (i*w*997)%(100<<10))
						if w%2 == 0 { // synchronous callers, alone at times
							resp, err := c.Invoke(ctx, addr, &Command{Code: codeEcho, Body: body})
							if err == nil && !bytes.Equal(resp.Body, body) {
								err = fmt.Errorf("caller %d call %d: wrong body", w, i)
							}
							if err != nil {
								errs <- err
								return
							}
							continue
						}
						done := make(chan error, 1)
						err := c.InvokeAsync(ctx, addr, &Command{Code: codeEcho, Body: body}, func(resp *Command, err error) {
							if err == nil && !bytes.Equal(resp.Body, body) {
								err = fmt.Errorf("async caller %d call %d: wrong body", w, i)
							}
							done <- err
						})
						if err == nil {
							err = <-done
						}
						if err != nil {
							errs <- err
							return
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}
		})
	}
}
