package consumequeue

import (
	"encoding/binary"
	"math"
	"strconv"
)

// A consume-queue unit, 20 bytes, big-endian (Java ByteBuffer order):
//
//	 0                   8           12                  20
//	 +-------------------+-----------+-------------------+
//	 | physical offset   | size      | tags code         |
//	 | int64             | int32     | int64             |
//	 +-------------------+-----------+-------------------+
//
//	physical offset  byte offset of the record in the commit log
//	size             the record's TOTALSIZE
//	tags code        Java hash of the TAGS property (sign-extended), 0 without tags;
//	                 the delivery time (ms) for the schedule topic
//
// A unit is valid iff physical offset ≥ 0 and size > 0; a zero unit ends the queue (segments
// are created zero-filled). A queue whose first segment starts before its first real unit
// pads the gap with "pre-blank" units (physical 0, size math.MaxInt32, tags 0). A "hole"
// unit (size 1) stands for a message lost to quarantined commit-log damage (hole.go).
//
// A segment holds UnitsPerFile units and is named by the byte offset of its first unit as 20
// zero-padded decimal digits. These constants and rules are part of the on-disk format.
const (
	// UnitSize is the size of one unit in bytes.
	UnitSize = 20
	// DefaultUnitsPerFile is RocketMQ's default segment length in units (6,000,000 bytes).
	DefaultUnitsPerFile = 300_000
	// preBlankSize is the size field of a pre-blank unit.
	preBlankSize = math.MaxInt32
	// nameLen is the length of a segment file name.
	nameLen = 20
)

// Unit is one consume-queue entry: where a message of the queue is in the commit log.
type Unit struct {
	// Offset is the physical (commit-log) offset of the record.
	Offset int64
	// Size is the record's total size in bytes.
	Size int32
	// TagsCode is the hash of the message's tags (or the delivery time on the schedule
	// topic).
	TagsCode int64
}

// End is the physical offset just past the record.
func (u Unit) End() int64 { return u.Offset + int64(u.Size) }

// valid reports whether u may be a stored unit (pre-blank units included).
func (u Unit) valid() bool { return u.Offset >= 0 && u.Size > 0 }

// preBlank reports whether u is a pre-blank filler unit.
func (u Unit) preBlank() bool { return u.Offset == 0 && u.Size == preBlankSize && u.TagsCode == 0 }

// follows reports whether u may come right after prev in a queue: units of one queue point
// to non-overlapping records in increasing commit-log order.
func (u Unit) follows(prev Unit) bool {
	if prev.preBlank() {
		return u.valid() // more pre-blank units, or the first real one
	}
	return u.valid() && !u.preBlank() && u.Offset-prev.Offset >= int64(prev.Size)
}

// encodeUnit writes u into b[:UnitSize].
func encodeUnit(b []byte, u Unit) {
	_ = b[UnitSize-1]
	binary.BigEndian.PutUint64(b[0:8], uint64(u.Offset))
	binary.BigEndian.PutUint32(b[8:12], uint32(u.Size))
	binary.BigEndian.PutUint64(b[12:20], uint64(u.TagsCode))
}

// decodeUnit reads the unit in b[:UnitSize].
func decodeUnit(b []byte) Unit {
	_ = b[UnitSize-1]
	return Unit{
		Offset:   int64(binary.BigEndian.Uint64(b[0:8])),
		Size:     int32(binary.BigEndian.Uint32(b[8:12])),
		TagsCode: int64(binary.BigEndian.Uint64(b[12:20])),
	}
}

// segmentName is the file name of the segment whose first unit is unit number base.
func segmentName(base int64) string {
	s := strconv.FormatInt(base*UnitSize, 10)
	if len(s) >= nameLen {
		return s
	}
	return "00000000000000000000"[:nameLen-len(s)] + s
}

// parseSegmentName returns the first unit number of a segment file name, or false if name
// is not a segment of fileSize bytes.
func parseSegmentName(name string, fileSize int64) (int64, bool) {
	if len(name) != nameLen {
		return 0, false
	}
	for i := 0; i < len(name); i++ {
		if name[i] < '0' || name[i] > '9' {
			return 0, false
		}
	}
	off, err := strconv.ParseInt(name, 10, 64)
	if err != nil || off%fileSize != 0 {
		return 0, false
	}
	return off / UnitSize, true
}
