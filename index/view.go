package index

import (
	"fmt"
	"time"
)

// Read-only access to index files for tools that read them without opening an Index
// (ferryctl dump): decoding only, never a write, and no repair — what Open would repair
// is reported instead (View.HeaderAgrees).

// Header is an index file header as stored (layout in format.go).
type Header struct {
	// BeginTimestamp and EndTimestamp are the store times (Unix ms) of the first and
	// newest entries.
	BeginTimestamp, EndTimestamp int64
	// BeginPhyOffset and EndPhyOffset are the commit-log offsets of the first and newest
	// entries.
	BeginPhyOffset, EndPhyOffset int64
	// HashSlotCount is the number of slots in use.
	HashSlotCount int32
	// IndexCount is the next entry number; entries are numbered from 1 (≤ 0 is read as 1).
	IndexCount int32
}

// Entry is one index entry as stored (layout in format.go).
type Entry struct {
	// KeyHash is |JavaHash("topic#key")| (KeyHash).
	KeyHash int32
	// PhyOffset is the commit-log offset of the record.
	PhyOffset int64
	// TimeDiff is the record's store time in seconds after the file's BeginTimestamp.
	TimeDiff int32
	// PrevIndex is the previous entry in the same hash slot, 0 at the end of the chain.
	PrevIndex int32
}

// Time is the entry's store time (Unix ms), rounded down to the second, in a file whose
// header begins at beginTimestamp.
func (e Entry) Time(beginTimestamp int64) int64 { return e.internal().time(beginTimestamp) }

func (e Entry) internal() entry {
	return entry{hash: e.KeyHash, phy: e.PhyOffset, timeDiff: e.TimeDiff, prev: e.PrevIndex}
}

// DecodeHeader reads the header in b[:HeaderSize]; it fails when b is shorter.
func DecodeHeader(b []byte) (Header, error) {
	if len(b) < HeaderSize {
		return Header{}, fmt.Errorf("%w: header needs %d bytes, have %d", ErrCorrupt, HeaderSize, len(b))
	}
	h := decodeHeader(b)
	return Header{h.beginTs, h.endTs, h.beginPhy, h.endPhy, h.slotCount, h.count}, nil
}

// DecodeEntry reads the entry in b[:EntrySize]; it fails when b is shorter.
func DecodeEntry(b []byte) (Entry, error) {
	if len(b) < EntrySize {
		return Entry{}, fmt.Errorf("%w: entry needs %d bytes, have %d", ErrCorrupt, EntrySize, len(b))
	}
	e := decodeEntry(b)
	return Entry{e.hash, e.phy, e.timeDiff, e.prev}, nil
}

// ParseFileName returns the creation time (local) an index file name encodes
// (yyyyMMddHHmmssSSS), or false when name is not an index file name.
func ParseFileName(name string) (time.Time, bool) { return parseFileName(name) }

// View reads the bytes of one index file. It holds b and never writes to it.
type View struct {
	f file
}

// NewView checks that b (a whole index file) has the size of a file of slotNum slots and
// maxEntries entries (Options.SlotNum and Options.MaxEntries; RocketMQ's defaults are
// DefaultSlotNum and DefaultMaxEntries) and returns a view of it.
func NewView(b []byte, slotNum, maxEntries int) (*View, error) {
	o := Options{Dir: "-", SlotNum: slotNum, MaxEntries: maxEntries}
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if int64(len(b)) != o.FileSize() {
		return nil, fmt.Errorf("%w: %d bytes, a file of %d slots and %d entries has %d", ErrCorrupt, len(b), slotNum, maxEntries, o.FileSize())
	}
	return &View{f: file{b: b, slotNum: int64(slotNum), maxEnt: int32(maxEntries)}}, nil
}

// Header is the file's header as stored.
func (v *View) Header() Header {
	h, _ := DecodeHeader(v.f.b)
	return h
}

// Count is the entry count a reader uses: the header's IndexCount, at least 1 and at most
// the file's capacity. Entries 1 to Count()-1 are the file's entries.
func (v *View) Count() int32 {
	return min(max(v.Header().IndexCount, 1), v.f.maxEnt)
}

// HeaderAgrees reports whether the header is consistent with the entries it describes;
// when it is not, Open rebuilds the header from the entries.
func (v *View) HeaderAgrees() bool {
	h := decodeHeader(v.f.b)
	h.count = max(h.count, 1)
	return v.f.headerAgrees(h)
}

// SlotNum is the file's number of hash slots.
func (v *View) SlotNum() int { return int(v.f.slotNum) }

// MaxEntries is the file's entry capacity (entry 0 included).
func (v *View) MaxEntries() int { return int(v.f.maxEnt) }

// Slot is the head of hash slot s (the newest entry number whose key hash ≡ s modulo
// SlotNum, 0 when empty) as stored; it is 0 for s out of range.
func (v *View) Slot(s int64) int32 {
	if s < 0 || s >= v.f.slotNum {
		return 0
	}
	return v.f.mappedSlot(s)
}

// Entry is entry n as stored; the zero Entry for n out of [0, MaxEntries).
func (v *View) Entry(n int32) Entry {
	if n < 0 || n >= v.f.maxEnt {
		return Entry{}
	}
	e := v.f.entry(n)
	return Entry{e.hash, e.phy, e.timeDiff, e.prev}
}

// Chain walks the chain of the hash slot of hash newest first, as a query does (from the
// slot head, entries below Count, stopping at a link that does not point to an older
// entry), calling fn with each entry number and entry until fn returns false. Entries of
// other hashes that share the slot are included.
func (v *View) Chain(hash int32, fn func(n int32, e Entry) bool) {
	count := v.Count()
	n := v.Slot(int64(hash) % v.f.slotNum)
	for n > 0 && n < count {
		e := v.Entry(n)
		if !fn(n, e) || e.PrevIndex >= n {
			return
		}
		n = e.PrevIndex
	}
}
