package broker

// The broker's numbers for /metrics (package observe names them; docs/operations.md
// lists them). Counters come from meters.go (Options.MetricsEnable); everything else is
// read from what the broker keeps anyway when Metrics is called, on a scrape.

import (
	"cmp"
	"slices"
	"strconv"
	"time"

	"github.com/ferrymq/ferry/broker/dedup"
	"github.com/ferrymq/ferry/broker/groupconf"
	"github.com/ferrymq/ferry/broker/offsets"
	"github.com/ferrymq/ferry/internal/meter"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/store"
)

// Metrics is a snapshot of the broker's numbers. Topic and Group fields are label values
// already: a name beyond the bounds (Options.MetricsMaxTopics, MetricsMaxGroups) reads
// MetricsOtherLabel, and the numbers of the names sharing it are summed (latencies: the
// largest). Slices are in no particular order.
type Metrics struct {
	// Info names the broker.
	Info Identity
	// Counting is Options.MetricsEnable: In, Out, RPC and FlushLatency are kept, and
	// pulls record the offsets behind Lag's Inflight and Ready.
	Counting bool

	// Topics and Groups are the sizes of the topic and subscription-group tables.
	Topics, Groups int
	// StorageSize is the commit log's bytes on disk (end minus first retained offset);
	// FlushBehind the bytes written and not yet durable; DispatchBehind the bytes not yet
	// in the consume queues and index.
	StorageSize, FlushBehind, DispatchBehind int64
	// DiskUsedRatio is the used fraction of the store's disk (0 to 1).
	DiskUsedRatio float64
	// Damage is the store's damage counters.
	Damage store.Damage
	// Master is a replicating master's replication state; nil on a slave.
	Master *MasterMetrics
	// Slave is a slave's; nil on a master.
	Slave *SlaveMetrics
	// HalfMessages are the prepared transaction messages not yet resolved;
	// ScheduledMessages the delayed messages parked and not yet delivered.
	HalfMessages, ScheduledMessages int64
	// Dedup is the dedup memory of topics with a dedup window (package dedup).
	Dedup dedup.Stats
	// Retention is the per-topic retention and consumer-skip counters.
	Retention RetentionMetrics
	// Compaction is the compacted topics' counters.
	Compaction store.CompactionStats
	// RequestBytes is the request memory the remoting server holds and RequestBytesLimit
	// its bound (Options.MaxRequestBytes).
	RequestBytes, RequestBytesLimit int64
	// ProducerConnections counts the producer connections, one per producer group a
	// connection registered.
	ProducerConnections int
	// ConsumerConnections counts the consumer connections per group.
	ConsumerConnections []GroupCount

	// In counts the messages sends stored, per topic; Out the messages pull answers
	// carried, per (topic, group). Only with Counting.
	In  []TopicIn
	Out []GroupOut
	// Lag is each consumer group's progress in each topic it consumes (committed
	// offsets, or online subscriptions).
	Lag []GroupLag
	// RPC is the latency of answered requests; FlushLatency the time of each sync of
	// commit-log data. Only with Counting.
	RPC          []RPCSeries
	FlushLatency meter.HistogramSnapshot
}

// Identity names a broker.
type Identity struct {
	Cluster, Name string
	ID            int64 // the broker id it registers under
	Role          Role
}

// MasterMetrics is a master's replication state.
type MasterMetrics struct {
	// Slaves counts the connected slaves; SlaveLag is each one's distance behind the log's
	// end.
	Slaves   int
	SlaveLag []SlaveLag
	// SyncStateSet is the number of members of the SyncStateSet in force (the master
	// included) and MasterEpoch its epoch, in controller mode; -1 and 0 otherwise.
	SyncStateSet int
	MasterEpoch  int32
}

// SlaveLag is one connected slave's replication lag.
type SlaveLag struct {
	// BrokerID is the id the slave identified itself with (controller mode), or
	// "unidentified" for the slaves that did not (their largest lag).
	BrokerID string
	// Bytes is the log's end minus the offset the slave last acknowledged.
	Bytes int64
}

// SlaveMetrics is a slave's replication state.
type SlaveMetrics struct {
	// Connected reports a live connection to the master's HA port.
	Connected bool
	// ReplicaOffset is how far its commit log holds the master's.
	ReplicaOffset int64
}

// GroupCount is a number per consumer group label.
type GroupCount struct {
	Group string
	N     int
}

// TopicIn is the send counters of a topic label.
type TopicIn struct {
	Topic           string
	Messages, Bytes int64
	// Size is the message sizes: one observation per send request, its bytes over its
	// messages (RocketMQ's way; a batch counts its average).
	Size meter.HistogramSnapshot
}

// GroupOut is the pull counters of a (topic label, group label).
type GroupOut struct {
	Topic, Group    string
	Messages, Bytes int64
}

// GroupLag is a consumer group's progress in a topic, summed over its queues on this
// broker (RocketMQ 5's lag calculator, for pull consumers).
type GroupLag struct {
	Topic, Group string
	// Lag is the messages stored and not committed: max offset minus committed offset
	// (a queue without a committed offset counts nothing).
	Lag int64
	// Inflight is the messages handed out by pulls and not committed: pull offset
	// (the next offset the last pull answer gave) minus committed offset; Ready the
	// messages not pulled yet: max offset minus pull offset. A queue not pulled from
	// since the broker started counts its committed offset as its pull offset.
	Inflight, Ready int64
	// QueueingLatency is how long the oldest message not pulled yet has been stored;
	// LagLatency the same for the oldest not committed yet (0: none).
	QueueingLatency, LagLatency time.Duration
}

// RPCSeries is the latency of one (request code, response code, held) combination;
// both codes are RPCOtherCode in the series summing those beyond the bound.
type RPCSeries struct {
	Request, Response int16
	// Held reports answers deferred by the handler (held long polls).
	Held    bool
	Latency meter.HistogramSnapshot // nanoseconds
}

// Metrics reads the broker's numbers.
func (b *Broker) Metrics() Metrics {
	o := &b.opts
	m := Metrics{
		Info:     Identity{Cluster: o.ClusterName, Name: o.BrokerName, ID: o.BrokerID, Role: o.Role},
		Counting: o.MetricsEnable,
		Damage:   b.store.Damage(),
	}
	topics := b.topics.All().TopicConfigTable
	groups := b.groups.All().SubscriptionGroupTable
	m.Topics, m.Groups = len(topics), len(groups)
	commits := b.offsets.Snapshot()
	online := b.clients.Groups()
	b.meters.prune(func(t string) bool { _, ok := topics[t]; return ok }, liveGroups(groups, commits, online))

	lo, end := b.store.CommitLogRange()
	m.StorageSize = end - lo
	m.FlushBehind = max(end-b.store.FlushedOffset(), 0)
	m.DispatchBehind = max(end-b.store.DispatchedOffset(), 0)
	m.DiskUsedRatio = b.store.DiskUsedRatio()
	m.Master, m.Slave = b.replicationMetrics()
	if o.Role != RoleSlave {
		m.HalfMessages = int64(b.tx.Stats().Pending)
		m.Dedup = b.dedup.Stats()
	}
	m.ScheduledMessages = b.scheduledWaiting()
	m.Retention = b.retentionMetrics()
	m.Compaction = b.store.CompactionStats()
	if b.server != nil {
		m.RequestBytes, m.RequestBytesLimit = b.server.RequestBytes(), b.server.RequestBytesLimit()
	}
	m.ProducerConnections, m.ConsumerConnections = b.connectionMetrics(online)
	m.Lag = b.lagMetrics(topics, commits, online, o.Clock())
	if o.MetricsEnable {
		m.In, m.Out = b.meters.inSnapshot(), b.meters.outSnapshot()
		m.RPC, m.FlushLatency = b.meters.rpc.snapshot(), b.meters.flush.Snapshot()
	}
	return m
}

// liveGroups reports whether a group still exists: in the group table, with committed
// offsets, or online.
func liveGroups(groups map[string]groupconf.Config, commits map[offsets.Key]int64, online []string) func(string) bool {
	live := make(map[string]bool, len(groups)+len(online))
	for g := range groups {
		live[g] = true
	}
	for k := range commits {
		live[k.Group] = true
	}
	for _, g := range online {
		live[g] = true
	}
	return func(g string) bool { return live[g] }
}

// replicationMetrics is the master's or the slave's replication state.
func (b *Broker) replicationMetrics() (*MasterMetrics, *SlaveMetrics) {
	r := b.repl
	if r.master != nil {
		mm := &MasterMetrics{Slaves: r.master.SlaveCount(), SyncStateSet: -1}
		end := r.cl.MaxOffset()
		byID := map[string]int64{}
		for _, s := range r.master.Slaves() {
			id := "unidentified"
			if s.BrokerID > 0 {
				id = strconv.FormatInt(s.BrokerID, 10)
			}
			lag := max(end-s.Ack, 0)
			if old, ok := byID[id]; !ok || lag > old {
				byID[id] = lag
			}
		}
		for id, lag := range byID {
			mm.SlaveLag = append(mm.SlaveLag, SlaveLag{BrokerID: id, Bytes: lag})
		}
		if r.sync != nil {
			mm.SyncStateSet, mm.MasterEpoch = r.sync.size(), b.opts.MasterEpoch
		}
		return mm, nil
	}
	if b.opts.Role != RoleSlave {
		return nil, nil
	}
	r.mu.Lock()
	s := r.mu.slave
	r.mu.Unlock()
	return nil, &SlaveMetrics{Connected: s != nil && s.Connected(), ReplicaOffset: r.cl.ReplicaOffset()}
}

// scheduledWaiting is the delayed messages not yet delivered: each delay level's queue
// beyond its delivery cursor, and the timer messages pending.
func (b *Broker) scheduledWaiting() int64 {
	st := b.sched.Stats()
	n := st.TimerPending
	for i, cursor := range st.LevelOffsets {
		n += max(b.store.MaxOffset(protocol.ScheduleTopic, int32(i))-cursor, 0)
	}
	return n
}

// connectionMetrics counts the producer connections and the consumer connections per
// group label.
func (b *Broker) connectionMetrics(online []string) (int, []GroupCount) {
	producers := 0
	for _, g := range b.clients.ProducerGroups() {
		producers += len(b.clients.ProducerChannels(g))
	}
	per := map[string]int{}
	for _, g := range online {
		per[b.meters.groupLabel(g)] += len(b.clients.ConsumerChannels(g))
	}
	out := make([]GroupCount, 0, len(per))
	for g, n := range per {
		out = append(out, GroupCount{Group: g, N: n})
	}
	return producers, out
}

// lagMetrics computes every consumer group's progress in every topic it has committed
// offsets for or an online subscription to (retry topics and topics this broker does
// not have are left out), summed per label pair.
func (b *Broker) lagMetrics(topics map[string]protocol.TopicConfig, commits map[offsets.Key]int64, online []string,
	now time.Time) []GroupLag {
	type queueKey struct {
		pairKey
		q int32
	}
	committed := make(map[queueKey]int64, len(commits))
	pairs := map[pairKey]bool{}
	for k, off := range commits {
		committed[queueKey{pairKey{k.Topic, k.Group}, k.QueueID}] = off
		pairs[pairKey{k.Topic, k.Group}] = true
	}
	for _, g := range online {
		if info, ok := b.clients.ConsumerGroupInfo(g); ok {
			for t := range info.Subscriptions {
				pairs[pairKey{t, g}] = true
			}
		}
	}
	keys := make([]pairKey, 0, len(pairs))
	for p := range pairs {
		if _, ok := topics[p.topic]; ok && !protocol.IsRetryTopic(p.topic) {
			keys = append(keys, p)
		}
	}
	slices.SortFunc(keys, func(a, b pairKey) int { return cmp.Or(cmp.Compare(a.topic, b.topic), cmp.Compare(a.group, b.group)) })

	nowMs := now.UnixMilli()
	age := func(ts int64, ok bool) time.Duration {
		if !ok || ts <= 0 || ts >= nowMs {
			return 0
		}
		return time.Duration(nowMs-ts) * time.Millisecond
	}
	sums := map[pairKey]*GroupLag{}
	for _, p := range keys {
		cfg := topics[p.topic]
		var l GroupLag
		for q := range max(cfg.ReadQueueNums, cfg.WriteQueueNums) {
			maxOff := b.store.MaxOffset(p.topic, q)
			done, ok := committed[queueKey{p, q}]
			if !ok || done < 0 {
				done = maxOff
			}
			done = min(done, maxOff)
			pulled := b.meters.pulledAt(p.topic, p.group, q)
			if pulled < done {
				pulled = done
			}
			pulled = min(pulled, maxOff)
			l.Lag += maxOff - done
			l.Inflight += pulled - done
			l.Ready += maxOff - pulled
			if pulled < maxOff {
				l.QueueingLatency = max(l.QueueingLatency, age(b.store.StoreTimeAt(p.topic, q, pulled)))
			}
			if done < maxOff {
				l.LagLatency = max(l.LagLatency, age(b.store.StoreTimeAt(p.topic, q, done)))
			}
		}
		labels := pairKey{b.meters.topicLabel(p.topic), b.meters.groupLabel(p.group)}
		s := sums[labels]
		if s == nil {
			s = &GroupLag{Topic: labels.topic, Group: labels.group}
			sums[labels] = s
		}
		s.Lag += l.Lag
		s.Inflight += l.Inflight
		s.Ready += l.Ready
		s.QueueingLatency = max(s.QueueingLatency, l.QueueingLatency)
		s.LagLatency = max(s.LagLatency, l.LagLatency)
	}
	out := make([]GroupLag, 0, len(sums))
	for _, s := range sums {
		out = append(out, *s)
	}
	return out
}
