package remoting

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/cloudwego/netpoll"
)

// errAlreadyReplied is returned by Reply for a request that has been answered.
var errAlreadyReplied = errors.New("remoting: request already answered")

// serverConn is one accepted connection.
type serverConn struct {
	srv     *Server
	conn    netpoll.Connection
	id      uint64
	remote  string
	local   string
	pending *pendingTable

	lastType atomic.Uint32 // serialize type of the last request the peer sent
	activity atomic.Uint64 // frames read and written, for the idle sweeper
	inflight atomic.Int64  // requests being served

	out outQueue

	rd     frameReader // touched only by OnRequest and, after it, the close callback
	budget connBudget

	idle struct { // touched only by the sweeper goroutine
		seen  uint64
		since time.Time
	}
}

func newServerConn(s *Server, conn netpoll.Connection) *serverConn {
	c := &serverConn{
		srv:     s,
		conn:    conn,
		id:      s.nextID.Add(1),
		pending: newPendingTable(),
	}
	if a := conn.RemoteAddr(); a != nil {
		c.remote = a.String()
	}
	if a := conn.LocalAddr(); a != nil {
		c.local = a.String()
	}
	c.idle.since = time.Now()
	c.out = outQueue{codec: &s.codec, flush: c.flushVec}
	return c
}

// flushVec hands vectors to netpoll (large ones by reference) and writes them out.
func (c *serverConn) flushVec(vec [][]byte) error {
	w := c.conn.Writer()
	for _, p := range vec {
		if _, err := w.WriteBinary(p); err != nil {
			return fmt.Errorf("%w: %w", ErrConnClosed, err)
		}
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("%w: %w", ErrConnClosed, err)
	}
	c.activity.Add(1)
	return nil
}

// ID implements Channel.
func (c *serverConn) ID() uint64 { return c.id }

// RemoteAddr implements Channel.
func (c *serverConn) RemoteAddr() string { return c.remote }

// LocalAddr implements Channel.
func (c *serverConn) LocalAddr() string { return c.local }

// Close implements Channel.
func (c *serverConn) Close() error {
	if !c.conn.IsActive() {
		return nil
	}
	return c.conn.Close()
}

// closed runs once from the close callback. netpoll runs it before its own callback that
// frees the connection's buffers, and kill waits out a flush in progress, so no write
// touches freed buffers.
func (c *serverConn) closed() {
	c.releaseAll()
	c.out.kill()
	c.pending.closeAll(ErrConnClosed)
}

// abort logs a protocol or read error and closes the connection; nothing else is affected.
func (c *serverConn) abort(err error, what string) error {
	c.srv.log.Warn().Err(err).Str("remote", c.remote).Msg(what + ": closing connection")
	_ = c.conn.Close()
	return err
}

// Reply implements Channel. Whoever answers a request ends it, exactly once.
func (c *serverConn) Reply(req, resp *Command) error {
	for {
		st := req.reply.Load()
		if st == replyDone {
			resp.written(errAlreadyReplied)
			return errAlreadyReplied
		}
		if req.reply.CompareAndSwap(st, replyDone) {
			break
		}
	}
	var err error
	if req.IsOneway() {
		resp.written(nil)
	} else {
		prepareReply(req, resp)
		if err = c.write(resp); err != nil && !errors.Is(err, ErrConnClosed) {
			// The response could not be encoded (a header over 16 MiB, say): answer with
			// the reason rather than leave the caller waiting until its timeout.
			c.srv.log.Error().Err(err).Int16("code", resp.Code).Int32("opaque", req.Opaque).Str("remote", c.remote).
				Msg("response could not be sent; answering SYSTEM_ERROR instead")
			fallback := NewResponse(req, CodeSystemError, "response could not be sent: "+err.Error())
			prepareReply(req, fallback)
			_ = c.write(fallback)
		}
	}
	c.srv.requestDone(c, req)
	return err
}

// replyNow answers a request that never entered a pool.
func (c *serverConn) replyNow(req, resp *Command) {
	if req.IsOneway() {
		return
	}
	prepareReply(req, resp)
	_ = c.write(resp)
}

// write queues cmd's frame on the connection (see outQueue).
func (c *serverConn) write(cmd *Command) error {
	if !c.conn.IsActive() {
		cmd.written(ErrConnClosed)
		return ErrConnClosed
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
	if err := c.write(req); err != nil {
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
	return c.write(req)
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
