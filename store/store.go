// Package store is Ferry's MessageStore: it appends messages to the commit log, builds the
// consume queues and the key index from it on one dispatcher goroutine, serves reads as
// zero-copy views, recovers after clean and unclean shutdowns, deletes expired data and
// refuses writes when the disk is full.
//
// Durability: every acknowledged append is in the commit log; with commitlog.FlushSync it
// is also durable before the acknowledgement. Consume queues and the index are derived
// data: they are flushed every CheckpointInterval, and the checkpoint records the physical
// offset below which they are durable (dispatchedOffset) together with the commit log's
// flushed offset. After any crash, recovery validates the commit log from
// min(flushedOffset, dispatchedOffset), truncates consume queues and index entries at or
// beyond dispatchedOffset, and re-dispatches from there, so both always come back complete
// and consistent with the log — including the index, which RocketMQ can lose on kill -9.
//
// Visibility: with FlushSync the dispatcher only dispatches what is durable, so a consumer
// never sees a message that a power loss could take back; with FlushAsync it dispatches
// everything written.
package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/ferrymq/ferry/commitlog"
	"github.com/ferrymq/ferry/consumequeue"
	"github.com/ferrymq/ferry/index"
	"github.com/ferrymq/ferry/internal/logging"
	"github.com/ferrymq/ferry/internal/mmap"
)

// Store is the message store the broker uses.
type Store struct {
	opts  Options
	log   zerolog.Logger
	cl    *commitlog.Log
	cqs   *consumequeue.Store
	idx   *index.Index // nil when the index is disabled
	guard diskGuard

	dispatched   atomic.Int64    // every record below this physical offset is dispatched
	stallFloor   atomic.Int64    // derived files are complete below this offset (MaxInt64: no stall)
	damaged      atomic.Int64    // damaged log ranges quarantined by recovery
	badReads     atomic.Int64    // records a read found damaged and did not serve
	badLog       logging.Sampler // the log line for bad reads
	scrubs       atomic.Int64    // background scrubs finished
	noReadChecks bool            // benchmarks only: skip the pull path's record check to measure its cost
	scrubDamage  atomic.Int64    // problems background scrubs found
	dispatchMu   sync.Mutex      // held while dispatching and while deleting a topic
	disp         dispatcher      // guarded by dispatchMu
	topicGen     atomic.Uint64
	kick         chan struct{}
	progress     struct {
		sync.Mutex
		ch    chan struct{} // closed and replaced when dispatched advances and taken is set
		taken bool          // a WaitDispatched caller holds ch
	}

	results sync.Pool // of *GetResult

	stop     chan struct{}
	wg       sync.WaitGroup
	started  atomic.Bool
	closed   atomic.Bool
	shutdown sync.Once
	cpMu     sync.Mutex                       // serialises checkpoint and queue-table writes
	tombMu   sync.Mutex                       // serialises tombstone updates
	tombs    atomic.Pointer[map[string]int64] // deleted topics (queue table); copy on write
	tableGen struct {                         // the consume-queue generation the queue table records; cpMu
		gen     uint64
		written bool
	}
	ret    retention    // per-topic retention state (retention.go); the cleaner goroutine
	comp   compaction   // compacted topics' state (compaction.go)
	unlock func() error // releases the data directory's lock (Options.lockPath)
	phases openPhases   // how long Open's steps took, for the "store recovered" line
}

// openPhases are the durations of Open's steps, logged with "store recovered" so a slow
// start says where its time went.
type openPhases struct {
	commitLog, queues, index time.Duration // opening the files (consume queues: loading and cutting torn tails)
	scan                     time.Duration // commitlog.RecoverWith: scanning the log and zeroing its tail
	dispatch                 time.Duration // re-dispatching records into consume queues and index
}

// Open opens (creating if needed) the store in opts.Dir and recovers it: after Open
// returns, the commit log ends at its last valid record and consume queues and the index
// cover every record in it. Start launches the background services.
func Open(opts Options) (*Store, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	s := &Store{
		opts: opts,
		log:  opts.Logger.With().Str("component", "store").Logger(),
		kick: make(chan struct{}, 1),
		stop: make(chan struct{}),
	}
	s.progress.ch = make(chan struct{})
	s.stallFloor.Store(math.MaxInt64)
	s.disp.indexStall = -1
	s.guard = diskGuard{fs: opts.FS, dir: opts.Dir, fullRatio: opts.DiskFullRatio,
		minFree: opts.diskReserve(), log: s.log}
	if err := opts.FS.MkdirAll(opts.Dir); err != nil {
		return nil, fmt.Errorf("store: create %s: %w", opts.Dir, err)
	}
	// One process per store: a second one would take the live store for a crashed one and
	// recover (truncate, delete) under the first one's feet.
	unlock, err := opts.FS.Lock(opts.lockPath())
	if err != nil {
		if errors.Is(err, mmap.ErrLocked) {
			return nil, fmt.Errorf("%w (%s): %w", ErrInUse, opts.Dir, err)
		}
		return nil, fmt.Errorf("store: lock data directory %s: %w", opts.Dir, err)
	}
	s.unlock = unlock
	if err := s.openParts(); err != nil {
		return nil, errors.Join(err, unlock())
	}
	return s, nil
}

// openParts opens and recovers the commit log, the consume queues and the index, and
// writes the abort file; on error everything it opened is closed again.
func (s *Store) openParts() error {
	opts := s.opts
	for _, d := range []string{opts.consumeQueueDir(), opts.indexDir()} {
		if err := opts.FS.MkdirAll(d); err != nil {
			return fmt.Errorf("store: create %s: %w", d, err)
		}
	}
	var err error
	t := time.Now()
	if s.cl, err = commitlog.Open(opts.commitLogOptions()); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	s.phases.commitLog, t = time.Since(t), time.Now()
	if s.cqs, err = consumequeue.Open(opts.consumeQueueOptions()); err != nil {
		return errors.Join(fmt.Errorf("store: %w", err), s.cl.Close())
	}
	s.phases.queues, t = time.Since(t), time.Now()
	if opts.IndexEnabled {
		io := index.DefaultOptions()
		io.Dir, io.FS, io.SlotNum, io.MaxEntries, io.Clock = opts.indexDir(), opts.FS, opts.IndexSlots, opts.IndexEntries, opts.Clock
		if s.idx, err = index.Open(io); err != nil {
			return errors.Join(fmt.Errorf("store: %w", err), s.cqs.Close(), s.cl.Close())
		}
	}
	s.phases.index = time.Since(t)
	if err := s.recover(); err != nil {
		return errors.Join(err, s.closeParts())
	}
	if err := s.loadRetention(); err != nil {
		return errors.Join(err, s.closeParts())
	}
	if err := s.loadCompaction(); err != nil {
		return errors.Join(err, s.closeParts())
	}
	if err := opts.FS.WriteFileAtomic(opts.abortPath(), nil); err != nil {
		return errors.Join(fmt.Errorf("store: create abort file: %w", err), s.closeParts())
	}
	s.guard.check()
	return nil
}

// Start launches the dispatcher, the checkpointer, the disk guard and the cleaner.
func (s *Store) Start() {
	if !s.started.CompareAndSwap(false, true) {
		return
	}
	s.goTracked(s.dispatchLoop)
	s.goTracked(s.checkpointLoop)
	s.goTracked(func() { s.every(s.opts.DiskCheckInterval, s.guard.check) })
	s.goTracked(s.cleanLoop)
	if s.opts.ScrubInterval > 0 {
		s.goTracked(s.scrubLoop)
	}
}

// goTracked runs fn on a goroutine that Shutdown waits for.
func (s *Store) goTracked(fn func()) {
	s.wg.Go(fn)
}

// Shutdown stops the services, lets the dispatcher catch up, flushes everything, writes the
// checkpoint and removes the abort file, so the next Open is a clean start. It returns
// every flush and close error. It is idempotent.
func (s *Store) Shutdown(ctx context.Context) error {
	var errs []error
	s.shutdown.Do(func() {
		s.closed.Store(true)
		close(s.stop)
		s.wg.Wait()
		// Dispatch what the background loop had not reached yet.
		if err := s.cl.Flush(); err != nil {
			errs = append(errs, fmt.Errorf("store: flush commit log: %w", err))
		}
		caughtUp := true
		if err := s.dispatchAvailable(ctx); err != nil {
			errs = append(errs, err)
			caughtUp = false
		}
		if err := s.writeCheckpoint(); err != nil {
			errs = append(errs, err)
			caughtUp = false
		}
		if err := s.closeParts(); err != nil {
			errs = append(errs, err)
			caughtUp = false
		}
		if caughtUp {
			if err := s.opts.FS.Remove(s.opts.abortPath()); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, fmt.Errorf("store: remove abort file: %w", err))
			} else if err := s.opts.FS.SyncDir(s.opts.Dir); err != nil {
				errs = append(errs, fmt.Errorf("store: %w", err))
			}
		}
		errs = append(errs, s.unlock())
	})
	return errors.Join(errs...)
}

// closeParts closes the index, consume queues and commit log.
func (s *Store) closeParts() error {
	var errs []error
	if s.idx != nil {
		errs = append(errs, s.idx.Close())
	}
	errs = append(errs, s.cqs.Close(), s.cl.Close())
	return errors.Join(errs...)
}

// now is the store clock in Unix milliseconds.
func (s *Store) now() time.Time { return s.opts.Clock() }

// CommitLog exposes the commit log for read-only diagnostics (offsets, segments).
func (s *Store) CommitLog() *commitlog.Log { return s.cl }

// DispatchedOffset is the physical offset below which every record is in the consume
// queues and the index.
func (s *Store) DispatchedOffset() int64 { return s.dispatched.Load() }

// WaitDispatched blocks until every record below phy is dispatched or ctx ends.
func (s *Store) WaitDispatched(ctx context.Context, phy int64) error {
	for {
		s.progress.Lock()
		ch := s.progress.ch
		s.progress.taken = true
		s.progress.Unlock()
		if s.dispatched.Load() >= phy {
			return nil
		}
		s.kickDispatch()
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("store: waiting for dispatch to %d (at %d): %w", phy, s.dispatched.Load(), ctx.Err())
		}
	}
}

// Damage counts what the store found damaged.
type Damage struct {
	// QuarantinedRanges is how many damaged commit-log ranges recovery set aside (their
	// records lost, the log going on after them) since Open.
	QuarantinedRanges int64
	// BadReads is how many records pulls, queries and views found damaged (wrong size
	// or magic, body CRC mismatch) and did not serve since Open.
	BadReads int64
	// Scrubs is how many background scrubs finished; ScrubFindings the damaged ranges,
	// bad and missing units they reported, summed.
	Scrubs, ScrubFindings int64
}

// Damage returns the damage counters.
func (s *Store) Damage() Damage {
	return Damage{QuarantinedRanges: s.damaged.Load(), BadReads: s.badReads.Load(),
		Scrubs: s.scrubs.Load(), ScrubFindings: s.scrubDamage.Load()}
}

// DiskFull reports whether writes are currently refused for lack of space.
func (s *Store) DiskFull() bool { return s.guard.full.Load() }
