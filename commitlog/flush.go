package commitlog

import (
	"fmt"
	"time"
)

// waiter is one FlushSync appender waiting for the group commit. Waiters are pooled; one
// that timed out is abandoned to the flusher (which still sends on done) and never reused.
type waiter struct {
	target int64
	done   chan error // buffered 1: the flusher never blocks
	timer  *time.Timer
}

// Flush makes everything written so far durable now.
func (l *Log) Flush() error {
	l.closing.RLock()
	defer l.closing.RUnlock()
	if l.closed.Load() {
		return ErrClosed
	}
	return l.flushAll()
}

// FlushError returns the sticky Sync failure (matching ErrFlushFailed), or nil. Once it is
// set nothing appended afterwards can become durable: the store should stop accepting
// writes.
func (l *Log) FlushError() error {
	if p := l.flushErr.Load(); p != nil {
		return *p
	}
	return nil
}

// fail makes err (which matches ErrFlushFailed) the sticky failure unless one is already
// set, logs it, and returns the sticky failure.
func (l *Log) fail(err error) error {
	if l.flushErr.CompareAndSwap(nil, &err) {
		l.log.Error().Err(err).Msg("commit log flush failed; durability is lost")
	}
	return *l.flushErr.Load()
}

// flushAll drains the stage and flushes up to the current write position. The timestamp
// is loaded before the position and write stores it after, so it belongs to a record
// below the target.
func (l *Log) flushAll() error {
	if err := l.drain(); err != nil {
		return err
	}
	ts := l.lastTS.Load()
	return l.flushTo(l.wrote.Load(), ts)
}

// flushTo syncs [flushed, target) segment by segment (a range may span the end of one
// segment, filler included, and the start of the next) and advances the flushed offset.
// A Sync failure is logged and becomes sticky. ts is the store timestamp of a record
// below target, published as FlushedStoreTimestamp on success.
func (l *Log) flushTo(target, ts int64) error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	if err := l.FlushError(); err != nil {
		return err
	}
	from := l.flushed.Load()
	if from < target {
		start := time.Now()
		defer func() {
			l.stats.flushes.Add(1)
			l.stats.flushNanos.Add(int64(time.Since(start)))
		}()
	}
	for from < target {
		list := l.segs.Load()
		seg := list.find(from, l.segSize)
		if seg == nil {
			first := list.first()
			if first <= from { // beyond the list: cannot happen, bytes below wrote are mapped
				return fmt.Errorf("commitlog: flush: no segment holds offset %d", from)
			}
			from = min(first, target) // deleted before it was flushed: nothing to sync
			l.flushed.Store(from)
			continue
		}
		end := min(target, seg.end)
		if seg.acquire() {
			err := seg.m.Sync(from-seg.start, end-from)
			if rerr := seg.release(); rerr != nil {
				l.log.Error().Err(rerr).Msg("unmap after flush")
			}
			if err != nil {
				return l.fail(fmt.Errorf("%w: segment %s [%d, %d): %w", ErrFlushFailed, seg.name, from, end, err))
			}
		}
		from = end
		l.flushed.Store(from)
	}
	if ts > l.flushedTS.Load() {
		l.flushedTS.Store(ts)
	}
	return nil
}

// asyncFlushLoop is the FlushAsync flusher: every FlushInterval it flushes when at least
// FlushLeastPages pages are dirty or a segment was filled, and everything at least every
// FlushThoroughInterval. Errors are logged (and sticky) by flushTo.
func (l *Log) asyncFlushLoop(stop <-chan struct{}) {
	tick := time.NewTicker(l.opts.FlushInterval)
	defer tick.Stop()
	lastThorough := time.Now()
	for {
		select {
		case <-stop:
			return
		case now := <-tick.C:
			wrote, flushed := l.wrote.Load(), l.flushed.Load()
			if wrote <= flushed {
				continue
			}
			thorough := now.Sub(lastThorough) >= l.opts.FlushThoroughInterval
			dirtyPages := wrote/PageSize - flushed/PageSize
			if !thorough && dirtyPages < int64(l.opts.FlushLeastPages) && wrote/l.segSize == flushed/l.segSize {
				continue
			}
			if thorough {
				lastThorough = now
			}
			_ = l.flushAll()
		}
	}
}

// kickGroupCommit wakes the group-commit flusher without blocking.
func (l *Log) kickGroupCommit() {
	select {
	case l.gcKick <- struct{}{}:
	default:
	}
}

// waitFlushed registers a FlushSync appender whose records end at target and waits for
// the group commit, at most SyncFlushTimeout.
func (l *Log) waitFlushed(target int64) (Status, error) {
	if l.flushed.Load() >= target {
		return PutOK, nil
	}
	w, _ := l.waiterPool.Get().(*waiter)
	if w == nil {
		w = &waiter{done: make(chan error, 1), timer: time.NewTimer(time.Hour)}
		w.timer.Stop()
	}
	w.target = target
	l.gc.Lock()
	l.gc.waiters = append(l.gc.waiters, w)
	kick := len(l.gc.waiters) >= l.gc.want
	l.gc.Unlock()
	if kick {
		l.kickGroupCommit()
	}
	w.timer.Reset(l.opts.SyncFlushTimeout)
	select {
	case err := <-w.done:
		w.timer.Stop() // Go 1.23+ timers: no stale tick can be received after Stop
		l.waiterPool.Put(w)
		if err != nil {
			return FlushDiskFailed, err
		}
		return PutOK, nil
	case <-w.timer.C:
		return FlushDiskTimeout, nil
	}
}

// groupCommitLoop is the FlushSync flusher: whenever kicked (or every FlushInterval) it
// takes every waiting appender, does one flush up to the write position, which covers
// them all, and wakes them.
//
// Cohort gathering: with many concurrent appenders, taking the waiters as soon as a flush
// ends makes two cohorts alternate (the ones that registered during a flush, then the ones
// it woke), halving the batch. So after a flush the flusher expects as many waiters as it
// just woke plus those that registered meanwhile, and waits for them, at most half the
// last flush time (a lone appender is never delayed: it expects one).
func (l *Log) groupCommitLoop(stop <-chan struct{}) {
	tick := time.NewTicker(l.opts.FlushInterval)
	defer tick.Stop()
	gather := time.NewTimer(time.Hour)
	gather.Stop()
	var (
		spare  []*waiter
		expect int
		took   time.Duration
	)
	for {
		select {
		case <-stop:
			l.groupCommit(&spare) // Close holds out appenders; this only finishes stragglers
			return
		case <-l.gcKick:
		case <-tick.C:
		}
		if expect > 1 && !l.gatherCohort(expect, took/2, gather, stop) {
			l.groupCommit(&spare)
			return
		}
		start := time.Now()
		woken, arrived := l.groupCommit(&spare)
		took = time.Since(start)
		expect = woken + arrived
	}
}

// gatherCohort waits until expect waiters are registered or maxWait has passed. It
// returns false when the log is closing.
func (l *Log) gatherCohort(expect int, maxWait time.Duration, t *time.Timer, stop <-chan struct{}) bool {
	maxWait = min(maxWait, 2*time.Millisecond)
	deadline := time.Now().Add(maxWait)
	defer func() {
		l.gc.Lock()
		l.gc.want = 0
		l.gc.Unlock()
	}()
	for {
		l.gc.Lock()
		n := len(l.gc.waiters)
		l.gc.want = expect
		l.gc.Unlock()
		left := time.Until(deadline)
		if n >= expect || left <= 0 {
			return true
		}
		t.Reset(left)
		select {
		case <-l.gcKick:
			t.Stop()
		case <-t.C:
			return true
		case <-stop:
			t.Stop()
			return false
		}
	}
}

// groupCommit swaps the waiter list with spare (double buffering: appenders never wait
// for the flush to register), flushes and completes the batch. It returns how many
// waiters it completed and how many registered during the flush.
func (l *Log) groupCommit(spare *[]*waiter) (woken, arrived int) {
	l.gc.Lock()
	batch := l.gc.waiters
	l.gc.waiters = (*spare)[:0]
	l.gc.Unlock()
	err := l.flushAll()
	l.gc.Lock()
	arrived = len(l.gc.waiters)
	l.gc.Unlock()
	flushed := l.flushed.Load()
	for _, w := range batch {
		switch {
		case flushed >= w.target:
			w.done <- nil
		case err != nil:
			w.done <- err
		default: // cannot happen: the target was written before it was registered
			w.done <- fmt.Errorf("%w: flushed %d, waiting for %d", ErrFlushFailed, flushed, w.target)
		}
	}
	woken = len(batch)
	if woken > 0 {
		l.stats.groupCommits.Add(1)
		l.stats.waiters.Add(int64(woken))
	}
	clear(batch)
	*spare = batch[:0]
	return woken, arrived
}
