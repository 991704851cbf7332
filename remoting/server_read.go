package remoting

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/cloudwego/netpoll"
)

// Reading frames and the request-bytes budget.
//
// netpoll calls OnRequest again at once while unread input remains, so a handler that
// leaves half a frame in netpoll's buffer either spins or blocks in Next while netpoll
// buffers the rest (a 16 MiB frame then costs its bytes in netpoll's buffer, again in
// Next's contiguous copy, and again in the decoded frame). The reader below consumes
// everything netpoll has on each call and keeps the partial frame in its own buffer,
// allocated only once the frame has been admitted.
//
// A frame's bytes count against the connection's and the server's budget from the moment
// its length field is read until its request is answered (a response frame: until it is
// handed to its waiter), or until the connection closes, whichever comes first. A frame
// that would exceed either limit is refused: its header is collected (at most
// maxRefusedHeader bytes), the request is answered SYSTEM_BUSY naming the limit, and its
// body is skipped as it arrives without being buffered.

const (
	// smallFrameSize is the frame length up to which a frame is always admitted (and
	// counted): refusing heartbeats, pulls and offset commits would save little memory and
	// stall clients, and their number is bounded by the pool queues.
	smallFrameSize = 64 << 10
	// maxRefusedHeader bounds the header collected from a refused frame to answer it; a
	// refused frame with a larger header closes the connection.
	maxRefusedHeader = 64 << 10
	// readChunk bounds one copy out of netpoll's buffer (a read across its nodes copies).
	readChunk = 256 << 10
)

// ErrRequestBytesLimit fails a server-initiated call whose response frame was refused
// because it would have exceeded MaxRequestBytes or MaxConnRequestBytes.
var ErrRequestBytesLimit = errors.New("remoting: request bytes limit reached")

// readState is where a connection's reader is within the current frame.
type readState uint8

const (
	stateLength      readState = iota // collecting the 4-byte length field
	stateFrame                        // filling an admitted frame
	stateRefusedHead                  // collecting a refused frame's type word and header
	stateSkip                         // discarding a refused frame's body
)

// frameReader is a connection's incremental frame decoder. Only the connection's reader
// (netpoll's OnRequest calls, or a std connection's read loop) and, after its last read,
// the close sequence touch it.
type frameReader struct {
	state    readState
	length   [LengthFieldSize]byte
	filled   int     // bytes of length or buf filled so far
	frameLen int     // the current frame's length field
	buf      []byte  // admitted: the frame after its length field; refused: type word + header
	held     int64   // budget held by buf (admitted frames)
	box      *[]byte // buf's pool box (admitted frames of a pooled size), else nil
	why      string  // refused: the limit that was hit
	skip     int     // refused: body bytes still to discard
}

// reset prepares for the next frame.
func (fr *frameReader) reset() { *fr = frameReader{} }

// connBudget is one connection's share of the request-bytes budget.
type connBudget struct {
	mu struct {
		sync.Mutex
		held   int64 // bytes of this connection's frames being read, queued or handled
		closed bool  // the connection closed and returned its bytes to the server
	}
}

// frameSource is the buffered input readStep consumes: netpoll's Reader, or a std
// connection's bufio.Reader (bufSource).
type frameSource interface {
	// Len is the number of bytes buffered.
	Len() int
	// Next returns the next n buffered bytes (n <= Len) and consumes them; they are valid
	// until the next call.
	Next(n int) ([]byte, error)
	// Skip consumes the next n buffered bytes (n <= Len).
	Skip(n int) error
}

var _ frameSource = netpoll.Reader(nil)

// take copies up to len(dst) available bytes (at most readChunk) from r into dst.
func take(r frameSource, dst []byte) (int, error) {
	k := min(len(dst), r.Len(), readChunk)
	p, err := r.Next(k)
	if err != nil {
		return 0, fmt.Errorf("remoting: reading %d buffered bytes: %w", k, err)
	}
	return copy(dst, p), nil
}

// readStep consumes some of r's buffered bytes, advancing the current frame, and
// dispatches the frame when it is complete. An error means the connection was closed.
func (c *serverConn) readStep(r frameSource) error {
	fr := &c.rd
	switch fr.state {
	case stateLength:
		k, err := take(r, fr.length[fr.filled:])
		if err != nil {
			return c.abort(err, "reading frame length")
		}
		if fr.filled += k; fr.filled < LengthFieldSize {
			return nil
		}
		n, err := ParseLength(fr.length[:], c.srv.opts.MaxFrameSize)
		if err != nil {
			if looksLikeTLS(fr.length[:]) {
				return c.abort(ErrTLSNotEnabled, "a TLS handshake arrived, but TLS is not enabled on this port")
			}
			return c.abort(err, "bad frame length")
		}
		fr.frameLen, fr.filled = n, 0
		if why := c.admit(n); why != "" {
			fr.state, fr.why, fr.buf = stateRefusedHead, why, make([]byte, frameFixed-LengthFieldSize)
			return nil
		}
		fr.state, fr.held = stateFrame, int64(n)
		fr.buf, fr.box = c.srv.frames.get(n)
	case stateFrame:
		k, err := take(r, fr.buf[fr.filled:])
		if err != nil {
			return c.abort(err, "reading frame")
		}
		if fr.filled += k; fr.filled < len(fr.buf) {
			return nil
		}
		frame, held, box := fr.buf, fr.held, fr.box
		fr.reset()
		var into *Command
		if box != nil {
			into = c.srv.frames.command() // recycled with the frame, as the frame is
		}
		cmd, err := c.srv.codec.decodeFrameInto(frame, into)
		if err != nil {
			c.releaseBytes(held)
			return c.abort(err, "bad frame")
		}
		c.seq++
		cmd.held, cmd.frame, cmd.Seq = held, box, c.seq
		c.activity.Add(1)
		c.srv.dispatch(c, cmd)
	case stateRefusedHead:
		k, err := take(r, fr.buf[fr.filled:])
		if err != nil {
			return c.abort(err, "reading frame header")
		}
		if fr.filled += k; fr.filled < len(fr.buf) {
			return nil
		}
		if len(fr.buf) == frameFixed-LengthFieldSize {
			hlen := int(binary.BigEndian.Uint32(fr.buf) & maxHeaderLen)
			switch {
			case hlen > fr.frameLen-len(fr.buf):
				return c.abort(fmt.Errorf("%w: header length %d exceeds frame length %d", ErrMalformedFrame, hlen, fr.frameLen), "bad frame")
			case hlen > maxRefusedHeader:
				return c.abort(fmt.Errorf("%w: a refused frame's %d-byte header is too large to answer (%s)", ErrRequestBytesLimit, hlen, fr.why),
					"refusing a frame")
			case hlen > 0:
				buf := make([]byte, len(fr.buf)+hlen)
				copy(buf, fr.buf)
				fr.buf = buf
				return nil
			}
		}
		if err := c.refuse(fr.buf, fr.frameLen, fr.why); err != nil {
			return err
		}
		fr.state, fr.skip, fr.buf = stateSkip, fr.frameLen-len(fr.buf), nil
		if fr.skip == 0 {
			fr.reset()
		}
	case stateSkip:
		k := min(fr.skip, r.Len())
		if err := r.Skip(k); err != nil {
			return c.abort(fmt.Errorf("remoting: skipping %d bytes: %w", k, err), "discarding a refused frame")
		}
		if fr.skip -= k; fr.skip == 0 {
			fr.reset()
		}
	}
	return nil
}

// admit reserves a frame of n bytes against the connection's and the server's limits. It
// returns "" when the frame is admitted, or which limit it would exceed.
func (c *serverConn) admit(n int) string {
	s, size := c.srv, int64(n)
	b := &c.budget
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.mu.closed {
		return "the connection is closed"
	}
	if n <= smallFrameSize {
		b.mu.held += size
		s.reqBytes.Add(size)
		return ""
	}
	if held := b.mu.held; held+size > s.connLimit {
		return fmt.Sprintf("the per-connection limit MaxConnRequestBytes=%d is reached (%d bytes held by this connection)", s.connLimit, held)
	}
	for {
		held := s.reqBytes.Load()
		if held+size > s.totalLimit {
			return fmt.Sprintf("the server-wide limit MaxRequestBytes=%d is reached (%d bytes held)", s.totalLimit, held)
		}
		if s.reqBytes.CompareAndSwap(held, held+size) {
			break
		}
	}
	b.mu.held += size
	return ""
}

// releaseBytes returns bytes admitted on this connection. Once the connection has closed
// its bytes are already back in the server's budget, so only its own count changes.
func (c *serverConn) releaseBytes(size int64) {
	if size == 0 {
		return
	}
	b := &c.budget
	b.mu.Lock()
	b.mu.held -= size
	if !b.mu.closed {
		c.srv.reqBytes.Add(-size)
	}
	b.mu.Unlock()
}

// releaseAll runs once when the connection closes: it drops the partial frame and returns
// everything the connection holds (including requests still being handled, whose later
// releaseBytes only update the connection's count) to the server's budget.
func (c *serverConn) releaseAll() {
	c.rd.reset()
	b := &c.budget
	b.mu.Lock()
	if !b.mu.closed {
		b.mu.closed = true
		c.srv.reqBytes.Add(-b.mu.held)
	}
	b.mu.Unlock()
}

// refuse answers a refused frame from its header (head is its type word and header): a
// request gets SYSTEM_BUSY, a oneway request nothing, and a response fails its waiter.
func (c *serverConn) refuse(head []byte, frameLen int, why string) error {
	cmd, err := c.srv.codec.DecodeFrame(head)
	if err != nil {
		return c.abort(err, "bad frame")
	}
	c.srv.logRefused(c, cmd, frameLen, why)
	c.activity.Add(1)
	switch {
	case cmd.IsResponse():
		if p := c.pending.take(cmd.Opaque); p != nil {
			p.finish(nil, fmt.Errorf("%w: a %d-byte response was discarded: %s", ErrRequestBytesLimit, frameLen, why))
		}
	default:
		c.lastType.Store(uint32(cmd.SerializeType))
		c.srv.stamp(cmd)
		c.replyNow(cmd, NewResponse(cmd, CodeSystemBusy,
			fmt.Sprintf("[REQUEST_BYTES] a %d-byte frame was refused: %s, try later", frameLen, why)))
	}
	return nil
}

// logRefused logs a refused frame at warn, at most once a second.
func (s *Server) logRefused(c *serverConn, cmd *Command, frameLen int, why string) {
	ok, suppressed := s.refused.Allow()
	if !ok {
		return
	}
	s.log.Warn().Str("remote", c.remote).Int16("code", cmd.Code).Int32("opaque", cmd.Opaque).
		Bool("response", cmd.IsResponse()).Int("frameBytes", frameLen).Str("limit", why).
		Int64("suppressedSinceLast", suppressed).
		Msg("frame refused with SYSTEM_BUSY, its body is discarded unread")
}

// RequestBytes is the number of request-frame bytes the server holds right now: frames
// being received, queued for a worker or being handled, on all connections. It is what
// MaxRequestBytes bounds.
func (s *Server) RequestBytes() int64 { return s.reqBytes.Load() }

// RequestBytesLimit is the server-wide bound on RequestBytes (the effective
// MaxRequestBytes).
func (s *Server) RequestBytesLimit() int64 { return s.totalLimit }
