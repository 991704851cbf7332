package commitlog

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"time"
)

// allocSlot is one segment creation handed to the service goroutine. seg and err are
// set before done is closed.
type allocSlot struct {
	start int64
	done  chan struct{}
	seg   *segment
	err   error
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
	if s := l.takeSlot(start); s != nil {
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
		<-s.done
		if err := l.dropUnused(s); err != nil {
			l.log.Warn().Err(err).Msg("dropping a stale preallocated segment")
		}
		return nil
	}
	return s
}

// preallocate asks the service goroutine to create the segment starting at start, unless
// a creation is already pending.
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
	if s == nil {
		return nil
	}
	select {
	case <-s.done:
		return l.dropUnused(s)
	default: // never picked up: the service goroutine has stopped
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

// serviceLoop creates preallocated segments and force-unmaps deleted segments whose
// readers outlived DestroyTimeout.
func (l *Log) serviceLoop(stop <-chan struct{}) {
	tick := time.NewTicker(min(max(l.opts.DestroyTimeout/4, 10*time.Millisecond), time.Second))
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case s := <-l.allocCh:
			s.seg, s.err = l.createSegment(s.start)
			if s.err == nil && l.opts.PrefaultSegments && prefault(s.seg.data, &s.taken, stop) != 0 {
				l.log.Warn().Str("segment", s.seg.name).Msg("a new segment is not zero-filled")
			}
			close(s.done)
		case now := <-tick.C:
			l.destroyExpired(now)
		}
	}
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

// prefault reads one byte of every page of a new segment, so the kernel allocates and
// zero-fills its page cache here, on the service goroutine, rather than in page faults
// under the writer lock. Reading (unlike RocketMQ's warm-up, which writes zeros) leaves
// the pages clean: nothing extra is written to disk. It stops early when the writer
// takes the segment or the log closes; until then nobody else touches the segment. It
// returns the OR of the bytes read (0 for a fresh file; using it keeps the loads alive).
func prefault(data []byte, taken *atomic.Bool, stop <-chan struct{}) byte {
	const pagesPerCheck = 256
	var sum byte
	for i := 0; i < len(data); i += PageSize {
		if i%(pagesPerCheck*PageSize) == 0 {
			if taken.Load() {
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
