package store

import (
	"context"
	"errors"
	"fmt"
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
}

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
	limit := s.dispatchLimit()
	from := s.dispatched.Load()
	if from >= limit {
		return nil
	}
	if d.it == nil || d.it.Pos() != from {
		if d.it != nil {
			d.it.Close()
		}
		d.it = s.cl.NewIterator(from)
	}
	if g := s.topicGen.Load(); d.queues == nil || d.gen != g {
		d.queues, d.gen = make(map[string]map[int32]*consumequeue.Queue), g
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

// dispatchRecord adds one record to its consume queue and the index.
func (s *Store) dispatchRecord(d *dispatcher, rec *message.Record, off int64) error {
	tt := message.TransactionType(rec.SysFlag)
	if s.deleted(rec.Topic, off) {
		return nil
	}
	if off >= d.queuesFrom && (tt == message.TransactionNotType || tt == message.TransactionCommitType) {
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
		if err != nil {
			if errors.Is(err, consumequeue.ErrGap) || errors.Is(err, consumequeue.ErrMismatch) {
				// A queue offset the log assigned does not fit the queue: a bug, not a
				// reason to stop dispatching every other queue.
				s.log.Error().Err(err).Str("queue", q.String()).Int64("phy", off).
					Int64("queueOffset", rec.QueueOffset).Msg("[BUG] consume-queue unit rejected")
			} else {
				return fmt.Errorf("store: dispatch %s at %d: %w", q, off, err)
			}
		} else if s.opts.Notify != nil && s.started.Load() {
			s.opts.Notify(q.Topic(), q.QueueID(), q.MaxOffset(), tags)
		}
	}
	if s.idx != nil && off >= d.indexFrom && tt != message.TransactionRollbackType {
		if err := s.indexRecord(d, rec, off); err != nil {
			return err
		}
	}
	return nil
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
	dispatched := s.dispatched.Load()
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
