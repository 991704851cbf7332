package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"maps"
	"slices"

	"github.com/ferrymq/ferry/consumequeue"
	"github.com/ferrymq/ferry/internal/binread"
)

// Queue table file layout (`<dir>/queuetable`, big-endian): the consume queues the store
// had when it was written, so recovery notices a queue whose files went missing, and the
// topics deleted while their records are still in the log, so no re-dispatch brings them
// back. It is replaced atomically (temp file, fsync, rename, directory fsync).
//
//	0  magic       8 B    "FERRYQT1"
//	8  count       uint32 number of queue entries
//	12 entries     count × { topicLen uint16, topic [topicLen]byte, queueId int32, maxOffset int64 }
//	…  deleted     uint32 number of deleted topics
//	…  tombstones  deleted × { topicLen uint16, topic [topicLen]byte, before int64 }
//	…  crc         uint32 IEEE CRC-32 of every byte before it
//
// maxOffset is the queue's MaxOffset when the table was written: after a clean stop the
// queue holds at least that much; after a crash it may hold less (the log's unflushed tail
// was lost), which recovery treats as a reason to re-derive, never as an error. A
// tombstone's before is the end of the commit log when the topic was deleted: its records
// below it are never dispatched again; the tombstone is dropped once the log's start
// passes it.
const (
	queueTableName  = "queuetable"
	queueTableMagic = "FERRYQT1"
)

// errBadQueueTable marks a queue table that does not decode.
var errBadQueueTable = errors.New("store: queue table is damaged")

// queueEntry is one queue of the table.
type queueEntry struct {
	Topic     string
	QueueID   int32
	MaxOffset int64
}

// queueTable is the decoded queue table.
type queueTable struct {
	Queues  []queueEntry
	Deleted map[string]int64 // topic → commit-log end when it was deleted
}

// encodeQueueTable lays out t in a fresh buffer (tombstones sorted by topic).
func encodeQueueTable(t queueTable) []byte {
	b := make([]byte, 0, 64+len(t.Queues)*32+len(t.Deleted)*32)
	b = append(b, queueTableMagic...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(t.Queues)))
	for _, e := range t.Queues {
		b = binary.BigEndian.AppendUint16(b, uint16(len(e.Topic)))
		b = append(b, e.Topic...)
		b = binary.BigEndian.AppendUint32(b, uint32(e.QueueID))
		b = binary.BigEndian.AppendUint64(b, uint64(e.MaxOffset))
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(t.Deleted)))
	for _, topic := range slices.Sorted(maps.Keys(t.Deleted)) {
		b = binary.BigEndian.AppendUint16(b, uint16(len(topic)))
		b = append(b, topic...)
		b = binary.BigEndian.AppendUint64(b, uint64(t.Deleted[topic]))
	}
	return binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(b))
}

// tableTopic reads a non-empty topic name (uint16 length, bytes).
func tableTopic(r *binread.Reader) string {
	t := r.String16()
	if r.Err() == nil && t == "" {
		r.Fail(fmt.Errorf("%w: empty topic", errBadQueueTable))
	}
	return t
}

// decodeQueueTable reads a queue table.
func decodeQueueTable(b []byte) (queueTable, error) {
	var t queueTable
	if len(b) < len(queueTableMagic)+12 || string(b[:len(queueTableMagic)]) != queueTableMagic {
		return t, fmt.Errorf("%w: no header", errBadQueueTable)
	}
	body, sum := b[:len(b)-4], binary.BigEndian.Uint32(b[len(b)-4:])
	if crc32.ChecksumIEEE(body) != sum {
		return t, fmt.Errorf("%w: crc mismatch", errBadQueueTable)
	}
	r := binread.New(body[len(queueTableMagic):])
	n := r.Count(2 + 1 + 12)
	for i := 0; i < n && r.Err() == nil; i++ {
		e := queueEntry{Topic: tableTopic(r), QueueID: int32(r.Uint32()), MaxOffset: int64(r.Uint64())}
		if r.Err() == nil && (e.QueueID < 0 || e.MaxOffset < 0) {
			r.Fail(fmt.Errorf("%w: entry %q/%d@%d", errBadQueueTable, e.Topic, e.QueueID, e.MaxOffset))
		}
		t.Queues = append(t.Queues, e)
	}
	n = r.Count(2 + 1 + 8)
	for i := 0; i < n && r.Err() == nil; i++ {
		topic, before := tableTopic(r), int64(r.Uint64())
		if r.Err() == nil && before < 0 {
			r.Fail(fmt.Errorf("%w: tombstone %q@%d", errBadQueueTable, topic, before))
		}
		if r.Err() == nil {
			if _, dup := t.Deleted[topic]; dup {
				r.Fail(fmt.Errorf("%w: tombstone %q twice", errBadQueueTable, topic))
			}
		}
		if t.Deleted == nil {
			t.Deleted = make(map[string]int64, n)
		}
		t.Deleted[topic] = before
	}
	if r.Err() == nil && r.Len() != 0 {
		r.Fail(fmt.Errorf("%w: %d trailing bytes", errBadQueueTable, r.Len()))
	}
	if err := r.Err(); err != nil {
		if !errors.Is(err, errBadQueueTable) {
			err = fmt.Errorf("%w: %w", errBadQueueTable, err)
		}
		return queueTable{}, err
	}
	return t, nil
}

// loadQueueTable reads the queue table; a missing file is an empty table.
func (s *Store) loadQueueTable() (queueTable, error) {
	b, err := s.opts.FS.ReadFile(s.opts.queueTablePath())
	if errors.Is(err, fs.ErrNotExist) {
		return queueTable{}, nil
	}
	if err != nil {
		return queueTable{}, fmt.Errorf("store: read queue table: %w", err)
	}
	return decodeQueueTable(b)
}

// writeQueueTable records the current queues when they changed since the last write (or
// always, with force). Callers hold cpMu.
func (s *Store) writeQueueTable(force bool) error {
	gen := s.cqs.Generation()
	if !force && s.tableGen.written && s.tableGen.gen == gen {
		return nil
	}
	var t queueTable
	s.cqs.Range(func(topic string, queueID int32, q *consumequeue.Queue) bool {
		if q.MaxOffset() > 0 {
			t.Queues = append(t.Queues, queueEntry{Topic: topic, QueueID: queueID, MaxOffset: q.MaxOffset()})
		}
		return true
	})
	t.Deleted = s.pruneTombstones()
	if err := s.opts.FS.WriteFileAtomic(s.opts.queueTablePath(), encodeQueueTable(t)); err != nil {
		return fmt.Errorf("store: write queue table: %w", err)
	}
	s.tableGen.gen, s.tableGen.written = gen, true
	return nil
}

// pruneTombstones drops the tombstones the log's start has passed (their records are
// gone) and returns the ones left.
func (s *Store) pruneTombstones() map[string]int64 {
	s.tombMu.Lock()
	defer s.tombMu.Unlock()
	cur := s.tombs.Load()
	if cur == nil {
		return nil
	}
	logMin := s.cl.MinOffset()
	keep := maps.Clone(*cur)
	maps.DeleteFunc(keep, func(_ string, before int64) bool { return before <= logMin })
	if len(keep) != len(*cur) {
		s.tombs.Store(&keep)
	}
	return keep
}

// addTombstone records that topic's records below before are not to be dispatched again.
func (s *Store) addTombstone(topic string, before int64) {
	s.tombMu.Lock()
	defer s.tombMu.Unlock()
	next := make(map[string]int64)
	if cur := s.tombs.Load(); cur != nil {
		maps.Copy(next, *cur)
	}
	next[topic] = before
	s.tombs.Store(&next)
}

// deleted reports whether the record of topic at physical offset off belongs to a deleted
// topic. It allocates nothing and costs one atomic load while no topic is deleted.
func (s *Store) deleted(topic []byte, off int64) bool {
	m := s.tombs.Load()
	if m == nil || len(*m) == 0 {
		return false
	}
	before, ok := (*m)[string(topic)]
	return ok && off < before
}
