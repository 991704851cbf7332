package remoting

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"github.com/cloudwego/netpoll"
)

// errAlreadyReplied is returned by Reply for a request that has been answered.
var errAlreadyReplied = errors.New("remoting: request already answered")

// transport is the socket under a serverConn: a netpoll connection read by the reactor
// (plain connections), or a net.Conn read by a goroutine of its own (TLS connections, see
// server_std.go). Everything above it — frame reading, the request-bytes budget, the
// pools, Channel, the output queue, idle and close handling — is shared.
type transport interface {
	// writeVec writes every vector or fails. Only the output queue's flusher calls it.
	writeVec(vec [][]byte) error
	// close closes the socket, even one the peer has closed already; whoever reads it then
	// runs the connection's close sequence (Server.connClosed). It may be called more than
	// once.
	close() error
	// active reports whether the socket is still open.
	active() bool
}

// netpollTransport is a connection on the netpoll reactor.
type netpollTransport struct{ conn netpoll.Connection }

// writeVec hands vectors to netpoll (large ones by reference) and writes them out.
func (t *netpollTransport) writeVec(vec [][]byte) error {
	w := t.conn.Writer()
	for _, p := range vec {
		if _, err := w.WriteBinary(p); err != nil {
			return fmt.Errorf("%w: %w", ErrConnClosed, err)
		}
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("%w: %w", ErrConnClosed, err)
	}
	return nil
}

// close calls Close even when the poller has closed the connection: that marks it closed
// by the user, which stops netpoll from calling OnRequest again for the input left unread.
func (t *netpollTransport) close() error { return t.conn.Close() }

func (t *netpollTransport) active() bool { return t.conn.IsActive() }

// serverConn is one accepted connection.
type serverConn struct {
	srv     *Server
	tr      transport
	id      uint64
	remote  string
	local   string
	pending *pendingTable

	lastType atomic.Uint32 // serialize type of the last request the peer sent
	activity atomic.Uint64 // frames read and written, for the idle sweeper
	inflight atomic.Int64  // requests being served

	out outQueue

	rd     frameReader // touched only by the transport's reader and, after it, the close sequence
	seq    uint64      // frames read so far, numbering them (Command.Seq); touched only by the reader
	budget connBudget

	idle struct { // touched only by the sweeper goroutine
		seen  uint64
		since time.Time
	}
}

func newServerConn(s *Server, tr transport, local, remote net.Addr) *serverConn {
	if s.wrapTr != nil {
		tr = s.wrapTr(tr)
	}
	c := &serverConn{
		srv:     s,
		tr:      tr,
		id:      s.nextID.Add(1),
		pending: newPendingTable(),
	}
	if remote != nil {
		c.remote = remote.String()
	}
	if local != nil {
		c.local = local.String()
	}
	c.idle.since = time.Now()
	c.out = outQueue{codec: &s.codec, flush: c.flushVec}
	return c
}

// flushVec writes vectors through the transport and counts the activity.
func (c *serverConn) flushVec(vec [][]byte) error {
	if err := c.tr.writeVec(vec); err != nil {
		return err
	}
	c.activity.Add(1)
	return nil
}

// uncork ends the read burst of the connection's reader: the answers it queued are
// flushed. A failed flush has told their writers (their OnWritten callbacks) and left
// the queue dead, which is all that can be done here.
func (c *serverConn) uncork() { _ = c.out.uncork() }

// ID implements Channel.
func (c *serverConn) ID() uint64 { return c.id }

// RemoteAddr implements Channel.
func (c *serverConn) RemoteAddr() string { return c.remote }

// LocalAddr implements Channel.
func (c *serverConn) LocalAddr() string { return c.local }

// Close implements Channel.
func (c *serverConn) Close() error {
	if !c.tr.active() {
		return nil
	}
	return c.tr.close()
}

// closed runs once from the close sequence, after the last read. netpoll runs it before
// its own callback that frees the connection's buffers, and kill waits out a flush in
// progress, so no write touches freed buffers.
func (c *serverConn) closed() {
	c.releaseAll()
	c.out.kill()
	c.pending.closeAll(ErrConnClosed)
}

// abort logs a protocol or read error and closes the connection; nothing else is affected.
func (c *serverConn) abort(err error, what string) error {
	c.srv.log.Warn().Err(err).Str("remote", c.remote).Msg(what + ": closing connection")
	_ = c.tr.close()
	return err
}

// Reply implements Channel. Whoever answers a request ends it, exactly once.
func (c *serverConn) Reply(req, resp *Command) error { return c.reply(req, resp, false) }

// reply is Reply; reader marks an answer written by the connection's reader (an inline
// route), which a corked output queue holds until the end of the read burst.
func (c *serverConn) reply(req, resp *Command, reader bool) error {
	var held bool
	for {
		st := req.reply.Load()
		if st == replyDone {
			resp.written(errAlreadyReplied)
			return errAlreadyReplied
		}
		if req.reply.CompareAndSwap(st, replyDone) {
			held = st == replyDeferred
			break
		}
	}
	code := resp.Code // before the write: the response may be recycled once written
	var err error
	if req.IsOneway() {
		resp.written(nil)
	} else {
		prepareReply(req, resp)
		if err = c.write(resp, reader); err != nil && !errors.Is(err, ErrConnClosed) {
			// The response could not be encoded (a header over 16 MiB, say): answer with
			// the reason rather than leave the caller waiting until its timeout.
			c.srv.log.Error().Err(err).Int16("code", resp.Code).Int32("opaque", req.Opaque).Str("remote", c.remote).
				Msg("response could not be sent; answering SYSTEM_ERROR instead")
			fallback := NewResponse(req, CodeSystemError, "response could not be sent: "+err.Error())
			prepareReply(req, fallback)
			_ = c.write(fallback, reader)
			code = CodeSystemError
		}
	}
	c.srv.observe(req, code, held)
	c.srv.requestDone(c, req)
	return err
}

// replyNow answers, on the connection's reader, a request that was not handled (refused
// or of an unknown code).
func (c *serverConn) replyNow(req, resp *Command) {
	if req.IsOneway() {
		return
	}
	prepareReply(req, resp)
	code := resp.Code
	_ = c.write(resp, true)
	c.srv.observe(req, code, false)
}

// write queues cmd's frame on the connection (see outQueue); reader marks a write by the
// connection's reader (outQueue.writeFromReader).
func (c *serverConn) write(cmd *Command, reader bool) error {
	if !c.tr.active() {
		cmd.written(ErrConnClosed)
		return ErrConnClosed
	}
	if reader {
		return c.out.writeFromReader(cmd)
	}
	return c.out.write(cmd)
}

// Invoke implements Channel: a server-initiated request, encoded in the peer's last type.
func (c *serverConn) Invoke(ctx context.Context, req *Command) (*Command, error) {
	req.Opaque = c.srv.opaque.Add(1)
	req.Flag &^= FlagResponse | FlagOneway
	req.SerializeType = SerializeType(c.lastType.Load())
	call := &pendingCall{ch: make(chan *Command, 1)}
	if err := c.pending.add(req.Opaque, call); err != nil {
		return nil, err
	}
	if err := c.write(req, false); err != nil {
		c.pending.take(req.Opaque)
		return nil, err
	}
	select {
	case resp, ok := <-call.ch:
		if !ok {
			return nil, call.err // set before ch was closed: ErrConnClosed, or why the response was refused
		}
		return resp, nil
	case <-ctx.Done():
		c.pending.take(req.Opaque)
		return nil, fmt.Errorf("%w: %w", ErrTimeout, ctx.Err())
	}
}

// InvokeOneway implements Channel.
func (c *serverConn) InvokeOneway(_ context.Context, req *Command) error {
	req.Opaque = c.srv.opaque.Add(1)
	req.Flag = req.Flag&^FlagResponse | FlagOneway
	req.SerializeType = SerializeType(c.lastType.Load())
	return c.write(req, false)
}

// idleSince returns how long the connection has been idle at now. Only the sweeper calls it.
func (c *serverConn) idleSince(now time.Time) time.Duration {
	if a := c.activity.Load(); a != c.idle.seen || c.inflight.Load() > 0 {
		c.idle.seen = a
		c.idle.since = now
		return 0
	}
	return now.Sub(c.idle.since)
}
