package store

import (
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"time"

	"github.com/rs/zerolog"

	"github.com/ferrymq/ferry/commitlog"
	"github.com/ferrymq/ferry/consumequeue"
	"github.com/ferrymq/ferry/index"
	"github.com/ferrymq/ferry/internal/mmap"
	"github.com/ferrymq/ferry/message"
)

// Options configures a Store. Start from DefaultOptions and set Dir.
type Options struct {
	// Dir is the store root: commitlog/, consumequeue/, index/, checkpoint and abort live
	// directly under it (RocketMQ's layout).
	Dir string
	// FS is the file system (mmap.OSFS{} for real files, *mmap.MemFS in tests).
	FS mmap.FS
	// Logger receives recovery reports, flush and cleanup errors, disk-full transitions.
	Logger zerolog.Logger
	// Clock returns the current time (time.Now by default).
	Clock func() time.Time
	// StoreHost is written into every record; offset message ids are derived from it.
	StoreHost netip.AddrPort

	// SegmentSize is the commit-log segment size (1 GiB).
	SegmentSize int64
	// FlushMode is commitlog.FlushAsync (default) or commitlog.FlushSync.
	FlushMode commitlog.FlushMode
	// FlushInterval, FlushLeastPages, FlushThoroughInterval and SyncFlushTimeout tune the
	// commit-log flusher (see commitlog.Options).
	FlushInterval         time.Duration
	FlushLeastPages       int
	FlushThoroughInterval time.Duration
	SyncFlushTimeout      time.Duration

	// UnitsPerFile is the consume-queue file size in 20-byte units (300,000).
	UnitsPerFile int
	// IndexSlots and IndexEntries size each index file (5,000,000 and 20,000,000).
	IndexSlots   int
	IndexEntries int
	// IndexEnabled turns the key index on (true).
	IndexEnabled bool

	// MaxMessageSize bounds a stored body (4 MiB).
	MaxMessageSize int

	// InMemoryMaxBytes is how far behind the commit log's end a pulled record may start
	// and still count as in memory (likely in the page cache); a pull whose last record is
	// further behind reports GetResult.InDisk, which the broker turns into a suggestion to
	// pull from a slave. RocketMQ derives it from accessMessageInMemoryMaxRatio (40 % of
	// physical memory); the launcher computes it the same way. 0: every record counts as
	// in memory.
	InMemoryMaxBytes int64

	// CheckpointInterval is how often consume queues and the index are flushed and the
	// checkpoint written (1 s). Recovery after a crash re-dispatches at most this much.
	CheckpointInterval time.Duration

	// FileReservedTime is how long commit-log segments are kept (72 h).
	FileReservedTime time.Duration
	// DeleteWhen lists the local hours at which expired segments are deleted ([4]).
	DeleteWhen []int
	// CleanInterval is how often cleanup runs (10 s).
	CleanInterval time.Duration
	// DiskMaxUsedRatio: above this used fraction of the disk, expired segments are deleted
	// at any hour (0.75).
	DiskMaxUsedRatio float64
	// DiskForceCleanRatio: above this, the oldest segments are deleted even if not expired
	// (0.85) — acknowledged messages are lost that way, consumed or not. 1 disables forced
	// cleaning; it may be above DiskFullRatio.
	DiskForceCleanRatio float64
	// DiskFullRatio: at or above this, writes are refused with ErrDiskFull until usage
	// drops (0.90).
	DiskFullRatio float64
	// DiskCheckInterval is how often the disk guard samples usage (1 s).
	DiskCheckInterval time.Duration

	// VerifyAll makes Open validate the whole commit log rather than only what follows the
	// checkpoint: damage anywhere before the durable offset is quarantined (ferry scrub).
	VerifyAll bool
	// ScrubInterval runs Scrub in the background this often (0: never); ScrubBytesPerSec
	// paces it (0: unpaced).
	ScrubInterval    time.Duration
	ScrubBytesPerSec int64

	// TagsCode, if set, may override the consume-queue tags code of a record (the schedule
	// service stores delivery times there); ok=false keeps the TAGS hash.
	TagsCode func(rec *message.Record) (code int64, ok bool)

	// Notify, if set, is called by the dispatcher after it appends to a consume queue
	// (topic, queue, the queue's new max offset, the unit's tags code); the broker wakes
	// long polls with it. It must not block. It is called only once Start has run:
	// the dispatch that recovery does inside Open notifies nobody, since nothing can be
	// waiting for a store that has not started.
	Notify func(topic string, queueID int32, maxOffset int64, tagsCode int64)

	// Retention, if set, returns a topic's retention limits (0: none). Every
	// CleanInterval the retention pass raises the minimum offset of each queue of a
	// topic with limits past the messages stored longer ago than maxAge and past the
	// oldest ones while the queue holds more than maxBytes (see retention.go). It is
	// called from the cleaner goroutine and must not block.
	Retention func(topic string) (maxAge time.Duration, maxBytes int64)

	// Compaction, if set, says whether a topic is compacted and how (ok=false: not
	// compacted). Every CleanInterval a compaction round marks the messages of
	// compacted topics that a later message of the same key supersedes, and the
	// tombstones older than their delay, and pulls skip them (see compaction.go). It is
	// called from the cleaner goroutine and must not block.
	Compaction func(topic string) (policy CompactionPolicy, ok bool)
	// CompactionReadsPerRound bounds the commit-log records one compaction round reads
	// (65,536), and separately the records one cleanup's copy-forward reads and copies.
	// Not bounded by it: reading the copies that arrive by replication (a slave), and the
	// consume-queue scan that finds where a queue with copies must keep its units.
	CompactionReadsPerRound int
	// CompactionCopy lets the cleanup copy compacted topics' live records forward before
	// it deletes their commit-log segment (true; see compaction_copy.go). A slave, whose
	// log is a replica of its master's, sets it false: it keeps such segments until the
	// master's copies have been replicated.
	CompactionCopy bool
}

// DefaultOptions returns RocketMQ's defaults on the real file system. Dir must be set.
func DefaultOptions() Options {
	return Options{
		FS:                    mmap.OSFS{},
		Logger:                zerolog.Nop(),
		Clock:                 time.Now,
		StoreHost:             netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), 10911),
		SegmentSize:           commitlog.DefaultSegmentSize,
		FlushMode:             commitlog.FlushAsync,
		FlushInterval:         500 * time.Millisecond,
		FlushLeastPages:       4,
		FlushThoroughInterval: 10 * time.Second,
		SyncFlushTimeout:      5 * time.Second,
		UnitsPerFile:          consumequeue.DefaultUnitsPerFile,
		IndexSlots:            index.DefaultSlotNum,
		IndexEntries:          index.DefaultMaxEntries,
		IndexEnabled:          true,
		MaxMessageSize:        4 << 20,
		CheckpointInterval:    time.Second,
		FileReservedTime:      72 * time.Hour,
		DeleteWhen:            []int{4},
		CleanInterval:         10 * time.Second,
		DiskMaxUsedRatio:      0.75,
		DiskForceCleanRatio:   0.85,
		DiskFullRatio:         0.90,
		DiskCheckInterval:     time.Second,

		CompactionReadsPerRound: 1 << 16,
		CompactionCopy:          true,
	}
}

// Validate reports every invalid option, joined.
func (o *Options) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("store: "+format, args...)) }
	if o.Dir == "" {
		bad("Dir must be set")
	}
	if o.FS == nil {
		bad("FS must be set")
	}
	if o.Clock == nil {
		bad("Clock must be set")
	}
	if o.MaxMessageSize <= 0 {
		bad("MaxMessageSize must be positive, got %d", o.MaxMessageSize)
	}
	if o.InMemoryMaxBytes < 0 {
		bad("InMemoryMaxBytes must not be negative, got %d", o.InMemoryMaxBytes)
	}
	if o.UnitsPerFile <= 0 || o.IndexSlots <= 0 || o.IndexEntries <= 0 {
		bad("UnitsPerFile, IndexSlots and IndexEntries must be positive")
	}
	for _, d := range []time.Duration{o.CheckpointInterval, o.CleanInterval, o.DiskCheckInterval} {
		if d <= 0 {
			bad("intervals must be positive, got %v", d)
			break
		}
	}
	if o.FileReservedTime <= 0 {
		bad("FileReservedTime must be positive, got %v", o.FileReservedTime)
	}
	if !(0 < o.DiskMaxUsedRatio && o.DiskMaxUsedRatio <= o.DiskForceCleanRatio && o.DiskForceCleanRatio <= 1 &&
		o.DiskMaxUsedRatio <= o.DiskFullRatio && o.DiskFullRatio <= 1) {
		bad("need 0 < DiskMaxUsedRatio <= DiskForceCleanRatio <= 1 and DiskMaxUsedRatio <= DiskFullRatio <= 1, got %v, %v, %v",
			o.DiskMaxUsedRatio, o.DiskForceCleanRatio, o.DiskFullRatio)
	}
	if o.CompactionReadsPerRound <= 0 {
		bad("CompactionReadsPerRound must be positive, got %d", o.CompactionReadsPerRound)
	}
	for _, h := range o.DeleteWhen {
		if h < 0 || h > 23 {
			bad("DeleteWhen hour %d outside 0..23", h)
		}
	}
	if cl := o.commitLogOptions(); o.FS != nil {
		if err := cl.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Names under the store root (Options.Dir): RocketMQ's store layout, part of the on-disk
// format.
const (
	CommitLogDirName    = "commitlog"
	ConsumeQueueDirName = "consumequeue"
	IndexDirName        = "index"
	CheckpointFileName  = checkpointName
	AbortFileName       = "abort"
	// HighWaterFileName is Ferry's own: the commit log's high-water mark
	// (commitlog.Options.HighWaterPath), which bounds what recovery zeroes.
	HighWaterFileName = "commitlog.hwm"
)

// Paths under Dir (RocketMQ's store layout).
func (o *Options) commitLogDir() string    { return filepath.Join(o.Dir, CommitLogDirName) }
func (o *Options) consumeQueueDir() string { return filepath.Join(o.Dir, ConsumeQueueDirName) }
func (o *Options) indexDir() string        { return filepath.Join(o.Dir, IndexDirName) }
func (o *Options) checkpointPath() string  { return filepath.Join(o.Dir, checkpointName) }
func (o *Options) abortPath() string       { return filepath.Join(o.Dir, AbortFileName) }
func (o *Options) highWaterPath() string   { return filepath.Join(o.Dir, HighWaterFileName) }

// reserveQueueFiles is how many new consume-queue files the disk reserve leaves room for.
const reserveQueueFiles = 16

// diskReserve is the free space below which writes are refused: the next commit-log
// segment (preallocated in the background) plus what dispatch needs to keep consume queues
// and the index up with the records already accepted — one index file and
// reserveQueueFiles consume-queue files.
func (o *Options) diskReserve() uint64 {
	r := o.SegmentSize + reserveQueueFiles*int64(o.UnitsPerFile)*consumequeue.UnitSize
	if o.IndexEnabled {
		io := index.DefaultOptions()
		io.SlotNum, io.MaxEntries = o.IndexSlots, o.IndexEntries
		r += io.FileSize()
	}
	return uint64(r)
}
func (o *Options) quarantineDir() string  { return filepath.Join(o.Dir, "quarantine") }
func (o *Options) queueTablePath() string { return filepath.Join(o.Dir, queueTableName) }
func (o *Options) lockPath() string       { return filepath.Join(o.Dir, "lock") }
func (o *Options) retentionPath() string  { return filepath.Join(o.Dir, retentionFileName) }
func (o *Options) compactionPath() string { return filepath.Join(o.Dir, compactionFileName) }

func (o *Options) compactionPinsPath() string { return filepath.Join(o.Dir, compactionPinsFileName) }

func (o *Options) commitLogOptions() commitlog.Options {
	c := commitlog.DefaultOptions()
	c.Dir = o.commitLogDir()
	c.HighWaterPath = o.highWaterPath()
	c.FS = o.FS
	c.SegmentSize = o.SegmentSize
	c.FlushMode = o.FlushMode
	c.FlushInterval = o.FlushInterval
	c.FlushLeastPages = o.FlushLeastPages
	c.FlushThoroughInterval = o.FlushThoroughInterval
	c.SyncFlushTimeout = o.SyncFlushTimeout
	c.StoreHost = o.StoreHost
	c.Logger = o.Logger
	c.Clock = o.Clock
	return c
}

func (o *Options) consumeQueueOptions() consumequeue.Options {
	return consumequeue.Options{Root: o.consumeQueueDir(), FS: o.FS, UnitsPerFile: o.UnitsPerFile}
}
