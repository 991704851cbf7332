package schedule

import (
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/store"
)

// Cancelling a parked message
//
// A cancellation is a record in protocol.ScheduleCancelTopic (queue 0) whose body is the
// message id (UNIQ_KEY). Because it is in the commit log it is replicated like any
// message, survives restarts and is on a promoted slave. New reads the whole topic into
// the in-memory set of cancelled ids; Cancel adds to it after storing the record. Before
// a delivery loop puts a due message it claims the message's id: a cancelled id is not
// claimed and the message is skipped (counted in Stats.Cancelled, logged) as if it had
// been delivered, so the cursors and the timer progress move past it.
//
// Cancel and the delivery loops agree through one mutex: Cancel refuses an id being
// delivered (claimed) or below its queue's delivery progress (level cursor, timer
// progress), and a loop never claims an id Cancel recorded. The record is stored while
// the mutex is held, so a cancellation is reported only once it is in the commit log.
//
// Limits: the set holds every id in the cancel topic (about 50 bytes each), until the
// commit log's cleanup deletes the records; a cancellation stored after a crash-lost
// delivery (the delivery was put but the progress was not persisted) cannot stop the
// redelivery recovery does.

// errCancelled marks a parked message skipped because it was cancelled; it is an errDrop
// so the loops move past it.
var errCancelled = fmt.Errorf("%w: cancelled", errDrop)

// CancelOutcome is what Cancel did.
type CancelOutcome int

// Outcomes of Cancel.
const (
	// Cancelled: the message will not be delivered.
	Cancelled CancelOutcome = iota
	// AlreadyCancelled: an earlier Cancel (or a cancel record) named it.
	AlreadyCancelled
	// AlreadyDelivered: it was put to its topic already, or is being put now.
	AlreadyDelivered
)

// ErrNotParked means Cancel was given a message that is not in a delay-level or timer
// queue.
var ErrNotParked = errors.New("schedule: not a parked message")

// Parked locates a parked message: its id and where it waits.
type Parked struct {
	// ID is the message's UNIQ_KEY.
	ID string
	// Topic and QueueID are the parked record's (protocol.ScheduleTopic and the level's
	// queue, or protocol.TimerTopic queue 0); QueueOffset its offset there.
	Topic       string
	QueueID     int32
	QueueOffset int64
}

// cancelState is the set of cancelled ids and the ids the loops are delivering.
type cancelState struct {
	mu struct {
		sync.Mutex
		ids      map[string]struct{}
		inflight map[string]int // claims per id (a message sent twice may be parked twice)
	}
	skipped atomic.Uint64
}

// Cancel cancels the parked message p unless it was delivered. record stores the
// cancellation (a record in protocol.ScheduleCancelTopic); it runs under the lock that
// the delivery loops take to claim a message, so no delivery slips between the check
// and the record. A record error is returned and nothing is cancelled.
func (s *Service) Cancel(p Parked, record func() error) (CancelOutcome, error) {
	c := &s.cancels
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.mu.ids[p.ID]; ok {
		return AlreadyCancelled, nil
	}
	delivered, err := s.deliveredLocked(p)
	if err != nil {
		return 0, err
	}
	if delivered || c.mu.inflight[p.ID] > 0 {
		return AlreadyDelivered, nil
	}
	if err := record(); err != nil {
		return 0, err
	}
	c.mu.ids[p.ID] = struct{}{}
	return Cancelled, nil
}

// deliveredLocked reports whether the loops have moved past p.
func (s *Service) deliveredLocked(p Parked) (bool, error) {
	switch {
	case p.Topic == protocol.ScheduleTopic && p.QueueID >= 0 && int(p.QueueID) < len(s.levels):
		return p.QueueOffset < s.levels[p.QueueID].cursor.Load(), nil
	case p.Topic == protocol.TimerTopic && p.QueueID == 0:
		ts := s.timer
		ts.mu.Lock()
		defer ts.mu.Unlock()
		return ts.isDone(p.QueueOffset), nil
	}
	return false, fmt.Errorf("%w: %s/%d", ErrNotParked, p.Topic, p.QueueID)
}

// claim marks id as being delivered; false when it is cancelled.
func (c *cancelState) claim(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.mu.ids[id]; ok {
		return false
	}
	c.mu.inflight[id]++
	return true
}

// release ends a claim, after the loop recorded its progress.
func (c *cancelState) release(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.inflight[id]--; c.mu.inflight[id] <= 0 {
		delete(c.mu.inflight, id)
	}
}

// claimFor claims rec's id for d, or reports (and counts) a cancelled message with
// errCancelled. A record without an id cannot be cancelled.
func (d *deliverer) claimFor(rec *message.Record) error {
	id, ok := rec.Property(message.PropertyUniqKey)
	if !ok || len(id) == 0 {
		return nil
	}
	s := d.s
	if !s.cancels.claim(string(id)) {
		s.cancels.skipped.Add(1)
		s.log.Info().Str("msgId", string(id)).Int64("queueOffset", rec.QueueOffset).
			Str("topic", string(rec.Topic)).Int32("queue", rec.QueueID).
			Msg("cancelled scheduled message skipped")
		return errCancelled
	}
	d.claimed, d.hasClaim = string(id), true
	return nil
}

// release ends d's claim, if any: call it once the loop's progress covers the message.
func (d *deliverer) release() {
	if d.hasClaim {
		d.s.cancels.release(d.claimed)
		d.claimed, d.hasClaim = "", false
	}
}

// loadCancels reads every cancellation in protocol.ScheduleCancelTopic.
func (s *Service) loadCancels() error {
	c := &s.cancels
	c.mu.ids = map[string]struct{}{}
	c.mu.inflight = map[string]int{}
	const topic = protocol.ScheduleCancelTopic
	off := s.store.MinOffset(topic, 0)
	for off < s.store.MaxOffset(topic, 0) {
		res, err := s.store.GetMessages(topic, 0, off, batchMsgs*8, batchBytes, nil)
		if err != nil {
			return fmt.Errorf("schedule: read cancellations: %w", err)
		}
		if res.Status == store.OffsetTooSmall {
			off = res.NextBeginOffset
			res.Release()
			continue
		}
		if res.Status != store.Found && res.Status != store.NoMatchedMessage {
			res.Release()
			break
		}
		for _, b := range res.Messages {
			rec, _, err := message.DecodeRecord(b)
			if err != nil {
				s.log.Error().Err(err).Msg("undecodable cancellation record ignored")
				continue
			}
			c.mu.ids[string(rec.Body)] = struct{}{}
		}
		next := res.NextBeginOffset
		res.Release()
		if next <= off {
			break
		}
		off = next
	}
	return nil
}

// CancelRecord returns the record that stores the cancellation of the message with id:
// queue 0 of protocol.ScheduleCancelTopic, the id as body and as KEYS (so ferryctl
// message queries find it), born at now on host.
func CancelRecord(id string, now time.Time, host netip.AddrPort) (message.Record, error) {
	props, err := message.EncodeProperties(map[string]string{message.PropertyKeys: id})
	if err != nil {
		return message.Record{}, fmt.Errorf("schedule: cancel record: %w", err)
	}
	return message.Record{Topic: []byte(protocol.ScheduleCancelTopic), Body: []byte(id), Properties: props,
		BornTimestamp: now.UnixMilli(), BornHost: host}, nil
}
