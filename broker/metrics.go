package broker

// The broker's numbers for /metrics (package observe names them). Every method reads what
// the broker already keeps, on the scrape: nothing is counted on the send or pull path.

// TopicCount is how many topics the broker's topic table holds.
func (b *Broker) TopicCount() int { return len(b.topics.All().TopicConfigTable) }

// GroupCount is how many subscription groups the broker's group table holds.
func (b *Broker) GroupCount() int { return len(b.groups.All().SubscriptionGroupTable) }

// CommitLogSize is the bytes of commit log the store holds: its end offset minus its
// first retained offset.
func (b *Broker) CommitLogSize() int64 {
	lo, hi := b.store.CommitLogRange()
	return hi - lo
}

// StoreDamage is the store's damage counters: records reads found damaged and commit-log
// ranges recovery quarantined, since the store opened.
func (b *Broker) StoreDamage() (badReads, quarantinedRanges int64) {
	d := b.store.Damage()
	return d.BadReads, d.QuarantinedRanges
}

// HASlaves is how many slaves are connected to this master; ok is false on a broker that
// is not a replicating master.
func (b *Broker) HASlaves() (n int, ok bool) {
	if b.repl == nil || b.repl.master == nil {
		return 0, false
	}
	return b.repl.master.SlaveCount(), true
}

// EachTopicIn calls fn with each topic and the messages stored in it since it was
// created: the sum of its queues' max offsets (a queue's offset counts its messages).
func (b *Broker) EachTopicIn(fn func(topic string, messages int64)) {
	for topic, cfg := range b.topics.All().TopicConfigTable {
		var n int64
		for q := range max(cfg.ReadQueueNums, cfg.WriteQueueNums) {
			n += b.store.MaxOffset(topic, q)
		}
		fn(topic, n)
	}
}

// EachGroupOut calls fn with each (topic, consumer group) that has committed offsets and
// the messages the group consumed from the topic: the sum of its committed queue offsets.
func (b *Broker) EachGroupOut(fn func(topic, group string, messages int64)) {
	type pair struct{ topic, group string }
	sums := map[pair]int64{}
	for k, off := range b.offsets.Snapshot() {
		sums[pair{k.Topic, k.Group}] += max(off, 0)
	}
	for p, n := range sums {
		fn(p.topic, p.group, n)
	}
}
