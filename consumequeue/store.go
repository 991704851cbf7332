package consumequeue

import (
	"cmp"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/ferrymq/ferry/internal/mmap"
)

// Store holds the consume queues of every topic under Options.Root. It is safe for
// concurrent use.
type Store struct {
	opts Options
	fs   mmap.FS
	gen  atomic.Uint64 // counts queues added and topics deleted
	mu   struct {
		sync.RWMutex
		topics map[string]map[int32]*Queue
		closed bool
	}
}

// Open validates opts and loads and recovers every <topic>/<queueId> directory under
// opts.Root (directories whose name is not a queue id are ignored).
func Open(opts Options) (*Store, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	s := &Store{opts: opts, fs: opts.fs()}
	s.mu.topics = make(map[string]map[int32]*Queue)
	topics, err := s.fs.ReadDir(opts.Root)
	if err != nil {
		return nil, fmt.Errorf("consumequeue: open: %w", err)
	}
	for _, topic := range topics {
		if validTopic(topic) != nil {
			continue
		}
		ids, err := s.fs.ReadDir(filepath.Join(opts.Root, topic))
		if errors.Is(err, syscall.ENOTDIR) {
			continue // a stray file, not a topic
		}
		if err != nil {
			return nil, errors.Join(fmt.Errorf("consumequeue: open %s: %w", topic, err), s.closeAll(false))
		}
		for _, name := range ids {
			id, err := strconv.ParseInt(name, 10, 32)
			if err != nil || id < 0 || strconv.FormatInt(id, 10) != name {
				continue
			}
			q := newQueue(opts, topic, int32(id))
			s.add(q)
			if err := q.Recover(); err != nil {
				return nil, errors.Join(err, s.closeAll(false))
			}
		}
	}
	return s, nil
}

// validTopic checks that a topic can be a directory name.
func validTopic(topic string) error {
	if topic == "" || topic == "." || topic == ".." || strings.ContainsAny(topic, "/\\\x00") {
		return fmt.Errorf("%w: %q", ErrInvalidTopic, topic)
	}
	return nil
}

// Generation changes whenever a queue is added or a topic deleted, so an owner that records
// the set of queues knows when its record is stale.
func (s *Store) Generation() uint64 { return s.gen.Load() }

func (s *Store) add(q *Queue) {
	s.gen.Add(1)
	m := s.mu.topics[q.topic]
	if m == nil {
		m = make(map[int32]*Queue)
		s.mu.topics[q.topic] = m
	}
	m[q.queueID] = q
}

// Queue returns the queue of topic and queueID. If it does not exist it is created (in
// memory; its files appear with the first unit) when create is set, and ErrQueueNotFound
// is returned otherwise. Looking up an existing queue does not allocate.
func (s *Store) Queue(topic string, queueID int32, create bool) (*Queue, error) {
	s.mu.RLock()
	q, closed := s.mu.topics[topic][queueID], s.mu.closed
	s.mu.RUnlock()
	switch {
	case closed:
		return nil, ErrClosed
	case q != nil:
		return q, nil
	case !create:
		return nil, ErrQueueNotFound
	case queueID < 0:
		return nil, fmt.Errorf("consumequeue: negative queue id %d", queueID)
	}
	if err := validTopic(topic); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.closed {
		return nil, ErrClosed
	}
	if q := s.mu.topics[topic][queueID]; q != nil {
		return q, nil
	}
	q = newQueue(s.opts, topic, queueID)
	s.add(q)
	return q, nil
}

// queues snapshots the queues, sorted by topic and queue id.
func (s *Store) queues() []*Queue {
	s.mu.RLock()
	var list []*Queue
	for _, m := range s.mu.topics {
		for _, q := range m {
			list = append(list, q)
		}
	}
	s.mu.RUnlock()
	slices.SortFunc(list, func(a, b *Queue) int {
		return cmp.Or(strings.Compare(a.topic, b.topic), cmp.Compare(a.queueID, b.queueID))
	})
	return list
}

// Range calls fn for every queue, in topic and queue-id order, until fn returns false. fn
// may call the Store.
func (s *Store) Range(fn func(topic string, queueID int32, q *Queue) bool) {
	for _, q := range s.queues() {
		if !fn(q.topic, q.queueID, q) {
			return
		}
	}
}

// DeleteTopic closes the topic's queues (their readers get ErrClosed) and deletes their
// files.
func (s *Store) DeleteTopic(topic string) error {
	if err := validTopic(topic); err != nil {
		return err
	}
	s.mu.Lock()
	m := s.mu.topics[topic]
	delete(s.mu.topics, topic)
	s.mu.Unlock()
	s.gen.Add(1)
	var err error
	for _, q := range m {
		err = errors.Join(err, q.close(false))
	}
	dir := filepath.Join(s.opts.Root, topic)
	if ok, xerr := s.fs.Exists(dir); xerr != nil || ok {
		err = errors.Join(err, xerr, s.fs.RemoveAll(dir), s.fs.SyncDir(s.opts.Root))
	}
	if err != nil {
		return fmt.Errorf("consumequeue: delete topic %s: %w", topic, err)
	}
	return nil
}

// Flush makes every queue's units durable.
func (s *Store) Flush() error {
	var err error
	for _, q := range s.queues() {
		err = errors.Join(err, q.Flush())
	}
	return err
}

// TruncateByPhysical removes from every queue the units pointing at or after phy.
func (s *Store) TruncateByPhysical(phy int64) error {
	var err error
	for _, q := range s.queues() {
		err = errors.Join(err, q.TruncateByPhysical(phy))
	}
	return err
}

// DeleteBefore drops from every queue the start pointing below phy (see Queue.DeleteBefore)
// and returns how many files it deleted.
func (s *Store) DeleteBefore(phy int64) (int, error) {
	var (
		n   int
		err error
	)
	for _, q := range s.queues() {
		k, qerr := q.DeleteBefore(phy)
		n += k
		err = errors.Join(err, qerr)
	}
	return n, err
}

// MaxPhysicalOffset is the end, in the commit log, of the newest unit of any queue (0 when
// there is none): where dispatch stands as far as the queues know.
func (s *Store) MaxPhysicalOffset() int64 {
	var end int64
	for _, q := range s.queues() {
		if u, ok := q.LastUnit(); ok {
			end = max(end, u.End())
		}
	}
	return end
}

// Close flushes and closes every queue. Later calls do nothing.
func (s *Store) Close() error { return s.closeAll(true) }

func (s *Store) closeAll(flush bool) error {
	s.mu.Lock()
	s.mu.closed = true
	s.mu.Unlock()
	list := s.queues() // no queue can be added once closed is set
	var err error
	for _, q := range list {
		err = errors.Join(err, q.close(flush))
	}
	return err
}
