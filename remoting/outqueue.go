package remoting

import (
	"runtime"
	"sync"
)

// Writing frames: many goroutines answer requests on one connection at once. Each encodes
// its frame into a shared output queue under a short lock; whichever finds no flush in
// progress becomes the flusher and keeps writing everything queued — its own frame and
// those that arrive meanwhile — until the queue is empty. Concurrent responses therefore
// leave in one socket write, and nobody but the flusher waits for the socket.
//
// The connection's reader corks the queue while it handles the frames of one read (see
// Server.onRequest): the replies it writes itself meanwhile (inline routes, refusals) are
// queued without a flush, and uncork flushes them together, so a burst of N pipelined
// requests is answered with one socket write rather than N. Other goroutines' writes are
// never held: a worker that writes while the queue is corked flushes at once, taking the
// reader's queued replies along. A corked queue holding corkMaxFrames frames or
// corkMaxBytes bytes is flushed by the reader without waiting for the end of the burst:
// a pipelining client's window refills as the burst is served, not only at its end.
//
// Small bodies are copied next to their headers; bodies of inlineBodyMax bytes or more, and
// every BodyVec slice, are referenced without copying and handed to the socket as separate
// vectors (pull bodies that point into mapped files).

// inlineBodyMax is the largest body copied into the coalescing buffer.
const inlineBodyMax = 4 << 10

// maxSpareBuffer is the largest coalescing buffer kept for reuse.
const maxSpareBuffer = 1 << 20

// corkMaxFrames and corkMaxBytes bound what a corked queue holds before the reader
// flushes it anyway. One write per 32 answers costs little more than one per burst.
const (
	corkMaxFrames = 32
	corkMaxBytes  = 64 << 10
)

// outPart is one vector of a flush: an external slice, or buf[start:end].
type outPart struct {
	ext        []byte
	start, end int
}

// outBatch is what one flush writes.
type outBatch struct {
	buf       []byte
	parts     []outPart
	callbacks []func(error)
	ext       int // bytes of the ext parts
	frames    int // frames appended
}

// full reports whether a corked batch should be written without waiting for uncork.
func (b *outBatch) full() bool { return b.frames >= corkMaxFrames || len(b.buf)+b.ext >= corkMaxBytes }

// outQueue is a connection's output queue. flush writes vectors to the socket and must
// either write them all or fail.
type outQueue struct {
	codec *Codec
	flush func(vec [][]byte) error

	// fmu is held while flushing; the close path takes it to wait out a flush in progress
	// before the transport frees its buffers.
	fmu sync.Mutex
	mu  struct {
		sync.Mutex
		cur      outBatch
		spare    outBatch
		flushing bool
		dead     bool
		corked   bool // the reader is handling a burst: its own writes wait for uncork
	}
	vec [][]byte // reused by the flusher (only one at a time)
}

// write queues cmd's frame and, unless another goroutine is flushing, flushes the queue.
// An error means the frame was not (or not entirely) written; a nil error from a
// non-flusher means it was queued for the flush in progress.
func (q *outQueue) write(cmd *Command) error { return q.enqueue(cmd, false) }

// writeFromReader is write for the connection's reader: while the queue is corked the
// frame is queued for uncork's flush (unless the queue is full: corkMaxFrames or
// corkMaxBytes), and a nil error may also mean that.
func (q *outQueue) writeFromReader(cmd *Command) error { return q.enqueue(cmd, true) }

// enqueue is write; reader marks a write by the connection's reader.
func (q *outQueue) enqueue(cmd *Command, reader bool) error {
	q.mu.Lock()
	if q.mu.dead {
		q.mu.Unlock()
		cmd.written(ErrConnClosed)
		return ErrConnClosed
	}
	if err := q.appendLocked(cmd); err != nil {
		q.mu.Unlock()
		cmd.written(err)
		return err
	}
	corked := reader && q.mu.corked
	if q.mu.flushing || corked && !q.mu.cur.full() {
		q.mu.Unlock()
		return nil
	}
	q.mu.flushing = true
	if !corked {
		// Let goroutines that are about to write (other handlers finishing, other
		// callers) append first: on a busy machine this turns one syscall per frame into
		// one per dozens of frames. With nothing else runnable it returns at once.
		q.mu.Unlock()
		runtime.Gosched()
		q.mu.Lock()
	}
	return q.flushLocked()
}

// cork holds the reader's writes until uncork (see the top of this file).
func (q *outQueue) cork() {
	q.mu.Lock()
	q.mu.corked = true
	q.mu.Unlock()
}

// uncork ends a cork and flushes what is queued, unless a flush is in progress (which
// writes it) or nothing is. Like write it yields first: workers about to answer join
// the write, and a lone ping-pong (BenchmarkPingPong) measured about a third fewer OS
// context switches per round trip with the yield than without.
func (q *outQueue) uncork() error {
	q.mu.Lock()
	q.mu.corked = false
	if q.mu.flushing || q.mu.dead || len(q.mu.cur.parts) == 0 {
		q.mu.Unlock()
		return nil
	}
	q.mu.flushing = true
	q.mu.Unlock()
	runtime.Gosched()
	q.mu.Lock()
	return q.flushLocked()
}

// flushLocked is the flusher's loop: it writes batches until the queue is empty or a
// write fails (the queue is then dead and what is left is dropped, its callbacks told).
// The caller holds mu and has set flushing; flushLocked releases mu.
func (q *outQueue) flushLocked() error {
	var err error
	for len(q.mu.cur.parts) > 0 && err == nil {
		b := q.mu.cur
		q.mu.cur, q.mu.spare = q.mu.spare, outBatch{}
		q.mu.Unlock()
		err = q.flushBatch(&b)
		q.mu.Lock()
		if err == nil && cap(b.buf) <= maxSpareBuffer {
			q.mu.spare = outBatch{buf: b.buf[:0], parts: b.parts[:0], callbacks: b.callbacks[:0]}
		}
	}
	q.mu.flushing = false
	if err != nil {
		q.mu.dead = true
		rest := q.mu.cur
		q.mu.cur = outBatch{}
		q.mu.Unlock()
		for _, f := range rest.callbacks {
			f(err)
		}
		return err
	}
	q.mu.Unlock()
	return nil
}

// appendLocked encodes cmd into the current batch.
func (q *outQueue) appendLocked(cmd *Command) error {
	b := &q.mu.cur
	start := len(b.buf)
	buf, err := q.codec.appendFrameHead(b.buf, cmd)
	if err != nil {
		return err
	}
	if len(cmd.Body) < inlineBodyMax {
		buf = append(buf, cmd.Body...)
	}
	b.buf = buf
	b.frames++
	b.addBuf(start, len(buf))
	if len(cmd.Body) >= inlineBodyMax {
		b.parts = append(b.parts, outPart{ext: cmd.Body})
		b.ext += len(cmd.Body)
	}
	for _, p := range cmd.BodyVec {
		if len(p) > 0 {
			b.parts = append(b.parts, outPart{ext: p})
			b.ext += len(p)
		}
	}
	if cmd.OnWritten != nil {
		b.callbacks = append(b.callbacks, cmd.OnWritten)
		cmd.OnWritten = nil
	}
	return nil
}

// addBuf records buf[start:end] as the next vector, merging it with a preceding buf part.
func (b *outBatch) addBuf(start, end int) {
	if n := len(b.parts); n > 0 && b.parts[n-1].ext == nil && b.parts[n-1].end == start {
		b.parts[n-1].end = end
		return
	}
	b.parts = append(b.parts, outPart{start: start, end: end})
}

// flushBatch writes one batch and runs its callbacks.
func (q *outQueue) flushBatch(b *outBatch) error {
	q.fmu.Lock()
	vec := q.vec[:0]
	for _, p := range b.parts {
		if p.ext != nil {
			vec = append(vec, p.ext)
		} else {
			vec = append(vec, b.buf[p.start:p.end])
		}
	}
	var err error
	q.mu.Lock()
	dead := q.mu.dead
	q.mu.Unlock()
	if dead {
		err = ErrConnClosed
	} else {
		err = q.flush(vec)
	}
	clear(vec)
	q.vec = vec[:0]
	q.fmu.Unlock()
	for _, f := range b.callbacks {
		f(err)
	}
	clear(b.callbacks)
	clear(b.parts)
	return err
}

// kill marks the queue dead and waits for a flush in progress to end, so the transport can
// free its buffers afterwards.
// Frames still queued are dropped and their callbacks told so.
func (q *outQueue) kill() {
	q.mu.Lock()
	q.mu.dead = true
	rest := q.mu.cur
	q.mu.cur = outBatch{}
	q.mu.Unlock()
	q.fmu.Lock()
	q.fmu.Unlock() //nolint:staticcheck // an empty critical section: waits for the flusher
	for _, f := range rest.callbacks {
		f(ErrConnClosed)
	}
}
