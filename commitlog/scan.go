package commitlog

import (
	"context"
	"errors"
	"fmt"

	"github.com/ferrymq/ferry/message"
)

// ScanEvent is what Scan reports for one position of the log.
type ScanEvent struct {
	// Offset is the physical offset of the record or range.
	Offset int64
	// Size is its length in bytes.
	Size int64
	// Record is the decoded record when Err is nil and Quarantined is false; it aliases
	// the mapping and is valid only during the callback.
	Record *message.Record
	// Quarantined marks a range recovery set aside earlier.
	Quarantined bool
	// Filler marks the blank filler that pads the end of a segment. Only ScanSegment
	// reports fillers; Log.Scan steps over them.
	Filler bool
	// Err is why the bytes at Offset are not a valid record; Size then covers them up to
	// where valid data resumes (or the end of the scanned range).
	Err error
}

// Scan checks every record in [from, to) as recovery does (body CRC included) without
// changing anything, calling fn for each record, each quarantined range and each damaged
// range, in log order, until fn returns false or ctx ends. A damaged range is followed by
// the next valid data, found as recovery finds it. Segments deleted meanwhile are skipped.
// It is safe to run alongside appends and reads.
func (l *Log) Scan(ctx context.Context, from, to int64, fn func(ScanEvent) bool) error {
	var rec message.Record
	pos := max(from, l.MinOffset())
	for pos < to {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("commitlog: scan: %w", err)
		}
		seg, limit, err := l.acquire(pos)
		if errors.Is(err, ErrDeleted) {
			pos = max(pos+1, l.MinOffset())
			continue
		}
		if errors.Is(err, ErrOutOfRange) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("commitlog: scan: %w", err)
		}
		next, stop := l.scanSegment(seg, pos, min(limit, to), &rec, fn)
		if rerr := seg.release(); rerr != nil {
			l.log.Error().Err(rerr).Msg("unmap after scan")
		}
		if stop {
			return nil
		}
		pos = next
	}
	return nil
}

// scanSegment scans seg from pos to limit; it returns where to go on and whether fn
// asked to stop.
func (l *Log) scanSegment(seg *segment, pos, limit int64, rec *message.Record, fn func(ScanEvent) bool) (int64, bool) {
	for pos < limit {
		b := seg.data[pos-seg.start:]
		if q := message.QuarantineSize(b); q > 0 {
			if !fn(ScanEvent{Offset: pos, Size: int64(q), Quarantined: true}) {
				return pos, true
			}
			pos += int64(q)
			continue
		}
		size, blank, err := checkRecord(b, pos, true, rec)
		switch {
		case err == nil && blank:
			return seg.end, false
		case err == nil:
			if !fn(ScanEvent{Offset: pos, Size: size, Record: rec}) {
				return pos, true
			}
			pos += size
		default:
			next, ok := resync(&segList{segs: []*segment{seg}}, pos, true)
			if !ok || next > limit {
				next = limit
			}
			if !fn(ScanEvent{Offset: pos, Size: next - pos, Err: err}) {
				return pos, true
			}
			if !ok {
				return seg.end, false // nothing valid after it in this segment
			}
			pos = next
		}
	}
	return pos, false
}
