package offsets

import (
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/ferrymq/ferry/broker/internal/metafile"
	"github.com/ferrymq/ferry/internal/logging"
	"github.com/ferrymq/ferry/internal/mmap"
)

// Errors returned by this package. Each is wrapped with details; test with
// errors.Is.
var (
	// ErrInvalidOptions is wrapped by Options.Validate and Open.
	ErrInvalidOptions = errors.New("offsets: invalid options")
	// ErrCorrupt reports that neither consumerOffset.json nor its .bak copy
	// could be decoded.
	ErrCorrupt = errors.New("offsets: corrupt consumer offset file")
)

// Options configures a Store.
type Options struct {
	// Dir is the store root; offsets are kept in Dir/config/consumerOffset.json.
	Dir string
	// FS is the file system (mmap.OSFS{} in production, a MemFS in tests).
	FS mmap.FS
	// Logger receives load warnings and background flush errors.
	Logger zerolog.Logger
	// FlushInterval is how often changed offsets are written (RocketMQ
	// flushConsumerOffsetInterval, 5 s).
	FlushInterval time.Duration
}

// DefaultOptions returns the RocketMQ defaults on the real file system. Dir
// must still be set.
func DefaultOptions() Options {
	return Options{
		FS:            mmap.OSFS{},
		Logger:        logging.Nop(),
		FlushInterval: 5 * time.Second,
	}
}

// Validate reports the first problem with o; the error wraps
// ErrInvalidOptions.
func (o *Options) Validate() error {
	if err := metafile.CheckLocation(o.Dir, o.FS, ErrInvalidOptions); err != nil {
		return err
	}
	if o.FlushInterval <= 0 {
		return fmt.Errorf("%w: FlushInterval %v must be positive", ErrInvalidOptions, o.FlushInterval)
	}
	return nil
}

// Key identifies one consumer offset.
type Key struct {
	Group   string // consumer group
	Topic   string // topic (including %RETRY% topics)
	QueueID int32  // queue id within the topic on this broker
}

// slot is one committed offset and where its last commit came from, for CommitFrom's
// ordering; conn and seq are 0 after a commit that carries no order (Commit, Merge, a
// load).
type slot struct {
	offset int64
	conn   uint64 // connection of the last applied ordered commit
	seq    uint64 // its arrival sequence number on that connection
}

// Store holds the consumer offsets of every group on this broker. It is safe
// for concurrent use. Open starts its flusher goroutine; Close stops it.
//
// Lock order: flushMu before mu (Flush holds flushMu while it briefly takes
// mu to copy the table); the file's own lock, taken by its Write, comes last.
type Store struct {
	opts Options
	file *metafile.File // consumerOffset.json; Flush writes it holding flushMu

	mu struct {
		sync.Mutex
		table map[Key]slot
		gen   uint64 // incremented on every change
	}

	// flushMu serialises writes of the file.
	flushMu struct {
		sync.Mutex
		gen uint64 // value of mu.gen that the file holds
	}

	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
	closeErr  error
}

// Open validates opts, loads Dir/config/consumerOffset.json (or its .bak
// copy) if it exists, and starts the flusher goroutine.
func Open(opts Options) (*Store, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	s := &Store{
		opts: opts,
		stop: make(chan struct{}),
		done: make(chan struct{}),
	}
	file, table, _, err := metafile.Open(opts.FS, filepath.Join(opts.Dir, configDir), fileName, &s.opts.Logger,
		func(b []byte) (map[Key]int64, error) { return decodeTable(b, &s.opts.Logger) })
	if err != nil {
		return nil, fmt.Errorf("offsets: %w", err)
	}
	s.file = file
	s.mu.table = make(map[Key]slot, len(table))
	for k, off := range table {
		s.mu.table[k] = slot{offset: off}
	}
	go s.run()
	return s, nil
}

// run is the flusher goroutine: every FlushInterval it writes the offsets if
// they changed. It exits when Close closes s.stop.
func (s *Store) run() {
	defer close(s.done)
	tick := time.NewTicker(s.opts.FlushInterval)
	defer tick.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-tick.C:
			if err := s.Flush(); err != nil {
				s.opts.Logger.Error().Err(err).Msg("offsets: periodic flush failed")
			}
		}
	}
}

// Commit records offset as the next offset group consumes from queueID of
// topic. A negative offset means "no offset" and is ignored (the Go client
// commits −1 for queues it never consumed), as is a negative queue id. It
// does not allocate when the key already exists.
//
// Commit carries no order: it always applies and forgets where the last
// commit of the key came from, so the next CommitFrom of any connection
// applies too. The broker uses it for the offsets it sets itself (an admin
// reset).
func (s *Store) Commit(group, topic string, queueID int32, offset int64) {
	s.commit(group, topic, queueID, offset, 0, 0)
}

// CommitFrom is Commit for a commit a client sent: conn identifies its
// connection and seq is the request's arrival sequence number on it
// (remoting.Command.Seq). A commit of the key from the same connection with a
// higher seq that was applied before wins: this one is ignored and CommitFrom
// returns false, so that commits sent in order on one connection are applied
// in that order even when worker goroutines serve them out of order. A
// commit from another connection than the last applied one, or after a
// Commit, always applies (no increase-only rule: a consumer may move its
// offset back). conn 0 means "no connection": it then behaves as Commit. It
// returns whether the offset was recorded (false also for an ignored negative
// offset or queue id), and does not allocate when the key already exists.
func (s *Store) CommitFrom(group, topic string, queueID int32, offset int64, conn, seq uint64) bool {
	return s.commit(group, topic, queueID, offset, conn, seq)
}

func (s *Store) commit(group, topic string, queueID int32, offset int64, conn, seq uint64) bool {
	if offset < 0 || queueID < 0 {
		return false
	}
	k := Key{Group: group, Topic: topic, QueueID: queueID}
	if conn == 0 {
		seq = 0
	}
	s.mu.Lock()
	old, ok := s.mu.table[k]
	switch {
	case !ok:
		// Copy the names so that the table does not pin the caller's buffers.
		k.Group, k.Topic = strings.Clone(group), strings.Clone(topic)
		s.mu.table[k] = slot{offset: offset, conn: conn, seq: seq}
		s.mu.gen++
	case conn != 0 && old.conn == conn && seq < old.seq:
		s.mu.Unlock()
		return false // overtaken by a later commit of the same connection
	default:
		s.mu.table[k] = slot{offset: offset, conn: conn, seq: seq}
		if old.offset != offset {
			s.mu.gen++
		}
	}
	s.mu.Unlock()
	return true
}

// Query returns the committed offset of group for queueID of topic.
func (s *Store) Query(group, topic string, queueID int32) (int64, bool) {
	s.mu.Lock()
	sl, ok := s.mu.table[Key{Group: group, Topic: topic, QueueID: queueID}]
	s.mu.Unlock()
	return sl.offset, ok
}

// DeleteTopic removes the offsets of every group for topic (DELETE_TOPIC)
// and returns how many were removed.
func (s *Store) DeleteTopic(topic string) int {
	return s.deleteWhere(func(k Key) bool { return k.Topic == topic })
}

// DeleteGroup removes every offset of group (DELETE_SUBSCRIPTIONGROUP) and
// returns how many were removed.
func (s *Store) DeleteGroup(group string) int {
	return s.deleteWhere(func(k Key) bool { return k.Group == group })
}

func (s *Store) deleteWhere(match func(Key) bool) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.mu.table)
	maps.DeleteFunc(s.mu.table, func(k Key, _ slot) bool { return match(k) })
	removed := n - len(s.mu.table)
	if removed > 0 {
		s.mu.gen++
	}
	return removed
}

// Groups returns the groups that have offsets, sorted.
func (s *Store) Groups() []string {
	return s.collect(func(k Key) (string, bool) { return k.Group, true })
}

// TopicsOf returns the topics for which group has offsets, sorted.
func (s *Store) TopicsOf(group string) []string {
	return s.collect(func(k Key) (string, bool) { return k.Topic, k.Group == group })
}

// GroupsOf returns the groups that have offsets for topic, sorted
// (QUERY_TOPIC_CONSUME_BY_WHO).
func (s *Store) GroupsOf(topic string) []string {
	return s.collect(func(k Key) (string, bool) { return k.Group, k.Topic == topic })
}

// collect returns the distinct names pick selects, sorted.
func (s *Store) collect(pick func(Key) (string, bool)) []string {
	set := make(map[string]struct{})
	s.mu.Lock()
	for k := range s.mu.table {
		if name, ok := pick(k); ok {
			set[name] = struct{}{}
		}
	}
	s.mu.Unlock()
	return slices.Sorted(maps.Keys(set))
}

// Offsets returns the committed offsets of group for topic, by queue id
// (GET_CONSUME_STATS).
func (s *Store) Offsets(group, topic string) map[int32]int64 {
	out := make(map[int32]int64)
	s.mu.Lock()
	for k, sl := range s.mu.table {
		if k.Group == group && k.Topic == topic {
			out[k.QueueID] = sl.offset
		}
	}
	s.mu.Unlock()
	return out
}

// Snapshot returns a copy of every offset.
func (s *Store) Snapshot() map[Key]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[Key]int64, len(s.mu.table))
	for k, sl := range s.mu.table {
		out[k] = sl.offset
	}
	return out
}

// Flush writes the offsets now if they changed since the last write. It
// returns every write error (of the file and of its .bak copy) joined; the
// offsets count as written when the main file was written, even if the
// backup copy failed.
func (s *Store) Flush() error {
	s.flushMu.Lock()
	defer s.flushMu.Unlock()
	s.mu.Lock()
	gen := s.mu.gen
	if gen == s.flushMu.gen {
		s.mu.Unlock()
		return nil
	}
	entries := make([]entry, 0, len(s.mu.table))
	for k, sl := range s.mu.table {
		entries = append(entries, entry{key: k, offset: sl.offset})
	}
	s.mu.Unlock()

	data := encodeEntries(entries)
	err, bakErr := s.file.Write(data)
	if err == nil {
		s.flushMu.gen = gen
	} else {
		err = fmt.Errorf("offsets: %w", err)
	}
	if bakErr != nil {
		bakErr = fmt.Errorf("offsets: %w", bakErr)
	}
	return errors.Join(err, bakErr)
}

// Close stops the flusher goroutine and writes the offsets a last time if
// they changed, returning that write's errors. Later calls return the same
// result. Commits after Close stay in memory until an explicit Flush.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		close(s.stop)
		<-s.done
		s.closeErr = s.Flush()
	})
	return s.closeErr
}
