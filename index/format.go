package index

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/ferrymq/ferry/message"
)

// An index file, all integers big-endian:
//
//	+------------------------------+ 0
//	| header, 40 bytes             |
//	+------------------------------+ 40
//	| slot table: SlotNum × int32  |  slot s = newest entry number whose key hash ≡ s
//	|                              |  (mod SlotNum), 0 = empty
//	+------------------------------+ 40 + SlotNum×4
//	| entries: MaxEntries × 20     |  entry 0 is never used (0 means "none")
//	+------------------------------+ 40 + SlotNum×4 + MaxEntries×20
//
// Header:
//
//	 0  beginTimestamp  int64  store time (ms) of the first entry
//	 8  endTimestamp    int64  store time (ms) of the newest entry
//	16  beginPhyOffset  int64  commit-log offset of the first entry
//	24  endPhyOffset    int64  commit-log offset of the newest entry
//	32  hashSlotCount   int32  slots in use
//	36  indexCount      int32  next entry number; starts at 1 (≤ 0 is read as 1)
//
// Entry n at 40 + SlotNum×4 + n×20:
//
//	 0  keyHash    int32  |JavaHash("topic#key")|, Integer.MIN_VALUE → 0
//	 4  phyOffset  int64  commit-log offset of the record
//	12  timeDiff   int32  (storeTimestamp − beginTimestamp) / 1000, clamped to [0, MaxInt32]
//	16  prevIndex  int32  previous entry in the same slot, 0 = end of chain
//
// RocketMQ's defaults are 5,000,000 slots and 20,000,000 entries (420,000,040 bytes); the
// file name is the local creation time as yyyyMMddHHmmssSSS. These constants are part of
// the on-disk format.
const (
	// HeaderSize is the size of the file header.
	HeaderSize = 40
	// SlotSize is the size of one hash slot.
	SlotSize = 4
	// EntrySize is the size of one entry.
	EntrySize = 20
	// DefaultSlotNum is RocketMQ's hash slot count per file.
	DefaultSlotNum = 5_000_000
	// DefaultMaxEntries is RocketMQ's entry capacity per file (entry 0 included).
	DefaultMaxEntries = 20_000_000
	// nameLayout is the file name without its milliseconds, nameLen the full length.
	nameLayout = "20060102150405"
	nameLen    = len(nameLayout) + 3
)

// header is the in-memory form of a file header.
type header struct {
	beginTs, endTs   int64
	beginPhy, endPhy int64
	slotCount, count int32
}

func (h *header) encode(b []byte) {
	_ = b[HeaderSize-1]
	binary.BigEndian.PutUint64(b[0:], uint64(h.beginTs))
	binary.BigEndian.PutUint64(b[8:], uint64(h.endTs))
	binary.BigEndian.PutUint64(b[16:], uint64(h.beginPhy))
	binary.BigEndian.PutUint64(b[24:], uint64(h.endPhy))
	binary.BigEndian.PutUint32(b[32:], uint32(h.slotCount))
	binary.BigEndian.PutUint32(b[36:], uint32(h.count))
}

func decodeHeader(b []byte) header {
	_ = b[HeaderSize-1]
	return header{
		beginTs:   int64(binary.BigEndian.Uint64(b[0:])),
		endTs:     int64(binary.BigEndian.Uint64(b[8:])),
		beginPhy:  int64(binary.BigEndian.Uint64(b[16:])),
		endPhy:    int64(binary.BigEndian.Uint64(b[24:])),
		slotCount: int32(binary.BigEndian.Uint32(b[32:])),
		count:     int32(binary.BigEndian.Uint32(b[36:])),
	}
}

// entry is the in-memory form of an index entry.
type entry struct {
	hash     int32
	phy      int64
	timeDiff int32
	prev     int32
}

func (e *entry) encode(b []byte) {
	_ = b[EntrySize-1]
	binary.BigEndian.PutUint32(b[0:], uint32(e.hash))
	binary.BigEndian.PutUint64(b[4:], uint64(e.phy))
	binary.BigEndian.PutUint32(b[12:], uint32(e.timeDiff))
	binary.BigEndian.PutUint32(b[16:], uint32(e.prev))
}

func decodeEntry(b []byte) entry {
	_ = b[EntrySize-1]
	return entry{
		hash:     int32(binary.BigEndian.Uint32(b[0:])),
		phy:      int64(binary.BigEndian.Uint64(b[4:])),
		timeDiff: int32(binary.BigEndian.Uint32(b[12:])),
		prev:     int32(binary.BigEndian.Uint32(b[16:])),
	}
}

// zero reports whether the entry is all zero (never written).
func (e entry) zero() bool { return e == entry{} }

// time is the entry's store time rounded down to the second.
func (e entry) time(beginTs int64) int64 { return beginTs + int64(max(e.timeDiff, 0))*1000 }

// timeDiff is an entry's timeDiff field for a record stored at ts in a file beginning at
// beginTs.
func timeDiff(ts, beginTs int64) int32 {
	if beginTs <= 0 || ts <= beginTs {
		return 0
	}
	return int32(min((ts-beginTs)/1000, math.MaxInt32))
}

// KeyHash is the key hash RocketMQ stores for an index key: the absolute value of the Java
// String.hashCode of the key (over UTF-16), with Java's Math.abs(Integer.MIN_VALUE) quirk
// mapped to 0.
func KeyHash(key string) int32 { return absHash(message.JavaHash(key)) }

// KeyHashBytes is KeyHash for a key held in bytes (UTF-8).
func KeyHashBytes(key []byte) int32 { return absHash(message.JavaHashBytes(key)) }

// absHash is Java's Math.abs with Integer.MIN_VALUE mapped to 0.
func absHash(h int32) int32 {
	if h < 0 {
		h = -h // still negative for math.MinInt32
	}
	return max(h, 0)
}

// BuildKey is the index key of a message key or unique key in a topic: "topic#key".
func BuildKey(topic, key string) string { return topic + "#" + key }

// fileName is the name of a file created at t (local time, millisecond precision).
func fileName(t time.Time) string {
	t = t.Local()
	return t.Format(nameLayout) + fmt.Sprintf("%03d", t.Nanosecond()/int(time.Millisecond))
}

// parseFileName returns the creation time a file name encodes.
func parseFileName(name string) (time.Time, bool) {
	if len(name) != nameLen {
		return time.Time{}, false
	}
	ms := 0
	for _, c := range name[len(nameLayout):] {
		if c < '0' || c > '9' {
			return time.Time{}, false
		}
		ms = ms*10 + int(c-'0')
	}
	t, err := time.ParseInLocation(nameLayout, name[:len(nameLayout)], time.Local)
	if err != nil {
		return time.Time{}, false
	}
	return t.Add(time.Duration(ms) * time.Millisecond), true
}
