package schedule

import (
	"errors"
	"sync/atomic"
	"time"

	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/store"
)

// levelState is one delay level: queue level−1 of the schedule topic, delivered in queue
// order by one goroutine. Every message of a level waits the same delay and store
// timestamps never decrease, so the queue is in delivery-time order and one cursor
// suffices.
type levelState struct {
	level   int   // 1-based
	delayMs int64 // the level's delay
	// cursor is the next queue offset to deliver; only the level's loop writes it.
	cursor atomic.Int64
	// idle is set while the loop has caught up with the queue, so Notify wakes it only
	// then: a message arriving behind a waiting one is never due earlier.
	idle atomic.Bool
	wake chan struct{}
}

// runLevel is the goroutine of one level.
func (s *Service) runLevel(l *levelState) {
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	d := &deliverer{s: s}
	for {
		if !s.sleep(t, l.wake, s.deliverLevel(l, d)) {
			return
		}
	}
}

// deliverLevel delivers every due message of the level and returns how long to wait
// before looking again.
func (s *Service) deliverLevel(l *levelState, d *deliverer) time.Duration {
	qid := int32(l.level - 1)
	l.idle.Store(false)
	for {
		select {
		case <-s.stop:
			return 0
		default:
		}
		cursor := l.cursor.Load()
		now := s.opts.Clock()
		nowMs := now.UnixMilli()
		var (
			scanned int64
			notDue  int64 = -1 // offset of the first unit not yet due
			dueAt   int64      // its delivery time
		)
		filter := func(code int64) bool {
			off := cursor + scanned
			scanned++
			if notDue >= 0 {
				return false
			}
			if code > nowMs+l.delayMs {
				code = nowMs // clock-jump guard (RocketMQ correctDeliverTimestamp)
			}
			if code > nowMs {
				notDue, dueAt = off, code
				return false
			}
			return true
		}
		res, err := s.store.GetMessages(protocol.ScheduleTopic, qid, cursor, batchMsgs, batchBytes, filter)
		if err != nil {
			s.log.Error().Err(err).Int("delayLevel", l.level).Int64("offset", cursor).Msg("read schedule queue")
			return retryWait
		}
		switch res.Status {
		case store.Found, store.NoMatchedMessage:
			wait, ok := s.deliverUnits(l, d, res, nowMs)
			next := res.NextBeginOffset
			if notDue >= 0 {
				next = notDue
			}
			res.Release()
			if !ok {
				return wait
			}
			l.cursor.Store(next)
			if notDue >= 0 {
				return time.UnixMilli(dueAt).Sub(s.opts.Clock())
			}
			if next == cursor {
				return retryWait // nothing readable yet; never spin
			}
		case store.OffsetTooSmall, store.OffsetOverflowBadly:
			s.log.Warn().Int("delayLevel", l.level).Int64("offset", cursor).
				Int64("corrected", res.NextBeginOffset).Str("status", res.Status.String()).
				Msg("schedule cursor out of the queue's range")
			l.cursor.Store(res.NextBeginOffset)
			res.Release()
		default: // caught up, or no queue yet
			res.Release()
			l.idle.Store(true)
			if s.store.MaxOffset(protocol.ScheduleTopic, qid) > cursor && l.idle.CompareAndSwap(true, false) {
				continue // arrived after the read, before idle was visible to Notify
			}
			return maxSleep
		}
	}
}

// deliverUnits delivers the due messages of res, advancing the cursor after each. When
// one cannot be delivered yet it returns false and the wait before retrying.
func (s *Service) deliverUnits(l *levelState, d *deliverer, res *store.GetResult, nowMs int64) (time.Duration, bool) {
	for i, b := range res.Messages {
		off := res.QueueOffsets[i]
		notBefore, err := d.deliver(b, nowMs, l.delayMs)
		switch {
		case notBefore > 0:
			l.cursor.Store(off)
			d.release()
			return time.UnixMilli(notBefore).Sub(s.opts.Clock()), false
		case err != nil && !errors.Is(err, errDrop):
			l.cursor.Store(off)
			d.release()
			s.log.Warn().Err(err).Int("delayLevel", l.level).Int64("offset", off).Msg("delivery failed, retrying")
			return retryWait, false
		}
		l.cursor.Store(off + 1)
		d.release() // after the cursor: Cancel sees the message as delivered from here
	}
	return 0, true
}
