package commitlog

import (
	"bytes"
	"encoding/binary"
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
// bytes: everything after the last valid record is zeroed in that segment and synced (up
// to the high-water mark when it is known: nothing was written beyond it, see
// highwater.go), later segments are deleted (directory synced), the mark is set to the end
// plus its lead, and the scanned prefix is synced, so the returned end offset is durable
// and MaxOffset = FlushedOffset = end.
//
// The queue-offset table is raised to cover every consumable record scanned; records
// before from are not seen, so the store sets the other queues with SetQueueOffset.
// Recover never panics on garbage: every length is checked before use.
func (l *Log) Recover(from int64, verifyCRC bool) (int64, error) {
	return l.RecoverWith(RecoverOptions{From: from, VerifyCRC: verifyCRC, GuessDurable: true})
}

// RecoverOptions are Recover's inputs.
type RecoverOptions struct {
	// From is where the scan starts: a record boundary.
	From int64
	// Durable is an offset below which the log is known to have been durable (a
	// checkpoint's flushed offset). A bad record before it is damage (quarantined when
	// valid data follows); one at or after it begins a torn tail.
	Durable int64
	// GuessDurable, for a log without a checkpoint, takes the start of the newest segment
	// that begins with a valid record as Durable (when it is higher): the log was flushed
	// long before it moved on to that segment.
	GuessDurable bool
	// VerifyCRC checks every scanned record's body CRC.
	VerifyCRC bool
	// Keep, when set, receives the bytes of each damaged range before it is quarantined
	// (b aliases the mapping: copy what is kept); an error fails the recovery before the
	// log is changed.
	Keep func(from int64, b []byte) error
}

// Damage is a range of the log that recovery quarantined.
type Damage struct {
	From, To int64 // [From, To)
	Reason   error // what was wrong at From
}

// Quarantined lists the ranges the last recovery quarantined.
func (l *Log) Quarantined() []Damage {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.mu.damage)
}

// RecoverWith is Recover with every input. A bad record at or after the durable offset
// (RecoverOptions.Durable) begins a torn tail: the log ends there, so what survives a
// crash is always a prefix of what was appended, as with Kafka's recovery point. A bad
// record before it is damage in the middle of the log: when a valid record follows —
// later in the segment (found by its magic and self-referencing PHYSICALOFFSET), or in a
// later segment — the bad bytes up to it are handed to Keep, marked with a quarantine
// header (message.MagicQuarantine) in each segment they span, synced, reported
// (Quarantined, an error log line), and the scan goes on after them; only the damaged
// records are lost.
func (l *Log) RecoverWith(o RecoverOptions) (int64, error) {
	from, verifyCRC := o.From, o.VerifyCRC
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
	l.mu.damage = nil
	durable := o.Durable
	if o.GuessDurable {
		durable = max(durable, newestValidStart(list, verifyCRC))
	}
	for pos < last {
		seg := list.find(pos, l.segSize)
		if n := message.QuarantineSize(seg.data[pos-seg.start:]); n > 0 {
			pos += int64(n)
			continue
		}
		n, blank, err := checkRecord(seg.data[pos-seg.start:], pos, verifyCRC, &rec)
		if err != nil {
			next, ok := int64(0), false
			if pos < durable {
				next, ok = resync(list, pos, verifyCRC)
			}
			if !ok {
				reason = err
				break
			}
			if err := l.quarantine(list, Damage{From: pos, To: next, Reason: err}, o.Keep); err != nil {
				return 0, err
			}
			pos = next
			continue
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

	cur := list.segs[0]
	if !l.mu.created || end != cur.start || len(list.segs) != 1 {
		// Not the new, all-zero segment Open just created: cut the log at end.
		var err error
		if cur, err = l.truncateLocked(list, end); err != nil {
			return 0, err
		}
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

// resync finds where valid data resumes after a bad record at pos: the first position
// after it holding a valid record or filler, in pos's segment or a later one (a later
// segment whose first 8 bytes are zero is taken as empty). It returns false when nothing
// valid follows.
func resync(list *segList, pos int64, verifyCRC bool) (int64, bool) {
	var rec message.Record
	valid := func(seg *segment, p int64) bool {
		_, _, err := checkRecord(seg.data[p-seg.start:], p, verifyCRC, &rec)
		return err == nil
	}
	for _, seg := range list.segs {
		if seg.end <= pos {
			continue
		}
		start := pos + 1
		if seg.start > pos {
			if valid(seg, seg.start) {
				return seg.start, true
			}
			if allZero(seg.data[:min(len(seg.data), message.BlankHeaderSize)]) {
				continue
			}
			start = seg.start + 1
		}
		for p := start; p+message.BlankHeaderSize <= seg.end; p++ {
			p = nextMagic(seg.data, p-seg.start, seg.end-seg.start) + seg.start
			if p+message.BlankHeaderSize > seg.end {
				break
			}
			if valid(seg, p) {
				return p, true
			}
		}
	}
	return 0, false
}

// newestValidStart is the start of the newest segment whose first record (or filler) is
// valid (RecoverOptions.GuessDurable).
func newestValidStart(list *segList, verifyCRC bool) int64 {
	var rec message.Record
	for i := len(list.segs) - 1; i >= 0; i-- {
		seg := list.segs[i]
		if _, _, err := checkRecord(seg.data, seg.start, verifyCRC, &rec); err == nil {
			return seg.start
		}
	}
	return 0
}

// nextMagic returns the first position p ≥ from in data[:limit] where a record or filler
// magic sits at p+4 (limit when none).
func nextMagic(data []byte, from, limit int64) int64 {
	var v1, blank [4]byte
	binary.BigEndian.PutUint32(v1[:], message.MagicV1)
	binary.BigEndian.PutUint32(blank[:], message.MagicBlank)
	if from+message.PosMagic >= limit {
		return limit
	}
	hay := data[from+message.PosMagic : limit]
	best := int64(len(hay))
	if i := bytes.Index(hay, v1[:]); i >= 0 {
		best = int64(i)
	}
	if i := bytes.Index(hay[:best], blank[:]); i >= 0 {
		best = int64(i)
	}
	if best == int64(len(hay)) {
		return limit
	}
	return from + best
}

// allZero reports whether b is all zero bytes.
func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// quarantine sets the damaged range d aside: Keep gets its bytes, then each segment piece
// of it gets a quarantine header, synced; the range is reported. Called with mu and
// listMu held during recovery.
func (l *Log) quarantine(list *segList, d Damage, keep func(int64, []byte) error) error {
	type piece struct {
		seg    *segment
		lo, hi int64 // segment-relative
	}
	var pieces []piece
	for _, seg := range list.segs {
		lo, hi := max(d.From, seg.start), min(d.To, seg.end)
		if lo < hi {
			pieces = append(pieces, piece{seg, lo - seg.start, hi - seg.start})
		}
	}
	if keep != nil {
		for _, p := range pieces {
			if err := keep(p.seg.start+p.lo, p.seg.data[p.lo:p.hi]); err != nil {
				return fmt.Errorf("commitlog: keep damaged bytes at %d: %w", p.seg.start+p.lo, err)
			}
		}
	}
	for _, p := range pieces {
		message.EncodeQuarantine(p.seg.data[p.lo:], int(p.hi-p.lo))
		if err := p.seg.m.Sync(p.lo, message.BlankHeaderSize); err != nil {
			return fmt.Errorf("commitlog: quarantine %s at %d: %w", p.seg.name, p.lo, err)
		}
	}
	l.mu.damage = append(l.mu.damage, d)
	l.log.Error().Err(d.Reason).Int64("from", d.From).Int64("to", d.To).Int64("bytes", d.To-d.From).
		Msg("damaged commit-log range quarantined: the records in it are lost, the log goes on after it")
	return nil
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
// synced up to the high-water mark (the whole rest when the mark is unknown: see
// highwater.go), and the segments after it are deleted, newest first, so that whichever
// of the removals a crash makes durable, the segments left are contiguous. Then the mark
// is lowered (or raised) to end+highWaterLead: every byte after end is zero by then. It
// returns the segment appends continue in (the last one when end is the end of the log).
// Called with mu and listMu held, before any reader can see beyond the old write position.
func (l *Log) truncateLocked(list *segList, end int64) (*segment, error) {
	cur := list.find(end, l.segSize)
	if cur == nil { // end is the end of the last (full) segment
		return list.segs[len(list.segs)-1], l.setHighWater(end + l.hwLead)
	}
	if err := l.zeroSegmentTail(cur, end-cur.start, l.tailLimit(cur, end)-cur.start); err != nil {
		return nil, err
	}
	i := slices.Index(list.segs, cur)
	victims := list.segs[i+1:]
	if len(victims) == 0 {
		return cur, l.setHighWater(end + l.hwLead)
	}
	l.segs.Store(&segList{segs: slices.Clone(list.segs[:i+1])})
	var errs []error
	for _, s := range slices.Backward(victims) {
		l.log.Info().Str("segment", s.name).Msg("deleting a segment after the recovered end")
		errs = append(errs, s.release())
		if err := l.fs.Remove(filepath.Join(l.dir, s.name)); err != nil {
			errs = append(errs, fmt.Errorf("commitlog: truncate: %w", err))
		}
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		errs = append(errs, fmt.Errorf("commitlog: truncate: %w", err))
	}
	if err := errors.Join(errs...); err != nil {
		return cur, err
	}
	return cur, l.setHighWater(end + l.hwLead)
}

// tailWindow is how much of a segment's tail zeroSegmentTail maps at a time.
const tailWindow = 4 << 20

// zeroSegmentTail zeroes (durably) whatever is not zero in seg from offset rel to offset
// limit (segment-relative; the high-water mark or the segment's end, see tailLimit). It
// reads the range through windows mapped and closed in turn, never through the segment's
// own mapping: the pages it reads stay in the page cache but not in the process, so
// recovering a store whose last segment is mostly empty does not make it resident.
func (l *Log) zeroSegmentTail(seg *segment, rel, limit int64) error {
	size := min(int64(len(seg.data)), limit)
	for off := rel; off < size; {
		n := min(tailWindow-off%tailWindow, size-off)
		win, err := seg.m.Window(off, n)
		if err != nil {
			return fmt.Errorf("commitlog: truncate %s: %w", seg.name, err)
		}
		b := win.Bytes()[off-win.Offset():][:n]
		lo, hi := zeroTail(b, 0)
		var serr error
		if hi > lo {
			l.log.Info().Str("segment", seg.name).Int64("from", seg.start+off+int64(lo)).Int("bytes", hi-lo).Msg("zeroing the log tail")
			serr = seg.m.Sync(off+int64(lo), int64(hi-lo))
		}
		if err := errors.Join(serr, win.Close()); err != nil {
			return fmt.Errorf("commitlog: truncate %s: %w", seg.name, err)
		}
		off += n
	}
	return nil
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

// Validate checks the records of [from, to) as recovery does (body CRC included) and
// quarantines each damaged range it finds there as RecoverWith does before the durable
// offset (Keep gets the bytes first, the ranges are logged and added to Quarantined). It
// is for a range below the recovered end that is known to have been durable but that the
// recovery did not scan: the store calls it when its derived data makes it re-dispatch
// records from below the recovery's start, so the dispatcher never meets unreadable bytes.
//
// The scan starts at the start of from's segment (a record boundary whatever from is) and
// stops at to, which must be a record boundary the recovery validated (its From) or the
// recovered end. A damaged range reaches to where valid data resumes, or to to when none
// does before it: zeros there are lost records, not the end of the log. Validate must be
// called after Recover and before the first Append; it returns the ranges it quarantined.
func (l *Log) Validate(from, to int64, keep func(from int64, b []byte) error) ([]Damage, error) {
	l.closing.RLock()
	defer l.closing.RUnlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.closed.Load():
		return nil, ErrClosed
	case l.mu.appended:
		return nil, ErrAlreadyAppended
	case !l.mu.recovered:
		return nil, errors.New("commitlog: Validate before Recover")
	}
	l.listMu.Lock()
	defer l.listMu.Unlock()
	list := l.segs.Load()
	to = min(to, l.mu.pos)
	seg := list.find(max(from, list.first()), l.segSize)
	if seg == nil || from >= to {
		return nil, nil
	}
	var (
		rec   message.Record
		found []Damage
		pos   = seg.start
	)
	for pos < to {
		seg := list.find(pos, l.segSize)
		b := seg.data[pos-seg.start:]
		if n := message.QuarantineSize(b); n > 0 {
			pos += int64(n)
			continue
		}
		n, blank, err := checkRecord(b, pos, true, &rec)
		switch {
		case err == nil && blank:
			pos = seg.end
			continue
		case err == nil:
			pos += n
			continue
		}
		next, ok := resync(list, pos, true)
		if !ok || next > to {
			next = to
		}
		d := Damage{From: pos, To: next, Reason: err}
		if errors.Is(err, errEndOfData) {
			d.Reason = fmt.Errorf("%w at %d: zero bytes where a record should start, before the recovered end", ErrCorrupt, pos)
		}
		if err := l.quarantine(list, d, keep); err != nil {
			return found, err
		}
		found = append(found, d)
		pos = next
	}
	if len(found) > 0 {
		l.log.Error().Int64("from", seg.start).Int64("to", to).Int("ranges", len(found)).
			Msg("commit log validated below the recovery's start: damaged ranges quarantined")
	}
	return found, nil
}
