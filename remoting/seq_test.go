package remoting

import (
	"context"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A Server numbers the frames it reads on each connection 1, 2, 3, ... in the order they
// arrive (Command.Seq), before any worker sees them: however the pool's workers
// interleave one connection's requests, their numbers follow the order the peer sent
// them, and every connection counts on its own. Commands recycled with their frames
// (HandleReusingFrames) carry their new frame's number. Both the reactor and the std
// read path number frames.
func TestRequestsAreNumberedPerConnectionInArrivalOrder(t *testing.T) {
	const (
		codePlain int16 = 1010
		codeReuse int16 = 1011
		perConn         = 300
	)
	for _, viaStd := range []bool{false, true} {
		t.Run(map[bool]string{false: "reactor", true: "std"}[viaStd], func(t *testing.T) {
			type stamp struct{ conn, seq uint64 }
			var mu sync.Mutex
			got := map[string]stamp{} // by "<connection>/<n>", as the sender numbered them
			record := HandlerFunc(func(_ context.Context, ch Channel, req *Command) (*Command, error) {
				key := req.Ext("c") + "/" + req.Ext("n") // a new string: the frame may be recycled
				mu.Lock()
				got[key] = stamp{conn: ch.ID(), seq: req.Seq}
				mu.Unlock()
				return nil, nil
			})
			opts := DefaultServerOptions()
			if viaStd {
				opts.TLS = newTestPKI(t).serverTLS(TLSPermissive)
			}
			s, err := NewServer(opts)
			require.NoError(t, err)
			s.plainViaStd = viaStd
			require.NoError(t, s.Handle(codePlain, "", record))
			require.NoError(t, s.HandleReusingFrames(codeReuse, "", record))
			ServeTest(t, s, nil)

			conns := []string{"a", "b"}
			var codec Codec
			for _, name := range conns {
				conn, err := net.Dial("tcp", s.Addr().String())
				require.NoError(t, err)
				t.Cleanup(func() { _ = conn.Close() })
				var frames []byte
				for n := 1; n <= perConn; n++ {
					code := codePlain
					if n%2 == 0 {
						code = codeReuse
					}
					req := &Command{Code: code, Flag: FlagOneway, Opaque: int32(n),
						ExtFields: ExtOf(map[string]string{"c": name, "n": strconv.Itoa(n)})}
					if frames, err = codec.AppendFrame(frames, req); err != nil {
						t.Fatal(err)
					}
				}
				// In two writes, so that the reader also meets a frame cut in two.
				half := len(frames)/2 + 3
				_, err = conn.Write(frames[:half])
				require.NoError(t, err)
				_, err = conn.Write(frames[half:])
				require.NoError(t, err)
			}
			require.Eventually(t, func() bool {
				mu.Lock()
				defer mu.Unlock()
				return len(got) == len(conns)*perConn
			}, 10*time.Second, time.Millisecond, "every request served")

			mu.Lock()
			defer mu.Unlock()
			ids := map[uint64]string{}
			for _, name := range conns {
				id := got[name+"/1"].conn
				require.NotZero(t, id)
				require.NotContains(t, ids, id, "connections %s and %s share an ID", ids[id], name)
				ids[id] = name
				for n := 1; n <= perConn; n++ {
					st := got[name+"/"+strconv.Itoa(n)]
					require.Equal(t, id, st.conn, "connection %s request %d", name, n)
					require.Equal(t, uint64(n), st.seq, "connection %s request %d: the n-th frame read is number n", name, n)
				}
			}
		})
	}
}

// A Command the Server did not read carries no number.
func TestLocalCommandsHaveNoSequence(t *testing.T) {
	require.Zero(t, NewRequest(codeEcho, nil).Seq)
	require.Zero(t, NewResponse(&Command{Seq: 9}, CodeSuccess, "").Seq)
	var p framePool
	cmd := p.command()
	cmd.Seq = 5
	p.putCommand(cmd)
	require.Zero(t, p.command().Seq, "a pooled Command comes back zeroed")
}
