package remoting

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// Reading a client connection: the reader token.
//
// One goroutine at a time reads a connection's socket: whoever holds its reader token.
// Usually that is the connection's background reader (readLoop), which completes calls
// and serves the server's requests. But a synchronous caller that is alone on its
// connection reads its response itself: with the background reader, a response costs two
// goroutine wake-ups (the reader's, then the caller's through its channel); read by the
// caller, one.
//
// The token is in one of three states:
//
//	tokenReader  the background reader holds it (and reads, or is about to)
//	tokenCaller  a synchronous caller holds it and reads until its own response arrives
//	tokenFree    nobody reads: no call is pending and the last holder was a caller
//
// A synchronous Invoke takes a free token when its call is the only one pending, so a
// caller sending one request at a time keeps reading its own responses. Meanwhile it
// completes the other calls whose responses arrive and serves server requests; as soon
// as others wait (a second call is pending) or its own response has come, it passes the
// token on: to the background reader when calls are still pending, else it frees it.
// Asynchronous calls need a reader and never hold the token: InvokeAsync gives a free
// token to the background reader. The background reader frees the token only after it
// delivered a synchronous call's response and no call is left pending, so that the
// caller's next call can read its own response again.
//
// A connection is read even when no call is pending (server requests such as
// CHECK_TRANSACTION_STATE, and a closed connection must be noticed): the client's
// timeout scanner gives a token that stayed free for a whole scan interval to the
// background reader, so a free token is never idle for more than two intervals.
//
// A caller holding the token reads with its call's deadline as the socket's read
// deadline, and a context that can be cancelled moves that deadline to the past; on a
// timeout it passes the token on and waits for its call's outcome like any caller (the
// timeout scanner or its context ends the call). A read interrupted by a deadline loses
// nothing: clientReader keeps a partial frame for the next holder, and crypto/tls keeps a
// partial record (a read timeout does not break a TLS connection, unlike a write timeout).

// Reader token states.
const (
	tokenReader = iota
	tokenCaller
	tokenFree
)

// clientReadBuffer is the size of a client connection's read buffer; larger frames are
// read straight into their own buffer.
const clientReadBuffer = 64 << 10

// clientReader is a client connection's frame reader, used only by the holder of the
// reader token. A read error (a deadline) leaves its state intact for the next call.
type clientReader struct {
	src io.Reader
	max int
	buf []byte // buf[r:w] is read and not yet consumed
	r   int
	w   int
	big []byte // a frame larger than buf, read straight into; big[:got] is read
	got int
	// deadline is set while the socket has a read deadline a caller set.
	deadline bool
}

// next returns the next frame (the bytes after its length field) in a buffer of its own,
// which the decoded Command may keep.
func (cr *clientReader) next() ([]byte, error) {
	if cr.buf == nil {
		cr.buf = make([]byte, clientReadBuffer)
	}
	for {
		if cr.big != nil {
			for cr.got < len(cr.big) {
				n, err := cr.src.Read(cr.big[cr.got:])
				cr.got += n
				if err != nil && cr.got < len(cr.big) {
					return nil, err
				}
			}
			frame := cr.big
			cr.big, cr.got = nil, 0
			return frame, nil
		}
		if cr.w-cr.r >= LengthFieldSize {
			n, err := ParseLength(cr.buf[cr.r:cr.w], cr.max)
			if err != nil {
				return nil, err
			}
			start := cr.r + LengthFieldSize
			if cr.w-start >= n {
				frame := make([]byte, n)
				copy(frame, cr.buf[start:])
				cr.r = start + n
				return frame, nil
			}
			if LengthFieldSize+n > len(cr.buf) {
				cr.big = make([]byte, n)
				cr.got = copy(cr.big, cr.buf[start:cr.w])
				cr.r, cr.w = 0, 0
				continue
			}
		}
		if cr.r > 0 {
			cr.w = copy(cr.buf, cr.buf[cr.r:cr.w])
			cr.r = 0
		}
		n, err := cr.src.Read(cr.buf[cr.w:])
		cr.w += n
		if err != nil && n == 0 {
			return nil, err
		}
	}
}

// isTimeout reports whether err is a read deadline passing.
func isTimeout(err error) bool { return errors.Is(err, os.ErrDeadlineExceeded) }

// readLoop is the background reader: it reads while it holds the reader token and waits
// for the token otherwise, until the connection fails or closes.
func (cc *clientConn) readLoop() {
	defer cc.Close()
	for {
		if !cc.awaitToken() {
			return
		}
		if cc.rd.deadline {
			_ = cc.nc.SetReadDeadline(time.Time{})
			cc.rd.deadline = false
		}
		frame, err := cc.rd.next()
		if err != nil {
			if isTimeout(err) && !cc.isClosed() {
				continue // a caller's late deadline: cleared above
			}
			cc.readFailed(err)
			return
		}
		cmd, err := cc.cl.codec.DecodeFrame(frame)
		if err != nil {
			cc.readFailed(err)
			return
		}
		if !cmd.IsResponse() {
			cc.serve(cmd)
			continue
		}
		p := cc.pending.take(cmd.Opaque)
		if p == nil {
			continue
		}
		if p.ch != nil {
			// A synchronous call: free the token if nothing else is pending, so that
			// the caller's next call reads its own response.
			cc.tok.Lock()
			if cc.pending.len() == 0 {
				cc.tok.state, cc.tok.freeSince = tokenFree, time.Now().UnixNano()
			}
			cc.tok.Unlock()
		}
		p.finish(cmd, nil)
	}
}

// awaitToken waits until the background reader holds the token; false means the
// connection closed.
func (cc *clientConn) awaitToken() bool {
	for {
		cc.tok.Lock()
		st := cc.tok.state
		cc.tok.Unlock()
		if st == tokenReader {
			return true
		}
		select {
		case <-cc.tok.wake:
		case <-cc.done:
			return false
		}
	}
}

// wakeReader gives a free token to the background reader, for a call that needs its
// connection read (an asynchronous one).
func (cc *clientConn) wakeReader() {
	cc.tok.Lock()
	defer cc.tok.Unlock()
	if cc.tok.state == tokenFree {
		cc.giveReaderLocked()
	}
}

// giveReaderLocked hands the token to the background reader.
func (cc *clientConn) giveReaderLocked() {
	cc.tok.state = tokenReader
	select {
	case cc.tok.wake <- struct{}{}:
	default:
	}
}

// wakeIdleReader gives the background reader a token that has been free since before
// idleSince (the timeout scanner's call).
func (cc *clientConn) wakeIdleReader(idleSince int64) {
	cc.tok.Lock()
	defer cc.tok.Unlock()
	if cc.tok.state == tokenFree && cc.tok.freeSince < idleSince {
		cc.giveReaderLocked()
	}
}

// takeToken gives the caller of a synchronous call the token when it is free and the
// call is the only one pending.
func (cc *clientConn) takeToken() bool {
	cc.tok.Lock()
	defer cc.tok.Unlock()
	if cc.tok.state != tokenFree || cc.pending.len() != 1 {
		return false
	}
	cc.tok.state = tokenCaller
	return true
}

// passToken is how a caller gives up the token: to the background reader when calls
// are pending, else it is freed.
func (cc *clientConn) passToken() {
	cc.tok.Lock()
	defer cc.tok.Unlock()
	if cc.pending.len() > 0 {
		cc.giveReaderLocked()
		return
	}
	cc.tok.state, cc.tok.freeSince = tokenFree, time.Now().UnixNano()
}

// readOwn reads the connection, holding the token, until call's response arrives (it is
// returned), its deadline passes or its context ends (the error is returned), or the
// call ends otherwise (a closed connection, the timeout scanner) or another call is
// pending; in the last cases it returns neither, and the caller waits for its call like
// any other. It passes the token on before it returns.
func (cc *clientConn) readOwn(ctx context.Context, opaque int32, call *pendingCall) (*Command, error) {
	dl := time.Unix(0, call.deadline)
	_ = cc.nc.SetReadDeadline(dl)
	cc.rd.deadline = true
	if ctx.Done() != nil {
		// A deadline in the past interrupts the read in progress.
		stop := context.AfterFunc(ctx, func() { _ = cc.nc.SetReadDeadline(time.Unix(1, 0)) })
		defer stop()
	}
	defer cc.passToken()
	for {
		frame, err := cc.rd.next()
		if err != nil {
			if !isTimeout(err) || cc.isClosed() {
				cc.readFailed(err)
				_ = cc.Close()
				return nil, nil
			}
			if ctx.Err() == nil && time.Now().Before(dl) && !call.done.Load() {
				_ = cc.nc.SetReadDeadline(dl) // a stale interruption: keep reading
				continue
			}
			if cc.pending.take(opaque) != call {
				return nil, nil // ended by the timeout scanner
			}
			if ctx.Err() != nil {
				return nil, fmt.Errorf("%w: %w", ErrTimeout, ctx.Err())
			}
			return nil, fmt.Errorf("%w: no response from %s", ErrTimeout, cc.remote)
		}
		cmd, err := cc.cl.codec.DecodeFrame(frame)
		if err != nil {
			cc.readFailed(err)
			_ = cc.Close()
			return nil, nil
		}
		if !cmd.IsResponse() {
			cc.serve(cmd)
		} else if p := cc.pending.take(cmd.Opaque); p == call {
			return cmd, nil
		} else if p != nil {
			p.finish(cmd, nil)
		}
		if call.done.Load() || cc.pending.len() > 1 {
			return nil, nil
		}
	}
}
