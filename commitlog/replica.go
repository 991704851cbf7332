package commitlog

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/ferrymq/ferry/message"
)

// Replication (the slave side of HA).
//
// A slave's commit log is a byte-identical prefix of its master's: the master streams raw
// log bytes in frames that are not aligned to records, and AppendReplica writes them at
// exactly the master's offsets. Two positions matter on a replica:
//
//   - the replica end (ReplicaOffset, the writer's position): every byte received so
//     far, possibly ending inside a record. The slave reports it to the master, and the
//     next frame must start there.
//   - the published write position (MaxOffset): the end of the last complete record or
//     filler. Readers, iterators and the store's dispatcher see only bytes below it, as
//     on a master, so consume queues and the index are built from whole records.
//
// The bytes of a partial record between the two are in the segment but invisible; after
// a crash, recovery cuts them off as a torn tail and the slave reports the recovered end.

// ErrReplicaOffset is matched (errors.Is) by *ReplicaOffsetError.
var ErrReplicaOffset = errors.New("commitlog: replica offset mismatch")

// ErrReplicaData means replicated bytes are not a valid log at this position: a record or
// filler that does not fit this log's segments (the master's segment size differs), a
// PHYSICALOFFSET that is not its position, or bytes that do not decode. Nothing from the
// bad record on is kept: the replica end falls back to the published write position.
var ErrReplicaData = errors.New("commitlog: invalid replicated data")

// ErrReplicaTail means Append was called on a log whose replica end is inside a record
// (bytes of a partial record were replicated): call DiscardReplicaTail first.
var ErrReplicaTail = errors.New("commitlog: replicated partial record at the end of the log")

// ReplicaOffsetError is AppendReplica's error for bytes that do not start at the
// replica end.
type ReplicaOffsetError struct {
	Off int64 // where the bytes were to go
	End int64 // the replica end: where they must go
}

func (e *ReplicaOffsetError) Error() string {
	return fmt.Sprintf("commitlog: replicated bytes at %d, the replica ends at %d", e.Off, e.End)
}

// Unwrap makes the error match ErrReplicaOffset.
func (e *ReplicaOffsetError) Unwrap() error { return ErrReplicaOffset }

// ReplicaOffset is the replica end: the offset after the last byte written, by Append or
// AppendReplica. It is at or after MaxOffset; it is above it only while the bytes of a
// partial replicated record are held.
func (l *Log) ReplicaOffset() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.mu.recovered {
		return l.wrote.Load()
	}
	return l.mu.pos
}

// AppendReplica appends raw commit-log bytes received from a master at the master's
// offset off, so this log stays a byte-identical prefix of the master's.
//
// Contract:
//   - off must equal ReplicaOffset (else a *ReplicaOffsetError, matching
//     ErrReplicaOffset, and nothing is written). b may be any length, start and end
//     inside records, and span segment boundaries: segments are created (or taken from
//     preallocation) as the bytes reach them, at the same boundaries as the master's,
//     which the check below relies on.
//   - b is written through the same mapped-segment path as Append (the write window).
//   - The complete records and fillers in the new bytes are checked as recovery checks
//     them (magic, TOTALSIZE within this log's segment, PHYSICALOFFSET equal to the
//     position, torn-tail rules; not the body CRC). A record or filler that would cross
//     a segment end of this log means the master's segment size differs; that, and any
//     other invalid record, returns ErrReplicaData and drops the bytes from the bad
//     record on (ReplicaOffset falls back to MaxOffset).
//   - MaxOffset is then published up to the end of the last complete record or filler:
//     readers, iterators and the store's dispatcher see the replicated records exactly
//     as appended ones. The queue-offset table and store timestamps are raised from
//     the scanned records as Recover does, so this log could take Appends after a
//     promotion (after DiscardReplicaTail when a partial record is held).
//   - Flush mode: FlushAsync leaves the bytes to the background flusher; FlushSync
//     flushes up to the new MaxOffset before returning (a sync error matches
//     ErrFlushFailed and is sticky).
//
// Errors also include ErrClosed, ErrNotRecovered, segment-creation failures (for a full
// disk, mmap.ErrNoSpace) and failures to make the high-water mark durable; on any error the bytes after the returned MaxOffset are
// not published. AppendReplica and Append must not be mixed while a partial record is
// held (Append returns ErrReplicaTail).
func (l *Log) AppendReplica(off int64, b []byte) error {
	l.closing.RLock()
	defer l.closing.RUnlock()
	if err := l.appendReplica(off, b); err != nil {
		return err
	}
	if l.opts.FlushMode == FlushSync {
		return l.flushAll()
	}
	return nil
}

func (l *Log) appendReplica(off int64, b []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.closed.Load():
		return ErrClosed
	case !l.mu.recovered:
		return ErrNotRecovered
	case off != l.mu.pos:
		return &ReplicaOffsetError{Off: off, End: l.mu.pos}
	}
	if len(b) == 0 {
		return nil
	}
	if err := l.drainLocked(); err != nil { // appended bytes go to the file in order
		return err
	}
	l.mu.appended = true
	pos := l.mu.pos
	for len(b) > 0 {
		seg := l.mu.cur
		if seg == nil || pos < seg.start || pos >= seg.end {
			if seg != nil {
				l.writeModeLocked(seg, false)
			}
			next, err := l.obtainSegment(pos)
			if err != nil {
				l.mu.pos = pos
				if perr := l.publishReplicaLocked(); perr != nil {
					return perr
				}
				return err
			}
			l.mu.cur = next
			seg = next
		}
		l.writeModeLocked(seg, true)
		n := min(int64(len(b)), seg.end-pos)
		if err := l.coverLocked(pos + n); err != nil {
			l.mu.pos = pos
			if perr := l.publishReplicaLocked(); perr != nil {
				return perr
			}
			return err
		}
		copy(l.appendBytesLocked(seg, pos-seg.start, n), b[:n])
		b = b[n:]
		pos += n
	}
	l.mu.pos = pos
	return l.publishReplicaLocked()
}

// publishReplicaLocked scans the complete records and fillers between the published
// write position and the replica end, raises the queue-offset table and timestamps, and
// publishes the write position after the last complete one. The caller holds mu.
func (l *Log) publishReplicaLocked() error {
	var (
		rec    message.Record
		lastTS = l.mu.lastTS
		p      = l.wrote.Load()
		end    = l.mu.pos
		list   = l.segs.Load()
		bad    error
	)
scan:
	for p < end {
		seg := list.find(p, l.segSize)
		if seg == nil {
			bad = fmt.Errorf("%w: no segment holds offset %d", ErrReplicaData, p)
			break
		}
		rest := seg.data[p-seg.start:]
		have := min(end, seg.end) - p // bytes of this segment received from p
		if have < message.BlankHeaderSize {
			if seg.end-p < message.BlankHeaderSize {
				bad = fmt.Errorf("%w: %d bytes left at the end of segment %s (master's segment size differs?)",
					ErrReplicaData, seg.end-p, seg.name)
			}
			break
		}
		if n := message.QuarantineSize(rest); n > 0 {
			if p+int64(n) > seg.end {
				bad = fmt.Errorf("%w: quarantined range at %d crosses the segment end", ErrReplicaData, p)
				break
			}
			if p+int64(n) > end {
				break
			}
			p += int64(n)
			continue
		}
		total, magic, err := message.PeekHeader(rest)
		switch {
		case err != nil:
			bad = fmt.Errorf("%w at %d: %w", ErrReplicaData, p, err)
			break scan
		case magic == message.MagicBlank:
			if int64(total) != seg.end-p {
				bad = fmt.Errorf("%w at %d: filler of %d bytes, %d left in segment %s (master's segment size differs?)",
					ErrReplicaData, p, total, seg.end-p, seg.name)
				break scan
			}
			if seg.end > end {
				break scan // wait for the whole filler
			}
			p = seg.end
			continue
		case magic == message.MagicV1 && total >= message.MinRecordSize &&
			int64(total)+message.BlankHeaderSize > seg.end-p:
			bad = fmt.Errorf("%w at %d: a %d-byte record crosses the end of segment %s (master's segment size differs?)",
				ErrReplicaData, p, total, seg.name)
			break scan
		case magic == message.MagicV1 && total >= message.MinRecordSize && p+int64(total) > end:
			break scan // partial record: wait for the rest
		}
		n, _, err := checkRecord(rest, p, false, &rec)
		if err != nil {
			bad = fmt.Errorf("%w: %w", ErrReplicaData, err)
			break
		}
		lastTS = max(lastTS, rec.StoreTimestamp)
		seg.lastTS.Store(lastTS)
		if message.IsConsumable(rec.SysFlag) {
			if q := l.mu.queues[queueKey{string(rec.Topic), rec.QueueID}]; q != nil {
				q.next = max(q.next, rec.QueueOffset+1)
			} else {
				l.mu.queues[queueKey{string(rec.Topic), rec.QueueID}] = &queueNext{next: rec.QueueOffset + 1}
			}
		}
		p += n
	}
	l.mu.lastTS = lastTS
	if bad != nil {
		// Drop the bad bytes: the replica end falls back to the last good boundary and
		// the writer goes back to its segment (later segments stay, empty of published
		// data, and are reused as the log grows again).
		l.mu.pos = p
		if seg := list.find(p, l.segSize); seg != nil && seg != l.mu.cur {
			l.writeModeLocked(l.mu.cur, false)
			l.mu.cur = seg
		}
	}
	if p > l.wrote.Load() {
		l.wrote.Store(p)
		l.lastTS.Store(lastTS) // after wrote: see flushAll
	}
	return bad
}

// DiscardReplicaTail drops the bytes of a partial replicated record held after MaxOffset
// (zeroing them), so the log can take Appends, e.g. when a slave is promoted. It returns
// the number of bytes dropped.
func (l *Log) DiscardReplicaTail() (int64, error) {
	l.closing.RLock()
	defer l.closing.RUnlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.closed.Load():
		return 0, ErrClosed
	case !l.mu.recovered:
		return 0, ErrNotRecovered
	}
	if err := l.drainLocked(); err != nil {
		return 0, err
	}
	wrote, pos := l.wrote.Load(), l.mu.pos
	if pos <= wrote {
		return 0, nil
	}
	seg := l.segs.Load().find(wrote, l.segSize)
	if seg == nil {
		return 0, fmt.Errorf("commitlog: discard replica tail: no segment holds offset %d", wrote)
	}
	if seg != l.mu.cur {
		l.writeModeLocked(l.mu.cur, false)
		l.mu.cur = seg
		l.writeModeLocked(seg, true)
	}
	// A partial record never crosses a segment end (see publishReplicaLocked).
	to := min(pos, seg.end)
	clear(l.appendBytesLocked(seg, wrote-seg.start, to-wrote))
	l.mu.pos = wrote
	return pos - wrote, nil
}

// ErrNotEmpty means StartReplicaAt was called on a log that holds data.
var ErrNotEmpty = errors.New("commitlog: the log is not empty")

// StartReplicaAt makes an empty log start at off instead of 0, so that a new slave can
// replicate a master whose oldest segments were deleted: the slave's log then holds the
// master's segments from off on, at the same offsets, as a master's log does after
// cleanup. off must be a positive multiple of SegmentSize, and the log must hold nothing
// (ReplicaOffset 0), else ErrLayout or ErrNotEmpty. The empty segment files are removed
// and the directory synced; the next AppendReplica (at off) creates the segment there. A
// crash before that leaves an empty directory: the log opens empty at 0 again.
func (l *Log) StartReplicaAt(off int64) error {
	l.closing.RLock()
	defer l.closing.RUnlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.closed.Load():
		return ErrClosed
	case !l.mu.recovered:
		return ErrNotRecovered
	case off <= 0 || off%l.segSize != 0:
		return fmt.Errorf("%w: a replica cannot start at %d (not a positive multiple of the segment size %d)",
			ErrLayout, off, l.segSize)
	case l.mu.pos != 0 || l.wrote.Load() != 0 || len(l.mu.stage) != 0:
		return fmt.Errorf("%w: it ends at %d", ErrNotEmpty, l.mu.pos)
	}
	if l.mu.cur != nil {
		l.closeWindowLocked(l.mu.cur)
		l.mu.cur = nil
	}
	_ = l.takeSlot(-1) // discards a preallocated segment, if any
	l.listMu.Lock()
	list := l.segs.Swap(&segList{})
	l.listMu.Unlock()
	var errs []error
	for _, s := range list.segs {
		if err := l.fs.Remove(filepath.Join(l.dir, s.name)); err != nil {
			errs = append(errs, fmt.Errorf("commitlog: remove empty segment %s: %w", s.name, err))
		}
		if s.refs.Load() > 1 { // a reader holds it: unmap later
			l.pending.Lock()
			l.pending.segs = append(l.pending.segs, pendingSegment{seg: s, since: time.Now()})
			l.pending.Unlock()
		}
		if err := s.release(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		errs = append(errs, fmt.Errorf("commitlog: start replica at %d: %w", off, err))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	l.mu.pos = off
	l.wrote.Store(off)
	l.flushed.Store(off)
	l.log.Info().Int64("offset", off).Msg("empty replica starts at the master's first segment")
	return nil
}
