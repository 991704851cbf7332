package broker

// The counters behind /metrics that the hot paths count into (Options.MetricsEnable),
// and the label bounds every series of the broker shares (Options.MetricsMaxTopics and
// MetricsMaxGroups).
//
// Cost on the hot paths: a send resolves its topic's inMeter once per request (one
// lookup in an immutable map read through an atomic pointer; a batch is one request) and
// adds to it with three atomic adds; a pull answer does the same for its (topic, group)
// pairMeter and stores the queue's pull offset. A new name takes the slow path once,
// under a mutex, which copies the map. The remoting server tells rpcMeter of every answer
// (one more lookup and two atomic adds). Nothing allocates once a name is known.
//
// Label bounds: the first MetricsMaxTopics topics and MetricsMaxGroups groups the broker
// counts or reports keep a label value of their own for as long as they exist; the others
// share MetricsOtherLabel. A deleted topic or group gives its value up at the next
// scrape (its series end; a topic created again starts from zero, which Prometheus reads
// as a counter reset).

import (
	"math"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferrymq/ferry/internal/meter"
	"github.com/ferrymq/ferry/internal/mmap"
)

// MetricsOtherLabel is the topic or consumer_group label value of the series beyond the
// bounds (Options.MetricsMaxTopics, MetricsMaxGroups).
const MetricsOtherLabel = "_other_"

// Histogram buckets (inclusive upper bounds) of the broker's histograms.
var (
	// MessageSizeBuckets are rocketmq_message_size's, in bytes (RocketMQ 5's).
	MessageSizeBuckets = []int64{1 << 10, 4 << 10, 512 << 10, 1 << 20, 2 << 20, 4 << 20}
	// RPCLatencyBuckets are rocketmq_rpc_latency's, in nanoseconds (RocketMQ 5's, in ms:
	// 1, 3, 5, 7, 10, 100, 1000, 2000, 3000).
	RPCLatencyBuckets = msBuckets(1, 3, 5, 7, 10, 100, 1000, 2000, 3000)
	// FlushLatencyBuckets are ferry_storage_flush_latency_seconds', in nanoseconds (from
	// 100 µs to 5 s).
	FlushLatencyBuckets = []int64{int64(100 * time.Microsecond), int64(500 * time.Microsecond), int64(time.Millisecond),
		int64(5 * time.Millisecond), int64(10 * time.Millisecond), int64(50 * time.Millisecond), int64(100 * time.Millisecond),
		int64(500 * time.Millisecond), int64(time.Second), int64(5 * time.Second)}
)

// msBuckets converts milliseconds to nanoseconds.
func msBuckets(ms ...int64) []int64 {
	out := make([]int64, len(ms))
	for i, m := range ms {
		out[i] = m * int64(time.Millisecond)
	}
	return out
}

// maxRPCSeries bounds the (request code, response code, held) combinations rpcMeter
// keeps apart; later ones share one overflow series.
const maxRPCSeries = 2048

// RPCOtherCode is the request and response code of the rpc series that sums the
// combinations beyond the bound.
const RPCOtherCode int16 = math.MinInt16

// inMeter counts one topic label's sends.
type inMeter struct {
	label       string
	msgs, bytes atomic.Int64
	size        *meter.Histogram // per request: its bytes over its messages (RocketMQ's)
}

// outMeter counts one (topic label, group label)'s pulled messages.
type outMeter struct {
	topic, group string
	msgs, bytes  atomic.Int64
}

// pairKey names a (topic, consumer group).
type pairKey struct{ topic, group string }

// pairMeter is a real (topic, group)'s: the counters of its labels, and per queue the
// next offset the last pull answer handed out (-1: none since start).
type pairMeter struct {
	out    *outMeter
	mu     sync.Mutex // serialises growing pulled
	pulled atomic.Pointer[[]atomic.Int64]
}

// setPulled records queue q's pull offset.
func (p *pairMeter) setPulled(q int32, next int64) {
	if s := *p.pulled.Load(); int(q) < len(s) {
		s[q].Store(next)
		return
	}
	if q < 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	old := *p.pulled.Load()
	if int(q) >= len(old) {
		grown := newPulled(int(q) + 1)
		for i := range old {
			grown[i].Store(old[i].Load())
		}
		p.pulled.Store(&grown)
	}
	(*p.pulled.Load())[q].Store(next)
}

// pulledAt is queue q's pull offset, or -1.
func (p *pairMeter) pulledAt(q int32) int64 {
	if s := *p.pulled.Load(); q >= 0 && int(q) < len(s) {
		return s[q].Load()
	}
	return -1
}

// newPulled returns n pull offsets, each -1.
func newPulled(n int) []atomic.Int64 {
	s := make([]atomic.Int64, n)
	for i := range s {
		s[i].Store(-1)
	}
	return s
}

// meters holds the label bounds and, with Options.MetricsEnable, the counters.
type meters struct {
	maxTopics, maxGroups int

	// Read without a lock on the hot paths; replaced (copied) under mu.
	in  atomic.Pointer[map[string]*inMeter]
	out atomic.Pointer[map[pairKey]*pairMeter]

	mu struct {
		sync.Mutex
		topics, groups map[string]bool // names with a label value of their own
		inByLabel      map[string]*inMeter
		outByLabel     map[pairKey]*outMeter
	}

	rpc   rpcMeter
	flush *meter.Histogram // commit-log syncs (syncTimedFS)
}

// newMeters returns empty meters bounded by o's limits.
func newMeters(o *Options) *meters {
	m := &meters{maxTopics: o.MetricsMaxTopics, maxGroups: o.MetricsMaxGroups,
		flush: meter.NewHistogram(FlushLatencyBuckets...)}
	m.in.Store(&map[string]*inMeter{})
	m.out.Store(&map[pairKey]*pairMeter{})
	m.mu.topics, m.mu.groups = map[string]bool{}, map[string]bool{}
	m.mu.inByLabel, m.mu.outByLabel = map[string]*inMeter{}, map[pairKey]*outMeter{}
	m.rpc.cells.Store(&map[rpcKey]*meter.Histogram{})
	return m
}

// countIn counts one send request's stored messages and bytes for topic.
func (m *meters) countIn(topic string, msgs int, bytes int64) {
	if msgs <= 0 {
		return
	}
	im := (*m.in.Load())[topic]
	if im == nil {
		im = m.addIn(topic)
	}
	im.msgs.Add(int64(msgs))
	im.bytes.Add(bytes)
	im.size.Observe(bytes / int64(msgs))
}

// addIn is countIn's slow path: topic's meter, made and published.
func (m *meters) addIn(topic string) *inMeter {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur := *m.in.Load()
	if im := cur[topic]; im != nil {
		return im
	}
	topic = strings.Clone(topic) // it may point into a request frame that is reused
	im := m.inLocked(m.topicLabelLocked(topic))
	next := make(map[string]*inMeter, len(cur)+1)
	for k, v := range cur {
		next[k] = v
	}
	next[topic] = im
	m.in.Store(&next)
	return im
}

// inLocked is the meter of a topic label.
func (m *meters) inLocked(label string) *inMeter {
	im := m.mu.inByLabel[label]
	if im == nil {
		im = &inMeter{label: label, size: meter.NewHistogram(MessageSizeBuckets...)}
		m.mu.inByLabel[label] = im
	}
	return im
}

// countOut counts one pull answer of msgs messages and bytes bytes to group from
// queue q of topic, whose next pull starts at next.
func (m *meters) countOut(topic, group string, q int32, msgs int, bytes, next int64) {
	pm := (*m.out.Load())[pairKey{topic, group}]
	if pm == nil {
		pm = m.addOut(topic, group)
	}
	pm.out.msgs.Add(int64(msgs))
	pm.out.bytes.Add(bytes)
	pm.setPulled(q, next)
}

// addOut is countOut's slow path.
func (m *meters) addOut(topic, group string) *pairMeter {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur := *m.out.Load()
	k := pairKey{topic, group}
	if pm := cur[k]; pm != nil {
		return pm
	}
	topic, group = strings.Clone(topic), strings.Clone(group) // they may point into a request frame
	k = pairKey{topic, group}
	pm := &pairMeter{out: m.outLocked(pairKey{m.topicLabelLocked(topic), m.groupLabelLocked(group)})}
	pulled := newPulled(0)
	pm.pulled.Store(&pulled)
	next := make(map[pairKey]*pairMeter, len(cur)+1)
	for k, v := range cur {
		next[k] = v
	}
	next[k] = pm
	m.out.Store(&next)
	return pm
}

// outLocked is the meter of a (topic label, group label).
func (m *meters) outLocked(labels pairKey) *outMeter {
	om := m.mu.outByLabel[labels]
	if om == nil {
		om = &outMeter{topic: labels.topic, group: labels.group}
		m.mu.outByLabel[labels] = om
	}
	return om
}

// pulledAt is the pull offset of (topic, group)'s queue q, or -1.
func (m *meters) pulledAt(topic, group string, q int32) int64 {
	if pm := (*m.out.Load())[pairKey{topic, group}]; pm != nil {
		return pm.pulledAt(q)
	}
	return -1
}

// topicLabel is topic's label value.
func (m *meters) topicLabel(topic string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.topicLabelLocked(topic)
}

// groupLabel is group's label value.
func (m *meters) groupLabel(group string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.groupLabelLocked(group)
}

// topicLabelLocked is topic's label value, giving it one of its own while there is room.
func (m *meters) topicLabelLocked(topic string) string {
	return boundLabel(m.mu.topics, topic, m.maxTopics)
}

// groupLabelLocked is groupLabelLocked for a consumer group.
func (m *meters) groupLabelLocked(group string) string {
	return boundLabel(m.mu.groups, group, m.maxGroups)
}

// boundLabel is name when it has (or can get, below limit) a value of its own in kept,
// MetricsOtherLabel otherwise.
func boundLabel(kept map[string]bool, name string, limit int) string {
	if kept[name] {
		return name
	}
	if len(kept) < limit {
		kept[name] = true
		return name
	}
	return MetricsOtherLabel
}

// prune forgets the topics and groups that no longer exist: their label values are
// given up (their series end) and the hot paths' maps no longer hold them.
func (m *meters) prune(topicLive, groupLive func(string) bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for t := range m.mu.topics {
		if !topicLive(t) {
			delete(m.mu.topics, t)
			delete(m.mu.inByLabel, t)
		}
	}
	for g := range m.mu.groups {
		if !groupLive(g) {
			delete(m.mu.groups, g)
		}
	}
	for k := range m.mu.outByLabel {
		if (k.topic != MetricsOtherLabel && !m.mu.topics[k.topic]) || (k.group != MetricsOtherLabel && !m.mu.groups[k.group]) {
			delete(m.mu.outByLabel, k)
		}
	}
	in := *m.in.Load()
	keptIn := make(map[string]*inMeter, len(in))
	for t, im := range in {
		if topicLive(t) && m.mu.inByLabel[im.label] == im {
			keptIn[t] = im
		}
	}
	if len(keptIn) != len(in) {
		m.in.Store(&keptIn)
	}
	out := *m.out.Load()
	keptOut := make(map[pairKey]*pairMeter, len(out))
	for k, pm := range out {
		if topicLive(k.topic) && groupLive(k.group) && m.mu.outByLabel[pairKey{pm.out.topic, pm.out.group}] == pm.out {
			keptOut[k] = pm
		}
	}
	if len(keptOut) != len(out) {
		m.out.Store(&keptOut)
	}
}

// inSnapshot returns the send counters per topic label.
func (m *meters) inSnapshot() []TopicIn {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]TopicIn, 0, len(m.mu.inByLabel))
	for _, im := range m.mu.inByLabel {
		out = append(out, TopicIn{Topic: im.label, Messages: im.msgs.Load(), Bytes: im.bytes.Load(), Size: im.size.Snapshot()})
	}
	return out
}

// outSnapshot returns the pull counters per (topic label, group label).
func (m *meters) outSnapshot() []GroupOut {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]GroupOut, 0, len(m.mu.outByLabel))
	for _, om := range m.mu.outByLabel {
		out = append(out, GroupOut{Topic: om.topic, Group: om.group, Messages: om.msgs.Load(), Bytes: om.bytes.Load()})
	}
	return out
}

// rpcKey names one rpc latency series: the request code, the response code and the
// held flag packed into one word, which the map hashes fast.
type rpcKey uint64

// makeRPCKey packs a series' codes and held flag.
func makeRPCKey(request, response int16, held bool) rpcKey {
	k := rpcKey(uint16(request))<<32 | rpcKey(uint16(response))<<1
	if held {
		k |= 1
	}
	return k
}

// unpack returns the key's codes and held flag.
func (k rpcKey) unpack() (request, response int16, held bool) {
	return int16(uint16(k >> 32)), int16(uint16(k >> 1)), k&1 == 1
}

// rpcMeter is the remoting server's RequestObserver: a latency histogram per (request
// code, response code, held), at most maxRPCSeries of them.
type rpcMeter struct {
	cells atomic.Pointer[map[rpcKey]*meter.Histogram]
	mu    sync.Mutex // serialises adding cells
}

// Answered implements remoting.RequestObserver.
func (r *rpcMeter) Answered(request, response int16, held bool, elapsed time.Duration) {
	k := makeRPCKey(request, response, held)
	h := (*r.cells.Load())[k]
	if h == nil {
		h = r.add(k)
	}
	h.Observe(int64(elapsed))
}

// add is Answered's slow path: k's histogram, or the overflow one's beyond the bound.
func (r *rpcMeter) add(k rpcKey) *meter.Histogram {
	r.mu.Lock()
	defer r.mu.Unlock()
	cur := *r.cells.Load()
	if h := cur[k]; h != nil {
		return h
	}
	if len(cur) >= maxRPCSeries {
		_, _, held := k.unpack()
		k = makeRPCKey(RPCOtherCode, RPCOtherCode, held)
		if h := cur[k]; h != nil {
			return h // the overflow series is not added to the map: the next call comes here again
		}
	}
	h := meter.NewHistogram(RPCLatencyBuckets...)
	next := make(map[rpcKey]*meter.Histogram, len(cur)+1)
	for k, v := range cur {
		next[k] = v
	}
	next[k] = h
	r.cells.Store(&next)
	return h
}

// snapshot returns every rpc series.
func (r *rpcMeter) snapshot() []RPCSeries {
	cur := *r.cells.Load()
	out := make([]RPCSeries, 0, len(cur))
	for k, h := range cur {
		req, resp, held := k.unpack()
		out = append(out, RPCSeries{Request: req, Response: resp, Held: held, Latency: h.Snapshot()})
	}
	return out
}

// syncTimedFS is the store's file system with every Sync of a commit-log segment timed
// into a histogram (ferry_storage_flush_latency_seconds): the flush latency as the
// commit log's flusher sees it, without a hook inside the log.
type syncTimedFS struct {
	mmap.FS
	dir string // the commit-log directory: the files directly in it are its segments
	h   *meter.Histogram
}

// OpenMapped opens a file, timing a segment's syncs.
func (f *syncTimedFS) OpenMapped(path string, size int64, create bool) (mmap.Mapped, error) {
	m, err := f.FS.OpenMapped(path, size, create)
	return f.wrap(path, m, err)
}

// OpenMappedSparse opens a sparse file, timing a segment's syncs.
func (f *syncTimedFS) OpenMappedSparse(path string, size int64, create bool) (mmap.Mapped, error) {
	m, err := f.FS.OpenMappedSparse(path, size, create)
	return f.wrap(path, m, err)
}

// wrap times m's syncs when it is a segment.
func (f *syncTimedFS) wrap(path string, m mmap.Mapped, err error) (mmap.Mapped, error) {
	if err != nil || filepath.Dir(filepath.Clean(path)) != f.dir {
		return m, err
	}
	return &syncTimedMapped{Mapped: m, h: f.h}, nil
}

// syncTimedMapped is a segment whose syncs are timed.
type syncTimedMapped struct {
	mmap.Mapped
	h *meter.Histogram
}

// Sync syncs and counts how long it took.
func (m *syncTimedMapped) Sync(off, n int64) error {
	start := time.Now()
	err := m.Mapped.Sync(off, n)
	m.h.Observe(int64(time.Since(start)))
	return err
}
