package consumequeue

import (
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/ferrymq/ferry/internal/mmap"
)

// Recover reloads the queue from its files: it maps every segment, scans the newest ones up
// to the first invalid unit (zero, negative, or not after the previous unit in the commit
// log), zeroes and syncs what follows it in that segment, and removes later segments. A
// segment that is missing from the sequence or wrongly sized ends the queue the same way:
// it and every later segment are removed. MinOffset becomes the first unit after any
// pre-blank units. Whether anything that held data was dropped is reported by Dropped, so
// the owner can re-derive the queue's tail from the commit log. Store.Open calls it for
// every queue it finds; call it again only while nothing else uses the queue.
func (q *Queue) Recover() error {
	q.w.Lock()
	defer q.w.Unlock()
	if q.w.closed {
		return ErrClosed
	}
	q.fl.Lock()
	defer q.fl.Unlock()
	q.seg.Lock()
	old := q.seg.list
	q.seg.list = nil
	q.seg.Unlock()
	if err := closeSegments(old); err != nil {
		return fmt.Errorf("consumequeue: %s: %w", q, err)
	}

	segs, dropped, err := q.loadSegments()
	if err != nil {
		return err
	}
	end, cut, err := q.scanAndCut(segs)
	if err != nil {
		return errors.Join(err, closeSegments(segs))
	}
	if keep := q.segmentsUpTo(segs, end); keep < len(segs) {
		removed := segs[keep:]
		segs = segs[:keep]
		for _, s := range removed {
			cut = cut || s.lastData(0) > 0
		}
		if err := q.removeSegments(removed); err != nil {
			return errors.Join(err, closeSegments(segs))
		}
	}
	q.dropped.Store(dropped || cut)

	for i, s := range segs {
		// Every page below the last unit holds units, so it has its blocks (see
		// mmap.NewGrower); appends allocate from the end of the data on.
		from := q.fileSize
		if i == len(segs)-1 {
			from = max(end-s.base, 0) * UnitSize
		}
		s.grow = mmap.NewGrower(s.m, from)
	}
	minOff := end
	q.w.hasLast, q.w.last = false, Unit{}
	if len(segs) > 0 {
		q.w.dirReady = true
		minOff = segs[0].base
		for minOff < end && decodeUnit(segs[0].unit(minOff)).preBlank() && minOff < segs[0].base+q.units {
			minOff++
		}
		if end > segs[0].base {
			q.w.last, q.w.hasLast = decodeUnit(segs[(end-1-segs[0].base)/q.units].unit(end-1)), true
		}
	}
	q.seg.Lock()
	q.seg.list = segs
	q.min.Store(minOff)
	q.max.Store(end)
	q.seg.Unlock()
	q.fl.done = end
	return nil
}

// loadSegments maps the queue's segment files, oldest first. The queue ends before the
// first file that does not follow the one before it or is wrongly sized (a crash while it
// was being created, or damage): that file and every later one are removed, and dropped
// reports it. A file whose name is not a segment name of this queue's unit count is
// ErrCorrupt: it was written with other settings, and nothing should be guessed.
func (q *Queue) loadSegments() (segs []*segment, dropped bool, err error) {
	names, err := q.fs.ReadDir(q.dir)
	if err != nil {
		return nil, false, fmt.Errorf("consumequeue: %s: %w", q, err)
	}
	var bases []int64
	for _, name := range names {
		if len(name) != nameLen {
			continue // not ours (temporary or foreign file)
		}
		base, ok := parseSegmentName(name, q.fileSize)
		if !ok {
			return nil, false, fmt.Errorf("%w: %s: file %q is not a segment of %d units", ErrCorrupt, q, name, q.units)
		}
		bases = append(bases, base)
	}
	segs = make([]*segment, 0, len(bases))
	for i, base := range bases {
		path := filepath.Join(q.dir, segmentName(base))
		size, err := q.fs.Size(path)
		if err != nil {
			return nil, false, errors.Join(fmt.Errorf("consumequeue: %s: %w", q, err), closeSegments(segs))
		}
		if size != q.fileSize || (i > 0 && base != bases[i-1]+q.units) {
			if err := q.dropFiles(bases[i:]); err != nil {
				return nil, false, errors.Join(err, closeSegments(segs))
			}
			return segs, true, nil
		}
		m, err := q.fs.OpenMappedSparse(path, q.fileSize, false)
		if err != nil {
			return nil, false, errors.Join(fmt.Errorf("consumequeue: %s: %w", q, err), closeSegments(segs))
		}
		segs = append(segs, &segment{base: base, m: m, b: m.Bytes()})
	}
	return segs, false, nil
}

// dropFiles removes the segment files of bases (newest first) and syncs the directory.
func (q *Queue) dropFiles(bases []int64) error {
	var err error
	for i := len(bases) - 1; i >= 0; i-- {
		if rerr := q.fs.Remove(filepath.Join(q.dir, segmentName(bases[i]))); rerr != nil {
			err = errors.Join(err, rerr)
		}
	}
	err = errors.Join(err, q.fs.SyncDir(q.dir))
	if err != nil {
		return fmt.Errorf("consumequeue: %s: remove damaged segments: %w", q, err)
	}
	return nil
}

// scanAndCut finds the end of the valid units and zeroes (durably) the rest of the segment
// holding it, reporting whether that rest held data. Like RocketMQ it scans only the last
// three segments, but it starts earlier if an older segment does not end with a valid unit.
func (q *Queue) scanAndCut(segs []*segment) (end int64, cut bool, err error) {
	if len(segs) == 0 {
		return 0, false, nil
	}
	start := max(0, len(segs)-3)
	for i := range start {
		if !decodeUnit(segs[i].unit(segs[i].base + q.units - 1)).valid() {
			start = i
			break
		}
	}
	var prev Unit
	havePrev := start > 0
	if havePrev {
		s := segs[start-1]
		prev = decodeUnit(s.unit(s.base + q.units - 1))
	}
	end = segs[len(segs)-1].base + q.units
scan:
	for _, s := range segs[start:] {
		for o := s.base; o < s.base+q.units; o++ {
			u := decodeUnit(s.unit(o))
			if !u.valid() || (havePrev && !u.follows(prev)) {
				end = o
				break scan
			}
			prev, havePrev = u, true
		}
	}
	if i := q.segmentsUpTo(segs, end) - 1; i >= 0 && end < segs[i].base+q.units {
		s := segs[i]
		from := (end - s.base) * UnitSize
		if to := s.lastData(from); to > 0 {
			cut = true
			clearNonZero(s.b[from : from+int64(to)])
			if err := s.m.Sync(from, int64(to)); err != nil {
				return 0, false, fmt.Errorf("consumequeue: %s: clear torn tail: %w", q, err)
			}
		}
	}
	return end, cut, nil
}

// segmentsUpTo is how many leading segments a queue ending at offset end keeps: the
// segment holding end (if end is not its start) and all before it, but always the first.
func (q *Queue) segmentsUpTo(segs []*segment, end int64) int {
	if len(segs) == 0 {
		return 0
	}
	n := int((end-segs[0].base)/q.units) + 1
	if end == segs[0].base+int64(n-1)*q.units && n > 1 {
		n-- // end is exactly the start of segment n-1: drop it
	}
	return min(n, len(segs))
}

// lastData is lastNonZero(s.b[from:]), reading only the ranges of the file that may hold
// data (mmap.Mapped.DataRange): the holes of a sparse queue file read as zeros, and
// faulting them in one page at a time (the mapping has no readahead) made opening a store
// cost 12–16 ms per queue on a 2-vCPU VM for its 6 MB files (docs/benchmarks.md, Restart
// after a crash). When the file system cannot say, the whole rest is read.
func (s *segment) lastData(from int64) int {
	last := 0
	for off := from; off < int64(len(s.b)); {
		start, end, err := s.m.DataRange(off)
		if err != nil {
			if n := lastNonZero(s.b[off:]); n > 0 {
				return int(off-from) + n
			}
			return last
		}
		if start >= end {
			break
		}
		if n := lastNonZero(s.b[start:end]); n > 0 {
			last = int(start-from) + n
		}
		off = end
	}
	return last
}

// lastNonZero is the length of b up to and including its last non-zero byte.
func lastNonZero(b []byte) int {
	i := len(b)
	for i >= 8 && b[i-1]|b[i-2]|b[i-3]|b[i-4]|b[i-5]|b[i-6]|b[i-7]|b[i-8] == 0 {
		i -= 8
	}
	for i > 0 && b[i-1] == 0 {
		i--
	}
	return i
}

// clearNonZero zeroes b by writing only its non-zero 8-byte words (and bytes). A page
// that reads as zeros may be a hole of the sparse file, and writing into a hole needs a
// block (a SIGBUS on a full disk); a page with a non-zero byte has its block. So zeroing
// units never allocates, and never dirties pages that are zero already.
func clearNonZero(b []byte) {
	i := 0
	for ; i+8 <= len(b); i += 8 {
		if binary.NativeEndian.Uint64(b[i:]) != 0 {
			binary.NativeEndian.PutUint64(b[i:], 0)
		}
	}
	for ; i < len(b); i++ {
		if b[i] != 0 {
			b[i] = 0
		}
	}
}

// removeSegments unmaps and deletes segments (newest first) and syncs the directory.
func (q *Queue) removeSegments(segs []*segment) error {
	err := closeSegments(segs)
	for i := len(segs) - 1; i >= 0; i-- {
		if rerr := q.fs.Remove(segs[i].m.Path()); rerr != nil {
			err = errors.Join(err, rerr)
		}
	}
	if len(segs) > 0 {
		err = errors.Join(err, q.fs.SyncDir(q.dir))
	}
	if err != nil {
		return fmt.Errorf("consumequeue: %s: remove segments: %w", q, err)
	}
	return nil
}

// searchPhysical returns the first offset in [lo, hi) whose unit points at or after phy
// (hi if none). Units in the range must be in commit-log order. The caller holds w.
func (q *Queue) searchPhysical(lo, hi, phy int64) int64 {
	for lo < hi {
		mid := lo + (hi-lo)/2
		if decodeUnit(q.unitLocked(mid)).Offset >= phy {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// TruncateByPhysical removes every unit that points at or after commit-log offset phy
// (recovery: the commit log ends at phy, or the store re-dispatches from phy). Removed units
// are zeroed durably and emptied segments deleted; units below MinOffset are never
// removed, so the queue's start survives.
func (q *Queue) TruncateByPhysical(phy int64) error {
	q.w.Lock()
	defer q.w.Unlock()
	if q.w.closed {
		return ErrClosed
	}
	lo, hi := q.min.Load(), q.max.Load()
	k := q.searchPhysical(lo, hi, phy)
	if k >= hi {
		return nil
	}
	q.fl.Lock()
	defer q.fl.Unlock()

	q.seg.Lock()
	list := q.seg.list
	keep := q.segmentsUpTo(list, k)
	removed := list[keep:]
	q.seg.list = list[:keep:keep]
	var zs *segment
	if s := list[keep-1]; k < s.base+q.units {
		zs = s
		clearNonZero(s.b[(k-s.base)*UnitSize : (min(hi, s.base+q.units)-s.base)*UnitSize])
	}
	q.max.Store(k)
	q.seg.Unlock()

	q.fl.done = min(q.fl.done, k)
	q.w.hasLast, q.w.last = false, Unit{}
	if first := list[0].base; k > first {
		q.w.last, q.w.hasLast = decodeUnit(q.unitLocked(k-1)), true
	}
	var err error
	if zs != nil {
		from := (k - zs.base) * UnitSize
		err = zs.m.Sync(from, (min(hi, zs.base+q.units)-zs.base)*UnitSize-from)
	}
	if err != nil {
		err = fmt.Errorf("consumequeue: %s: truncate: %w", q, err)
	}
	return errors.Join(err, q.removeSegments(removed))
}

// DeleteBefore drops the start of the queue that points below commit-log offset phy (the
// commit log's new minimum after cleanup): it deletes the segments whose every unit points
// below phy, never the last one, and moves MinOffset to the first unit at or after phy
// (to MaxOffset if there is none). It returns how many files it deleted.
func (q *Queue) DeleteBefore(phy int64) (int, error) {
	q.w.Lock()
	defer q.w.Unlock()
	if q.w.closed {
		return 0, ErrClosed
	}
	list := q.seg.list
	if len(list) == 0 {
		return 0, nil
	}
	n := 0
	for n < len(list)-1 {
		last := decodeUnit(list[n].unit(list[n].base + q.units - 1))
		if !last.preBlank() && last.Offset >= phy {
			break
		}
		n++
	}
	hi := q.max.Load()
	lo := max(q.min.Load(), list[n].base)
	newMin := q.searchPhysical(lo, hi, phy)
	q.seg.Lock()
	q.seg.list = list[n:]
	q.min.Store(newMin)
	q.seg.Unlock()
	return n, q.removeSegments(list[:n])
}

// SetMinOffset makes an empty queue (MinOffset == MaxOffset) start at queue offset off ≥
// MaxOffset, as RocketMQ does for a queue whose files are gone while its offsets must go
// on: the segment holding off is created at once with pre-blank units before off, so the
// start survives a restart. It is ErrNotEmpty on a queue with readable units or when off
// would move the queue backwards.
func (q *Queue) SetMinOffset(off int64) error {
	q.w.Lock()
	defer q.w.Unlock()
	if q.w.closed {
		return ErrClosed
	}
	cur := q.max.Load()
	if q.min.Load() != cur || off < cur {
		return fmt.Errorf("%w: %s: set min offset %d with offsets [%d, %d)", ErrNotEmpty, q, off, q.min.Load(), cur)
	}
	if off == cur && len(q.seg.list) > 0 {
		return nil
	}
	q.fl.Lock()
	defer q.fl.Unlock()
	q.seg.Lock()
	old := q.seg.list
	q.seg.list = nil
	q.min.Store(off)
	q.max.Store(off)
	q.seg.Unlock()
	q.fl.done = off
	q.w.hasLast, q.w.last = false, Unit{}
	if err := q.removeSegments(old); err != nil {
		return err
	}
	s, err := q.createSegmentLocked(off/q.units*q.units, off)
	if err != nil {
		return err
	}
	if off > s.base {
		q.w.last, q.w.hasLast = decodeUnit(s.unit(off-1)), true
	}
	q.seg.Lock()
	q.seg.list = []*segment{s}
	q.seg.Unlock()
	return nil
}

// OffsetByPhysical returns the first queue offset in [MinOffset, MaxOffset) whose unit
// points at or after commit-log offset phy (MaxOffset if none): a binary search, since a
// queue's units are in commit-log order.
func (q *Queue) OffsetByPhysical(phy int64) int64 {
	q.w.Lock()
	defer q.w.Unlock()
	if q.w.closed {
		return q.max.Load()
	}
	return q.searchPhysical(q.min.Load(), q.max.Load(), phy)
}
