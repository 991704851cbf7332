package schedule

import (
	"container/heap"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/store"
)

// timerState is the timer queue (protocol.TimerTopic queue 0). Its messages have
// arbitrary delivery times, so the loop keeps every loaded, undelivered one in a min-heap
// by delivery time and follows the queue's max offset for new ones.
//
// Progress is a watermark W (every offset below W is delivered) plus the delivered
// offsets at or above W as sorted, disjoint, non-adjacent half-open ranges. Only the
// timer loop changes them, under mu; the flusher reads them under mu. The loop reads them
// without the lock (no other goroutine writes).
type timerState struct {
	wake    chan struct{}
	pending atomic.Int64 // len(heap), for Stats

	// Owned by the timer loop.
	heap    timerHeap
	scanned int64 // next queue offset to load into the heap

	mu struct {
		sync.Mutex
		watermark int64
		done      []offsetRange
	}
}

// offsetRange is the half-open range of queue offsets [Start, End).
type offsetRange struct{ Start, End int64 }

// timerEntry is one pending timer message.
type timerEntry struct {
	due    int64 // delivery time, Unix ms (its consume-queue tags code)
	offset int64 // queue offset in the timer queue
}

// timerHeap orders entries by delivery time, then queue offset.
type timerHeap []timerEntry

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, j int) bool {
	return h[i].due < h[j].due || (h[i].due == h[j].due && h[i].offset < h[j].offset)
}
func (h timerHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }

// Push implements heap.Interface.
func (h *timerHeap) Push(x any) { *h = append(*h, x.(timerEntry)) }

// Pop implements heap.Interface.
func (h *timerHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// runTimer is the goroutine of the timer queue.
func (s *Service) runTimer() {
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	d := &deliverer{s: s}
	for {
		wait := retryWait
		if s.loadTimers() {
			wait = s.deliverTimers(d)
		}
		if !s.sleep(t, s.timer.wake, wait) {
			return
		}
	}
}

// loadTimers reads the units the queue gained since the last call into the heap, skipping
// offsets already delivered. It reports false after a read error.
func (s *Service) loadTimers() bool {
	ts := s.timer
	for {
		if ts.scanned >= s.store.MaxOffset(protocol.TimerTopic, 0) {
			return true
		}
		start, n := ts.scanned, int64(0)
		filter := func(code int64) bool {
			off := start + n
			n++
			if !ts.isDone(off) {
				heap.Push(&ts.heap, timerEntry{due: code, offset: off})
			}
			return false // units only: the loop reads a record when it is due
		}
		res, err := s.store.GetMessages(protocol.TimerTopic, 0, start, 1, 1, filter)
		if err != nil {
			s.log.Error().Err(err).Int64("offset", start).Msg("read timer queue")
			return false
		}
		status, next := res.Status, res.NextBeginOffset
		res.Release()
		ts.pending.Store(int64(len(ts.heap)))
		switch status {
		case store.Found, store.NoMatchedMessage:
			if next == start {
				return true // nothing readable yet; never spin
			}
			ts.scanned = next
		case store.OffsetTooSmall:
			s.log.Warn().Int64("offset", start).Int64("min", next).Msg("timer messages deleted before delivery")
			ts.scanned = next
			s.timerForget(next)
		default:
			return true
		}
	}
}

// deliverTimers delivers every due pending message and returns how long to wait.
func (s *Service) deliverTimers(d *deliverer) time.Duration {
	ts := s.timer
	defer func() { ts.pending.Store(int64(len(ts.heap))) }()
	now := s.opts.Clock()
	nowMs := now.UnixMilli()
	guardMs := s.opts.MaxTimerDelay.Milliseconds()
	for len(ts.heap) > 0 {
		select {
		case <-s.stop:
			return 0
		default:
		}
		top := ts.heap[0]
		due := top.due
		if due > nowMs+guardMs {
			due = nowMs // clock-jump guard
		}
		if due > nowMs {
			return time.UnixMilli(due).Sub(s.opts.Clock())
		}
		notBefore, err := s.deliverTimerAt(d, top.offset, nowMs, guardMs)
		switch {
		case notBefore > 0:
			d.release()
			ts.heap[0].due = notBefore // the unit's code was wrong; trust the record
			heap.Fix(&ts.heap, 0)
			continue
		case err != nil && !errors.Is(err, errDrop):
			d.release()
			s.log.Warn().Err(err).Int64("offset", top.offset).Msg("timer delivery failed, retrying")
			return retryWait
		}
		heap.Pop(&ts.heap)
		ts.markDone(top.offset)
		d.release() // after the progress: Cancel sees the message as delivered from here
	}
	return maxSleep
}

// deliverTimerAt reads the timer message at queue offset off and delivers it. A message
// that no longer exists (its commit-log segment was deleted) counts as dropped.
func (s *Service) deliverTimerAt(d *deliverer, off, nowMs, guardMs int64) (int64, error) {
	res, err := s.store.GetMessages(protocol.TimerTopic, 0, off, 1, batchBytes, nil)
	if err != nil {
		return 0, fmt.Errorf("schedule: read timer message %d: %w", off, err)
	}
	defer res.Release()
	if res.Status != store.Found || res.QueueOffsets[0] != off {
		s.dropped.Add(1)
		s.log.Error().Int64("offset", off).Str("status", res.Status.String()).
			Msg("timer message vanished before delivery")
		return 0, errDrop
	}
	return d.deliver(res.Messages[0], nowMs, guardMs)
}

// isDone reports whether the timer message at off was delivered. Only the timer loop
// calls it (and New before the loop starts).
func (ts *timerState) isDone(off int64) bool {
	if off < ts.mu.watermark {
		return true
	}
	r := ts.mu.done
	i := sort.Search(len(r), func(i int) bool { return r[i].End > off })
	return i < len(r) && r[i].Start <= off
}

// markDone records the delivery of the timer message at off and advances the watermark.
func (ts *timerState) markDone(off int64) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.mu.watermark, ts.mu.done = addOffset(ts.mu.watermark, ts.mu.done, off)
}

// timerForget moves the watermark up to lowest: offsets below it no longer exist.
func (s *Service) timerForget(lowest int64) {
	ts := s.timer
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.mu.watermark, ts.mu.done = raiseWatermark(ts.mu.watermark, ts.mu.done, lowest)
}

// addOffset adds off to the delivered set (w, done) and returns the normalised set: no
// range starts at or below the watermark.
func addOffset(w int64, done []offsetRange, off int64) (int64, []offsetRange) {
	if off < w {
		return w, done
	}
	i := sort.Search(len(done), func(i int) bool { return done[i].Start > off })
	switch {
	case i > 0 && done[i-1].End > off:
		return w, done // already there
	case i > 0 && done[i-1].End == off:
		done[i-1].End++
		if i < len(done) && done[i].Start == done[i-1].End {
			done[i-1].End = done[i].End
			done = append(done[:i], done[i+1:]...)
		}
	case i < len(done) && done[i].Start == off+1:
		done[i].Start = off
	default:
		done = append(done, offsetRange{})
		copy(done[i+1:], done[i:])
		done[i] = offsetRange{off, off + 1}
	}
	return raiseWatermark(w, done, w)
}

// raiseWatermark moves the watermark to at least lowest and then over every range that
// starts at or below it.
func raiseWatermark(w int64, done []offsetRange, lowest int64) (int64, []offsetRange) {
	w = max(w, lowest)
	n := 0
	for n < len(done) && done[n].Start <= w {
		w = max(w, done[n].End)
		n++
	}
	if n > 0 {
		done = append(done[:0], done[n:]...)
	}
	return w, done
}
