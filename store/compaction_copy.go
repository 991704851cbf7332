package store

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"slices"
	"sort"

	"github.com/ferrymq/ferry/commitlog"
	"github.com/ferrymq/ferry/consumequeue"
	"github.com/ferrymq/ferry/message"
)

// Copy-forward: the commit log's cleanup deletes whole segments, shared by every topic,
// so before it deletes a segment the store copies the records of compacted queues that
// are still live (not marked) and still point into it to the end of the log. A copy is a
// record of the internal topic CompactionCopyTopic (queue 0) whose body is the original
// record's bytes, unchanged (its topic, queue id, queue offset and physical offset
// included). The relocation table maps an original physical offset to the position of
// its copy's body; the pull path, the compaction scan and store-time lookups read a unit
// whose segment is gone there, and check the bytes exactly as they check the original
// (pulledBody compares the copy's PHYSICALOFFSET field with the unit's offset), so a copy
// is served byte for byte as the original was and a consumer cannot tell.
//
// The relocation table is not written anywhere: it is rebuilt by Open from the copy
// topic's consume queue (each copy names its original by the PHYSICALOFFSET field of its
// body; a later copy of the same original wins), and the dispatcher and recovery keep
// that queue as they keep every other. Crash safety follows from the order of the steps:
// the copies are appended and flushed (durable) before the segment holding the
// originals is deleted, so a crash leaves either the original or a durable copy, and at
// worst an unused copy.
//
// A queue's consume-queue files are cut at the log's new minimum (cutQueuesBelow) only up
// to its first unit whose record has a live copy: the queue keeps its units from there
// on, so a reader from the queue's start still reaches the relocated latest messages.
//
// A copy is part of the on-disk format: a V1 record (message/record.go) with TOPIC
// CompactionCopyTopic, QUEUEID 0, no properties, BORNHOST the store host, BORNTIMESTAMP
// the time of the copy, and as BODY the original record's TOTALSIZE bytes, verbatim.
//
// Costs and limits: copying is bounded per round (Options.CompactionReadsPerRound
// records); a segment is deleted only once every live record in it has been copied, so
// a round that runs out of budget delays the deletion to a later round. A store that may
// not append (Options.CompactionCopy false: a slave, whose log is a replica) copies
// nothing and keeps such segments until the master's copies have arrived by replication.
// Forced cleaning (DiskForceCleanRatio) does not wait: it deletes what it must and the
// live records it could not copy are lost, like every other message in those segments.
// Key queries (the index) do not find copies; reads by offset (ReadMessage: views by
// offset message id, send-backs) do.

// CompactionCopyTopic is the internal topic the copies of compacted topics' live
// records are appended to (a system topic: the broker refuses sends to it, and it has
// no topic config, so pulls of it are refused too). protocol.CompactionCopyTopic is the
// same name.
const CompactionCopyTopic = "rmq_sys_ferry_compaction_copy"

// relocation is the copy-forward table: original physical offset -> physical offset of
// the copy's body (the original record's bytes).
type relocation struct {
	m    map[int64]int64
	next int64 // the copy queue's next offset followCopies reads (cleaner only)
	// pins are the original offsets of copied records whose copies a Truncate cut off
	// (their originals were gone already): their consume-queue units are kept (see
	// firstLivePhy) until a copy arrives again — by replication from the new master —
	// and the pin is dropped.
	pins map[int64]bool
}

// The pins file (compaction_pins.json in the store's directory) keeps relocation.pins
// across starts, replaced atomically whenever they change:
//
//	{"version":1,"pins":[<original commit-log offset>, ...]}
//
// A store without it has no pins. It is part of the store's on-disk format.
const (
	compactionPinsFileName    = "compaction_pins.json"
	compactionPinsFileVersion = 1
)

// pinsFile is the JSON layout of the pins file.
type pinsFile struct {
	Version int     `json:"version"`
	Pins    []int64 `json:"pins"`
}

// loadPins reads the pins file into s.comp.reloc.pins (Open, before loadRelocations's
// followCopies). A file that does not decode is an error: dropping it could cut a
// key's latest message from its queue.
func (s *Store) loadPins() error {
	s.comp.reloc.pins = map[int64]bool{}
	data, err := s.opts.FS.ReadFile(s.opts.compactionPinsPath())
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("store: read compaction pins: %w", err)
	}
	var f pinsFile
	if err := json.Unmarshal(data, &f); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrCompactionFile, s.opts.compactionPinsPath(), err)
	}
	if f.Version != compactionPinsFileVersion {
		return fmt.Errorf("%w: %s: version %d, not %d", ErrCompactionFile, s.opts.compactionPinsPath(), f.Version,
			compactionPinsFileVersion)
	}
	for _, p := range f.Pins {
		s.comp.reloc.pins[p] = true
	}
	return nil
}

// writePins replaces the pins file with pins (removes it when there are none).
func (s *Store) writePins(pins map[int64]bool) error {
	if len(pins) == 0 {
		if err := s.opts.FS.Remove(s.opts.compactionPinsPath()); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("store: remove compaction pins: %w", err)
		}
		return nil
	}
	f := pinsFile{Version: compactionPinsFileVersion, Pins: slices.Sorted(maps.Keys(pins))}
	data, err := json.Marshal(f)
	if err != nil {
		return fmt.Errorf("store: encode compaction pins: %w", err)
	}
	if err := s.opts.FS.WriteFileAtomic(s.opts.compactionPinsPath(), data); err != nil {
		return fmt.Errorf("store: write compaction pins: %w", err)
	}
	return nil
}

// pinCutCopies pins (and writes durably) the originals whose copies are at or after
// offset, where a Truncate is about to cut the log, and whose originals are gone.
func (s *Store) pinCutCopies(offset int64) error {
	minPhy := s.cl.MinOffset()
	pins := maps.Clone(s.comp.reloc.pins)
	if pins == nil {
		pins = map[int64]bool{}
	}
	s.comp.relocMu.RLock()
	for orig, at := range s.comp.reloc.m {
		if at >= offset && orig < minPhy {
			pins[orig] = true
		}
	}
	s.comp.relocMu.RUnlock()
	if len(pins) == len(s.comp.reloc.pins) {
		return nil
	}
	if err := s.writePins(pins); err != nil {
		return err
	}
	s.comp.reloc.pins = pins
	return nil
}

// relocated returns where the record first written at phy is now, and whether it was
// copied at all.
func (s *Store) relocated(phy int64) (int64, bool) {
	s.comp.relocMu.RLock()
	at, ok := s.comp.reloc.m[phy]
	s.comp.relocMu.RUnlock()
	return at, ok
}

// setRelocated records that the record first written at phy is now at at.
func (s *Store) setRelocated(phy, at int64) {
	s.comp.relocMu.Lock()
	s.comp.reloc.m[phy] = at
	s.comp.copies.Store(int64(len(s.comp.reloc.m)))
	s.comp.relocMu.Unlock()
}

// readRecordAt reads the record first written at phy, from its copy when its segment is
// gone.
func (s *Store) readRecordAt(phy int64) (message.Record, *commitlog.View, error) {
	rec, v, err := s.cl.ReadRecord(phy)
	if err == nil || !errors.Is(err, commitlog.ErrDeleted) && !errors.Is(err, commitlog.ErrOutOfRange) {
		return rec, v, err
	}
	if at, ok := s.relocated(phy); ok {
		return s.cl.ReadRecord(at)
	}
	return rec, v, err
}

// copyBodyStart is where the body of a copy record of size total starts in it: the copy
// has no properties, so the body is followed by the topic length byte, the topic and
// the 2-byte properties length.
func copyBodyStart(total, bodyLen int) int {
	return total - bodyLen - 1 - len(CompactionCopyTopic) - 2
}

// loadRelocations rebuilds the relocation table from the copy topic's queue (Open).
func (s *Store) loadRelocations() error {
	s.comp.reloc.m = map[int64]int64{}
	s.comp.reloc.next = 0
	if err := s.loadPins(); err != nil {
		return err
	}
	return s.followCopies()
}

// followCopies adds the copies dispatched to the copy topic's queue since the last call
// to the relocation table: on a slave they arrive by replication, and Open reads them
// all. The cleaner goroutine (and Open, before it starts) calls it.
func (s *Store) followCopies() error {
	q, err := s.cqs.Queue(CompactionCopyTopic, 0, false)
	if err != nil || q == nil {
		return nil //nolint:nilerr // no copy was ever made
	}
	buf := make([]consumequeue.Unit, compactionReadBatch)
	minPhy := s.cl.MinOffset()
	for off := max(s.comp.reloc.next, q.MinOffset()); off < q.MaxOffset(); {
		n, err := q.Read(off, buf)
		if err != nil || n == 0 {
			return fmt.Errorf("store: read %s at %d: %w", q, off, err)
		}
		for _, u := range buf[:n] {
			off++
			s.comp.reloc.next = off
			if u.Hole() || u.Offset < minPhy {
				continue
			}
			rec, v, err := s.cl.ReadRecord(u.Offset)
			if err != nil {
				continue // damaged: the original (or another copy) may still serve
			}
			if len(rec.Body) >= message.MinRecordSize {
				orig := int64(binary.BigEndian.Uint64(rec.Body[message.PosPhysicalOffset:]))
				at := u.Offset + int64(copyBodyStart(int(rec.StoreSize), len(rec.Body)))
				s.comp.relocMu.Lock()
				if cur, ok := s.comp.reloc.m[orig]; !ok || at > cur {
					s.comp.reloc.m[orig] = at
				}
				s.comp.relocMu.Unlock()
			}
			v.Release()
		}
	}
	s.comp.relocMu.RLock()
	s.comp.copies.Store(int64(len(s.comp.reloc.m)))
	var released []int64
	for p := range s.comp.reloc.pins {
		if _, ok := s.comp.reloc.m[p]; ok {
			released = append(released, p)
		}
	}
	s.comp.relocMu.RUnlock()
	if len(released) > 0 { // copies came again: those units are covered by them now
		pins := maps.Clone(s.comp.reloc.pins)
		for _, p := range released {
			delete(pins, p)
		}
		if err := s.writePins(pins); err != nil {
			return err
		}
		s.comp.reloc.pins = pins
	}
	return nil
}

// pruneRelocations drops the entries whose copy is below the log's minimum.
func (s *Store) pruneRelocations(minPhy int64) {
	s.comp.relocMu.Lock()
	for orig, at := range s.comp.reloc.m {
		if at < minPhy {
			delete(s.comp.reloc.m, orig)
		}
	}
	s.comp.copies.Store(int64(len(s.comp.reloc.m)))
	s.comp.relocMu.Unlock()
}

// copyForward copies the live records of compacted queues that are below end (where
// the records a cleanup round is about to delete end) to the end of the log, flushes
// them, and returns the offset below which segments may be deleted: end when every such
// record has a durable copy, less when the budget ran out, copying is not allowed or an
// append failed. Only the cleaner goroutine calls it.
//
// It reads what is about to go, not whole queues: the units of each compacted queue
// from the first one at or after the log's start (a binary search) to end, and the
// copies in the relocation table that lie below end (a copy being deleted is copied
// again).
func (s *Store) copyForward(end int64) int64 {
	if s.opts.Compaction == nil {
		return math.MaxInt64
	}
	c := &s.comp
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := s.followCopies(); err != nil {
		s.log.Error().Err(err).Msg("compaction: reading the copies; no segment is deleted")
		return 0
	}
	cp := copier{s: s, end: end, limit: end, budget: int64(s.opts.CompactionReadsPerRound)}
	minPhy := s.cl.MinOffset()
	buf := make([]consumequeue.Unit, compactionReadBatch)
	// Originals about to go.
	s.cqs.Range(func(topic string, queueID int32, q *consumequeue.Queue) bool {
		if _, ok := s.opts.Compaction(topic); !ok {
			return true
		}
		marked := c.markedOf(topic, queueID)
		for off, hi := q.OffsetByPhysical(minPhy), q.MaxOffset(); off < hi; {
			n, err := q.Read(off, buf[:min(hi-off, int64(len(buf)))])
			if err != nil || n == 0 {
				return true
			}
			for _, u := range buf[:n] {
				o := off
				off++
				if u.Offset >= end {
					return true // units ascend in the log: the rest of the queue stays
				}
				if u.Hole() || isMarked(marked, o) {
					continue
				}
				if at, ok := s.relocated(u.Offset); ok && at >= end {
					continue // copied by a round whose deletion was put off
				}
				if !cp.copy(u.Offset, u.Offset, u.Size, q.String(), o) {
					return true
				}
			}
		}
		return true
	})
	// Copies about to go.
	type doomed struct{ orig, at int64 }
	var again []doomed
	c.relocMu.RLock()
	for orig, at := range c.reloc.m {
		if orig < minPhy && at >= minPhy && at < end { // an original still there is the loop above's
			again = append(again, doomed{orig, at})
		}
	}
	c.relocMu.RUnlock()
	for _, d := range again {
		rec, v, err := s.cl.ReadRecord(d.at)
		if err != nil {
			cp.limit = min(cp.limit, d.at)
			continue
		}
		topic, queueID, qoff, size := string(rec.Topic), rec.QueueID, rec.QueueOffset, rec.StoreSize
		v.Release()
		if _, ok := s.opts.Compaction(topic); !ok || isMarked(c.markedOf(topic, queueID), qoff) {
			continue // no longer wanted: it goes with its segment
		}
		if !s.unitPointsAt(topic, queueID, qoff, d.orig) {
			continue // its topic was deleted (maybe created again), or retention dropped it
		}
		cp.copy(d.orig, d.at, size, topic, qoff)
	}
	if cp.copied {
		if err := s.cl.Flush(); err != nil {
			s.log.Error().Err(err).Msg("compaction: flushing the copies; no segment is deleted")
			return 0
		}
		s.kickDispatch()
	}
	return cp.limit
}

// unitPointsAt reports whether the unit at queue offset off of topic's queue queueID
// exists and points at commit-log offset phy.
func (s *Store) unitPointsAt(topic string, queueID int32, off, phy int64) bool {
	q, err := s.cqs.Queue(topic, queueID, false)
	if err != nil || q == nil || off < q.MinOffset() {
		return false
	}
	u, err := q.Get(off)
	return err == nil && !u.Hole() && u.Offset == phy
}

// isMarked reports whether off is among marked (sorted).
func isMarked(marked []int64, off int64) bool {
	i := sort.Search(len(marked), func(i int) bool { return marked[i] >= off })
	return i < len(marked) && marked[i] == off
}

// copier is one copyForward's progress.
type copier struct {
	s          *Store
	end, limit int64
	budget     int64
	copied     bool
}

// copy copies the record first written at orig, now at at, unless copying is not
// allowed or the budget is spent; then, and when the copy fails, the segment holding at
// must stay (limit). It returns false once no further copy should be tried.
func (cp *copier) copy(orig, at int64, size int32, queue string, off int64) bool {
	if !cp.s.opts.CompactionCopy || cp.budget <= 0 {
		cp.limit = min(cp.limit, at)
		return false
	}
	cp.budget--
	if err := cp.s.copyRecord(orig, at, size); err != nil {
		cp.s.log.Error().Err(err).Str("queue", queue).Int64("offset", off).
			Msg("compaction: copying a live record forward; its segment is kept")
		cp.limit = min(cp.limit, at)
		return false
	}
	cp.copied = true
	return true
}

// copyRecord appends a copy of the record first written at orig, now at at (size
// bytes), and records the copy in the relocation table.
func (s *Store) copyRecord(orig, at int64, size int32) error {
	if s.guard.full.Load() {
		return ErrDiskFull
	}
	v, err := s.cl.Read(at, int(size))
	if err != nil {
		return fmt.Errorf("read %d: %w", at, err)
	}
	defer v.Release()
	b := v.Bytes()
	if len(b) < message.MinRecordSize || int64(binary.BigEndian.Uint64(b[message.PosPhysicalOffset:])) != orig {
		return fmt.Errorf("%w: the record at %d is not the one first written at %d", ErrDamaged, at, orig)
	}
	rec := message.Record{Topic: []byte(CompactionCopyTopic), Body: b, BornTimestamp: s.now().UnixMilli(),
		BornHost: s.opts.StoreHost}
	res, err := s.cl.Append([]message.Record{rec}, false)
	if err != nil && res.Count == 0 {
		return fmt.Errorf("append copy: %w", err)
	}
	s.setRelocated(orig, res.PhysicalOffset+int64(copyBodyStart(int(res.Bytes), len(b))))
	s.comp.copied.Add(1)
	s.comp.copiedBytes.Add(int64(len(b)))
	return err
}

// firstLivePhy is the physical offset a queue's consume-queue files must keep from
// (cutQueuesBelow): the original offset of its first unit below minPhy that is not
// marked and has a copy at or above minPhy, or minPhy when there is none. Without any
// copy in the store it is minPhy at once.
func (s *Store) firstLivePhy(q *consumequeue.Queue, minPhy int64) int64 {
	s.comp.relocMu.RLock()
	none := len(s.comp.reloc.m) == 0 && len(s.comp.reloc.pins) == 0
	s.comp.relocMu.RUnlock()
	if none {
		return minPhy
	}
	marked := s.comp.markedOf(q.Topic(), q.QueueID())
	mi := 0
	buf := make([]consumequeue.Unit, compactionReadBatch)
	for off, hi := q.MinOffset(), q.MaxOffset(); off < hi; {
		n, err := q.Read(off, buf[:min(hi-off, int64(len(buf)))])
		if err != nil || n == 0 {
			return minPhy
		}
		for _, u := range buf[:n] {
			o := off
			off++
			if u.Offset >= minPhy {
				return minPhy
			}
			for mi < len(marked) && marked[mi] < o {
				mi++
			}
			if u.Hole() || mi < len(marked) && marked[mi] == o {
				continue
			}
			if at, ok := s.relocated(u.Offset); ok && at >= minPhy || s.comp.reloc.pins[u.Offset] {
				return u.Offset
			}
		}
	}
	return minPhy
}
