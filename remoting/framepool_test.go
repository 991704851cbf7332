package remoting

import (
	"bytes"
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestSizeClasses(t *testing.T) {
	for _, tc := range []struct{ n, class int }{
		{0, 0}, {1, 0}, {512, 0}, {513, 1}, {1024, 1}, {1025, 2}, {32 << 10, 6}, {32<<10 + 1, 7},
		{maxPooledFrame, maxPooledClass - minPooledClass}, {maxPooledFrame + 1, -1},
	} {
		require.Equal(t, tc.class, sizeClass(tc.n), "size %d", tc.n)
	}
	var p framePool
	b, box := p.get(1000)
	require.Len(t, b, 1000)
	require.Equal(t, 1024, cap(b))
	big, bigBox := p.get(maxPooledFrame + 1)
	require.Len(t, big, maxPooledFrame+1)
	require.Nil(t, bigBox, "larger frames are not pooled")
	copy(b, "abc")
	p.put(box, true)
	require.Equal(t, bytes.Repeat([]byte{poisonByte}, 1024), (*box)[:1024], "poisoned when asked")
}

// A handler registered with HandleReusingFrames gets its request's frame recycled once it
// has answered: a slice of the request it (wrongly) kept then reads poison. A handler
// registered with Handle keeps what it kept.
func TestRecycledFramesArePoisonedWhenAsked(t *testing.T) {
	const codeReuse, codeKeep int16 = 1101, 1102
	kept := make(chan []byte, 2)
	keep := HandlerFunc(func(_ context.Context, _ Channel, req *Command) (*Command, error) {
		kept <- req.Body // breaks HandleReusingFrames' contract on purpose
		return NewResponse(req, CodeSuccess, ""), nil
	})
	s, err := NewServer(DefaultServerOptions())
	require.NoError(t, err)
	s.poison = true
	recycled := make(chan struct{}, 1)
	s.recycled = func() { recycled <- struct{}{} }
	require.NoError(t, s.HandleReusingFrames(codeReuse, "", keep))
	require.NoError(t, s.Handle(codeKeep, "", keep))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	require.NoError(t, s.Start(ln))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		require.NoError(t, s.Shutdown(ctx))
	})
	c := testClient(t, nil)
	body := bytes.Repeat([]byte("m"), 700)
	for _, code := range []int16{codeReuse, codeKeep} {
		req := NewRequest(code, nil)
		req.Body = body
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		resp, err := c.Invoke(ctx, s.Addr().String(), req)
		cancel()
		require.NoError(t, err)
		require.Equal(t, int16(CodeSuccess), resp.Code)
	}
	<-recycled
	require.Equal(t, bytes.Repeat([]byte{poisonByte}, len(body)), <-kept, "the reused frame was recycled")
	require.Empty(t, recycled, "only the frame of the reusing route was recycled")
	require.Equal(t, body, <-kept, "a frame of a Handle route is left alone")
}
