package commitlog

import (
	"fmt"
	"math"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/rs/zerolog"

	"github.com/ferrymq/ferry/internal/mmap"
)

// segmentNameLen is the length of a segment file name: the start offset as 20 decimal
// digits, zero padded. Part of the on-disk format.
const segmentNameLen = 20

// segmentName returns the file name of the segment starting at start.
func segmentName(start int64) string {
	return fmt.Sprintf("%0*d", segmentNameLen, start)
}

// parseSegmentName returns the start offset a segment file name encodes.
func parseSegmentName(name string) (int64, bool) {
	if len(name) != segmentNameLen {
		return 0, false
	}
	for i := range len(name) {
		if name[i] < '0' || name[i] > '9' {
			return 0, false
		}
	}
	v, err := strconv.ParseInt(name, 10, 64)
	return v, err == nil
}

// segment is one mapped segment file. refs counts the log's own reference (dropped when
// the segment is deleted or the log closed) plus one per reader; the mapping is closed
// when it reaches zero, or forcibly after DestroyTimeout.
type segment struct {
	start int64
	end   int64
	name  string
	m     mmap.Mapped
	data  []byte
	log   *zerolog.Logger

	refs atomic.Int64
	// lastTS is the store timestamp (Unix ms) of the last record appended or scanned by
	// this process; 0 when unknown.
	lastTS atomic.Int64

	unmapOnce sync.Once
	unmapErr  error

	// writeMode is whether the mapping has append advice; guarded by the log's mu.
	writeMode bool
	// win is the writable window appends are encoded into (see Log.appendBytesLocked),
	// nil when none is open; guarded by the log's mu.
	win mmap.Window
}

func newSegment(start int64, m mmap.Mapped, log *zerolog.Logger) *segment {
	s := &segment{start: start, end: start + m.Size(), name: segmentName(start), m: m, data: m.Bytes(), log: log}
	s.refs.Store(1)
	return s
}

// acquire takes a reader reference; it fails once the count has reached zero (the
// segment is being unmapped), so a count never comes back from zero.
func (s *segment) acquire() bool {
	for {
		r := s.refs.Load()
		if r <= 0 {
			return false
		}
		if s.refs.CompareAndSwap(r, r+1) {
			return true
		}
	}
}

// release drops a reference and unmaps the segment when it was the last one, returning
// the unmap error.
func (s *segment) release() error {
	if s.refs.Add(-1) == 0 {
		return s.unmap()
	}
	return nil
}

// forceUnmap unmaps the segment whatever its readers; their later releases do nothing.
func (s *segment) forceUnmap() error {
	s.refs.Store(math.MinInt64 / 2)
	return s.unmap()
}

func (s *segment) unmap() error {
	s.unmapOnce.Do(func() {
		if err := s.m.Close(); err != nil {
			s.unmapErr = fmt.Errorf("commitlog: unmap segment %s: %w", s.name, err)
		}
	})
	return s.unmapErr
}

// segList is an immutable, contiguous, sorted list of segments. The Log publishes a new
// one (copy on write) whenever a segment is added or removed.
type segList struct {
	segs []*segment
}

// find returns the segment containing off, or nil.
func (l *segList) find(off, segSize int64) *segment {
	if len(l.segs) == 0 || off < l.segs[0].start {
		return nil
	}
	i := (off - l.segs[0].start) / segSize
	if i >= int64(len(l.segs)) {
		return nil
	}
	return l.segs[i]
}

// first returns the first segment's start, or -1 when empty.
func (l *segList) first() int64 {
	if len(l.segs) == 0 {
		return -1
	}
	return l.segs[0].start
}

// View is a read-only window onto mapped commit-log bytes. It holds its segment mapped
// until Release, even if the segment is deleted meanwhile (up to DestroyTimeout). A View
// is not safe for concurrent use; its bytes may be read by any number of goroutines.
type View struct {
	seg *segment
	off int64
	b   []byte
}

// Bytes returns the viewed bytes. They alias the mapping: never write to them, and do not
// use them after Release.
func (v *View) Bytes() []byte { return v.b }

// Offset returns the physical offset of Bytes()[0].
func (v *View) Offset() int64 { return v.off }

// Release gives the segment reference back. Calling it again does nothing.
func (v *View) Release() {
	if v.seg == nil {
		return
	}
	if err := v.seg.release(); err != nil {
		v.seg.log.Error().Err(err).Msg("unmap after last reader")
	}
	v.seg, v.b = nil, nil
}
