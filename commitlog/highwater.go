package commitlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"path/filepath"
)

// The high-water mark.
//
// After a crash, recovery must leave nothing but zeros after the end it recovered, so
// that records written after it can never be followed by stale ones that a later
// recovery would take for a continuation of the log (a stale record at the right offset
// has a valid PHYSICALOFFSET). Which bytes after the end can be non-zero? Segment files
// are created zero-filled (fallocate), and the only writers of non-zero bytes are the
// appenders (records, fillers, the FlushSync stage's write-out) and replication, all at
// the write position. So the stale bytes lie below the furthest position ever written,
// and zeroing up to there is enough; reading a 1 GiB tail page by page to find them took
// 0.2–3 s per crash restart (docs/benchmarks.md, Restart after a crash).
//
// The log records that position as the high-water mark, an offset no byte at or after
// which was ever written, in a file of its own (Options.HighWaterPath, outside Dir so the
// commit-log directory keeps RocketMQ's layout; without one there is no mark). The mark
// is raised and made durable before any byte beyond it is written: the service goroutine
// keeps it highWaterLead ahead of the write position (raising it when less than half of
// that is left), and a writer that gets there first raises it itself, under the writer
// lock (coverLocked).
// Because the raise is synced before the bytes exist, no crash — process or power — can
// leave a durable byte beyond a durable mark. Recovery and Truncate zero from the end to
// the mark (to the segment's end when the mark is unknown) and then lower the mark to the
// end plus highWaterLead, which is sound because everything after the end is zero by
// then. A raise costs one small synced write every highWaterLead/2 bytes appended, off the
// append path; recovery reads at most about highWaterLead bytes after the end, whatever
// the segment size.
//
// The mark is unknown — and recovery zeroes the whole tail as before — when the file is
// missing (a store from before the mark, a RocketMQ directory, a restore of commitlog/
// alone), unreadable, or below the recovered end (the file belongs to another log).
//
// File layout (4096 bytes, blocks reserved, rewritten in place; big-endian). Part of the
// on-disk format:
//
//	 0  magic   8 B    "FERRYHW1"
//	 8  mark    int64  no byte of any segment at or after this physical offset was ever written
//	16  crc     uint32 IEEE CRC-32 of bytes [0, 16)
//	20  zero to the end
//
// The record sits in the file's first 512-byte sector, which disks write atomically; a
// torn or otherwise damaged record fails its CRC and only makes the mark unknown.
const (
	highWaterMagic = "FERRYHW1"
	highWaterSize  = 4096
	hwMarkAt       = 8
	hwCRCAt        = 16
	hwRecordSize   = 20

	// maxHighWaterLead bounds how far ahead of the write position the mark is kept (see
	// highWaterLead).
	maxHighWaterLead = 32 << 20
)

// highWaterLead is how far ahead of the write position the mark is kept for segments of
// segSize bytes: a quarter segment, at most 32 MiB and at least a page. It is about the
// most a recovery reads after the end it recovers (1–2 ms of page-cache reads, tens of
// milliseconds from a cold disk), and half of it is appended between two raises.
func highWaterLead(segSize int64) int64 {
	return max(PageSize, min(maxHighWaterLead, segSize/4/PageSize*PageSize))
}

// errHighWaterCorrupt marks a high-water file whose record is not valid.
var errHighWaterCorrupt = errors.New("commitlog: high-water file is not valid")

// encodeHighWater lays out the record for mark in b (at least hwRecordSize bytes).
func encodeHighWater(b []byte, mark int64) {
	copy(b, highWaterMagic)
	binary.BigEndian.PutUint64(b[hwMarkAt:], uint64(mark))
	binary.BigEndian.PutUint32(b[hwCRCAt:], crc32.ChecksumIEEE(b[:hwCRCAt]))
}

// decodeHighWater returns the mark recorded in b, or an error matching
// errHighWaterCorrupt.
func decodeHighWater(b []byte) (int64, error) {
	switch {
	case len(b) < hwRecordSize:
		return 0, fmt.Errorf("%w: %d bytes", errHighWaterCorrupt, len(b))
	case string(b[:hwMarkAt]) != highWaterMagic:
		return 0, fmt.Errorf("%w: bad magic", errHighWaterCorrupt)
	case binary.BigEndian.Uint32(b[hwCRCAt:]) != crc32.ChecksumIEEE(b[:hwCRCAt]):
		return 0, fmt.Errorf("%w: bad CRC", errHighWaterCorrupt)
	}
	mark := int64(binary.BigEndian.Uint64(b[hwMarkAt:]))
	if mark < 0 {
		return 0, fmt.Errorf("%w: negative mark %d", errHighWaterCorrupt, mark)
	}
	return mark, nil
}

// openHighWater maps the high-water file, creating it when missing (or replacing one of
// the wrong size), and loads the mark: -1 when it is unknown (see the top of this file).
// fresh is a new log whose segments are all zeros: its mark is made highWaterLead at once.
// Without Options.HighWaterPath it does nothing and the mark stays unknown.
func (l *Log) openHighWater(fresh bool) error {
	l.hw.mark.Store(-1)
	path := l.opts.HighWaterPath
	if path == "" {
		return nil
	}
	exists, err := l.fs.Exists(path)
	if err != nil {
		return fmt.Errorf("commitlog: open high-water file: %w", err)
	}
	if exists {
		if size, err := l.fs.Size(path); err != nil {
			return fmt.Errorf("commitlog: open high-water file: %w", err)
		} else if size != highWaterSize {
			l.log.Warn().Str("file", path).Int64("bytes", size).Msg("replacing a high-water file of the wrong size")
			if err := l.fs.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("commitlog: open high-water file: %w", err)
			}
			exists = false
		}
	}
	m, err := l.fs.OpenMapped(path, highWaterSize, true)
	if err != nil {
		return fmt.Errorf("commitlog: open high-water file: %w", err)
	}
	l.hw.m = m
	if !exists {
		if err := l.fs.SyncDir(filepath.Dir(path)); err != nil {
			return fmt.Errorf("commitlog: create high-water file: %w", err)
		}
	} else if mark, err := decodeHighWater(m.Bytes()); err != nil {
		l.log.Warn().Err(err).Str("file", path).Msg("high-water mark unknown: recovery zeroes the whole tail of the last segment")
	} else {
		l.hw.mark.Store(mark)
	}
	if fresh {
		return l.setHighWater(l.hwLead)
	}
	return nil
}

// setHighWater makes mark the durable high-water mark (nothing without a high-water
// file). Lowering it is only sound once every byte at or after mark is zero and durable
// (recovery and Truncate).
func (l *Log) setHighWater(mark int64) error {
	if l.hw.m == nil {
		return nil
	}
	l.hw.Lock()
	defer l.hw.Unlock()
	return l.writeHighWaterLocked(mark)
}

// writeHighWaterLocked writes and syncs the record for mark and publishes it. On a
// failure the published mark is left as it was (the file may hold either). The record
// is written with WriteAt, not into the mapping: the service goroutine raises the mark
// while appenders run, and only the file system serialises that with a test's Crash.
// The caller holds hw.
func (l *Log) writeHighWaterLocked(mark int64) error {
	var rec [hwRecordSize]byte
	encodeHighWater(rec[:], mark)
	if err := l.hw.m.WriteAt(rec[:], 0); err != nil {
		return fmt.Errorf("commitlog: record high-water mark %d: %w", mark, err)
	}
	if err := l.hw.m.Sync(0, hwRecordSize); err != nil {
		return fmt.Errorf("commitlog: record high-water mark %d: %w", mark, err)
	}
	l.hw.mark.Store(mark)
	return nil
}

// raiseHighWater raises the durable mark to at least to; a higher mark is left alone.
func (l *Log) raiseHighWater(to int64) error {
	l.hw.Lock()
	defer l.hw.Unlock()
	if l.hw.mark.Load() >= to {
		return nil
	}
	return l.writeHighWaterLocked(to)
}

// coverLocked makes the durable mark cover every byte below end before the caller
// writes there, raising it to end+highWaterLead when the service goroutine has not kept
// it far enough ahead. An error means nothing may be written at or after the mark.
// Without a high-water file there is nothing to do. The caller holds mu.
func (l *Log) coverLocked(end int64) error {
	if l.hw.mark.Load() >= end || l.hw.m == nil {
		return nil
	}
	return l.raiseHighWater(end + l.hwLead)
}

// raiseAhead is the service goroutine's part: it raises the mark to wrote+highWaterLead
// once less than half of that lead is left.
func (l *Log) raiseAhead(wrote int64) {
	if l.hw.mark.Load() >= wrote+l.hwLead/2 || l.hw.m == nil {
		return
	}
	err := l.raiseHighWater(wrote + l.hwLead)
	switch was := l.hw.failing.Swap(err != nil); {
	case err != nil && !was: // once per failing streak: this runs every few milliseconds
		l.log.Warn().Err(err).Msg("high-water mark not raised ahead of the writer; appends that need it fail")
	case err == nil && was:
		l.log.Info().Int64("mark", l.hw.mark.Load()).Msg("high-water mark raised again")
	}
}

// HighWater returns the durable high-water mark: no byte of any segment at or after it
// has ever been written. It is -1 when unknown: without Options.HighWaterPath, and before
// the first recovery of a log whose high-water file was missing or invalid.
func (l *Log) HighWater() int64 { return l.hw.mark.Load() }

// tailLimit is where zeroing the tail of seg after end may stop: the mark when it is
// known and not below end, the segment's end otherwise. Called during recovery or
// truncation (nothing is appended meanwhile).
func (l *Log) tailLimit(seg *segment, end int64) int64 {
	mark := l.hw.mark.Load()
	switch {
	case mark < 0:
		return seg.end
	case mark < end:
		l.log.Warn().Int64("mark", mark).Int64("end", end).
			Msg("high-water mark below the log's end (the file is not this log's): zeroing the whole tail")
		return seg.end
	}
	return min(mark, seg.end)
}
