package commitlog

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/ferrymq/ferry/internal/mmap"
)

// queueKey identifies a topic-queue in the queue-offset table. Lookups build it with
// string(bytes) inside the index expression, which the compiler does not allocate for.
type queueKey struct {
	topic   string
	queueID int32
}

// queueNext is the next queue offset of one topic-queue. The table maps to pointers so
// the append path updates an entry without a map assignment (which would allocate the
// key string).
type queueNext struct{ next int64 }

// Log is the commit log. All methods are safe for concurrent use.
type Log struct {
	opts    Options
	fs      mmap.FS
	dir     string
	segSize int64
	hwLead  int64 // highWaterLead(segSize)
	log     zerolog.Logger

	// Published positions, readable without locks.
	wrote     atomic.Int64 // bytes below are complete records or fillers
	flushed   atomic.Int64 // bytes below are durable
	lastTS    atomic.Int64 // store timestamp of the last appended record, stored before wrote
	flushedTS atomic.Int64 // store timestamp of a record at or before the flushed offset
	lockedAt  atomic.Int64 // Clock UnixNano when the writer lock was taken, 0 when free
	closed    atomic.Bool
	segs      atomic.Pointer[segList]

	// closing is held shared by every mutating call for its whole duration and
	// exclusively by Close, so Close never unmaps under an Append, Recover or delete.
	closing sync.RWMutex

	mu struct {
		sync.Mutex
		cur    *segment // segment being appended to; nil before the first
		pos    int64    // write position (wrote + len(stage), owned by the writer)
		lastTS int64    // last store timestamp handed out
		// stage holds records encoded but not yet written to the current
		// segment: the bytes [wrote, pos). See stage.go.
		stage     []byte
		queues    map[queueKey]*queueNext
		damage    []Damage // ranges the last recovery quarantined
		recovered bool     // the write position is known
		created   bool     // Open created the log: its one segment is new and all zeros
		appended  bool     // an Append has happened (Recover is no longer allowed)
	}
	// listMu serialises changes of segs (copy on write).
	listMu sync.Mutex

	// flushMu serialises flushes.
	flushMu sync.Mutex
	// flushErr is the sticky Sync or write-out failure (see fail), nil while healthy.
	flushErr atomic.Pointer[error]
	gc       struct {
		sync.Mutex
		waiters []*waiter
		// want is the number of registered waiters at which a registration kicks the
		// flusher (0: every registration kicks); set while the flusher gathers a cohort.
		want int
	}
	gcKick     chan struct{}
	waiterPool sync.Pool

	alloc struct {
		sync.Mutex
		slot *allocSlot // the preallocated (or being preallocated) next segment
	}
	allocCh chan *allocSlot

	// hw is the high-water mark (highwater.go). Lock order: after mu and listMu.
	hw struct {
		sync.Mutex              // serialises writes of the file
		m          mmap.Mapped  // the mapped high-water file; nil without one
		mark       atomic.Int64 // the durable mark; -1 while unknown
		failing    atomic.Bool  // the service goroutine's last raise failed (logged once)
	}

	pending struct {
		sync.Mutex
		segs []pendingSegment // deleted segments still held by readers
	}

	stats struct {
		flushes      atomic.Int64 // flushTo calls that synced something
		flushNanos   atomic.Int64 // time spent in them
		groupCommits atomic.Int64 // group-commit rounds with waiters
		waiters      atomic.Int64 // waiters completed by them
	}

	stop chan struct{}
	wg   sync.WaitGroup
}

// Stats are counters for metrics and benchmarks.
type Stats struct {
	// Flushes is the number of flushes that synced something; FlushTime their total time.
	Flushes   int64
	FlushTime time.Duration
	// GroupCommits is the number of FlushSync rounds that completed waiters, and
	// GroupCommitWaiters the number of waiting appends they completed.
	GroupCommits       int64
	GroupCommitWaiters int64
}

// Stats returns the counters.
func (l *Log) Stats() Stats {
	return Stats{
		Flushes:            l.stats.flushes.Load(),
		FlushTime:          time.Duration(l.stats.flushNanos.Load()),
		GroupCommits:       l.stats.groupCommits.Load(),
		GroupCommitWaiters: l.stats.waiters.Load(),
	}
}

// Open opens the log in opts.Dir, mapping every existing segment. It checks that segment
// names are contiguous 20-digit offsets aligned to SegmentSize and that every file has
// exactly SegmentSize bytes (ErrLayout otherwise); a zero-length last file, left by a
// crash while it was being created, is removed, and any other shorter file is padded with
// zeros back to SegmentSize (the bytes it lost are then a torn tail or damage, which
// recovery handles). Open does not scan records: on a log with
// segments, call Recover (or RecoverTail) before the first Append. In an empty directory
// Open creates (and pre-faults) the first segment and the log is ready for appends at
// offset 0; Recover may still be called and returns 0. Open also maps the high-water file
// (Options.HighWaterPath, when set: created when missing; see highwater.go).
func Open(opts Options) (*Log, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	l := &Log{
		opts:    opts,
		fs:      opts.FS,
		dir:     opts.Dir,
		segSize: opts.SegmentSize,
		hwLead:  highWaterLead(opts.SegmentSize),
		log:     opts.Logger.With().Str("component", "commitlog").Logger(),
		gcKick:  make(chan struct{}, 1),
		allocCh: make(chan *allocSlot, 1),
		stop:    make(chan struct{}),
	}
	l.mu.queues = make(map[queueKey]*queueNext)
	if err := l.fs.MkdirAll(l.dir); err != nil {
		return nil, fmt.Errorf("commitlog: open: %w", err)
	}
	segs, err := l.load()
	if err != nil {
		for _, s := range segs {
			err = errors.Join(err, s.release())
		}
		return nil, err
	}
	if len(segs) == 0 { // a new log: its first segment, pre-faulted like every later one
		seg, err := l.createSegment(0)
		if err != nil {
			return nil, err
		}
		if opts.PrefaultSegments {
			prefault(seg.data, new(atomic.Bool), nil)
		}
		segs = append(segs, seg)
		l.mu.cur = seg
		l.mu.recovered = true
		l.mu.created = true
	}
	if err := l.openHighWater(l.mu.created); err != nil {
		for _, s := range segs {
			err = errors.Join(err, s.release())
		}
		if l.hw.m != nil {
			err = errors.Join(err, l.hw.m.Close())
		}
		return nil, err
	}
	l.segs.Store(&segList{segs: segs})
	if l.mu.recovered {
		l.preallocate(l.segSize)
	} else {
		base := segs[0].start
		l.mu.pos = base
		l.wrote.Store(base)
		l.flushed.Store(base)
	}
	if l.opts.FlushMode == FlushSync {
		l.goTracked(l.groupCommitLoop)
	} else {
		l.goTracked(l.asyncFlushLoop)
	}
	l.goTracked(l.serviceLoop)
	return l, nil
}

// load maps the existing segments in order.
func (l *Log) load() ([]*segment, error) {
	names, err := l.fs.ReadDir(l.dir)
	if err != nil {
		return nil, fmt.Errorf("commitlog: open: %w", err)
	}
	type entry struct {
		name  string
		start int64
	}
	var entries []entry // sorted: names have a fixed width
	for _, name := range names {
		start, ok := parseSegmentName(name)
		if !ok {
			l.log.Warn().Str("file", name).Msg("ignoring a file that is not a segment")
			continue
		}
		entries = append(entries, entry{name, start})
	}
	var segs []*segment
	for i, e := range entries {
		name, start := e.name, e.start
		path := filepath.Join(l.dir, name)
		if start%l.segSize != 0 {
			return segs, fmt.Errorf("%w: segment %s is not aligned to the segment size %d", ErrLayout, name, l.segSize)
		}
		if len(segs) > 0 && start != segs[len(segs)-1].end {
			return segs, fmt.Errorf("%w: segment %s follows %s: a segment is missing",
				ErrLayout, name, segs[len(segs)-1].name)
		}
		size, err := l.fs.Size(path)
		if err != nil {
			return segs, fmt.Errorf("commitlog: open: %w", err)
		}
		if size == 0 && i == len(entries)-1 {
			l.log.Warn().Str("segment", name).Msg("removing an empty last segment left by a crash")
			if err := l.fs.Remove(path); err != nil {
				return segs, fmt.Errorf("commitlog: open: %w", err)
			}
			break
		}
		if size < l.segSize {
			// A short segment (a copy cut off, a file system that lost its tail) lost
			// bytes like any other damage: pad it back to size with zeros and let
			// recovery decide. The last data segment is a torn tail whether or not the
			// next one was preallocated after it (full size, zeros): recovery keeps
			// every whole record and drops the empty successor. Zeros before the
			// durable offset are damaged records, quarantined where recovery or a
			// scrub meets them and never served.
			l.log.Warn().Str("segment", name).Int64("bytes", size).Int64("want", l.segSize).
				Msg("segment is short: padding it with zeros; recovery keeps its whole records")
			if err := l.fs.Extend(path, l.segSize); err != nil {
				return segs, fmt.Errorf("commitlog: open: %w", err)
			}
			size = l.segSize
		}
		if size != l.segSize {
			return segs, fmt.Errorf("%w: segment %s has %d bytes, want %d", ErrLayout, name, size, l.segSize)
		}
		m, err := l.fs.OpenMapped(path, l.segSize, false)
		if err != nil {
			return segs, fmt.Errorf("commitlog: open: %w", err)
		}
		segs = append(segs, newSegment(start, m, &l.log))
	}
	return segs, nil
}

// goTracked runs fn on a goroutine that Close stops (by closing the stop channel) and
// waits for.
func (l *Log) goTracked(fn func(stop <-chan struct{})) {
	l.wg.Go(func() { fn(l.stop) })
}

// Close stops the goroutines, flushes everything, unmaps the segments and returns every
// Sync and unmap error. Views still held keep their segment mapped until released (the
// unmap error is then only logged). Close is idempotent.
func (l *Log) Close() error {
	l.closing.Lock()
	defer l.closing.Unlock()
	if l.closed.Load() {
		return nil
	}
	l.mu.Lock()
	l.closed.Store(true)
	if l.mu.cur != nil {
		l.closeWindowLocked(l.mu.cur)
	}
	l.mu.Unlock()
	close(l.stop)
	l.wg.Wait()

	var errs []error
	if err := l.discardPreallocated(); err != nil {
		errs = append(errs, err)
	}
	if err := l.flushAll(); err != nil {
		errs = append(errs, err)
	}
	l.listMu.Lock()
	list := l.segs.Swap(&segList{})
	l.listMu.Unlock()
	for _, s := range list.segs {
		if err := s.release(); err != nil {
			errs = append(errs, err)
		}
	}
	if l.hw.m != nil {
		l.hw.Lock()
		if err := l.hw.m.Close(); err != nil {
			errs = append(errs, fmt.Errorf("commitlog: close high-water file: %w", err))
		}
		l.hw.Unlock()
	}
	return errors.Join(errs...)
}

// MinOffset is the first offset still stored: the start of the oldest segment (the write
// position when there is none).
func (l *Log) MinOffset() int64 {
	if first := l.segs.Load().first(); first >= 0 {
		return first
	}
	return l.wrote.Load()
}

// MaxOffset is the write position: every byte below it is a complete record or filler.
func (l *Log) MaxOffset() int64 { return l.wrote.Load() }

// FlushedOffset is the durable prefix: every byte below it has been synced.
func (l *Log) FlushedOffset() int64 { return l.flushed.Load() }

// FlushedStoreTimestamp is the store timestamp of a record at or before FlushedOffset
// (Unix ms; 0 when nothing was flushed). It never runs ahead of the flushed data, so it
// may be written to the checkpoint as physicMsgTimestamp.
func (l *Log) FlushedStoreTimestamp() int64 { return l.flushedTS.Load() }

// SegmentSize returns the configured segment size.
func (l *Log) SegmentSize() int64 { return l.segSize }

// BusyFor reports how long the current Append has held the writer lock (0 when free):
// the store rejects sends with OS_PAGECACHE_BUSY when this exceeds its limit.
func (l *Log) BusyFor() time.Duration {
	t := l.lockedAt.Load()
	if t == 0 {
		return 0
	}
	return max(time.Duration(l.opts.Clock().UnixNano()-t), 0)
}

// SetQueueOffset sets the next queue offset of a topic-queue (the store rebuilds the
// table from the consume queues at startup).
func (l *Log) SetQueueOffset(topic string, queueID int32, next int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if q := l.mu.queues[queueKey{topic, queueID}]; q != nil {
		q.next = next
		return
	}
	l.mu.queues[queueKey{topic, queueID}] = &queueNext{next: next}
}

// QueueOffset returns the next queue offset of a topic-queue (0 when unknown).
func (l *Log) QueueOffset(topic string, queueID int32) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if q := l.mu.queues[queueKey{topic, queueID}]; q != nil {
		return q.next
	}
	return 0
}

// RemoveTopic forgets the queue offsets of every queue of topic.
func (l *Log) RemoveTopic(topic string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for k := range l.mu.queues {
		if k.topic == topic {
			delete(l.mu.queues, k)
		}
	}
}

// RangeQueueOffsets calls fn for every topic-queue in the table (in no particular order)
// until fn returns false. fn must not call back into the Log's queue-offset methods.
func (l *Log) RangeQueueOffsets(fn func(topic string, queueID int32, next int64) bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for k, q := range l.mu.queues {
		if !fn(k.topic, k.queueID, q.next) {
			return
		}
	}
}
