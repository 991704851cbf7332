package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sort"
	"sync"

	"github.com/ferrymq/ferry/commitlog"
	"github.com/ferrymq/ferry/consumequeue"
	"github.com/ferrymq/ferry/message"
)

// GetStatus is the outcome of GetMessages (RocketMQ's GetMessageStatus).
type GetStatus uint8

// Statuses. The broker maps them to pull response codes (storage spec §6.2).
const (
	// Found: at least one message.
	Found GetStatus = iota
	// NoMatchedMessage: units were scanned but the filter matched none (or they were
	// removed); pull again from NextBeginOffset at once.
	NoMatchedMessage
	// NoMessageInQueue: the queue has never held a message.
	NoMessageInQueue
	// NoMatchedLogicQueue: the queue does not exist.
	NoMatchedLogicQueue
	// OffsetOverflowOne: the offset equals the max offset — nothing new yet.
	OffsetOverflowOne
	// OffsetOverflowBadly: the offset is beyond the max offset.
	OffsetOverflowBadly
	// OffsetTooSmall: the offset is below the min offset (data deleted).
	OffsetTooSmall
)

// String returns RocketMQ's name of the status.
func (s GetStatus) String() string {
	switch s {
	case Found:
		return "FOUND"
	case NoMatchedMessage:
		return "NO_MATCHED_MESSAGE"
	case NoMessageInQueue:
		return "NO_MESSAGE_IN_QUEUE"
	case NoMatchedLogicQueue:
		return "NO_MATCHED_LOGIC_QUEUE"
	case OffsetOverflowOne:
		return "OFFSET_OVERFLOW_ONE"
	case OffsetOverflowBadly:
		return "OFFSET_OVERFLOW_BADLY"
	case OffsetTooSmall:
		return "OFFSET_TOO_SMALL"
	default:
		return fmt.Sprintf("GetStatus(%d)", uint8(s))
	}
}

// Read limits of one GetMessages call.
const (
	// maxScanUnits bounds the units one call scans (RocketMQ scans max(16000 B, n×20 B)).
	maxScanUnits = 800
	// unitBatch is how many units are read from a consume queue at a time.
	unitBatch = 64
)

// GetResult is what GetMessages found. Messages are zero-copy slices of the commit log;
// they stay valid until Release, which the caller must call exactly once (for a pull,
// after the response has been written to the socket).
type GetResult struct {
	Status          GetStatus
	NextBeginOffset int64
	MinOffset       int64
	MaxOffset       int64
	// Messages are the records, each exactly its stored bytes, in queue order.
	Messages [][]byte
	// QueueOffsets are the messages' queue offsets.
	QueueOffsets []int64
	// Bytes is the total size of Messages.
	Bytes int
	// InDisk reports that the last unit the read scanned points more than
	// Options.InMemoryMaxBytes behind the commit log's end: the consumer is far behind
	// and its reads likely miss the page cache (RocketMQ's suggestPullingFromSlave).
	// Only a read that scanned units (Found, NoMatchedMessage) sets it.
	InDisk bool

	views []*commitlog.View
	units [unitBatch]consumequeue.Unit
	pool  *sync.Pool
}

// Release returns the commit-log segments the messages point into.
func (r *GetResult) Release() {
	for i, v := range r.views {
		v.Release()
		r.views[i] = nil
	}
	clear(r.Messages)
	r.Messages, r.QueueOffsets, r.views = r.Messages[:0], r.QueueOffsets[:0], r.views[:0]
	r.Bytes = 0
	if p := r.pool; p != nil {
		p.Put(r)
	}
}

// Filter selects the messages a read returns, in two steps: MatchTagsCode sees each
// consume-queue unit's tags code before the record is read (a tag-hash filter: cheap, but
// hashes may collide), and MatchRecord sees the stored bytes of each record that passed
// (an SQL92 filter over its properties). A filter that needs only one step returns true
// from the other.
type Filter interface {
	MatchTagsCode(tagsCode int64) bool
	MatchRecord(record []byte) bool
}

// TagsCodeFilter is a Filter on tags codes alone.
type TagsCodeFilter func(tagsCode int64) bool

// MatchTagsCode implements Filter.
func (f TagsCodeFilter) MatchTagsCode(tagsCode int64) bool { return f(tagsCode) }

// MatchRecord implements Filter: every record passes.
func (TagsCodeFilter) MatchRecord([]byte) bool { return true }

// GetMessages reads up to maxMsgs messages (and about maxBytes bytes; the first message is
// always taken) from a consume queue starting at offset. filter, if not nil, receives each
// unit's tags code and decides whether the message is wanted (a tag-hash filter: the
// caller re-checks the exact tags when hashes may collide). Steady-state calls allocate
// nothing: results are pooled and messages point into the mapped log.
func (s *Store) GetMessages(topic string, queueID int32, offset int64, maxMsgs, maxBytes int, filter func(tagsCode int64) bool) (*GetResult, error) {
	if filter == nil {
		return s.PullMessages(topic, queueID, offset, maxMsgs, maxBytes, nil)
	}
	return s.PullMessages(topic, queueID, offset, maxMsgs, maxBytes, TagsCodeFilter(filter))
}

// PullMessages is GetMessages with a two-step Filter (nil: every message). Records a
// filter refuses are skipped and counted as scanned, as RocketMQ does; the ones returned
// are still slices of the mapped log.
func (s *Store) PullMessages(topic string, queueID int32, offset int64, maxMsgs, maxBytes int, filter Filter) (*GetResult, error) {
	r, _ := s.results.Get().(*GetResult)
	if r == nil {
		r = &GetResult{pool: &s.results}
	}
	r.NextBeginOffset, r.MinOffset, r.MaxOffset, r.InDisk = 0, 0, 0, false
	q, err := s.cqs.Queue(topic, queueID, false)
	if errors.Is(err, consumequeue.ErrQueueNotFound) || q == nil {
		r.Status = NoMatchedLogicQueue
		return r, nil
	}
	if err != nil {
		r.Release()
		return nil, fmt.Errorf("store: %w", err)
	}
	r.MinOffset, r.MaxOffset = q.MinOffset(), q.MaxOffset()
	switch {
	case r.MaxOffset == 0:
		r.Status, r.NextBeginOffset = NoMessageInQueue, 0
		return r, nil
	case offset < r.MinOffset:
		r.Status, r.NextBeginOffset = OffsetTooSmall, r.MinOffset
		return r, nil
	case offset == r.MaxOffset:
		r.Status, r.NextBeginOffset = OffsetOverflowOne, offset
		return r, nil
	case offset > r.MaxOffset:
		r.Status, r.NextBeginOffset = OffsetOverflowBadly, r.MaxOffset
		return r, nil
	}
	if err := s.collect(r, q, offset, maxMsgs, maxBytes, filter); err != nil {
		r.Release()
		return nil, err
	}
	if len(r.Messages) > 0 {
		r.Status = Found
	} else {
		r.Status = NoMatchedMessage
	}
	return r, nil
}

// collect fills r from q starting at offset.
func (s *Store) collect(r *GetResult, q *consumequeue.Queue, offset int64, maxMsgs, maxBytes int, filter Filter) error {
	next := offset
	// Offsets a compaction round marked (superseded, expired tombstones) are skipped
	// like units a filter refuses; mi walks the sorted marks along with next.
	marked := s.comp.markedOf(q.Topic(), q.QueueID())
	mi := 0
	if len(marked) > 0 {
		mi = sort.Search(len(marked), func(i int) bool { return marked[i] >= offset })
	}
	var view *commitlog.View // the segment view messages are cut from
	minPhy := s.cl.MinOffset()
	lastPhy := int64(-1) // physical offset of the last unit scanned
scan:
	for scanned := 0; scanned < maxScanUnits; {
		n, err := q.Read(next, r.units[:min(unitBatch, maxScanUnits-scanned)])
		if err != nil && n == 0 {
			if errors.Is(err, consumequeue.ErrOffsetOutOfRange) {
				break
			}
			return fmt.Errorf("store: read %s at %d: %w", q, next, err)
		}
		if n == 0 {
			break
		}
		for _, u := range r.units[:n] {
			if len(r.Messages) >= maxMsgs || (len(r.Messages) > 0 && r.Bytes+int(u.Size) > maxBytes) {
				break scan
			}
			next++
			scanned++
			if !u.Hole() {
				lastPhy = u.Offset
			}
			if filter != nil && !filter.MatchTagsCode(u.TagsCode) {
				continue
			}
			if mi < len(marked) {
				for mi < len(marked) && marked[mi] < next-1 {
					mi++
				}
				if mi < len(marked) && marked[mi] == next-1 {
					continue
				}
			}
			if u.Hole() {
				continue // lost to damage
			}
			// at is where the record is: where it was written, or its copy once that
			// segment is gone (a compacted topic's live record, compaction_copy.go).
			at := u.Offset
			if at < minPhy {
				var ok bool
				if at, ok = s.relocated(u.Offset); !ok || at < minPhy {
					continue // its segment was deleted
				}
			}
			if view == nil || at < view.Offset() || at+int64(u.Size) > view.Offset()+int64(len(view.Bytes())) {
				v, err := s.readSegmentFrom(at)
				if errors.Is(err, commitlog.ErrDeleted) || errors.Is(err, commitlog.ErrOutOfRange) {
					// Deleted since minPhy was read: a copy may have been made just before.
					if copyAt, ok := s.relocated(u.Offset); ok && copyAt != at {
						at = copyAt
						v, err = s.readSegmentFrom(at)
					}
				}
				if errors.Is(err, commitlog.ErrDeleted) || errors.Is(err, commitlog.ErrOutOfRange) {
					continue
				}
				if err != nil {
					return fmt.Errorf("store: read message at %d: %w", at, err)
				}
				r.views = append(r.views, v)
				view = v
			}
			rel := at - view.Offset()
			b := view.Bytes()[rel : rel+int64(u.Size) : rel+int64(u.Size)]
			var body []byte
			if !s.noReadChecks {
				if body = s.pulledBody(b, u.Offset, next-1, q); body == nil {
					continue
				}
			}
			if filter != nil && !filter.MatchRecord(b) {
				continue
			}
			if body != nil && !s.bodyIntact(b, body, u.Offset) {
				continue
			}
			r.Messages = append(r.Messages, b)
			r.QueueOffsets = append(r.QueueOffsets, next-1)
			r.Bytes += int(u.Size)
		}
	}
	r.NextBeginOffset = next
	r.InDisk = lastPhy >= 0 && s.inDisk(lastPhy)
	return nil
}

// inDisk reports whether a record at phy is more than Options.InMemoryMaxBytes behind
// the commit log's end (storage spec §6.1, isInDisk).
func (s *Store) inDisk(phy int64) bool {
	limit := s.opts.InMemoryMaxBytes
	return limit > 0 && s.cl.MaxOffset()-phy > limit
}

// Why pulledBody refuses a record (sentinels: a bad read allocates nothing).
var (
	errPullHeader = errors.New("size or magic does not match the consume-queue unit")
	errPullPlace  = errors.New("physical offset, queue id or queue offset does not match the consume-queue unit")
	errPullLayout = errors.New("body, topic and properties lengths do not add up to the size")
	errPullTopic  = errors.New("topic is not the consume queue's")
	errPullTail   = errors.New("properties do not end with the 0x02 separator (torn write?)")
	errPullPort   = errors.New("a host port is out of range")
)

// pulledBody is the pull path's check of a record before it is served, short of its body
// CRC: TOTALSIZE equals the unit's size, the magic is V1, PHYSICALOFFSET, QUEUEID and
// QUEUEOFFSET are the unit's, both host ports fit 16 bits, the body, topic and properties
// lengths add up to the size, the topic is the queue's and non-empty properties end with
// 0x02 (so every record served decodes: message.DecodeRecord accepts it) — fixed-position loads
// and one short compare, no decoding. It returns the record's body (aliasing b), or nil
// after counting and logging (badRead) a record that fails. bodyIntact then checks the
// body CRC of a record the filter keeps.
func (s *Store) pulledBody(b []byte, phy, queueOffset int64, q *consumequeue.Queue) []byte {
	be := binary.BigEndian
	if len(b) < message.MinRecordSize || int(be.Uint32(b)) != len(b) || be.Uint32(b[message.PosMagic:]) != message.MagicV1 {
		s.badRead(phy, errPullHeader)
		return nil
	}
	if int64(be.Uint64(b[message.PosPhysicalOffset:])) != phy || int64(be.Uint64(b[message.PosQueueOffset:])) != queueOffset ||
		int32(be.Uint32(b[message.PosQueueID:])) != q.QueueID() {
		s.badRead(phy, errPullPlace)
		return nil
	}
	// V1 after the born timestamp: born host (4 or 16 bytes) and port, store timestamp,
	// store host and port, reconsume times, prepared offset, body length and body, topic
	// length (1 byte) and topic, properties length (2 bytes) and properties.
	sys := be.Uint32(b[message.PosSysFlag:])
	bornLen, storeLen := 4, 4
	if sys&uint32(message.SysFlagBornHostV6) != 0 {
		bornLen = 16
	}
	if sys&uint32(message.SysFlagStoreHostV6) != 0 {
		storeLen = 16
	}
	bornPort := message.PosBornHost + bornLen
	storePort := bornPort + 4 + 8 + storeLen
	p := storePort + 4 + 4 + 8
	n := len(b)
	if p+4+1+2 > n {
		s.badRead(phy, errPullLayout)
		return nil
	}
	if be.Uint32(b[bornPort:]) > math.MaxUint16 || be.Uint32(b[storePort:]) > math.MaxUint16 {
		s.badRead(phy, errPullPort)
		return nil
	}
	bodyLen := int(int32(be.Uint32(b[p:])))
	p += 4
	if bodyLen < 0 || bodyLen > n-p-1-2 {
		s.badRead(phy, errPullLayout)
		return nil
	}
	body := b[p : p+bodyLen : p+bodyLen]
	p += bodyLen
	topicLen := int(b[p])
	p++
	if p+topicLen+2 > n || int(be.Uint16(b[p+topicLen:])) != n-p-topicLen-2 {
		s.badRead(phy, errPullLayout)
		return nil
	}
	if string(b[p:p+topicLen]) != q.Topic() {
		s.badRead(phy, errPullTopic)
		return nil
	}
	if propsLen := n - p - topicLen - 2; propsLen > 0 && b[n-1] != message.PropertySeparator {
		s.badRead(phy, errPullTail)
		return nil
	}
	return body
}

// bodyIntact checks the body CRC of a record about to be served (hash/crc32's IEEE
// table, as the format and RocketMQ have it; hardware-assisted on amd64 and arm64),
// counting and logging one that fails.
func (s *Store) bodyIntact(b, body []byte, phy int64) bool {
	if message.BodyCRC(body) == int32(binary.BigEndian.Uint32(b[message.PosBodyCRC:])) {
		return true
	}
	s.badRead(phy, message.ErrCRC)
	return false
}

// badRead counts a damaged record a read did not serve and logs it, at most once a second.
func (s *Store) badRead(phy int64, why error) {
	n := s.badReads.Add(1)
	if ok, _ := s.badLog.Allow(); ok {
		s.log.Error().Err(why).Int64("at", phy).Int64("badReadsSinceStart", n).
			Msg("damaged record not served (run ferry scrub to check the whole store)")
	}
}

// readSegmentFrom returns a view from phy to the end of what is readable in its segment.
func (s *Store) readSegmentFrom(phy int64) (*commitlog.View, error) {
	seg := s.cl.SegmentSize()
	end := min((phy/seg+1)*seg, s.cl.MaxOffset())
	return s.cl.Read(phy, int(end-phy))
}

// ReadMessage returns the record at a physical offset and the view holding it; the caller
// releases the view. A compacted topic's record whose segment is gone is read from its
// copy (compaction_copy.go), so its offset message id keeps working.
func (s *Store) ReadMessage(phy int64) (message.Record, *commitlog.View, error) {
	rec, v, err := s.readRecordAt(phy)
	if err != nil {
		return rec, nil, fmt.Errorf("%w at %d: %w", ErrNotFound, phy, err)
	}
	if err := rec.VerifyBodyCRC(); err != nil {
		v.Release()
		s.badRead(phy, err)
		return message.Record{}, nil, fmt.Errorf("%w at %d: %w", ErrDamaged, phy, err)
	}
	return rec, v, nil
}

// MinOffset is the first queue offset still stored (0 for an unknown queue).
func (s *Store) MinOffset(topic string, queueID int32) int64 {
	if q, err := s.cqs.Queue(topic, queueID, false); err == nil && q != nil {
		return q.MinOffset()
	}
	return 0
}

// MaxOffset is the next queue offset to be written (0 for an unknown queue).
func (s *Store) MaxOffset(topic string, queueID int32) int64 {
	if q, err := s.cqs.Queue(topic, queueID, false); err == nil && q != nil {
		return q.MaxOffset()
	}
	return 0
}

// storeTimeOf reads the store timestamp of the record at phy.
func (s *Store) storeTimeOf(phy int64, _ int32) (int64, error) {
	rec, v, err := s.readRecordAt(phy)
	if err != nil {
		return 0, err
	}
	ts := rec.StoreTimestamp
	v.Release()
	return ts, nil
}

// OffsetByTime returns the first queue offset whose store time is ≥ ts (upper=false) or
// the last whose store time is ≤ ts (upper=true); see consumequeue.Queue.OffsetByTime.
func (s *Store) OffsetByTime(topic string, queueID int32, ts int64, upper bool) (int64, error) {
	q, err := s.cqs.Queue(topic, queueID, false)
	if err != nil || q == nil {
		return 0, nil //nolint:nilerr // an unknown queue answers offset 0, like RocketMQ
	}
	off, err := q.OffsetByTime(ts, s.storeTimeOf, upper)
	if err != nil {
		return 0, fmt.Errorf("store: offset by time: %w", err)
	}
	return off, nil
}

// LatestStoreTime is the store time of the newest message of the queue, 0 when it has
// none (GET_TOPIC_STATS_INFO's lastUpdateTimestamp).
func (s *Store) LatestStoreTime(topic string, queueID int32) (int64, error) {
	q, err := s.cqs.Queue(topic, queueID, false)
	if err != nil || q == nil || q.MaxOffset() <= q.MinOffset() {
		return 0, nil //nolint:nilerr // no queue or no message: no time
	}
	for o := q.MaxOffset() - 1; o >= q.MinOffset(); o-- {
		u, err := q.Get(o)
		if err != nil {
			return 0, fmt.Errorf("%w: %w", ErrNotFound, err)
		}
		if !u.Hole() {
			return s.storeTimeOf(u.Offset, u.Size)
		}
	}
	return 0, nil
}

// CommitLogRange is the commit log's first and next physical offsets.
func (s *Store) CommitLogRange() (minOffset, maxOffset int64) {
	return s.cl.MinOffset(), s.cl.MaxOffset()
}

// DiskUsedRatio is the used fraction of the store's disk at the last sample.
func (s *Store) DiskUsedRatio() float64 { return s.guard.used() }

// EarliestStoreTime is the store time of the oldest message still in the queue.
func (s *Store) EarliestStoreTime(topic string, queueID int32) (int64, error) {
	q, err := s.cqs.Queue(topic, queueID, false)
	if err != nil || q == nil {
		return 0, fmt.Errorf("%w: queue %s/%d", ErrNotFound, topic, queueID)
	}
	u, err := q.Get(q.MinOffset())
	for o := q.MinOffset() + 1; err == nil && u.Hole(); o++ {
		u, err = q.Get(o)
	}
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	return s.storeTimeOf(u.Offset, u.Size)
}

// DeleteTopic drops a topic's consume queues and queue offsets. Its records stay in the
// commit log until they expire.
func (s *Store) DeleteTopic(topic string) error {
	s.dispatchMu.Lock()
	defer s.dispatchMu.Unlock()
	s.topicGen.Add(1)
	s.addTombstone(topic, s.cl.MaxOffset())
	s.cl.RemoveTopic(topic)
	// The marks go first: should the broker die between the two, or the queues' deletion
	// fail, a topic created again under the name must not find old marks hiding its
	// messages.
	if err := s.resetCompaction(topic); err != nil {
		return fmt.Errorf("store: delete topic %s: %w", topic, err)
	}
	if err := s.cqs.DeleteTopic(topic); err != nil {
		return fmt.Errorf("store: delete topic %s: %w", topic, err)
	}
	// Forget the topic's queues at once: a start that found them listed but gone would
	// take that for damage and re-derive them from the log.
	s.cpMu.Lock()
	defer s.cpMu.Unlock()
	return s.writeQueueTable(true)
}
