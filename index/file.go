package index

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/ferrymq/ferry/internal/mmap"
)

// file is one mapped index file.
type file struct {
	name    string
	created time.Time // from the name
	m       mmap.Mapped
	b       []byte
	slotNum int64
	maxEnt  int32

	// Block allocation of the sparse file (see "Disk space" in the package doc).
	metaPages []atomic.Uint64 // bit p: page p of header and slot table has blocks
	entries   mmap.Grower     // the entry area; guarded by Index.mu

	// Guarded by Index.mu.
	h        header   // the live header
	shadow   []int32  // live slot heads, while the mapping may lag behind (nil: read the mapping)
	dirty    []int32  // slots changed since the last flush snapshot
	dirtyBit []uint64 // membership of dirty

	// Guarded by Index.flushMu.
	synced  int32  // entries below are durable
	disk    header // the header last made durable
	slotBuf []byte // writeSlots' scratch: a run of slot-table pages
}

// allocPage is the unit in which the header and slot table are allocated.
const allocPage = mmap.GrowMinChunk

// entryOffset is the file offset of entry n.
func (f *file) entryOffset(n int32) int64 {
	return HeaderSize + f.slotNum*SlotSize + int64(n)*EntrySize
}

func (f *file) entryBytes(n int32) []byte {
	off := f.entryOffset(n)
	return f.b[off : off+EntrySize]
}

// allocMeta makes sure the page holding byte off of the header or slot table has disk
// blocks, so it may be written. It is safe to call from Put (under Index.mu) and Flush
// (under flushMu) at once: allocating a page twice is harmless.
func (f *file) allocMeta(off int64) error {
	p := off / allocPage
	w, bit := &f.metaPages[p/64], uint64(1)<<(p%64)
	if w.Load()&bit != 0 {
		return nil
	}
	if err := f.m.Allocate(p*allocPage, min(allocPage, f.m.Size()-p*allocPage)); err != nil {
		return fmt.Errorf("index: %s: %w", f.name, err)
	}
	w.Or(bit)
	return nil
}

// reserve allocates what adding an entry with this hash writes: the next entry (the entry
// area grows in chunks) and the page of its slot, which Flush writes later. The caller
// holds Index.mu; on an error nothing has been written.
func (f *file) reserve(hash int32) error {
	if err := f.entries.Ensure(f.entryOffset(f.h.count + 1)); err != nil {
		return fmt.Errorf("index: %s: %w", f.name, err)
	}
	return f.allocMeta(HeaderSize + (int64(hash)%f.slotNum)*SlotSize)
}

func (f *file) entry(n int32) entry { return decodeEntry(f.entryBytes(n)) }

// mappedSlot reads slot s from the mapping.
func (f *file) mappedSlot(s int64) int32 {
	return int32(binary.BigEndian.Uint32(f.b[HeaderSize+s*SlotSize:]))
}

// slot is the live head of slot s.
func (f *file) slot(s int64) int32 {
	if f.shadow != nil {
		return f.shadow[s]
	}
	return f.mappedSlot(s)
}

// setSlot changes a live slot head; the file must have a shadow.
func (f *file) setSlot(s int64, v int32) {
	f.shadow[s] = v
	if w, bit := s/64, uint64(1)<<(s%64); f.dirtyBit[w]&bit == 0 {
		f.dirtyBit[w] |= bit
		f.dirty = append(f.dirty, int32(s))
	}
}

// ensureShadow loads the slot table into memory so the file can take entries.
func (f *file) ensureShadow() {
	if f.shadow != nil {
		return
	}
	f.shadow = make([]int32, f.slotNum)
	for s := range f.slotNum {
		f.shadow[s] = f.mappedSlot(s)
	}
	f.dirtyBit = make([]uint64, (f.slotNum+63)/64)
	f.dirty = nil
}

// takeDirty returns the changed slots with their live values and clears the dirty set.
func (f *file) takeDirty() []slotValue {
	out := make([]slotValue, len(f.dirty))
	for i, s := range f.dirty {
		out[i] = slotValue{s, f.shadow[s]}
		f.dirtyBit[s/64] &^= 1 << (s % 64)
	}
	f.dirty = f.dirty[:0]
	return out
}

// slotValue is a slot head to write into the mapping.
type slotValue struct{ slot, head int32 }

// walkBack follows the chain from head down to the newest entry below limit (0 if none).
// Links that do not go strictly down end the chain.
func (f *file) walkBack(head, limit int32) int32 {
	if head < 0 {
		return 0
	}
	for head >= limit {
		if head <= 0 || head >= f.maxEnt {
			return 0
		}
		prev := f.entry(head).prev
		if prev >= head || prev < 0 {
			return 0
		}
		head = prev
	}
	return head
}

// searchPhy returns the first entry in [1, count) whose physical offset is ≥ phy (count if
// none). Entries are in commit-log order.
func (f *file) searchPhy(phy int64) int32 {
	lo, hi := int32(1), max(f.h.count, 1)
	for lo < hi {
		mid := lo + (hi-lo)/2
		if f.entry(mid).phy >= phy {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// persist makes entries [from, to), the given slot heads and then header h durable, in
// that order. The caller holds flushMu; entries below to must not change meanwhile.
func (f *file) persist(from, to int32, slots []slotValue, h header) error {
	if from < to {
		off := HeaderSize + f.slotNum*SlotSize + int64(from)*EntrySize
		if err := f.m.Sync(off, int64(to-from)*EntrySize); err != nil {
			return fmt.Errorf("index: %s: sync entries: %w", f.name, err)
		}
	}
	if len(slots) > 0 {
		if err := f.writeSlots(slots); err != nil {
			return err
		}
		lo, hi := int64(slots[0].slot), int64(slots[len(slots)-1].slot) // sorted by writeSlots
		if err := f.m.Sync(HeaderSize+lo*SlotSize, (hi-lo+1)*SlotSize); err != nil {
			return fmt.Errorf("index: %s: sync slots: %w", f.name, err)
		}
	}
	if h != f.disk {
		if err := f.allocMeta(0); err != nil {
			return fmt.Errorf("index: sync header: %w", err)
		}
		h.encode(f.b)
		if err := f.m.Sync(0, HeaderSize); err != nil {
			return fmt.Errorf("index: %s: sync header: %w", f.name, err)
		}
		f.disk = h
	}
	f.synced = max(f.synced, to)
	return nil
}

// writeSlots writes the changed slot heads into the file with pwrite(2), not through the
// mapping, and sorts slots by slot number. Ingest spreads slot changes over the whole
// slot table (a hash per key), so each flush dirties most of its pages; written through
// the mapping, every one of them took a write fault after the previous flush had
// write-protected it, and the flush's msync had to write-protect them all again (at 100k
// keys/s about a tenth of the broker's CPU). Instead each run of adjacent pages that
// holds a change is copied from the mapping (which holds what the previous flushes
// wrote: only writeSlots writes slot heads into the file), patched, and written back with
// one pwrite. A slot that did not change is skipped, so a hole stays a hole. The caller
// holds flushMu.
func (f *file) writeSlots(slots []slotValue) error {
	slices.SortFunc(slots, func(a, b slotValue) int { return cmp.Compare(a.slot, b.slot) })
	slotEnd := HeaderSize + f.slotNum*SlotSize
	runStart, runEnd := int64(-1), int64(-1) // the pending run of pages [runStart, runEnd)
	flush := func() error {
		if runStart < 0 {
			return nil
		}
		if err := f.m.WriteAt(f.slotBuf, runStart); err != nil {
			return fmt.Errorf("index: %s: write slots: %w", f.name, err)
		}
		runStart, runEnd = -1, -1
		return nil
	}
	for _, sv := range slots {
		if f.mappedSlot(int64(sv.slot)) == sv.head {
			continue // unchanged: no write
		}
		off := HeaderSize + int64(sv.slot)*SlotSize
		if err := f.allocMeta(off); err != nil {
			return fmt.Errorf("index: sync slots: %w", err)
		}
		page := off &^ (slotWritePage - 1)
		if page >= runEnd { // not in the pending run: extend it by this page or start anew
			if page != runEnd {
				if err := flush(); err != nil {
					return err
				}
				runStart = page
				f.slotBuf = f.slotBuf[:0]
			}
			end := min(page+slotWritePage, slotEnd)
			f.slotBuf = append(f.slotBuf, f.b[page:end]...)
			runEnd = end
		}
		binary.BigEndian.PutUint32(f.slotBuf[off-runStart:], uint32(sv.head))
	}
	if err := flush(); err != nil {
		return err
	}
	if cap(f.slotBuf) > maxSlotBuf {
		f.slotBuf = nil
	}
	return nil
}

// slotWritePage is the unit writeSlots copies and writes: a page of the file.
const slotWritePage = 4096

// maxSlotBuf is the largest writeSlots buffer kept between flushes.
const maxSlotBuf = 4 << 20

// load checks the header against the entries (rebuilding it if they disagree), repairs
// slot heads that point at or beyond the entry count, and makes any repair durable. It
// runs before the file is shared.
func (f *file) load() error {
	h := decodeHeader(f.b)
	f.disk = h
	h.count = max(h.count, 1)
	if !f.headerAgrees(h) {
		h = f.rebuildHeader(h)
	}
	f.h = h
	var repaired []slotValue
	if h.count < f.maxEnt {
		// A file with room takes entries: the scan that repairs the slot heads also
		// loads them as its shadow (ensureShadow would read the 20 MB table again), after
		// mapping the table in one call instead of a fault per page. At a restart after a
		// crash this halved the index's share of the time to readiness.
		_ = f.m.Populate(HeaderSize, f.slotNum*SlotSize) // advice: an error costs only speed
		tbl := f.b[HeaderSize : HeaderSize+f.slotNum*SlotSize]
		shadow := make([]int32, f.slotNum)
		used := int32(0)
		for s := range shadow {
			v := int32(binary.BigEndian.Uint32(tbl[s*SlotSize:]))
			if v != 0 && (v >= h.count || v < 0) {
				v = f.walkBack(v, h.count)
				repaired = append(repaired, slotValue{int32(s), v})
			}
			shadow[s] = v
			if v != 0 {
				used++
			}
		}
		f.h.slotCount = used
		f.shadow, f.dirtyBit, f.dirty = shadow, make([]uint64, (f.slotNum+63)/64), nil
	}
	f.synced = f.h.count
	if err := f.persist(f.h.count, f.h.count, repaired, f.h); err != nil {
		return fmt.Errorf("index: %s: repair: %w", f.name, err)
	}
	return nil
}

// headerAgrees reports whether a header is consistent with the entries it describes.
func (f *file) headerAgrees(h header) bool {
	if h.count > f.maxEnt || h.slotCount < 0 || int64(h.slotCount) > f.slotNum {
		return false
	}
	if h.count == 1 {
		return f.entry(1).zero() // an empty file has no entries
	}
	return h.beginPhy >= 0 && h.beginPhy <= h.endPhy &&
		f.entry(1).phy == h.beginPhy && f.entry(h.count-1).phy == h.endPhy
}

// rebuildHeader recovers a header from the entries: they run up to the first one that is
// zero or cannot follow the previous one. The begin time is kept if plausible, else taken
// from the file name; the end time is the newest entry's second, rounded up.
func (f *file) rebuildHeader(old header) header {
	h := header{count: 1, beginTs: old.beginTs}
	if d := old.beginTs - f.created.UnixMilli(); old.beginTs <= 0 || d > int64(24*time.Hour/time.Millisecond) || d < -int64(24*time.Hour/time.Millisecond) {
		h.beginTs = f.created.UnixMilli()
	}
	prevPhy, maxDiff := int64(0), int32(0)
	for n := int32(1); n < f.maxEnt; n++ {
		e := f.entry(n)
		if e.zero() || e.phy < prevPhy || e.prev < 0 || e.prev >= n || e.timeDiff < 0 || e.hash < 0 {
			break
		}
		if n == 1 {
			h.beginPhy = e.phy
		}
		h.endPhy, prevPhy, maxDiff = e.phy, e.phy, max(maxDiff, e.timeDiff)
		h.count = n + 1
	}
	h.endTs = h.beginTs
	if h.count > 1 {
		h.endTs = h.beginTs + int64(maxDiff)*1000 + 999
	}
	return h
}

// close unmaps the file.
func (f *file) close() error {
	if err := f.m.Close(); err != nil {
		return fmt.Errorf("index: %s: %w", f.name, err)
	}
	return nil
}

// closeFiles unmaps files.
func closeFiles(files []*file) error {
	var err error
	for _, f := range files {
		err = errors.Join(err, f.close())
	}
	return err
}
