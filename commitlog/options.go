package commitlog

import (
	"errors"
	"fmt"
	"math"
	"net/netip"
	"path/filepath"
	"time"

	"github.com/rs/zerolog"

	"github.com/ferrymq/ferry/internal/mmap"
)

// FlushMode selects when appended bytes are made durable.
type FlushMode uint8

const (
	// FlushAsync flushes in the background (RocketMQ ASYNC_FLUSH): Append returns once
	// the records are in the mapped segment (the page cache).
	FlushAsync FlushMode = iota
	// FlushSync is group commit (RocketMQ SYNC_FLUSH): an Append with wait=true returns
	// once its records are durable or SyncFlushTimeout has passed.
	FlushSync
)

// String returns "async" or "sync".
func (m FlushMode) String() string {
	switch m {
	case FlushAsync:
		return "async"
	case FlushSync:
		return "sync"
	default:
		return fmt.Sprintf("FlushMode(%d)", uint8(m))
	}
}

const (
	// DefaultSegmentSize is RocketMQ's commit-log segment size, 1 GiB.
	DefaultSegmentSize = 1 << 30
	// PageSize is the unit of Options.FlushLeastPages and of segment sizes.
	PageSize = 4096
	// MaxSegmentSize is the largest segment size: the blank filler's TOTALSIZE is an int32.
	MaxSegmentSize = math.MaxInt32 / PageSize * PageSize
	// DefaultPrefaultAhead is the default Options.PrefaultAhead, 32 MiB.
	DefaultPrefaultAhead = 32 << 20
)

// Options configures a Log. Start from DefaultOptions and set Dir.
type Options struct {
	// Dir is the directory holding the segment files (created if missing).
	Dir string
	// HighWaterPath is the file that records the log's high-water mark, which bounds how
	// much of a segment's tail recovery zeroes, so that restarting after a crash does not
	// cost a read of the whole segment (see highwater.go). It must not be inside Dir (the
	// commit-log directory keeps RocketMQ's layout: segments only); the store uses
	// <data-dir>/commitlog.hwm. Empty: no mark, and recovery zeroes the whole rest of the
	// last segment.
	HighWaterPath string
	// FS is the file system; mmap.OSFS{} for real files, *mmap.MemFS in tests.
	FS mmap.FS
	// SegmentSize is the size of every segment, a multiple of PageSize. It must match
	// the existing segments.
	SegmentSize int64
	// FlushMode is FlushAsync or FlushSync.
	FlushMode FlushMode
	// FlushInterval is how often the FlushAsync flusher runs (RocketMQ
	// flushIntervalCommitLog, 500 ms). In FlushSync mode the group-commit flusher also
	// wakes this often when no appender kicks it.
	FlushInterval time.Duration
	// FlushLeastPages is the number of dirty 4 KiB pages below which a periodic async
	// flush is skipped (flushCommitLogLeastPages, 4).
	FlushLeastPages int
	// FlushThoroughInterval forces an async flush of everything at least this often
	// (flushCommitLogThoroughInterval, 10 s).
	FlushThoroughInterval time.Duration
	// SyncFlushTimeout bounds how long a FlushSync Append waits for durability before it
	// returns FlushDiskTimeout (syncFlushTimeout, 5 s).
	SyncFlushTimeout time.Duration
	// DestroyTimeout is how long a deleted segment stays mapped for readers that still
	// hold a View of it before it is unmapped anyway
	// (destroyMapedFileIntervalForcibly, 120 s).
	DestroyTimeout time.Duration
	// PrefaultSegments makes the service goroutine pre-fault the PrefaultAhead bytes after
	// the write position once appends begin (and as much of the head of the next segment
	// when it creates it), so page-cache allocation happens off the append path (see
	// alloc.go). It costs page cache for PrefaultAhead bytes ahead (clean, reclaimable,
	// not mapped into the process), no disk writes, and nothing while nothing is appended.
	// Off, every page of a segment is allocated by the page fault of its first append.
	PrefaultSegments bool
	// PrefaultAhead is how far ahead of the write position PrefaultSegments keeps pages
	// pre-faulted: a positive multiple of PageSize (32 MiB, a few milliseconds of the
	// fastest appending).
	PrefaultAhead int64
	// MappedSyncAppends makes FlushSync appenders encode straight into the mapping like
	// FlushAsync ones instead of through the stage written out by the flusher (see
	// stage.go). Off by default: the stage holds the writer lock several times shorter.
	MappedSyncAppends bool
	// MappedAsyncAppends makes every FlushAsync append encode straight into the mapping
	// (as RocketMQ does without transientStorePoolEnable). Off (the default), appends of
	// a page or more go through the stage and one pwrite(2) each (see stage.go), which
	// avoids a page fault per page of log: it cut the broker's CPU per 1 KiB message
	// from about 10–13 µs to about 7 µs for a batching client (docs/benchmarks.md).
	MappedAsyncAppends bool
	// StoreHost is written into the STOREHOST field of every record (brokerIP1 and the
	// listen port); offset message ids are derived from it.
	StoreHost netip.AddrPort
	// Logger receives flush errors, segment creation failures and recovery reports.
	Logger zerolog.Logger
	// Clock returns the current time; store timestamps come from it (time.Now by
	// default, replaceable in tests).
	Clock func() time.Time
}

// DefaultOptions returns RocketMQ's defaults: 1 GiB segments on the real file system,
// async flush every 500 ms when at least 4 pages are dirty and fully every 10 s, a 5 s
// sync-flush timeout, store host 127.0.0.1:10911; and pre-faulting 32 MiB ahead of the
// write position. Dir must still be set.
func DefaultOptions() Options {
	return Options{
		FS:                    mmap.OSFS{},
		SegmentSize:           DefaultSegmentSize,
		FlushMode:             FlushAsync,
		FlushInterval:         500 * time.Millisecond,
		FlushLeastPages:       4,
		FlushThoroughInterval: 10 * time.Second,
		SyncFlushTimeout:      5 * time.Second,
		DestroyTimeout:        120 * time.Second,
		PrefaultSegments:      true,
		PrefaultAhead:         DefaultPrefaultAhead,
		StoreHost:             netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), 10911),
		Logger:                zerolog.Nop(),
		Clock:                 time.Now,
	}
}

// Validate reports every invalid option, joined.
func (o *Options) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("commitlog: "+format, args...))
	}
	if o.Dir == "" {
		bad("Dir must be set")
	}
	if o.FS == nil {
		bad("FS must be set")
	}
	if o.HighWaterPath != "" && filepath.Dir(filepath.Clean(o.HighWaterPath)) == filepath.Clean(o.Dir) {
		bad("HighWaterPath %s must not be inside Dir %s", o.HighWaterPath, o.Dir)
	}
	if o.SegmentSize < PageSize || o.SegmentSize > MaxSegmentSize || o.SegmentSize%PageSize != 0 {
		bad("SegmentSize %d must be a multiple of %d in [%d, %d]", o.SegmentSize, PageSize, PageSize, MaxSegmentSize)
	}
	if o.FlushMode != FlushAsync && o.FlushMode != FlushSync {
		bad("unknown FlushMode %d", o.FlushMode)
	}
	if o.FlushInterval <= 0 || o.FlushThoroughInterval <= 0 || o.SyncFlushTimeout <= 0 || o.DestroyTimeout <= 0 {
		bad("FlushInterval, FlushThoroughInterval, SyncFlushTimeout and DestroyTimeout must be positive")
	}
	if o.PrefaultSegments && (o.PrefaultAhead < PageSize || o.PrefaultAhead%PageSize != 0) {
		bad("PrefaultAhead %d must be a positive multiple of %d when PrefaultSegments is on", o.PrefaultAhead, PageSize)
	}
	if o.FlushLeastPages < 0 {
		bad("FlushLeastPages %d must not be negative", o.FlushLeastPages)
	}
	if !o.StoreHost.IsValid() {
		bad("StoreHost must be a valid address and port")
	}
	if o.Clock == nil {
		bad("Clock must be set")
	}
	return errors.Join(errs...)
}
