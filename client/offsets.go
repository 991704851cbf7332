package client

import (
	"context"
	"fmt"
	"time"
)

// Consumer offsets (clustering: stored by the brokers; broadcasting: in the member's
// local offsets file, broadcast.go). A newly owned queue starts at the group's committed
// offset (QUERY_CONSUMER_OFFSET; broadcasting: the file's); a queue the group has never
// committed starts where ConsumeFrom says. Each queue's offset — the lowest pulled
// message not yet consumed — is committed (UPDATE_CONSUMER_OFFSET; broadcasting: into
// the file's table, written out after each round) every commit interval when it moved
// or offsets now go to another broker (the master is back after a failover: it has not
// seen the offsets committed to the slave), when the queue is dropped, and on Close.
//
// A queue keeps its processQueue, and so its position, while its broker group's
// addresses change (the table is keyed by the MessageQueue: topic, broker name, queue
// id). When a queue is dropped and owned again, its new processQueue never starts below
// the offset the old one reached: the committed offset it reads may be behind it — read
// from a slave, whose copy of the master's offsets lags by up to its metadata sync
// interval (broker.Options.SlaveSyncInterval), or left behind by a commit that failed
// because the broker was going away — and starting there would deliver consumed
// messages again. An offset reset from the broker clears that floor for the queues it
// names, owned or not.

// startOffset finds where q starts pulling: the group's committed offset (storedOffset),
// but not below the offset this consumer's previous processQueue of the queue reached.
func (pc *PushConsumer) startOffset(q *processQueue) (int64, error) {
	off, err := pc.storedOffset(q)
	if err != nil {
		return 0, err
	}
	pc.mu.Lock()
	reached, ok := pc.mu.reached[q.mq]
	delete(pc.mu.reached, q.mq) // a floor spans one gap in ownership, no more
	pc.mu.Unlock()
	if ok && reached > off {
		pc.log.Info().Str("queue", q.mq.String()).Str("broker", q.addr()).Int64("offset", off).
			Int64("reached", reached).Msg("committed offset behind what this consumer consumed; starting after it")
		return reached, nil
	}
	return off, nil
}

// storedOffset reads q's committed offset; a queue without one starts where ConsumeFrom
// says.
func (pc *PushConsumer) storedOffset(q *processQueue) (int64, error) {
	ctx, cancel := context.WithTimeout(q.ctx, pc.c.opts.RequestTimeout)
	defer cancel()
	if pc.local != nil {
		if off, ok := pc.local.get(q.mq); ok {
			return off, nil
		}
	} else {
		// A group without an offset starts where ConsumeFrom says, not at 0 because the
		// queue was never truncated (committedOffset).
		off, err := pc.c.committedOffset(ctx, q.addr(), pc.group, q.mq)
		if err != nil || off >= 0 {
			return off, err
		}
	}
	switch {
	case pc.opts.from == ConsumeFromFirstOffset:
		return 0, nil // below the minimum: the broker answers OFFSET_MOVED to it
	case pc.opts.from == ConsumeFromLastOffset && q.sub.retry:
		return 0, nil // retried messages are never skipped
	case pc.opts.from == ConsumeFromLastOffset:
		return pc.c.maxOffset(ctx, q.addr(), q.mq)
	default:
		return pc.c.offsetByTime(ctx, q.addr(), q.mq, pc.opts.fromTime.UnixMilli())
	}
}

// commit sends q's offset to its broker (broadcasting: records it for the offsets
// file) if it moved since the last commit, or if that went to another broker.
func (pc *PushConsumer) commit(ctx context.Context, q *processQueue) error {
	q.commitMu.Lock()
	defer q.commitMu.Unlock()
	off, ok := q.commitOffset()
	if !ok {
		return nil
	}
	if pc.local != nil {
		if off != q.committed {
			pc.local.set(q.mq, off)
			q.committed = off
		}
		return nil
	}
	addr := q.addr()
	if off == q.committed && addr == q.committedTo {
		return nil
	}
	if err := pc.c.commitOffset(ctx, addr, pc.group, q.mq, off); err != nil {
		return fmt.Errorf("client: commit offset %d of %s for %s: %w", off, q.mq, pc.group, err)
	}
	q.committed, q.committedTo = off, addr
	return nil
}

// commitLoop commits every owned queue's offset every commit interval until Close
// (broadcasting: then writes the offsets file if it changed).
func (pc *PushConsumer) commitLoop() {
	t := time.NewTicker(pc.opts.commit)
	defer t.Stop()
	for {
		select {
		case <-pc.ctx.Done():
			return
		case <-t.C:
		}
		pc.mu.Lock()
		queues := make([]*processQueue, 0, len(pc.mu.queues))
		for _, q := range pc.mu.queues {
			queues = append(queues, q)
		}
		pc.mu.Unlock()
		for _, q := range queues {
			// Not cancelled by Close: a commit in flight completes before the final one.
			ctx, cancel := context.WithTimeout(context.Background(), pc.c.opts.RequestTimeout)
			if err := pc.commit(ctx, q); err != nil {
				pc.log.Warn().Err(err).Msg("periodic offset commit failed")
			}
			cancel()
		}
		if pc.local != nil {
			if err := pc.local.persist(); err != nil {
				pc.log.Warn().Err(err).Msg("writing the offsets file failed")
			}
		}
	}
}

// finishDrop waits until a dropped queue's loops and handlers are done, then commits its
// offset, so the queue's next owner starts after what this one consumed, and then (an
// orderly consumer) releases its lock, so the next owner may start. A queue whose lock
// was lost is neither committed nor unlocked: another member owns it already. It
// records the offset the queue reached (startOffset), or — a queue not committed: its
// offset was reset, or another member owns it — forgets the one recorded. Last, it
// closes done, letting this consumer's next processQueue of the queue start.
func (pc *PushConsumer) finishDrop(q *processQueue, done chan struct{}, commit bool) {
	q.pulling.Wait()
	<-q.idle
	ctx, cancel := context.WithTimeout(context.Background(), pc.c.opts.RequestTimeout)
	defer cancel()
	if commit {
		if err := pc.commit(ctx, q); err != nil {
			pc.log.Warn().Err(err).Msg("offset commit of a dropped queue failed")
		}
		if pc.locking() {
			if err := pc.unlock(ctx, []*processQueue{q}); err != nil {
				pc.log.Warn().Err(err).Msg("unlocking a dropped queue failed")
			}
		}
	}
	reached, started := q.commitOffset()
	pc.mu.Lock()
	switch {
	case !commit:
		delete(pc.mu.reached, q.mq)
	case started:
		pc.mu.reached[q.mq] = reached
	}
	if pc.mu.draining[q.mq] == done {
		delete(pc.mu.draining, q.mq)
	}
	pc.mu.Unlock()
	close(done)
	pc.kickLocks()
}
