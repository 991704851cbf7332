package store

import (
	"context"
	"errors"
	"fmt"
	"math"
	"syscall"
	"time"

	"github.com/ferrymq/ferry/commitlog"
	"github.com/ferrymq/ferry/consumequeue"
	"github.com/ferrymq/ferry/index"
	"github.com/ferrymq/ferry/message"
)

// dispatchIdle is how often the dispatcher looks at the log when nobody kicks it.
const dispatchIdle = 10 * time.Millisecond

// dispatcher state, owned by whichever goroutine dispatches (Open, then the dispatch loop,
// then Shutdown — never two at once).
type dispatcher struct {
	it     *commitlog.Iterator
	queues map[string]map[int32]*consumequeue.Queue // cache; lookups by []byte don't allocate
	gen    uint64                                   // topic-deletion generation the cache matches
	key    []byte                                   // "topic#key" scratch
	// During recovery only: records below these offsets are already in the consume
	// queues (queuesFrom) or the index (indexFrom); zero otherwise.
	queuesFrom, indexFrom int64
	// Derived writes that failed (a full disk, an I/O error): the stalled queue's (or the
	// index's) records from this offset on are left for retryStalled, so one queue that
	// cannot grow does not hide every other queue's messages.
	stalled    map[stallKey]int64
	indexStall int64 // -1 when the index is not stalled
	nextRetry  time.Time
}

// stallKey names a stalled queue.
type stallKey struct {
	topic   string
	queueID int32
}

// stallRetry is how often stalled queues are retried.
const stallRetry = 500 * time.Millisecond

// kickDispatch wakes the dispatcher without blocking.
func (s *Store) kickDispatch() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// dispatchLoop tails the commit log until Shutdown.
func (s *Store) dispatchLoop() {
	t := time.NewTicker(dispatchIdle)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-s.kick:
		case <-t.C:
		}
		if err := s.dispatchAvailable(context.Background()); err != nil {
			s.log.Error().Err(err).Int64("at", s.dispatched.Load()).Msg("dispatch failed; retrying")
		}
	}
}

// dispatchLimit is how far records may be dispatched: everything written in async mode,
// only what is durable in sync mode.
func (s *Store) dispatchLimit() int64 {
	if s.opts.FlushMode == commitlog.FlushSync {
		return s.cl.FlushedOffset()
	}
	return s.cl.MaxOffset()
}

// dispatchAvailable dispatches every record between the dispatched offset and the limit.
func (s *Store) dispatchAvailable(ctx context.Context) error {
	s.dispatchMu.Lock()
	defer s.dispatchMu.Unlock()
	d := &s.disp
	if g := s.topicGen.Load(); d.queues == nil || d.gen != g {
		d.queues, d.gen = make(map[string]map[int32]*consumequeue.Queue), g
	}
	if d.stalling() && !s.now().Before(d.nextRetry) {
		s.retryStalled(d)
	}
	limit := s.dispatchLimit()
	from := s.dispatched.Load()
	if first := s.cl.MinOffset(); from < first {
		// Nothing lies below the log's first segment: a replica that started at its
		// master's first segment (commitlog.StartReplicaAt).
		s.advance(first)
		from = first
	}
	if from >= limit {
		return nil
	}
	if d.it == nil || d.it.Pos() != from {
		if d.it != nil {
			d.it.Close()
		}
		d.it = s.cl.NewIterator(from)
	}
	for n := 0; ; n++ {
		if n%1024 == 1023 && ctx.Err() != nil {
			return fmt.Errorf("store: dispatch: %w", ctx.Err())
		}
		if !d.it.Next() {
			break
		}
		if d.it.Pos() > limit {
			// The record is not durable yet (sync mode): start from it next time.
			d.it.Close()
			d.it = nil
			break
		}
		if err := s.dispatchRecord(d, d.it.Record(), d.it.Offset()); err != nil {
			return err
		}
		s.advance(d.it.Pos())
	}
	if d.it != nil {
		if err := d.it.Err(); err != nil {
			d.it.Close()
			d.it = nil
			return fmt.Errorf("%w: %w", errDispatchStalled, err)
		}
		// A blank filler moves the position without a record.
		s.advance(d.it.Pos())
	}
	return nil
}

// advance publishes a new dispatched offset and wakes WaitDispatched callers. The
// channel they wait on is replaced only when one of them has taken it, so dispatching
// allocates nothing while nobody waits (the common case: advance runs once per record).
func (s *Store) advance(pos int64) {
	if pos <= s.dispatched.Load() {
		return
	}
	s.dispatched.Store(pos)
	s.progress.Lock()
	if s.progress.taken {
		close(s.progress.ch)
		s.progress.ch = make(chan struct{})
		s.progress.taken = false
	}
	s.progress.Unlock()
}

// dispatchRecord adds one record to its consume queue and the index. A write that fails
// stalls only its queue (or the index), never the dispatcher.
func (s *Store) dispatchRecord(d *dispatcher, rec *message.Record, off int64) error {
	if s.deleted(rec.Topic, off) {
		return nil
	}
	if off >= d.queuesFrom && queued(rec) && !d.queueStalled(rec) {
		if err := s.dispatchUnit(d, rec, off); err != nil {
			s.stallQueue(d, rec, off, err)
		}
	}
	if s.idx != nil && off >= d.indexFrom && indexed(rec) && d.indexStall < 0 {
		if err := s.indexRecord(d, rec, off); err != nil {
			s.stallIndex(d, off, err)
		}
	}
	return nil
}

// queued reports whether a record goes to a consume queue.
func queued(rec *message.Record) bool {
	tt := message.TransactionType(rec.SysFlag)
	return tt == message.TransactionNotType || tt == message.TransactionCommitType
}

// indexed reports whether a record's keys go to the index.
func indexed(rec *message.Record) bool {
	return message.TransactionType(rec.SysFlag) != message.TransactionRollbackType
}

// dispatchUnit appends a record's unit to its consume queue. Units the queue rejects as
// not fitting (a bug) are logged and dropped; other errors are returned.
func (s *Store) dispatchUnit(d *dispatcher, rec *message.Record, off int64) error {
	q, err := s.dispatchQueue(d, rec.Topic, rec.QueueID)
	if err != nil {
		return err
	}
	tags := s.tagsCode(rec)
	u := consumequeue.Unit{Offset: off, Size: rec.StoreSize, TagsCode: tags}
	err = q.Append(rec.QueueOffset, u)
	if errors.Is(err, consumequeue.ErrGap) && q.MinOffset() == q.MaxOffset() {
		// An empty queue re-derived from a log whose start was cleaned: it starts at
		// the first record still stored.
		if err = q.SetMinOffset(rec.QueueOffset); err == nil {
			err = q.Append(rec.QueueOffset, u)
		}
	}
	if errors.Is(err, consumequeue.ErrGap) {
		// Records carry their queue offsets: the ones between were lost to damage the
		// log quarantined, and the queue skips them with hole units.
		from := q.MaxOffset()
		if err = q.FillGap(rec.QueueOffset, off); err == nil {
			s.log.Warn().Str("queue", q.String()).Int64("from", from).Int64("to", rec.QueueOffset).
				Msg("queue offsets lost to commit-log damage are skipped")
			err = q.Append(rec.QueueOffset, u)
		}
	}
	switch {
	case errors.Is(err, consumequeue.ErrGap) || errors.Is(err, consumequeue.ErrMismatch):
		// A queue offset the log assigned does not fit the queue: a bug, or a record
		// whose QUEUEOFFSET or QUEUEID was changed on disk (V1 checksums only the body),
		// met while re-deriving the queue — not a reason to stop dispatching every other
		// queue.
		s.log.Error().Err(err).Str("queue", q.String()).Int64("phy", off).
			Int64("queueOffset", rec.QueueOffset).Msg("consume-queue unit rejected: a bug, or damage to the record's queue fields")
	case err != nil:
		return fmt.Errorf("store: dispatch %s at %d: %w", q, off, err)
	case s.opts.Notify != nil && s.started.Load():
		s.opts.Notify(q.Topic(), q.QueueID(), q.MaxOffset(), tags)
	}
	return nil
}

// stalling reports whether any queue or the index is stalled.
func (d *dispatcher) stalling() bool { return len(d.stalled) > 0 || d.indexStall >= 0 }

// queueStalled reports whether the record's queue is stalled. It costs nothing while no
// queue is.
func (d *dispatcher) queueStalled(rec *message.Record) bool {
	if len(d.stalled) == 0 {
		return false
	}
	_, ok := d.stalled[stallKey{string(rec.Topic), rec.QueueID}]
	return ok
}

// stallQueue leaves the record's queue behind at off after a failed write.
func (s *Store) stallQueue(d *dispatcher, rec *message.Record, off int64, err error) {
	if d.stalled == nil {
		d.stalled = make(map[stallKey]int64)
	}
	d.stalled[stallKey{string(rec.Topic), rec.QueueID}] = off
	s.noteStall(err)
	s.log.Error().Err(err).Str("topic", string(rec.Topic)).Int32("queueId", rec.QueueID).Int64("at", off).
		Msg("consume queue stalled: its new messages stay invisible until a retry succeeds; other queues go on")
	s.publishStallFloor(d)
}

// stallIndex leaves the index behind at off after a failed write.
func (s *Store) stallIndex(d *dispatcher, off int64, err error) {
	d.indexStall = off
	s.noteStall(err)
	s.log.Error().Err(err).Int64("at", off).Msg("index stalled: new keys are not findable until a retry succeeds; queues go on")
	s.publishStallFloor(d)
}

// noteStall tells the disk guard about a full disk and schedules the next retry.
func (s *Store) noteStall(err error) {
	if errors.Is(err, syscall.ENOSPC) {
		s.guard.markFull()
	}
	if d := &s.disp; d.nextRetry.Before(s.now()) {
		d.nextRetry = s.now().Add(stallRetry)
	}
}

// publishStallFloor records the lowest stalled offset for checkpoints: derived files are
// complete only below it.
func (s *Store) publishStallFloor(d *dispatcher) {
	floor := int64(math.MaxInt64)
	for _, off := range d.stalled {
		floor = min(floor, off)
	}
	if d.indexStall >= 0 {
		floor = min(floor, d.indexStall)
	}
	s.stallFloor.Store(floor)
}

// retryStalled re-reads the log from the lowest stalled offset up to the dispatched
// offset and writes what the stalled queues and index are missing. A queue that fails
// again stays stalled at the record that failed; one that catches up rejoins normal
// dispatch.
func (s *Store) retryStalled(d *dispatcher) {
	from, upTo := s.stallFloor.Load(), s.dispatched.Load()
	failed := make(map[stallKey]bool)
	indexFailed := false
	it := s.cl.NewIterator(from)
	defer it.Close()
	for it.Next() && it.Offset() < upTo {
		rec, off := it.Record(), it.Offset()
		if s.deleted(rec.Topic, off) {
			continue
		}
		if len(d.stalled) > 0 && queued(rec) {
			k := stallKey{string(rec.Topic), rec.QueueID}
			if at, ok := d.stalled[k]; ok && off >= at && !failed[k] {
				if err := s.dispatchUnit(d, rec, off); err != nil {
					failed[k], d.stalled[k] = true, off
					s.noteStall(err)
				}
			}
		}
		if d.indexStall >= 0 && off >= d.indexStall && !indexFailed && indexed(rec) {
			if err := s.indexRecord(d, rec, off); err != nil {
				indexFailed, d.indexStall = true, off
				s.noteStall(err)
			}
		}
	}
	if err := it.Err(); err != nil {
		s.log.Error().Err(err).Int64("from", from).Msg("retrying stalled queues: reading the log failed")
		d.nextRetry = s.now().Add(stallRetry)
		return
	}
	for k := range d.stalled {
		if !failed[k] {
			delete(d.stalled, k)
			s.log.Info().Str("topic", k.topic).Int32("queueId", k.queueID).Msg("consume queue caught up after a stall")
		}
	}
	if d.indexStall >= 0 && !indexFailed {
		d.indexStall = -1
		s.log.Info().Msg("index caught up after a stall")
	}
	s.publishStallFloor(d)
	d.nextRetry = s.now().Add(stallRetry)
}

// dispatchQueue finds (or creates) the consume queue of a record through the cache.
func (s *Store) dispatchQueue(d *dispatcher, topic []byte, queueID int32) (*consumequeue.Queue, error) {
	if q := d.queues[string(topic)][queueID]; q != nil {
		return q, nil
	}
	name := string(topic)
	q, err := s.cqs.Queue(name, queueID, true)
	if err != nil {
		return nil, fmt.Errorf("store: consume queue %s/%d: %w", name, queueID, err)
	}
	m := d.queues[name]
	if m == nil {
		m = make(map[int32]*consumequeue.Queue)
		d.queues[name] = m
	}
	m[queueID] = q
	return q, nil
}

// tagsCode is the consume-queue tags code of a record: Options.TagsCode's, or the Java
// hash of its TAGS.
func (s *Store) tagsCode(rec *message.Record) int64 {
	if s.opts.TagsCode != nil {
		if code, ok := s.opts.TagsCode(rec); ok {
			return code
		}
	}
	if tags, ok := message.LookupProperty(rec.Properties, message.PropertyTags); ok && len(tags) > 0 {
		return message.TagsHashBytes(tags)
	}
	return 0
}

// indexRecord indexes a record's KEYS words and UNIQ_KEY as "topic#key".
func (s *Store) indexRecord(d *dispatcher, rec *message.Record, off int64) error {
	put := func(key []byte) error {
		if len(key) == 0 {
			return nil
		}
		d.key = append(append(append(d.key[:0], rec.Topic...), '#'), key...)
		if err := s.idx.PutHash(index.KeyHashBytes(d.key), off, rec.StoreTimestamp); err != nil {
			return fmt.Errorf("store: index %q at %d: %w", d.key, off, err)
		}
		return nil
	}
	if uniq, ok := message.LookupProperty(rec.Properties, message.PropertyUniqKey); ok {
		if err := put(uniq); err != nil {
			return err
		}
	}
	if keys, ok := message.LookupProperty(rec.Properties, message.PropertyKeys); ok {
		for k := range message.KeyWords(keys) {
			if err := put(k); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkpointLoop flushes consume queues and the index and writes the checkpoint every
// CheckpointInterval.
func (s *Store) checkpointLoop() {
	s.every(s.opts.CheckpointInterval, func() {
		if err := s.writeCheckpoint(); err != nil {
			s.log.Error().Err(err).Msg("checkpoint failed")
		}
	})
}

// every runs fn every interval until Shutdown.
func (s *Store) every(interval time.Duration, fn func()) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			fn()
		}
	}
}

// writeCheckpoint makes consume queues and the index durable up to the dispatched offset
// sampled first, then records that offset with the commit log's flushed offset.
func (s *Store) writeCheckpoint() error {
	s.cpMu.Lock()
	defer s.cpMu.Unlock()
	// Read dispatched before the stall floor: a stall recorded in between is at or after
	// the dispatched offset read, so the minimum is never past a missing unit.
	dispatched := s.dispatched.Load()
	dispatched = min(dispatched, s.stallFloor.Load())
	flushed := s.cl.FlushedOffset()
	flushedTS := s.cl.FlushedStoreTimestamp()
	if err := s.cqs.Flush(); err != nil {
		return fmt.Errorf("store: flush consume queues: %w", err)
	}
	if s.idx != nil {
		if err := s.idx.Flush(); err != nil {
			return fmt.Errorf("store: flush index: %w", err)
		}
	}
	// At shutdown the table records every queue's final length, so the next start can
	// tell a queue that lost files; otherwise only when queues came or went.
	if err := s.writeQueueTable(s.closed.Load()); err != nil {
		return err
	}
	cp := checkpoint{
		PhysicMsgTimestamp: flushedTS,
		LogicsMsgTimestamp: flushedTS,
		IndexMsgTimestamp:  flushedTS,
		Valid:              true,
		FlushedOffset:      flushed,
		DispatchedOffset:   dispatched,
	}
	if err := s.opts.FS.WriteFileAtomic(s.opts.checkpointPath(), encodeCheckpoint(cp)); err != nil {
		return fmt.Errorf("store: write checkpoint: %w", err)
	}
	return nil
}
