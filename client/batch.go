package client

import (
	"context"
	"time"

	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
)

// Automatic batching ("natural batching"). Each lane — a topic whose queue the producer
// picks, or one selected queue of a topic — allows a few requests in flight. A message
// that finds a free slot goes out at once (with whatever accumulated before it), so an
// idle producer adds no delay; a message that finds every slot busy joins the lane's
// pending batch, which goes out when a request completes, when it reaches the batch
// limits, or when it has waited the linger time, whichever comes first. A selected
// queue's lane keeps one request in flight and never overtakes it, so messages of one
// queue are stored in the order they were sent.

// laneKey names a lane: queue is -1 when the producer picks the queue.
type laneKey struct {
	topic string
	queue int32
}

// lane is the batching state of one laneKey; guarded by Producer.mu.
type lane struct {
	key      laneKey
	inflight int
	pending  *batch   // accumulating
	queued   []*batch // full batches of an ordered lane, waiting for its slot
	timer    *time.Timer
	last     int // messages in the lane's last batch: the next one's initial capacity
}

// maxInflight is how many requests a lane may have in flight.
func (l *lane) maxInflight() int {
	if l.key.queue >= 0 {
		return 1
	}
	return unorderedInflight
}

// unorderedInflight is how many requests an unordered lane keeps in flight: enough to
// cover the broker's round trip while the next batch fills.
const unorderedInflight = 4

// batch is one request's worth of messages.
type batch struct {
	key        laneKey
	ctx        context.Context
	cancel     context.CancelFunc
	route      *topicRoute
	outs       []*outgoing
	dones      []func(SendResult, error) // per message (automatic batches)
	done       func([]SendResult, error) // whole batch (SendBatch, single sends)
	bytes      int
	lastBroker string // broker of the last failed attempt
	stick      bool   // retry on lastBroker (WithIdempotence, outcome unknown)
	lane       *lane  // set for automatic batches
	p          *Producer
}

// finish reports the outcome to every waiter and frees the lane's slot.
func (b *batch) finish(res []SendResult, err error) {
	if b.cancel != nil {
		b.cancel()
	}
	if b.done != nil {
		b.done(res, err)
	}
	for i, d := range b.dones {
		if err != nil {
			d(SendResult{}, err)
		} else {
			d(res[i], nil)
		}
	}
	if b.lane != nil {
		// Nothing looks at the messages any more (the waiters' results hold strings).
		for i, o := range b.outs {
			*o = outgoing{}
			b.p.outs.Put(o)
			b.outs[i] = nil
		}
		b.p.laneDone(b.lane)
	}
}

// succeed reports a send response to b's waiters (errors in it to all of them) and
// frees the lane's slot.
func (b *batch) succeed(r *topicRoute, q queue, resp *remoting.Command) {
	if b.done != nil {
		res := make([]SendResult, len(b.outs))
		if err := eachResult(r, q, b, resp, func(i int, sr SendResult) { res[i] = sr }); err != nil {
			b.finish(nil, err)
			return
		}
		b.finish(res, nil)
		return
	}
	err := eachResult(r, q, b, resp, func(i int, sr SendResult) { b.dones[i](sr, nil) })
	if err != nil {
		b.finish(nil, err)
		return
	}
	b.dones = nil // delivered
	b.finish(nil, nil)
}

// enqueue adds a prepared message to its lane and sends what can go.
func (p *Producer) enqueue(ctx context.Context, r *topicRoute, key laneKey, out *outgoing, done func(SendResult, error)) {
	if err := ctx.Err(); err != nil {
		done(SendResult{}, err)
		return
	}
	size := protocol.BatchItemSize(len(out.body), len(out.props))
	p.mu.Lock()
	if p.mu.closed {
		p.mu.Unlock()
		done(SendResult{}, ErrClosed)
		return
	}
	l := p.mu.lanes[key]
	if l == nil {
		l = &lane{key: key}
		p.mu.lanes[key] = l
	}
	if l.pending != nil && (len(l.pending.outs) >= p.opts.batchMessages || l.pending.bytes+size > p.opts.batchBytes) {
		p.seal(l)
	}
	if l.pending == nil {
		n := min(max(l.last, 1), p.opts.batchMessages)
		l.pending = &batch{key: key, route: r, lane: l, p: p,
			outs: make([]*outgoing, 0, n), dones: make([]func(SendResult, error), 0, n)}
	}
	b := l.pending
	b.outs = append(b.outs, out)
	b.dones = append(b.dones, done)
	b.bytes += size
	send := p.takeSendable(l)
	if l.pending != nil && l.timer == nil && p.opts.linger > 0 && key.queue < 0 {
		p.inflight.Add(1)
		l.timer = time.AfterFunc(p.opts.linger, func() { p.lingerExpired(l) })
	}
	p.mu.Unlock()
	p.launch(send)
}

// seal moves a lane's pending batch out of accumulation: an ordered lane queues it, an
// unordered lane gets it sent by the next takeSendable even without a free slot.
func (p *Producer) seal(l *lane) {
	l.last = len(l.pending.outs)
	l.queued = append(l.queued, l.pending)
	l.pending = nil
}

// takeSendable removes from l the batches that may be sent now: queued ones first, then
// the pending one, while a slot is free (an unordered lane sends sealed batches at once).
// The caller holds mu and launches them after unlocking.
func (p *Producer) takeSendable(l *lane) []*batch {
	var out []*batch
	for len(l.queued) > 0 && (l.inflight < l.maxInflight() || l.key.queue < 0) {
		out = append(out, l.queued[0])
		l.queued = l.queued[1:]
		l.inflight++
	}
	if l.pending != nil && l.inflight < l.maxInflight() {
		out = append(out, l.pending)
		l.last = len(l.pending.outs)
		l.pending = nil
		l.inflight++
	}
	if l.pending == nil && l.timer != nil && l.timer.Stop() {
		l.timer = nil
		p.inflight.Done() // the timer will not run
	}
	return out
}

// launch sends batches taken from a lane.
func (p *Producer) launch(bs []*batch) {
	for _, b := range bs {
		b.ctx, b.cancel = context.WithTimeout(context.Background(), p.c.opts.RequestTimeout)
		p.inflight.Add(1)
		p.sendBatch(b.route, b, 0)
	}
}

// lingerExpired sends a lane's pending batch that waited the linger time.
func (p *Producer) lingerExpired(l *lane) {
	defer p.inflight.Done()
	p.mu.Lock()
	l.timer = nil
	var send []*batch
	if l.pending != nil {
		send = []*batch{l.pending}
		l.last = len(l.pending.outs)
		l.pending = nil
		l.inflight++
	}
	p.mu.Unlock()
	p.launch(send)
}

// laneDone frees a slot of l and sends what was waiting for it.
func (p *Producer) laneDone(l *lane) {
	p.mu.Lock()
	l.inflight--
	send := p.takeSendable(l)
	p.mu.Unlock()
	p.launch(send)
}

// flush sends what is pending on l without waiting for the linger time (Close). An
// ordered lane keeps its order: its batches go as its slot frees up.
func (p *Producer) flush(l *lane) {
	p.mu.Lock()
	if l.pending != nil {
		p.seal(l)
	}
	send := p.takeSendable(l)
	if l.timer != nil && l.timer.Stop() {
		l.timer = nil
		p.inflight.Done()
	}
	p.mu.Unlock()
	p.launch(send)
}
