package commitlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/ferrymq/ferry/message"
)

// SegmentInfo describes one segment for cleanup decisions.
type SegmentInfo struct {
	// Start is the physical offset of the segment's first byte (its name).
	Start int64
	// End is Start + SegmentSize.
	End int64
	// LastStoreTimestamp is the store timestamp (Unix ms) of the segment's last record
	// when this process wrote or recovered it; otherwise the store timestamp of the next
	// segment's first record, an upper bound; 0 when neither is known. It stands in for
	// the file modification time RocketMQ uses.
	LastStoreTimestamp int64
	// Active marks the last segment, the one appends go to. It is never deleted.
	Active bool
}

// Segments lists the segments, oldest first.
func (l *Log) Segments() []SegmentInfo {
	list := l.segs.Load()
	out := make([]SegmentInfo, len(list.segs))
	for i, s := range list.segs {
		out[i] = SegmentInfo{Start: s.start, End: s.end, LastStoreTimestamp: s.lastTS.Load(), Active: i == len(list.segs)-1}
		if out[i].LastStoreTimestamp == 0 && i+1 < len(list.segs) {
			out[i].LastStoreTimestamp = firstStoreTimestamp(list.segs[i+1])
		}
	}
	return out
}

// firstStoreTimestamp reads the store timestamp of a segment's first record, 0 when it
// has none.
func firstStoreTimestamp(s *segment) int64 {
	if !s.acquire() {
		return 0
	}
	defer func() {
		if err := s.release(); err != nil {
			s.log.Error().Err(err).Msg("unmap after last reader")
		}
	}()
	b := s.data
	total, magic, err := message.PeekHeader(b)
	if err != nil || magic != message.MagicV1 || total < message.MinRecordSize || int64(total) > int64(len(b)) {
		return 0
	}
	pos := message.StoreTimestampPos(int32(binary.BigEndian.Uint32(b[message.PosSysFlag:])))
	return int64(binary.BigEndian.Uint64(b[pos:]))
}

// DeleteSegments deletes segments oldest first while del returns true, at most maxCount
// of them (no limit when maxCount <= 0), stopping at the first one del refuses (so no hole is
// ever left) and never deleting the active (last) segment. A deleted segment disappears
// from the log at once (MinOffset moves); its file is removed and the directory synced,
// and its mapping is closed when its last reader releases it, or after DestroyTimeout.
// It returns how many segments were deleted and every error met.
func (l *Log) DeleteSegments(maxCount int, del func(SegmentInfo) bool) (int, error) {
	l.closing.RLock()
	defer l.closing.RUnlock()
	if l.closed.Load() {
		return 0, ErrClosed
	}
	infos := l.Segments()
	l.listMu.Lock()
	list := l.segs.Load()
	n := 0
	for n < len(list.segs)-1 && n < len(infos) && (maxCount <= 0 || n < maxCount) {
		if list.segs[n].start != infos[n].Start || !del(infos[n]) {
			break
		}
		n++
	}
	if n == 0 {
		l.listMu.Unlock()
		return 0, nil
	}
	victims := list.segs[:n]
	l.segs.Store(&segList{segs: slices.Clone(list.segs[n:])})
	l.listMu.Unlock()

	var errs []error
	now := time.Now()
	for _, s := range victims {
		l.log.Info().Str("segment", s.name).Int64("last_store_timestamp", s.lastTS.Load()).Msg("deleting segment")
		if err := l.fs.Remove(filepath.Join(l.dir, s.name)); err != nil {
			errs = append(errs, fmt.Errorf("commitlog: delete segment %s: %w", s.name, err))
		}
		if s.refs.Load() > 1 { // readers hold it: unmap later
			l.pending.Lock()
			l.pending.segs = append(l.pending.segs, pendingSegment{seg: s, since: now})
			l.pending.Unlock()
		}
		if err := s.release(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		errs = append(errs, fmt.Errorf("commitlog: delete segments: %w", err))
	}
	return n, errors.Join(errs...)
}

// DeleteExpired deletes, oldest first, up to maxCount segments (no limit when
// maxCount <= 0) whose LastStoreTimestamp is not after olderThan (RocketMQ: last modified
// + fileReservedTime <= now), never the active one. A segment whose timestamp is unknown
// (0) counts as expired, so cleanup can never get stuck behind it.
func (l *Log) DeleteExpired(olderThan time.Time, maxCount int) (int, error) {
	limit := olderThan.UnixMilli()
	return l.DeleteSegments(maxCount, func(s SegmentInfo) bool { return s.LastStoreTimestamp <= limit })
}

// DeleteBefore deletes every segment that lies entirely below offset (End <= offset),
// never the active one.
func (l *Log) DeleteBefore(offset int64) (int, error) {
	return l.DeleteSegments(0, func(s SegmentInfo) bool { return s.End <= offset })
}
