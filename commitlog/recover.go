package commitlog

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/ferrymq/ferry/message"
)

// RecoverTail is RocketMQ's normal recovery: Recover from the start of the segments-th
// last segment (the first when there are fewer; 3 in RocketMQ).
func (l *Log) RecoverTail(segments int, verifyCRC bool) (int64, error) {
	list := l.segs.Load()
	from := int64(0)
	if n := len(list.segs); n > 0 {
		from = list.segs[max(n-max(segments, 1), 0)].start
	}
	return l.Recover(from, verifyCRC)
}

// Recover establishes the write position. It must be called after Open on a log with
// segments and before the first Append (ErrAlreadyAppended otherwise).
//
// It scans records from the physical offset from, which must be a record boundary (a
// segment start, or an offset known to end a record, such as a checkpoint). A record is
// valid when its magic is V1, TOTALSIZE is at least the minimum and leaves the 8 bytes a
// filler needs before the segment end, the record decodes with the recomputed size equal
// to TOTALSIZE, its PHYSICALOFFSET equals its position, its topic is non-empty without
// NUL bytes, its properties are empty or end with 0x02 (torn-tail detection: V1 has no
// CRC over them) and, with verifyCRC, its body CRC matches. A blank filler is valid when its TOTALSIZE is exactly the rest of the segment;
// the scan continues at the next segment. The scan stops at the first invalid (or zero)
// bytes: everything after the last valid record is zeroed in that segment and synced,
// later segments are deleted (directory synced), and the scanned prefix is synced, so the
// returned end offset is durable and MaxOffset = FlushedOffset = end.
//
// The queue-offset table is raised to cover every consumable record scanned; records
// before from are not seen, so the store sets the other queues with SetQueueOffset.
// Recover never panics on garbage: every length is checked before use.
func (l *Log) Recover(from int64, verifyCRC bool) (int64, error) {
	l.closing.RLock()
	defer l.closing.RUnlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.closed.Load():
		return 0, ErrClosed
	case l.mu.appended:
		return 0, ErrAlreadyAppended
	}
	l.listMu.Lock()
	defer l.listMu.Unlock()
	list := l.segs.Load()
	if len(list.segs) == 0 {
		l.mu.recovered = true
		return 0, nil
	}
	first, last := list.segs[0].start, list.segs[len(list.segs)-1].end
	if from < first || from > last {
		return 0, fmt.Errorf("%w: recover from %d, the log holds [%d, %d)", ErrOutOfRange, from, first, last)
	}

	var (
		rec     message.Record
		lastTS  int64
		records int
		reason  error
		pos     = from
	)
	for pos < last {
		seg := list.find(pos, l.segSize)
		n, blank, err := checkRecord(seg.data[pos-seg.start:], pos, verifyCRC, &rec)
		if err != nil {
			reason = err
			break
		}
		if blank {
			pos = seg.end
			continue
		}
		records++
		lastTS = max(lastTS, rec.StoreTimestamp)
		seg.lastTS.Store(lastTS)
		if message.IsConsumable(rec.SysFlag) {
			if q := l.mu.queues[queueKey{string(rec.Topic), rec.QueueID}]; q != nil {
				q.next = max(q.next, rec.QueueOffset+1)
			} else {
				l.mu.queues[queueKey{string(rec.Topic), rec.QueueID}] = &queueNext{next: rec.QueueOffset + 1}
			}
		}
		pos += n
	}
	end := pos

	cur, err := l.truncateLocked(list, end)
	if err != nil {
		return 0, err
	}
	l.flushed.Store(from)
	if err := l.flushTo(end, lastTS); err != nil {
		return 0, err
	}
	l.mu.cur = cur
	l.mu.pos = end
	l.mu.lastTS = max(l.mu.lastTS, lastTS)
	l.mu.recovered = true
	l.wrote.Store(end)
	l.lastTS.Store(lastTS)
	l.preallocate(cur.end)
	ev := l.log.Info().Int64("from", from).Int64("end", end).Int("records", records)
	if reason != nil && !errors.Is(reason, errEndOfData) {
		ev = ev.AnErr("stopped_at", reason)
	}
	ev.Msg("commit log recovered")
	return end, nil
}

// errEndOfData marks zero bytes where a record would start: the normal end of the log.
var errEndOfData = errors.New("commitlog: end of data")

// checkRecord is the record checker of recovery (RocketMQ checkMessageAndReturnSize with
// stricter bounds). b is the rest of the segment from pos. It returns the size of the
// valid record or filler at b, whether it is a filler, or why it is not valid.
func checkRecord(b []byte, pos int64, verifyCRC bool, rec *message.Record) (int64, bool, error) {
	total, magic, err := message.PeekHeader(b)
	if err != nil {
		return 0, false, fmt.Errorf("%w at %d: %w", ErrCorrupt, pos, err)
	}
	switch magic {
	case message.MagicBlank:
		if int64(total) != int64(len(b)) {
			return 0, false, fmt.Errorf("%w at %d: filler of %d bytes, %d left in the segment", ErrCorrupt, pos, total, len(b))
		}
		return int64(total), true, nil
	case message.MagicV1:
	default:
		if total == 0 && magic == 0 {
			return 0, false, errEndOfData
		}
		return 0, false, fmt.Errorf("%w at %d: magic %#08x", ErrCorrupt, pos, magic)
	}
	if total < message.MinRecordSize || int64(total)+message.BlankHeaderSize > int64(len(b)) {
		return 0, false, fmt.Errorf("%w at %d: TOTALSIZE %d with %d bytes left in the segment", ErrCorrupt, pos, total, len(b))
	}
	if _, err := rec.Decode(b[:total]); err != nil {
		return 0, false, fmt.Errorf("%w at %d: %w", ErrCorrupt, pos, err)
	}
	if rec.PhysicalOffset != pos {
		return 0, false, fmt.Errorf("%w at %d: PHYSICALOFFSET is %d", ErrCorrupt, pos, rec.PhysicalOffset)
	}
	if err := checkTail(rec); err != nil {
		return 0, false, fmt.Errorf("%w at %d: %w", ErrCorrupt, pos, err)
	}
	if verifyCRC {
		if err := rec.VerifyBodyCRC(); err != nil {
			return 0, false, fmt.Errorf("%w at %d: %w", ErrCorrupt, pos, err)
		}
	}
	return int64(total), false, nil
}

// checkTail rejects a record whose last bytes look torn. V1 has a CRC over the body
// only, so a write torn inside the topic or properties (the last bytes of a record, left
// zero by a lost page) would otherwise pass every size check. Every writer (RocketMQ and
// Append, which enforces it) ends non-empty properties with the 0x02 separator and never
// puts a NUL byte in a topic.
func checkTail(rec *message.Record) error {
	if n := len(rec.Properties); n > 0 && rec.Properties[n-1] != message.PropertySeparator {
		return errors.New("properties do not end with the 0x02 separator (torn write?)")
	}
	if len(rec.Topic) == 0 || bytes.IndexByte(rec.Topic, 0) >= 0 {
		return errors.New("empty topic or NUL byte in topic (torn write?)")
	}
	return nil
}

// truncateLocked cuts the log at end: the rest of the segment holding end is zeroed and
// synced, and the segments after it are deleted. It returns the segment appends continue
// in (the last one when end is the end of the log). Called with mu and listMu held, before
// any reader can see beyond the old write position.
func (l *Log) truncateLocked(list *segList, end int64) (*segment, error) {
	cur := list.find(end, l.segSize)
	if cur == nil { // end is the end of the last (full) segment
		return list.segs[len(list.segs)-1], nil
	}
	if lo, hi := zeroTail(cur.data, int(end-cur.start)); hi > lo {
		l.log.Info().Str("segment", cur.name).Int64("from", end).Int("bytes", hi-lo).Msg("zeroing the log tail")
		if err := cur.m.Sync(int64(lo), int64(hi-lo)); err != nil {
			return nil, fmt.Errorf("commitlog: truncate %s: %w", cur.name, err)
		}
	}
	i := slices.Index(list.segs, cur)
	victims := list.segs[i+1:]
	if len(victims) == 0 {
		return cur, nil
	}
	l.segs.Store(&segList{segs: slices.Clone(list.segs[:i+1])})
	var errs []error
	for _, s := range victims {
		l.log.Info().Str("segment", s.name).Msg("deleting a segment after the recovered end")
		errs = append(errs, s.release())
		if err := l.fs.Remove(filepath.Join(l.dir, s.name)); err != nil {
			errs = append(errs, fmt.Errorf("commitlog: truncate: %w", err))
		}
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		errs = append(errs, fmt.Errorf("commitlog: truncate: %w", err))
	}
	return cur, errors.Join(errs...)
}

// zeroTail zeroes data[from:] page by page, touching only pages that are not zero
// already, and returns the range it changed (lo == hi when none).
func zeroTail(data []byte, from int) (lo, hi int) {
	var zero [PageSize]byte
	lo, hi = -1, -1
	for p := from; p < len(data); {
		end := min((p/PageSize+1)*PageSize, len(data))
		if chunk := data[p:end]; !bytes.Equal(chunk, zero[:len(chunk)]) {
			clear(chunk)
			if lo < 0 {
				lo = p
			}
			hi = end
		}
		p = end
	}
	if lo < 0 {
		return 0, 0
	}
	return lo, hi
}
