package consumequeue

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/ferrymq/ferry/internal/mmap"
)

// segment is one mapped segment file. Files are sparse (see "Files" in the package doc):
// grow allocates their blocks ahead of the writer.
type segment struct {
	base int64 // queue offset of the segment's first unit
	m    mmap.Mapped
	b    []byte
	grow mmap.Grower // guarded by Queue.w
}

// unit returns the bytes of unit number o, which must be inside the segment.
func (s *segment) unit(o int64) []byte {
	off := (o - s.base) * UnitSize
	return s.b[off : off+UnitSize]
}

// Queue is the consume queue of one topic and queue id. It is safe for concurrent use; see
// the package documentation for the intended one-writer, many-readers pattern.
//
// Invariants: every segment but the last is full; the segments are contiguous;
// firstBase ≤ MinOffset ≤ MaxOffset ≤ end of the last segment; units in
// [MinOffset, MaxOffset) are valid, not pre-blank, and in increasing commit-log order.
type Queue struct {
	topic    string
	queueID  int32
	dir      string
	fs       mmap.FS
	units    int64 // units per segment
	fileSize int64

	max     atomic.Int64 // next queue offset to write; published after the unit is written
	min     atomic.Int64 // first readable queue offset
	dropped atomic.Bool  // the last Recover dropped units or files that held data

	w struct {
		sync.Mutex
		last     Unit // the unit at MaxOffset-1, when hasLast
		hasLast  bool
		dirReady bool // the queue directory exists and its entry is durable
		closed   bool
	}
	fl struct {
		sync.Mutex
		done int64 // units below this offset are durable
	}
	seg struct {
		sync.RWMutex
		list   []*segment
		closed bool
	}
}

func newQueue(opts Options, topic string, queueID int32) *Queue {
	q := &Queue{
		topic:    topic,
		queueID:  queueID,
		dir:      filepath.Join(opts.Root, topic, fmt.Sprint(queueID)),
		fs:       opts.fs(),
		units:    int64(opts.UnitsPerFile),
		fileSize: opts.fileSize(),
	}
	return q
}

// String names the queue in errors and logs.
func (q *Queue) String() string { return fmt.Sprintf("%s/%d", q.topic, q.queueID) }

// Topic is the queue's topic.
func (q *Queue) Topic() string { return q.topic }

// QueueID is the queue's id within its topic.
func (q *Queue) QueueID() int32 { return q.queueID }

// MinOffset is the first queue offset that can be read.
func (q *Queue) MinOffset() int64 { return q.min.Load() }

// Dropped reports whether the last Recover dropped units or segment files that held data:
// a torn tail, a damaged unit (everything from it on is dropped) or a missing or wrongly
// sized segment. The queue then ends before what was dropped, and the commit log is the
// only place its missing units can come from.
func (q *Queue) Dropped() bool { return q.dropped.Load() }

// MaxOffset is the next queue offset to be written: the number of units ever written to
// the queue (including those removed from its start).
func (q *Queue) MaxOffset() int64 { return q.max.Load() }

// Append stores the unit of the message with queue offset queueOffset. The offset must be
// MaxOffset (units are dense). Appending a unit again at an offset below MaxOffset is a
// no-op when the stored unit is identical (re-dispatch after recovery) and ErrMismatch
// otherwise; offsets below MinOffset are ignored. An offset above MaxOffset is ErrGap. The
// unit must point at or after the end of the previous unit in the commit log
// (ErrMismatch).
func (q *Queue) Append(queueOffset int64, u Unit) error {
	q.w.Lock()
	defer q.w.Unlock()
	if q.w.closed {
		return ErrClosed
	}
	maxOff := q.max.Load()
	switch {
	case queueOffset < q.min.Load():
		return nil
	case queueOffset < maxOff:
		if stored := decodeUnit(q.unitLocked(queueOffset)); stored != u {
			return fmt.Errorf("%w: %s offset %d holds %+v, not %+v", ErrMismatch, q, queueOffset, stored, u)
		}
		return nil
	case queueOffset > maxOff:
		return fmt.Errorf("%w: %s offset %d appended at max offset %d", ErrGap, q, queueOffset, maxOff)
	case !u.valid() || u.preBlank():
		return fmt.Errorf("%w: %s offset %d: %+v", ErrInvalidUnit, q, queueOffset, u)
	case q.w.hasLast && !u.follows(q.w.last):
		return fmt.Errorf("%w: %s offset %d: %+v does not follow %+v in the commit log",
			ErrMismatch, q, queueOffset, u, q.w.last)
	}
	b, err := q.appendSlotLocked(queueOffset)
	if err != nil {
		return err
	}
	encodeUnit(b, u)
	q.w.last, q.w.hasLast = u, true
	q.max.Store(queueOffset + 1)
	return nil
}

// unitLocked returns the bytes of stored unit o; the caller holds w (or seg) and o is
// inside the segments.
func (q *Queue) unitLocked(o int64) []byte {
	first := q.seg.list[0].base
	return q.seg.list[(o-first)/q.units].unit(o)
}

// appendSlotLocked returns the bytes for unit o = MaxOffset, creating its segment if
// needed and allocating its blocks (mmap.Grower), so the caller may write into them. On an
// error (ENOSPC included) nothing has been written. The caller holds w.
func (q *Queue) appendSlotLocked(o int64) ([]byte, error) {
	list := q.seg.list
	if n := len(list); n > 0 && o < list[n-1].base+q.units {
		return q.allocUnitLocked(list[n-1], o)
	}
	base := o / q.units * q.units
	if n := len(list); n > 0 {
		base = list[n-1].base + q.units
	}
	s, err := q.createSegmentLocked(base, o)
	if err != nil {
		return nil, err
	}
	q.seg.Lock()
	q.seg.list = append(q.seg.list[:len(q.seg.list):len(q.seg.list)], s)
	q.seg.Unlock()
	return q.allocUnitLocked(s, o)
}

// allocUnitLocked makes sure unit o of segment s has its blocks and returns its bytes. The
// caller holds w.
func (q *Queue) allocUnitLocked(s *segment, o int64) ([]byte, error) {
	if err := s.grow.Ensure((o - s.base + 1) * UnitSize); err != nil {
		return nil, fmt.Errorf("consumequeue: %s offset %d: %w", q, o, err)
	}
	return s.unit(o), nil
}

// createSegmentLocked creates the (sparse) segment starting at unit base, fills units
// [base, first) with durable pre-blank units and makes the file's existence durable. The
// caller holds w.
func (q *Queue) createSegmentLocked(base, first int64) (*segment, error) {
	if err := q.ensureDirLocked(); err != nil {
		return nil, err
	}
	path := filepath.Join(q.dir, segmentName(base))
	if ok, err := q.fs.Exists(path); err != nil {
		return nil, fmt.Errorf("consumequeue: %s: %w", q, err)
	} else if ok {
		// A leftover of an interrupted removal: never reuse its contents.
		if err := q.fs.Remove(path); err != nil {
			return nil, fmt.Errorf("consumequeue: %s: remove stale segment: %w", q, err)
		}
	}
	m, err := q.fs.OpenMappedSparse(path, q.fileSize, true)
	if err != nil {
		return nil, fmt.Errorf("consumequeue: %s: create segment: %w", q, err)
	}
	s := &segment{base: base, m: m, b: m.Bytes(), grow: mmap.NewGrower(m, 0)}
	if first > base {
		if err := s.grow.Ensure((first - base) * UnitSize); err != nil {
			return nil, errors.Join(fmt.Errorf("consumequeue: %s: pre-blank units: %w", q, err), m.Close())
		}
		blank := Unit{Size: preBlankSize}
		for o := base; o < first; o++ {
			encodeUnit(s.unit(o), blank)
		}
		if err := m.Sync(0, (first-base)*UnitSize); err != nil {
			return nil, errors.Join(fmt.Errorf("consumequeue: %s: %w", q, err), m.Close())
		}
	}
	if err := q.fs.SyncDir(q.dir); err != nil {
		return nil, errors.Join(fmt.Errorf("consumequeue: %s: %w", q, err), m.Close())
	}
	return s, nil
}

// ensureDirLocked creates the queue directory and makes its entry durable. The caller
// holds w.
func (q *Queue) ensureDirLocked() error {
	if q.w.dirReady {
		return nil
	}
	if err := q.fs.MkdirAll(q.dir); err != nil {
		return fmt.Errorf("consumequeue: %s: %w", q, err)
	}
	topicDir := filepath.Dir(q.dir)
	for _, d := range []string{topicDir, filepath.Dir(topicDir)} {
		if err := q.fs.SyncDir(d); err != nil {
			return fmt.Errorf("consumequeue: %s: %w", q, err)
		}
	}
	q.w.dirReady = true
	return nil
}

// Get returns the unit at queue offset o, or ErrOffsetOutOfRange when o is not in
// [MinOffset, MaxOffset).
func (q *Queue) Get(o int64) (Unit, error) {
	q.seg.RLock()
	defer q.seg.RUnlock()
	if q.seg.closed {
		return Unit{}, ErrClosed
	}
	if o < q.min.Load() || o >= q.max.Load() {
		return Unit{}, ErrOffsetOutOfRange
	}
	return decodeUnit(q.unitLocked(o)), nil
}

// Read fills buf with the units from queue offset from on and returns how many it read:
// min(len(buf), MaxOffset-from), or 0 when from ≥ MaxOffset. A from below MinOffset is
// ErrOffsetOutOfRange. Read does not allocate.
func (q *Queue) Read(from int64, buf []Unit) (int, error) {
	q.seg.RLock()
	defer q.seg.RUnlock()
	if q.seg.closed {
		return 0, ErrClosed
	}
	if from < q.min.Load() {
		return 0, ErrOffsetOutOfRange
	}
	n := q.max.Load() - from
	if n <= 0 {
		return 0, nil
	}
	if n > int64(len(buf)) {
		n = int64(len(buf))
	}
	list := q.seg.list
	first := list[0].base
	for i := int64(0); i < n; {
		o := from + i
		s := list[(o-first)/q.units]
		cnt := min(n-i, s.base+q.units-o)
		b := s.b[(o-s.base)*UnitSize:]
		for j := range cnt {
			buf[i+j] = decodeUnit(b[j*UnitSize:])
		}
		i += cnt
	}
	return int(n), nil
}

// LastUnit returns the newest stored unit, if any. It may be below MinOffset (a queue whose
// records were all deleted still remembers where it ended in the commit log).
func (q *Queue) LastUnit() (Unit, bool) {
	q.w.Lock()
	defer q.w.Unlock()
	return q.w.last, q.w.hasLast && !q.w.last.preBlank()
}

// OffsetByTime searches the queue by store time. storeTimeOf returns the store timestamp of
// the record a unit points to. With upper false it returns the first offset whose store
// time is ≥ ts (MaxOffset when all are older); with upper true the last offset whose store
// time is ≤ ts (MinOffset when all are newer). An empty queue gives MaxOffset. Units are
// assumed to be in store-time order, as the commit log is.
func (q *Queue) OffsetByTime(ts int64, storeTimeOf func(phy int64, size int32) (int64, error), upper bool) (int64, error) {
	lo, hi := q.MinOffset(), q.MaxOffset()
	if lo >= hi {
		return hi, nil
	}
	// Find the first offset in [lo, hi) whose time is ≥ ts (lower) or > ts (upper).
	a, b := lo, hi
	for a < b {
		mid := a + (b-a)/2
		after, err := q.timeAfter(mid, ts, upper, storeTimeOf)
		if err != nil {
			return 0, err
		}
		if after {
			b = mid
		} else {
			a = mid + 1
		}
	}
	if upper && a > lo {
		return a - 1, nil
	}
	return a, nil
}

// timeAfter reports whether the record at offset o is at or after ts (strictly after when
// strict). A unit that disappeared from the start of the queue counts as older.
func (q *Queue) timeAfter(o, ts int64, strict bool, storeTimeOf func(int64, int32) (int64, error)) (bool, error) {
	u, err := q.Get(o)
	if errors.Is(err, ErrOffsetOutOfRange) && o < q.MinOffset() {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	for u.Hole() { // a lost message: judge by the next real one (there always is one)
		if o++; o >= q.MaxOffset() {
			return true, nil
		}
		if u, err = q.Get(o); err != nil {
			return false, err
		}
	}
	t, err := storeTimeOf(u.Offset, u.Size)
	if err != nil {
		return false, fmt.Errorf("consumequeue: %s offset %d: store time: %w", q, o, err)
	}
	if strict {
		return t > ts, nil
	}
	return t >= ts, nil
}

// Flush makes every appended unit durable.
func (q *Queue) Flush() error {
	q.fl.Lock()
	defer q.fl.Unlock()
	return q.flushLocked()
}

// flushLocked syncs units [done, MaxOffset). The caller holds fl.
func (q *Queue) flushLocked() error {
	q.seg.RLock()
	defer q.seg.RUnlock()
	to, from := q.max.Load(), q.fl.done
	list := q.seg.list
	if q.seg.closed || from >= to || len(list) == 0 {
		return nil
	}
	first := list[0].base
	from = max(from, first)
	for from < to {
		s := list[(from-first)/q.units]
		end := min(to, s.base+q.units)
		if err := s.m.Sync((from-s.base)*UnitSize, (end-from)*UnitSize); err != nil {
			return fmt.Errorf("consumequeue: %s: flush: %w", q, err)
		}
		from = end
	}
	q.fl.done = to
	return nil
}

// Close flushes the queue and unmaps its files. Later calls do nothing; other methods
// return ErrClosed.
func (q *Queue) Close() error { return q.close(true) }

func (q *Queue) close(flush bool) error {
	q.w.Lock()
	defer q.w.Unlock()
	if q.w.closed {
		return nil
	}
	var err error
	if flush {
		err = q.Flush()
	}
	q.w.closed = true
	q.seg.Lock()
	list := q.seg.list
	q.seg.list, q.seg.closed = nil, true
	q.seg.Unlock()
	return errors.Join(err, closeSegments(list))
}

// closeSegments unmaps segments.
func closeSegments(list []*segment) error {
	var err error
	for _, s := range list {
		err = errors.Join(err, s.m.Close())
	}
	return err
}
