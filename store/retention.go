package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"sort"
	"strconv"
	"sync/atomic"

	"github.com/ferrymq/ferry/consumequeue"
)

// Per-topic retention (Options.Retention) is enforced on the consume queues, not on the
// commit log: a queue's minimum offset is raised past the messages its topic no longer
// keeps, so pulls, GET_MIN_OFFSET and offset searches behave exactly as after the
// broker-wide cleanup (a consumer below the minimum gets OffsetTooSmall and is moved to
// it), while the records stay in the commit log until its own cleanup deletes their
// segment. The cost is therefore disk that is not given back early; the benefit is that
// retention needs no copying and never touches other topics' records.
//
// The pass runs on the cleaner goroutine every CleanInterval and reads at most
// retentionUnitsPerRound consume-queue units per round (time limits cost a binary search
// of a few record reads per queue; size limits keep a running byte count per queue, so
// each unit is added once and removed once, and a queue that is not yet counted takes
// as many rounds as its length needs).
//
// The raised minimums are kept in the retention file, replaced atomically whenever one
// moves, and applied again by Open, so a restart does not bring expired messages back:
//
//	{"version":1,"queues":{"<topic>":{"<queueId>":<minimum offset>}}}
//
// Entries of queues that no longer exist are dropped on the next change. The file is
// part of the store's on-disk format; a store without it has no retention minimums.
const (
	retentionFileName      = "retention.json"
	retentionFileVersion   = 1
	retentionUnitsPerRound = 1 << 20
	retentionReadBatch     = 1024
)

// retentionFile is the JSON layout of the retention file.
type retentionFile struct {
	Version int                         `json:"version"`
	Queues  map[string]map[string]int64 `json:"queues"`
}

// queueKey names a consume queue.
type queueKey struct {
	topic string
	queue int32
}

// queueBytes is the running size count of one queue: the record sizes of the units
// [from, to).
type queueBytes struct {
	from, to, bytes int64
}

// retention is the state of the retention pass; only the cleaner goroutine (and Open,
// before it starts) touches it, except the counters.
type retention struct {
	mins    map[queueKey]int64 // raised minimums, as in the retention file
	sizes   map[queueKey]*queueBytes
	buf     []consumequeue.Unit
	expired atomic.Int64 // messages hidden by retention since Open
	queues  atomic.Int64 // len(mins), for RetentionStats
}

// RetentionStats are the retention pass's counters.
type RetentionStats struct {
	// Expired counts the messages retention moved queue minimums past since Open.
	Expired int64
	// Queues is the number of queues whose minimum retention raised (since the store
	// was created, as kept in the retention file).
	Queues int64
}

// loadRetention reads the retention file and raises the queues' minimums to it. Open
// calls it after recovery.
func (s *Store) loadRetention() error {
	s.ret.mins = map[queueKey]int64{}
	s.ret.sizes = map[queueKey]*queueBytes{}
	data, err := s.opts.FS.ReadFile(s.opts.retentionPath())
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("store: read retention file: %w", err)
	}
	var f retentionFile
	if err := json.Unmarshal(data, &f); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrRetentionFile, s.opts.retentionPath(), err)
	}
	if f.Version != retentionFileVersion {
		return fmt.Errorf("%w: %s: version %d, not %d", ErrRetentionFile, s.opts.retentionPath(), f.Version, retentionFileVersion)
	}
	for topic, queues := range f.Queues {
		for id, off := range queues {
			qid, err := strconv.ParseInt(id, 10, 32)
			if err != nil {
				return fmt.Errorf("%w: retention file: queue id %q", ErrRetentionFile, id)
			}
			q, err := s.cqs.Queue(topic, int32(qid), false)
			if err != nil || q == nil {
				continue // the topic was deleted: the entry goes with the next write
			}
			got, err := q.Expire(off)
			if err != nil {
				return fmt.Errorf("store: apply retention minimum of %s: %w", q, err)
			}
			s.ret.mins[queueKey{topic, int32(qid)}] = got
		}
	}
	s.ret.queues.Store(int64(len(s.ret.mins)))
	return nil
}

// RetentionStats returns the retention counters.
func (s *Store) RetentionStats() RetentionStats {
	return RetentionStats{Expired: s.ret.expired.Load(), Queues: s.ret.queues.Load()}
}

// retainOnce runs one retention pass over every queue whose topic has limits and
// returns how many messages it hid. Only the cleaner goroutine calls it.
func (s *Store) retainOnce() int64 {
	if s.opts.Retention == nil {
		return 0
	}
	budget := int64(retentionUnitsPerRound)
	nowMs := s.now().UnixMilli()
	var hidden int64
	changed := false
	live := map[queueKey]bool{}
	s.cqs.Range(func(topic string, queueID int32, q *consumequeue.Queue) bool {
		k := queueKey{topic, queueID}
		live[k] = true
		maxAge, maxBytes := s.opts.Retention(topic)
		if maxAge <= 0 && maxBytes <= 0 {
			delete(s.ret.sizes, k)
			return true
		}
		old := q.MinOffset()
		target := old
		if maxAge > 0 {
			off, err := q.OffsetByTime(nowMs-maxAge.Milliseconds()+1, s.storeTimeOf, false)
			if err != nil {
				s.log.Warn().Err(err).Str("queue", q.String()).Msg("retention: searching by store time")
			} else {
				target = max(target, off)
			}
		}
		if maxBytes > 0 {
			target = max(target, s.sizeTarget(k, q, target, maxBytes, &budget))
		} else {
			delete(s.ret.sizes, k)
		}
		if target <= old {
			return budget > 0
		}
		got, err := q.Expire(target)
		if err != nil {
			s.log.Error().Err(err).Str("queue", q.String()).Msg("retention: raising the minimum offset")
		}
		if got > old {
			hidden += got - old
			s.ret.mins[k] = got
			changed = true
			s.log.Info().Str("topic", topic).Int32("queue", queueID).Int64("from", old).Int64("to", got).
				Dur("retentionTime", maxAge).Int64("retentionBytes", maxBytes).
				Msg("retention: messages expired from the queue")
		}
		return budget > 0
	})
	if !changed {
		return 0
	}
	for k := range s.ret.mins {
		if !live[k] {
			delete(s.ret.mins, k) // its topic was deleted
		}
	}
	s.ret.expired.Add(hidden)
	s.ret.queues.Store(int64(len(s.ret.mins)))
	if err := s.writeRetention(); err != nil {
		// The minimums hold in memory; after a restart before the next successful write
		// the pass hides the same messages again (time limits at once, size limits once
		// the queue is counted).
		s.log.Error().Err(err).Msg("retention: writing the retention file")
	}
	return hidden
}

// sizeTarget advances the running byte count of queue k (its units from floor on) by
// at most *budget units and returns the first offset the queue keeps so that it holds
// at most maxBytes of records.
func (s *Store) sizeTarget(k queueKey, q *consumequeue.Queue, floor, maxBytes int64, budget *int64) int64 {
	st := s.ret.sizes[k]
	if st == nil || st.from < q.MinOffset() {
		// New, or the minimum moved under the count (the log's cleanup): count afresh.
		st = &queueBytes{from: q.MinOffset(), to: q.MinOffset()}
		s.ret.sizes[k] = st
	}
	if floor > st.from { // time retention is about to drop these
		if floor-st.from > *budget || floor > st.to {
			*st = queueBytes{from: floor, to: floor}
		} else if !s.dropFront(q, st, floor, budget) {
			*st = queueBytes{from: floor, to: floor}
		}
	}
	// Count what was appended since the last round.
	for hi := q.MaxOffset(); st.to < hi && *budget > 0; {
		n, err := q.Read(st.to, s.unitBuf(min(hi-st.to, *budget)))
		if err != nil || n == 0 {
			break
		}
		for _, u := range s.ret.buf[:n] {
			st.bytes += int64(u.Size)
		}
		st.to += int64(n)
		*budget -= int64(n)
	}
	// Drop the oldest while over the limit: what [from, to) holds is a lower bound of
	// what the queue holds, so dropping is right even before the count has caught up.
	for st.bytes > maxBytes && st.from < st.to && *budget > 0 {
		n, err := q.Read(st.from, s.unitBuf(min(st.to-st.from, *budget)))
		if err != nil || n == 0 {
			break
		}
		for _, u := range s.ret.buf[:n] {
			if st.bytes <= maxBytes {
				break
			}
			st.bytes -= int64(u.Size)
			st.from++
			*budget--
		}
	}
	return st.from
}

// dropFront removes the units [st.from, to) from the count; false if they cannot be
// read any more.
func (s *Store) dropFront(q *consumequeue.Queue, st *queueBytes, to int64, budget *int64) bool {
	for st.from < to {
		n, err := q.Read(st.from, s.unitBuf(to-st.from))
		if err != nil || n == 0 {
			return false
		}
		for _, u := range s.ret.buf[:n] {
			st.bytes -= int64(u.Size)
		}
		st.from += int64(n)
		*budget -= int64(n)
	}
	return true
}

// unitBuf returns the read buffer, at most n units long.
func (s *Store) unitBuf(n int64) []consumequeue.Unit {
	if s.ret.buf == nil {
		s.ret.buf = make([]consumequeue.Unit, retentionReadBatch)
	}
	return s.ret.buf[:min(n, int64(len(s.ret.buf)))]
}

// writeRetention replaces the retention file with the current minimums.
func (s *Store) writeRetention() error {
	f := retentionFile{Version: retentionFileVersion, Queues: map[string]map[string]int64{}}
	keys := make([]queueKey, 0, len(s.ret.mins))
	for k := range maps.Keys(s.ret.mins) {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return keys[i].topic < keys[j].topic || keys[i].topic == keys[j].topic && keys[i].queue < keys[j].queue
	})
	for _, k := range keys {
		if f.Queues[k.topic] == nil {
			f.Queues[k.topic] = map[string]int64{}
		}
		f.Queues[k.topic][strconv.Itoa(int(k.queue))] = s.ret.mins[k]
	}
	data, err := json.Marshal(f)
	if err != nil {
		return fmt.Errorf("store: encode retention file: %w", err)
	}
	if err := s.opts.FS.WriteFileAtomic(s.opts.retentionPath(), data); err != nil {
		return fmt.Errorf("store: write retention file: %w", err)
	}
	return nil
}
