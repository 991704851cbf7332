package remoting

import (
	"bytes"
	"context"
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

// keepingServer starts a server whose handler for code sends each request's body to kept
// (breaking HandleReusingFrames' contract on purpose when reuse is set), with recycled
// frames poisoned and announced on recycled; invoke sends one request of body.
func keepingServer(t *testing.T, code int16, reuse bool) (invoke func(body []byte), kept chan []byte, recycled chan struct{}) {
	kept, recycled = make(chan []byte, 4), make(chan struct{}, 4)
	keep := HandlerFunc(func(_ context.Context, _ Channel, req *Command) (*Command, error) {
		kept <- req.Body
		return NewResponse(req, CodeSuccess, ""), nil
	})
	s, err := NewServer(DefaultServerOptions())
	require.NoError(t, err)
	s.poison = true
	s.recycled = func() { recycled <- struct{}{} }
	if reuse {
		require.NoError(t, s.HandleReusingFrames(code, "", keep))
	} else {
		require.NoError(t, s.Handle(code, "", keep))
	}
	ServeTest(t, s, nil)
	c := testClient(t, nil)
	return func(body []byte) {
		req := NewRequest(code, nil)
		req.Body = body
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := c.Invoke(ctx, s.Addr().String(), req)
		require.NoError(t, err)
		require.Equal(t, int16(CodeSuccess), resp.Code)
	}, kept, recycled
}

// A handler registered with HandleReusingFrames gets its request's frame recycled once it
// has answered: a slice of the request it (wrongly) kept then reads poison.
func TestRecycledFramesArePoisonedWhenAsked(t *testing.T) {
	invoke, kept, recycled := keepingServer(t, 1101, true)
	body := bytes.Repeat([]byte("m"), 700)
	invoke(body)
	<-recycled // after this no request runs: the test alone reads the recycled buffer
	require.True(t, bytes.Equal(bytes.Repeat([]byte{poisonByte}, len(body)), <-kept), "the frame was recycled and poisoned")
}

// A handler registered with Handle keeps what it kept: its frames are never recycled.
func TestFramesOfOtherRoutesAreLeftAlone(t *testing.T) {
	invoke, kept, recycled := keepingServer(t, 1102, false)
	first, second := bytes.Repeat([]byte("a"), 700), bytes.Repeat([]byte("b"), 700)
	invoke(first)
	invoke(second)
	require.True(t, bytes.Equal(first, <-kept), "the first request's body is intact after the second")
	require.True(t, bytes.Equal(second, <-kept))
	require.Empty(t, recycled, "nothing was recycled")
}
