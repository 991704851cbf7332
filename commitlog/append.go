package commitlog

import (
	"bytes"
	"fmt"

	"github.com/ferrymq/ferry/message"
)

// Append appends one record, or a batch of records of one topic-queue, atomically: the
// whole batch lands contiguously in one segment (after a blank filler when it does not
// fit the current one) with consecutive queue offsets.
//
// Append fills in, in recs itself, the fields the log owns: PhysicalOffset, QueueOffset
// (from the topic-queue table; 0 for PREPARED and ROLLBACK records, which do not advance
// it), StoreTimestamp (assigned under the writer lock, never decreasing) and StoreHost
// (Options.StoreHost). Every other field is written as given; BODYCRC and TOTALSIZE are
// computed. Non-empty properties must end with the 0x02 separator and topics must not
// contain NUL bytes (both always hold for RocketMQ messages): recovery uses this to tell
// a torn record from a complete one. Records are encoded straight into the mapped
// segment; a single append allocates nothing in steady state.
//
// In FlushSync mode with wait=true, Append waits for the group-commit flusher (see
// Status for what each outcome promises); otherwise it returns once the records are
// written and readable, and wait=false in FlushSync mode just wakes the flusher.
//
// Errors: when err is nil, the records were appended. When err matches ErrFlushFailed,
// the records were appended too (res is filled, Status is FlushDiskFailed) but the sync
// or the write-out of the FlushSync stage failed — unless res.Count is 0: then an
// earlier failure stopped this append and nothing was appended. Any other error means
// nothing was appended: ErrBadBatch, ErrRecordTooLarge, ErrClosed, ErrNotRecovered, a
// failure to create the next segment (for a full disk it matches mmap.ErrNoSpace) or to
// make the high-water mark durable (highwater.go); a later Append retries.
func (l *Log) Append(recs []message.Record, wait bool) (AppendResult, error) {
	total, err := l.checkBatch(recs)
	if err != nil {
		return AppendResult{}, err
	}
	l.closing.RLock()
	defer l.closing.RUnlock()
	res, err := l.write(recs, total, wait)
	if err != nil {
		if res.Count > 0 { // appended, but could not be written out (ErrFlushFailed)
			return res, err
		}
		return AppendResult{}, err
	}
	end := res.NextOffset()
	switch {
	case l.opts.FlushMode == FlushAsync:
		res.Durable = l.flushed.Load() >= end
	case !wait:
		l.kickGroupCommit()
		res.Durable = l.flushed.Load() >= end
	default:
		res.Status, err = l.waitFlushed(end)
		res.Durable = res.Status == PutOK
	}
	return res, err
}

// checkBatch validates recs outside the lock, sets their StoreHost and returns their
// total encoded size.
func (l *Log) checkBatch(recs []message.Record) (int64, error) {
	if len(recs) == 0 {
		return 0, fmt.Errorf("%w: no records", ErrBadBatch)
	}
	limit := l.segSize - message.BlankHeaderSize
	var total int64
	for i := range recs {
		r := &recs[i]
		switch {
		case len(r.Topic) == 0:
			return 0, fmt.Errorf("%w: record %d: %w", ErrBadBatch, i, message.ErrTopicEmpty)
		case len(r.Topic) > message.MaxTopicLength:
			return 0, fmt.Errorf("%w: record %d: %w", ErrBadBatch, i, message.ErrTopicTooLong)
		case len(r.Properties) > message.MaxPropertiesLength:
			return 0, fmt.Errorf("%w: record %d: %w", ErrBadBatch, i, message.ErrPropertiesTooLong)
		case i > 0 && (r.QueueID != recs[0].QueueID || !bytes.Equal(r.Topic, recs[0].Topic)):
			return 0, fmt.Errorf("%w: record %d is for another topic-queue than record 0", ErrBadBatch, i)
		}
		if err := checkTail(r); err != nil { // recovery relies on it to detect torn records
			return 0, fmt.Errorf("%w: record %d: %w", ErrBadBatch, i, err)
		}
		r.StoreHost = l.opts.StoreHost
		n := int64(r.Size())
		if n > limit {
			return 0, fmt.Errorf("%w: record %d has %d bytes, a %d-byte segment holds at most %d",
				ErrRecordTooLarge, i, n, l.segSize, limit)
		}
		total += n
	}
	if total > limit {
		return 0, fmt.Errorf("%w: batch of %d records has %d bytes, a %d-byte segment holds at most %d",
			ErrRecordTooLarge, len(recs), total, l.segSize, limit)
	}
	return total, nil
}

// write appends the checked records under the writer lock: straight into the mapped
// segment, or into the stage (see stage.go) for FlushSync appenders. An error that comes
// with a filled result (Count > 0) matches ErrFlushFailed: the records were appended but
// could not be written out.
func (l *Log) write(recs []message.Record, total int64, wait bool) (AppendResult, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.closed.Load():
		return AppendResult{}, ErrClosed
	case !l.mu.recovered:
		return AppendResult{}, ErrNotRecovered
	case l.mu.pos != l.wrote.Load()+int64(len(l.mu.stage)): // see AppendReplica
		return AppendResult{}, ErrReplicaTail
	}
	now := l.opts.Clock()
	l.lockedAt.Store(now.UnixNano())
	defer l.lockedAt.Store(0)

	seg, err := l.segmentForLocked(total)
	if err != nil {
		return AppendResult{}, err
	}
	l.mu.appended = true
	ts := max(now.UnixMilli(), l.mu.lastTS)
	l.mu.lastTS = ts

	q := l.mu.queues[queueKey{string(recs[0].Topic), recs[0].QueueID}]
	var first int64
	if q != nil {
		first = q.next
	}
	next := first
	pos := l.mu.pos
	staged := l.useStage(total)
	if n := int64(len(l.mu.stage)); n > 0 && (!staged || n+total > stageLimit) {
		// Bytes go to the file in order, and the stage stays bounded.
		if err := l.drainLocked(); err != nil {
			return AppendResult{}, err
		}
	}
	var dst []byte
	if staged {
		dst = l.growStage(total)
	} else {
		dst = l.appendBytesLocked(seg, pos-seg.start, total)
	}
	off := 0
	for i := range recs {
		r := &recs[i]
		r.PhysicalOffset = pos + int64(off)
		r.QueueOffset = 0
		if message.IsConsumable(r.SysFlag) {
			r.QueueOffset = next
			next++
		}
		r.StoreTimestamp = ts
		n, err := r.EncodeTo(dst[off:])
		if err != nil { // impossible after checkBatch; never leave a valid-looking record behind
			clear(dst[:off])
			if staged {
				l.mu.stage = l.mu.stage[:len(l.mu.stage)-int(total)]
			}
			return AppendResult{}, fmt.Errorf("%w: record %d: %w", ErrBadBatch, i, err)
		}
		off += n
	}
	switch {
	case q != nil:
		q.next = next
	case next != first: // first consumable record of this queue: the only allocation
		l.mu.queues[queueKey{string(recs[0].Topic), recs[0].QueueID}] = &queueNext{next: next}
	}

	end := pos + total
	l.mu.pos = end
	seg.lastTS.Store(ts)
	res := AppendResult{
		PhysicalOffset: pos,
		Bytes:          int32(total),
		QueueOffset:    recs[0].QueueOffset,
		Count:          len(recs),
		StoreTimestamp: ts,
		Status:         PutOK,
	}
	if !staged {
		l.wrote.Store(end)
		l.lastTS.Store(ts) // after wrote: see flushAll
		return res, nil
	}
	if l.drainsAtOnce(wait) || len(l.mu.stage) >= stageLimit {
		if err := l.drainLocked(); err != nil {
			res.Status = FlushDiskFailed
			return res, err
		}
	}
	return res, nil
}

// segmentForLocked returns the segment the next need bytes go to, writing the blank
// filler and moving to the next segment when they do not fit the current one (the rule
// is need+8 > remaining, so a record never ends exactly at a segment end). Every byte it
// writes, and the need bytes after the position it returns with, are below the durable
// high-water mark first (coverLocked).
func (l *Log) segmentForLocked(need int64) (*segment, error) {
	if cur := l.mu.cur; cur != nil {
		remaining := cur.end - l.mu.pos
		if need+message.BlankHeaderSize <= remaining {
			if err := l.coverLocked(l.mu.pos + need); err != nil {
				return nil, err
			}
			l.writeModeLocked(cur, true)
			return cur, nil
		}
		l.writeModeLocked(cur, false)
		if err := l.drainLocked(); err != nil { // the stage belongs before the filler
			return nil, err
		}
		if remaining > 0 {
			if remaining >= message.BlankHeaderSize {
				if err := l.coverLocked(l.mu.pos + message.BlankHeaderSize); err != nil {
					return nil, err
				}
				if _, err := message.EncodeBlank(cur.data[l.mu.pos-cur.start:], int(remaining)); err != nil {
					return nil, fmt.Errorf("commitlog: write filler: %w", err)
				}
			}
			// The filler is part of the log even if the next segment cannot be created.
			l.mu.pos = cur.end
			l.wrote.Store(cur.end)
		}
	}
	seg, err := l.obtainSegment(l.mu.pos)
	if err != nil {
		return nil, err
	}
	l.mu.cur = seg
	if err := l.coverLocked(l.mu.pos + need); err != nil {
		return nil, err
	}
	l.writeModeLocked(seg, true)
	return seg, nil
}

// writeModeLocked switches a segment's mapping between append and read-back advice (see
// mmap.Mapped.WriteMode) when it changes role, and closes its write window when it stops
// being appended to. The caller holds mu.
func (l *Log) writeModeLocked(seg *segment, on bool) {
	if !on {
		l.closeWindowLocked(seg)
	}
	if seg.writeMode == on {
		return
	}
	seg.writeMode = on
	if err := seg.m.WriteMode(on); err != nil {
		l.log.Debug().Err(err).Str("segment", seg.name).Msg("mapping advice not taken")
	}
}

// windowSize is the size of the write windows appends are encoded into.
const windowSize = 4 << 20

// appendBytesLocked returns the n bytes at segment offset rel to encode an append into:
// a slice of the segment's write window (mmap.Mapped.Window), which moves forward as the
// log grows. Writing through a window that is closed once passed, rather than through
// the segment's own mapping, keeps flushes from write-protecting pages the writer has
// mapped, each a TLB shootdown on the writer's CPU. On a 2-vCPU VM a small program
// copying 1.1 KiB records while another thread synced every 100 ms went from 0.6M to
// 1.4M records/s this way, and BenchmarkAppendAsync1KiB's shootdowns per run fell from
// 17,000–49,000 to 500–900 (docs/benchmarks.md). If a window cannot be mapped, the
// segment's own mapping is used. The caller holds mu.
func (l *Log) appendBytesLocked(seg *segment, rel, n int64) []byte {
	if w := seg.win; w != nil {
		if lo := rel - w.Offset(); lo >= 0 && lo+n <= int64(len(w.Bytes())) {
			return w.Bytes()[lo : lo+n]
		}
		l.closeWindowLocked(seg)
	}
	size := min(max(windowSize, n+PageSize), seg.end-seg.start-rel)
	w, err := seg.m.Window(rel, size)
	if err != nil {
		l.log.Debug().Err(err).Str("segment", seg.name).Msg("no write window; writing through the segment mapping")
		return seg.data[rel : rel+n]
	}
	seg.win = w
	lo := rel - w.Offset()
	return w.Bytes()[lo : lo+n]
}

// closeWindowLocked closes a segment's write window, if any. The caller holds mu.
func (l *Log) closeWindowLocked(seg *segment) {
	if seg.win == nil {
		return
	}
	if err := seg.win.Close(); err != nil {
		l.log.Warn().Err(err).Str("segment", seg.name).Msg("closing a write window")
	}
	seg.win = nil
}
