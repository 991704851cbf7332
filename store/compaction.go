package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferrymq/ferry/consumequeue"
	"github.com/ferrymq/ferry/internal/mmap"
	"github.com/ferrymq/ferry/message"
)

// Compacted topics (Options.Compaction) keep at least the latest message of every key
// in each of their queues. Ferry has one commit log shared by all topics, so nothing is
// rewritten: a compaction round marks the queue offsets whose message is superseded —
// a later message of the same key is in the same queue — and the pull path skips the
// marked offsets. Queue offsets never change, so a consumer's committed offset stays
// valid, and a reader from offset 0 sees every key's latest message plus whatever the
// rounds have not reached yet.
//
// Keys: the first word of the KEYS property, or the value of the property
// CompactionPolicy.KeyProperty names. A message without a key is never superseded.
//
// Tombstones: a message with an empty body supersedes the earlier messages of its key
// at once, like any other, and is itself marked once it has been stored longer than
// CompactionPolicy.DeleteRetention, so the key disappears from the queue.
//
// Rounds run on the cleaner goroutine every CleanInterval, after the retention pass,
// with the compaction lock held. One round reads at most Options.CompactionReadsPerRound
// records (each unit read costs one record read of the commit log, to find its key and
// its body length); a queue's scan resumes where the previous round stopped. The scan
// only reads records below the commit log's flushed offset, so a record that marks an
// earlier one superseded is durable before the mark is: a crash cannot lose a key's
// latest message while keeping the mark that hides its predecessor.
//
// The per-key state (key -> latest offset, pending tombstones) lives in memory and is
// rebuilt after a restart by scanning each compacted queue again from its minimum; the
// scan does not read offsets that are already marked. The marks themselves are kept in
// the compaction file, replaced atomically (temp file, fsync, rename, directory fsync)
// after every round that changed them, so pulls skip them from the first pull after a
// restart. A compaction file that does not decode is ignored (a warning is logged and
// CompactionStats.BadFiles counted): losing marks only shows superseded messages again
// until the rescan has marked them anew, it never hides a latest message.
//
// Marks below a queue's minimum are dropped when the file is next written; marks at or
// beyond a queue's maximum (a log tail lost to a crash) are dropped when it is loaded;
// Truncate removes the file, since it may cut the message that made a mark; DeleteTopic
// drops the topic's marks at once, so a topic created again under the name starts clean;
// a topic whose compaction is turned off loses its marks at the next round (its
// superseded messages become readable again while they are in the commit log).
//
// The commit log's cleanup deletes whole segments shared by every topic; before it
// deletes one, the live records of compacted queues in it are copied forward
// (compaction_copy.go), so a key's latest message outlives the segment it was written in.
//
// The compaction file layout (integers are unsigned LEB128 varints unless noted):
//
//	magic "FCMP" | version byte (1) | queue count
//	per queue: topic length | topic | queue id (zigzag varint) | mark count |
//	           first offset | gaps to each following offset (each >= 1)
//	CRC-32 (IEEE) of everything before it, 4 bytes big endian
const (
	compactionFileName    = "compaction.bin"
	compactionMagic       = "FCMP"
	compactionFileVersion = 1
	compactionReadBatch   = 256
)

// ErrCompactionFile means the compaction file does not decode (decodeCompactionFile);
// Open logs it and goes on without the file's marks.
var ErrCompactionFile = errors.New("store: bad compaction file")

// CompactionPolicy is a compacted topic's settings (Options.Compaction).
type CompactionPolicy struct {
	// KeyProperty names the property whose value is a message's key; empty: the first
	// word of KEYS.
	KeyProperty string
	// DeleteRetention is how long a tombstone (a message with an empty body) stays
	// readable after it is stored before it is dropped too. 0 drops it at the first
	// round after it was scanned.
	DeleteRetention time.Duration
}

// CompactionStats are the compaction rounds' counters.
type CompactionStats struct {
	// Rounds counts the rounds that ran since Open (rounds without compacted topics
	// are not counted).
	Rounds int64
	// Reads counts the records the rounds read since Open.
	Reads int64
	// Marked counts the offsets the rounds marked since Open (superseded messages and
	// expired tombstones); Tombstones the expired tombstones among them.
	Marked, Tombstones int64
	// Skipped is how many marked offsets the pull path honours now (the marks of every
	// queue, as kept in the compaction file).
	Skipped int64
	// Queues is the number of compacted queues with state.
	Queues int64
	// BadFiles counts compaction files Open could not decode and ignored, and failed
	// writes of it.
	BadFiles int64
	// Copied counts the live records copied forward before their commit-log segment
	// was deleted since Open, CopiedBytes their bytes; Relocated is the size of the
	// relocation table (records served from a copy, or about to be).
	Copied, CopiedBytes, Relocated int64
}

// latestOf is what a compaction scan knows of one key.
type latestOf struct {
	offset  int64
	storeMs int64
}

// compactQueue is a round's state of one queue; only rounds (under compaction.mu) touch it.
type compactQueue struct {
	next    int64               // the next queue offset to scan
	latest  map[string]latestOf // key -> its latest message scanned
	tombs   map[string]struct{} // keys whose latest message is a tombstone not yet dropped
	keyProp string              // the CompactionPolicy.KeyProperty latest was built with
}

// compaction is the store's compaction state.
type compaction struct {
	mu     sync.Mutex // held by a round and by DeleteTopic's reset
	queues map[queueKey]*compactQueue
	// marks are the published marks, sorted per queue; pulls read them without a lock.
	// A new map (and new slices) replaces the old one: nothing published is modified.
	marks atomic.Pointer[map[queueKey][]int64]
	buf   []consumequeue.Unit

	relocMu sync.RWMutex // guards reloc.m: the cleaner writes, reads look up
	reloc   relocation   // copy-forward table (compaction_copy.go)

	rounds, reads, marked, tombstones, skipped, nqueues, badFiles atomic.Int64
	copies, copied, copiedBytes                                   atomic.Int64
}

// markedOf returns the published marks of a queue (nil: none).
func (c *compaction) markedOf(topic string, queueID int32) []int64 {
	m := c.marks.Load()
	if m == nil || len(*m) == 0 {
		return nil
	}
	return (*m)[queueKey{topic, queueID}]
}

// publish replaces the published marks and recounts Skipped.
func (c *compaction) publish(m map[queueKey][]int64) {
	var n int64
	for _, offs := range m {
		n += int64(len(offs))
	}
	c.marks.Store(&m)
	c.skipped.Store(n)
}

// CompactionStats returns the compaction counters.
func (s *Store) CompactionStats() CompactionStats {
	c := &s.comp
	return CompactionStats{Rounds: c.rounds.Load(), Reads: c.reads.Load(), Marked: c.marked.Load(),
		Tombstones: c.tombstones.Load(), Skipped: c.skipped.Load(), Queues: c.nqueues.Load(),
		BadFiles: c.badFiles.Load(), Copied: c.copied.Load(), CopiedBytes: c.copiedBytes.Load(),
		Relocated: c.copies.Load()}
}

// loadCompaction reads the compaction file; Open calls it after recovery. A file that
// does not decode is logged and ignored (see the package comment above).
func (s *Store) loadCompaction() error {
	s.comp.queues = map[queueKey]*compactQueue{}
	s.comp.publish(map[queueKey][]int64{})
	data, err := s.opts.FS.ReadFile(s.opts.compactionPath())
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("store: read compaction file: %w", err)
	}
	marks, err := decodeCompactionFile(data)
	if err != nil {
		s.comp.badFiles.Add(1)
		s.log.Warn().Err(err).Str("file", s.opts.compactionPath()).
			Msg("compaction: ignoring the compaction file; superseded messages are readable until the next rounds mark them again")
		return nil
	}
	out := map[queueKey][]int64{}
	for k, offs := range marks {
		q, err := s.cqs.Queue(k.topic, k.queue, false)
		if err != nil || q == nil {
			continue // the topic was deleted: the entry goes with the next write
		}
		lo, hi := q.MinOffset(), q.MaxOffset()
		i := sort.Search(len(offs), func(i int) bool { return offs[i] >= lo })
		j := sort.Search(len(offs), func(i int) bool { return offs[i] >= hi })
		if i < j {
			out[k] = offs[i:j:j]
		}
	}
	s.comp.publish(out)
	return nil
}

// decodeCompactionFile decodes a compaction file (layout above) into each queue's
// sorted marked offsets. Errors wrap ErrCompactionFile.
func decodeCompactionFile(data []byte) (map[queueKey][]int64, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrCompactionFile}, args...)...)
	}
	if len(data) < len(compactionMagic)+1+4 || !bytes.HasPrefix(data, []byte(compactionMagic)) {
		return nil, bad("too short or wrong magic")
	}
	body, sum := data[:len(data)-4], data[len(data)-4:]
	if crc32.ChecksumIEEE(body) != binary.BigEndian.Uint32(sum) {
		return nil, bad("checksum mismatch")
	}
	if v := body[len(compactionMagic)]; v != compactionFileVersion {
		return nil, bad("version %d, not %d", v, compactionFileVersion)
	}
	d := varintReader{b: body[len(compactionMagic)+1:]}
	nq := d.uvarint()
	out := map[queueKey][]int64{}
	for i := uint64(0); i < nq && d.err == nil; i++ {
		topic := d.bytes(d.uvarint())
		qid := d.varint()
		n := d.uvarint()
		if d.err != nil {
			break
		}
		if len(topic) == 0 || len(topic) > message.MaxTopicLength || qid < 0 || qid > 1<<31-1 || n == 0 || n > uint64(len(d.b)) {
			return nil, bad("queue %d: bad topic, queue id or count", i)
		}
		k := queueKey{string(topic), int32(qid)}
		if _, dup := out[k]; dup {
			return nil, bad("queue %s/%d listed twice", k.topic, k.queue)
		}
		offs := make([]int64, 0, n)
		var off uint64
		for j := uint64(0); j < n && d.err == nil; j++ {
			g := d.uvarint()
			if j > 0 && g == 0 {
				return nil, bad("queue %s/%d: offsets not ascending", k.topic, k.queue)
			}
			if off+g < off || off+g > 1<<62 {
				return nil, bad("queue %s/%d: offset out of range", k.topic, k.queue)
			}
			off += g
			offs = append(offs, int64(off))
		}
		out[k] = offs
	}
	if d.err != nil {
		return nil, bad("%v", d.err)
	}
	if len(d.b) != 0 {
		return nil, bad("%d bytes after the last queue", len(d.b))
	}
	return out, nil
}

// encodeCompactionFile encodes marks (each sorted, without duplicates) in the layout
// above, queues in (topic, queue) order.
func encodeCompactionFile(marks map[queueKey][]int64) []byte {
	keys := make([]queueKey, 0, len(marks))
	for k, offs := range marks {
		if len(offs) > 0 {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		return keys[i].topic < keys[j].topic || keys[i].topic == keys[j].topic && keys[i].queue < keys[j].queue
	})
	b := append([]byte(compactionMagic), compactionFileVersion)
	b = binary.AppendUvarint(b, uint64(len(keys)))
	for _, k := range keys {
		offs := marks[k]
		b = binary.AppendUvarint(b, uint64(len(k.topic)))
		b = append(b, k.topic...)
		b = binary.AppendVarint(b, int64(k.queue))
		b = binary.AppendUvarint(b, uint64(len(offs)))
		prev := int64(0)
		for _, o := range offs {
			b = binary.AppendUvarint(b, uint64(o-prev))
			prev = o
		}
	}
	return binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(b))
}

// compactOnce runs one compaction round over every queue of a compacted topic and
// returns how many offsets it marked. Only the cleaner goroutine calls it.
func (s *Store) compactOnce() int64 {
	if s.opts.Compaction == nil {
		return 0
	}
	c := &s.comp
	c.mu.Lock()
	defer c.mu.Unlock()
	budget := int64(s.opts.CompactionReadsPerRound)
	fence := min(s.cl.FlushedOffset(), s.dispatched.Load())
	nowMs := s.now().UnixMilli()
	old := c.marks.Load()
	fresh := map[queueKey][]int64{} // offsets marked this round, per queue
	live := map[queueKey]bool{}
	dropped, compacted := false, false
	s.cqs.Range(func(topic string, queueID int32, q *consumequeue.Queue) bool {
		k := queueKey{topic, queueID}
		pol, ok := s.opts.Compaction(topic)
		if !ok {
			if c.queues[k] != nil || len((*old)[k]) > 0 {
				dropped = true // compaction turned off: forget the queue at the write below
			}
			return true
		}
		live[k], compacted = true, true
		cq := c.queues[k]
		if cq == nil || cq.keyProp != pol.KeyProperty {
			// New, or its key changed (compactionKey): scan it again from its start under
			// the new key, so that no key extracted the old way marks anything. What was
			// marked before stays marked.
			cq = &compactQueue{next: q.MinOffset(), latest: map[string]latestOf{}, tombs: map[string]struct{}{},
				keyProp: pol.KeyProperty}
			c.queues[k] = cq
		}
		cq.next = max(cq.next, q.MinOffset())
		var marks []int64
		for key := range cq.tombs {
			l := cq.latest[key]
			if nowMs-l.storeMs >= pol.DeleteRetention.Milliseconds() {
				marks = append(marks, l.offset)
				delete(cq.latest, key)
				delete(cq.tombs, key)
				c.tombstones.Add(1)
			}
		}
		if budget > 0 {
			marks = s.scanQueue(q, cq, pol, (*old)[k], fence, &budget, marks)
		}
		if len(marks) > 0 {
			fresh[k] = marks
		}
		return true // on without a budget: tombstones still expire, and every queue counts as live
	})
	if compacted {
		c.rounds.Add(1)
	}
	for k := range c.queues {
		if !live[k] {
			delete(c.queues, k)
			dropped = true
		}
	}
	c.nqueues.Store(int64(len(c.queues)))
	if len(fresh) == 0 && !dropped {
		return 0
	}
	next := map[queueKey][]int64{}
	var n int64
	for k, offs := range *old {
		if live[k] {
			next[k] = offs
		}
	}
	for k, offs := range fresh {
		n += int64(len(offs))
		next[k] = mergeMarks(next[k], offs, s.MinOffset(k.topic, k.queue))
	}
	c.marked.Add(n)
	c.publish(next)
	if err := s.opts.FS.WriteFileAtomic(s.opts.compactionPath(), encodeCompactionFile(next)); err != nil {
		// The marks hold in memory; after a restart before the next successful write the
		// rescan marks the same offsets again.
		c.badFiles.Add(1)
		s.log.Error().Err(err).Msg("compaction: writing the compaction file")
	}
	return n
}

// scanQueue advances cq's scan of q by at most *budget record reads, stopping at the
// first unit not wholly below fence, and returns marks with the offsets it found
// superseded appended. Offsets in marked (the queue's published marks) are not read.
func (s *Store) scanQueue(q *consumequeue.Queue, cq *compactQueue, pol CompactionPolicy, marked []int64, fence int64, budget *int64, marks []int64) []int64 {
	c := &s.comp
	if c.buf == nil {
		c.buf = make([]consumequeue.Unit, compactionReadBatch)
	}
	mi := sort.Search(len(marked), func(i int) bool { return marked[i] >= cq.next })
	for hi := q.MaxOffset(); cq.next < hi && *budget > 0; {
		n, err := q.Read(cq.next, c.buf[:min(hi-cq.next, int64(len(c.buf)))])
		if err != nil || n == 0 {
			return marks
		}
		for _, u := range c.buf[:n] {
			off := cq.next
			for mi < len(marked) && marked[mi] < off {
				mi++
			}
			if u.Hole() || mi < len(marked) && marked[mi] == off {
				cq.next++
				continue
			}
			if u.End() > fence || *budget <= 0 {
				return marks
			}
			*budget--
			c.reads.Add(1)
			rec, v, err := s.readRecordAt(u.Offset)
			if err != nil {
				cq.next++ // its segment was deleted (or the record is damaged): nothing to keep
				continue
			}
			kb, tomb, ms := compactionKey(&rec, pol.KeyProperty), len(rec.Body) == 0, rec.StoreTimestamp
			key := string(kb) // a copy: kb aliases the view released next
			v.Release()
			cq.next++
			if key == "" {
				continue
			}
			if prev, ok := cq.latest[key]; ok {
				marks = append(marks, prev.offset)
			}
			cq.latest[key] = latestOf{offset: off, storeMs: ms}
			if tomb {
				cq.tombs[key] = struct{}{}
			} else {
				delete(cq.tombs, key)
			}
		}
	}
	return marks
}

// compactionKey returns a record's compaction key (empty if it has none), aliasing the
// record's bytes.
func compactionKey(rec *message.Record, prop string) []byte {
	if prop != "" {
		v, _ := message.LookupProperty(rec.Properties, prop)
		return v
	}
	v, _ := message.LookupProperty(rec.Properties, message.PropertyKeys)
	for w := range message.KeyWords(v) {
		return w
	}
	return nil
}

// varintReader reads the varints of the compaction file; the first error sticks.
type varintReader struct {
	b   []byte
	err error
}

func (r *varintReader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errors.New("truncated or overlong varint")
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *varintReader) varint() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.err = errors.New("truncated or overlong varint")
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *varintReader) bytes(n uint64) []byte {
	if r.err != nil {
		return nil
	}
	if n > uint64(len(r.b)) {
		r.err = fmt.Errorf("%d bytes wanted, %d left", n, len(r.b))
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

// mergeMarks returns the sorted union of old (sorted) and add (any order) without the
// offsets below minOffset, in a new slice.
func mergeMarks(old, add []int64, minOffset int64) []int64 {
	slices.Sort(add)
	out := make([]int64, 0, len(old)+len(add))
	i, j := 0, 0
	for i < len(old) || j < len(add) {
		var o int64
		switch {
		case j == len(add) || i < len(old) && old[i] <= add[j]:
			o = old[i]
			i++
		default:
			o = add[j]
			j++
		}
		if o >= minOffset && (len(out) == 0 || out[len(out)-1] != o) {
			out = append(out, o)
		}
	}
	return out
}

// resetCompaction forgets the compaction state and marks of topic (DeleteTopic): a
// topic created again under the name starts with no marks.
func (s *Store) resetCompaction(topic string) error {
	c := &s.comp
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.marks.Load()
	next := map[queueKey][]int64{}
	found := false
	for k, offs := range *old {
		if k.topic == topic {
			found = true
			continue
		}
		next[k] = offs
	}
	if found {
		// The file first: should it fail, the marks stay (in memory and on disk) and the
		// next DeleteTopic writes it again, so a restart never loads them for a topic
		// created again under the name.
		if err := s.opts.FS.WriteFileAtomic(s.opts.compactionPath(), encodeCompactionFile(next)); err != nil &&
			!errors.Is(err, mmap.ErrRenameNotDurable) {
			return fmt.Errorf("store: write compaction file: %w", err)
		}
		c.publish(next)
	}
	for k := range c.queues {
		if k.topic == topic {
			delete(c.queues, k)
		}
	}
	c.nqueues.Store(int64(len(c.queues)))
	return nil
}

// removeCompactionFile drops every mark, in memory and on disk (Truncate).
func (s *Store) removeCompactionFile() error {
	c := &s.comp
	c.mu.Lock()
	defer c.mu.Unlock()
	c.publish(map[queueKey][]int64{})
	clear(c.queues)
	err := s.opts.FS.Remove(s.opts.compactionPath())
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("remove compaction file: %w", err)
	}
	if err := s.opts.FS.SyncDir(s.opts.Dir); err != nil {
		return fmt.Errorf("remove compaction file: %w", err)
	}
	return nil
}
