package commitlog

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/ferrymq/ferry/internal/mmap"
)

// Segment creation and pre-faulting.
//
// A log costs memory and disk in proportion to its data, not to its segment size:
//
//   - The next segment is created (its blocks reserved with fallocate) by the service
//     goroutine only once this process has appended and the write position has passed
//     the middle of the segment before it; a writer that gets there first creates it
//     itself, as it does when creation failed. An idle log, new or recovered, holds one
//     segment and no spare.
//   - Once appends begin, the service goroutine keeps the durable high-water mark
//     highWaterLead ahead of the write position (highwater.go), so that writers rarely
//     sync the high-water file themselves.
//   - With Options.PrefaultSegments, the service goroutine keeps the Options.PrefaultAhead
//     bytes after the write position pre-faulted, and the same amount at the head of a
//     segment it creates, so the page cache is allocated and zero-filled there rather
//     than in page faults under the writer lock (warmRange). It polls the write position
//     every warmPollBusy while appends move it, backing off to warmPollIdle when they
//     stop; nothing is pre-faulted before the first append of the process. Only real
//     files are pre-faulted (mmap.OSFS): other file systems have no page faults to save,
//     and reading Go memory the writer writes would be a data race.
//
// Before, Open pre-faulted the whole first segment and every later one was created and
// pre-faulted as soon as the one before it was started: an empty log with 1 GiB segments
// took 2 GiB of disk, ~2 GiB of resident memory and ~2 s to open (docs/benchmarks.md,
// Idle footprint).

// Polling periods of the service goroutine's pre-faulting (see above). 5 ms keeps a
// 32 MiB lead ahead of a writer appending 6 GB/s.
const (
	warmPollBusy = 5 * time.Millisecond
	warmPollIdle = 100 * time.Millisecond
)

// Slot states: a slot is created by whichever of the service goroutine (queued →
// creating) and the writer (queued → claimed) moves it first.
const (
	slotQueued int32 = iota
	slotCreating
	slotClaimed
)

// allocSlot is one segment creation handed to the service goroutine. When the service
// goroutine creates it, seg and err are set before done is closed; when the writer claims
// it, done is never closed and the writer creates the segment itself.
type allocSlot struct {
	start int64
	done  chan struct{}
	seg   *segment
	err   error
	state atomic.Int32
	// taken tells the service goroutine to stop pre-faulting: the writer needs the segment.
	taken atomic.Bool
}

// pendingSegment is a deleted segment still held by readers.
type pendingSegment struct {
	seg   *segment
	since time.Time
}

// obtainSegment returns the segment starting at start and makes it the last one of the
// list, taking the preallocated one when it is ready (waiting for it when it is being
// created) and creating it otherwise. It then asks for the one after it. Called with mu
// held.
func (l *Log) obtainSegment(start int64) (*segment, error) {
	if s := l.segs.Load().find(start, l.segSize); s != nil {
		return s, nil
	}
	var seg *segment
	if s := l.takeSlot(start); s != nil && !s.state.CompareAndSwap(slotQueued, slotClaimed) {
		s.taken.Store(true)
		<-s.done
		seg = s.seg
		if s.err != nil {
			l.log.Warn().Err(s.err).Int64("start", start).Msg("segment preallocation failed, retrying")
		}
	}
	if seg == nil {
		var err error
		if seg, err = l.createSegment(start); err != nil {
			return nil, err
		}
	}
	l.listMu.Lock()
	old := l.segs.Load()
	if n := len(old.segs); n > 0 && old.segs[n-1].end != start {
		l.listMu.Unlock()
		err := fmt.Errorf("%w: new segment %s does not follow %s", ErrLayout, seg.name, old.segs[n-1].name)
		return nil, errors.Join(err, seg.release())
	}
	segs := make([]*segment, len(old.segs), len(old.segs)+1)
	copy(segs, old.segs)
	l.segs.Store(&segList{segs: append(segs, seg)})
	l.listMu.Unlock()
	l.preallocate(start + l.segSize)
	return seg, nil
}

// takeSlot removes the preallocation slot and returns it when it is for start; a slot
// for another start is discarded.
func (l *Log) takeSlot(start int64) *allocSlot {
	l.alloc.Lock()
	s := l.alloc.slot
	l.alloc.slot = nil
	l.alloc.Unlock()
	if s != nil && s.start != start {
		if !s.state.CompareAndSwap(slotQueued, slotClaimed) { // created, or being created
			s.taken.Store(true)
			<-s.done
			if err := l.dropUnused(s); err != nil {
				l.log.Warn().Err(err).Msg("dropping a stale preallocated segment")
			}
		}
		return nil
	}
	return s
}

// preallocate asks the service goroutine to create the segment starting at start when
// the write position gets near it, unless a creation is already pending.
func (l *Log) preallocate(start int64) {
	l.alloc.Lock()
	defer l.alloc.Unlock()
	if l.alloc.slot != nil {
		return
	}
	s := &allocSlot{start: start, done: make(chan struct{})}
	select {
	case l.allocCh <- s:
		l.alloc.slot = s
	default: // cannot happen: at most one slot exists at a time
	}
}

// discardPreallocated drops a preallocated segment that was never used (at Close: it lies
// beyond the write position).
func (l *Log) discardPreallocated() error {
	l.alloc.Lock()
	s := l.alloc.slot
	l.alloc.slot = nil
	l.alloc.Unlock()
	if s == nil || s.state.Load() != slotCreating {
		return nil // never created
	}
	select {
	case <-s.done:
		return l.dropUnused(s)
	default: // cannot happen: the service goroutine has stopped, and it finishes a creation it starts
		return nil
	}
}

// dropUnused unmaps and removes the file of a completed but unused slot.
func (l *Log) dropUnused(s *allocSlot) error {
	if s.seg == nil {
		return nil
	}
	err := s.seg.release()
	if rerr := l.fs.Remove(filepath.Join(l.dir, s.seg.name)); rerr != nil {
		err = errors.Join(err, fmt.Errorf("commitlog: remove unused segment: %w", rerr))
	}
	return err
}

// createSegment creates, maps and durably links the segment file starting at start. An
// error from a full disk matches mmap.ErrNoSpace.
func (l *Log) createSegment(start int64) (*segment, error) {
	name := segmentName(start)
	path := filepath.Join(l.dir, name)
	existed, err := l.fs.Exists(path)
	if err != nil {
		return nil, fmt.Errorf("commitlog: create segment %s: %w", name, err)
	}
	m, err := l.fs.OpenMapped(path, l.segSize, true)
	if err != nil {
		return nil, fmt.Errorf("commitlog: create segment %s: %w", name, err)
	}
	if existed {
		// A stale file beyond the log's end: its old records must never be read back.
		l.log.Warn().Str("segment", name).Msg("zeroing a stale segment file")
		clear(m.Bytes())
		if err := m.Sync(0, m.Size()); err != nil {
			return nil, errors.Join(fmt.Errorf("commitlog: zero stale segment %s: %w", name, err), m.Close())
		}
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		err = fmt.Errorf("commitlog: create segment %s: %w", name, err)
		return nil, errors.Join(err, m.Close(), l.fs.Remove(path))
	}
	return newSegment(start, m, &l.log), nil
}

// serviceLoop creates the next segment and pre-faults ahead of the write position (see
// the top of this file), and force-unmaps deleted segments whose readers outlived
// DestroyTimeout.
func (l *Log) serviceLoop(stop <-chan struct{}) {
	tick := time.NewTicker(min(max(l.opts.DestroyTimeout/4, 10*time.Millisecond), time.Second))
	defer tick.Stop()
	w := &warmer{l: l, stop: stop, touch: l.opts.PrefaultSegments && pagesFault(l.fs), wait: warmPollIdle}
	poll := time.NewTimer(w.wait)
	defer poll.Stop()
	for {
		select {
		case <-stop:
			return
		case s := <-l.allocCh:
			w.queued = s
		case <-poll.C:
			poll.Reset(w.step())
		case now := <-tick.C:
			l.destroyExpired(now)
		}
	}
}

// warmer is the service goroutine's state for creating the next segment and
// pre-faulting ahead of the write position. Only that goroutine uses it.
type warmer struct {
	l     *Log
	stop  <-chan struct{}
	touch bool // pre-fault (PrefaultSegments, on real files)

	appended bool          // the log has been appended to since Open
	queued   *allocSlot    // received from allocCh, not yet created
	last     int64         // write position at the previous step
	warmed   int64         // bytes below are pre-faulted (or were written)
	wait     time.Duration // until the next step
}

// step raises the high-water mark ahead of the write position, creates the queued
// segment when its time has come and pre-faults up to PrefaultAhead bytes past the write
// position, and returns the time until the next step.
func (w *warmer) step() time.Duration {
	l := w.l
	if !w.appended {
		// TryLock: never wait behind a long recovery; a busy writer means another step.
		if !l.mu.TryLock() {
			return warmPollBusy
		}
		w.appended = l.mu.appended
		l.mu.Unlock()
		if !w.appended {
			return warmPollIdle
		}
		w.last = -1
	}
	wrote := l.wrote.Load()
	l.raiseAhead(wrote)
	if s := w.queued; s != nil && wrote >= s.start-l.segSize/2 {
		w.queued = nil
		w.create(s)
	}
	if w.touch {
		w.warmAhead(wrote, wrote+l.opts.PrefaultAhead)
	}
	if wrote != w.last {
		w.wait = warmPollBusy
	} else {
		w.wait = min(2*w.wait, warmPollIdle)
	}
	w.last = wrote
	return w.wait
}

// create creates the segment of s unless the writer has claimed it, and pre-faults its
// first PrefaultAhead bytes until the writer takes it.
func (w *warmer) create(s *allocSlot) {
	if !s.state.CompareAndSwap(slotQueued, slotCreating) {
		return // claimed: the writer creates it
	}
	l := w.l
	s.seg, s.err = l.createSegment(s.start)
	if s.err == nil && w.touch {
		sum, err := warmRange(s.seg, 0, min(l.opts.PrefaultAhead, l.segSize), &s.taken, w.stop)
		switch {
		case err != nil:
			l.log.Debug().Err(err).Str("segment", s.seg.name).Msg("not pre-faulted")
		case sum != 0:
			l.log.Warn().Str("segment", s.seg.name).Msg("a new segment is not zero-filled")
		}
	}
	close(s.done)
}

// warmAhead pre-faults the pages of [from, to) not pre-faulted yet, in the segments of
// the log (the head of one not in the list yet was pre-faulted by create).
func (w *warmer) warmAhead(from, to int64) {
	l := w.l
	from = max(from, w.warmed) / PageSize * PageSize
	for from < to {
		seg := l.segs.Load().find(from, l.segSize)
		if seg == nil || !seg.acquire() {
			break
		}
		end := min(to, seg.end)
		if _, err := warmRange(seg, from-seg.start, end-from, nil, w.stop); err != nil {
			l.log.Debug().Err(err).Str("segment", seg.name).Msg("not pre-faulted")
		}
		if err := seg.release(); err != nil {
			l.log.Error().Err(err).Msg("unmap after last reader")
		}
		from = end
	}
	w.warmed = max(w.warmed, from)
}

// warmRange pre-faults the n bytes at offset rel of seg (see touchPages) through a
// window mapped for the purpose and closed again, and returns the OR of the bytes read.
// Through a window the pages are read with the default read-around (the segment's own
// mapping has random-access advice while it is appended to, which faults page by page),
// and they stay in the page cache without staying mapped: warming costs the process no
// resident memory, and the writer's window maps the pages without allocating them.
func warmRange(seg *segment, rel, n int64, taken *atomic.Bool, stop <-chan struct{}) (byte, error) {
	if n <= 0 {
		return 0, nil
	}
	win, err := seg.m.Window(rel, n)
	if err != nil {
		return 0, err
	}
	sum := touchPages(win.Bytes()[rel-win.Offset():], taken, stop)
	return sum, win.Close()
}

// pagesFault reports whether fsys maps real files, whose pages fault on first use.
func pagesFault(fsys mmap.FS) bool {
	switch fsys.(type) {
	case mmap.OSFS, *mmap.OSFS:
		return true
	}
	return false
}

// destroyExpired forgets pending segments whose readers are gone and force-unmaps the
// ones held longer than DestroyTimeout.
func (l *Log) destroyExpired(now time.Time) {
	l.pending.Lock()
	defer l.pending.Unlock()
	keep := l.pending.segs[:0]
	for _, p := range l.pending.segs {
		switch {
		case p.seg.refs.Load() <= 0:
		case now.Sub(p.since) >= l.opts.DestroyTimeout:
			l.log.Warn().Str("segment", p.seg.name).Msg("unmapping a deleted segment still held by readers")
			if err := p.seg.forceUnmap(); err != nil {
				l.log.Error().Err(err).Msg("force unmap")
			}
		default:
			keep = append(keep, p)
		}
	}
	clear(l.pending.segs[len(keep):])
	l.pending.segs = keep
}

// prefault is what Open calls on the first segment of a new log. It pre-faults nothing:
// a new log starts cold and the service goroutine pre-faults ahead of the write position
// once appends begin (see the top of this file), so that an idle log holds no memory for
// its segment. It returns 0, the OR of the no bytes it read.
func prefault([]byte, *atomic.Bool, <-chan struct{}) byte { return 0 }

// touchPages reads one byte of every page of data, so the kernel allocates and
// zero-fills its page cache here, on the service goroutine, rather than in page faults
// under the writer lock. Reading (unlike RocketMQ's warm-up, which writes zeros) leaves
// the pages clean: nothing extra is written to disk. It stops early when taken (may be
// nil) is set or stop is closed. It returns the OR of the bytes read (0 for a fresh
// file; using it keeps the loads alive).
func touchPages(data []byte, taken *atomic.Bool, stop <-chan struct{}) byte {
	const pagesPerCheck = 256
	var sum byte
	for i := 0; i < len(data); i += PageSize {
		if i%(pagesPerCheck*PageSize) == 0 {
			if taken != nil && taken.Load() {
				break
			}
			select {
			case <-stop:
				return sum
			default:
			}
		}
		sum |= data[i]
	}
	return sum
}
