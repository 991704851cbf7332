package remoting

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// Errors returned by invocations. Callers test them with errors.Is.
var (
	// ErrTimeout means no response arrived before the deadline.
	ErrTimeout = errors.New("remoting: request timed out")
	// ErrConnClosed means the connection closed before the response arrived or the request
	// could be written.
	ErrConnClosed = errors.New("remoting: connection closed")
	// ErrClosed means the client or server has been shut down.
	ErrClosed = errors.New("remoting: closed")
)

// CodeError is an error that a Handler returns to answer with a specific response code and
// remark; any other error is answered with SYSTEM_ERROR and the error text.
type CodeError struct {
	Code   int16
	Remark string
}

// Error implements error.
func (e *CodeError) Error() string { return fmt.Sprintf("remoting: code %d: %s", e.Code, e.Remark) }

// pendingCall is one request awaiting its response: either ch (sync) or cb (async) is set.
// A sync call that fails has err set before ch is closed.
type pendingCall struct {
	ch       chan *Command
	cb       func(*Command, error)
	deadline int64 // unix nanoseconds; 0 = only the caller's context ends it
	err      error
	done     atomic.Bool
}

// finish delivers the outcome once; later calls do nothing.
func (p *pendingCall) finish(resp *Command, err error) {
	if !p.done.CompareAndSwap(false, true) {
		return
	}
	if p.cb != nil {
		p.cb(resp, err)
		return
	}
	if err == nil {
		p.ch <- resp
	} else {
		p.err = err
		close(p.ch)
	}
}

// pendingTable maps opaques of outstanding requests to their waiters.
type pendingTable struct {
	mu struct {
		sync.Mutex
		calls  map[int32]*pendingCall
		closed bool
	}
}

func newPendingTable() *pendingTable {
	t := &pendingTable{}
	t.mu.calls = make(map[int32]*pendingCall)
	return t
}

// add registers a call; it fails when the table has been closed.
func (t *pendingTable) add(opaque int32, p *pendingCall) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.mu.closed {
		return ErrConnClosed
	}
	t.mu.calls[opaque] = p
	return nil
}

// take removes and returns the call for opaque, if any.
func (t *pendingTable) take(opaque int32) *pendingCall {
	t.mu.Lock()
	p := t.mu.calls[opaque]
	delete(t.mu.calls, opaque)
	t.mu.Unlock()
	return p
}

// complete hands a response to its waiter; responses nobody waits for are dropped, as the
// official clients do. It reports whether a waiter was found.
func (t *pendingTable) complete(resp *Command) bool {
	p := t.take(resp.Opaque)
	if p == nil {
		return false
	}
	p.finish(resp, nil)
	return true
}

// expire fails the calls whose deadline is before now with ErrTimeout.
func (t *pendingTable) expire(now int64) {
	var late []*pendingCall
	t.mu.Lock()
	for opaque, p := range t.mu.calls {
		if p.deadline != 0 && p.deadline < now {
			late = append(late, p)
			delete(t.mu.calls, opaque)
		}
	}
	t.mu.Unlock()
	for _, p := range late {
		p.finish(nil, ErrTimeout)
	}
}

// closeAll fails every outstanding call with err and refuses new ones.
func (t *pendingTable) closeAll(err error) {
	t.mu.Lock()
	calls := t.mu.calls
	t.mu.calls = make(map[int32]*pendingCall)
	t.mu.closed = true
	t.mu.Unlock()
	for _, p := range calls {
		p.finish(nil, err)
	}
}

// errorResponse turns a handler error into a response for req.
func errorResponse(req *Command, err error) *Command {
	var ce *CodeError
	if errors.As(err, &ce) {
		return NewResponse(req, ce.Code, ce.Remark)
	}
	return NewResponse(req, CodeSystemError, err.Error())
}
