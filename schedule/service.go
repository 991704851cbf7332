package schedule

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/store"
)

// Timing of the delivery loops.
const (
	// maxSleep caps every wait, so a stepped clock or a lost wake-up costs at most this.
	maxSleep = time.Second
	// retryWait is the pause after a failed read or put before the same message is
	// retried.
	retryWait = 100 * time.Millisecond
	// batchMsgs and batchBytes bound one read of a schedule queue.
	batchMsgs  = 32
	batchBytes = 1 << 20
)

// Service delivers delayed messages: one goroutine per delay level, one for the timer
// queue and one that persists progress. See the package documentation for guarantees.
type Service struct {
	opts   Options
	store  Store
	log    zerolog.Logger
	delays []int64 // ms per level

	// scheduleTopic and timerTopic are read-only after New; Rewrite points records at
	// them.
	scheduleTopic []byte
	timerTopic    []byte

	levels  []*levelState
	timer   *timerState
	cancels cancelState // cancelled ids (cancel.go)

	stop chan struct{} // closed by Shutdown
	wg   sync.WaitGroup

	// maxPhy is the largest commit-log end offset of a delivered message.
	maxPhy    atomic.Int64
	delivered atomic.Uint64
	dropped   atomic.Uint64

	persistMu struct {
		sync.Mutex
		lastDelay []byte // last written delayOffset.json content
		lastTimer []byte // last written timerProgress.json content
	}

	mu struct {
		sync.Mutex
		started bool
		closed  bool
		err     error // result of the first Shutdown
	}
}

// Stats are counters for monitoring.
type Stats struct {
	// Delivered counts messages put to their real topic since New.
	Delivered uint64
	// Dropped counts parked messages discarded (undecodable, no real topic, real topic is
	// the transaction half topic, or refused by the store as illegal).
	Dropped uint64
	// TimerPending is the number of timer messages loaded and not yet delivered.
	TimerPending int64
	// LevelOffsets are the delivery cursors (consume-queue offsets) of levels 1..n.
	LevelOffsets []int64
	// TimerWatermark is the timer-queue offset below which everything is delivered.
	TimerWatermark int64
	// Cancelled counts parked messages skipped since New because they were cancelled.
	Cancelled uint64
}

// New creates the service and loads its progress from Dir/config. The store must already
// be open. It fails if a progress file exists but cannot be decoded: starting over would
// redeliver every parked message (RocketMQ #6881), so an operator has to decide.
func New(opts Options) (*Service, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	s := &Service{
		opts:          opts,
		store:         opts.Store,
		log:           opts.Logger.With().Str("component", "schedule").Logger(),
		delays:        make([]int64, len(opts.Levels)),
		scheduleTopic: []byte(protocol.ScheduleTopic),
		timerTopic:    []byte(protocol.TimerTopic),
		stop:          make(chan struct{}),
	}
	s.scheduleTopic = s.scheduleTopic[:len(s.scheduleTopic):len(s.scheduleTopic)]
	s.timerTopic = s.timerTopic[:len(s.timerTopic):len(s.timerTopic)]
	for i, d := range opts.Levels {
		s.delays[i] = d.Milliseconds()
		s.levels = append(s.levels, &levelState{level: i + 1, delayMs: s.delays[i], wake: make(chan struct{}, 1)})
	}
	s.timer = &timerState{wake: make(chan struct{}, 1)}
	if err := opts.FS.MkdirAll(filepath.Join(opts.Dir, configDir)); err != nil {
		return nil, fmt.Errorf("schedule: create config dir: %w", err)
	}
	if err := s.loadLevelProgress(); err != nil {
		return nil, err
	}
	if err := s.loadTimerProgress(); err != nil {
		return nil, err
	}
	if err := s.loadCancels(); err != nil {
		return nil, err
	}
	return s, nil
}

// Start launches the delivery loops and the progress flusher. It does nothing after the
// first call or after Shutdown.
func (s *Service) Start() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.started || s.mu.closed {
		return
	}
	s.mu.started = true
	for _, l := range s.levels {
		s.spawn(func() { s.runLevel(l) })
	}
	s.spawn(s.runTimer)
	s.spawn(s.runFlusher)
}

// spawn runs f on a goroutine that Shutdown waits for.
func (s *Service) spawn(f func()) {
	s.wg.Go(f)
}

// Shutdown stops the loops, waits for them (or ctx) and persists progress one last time.
// It returns every error: ctx expiring first, and persistence failures. Shut the service
// down before the store. Later calls return the first call's result.
func (s *Service) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	if s.mu.closed {
		err := s.mu.err
		s.mu.Unlock()
		return err
	}
	s.mu.closed = true
	close(s.stop)
	s.mu.Unlock()

	var errs []error
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		errs = append(errs, fmt.Errorf("schedule: waiting for delivery loops: %w", ctx.Err()))
	}
	if err := s.persist(ctx); err != nil {
		errs = append(errs, err)
	}
	err := errors.Join(errs...)
	s.mu.Lock()
	s.mu.err = err
	s.mu.Unlock()
	return err
}

// Notify tells the service that a consume queue grew to maxOffset; the broker calls it
// from the store's Options.Notify hook. Other topics are ignored. It never blocks.
func (s *Service) Notify(topic string, queueID int32, maxOffset int64) {
	switch topic {
	case protocol.TimerTopic:
		if queueID == 0 {
			kick(s.timer.wake)
		}
	case protocol.ScheduleTopic:
		if queueID >= 0 && int(queueID) < len(s.levels) {
			if l := s.levels[queueID]; l.idle.CompareAndSwap(true, false) {
				kick(l.wake)
			}
		}
	}
}

// Wake makes every delivery loop re-check its queue now, for example after the clock was
// stepped. Without it a loop notices a stepped clock within one second.
func (s *Service) Wake() {
	for _, l := range s.levels {
		kick(l.wake)
	}
	kick(s.timer.wake)
}

// Stats returns the current counters.
func (s *Service) Stats() Stats {
	st := Stats{
		Delivered:    s.delivered.Load(),
		Dropped:      s.dropped.Load(),
		Cancelled:    s.cancels.skipped.Load(),
		TimerPending: s.timer.pending.Load(),
		LevelOffsets: make([]int64, len(s.levels)),
	}
	for i, l := range s.levels {
		st.LevelOffsets[i] = l.cursor.Load()
	}
	s.timer.mu.Lock()
	st.TimerWatermark = s.timer.mu.watermark
	s.timer.mu.Unlock()
	return st
}

// kick wakes the loop owning ch without blocking.
func kick(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// sleep waits for d (capped at maxSleep), a wake-up or Shutdown, and reports whether the
// loop should go on.
func (s *Service) sleep(t *time.Timer, wake <-chan struct{}, d time.Duration) bool {
	if d <= 0 {
		select {
		case <-s.stop:
			return false
		default:
			return true
		}
	}
	t.Reset(min(d, maxSleep))
	select {
	case <-s.stop:
		t.Stop()
		return false
	case <-wake:
		t.Stop()
		return true
	case <-t.C:
		return true
	}
}

// errDrop marks a parked message that is discarded rather than retried.
var errDrop = errors.New("schedule: message dropped")

// deliverer turns parked records into real messages; each loop owns one.
type deliverer struct {
	s     *Service
	props []byte
	// claimed is the id of the message being delivered (hasClaim), released by the
	// loop once its progress covers the message (cancel.go).
	claimed  string
	hasClaim bool
}

// dueOf is the delivery time of a parked record, from the record itself: store time plus
// the level delay, or TIMER_OUT_MS. It guards against TagsCode not being installed.
func (d *deliverer) dueOf(rec *message.Record) int64 {
	code, _ := tagsCode(d.s.delays, rec)
	return code
}

// deliver puts the parked record b to its real topic. It returns notBefore > 0 when the
// record itself says it is not due at nowMs (the consume-queue code was wrong), errDrop
// (wrapped) when it was discarded, and another error when the put should be retried.
// guardMs is how far in the future a delivery time may lie before it is blamed on a
// clock step and treated as due.
func (d *deliverer) deliver(b []byte, nowMs, guardMs int64) (notBefore int64, err error) {
	s := d.s
	rec, _, err := message.DecodeRecord(b)
	if err != nil {
		return 0, s.drop(fmt.Errorf("decode parked record: %w", err), nil)
	}
	if due := d.dueOf(&rec); due > nowMs && due <= nowMs+guardMs {
		return due, nil
	}
	if err := d.claimFor(&rec); err != nil {
		return 0, err
	}
	topic, ok := rec.Property(message.PropertyRealTopic)
	if !ok || len(topic) == 0 {
		return 0, s.drop(errors.New("no REAL_TOPIC property"), &rec)
	}
	if string(topic) == protocol.TransHalfTopic {
		return 0, s.drop(errors.New("real topic is the transaction half topic"), &rec)
	}
	qv, _ := rec.Property(message.PropertyRealQueueID)
	qid, ok := parseInt(qv)
	if !ok || qid < 0 || qid > 1<<30 {
		return 0, s.drop(fmt.Errorf("bad REAL_QID %q", qv), &rec)
	}
	d.props = appendPropsWithout(d.props[:0], rec.Properties, dropDelay|dropTimerOut|dropTimerIn)
	out := message.Record{
		Topic:            topic,
		QueueID:          int32(qid),
		Flag:             rec.Flag,
		Body:             rec.Body,
		SysFlag:          rec.SysFlag,
		BornTimestamp:    rec.BornTimestamp,
		BornHost:         rec.BornHost,
		ReconsumeTimes:   rec.ReconsumeTimes,
		PreparedTxOffset: rec.PreparedTxOffset,
		Properties:       d.props,
	}
	res, err := s.store.PutMessage(&out, false)
	if errors.Is(err, store.ErrMessageIllegal) {
		return 0, s.drop(fmt.Errorf("store refused it: %w", err), &rec)
	}
	if err != nil {
		return 0, fmt.Errorf("schedule: put to %s/%d: %w", topic, qid, err)
	}
	for end := res.NextOffset(); ; {
		cur := s.maxPhy.Load()
		if end <= cur || s.maxPhy.CompareAndSwap(cur, end) {
			break
		}
	}
	s.delivered.Add(1)
	return 0, nil
}

// drop logs and counts a discarded parked message and returns errDrop.
func (s *Service) drop(why error, rec *message.Record) error {
	s.dropped.Add(1)
	ev := s.log.Error().Err(why)
	if rec != nil {
		ev = ev.Str("topic", string(rec.Topic)).Int32("queue", rec.QueueID).
			Int64("queueOffset", rec.QueueOffset).Int64("phy", rec.PhysicalOffset)
	}
	ev.Msg("dropping parked message")
	return errDrop
}
