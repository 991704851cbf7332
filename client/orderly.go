package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
)

// Orderly consumption (WithOrderly). Each owned queue has, besides its pull loop, one
// consume loop: it takes the oldest pulled messages (up to the consume batch), calls the
// handler, and only when that call is settled takes the next batch, so a queue's
// messages are handled one batch at a time and in queue order. Handler calls of all
// queues share WithConsumeGoroutines slots.
//
// In clustering mode a queue is also guarded by its broker lock (LOCK_BATCH_MQ): two
// members may both believe they own a queue during a rebalance, but only the holder of
// the lock consumes it. The lock is asked for right after each rebalance, again every
// second for queues that another member still holds, and renewed every 20 s; the broker
// keeps an unrenewed lock for 60 s, and the consumer trusts its own for 30 s. A queue's
// pull loop starts only once it holds the lock, and reads the start offset then; a
// dropped queue commits its offset before it unlocks (finishDrop), and Close commits
// before it unlocks, so the next owner continues exactly after the consumed prefix. A
// queue whose renewal the broker refuses has lost its lock: it is dropped at once
// without committing (the new holder's offset wins) and comes back at the next
// rebalance.
//
// A failed batch (ConsumeRetryLater or a panic) stays at the head of its queue and is
// handed to the handler again after the suspend time, each message's ReconsumeTimes one
// higher. A message that fails once it has been reconsumed max reconsume times is sent
// to the broker with delay level -1 (straight to %DLQ%<group>, as RocketMQ's orderly
// consumers do) and counts as consumed; if that send fails, it stays and is retried.
// Broadcasting consumers drop such a message instead. A batch failing because the
// consumer is closing is left unconsumed for the next owner.

// Lock timing (RocketMQ's values).
const (
	lockRenewInterval = 20 * time.Second // renew every held lock
	lockRetryInterval = time.Second      // retry the queues another member still holds
	lockMaxLive       = 30 * time.Second // trust an unrenewed lock this long
)

// locking reports whether the consumer takes broker locks: orderly in clustering mode.
func (pc *PushConsumer) locking() bool { return pc.opts.orderly && !pc.opts.broadcast }

// kickLocks asks the lock loop to lock the queues waiting for it now.
func (pc *PushConsumer) kickLocks() {
	select {
	case pc.lockKick <- struct{}{}:
	default:
	}
}

// signal wakes the queue's consume loop.
func (q *processQueue) signal() {
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// setLocked records that the broker granted (or renewed) the queue's lock at now.
func (q *processQueue) setLocked(now time.Time) {
	q.mu.Lock()
	q.mu.lockedAt = now
	q.mu.Unlock()
	q.lockOnce.Do(func() { close(q.locked) })
	q.signal()
}

// wasLocked reports whether the broker ever granted the queue's lock.
func (q *processQueue) wasLocked() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return !q.mu.lockedAt.IsZero()
}

// heldLocked reports whether the queue's lock is held and fresh at now; the caller holds
// q.mu.
func (q *processQueue) heldLocked(now time.Time) bool {
	return !q.mu.lockedAt.IsZero() && now.Sub(q.mu.lockedAt) < lockMaxLive
}

// held is heldLocked taking q.mu.
func (q *processQueue) held(now time.Time) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.heldLocked(now)
}

// nextBatch waits until the queue may consume — a pulled message is buffered and, in
// clustering mode, the lock is held — and returns pending (a failed batch to retry) or
// else the oldest buffered messages, at most a consume batch. It returns nil when the
// queue stops.
func (q *processQueue) nextBatch(pending []*MessageExt) []*MessageExt {
	locking := q.pc.locking()
	for {
		q.mu.Lock()
		if (pending != nil || len(q.mu.buf) > 0) && (!locking || q.heldLocked(time.Now())) {
			if pending == nil {
				pending = slices.Clone(q.mu.buf[:min(len(q.mu.buf), q.pc.opts.consumeBatch)])
			}
			q.mu.Unlock()
			return pending
		}
		q.mu.Unlock()
		select {
		case <-q.ctx.Done():
			return nil
		case <-q.ready:
		}
	}
}

// consumed removes msgs from the buffer and the window: they are consumed.
func (q *processQueue) consumed(msgs []*MessageExt) {
	if len(msgs) == 0 {
		return
	}
	q.mu.Lock()
	q.mu.buf = slices.DeleteFunc(q.mu.buf, func(m *MessageExt) bool { return slices.Contains(msgs, m) })
	q.mu.Unlock()
	q.markDone(msgs)
}

// consumeLoop is an orderly queue's second goroutine: it hands the queue's messages to
// the handler one batch at a time, in order, until the queue is dropped or the consumer
// closes.
func (q *processQueue) consumeLoop() {
	defer q.pulling.Done()
	pc := q.pc
	var pending []*MessageExt // a failed batch, retried first
	for {
		batch := q.nextBatch(pending)
		if batch == nil {
			return
		}
		select {
		case pc.slots <- struct{}{}:
		case <-q.ctx.Done():
			return
		}
		var ok bool
		pending, ok = pc.consumeOrderly(q, batch)
		<-pc.slots
		if !ok {
			return
		}
		if pending != nil && !q.pause(pc.opts.orderlyRetry) {
			return
		}
	}
}

// consumeOrderly runs the handler on batch and settles the outcome. It returns the
// messages to retry after the suspend time (nil: none), and ok false when the queue
// stopped or the consumer is closing.
func (pc *PushConsumer) consumeOrderly(q *processQueue, batch []*MessageExt) (retry []*MessageExt, ok bool) {
	if pc.ctx.Err() != nil || !q.enter() {
		return nil, false
	}
	defer q.leave()
	if pc.call(batch) == ConsumeSuccess {
		q.consumed(batch)
		return nil, true
	}
	if pc.ctx.Err() != nil {
		return nil, false // closing: unconsumed, for the next owner
	}
	// Dead-lettered even if the consumer is closing meanwhile.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(pc.ctx), pc.c.opts.RequestTimeout)
	defer cancel()
	var dead []*MessageExt
	for _, m := range batch {
		if int(m.ReconsumeTimes) < pc.opts.maxReconsume {
			m.ReconsumeTimes++
			retry = append(retry, m)
			continue
		}
		if pc.opts.broadcast {
			pc.log.Warn().Str("msgID", m.MsgID).Int32("reconsumeTimes", m.ReconsumeTimes).
				Msg("orderly broadcasting handler keeps failing; message dropped")
			dead = append(dead, m)
			continue
		}
		if err := pc.sendBack(ctx, q, m, -1); err != nil {
			pc.log.Warn().Err(err).Str("msgID", m.MsgID).Msg("moving a message to the dead-letter topic failed; retrying it")
			retry = append(retry, m)
			continue
		}
		pc.log.Info().Str("msgID", m.MsgID).Int32("reconsumeTimes", m.ReconsumeTimes).
			Msg("orderly handler keeps failing; message moved to the dead-letter topic")
		dead = append(dead, m)
	}
	q.consumed(dead)
	return retry, true
}

// lockAll asks the brokers for the locks of the owned queues: every one when renew is
// set, else those not held. Queues granted are marked held (their pull loops start); a
// held queue whose lock the broker refuses has lost it and is dropped. A queue whose
// previous processQueue is still finishing is skipped: its unlock comes first.
func (pc *PushConsumer) lockAll(ctx context.Context, renew bool) {
	pc.lockMu.Lock()
	defer pc.lockMu.Unlock()
	now := time.Now()
	byAddr := map[string][]*processQueue{}
	pc.mu.Lock()
	if pc.mu.state != consumerStarted {
		pc.mu.Unlock()
		return // closed: Close releases the locks
	}
	for _, q := range pc.mu.queues {
		if q.turnCame() && (renew || !q.held(now)) {
			byAddr[q.addr()] = append(byAddr[q.addr()], q)
		}
	}
	pc.mu.Unlock()
	for addr, qs := range byAddr {
		granted, err := pc.lockBatch(ctx, addr, qs)
		if err != nil {
			if ctx.Err() == nil {
				pc.log.Warn().Err(err).Str("broker", addr).Msg("locking queues failed")
			}
			continue
		}
		at := time.Now()
		for _, q := range qs {
			switch {
			case granted[q.mq]:
				q.setLocked(at)
			case q.wasLocked():
				pc.log.Warn().Str("queue", q.mq.String()).Msg("queue lock lost; dropping the queue")
				pc.mu.Lock()
				if pc.mu.queues[q.mq] == q {
					pc.dropLocked(q, false)
				}
				pc.mu.Unlock()
				pc.requestRebalance()
			default:
				pc.log.Debug().Str("queue", q.mq.String()).Msg("queue still locked by another member")
			}
		}
	}
}

// lockBatch sends LOCK_BATCH_MQ for qs to addr and returns the queues granted. An empty
// or undecodable answer grants nothing.
func (pc *PushConsumer) lockBatch(ctx context.Context, addr string, qs []*processQueue) (map[MessageQueue]bool, error) {
	req, err := pc.lockRequest(protocol.LockBatchMQ, qs)
	if err != nil {
		return nil, err
	}
	resp, err := pc.c.invoke(ctx, addr, req)
	if err != nil {
		return nil, err
	}
	granted := map[MessageQueue]bool{}
	if body, err := protocol.DecodeLockBatchResponseBody(resp.Body); err == nil {
		for _, mq := range body.LockOKMQSet {
			granted[MessageQueue(mq)] = true
		}
	}
	return granted, nil
}

// unlock releases the locks of qs (UNLOCK_BATCH_MQ, one request per broker).
func (pc *PushConsumer) unlock(ctx context.Context, qs []*processQueue) error {
	pc.lockMu.Lock()
	defer pc.lockMu.Unlock()
	byAddr := map[string][]*processQueue{}
	for _, q := range qs {
		byAddr[q.addr()] = append(byAddr[q.addr()], q)
	}
	var errs []error
	for addr, qs := range byAddr {
		req, err := pc.lockRequest(protocol.UnlockBatchMQ, qs)
		if err == nil {
			_, err = pc.c.invoke(ctx, addr, req)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("client: unlock %d queues of %s: %w", len(qs), pc.group, err))
			continue
		}
		for _, q := range qs {
			q.mu.Lock()
			q.mu.lockedAt = time.Time{}
			q.mu.Unlock()
		}
	}
	return errors.Join(errs...)
}

// lockRequest builds a LOCK_BATCH_MQ or UNLOCK_BATCH_MQ request naming qs.
func (pc *PushConsumer) lockRequest(code protocol.RequestCode, qs []*processQueue) (*remoting.Command, error) {
	b := protocol.LockBatchRequestBody{ConsumerGroup: pc.group, ClientID: pc.c.clientID}
	for _, q := range qs {
		b.MQSet = append(b.MQSet, protocol.MessageQueue(q.mq))
	}
	slices.SortFunc(b.MQSet, protocol.CompareMessageQueue)
	body, err := protocol.EncodeLockBatchRequestBody(&b)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	req := remoting.NewRequest(int16(code), nil)
	req.Body = body
	return req, nil
}

// lockLoop locks the queues that wait for it every second (at once when a dropped queue
// has been released) and renews every lock every 20 s, until Close.
func (pc *PushConsumer) lockLoop() {
	t := time.NewTicker(lockRetryInterval)
	defer t.Stop()
	renewed := time.Now()
	for {
		select {
		case <-pc.ctx.Done():
			return
		case <-t.C:
		case <-pc.lockKick:
		}
		renew := time.Since(renewed) >= lockRenewInterval
		ctx, cancel := context.WithTimeout(pc.ctx, pc.c.opts.RequestTimeout)
		pc.lockAll(ctx, renew)
		cancel()
		if renew {
			renewed = time.Now()
		}
	}
}
