package transaction

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/store"
)

// Service is the thin driver around the state machine: it stores half messages, applies
// END_TRANSACTION, and runs the check-back scan on one goroutine it owns.
//
// Locking: mu guards the machine and the run state. It is never held across a store write
// or a Checker call; store reads done under it are short. offMu serializes the commits
// that carry consumer offsets (and guards claims): it is held across their store writes,
// never together with mu.
type Service struct {
	opts Options
	log  zerolog.Logger
	path string // cursor file

	mu struct {
		sync.Mutex
		m       *machine // nil until Start
		started bool
		closed  bool
	}

	// replayed lists the half-message offsets of the multi-message commit intents read by
	// the replay at Start (reapplyOffsets); nil afterwards.
	replayed []int64

	offMu  sync.Mutex
	claims map[int64]offsetClaim // by origin: offsets of interrupted commits not yet applied (offsets.go)
	blind  map[int64]bool        // interrupted commits whose offsets cannot be read yet

	// Owned by the scan goroutine (and by Start / Shutdown before and after it runs).
	latest  cursors // what the machine last asked to persist
	behind  cursors // the pair seen one round ago: the next one written
	written cursors // what the file holds

	ctx    context.Context // cancelled by Shutdown; bounds checks
	cancel context.CancelFunc
	kick   chan chan struct{} // tests: run one round now
	stop   chan struct{}
	done   chan struct{}

	shutdownOnce sync.Once
	shutdownErr  error
}

// New validates opts and returns a service that is not yet started. Prepare may be called
// at once; End and the check-back scan need Start.
func New(opts Options) (*Service, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if err := opts.FS.MkdirAll(opts.Dir); err != nil {
		return nil, fmt.Errorf("transaction: create %s: %w", opts.Dir, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Service{
		opts:   opts,
		log:    opts.Logger.With().Str("component", "transaction").Logger(),
		path:   filepath.Join(opts.Dir, cursorFileName),
		ctx:    ctx,
		cancel: cancel,
		kick:   make(chan chan struct{}),
		stop:   make(chan struct{}),
		done:   make(chan struct{}),
	}, nil
}

// Start rebuilds the state from the store — every half message from the persisted half
// cursor and every op entry from the op cursor — verifies the commits a kill may have
// interrupted (see format.go, "Commit intents") and starts the scan goroutine. The store
// must be open. Start may be called once.
func (s *Service) Start() error {
	s.mu.Lock()
	acts, err := s.rebuildLocked()
	s.mu.Unlock()
	if err != nil {
		return err
	}
	// Verify before END_TRANSACTION and checks are let in (running is still false).
	s.execute(acts)
	s.reapplyOffsets()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.closed {
		return fmt.Errorf("%w: Shutdown during Start", ErrClosed)
	}
	m := s.mu.m
	s.log.Info().Int64("halfCursor", m.halfCursor).Int64("halfNext", m.halfNext).Int64("opCursor", m.opCursor).
		Int64("opNext", m.opNext).Int("pending", m.pending()).Msg("transaction state rebuilt")
	s.mu.started = true
	go s.run()
	return nil
}

// rebuildLocked builds the machine from the cursor file and the queues and returns its
// first actions (verifies and logs).
func (s *Service) rebuildLocked() ([]action, error) {
	if s.mu.closed || s.mu.started || s.mu.m != nil {
		return nil, fmt.Errorf("%w: Start called twice or after Shutdown", ErrClosed)
	}
	c := s.loadCursors()
	s.mu.m = newMachine(s.opts.machineConfig(), c)
	s.latest, s.behind, s.written = c, c, c
	s.recallLocked(c.op)
	// Replay: all half messages first, so every op entry finds the transactions it names.
	for _, topic := range []string{halfTopic, opTopic} {
		for more := true; more; {
			var err error
			if more, err = s.readQueueLocked(topic); err != nil {
				s.mu.m = nil // Start may be tried again
				return nil, err
			}
		}
	}
	s.mu.m.replayed()
	return s.mu.m.ready(), nil
}

// recallLocked feeds the machine the outcomes of up to RecentOutcomes op entries before
// the op cursor.
func (s *Service) recallLocked(opCursor int64) {
	from := max(s.opts.Store.MinOffset(opTopic, queueID), opCursor-int64(s.opts.RecentOutcomes))
	for from < opCursor {
		r, err := s.opts.Store.GetMessages(opTopic, queueID, from, min(s.opts.ReadBatch, int(opCursor-from)), 8<<20, nil)
		if err != nil {
			s.log.Warn().Err(err).Msg("reading recent op entries")
			return
		}
		for i, b := range r.Messages {
			if r.QueueOffsets[i] >= opCursor {
				break
			}
			if rec, _, err := message.DecodeRecord(b); err == nil {
				if e, err := decodeOpEntry(rec.Body, rec.Properties); err == nil {
					s.mu.m.recall(e)
				}
			}
		}
		next := r.NextBeginOffset
		r.Release()
		if next <= from {
			return
		}
		from = next
	}
}

// loadCursors reads the cursor file and clamps it into the queues' current ranges: below
// the minimum the records are deleted; above the maximum the store lost its tail (a crash
// in async-flush mode), and new records will reuse those offsets.
func (s *Service) loadCursors() cursors {
	st := s.opts.Store
	c := cursors{half: st.MinOffset(halfTopic, queueID), op: st.MinOffset(opTopic, queueID)}
	if ok, err := s.opts.FS.Exists(s.path); err != nil || ok {
		b, err := s.opts.FS.ReadFile(s.path)
		if err == nil {
			c, err = decodeCursors(b)
		}
		if err != nil {
			s.log.Error().Err(err).Msg("cannot read the transaction cursors; replaying the whole half and op queues")
			c = cursors{half: st.MinOffset(halfTopic, queueID), op: st.MinOffset(opTopic, queueID)}
		}
	}
	clamp := func(name, topic string, v int64) int64 {
		lo, hi := st.MinOffset(topic, queueID), st.MaxOffset(topic, queueID)
		if v < lo || v > hi {
			s.log.Warn().Str("cursor", name).Int64("was", v).Int64("min", lo).Int64("max", hi).
				Msg("transaction cursor outside its queue; clamped")
		}
		return min(max(v, lo), hi)
	}
	return cursors{half: clamp("half", halfTopic, c.half), op: clamp("op", opTopic, c.op)}
}

// run is the scan goroutine.
func (s *Service) run() {
	defer close(s.done)
	ticker := time.NewTicker(s.opts.CheckInterval)
	defer ticker.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-ticker.C:
			s.round()
		case ack := <-s.kick:
			s.round()
			close(ack)
		}
	}
}

// maxReadsPerRound bounds the queue reads of one round, so a large backlog cannot delay
// due checks for long.
const maxReadsPerRound = 64

// round reads what was appended to the half and op queues, advances time, executes the
// actions and persists the cursors.
func (s *Service) round() {
	for _, topic := range []string{halfTopic, opTopic} {
		for i := 0; i < maxReadsPerRound; i++ {
			s.mu.Lock()
			more, err := s.readQueueLocked(topic)
			s.mu.Unlock()
			if err != nil {
				s.log.Error().Err(err).Str("topic", topic).Msg("reading transaction queue")
			}
			if err != nil || !more {
				break
			}
		}
	}
	s.mu.Lock()
	s.mu.m.tick(s.opts.Clock().UnixMilli())
	acts := s.mu.m.ready()
	s.mu.Unlock()
	s.execute(acts)
	// Persist the cursors of the previous round, not this one's: the records that let the
	// cursors move (op entries, copies) have then had a round to be flushed.
	if s.behind != s.written {
		s.persist(s.behind)
	}
	s.behind = s.latest
}

// readQueueLocked reads one batch of the half or op queue from the machine's read
// position into the machine and reports whether there may be more.
func (s *Service) readQueueLocked(topic string) (bool, error) {
	m := s.mu.m
	from := m.halfNext
	if topic == opTopic {
		from = m.opNext
	}
	r, err := s.opts.Store.GetMessages(topic, queueID, from, s.opts.ReadBatch, 8<<20, nil)
	if err != nil {
		return false, fmt.Errorf("transaction: read %s at %d: %w", topic, from, err)
	}
	defer r.Release()
	skip := m.halfSkip
	if topic == opTopic {
		skip = m.opSkip
	}
	switch r.Status {
	case store.Found:
		for i, b := range r.Messages {
			s.ingestLocked(topic, r.QueueOffsets[i], b)
		}
		skip(r.NextBeginOffset)
		return true, nil
	case store.NoMatchedMessage, store.OffsetTooSmall:
		skip(r.NextBeginOffset)
		return r.NextBeginOffset > from, nil
	default:
		return false, nil
	}
}

// ingestLocked feeds one record read at offset of topic to the machine.
func (s *Service) ingestLocked(topic string, offset int64, b []byte) {
	m := s.mu.m
	rec, _, err := message.DecodeRecord(b)
	if topic == opTopic {
		var e *opEntry
		if err == nil {
			if d, derr := decodeOpEntry(rec.Body, rec.Properties); derr == nil {
				e = &d
			}
		}
		if e != nil && e.intent != nil && e.intent.items > 0 && m.replaying {
			s.replayed = append(s.replayed, e.intent.phy)
		}
		m.opRead(offset, e)
		return
	}
	var h halfInfo
	if err == nil && rec.QueueOffset == offset {
		h = parseHalf(&rec)
	} else {
		h = halfInfo{offset: offset, origin: offset, bad: fmt.Sprintf("unreadable record: %v", err)}
	}
	m.halfRead(h)
}

// execute runs actions, and those their results lead to, until the machine has none.
func (s *Service) execute(acts []action) {
	for len(acts) > 0 {
		for _, a := range acts {
			s.do(a)
		}
		s.mu.Lock()
		acts = s.mu.m.ready()
		s.mu.Unlock()
	}
}

// report feeds an action's result to the machine.
func (s *Service) report(f func(m *machine)) {
	s.mu.Lock()
	f(s.mu.m)
	s.mu.Unlock()
}

// persist writes c to the cursor file.
func (s *Service) persist(c cursors) {
	if err := s.opts.FS.WriteFileAtomic(s.path, encodeCursors(c)); err != nil {
		s.log.Error().Err(err).Msg("persisting transaction cursors")
		return
	}
	s.written = c
}

// Shutdown stops the scan goroutine and persists the cursors. It is idempotent; the store
// should be shut down after it.
func (s *Service) Shutdown(ctx context.Context) error {
	s.shutdownOnce.Do(func() {
		s.mu.Lock()
		started := s.mu.started
		s.mu.closed = true
		s.mu.Unlock()
		s.cancel()
		if !started {
			return
		}
		close(s.stop)
		select {
		case <-s.done:
		case <-ctx.Done():
			s.shutdownErr = fmt.Errorf("transaction: shutdown: %w", ctx.Err())
			return
		}
		if s.latest != s.written {
			if err := s.opts.FS.WriteFileAtomic(s.path, encodeCursors(s.latest)); err != nil {
				s.shutdownErr = fmt.Errorf("transaction: persist cursors: %w", err)
			}
		}
	})
	return s.shutdownErr
}

// Stats returns a snapshot of the bookkeeping.
func (s *Service) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.m == nil {
		return Stats{}
	}
	return Stats{Pending: s.mu.m.pending(), HalfCursor: s.mu.m.halfCursor, OpCursor: s.mu.m.opCursor}
}

// scanNow runs one round on the scan goroutine and waits for it (tests).
func (s *Service) scanNow() {
	ack := make(chan struct{})
	select {
	case s.kick <- ack:
		<-ack
	case <-s.done:
	}
}

// running reports whether End may use the machine: started and not shut down.
func (s *Service) running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.started && !s.mu.closed
}

// put appends rec; a record that reached the log counts as written even if its flush
// failed or timed out (RocketMQ's "sent but" statuses), which is logged.
func (s *Service) put(rec *message.Record) (store.PutResult, error) {
	res, err := s.opts.Store.PutMessage(rec, false)
	if err != nil && res.Count > 0 {
		s.log.Warn().Err(err).Str("topic", string(rec.Topic)).Msg("transaction record written but not flushed")
		err = nil
	}
	if err != nil {
		return res, fmt.Errorf("transaction: put to %s: %w", rec.Topic, err)
	}
	return res, nil
}

// isGone reports whether a read error means the record is not there.
func isGone(err error) bool { return errors.Is(err, store.ErrNotFound) }
