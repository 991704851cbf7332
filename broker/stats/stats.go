// Package stats keeps a broker's per-topic and per-(topic, group) traffic figures over
// the last minute, hour and day, for VIEW_BROKER_STATS_DATA (315): RocketMQ's
// TOPIC_PUT_NUMS, TOPIC_PUT_SIZE (keyed by topic), GROUP_GET_NUMS and GROUP_GET_SIZE
// (keyed by "topic@group"), which mqadmin statsAll and ferryctl topic stats and group
// stats read.
//
// Cost on the hot paths: Put and Get find the key's counters in an immutable map read
// through an atomic pointer (no allocation; a struct key, never a joined string) and add
// to them with three atomic adds. A key seen for the first time takes a mutex and copies
// the map once.
//
// Windows: Run samples every key's counters once per Options.Interval (a second) into a
// ring of the last minute's samples; every minute one of them goes into a ring of the
// last hour's, every hour one into a ring of the last day's. A window's figures are the
// live counters minus the oldest sample of its ring: sum, sum per second (tps), and sum
// per counting call (avgpt, as RocketMQ's: messages per send request or pull answer).
// A key counted less than a window ago reports what it counted since it appeared.
//
// Bounds: at most Options.MaxKeys keys are kept (each costs about 5 KiB of samples);
// traffic of further keys is not counted (Dropped says how many calls were lost). A key
// idle for a whole day is forgotten, which makes room again.
package stats

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferrymq/ferry/protocol"
)

// ErrInvalidOptions is wrapped by Options.Validate's errors.
var ErrInvalidOptions = errors.New("stats: invalid options")

// Ring sizes: one sample more than the window holds, so that the oldest is a whole
// window old once the ring is full.
const (
	minuteSamples = 61 // one per Interval (a second)
	hourSamples   = 61 // one per minute
	daySamples    = 25 // one per hour
)

// Options configures a Stats.
type Options struct {
	// Clock tells the time of samples and lookups; nil means time.Now.
	Clock func() time.Time
	// Interval is how often Run samples (the minute window's resolution); default a second.
	Interval time.Duration
	// MaxKeys bounds the keys kept (topics plus topic-group pairs); default 4096.
	MaxKeys int
}

// DefaultOptions returns the defaults.
func DefaultOptions() Options {
	return Options{Clock: time.Now, Interval: time.Second, MaxKeys: 4096}
}

// Validate checks o.
func (o *Options) Validate() error {
	switch {
	case o.Interval <= 0 || o.Interval > time.Minute:
		return fmt.Errorf("%w: interval %v: want (0, 1m]", ErrInvalidOptions, o.Interval)
	case o.MaxKeys <= 0:
		return fmt.Errorf("%w: max keys %d: want > 0", ErrInvalidOptions, o.MaxKeys)
	}
	return nil
}

// groupKey names a (topic, consumer group) pair.
type groupKey struct{ topic, group string }

// sample is an item's counters at a time (Unix ms).
type sample struct{ at, msgs, bytes, calls int64 }

// ring holds the last len(s) samples; it is never empty once the item exists.
type ring struct {
	s    []sample
	next int // where the next sample goes
	n    int // samples held
}

func newRing(size int, first sample) ring {
	r := ring{s: make([]sample, size)}
	r.push(first)
	return r
}

func (r *ring) push(v sample) {
	r.s[r.next] = v
	r.next = (r.next + 1) % len(r.s)
	r.n = min(r.n+1, len(r.s))
}

// oldest is the first sample still held.
func (r *ring) oldest() sample { return r.s[(r.next-r.n+len(r.s))%len(r.s)] }

// item is one key's counters and samples.
type item struct {
	msgs, bytes, calls atomic.Int64

	// Guarded by Stats.mu.
	minute, hour, day ring
	hourAt, dayAt     int64 // when a sample last went into hour and day (Unix ms)
}

func (it *item) now(at int64) sample {
	return sample{at: at, msgs: it.msgs.Load(), bytes: it.bytes.Load(), calls: it.calls.Load()}
}

// Stats is the broker's traffic statistics. Its methods are safe for concurrent use.
type Stats struct {
	clock    func() time.Time
	interval time.Duration
	maxKeys  int

	// Read without a lock by Put and Get; replaced (copied) under mu.
	topics atomic.Pointer[map[string]*item]
	groups atomic.Pointer[map[groupKey]*item]

	mu      sync.Mutex // serialises adding keys, sampling and lookups
	dropped atomic.Int64
}

// New returns an empty Stats. Run samples it.
func New(o Options) (*Stats, error) {
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if err := o.Validate(); err != nil {
		return nil, err
	}
	s := &Stats{clock: o.Clock, interval: o.Interval, maxKeys: o.MaxKeys}
	s.topics.Store(&map[string]*item{})
	s.groups.Store(&map[groupKey]*item{})
	return s, nil
}

// Put counts one send request that stored msgs messages of bytes bytes in topic.
func (s *Stats) Put(topic string, msgs int, bytes int64) {
	if msgs <= 0 {
		return
	}
	it := (*s.topics.Load())[topic]
	if it == nil {
		if it = s.addTopic(topic); it == nil {
			return
		}
	}
	it.msgs.Add(int64(msgs))
	it.bytes.Add(bytes)
	it.calls.Add(1)
}

// Get counts one pull answer that handed group msgs messages of bytes bytes of topic.
func (s *Stats) Get(topic, group string, msgs int, bytes int64) {
	if msgs <= 0 {
		return
	}
	it := (*s.groups.Load())[groupKey{topic, group}]
	if it == nil {
		if it = s.addGroup(topic, group); it == nil {
			return
		}
	}
	it.msgs.Add(int64(msgs))
	it.bytes.Add(bytes)
	it.calls.Add(1)
}

// Dropped is how many Put and Get calls went uncounted because MaxKeys keys were kept.
func (s *Stats) Dropped() int64 { return s.dropped.Load() }

// Keys is how many keys are kept.
func (s *Stats) Keys() int { return len(*s.topics.Load()) + len(*s.groups.Load()) }

// newItemLocked makes an item whose samples start at zero now.
func (s *Stats) newItemLocked() *item {
	at := s.clock().UnixMilli()
	zero := sample{at: at}
	return &item{minute: newRing(minuteSamples, zero), hour: newRing(hourSamples, zero), day: newRing(daySamples, zero),
		hourAt: at, dayAt: at}
}

// addTopic is Put's slow path: topic's item, made and published; nil when full.
func (s *Stats) addTopic(topic string) *item {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := *s.topics.Load()
	if it := cur[topic]; it != nil {
		return it
	}
	if s.Keys() >= s.maxKeys {
		s.dropped.Add(1)
		return nil
	}
	next := make(map[string]*item, len(cur)+1)
	for k, v := range cur {
		next[k] = v
	}
	it := s.newItemLocked()
	next[strings.Clone(topic)] = it // the caller's string may point into a reused frame
	s.topics.Store(&next)
	return it
}

// addGroup is Get's slow path.
func (s *Stats) addGroup(topic, group string) *item {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := *s.groups.Load()
	if it := cur[groupKey{topic, group}]; it != nil {
		return it
	}
	if s.Keys() >= s.maxKeys {
		s.dropped.Add(1)
		return nil
	}
	next := make(map[groupKey]*item, len(cur)+1)
	for k, v := range cur {
		next[k] = v
	}
	it := s.newItemLocked()
	next[groupKey{strings.Clone(topic), strings.Clone(group)}] = it
	s.groups.Store(&next)
	return it
}

// Run samples every Interval until ctx ends. The broker runs it on a goroutine it owns.
func (s *Stats) Run(ctx context.Context) {
	t := time.NewTicker(s.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.Sample()
		}
	}
}

// Sample takes one sample of every key now (Run calls it every Interval; tests with a
// fake clock call it themselves) and forgets the keys idle for a whole day.
func (s *Stats) Sample() {
	s.mu.Lock()
	defer s.mu.Unlock()
	at := s.clock().UnixMilli()
	var idleTopics []string
	var idleGroups []groupKey
	for k, it := range *s.topics.Load() {
		if s.sampleLocked(it, at) {
			idleTopics = append(idleTopics, k)
		}
	}
	for k, it := range *s.groups.Load() {
		if s.sampleLocked(it, at) {
			idleGroups = append(idleGroups, k)
		}
	}
	if len(idleTopics) > 0 {
		next := make(map[string]*item, len(*s.topics.Load()))
		for k, v := range *s.topics.Load() {
			next[k] = v
		}
		for _, k := range idleTopics {
			delete(next, k)
		}
		s.topics.Store(&next)
	}
	if len(idleGroups) > 0 {
		next := make(map[groupKey]*item, len(*s.groups.Load()))
		for k, v := range *s.groups.Load() {
			next[k] = v
		}
		for _, k := range idleGroups {
			delete(next, k)
		}
		s.groups.Store(&next)
	}
}

// sampleLocked samples it at and reports whether it counted nothing for a whole day.
func (s *Stats) sampleLocked(it *item, at int64) (idle bool) {
	v := it.now(at)
	it.minute.push(v)
	if at-it.hourAt >= time.Minute.Milliseconds() {
		it.hour.push(v)
		it.hourAt = at
	}
	if at-it.dayAt >= time.Hour.Milliseconds() {
		it.day.push(v)
		it.dayAt = at
		old := it.day.oldest()
		return it.day.n == len(it.day.s) && old.calls == v.calls
	}
	return false
}

// Lookup returns the figures of statistic name (protocol.StatsTopicPutNums and the
// others) for key ("topic", or "topic@group" for the GROUP_ ones); false when the name
// is unknown or nothing was counted for the key since it was last forgotten.
func (s *Stats) Lookup(name, key string) (protocol.BrokerStatsData, bool) {
	var it *item
	switch name {
	case protocol.StatsTopicPutNums, protocol.StatsTopicPutSize:
		it = (*s.topics.Load())[key]
	case protocol.StatsGroupGetNums, protocol.StatsGroupGetSize:
		topic, group, ok := strings.Cut(key, protocol.StatsKeySeparator)
		if !ok {
			return protocol.BrokerStatsData{}, false
		}
		it = (*s.groups.Load())[groupKey{topic, group}]
	}
	if it == nil {
		return protocol.BrokerStatsData{}, false
	}
	bytes := name == protocol.StatsTopicPutSize || name == protocol.StatsGroupGetSize
	s.mu.Lock()
	defer s.mu.Unlock()
	last := it.now(s.clock().UnixMilli())
	return protocol.BrokerStatsData{
		StatsMinute: window(it.minute.oldest(), last, bytes),
		StatsHour:   window(it.hour.oldest(), last, bytes),
		StatsDay:    window(it.day.oldest(), last, bytes),
	}, true
}

// window is the figures between samples first and last: of the byte counter when bytes,
// else of the message counter. A window shorter than a second counts as a second.
func window(first, last sample, bytes bool) protocol.BrokerStatsItem {
	sum := last.msgs - first.msgs
	if bytes {
		sum = last.bytes - first.bytes
	}
	out := protocol.BrokerStatsItem{Sum: sum}
	elapsed := max(last.at-first.at, time.Second.Milliseconds())
	out.TPS = float64(sum) * 1000 / float64(elapsed)
	if calls := last.calls - first.calls; calls > 0 {
		out.AvgPT = float64(sum) / float64(calls)
	}
	return out
}
