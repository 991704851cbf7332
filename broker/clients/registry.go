// Package clients is the broker's registry of producer and consumer
// connections, fed by HEART_BEAT (remoting spec §5).
//
// A client heartbeats every 30 s over each connection with the producer and
// consumer groups it runs. The registry keeps, per group, the connections
// (channels) registered in it with their last heartbeat time, and per
// consumer group the consume type, message model, start position and the
// subscription table (topic → SubscriptionData) that pulls filter with.
// Registrations end by UNREGISTER_CLIENT (never sent by the Go client), by
// the connection closing, or by expiry when no heartbeat refreshed them for
// the timeout the broker passes to Expire (120 s like RocketMQ).
//
// Every call that changes a consumer group's membership (a channel joins or
// leaves, a channel's client id changes) or the set of topics it subscribes
// to returns that group in changedGroups, sorted; the broker then sends
// NOTIFY_CONSUMER_IDS_CHANGED to every member (when the group config allows
// it) so that they rebalance at once. A group whose last member left is
// returned too (it has no members left to notify). Changing the expression
// of an already subscribed topic is not a change: it does not affect the
// rebalance (RocketMQ behaves the same).
//
// The subscription table of a group is the union over its members: each
// channel's last heartbeat says which topics it subscribes to, and a topic
// stays in the table while any member subscribes to it. (RocketMQ lets the
// last heartbeat replace the whole table, so members with different
// subscriptions make it flip on every heartbeat and break pulls of the
// topics the others lack.) For a topic several members subscribe to, the
// entry with the highest subVersion wins, as in RocketMQ. Heartbeats flagged
// withoutSub (Java heartbeat V2) leave a member's subscriptions as they were.
//
// The Registry is a plain data structure: safe for concurrent use, it starts
// no goroutines and reads no clock; callers pass the current time.
package clients

import (
	"slices"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/ferrymq/ferry/internal/logging"
	"github.com/ferrymq/ferry/protocol"
)

// DefaultExpiry is how long a registration lives without a heartbeat
// (RocketMQ channelExpiredTimeout, 120 s).
const DefaultExpiry = 120 * time.Second

// ChannelInfo describes one client connection.
type ChannelInfo struct {
	ID         uint64 // connection id, unique within the broker's server
	RemoteAddr string // peer address, "ip:port"
	ClientID   string // client id from the heartbeat; opaque, never parsed
	Language   string // client language from the command header (remoting.LanguageCode.String())
	Version    int16  // client version ordinal from the command header
}

// Member is one connection registered in a group.
type Member struct {
	Channel    ChannelInfo
	LastUpdate time.Time // last heartbeat that listed the group
}

// ConsumerGroupInfo describes a consumer group as its members registered it.
type ConsumerGroupInfo struct {
	Group            string
	ConsumeType      protocol.ConsumeType
	MessageModel     protocol.MessageModel
	ConsumeFromWhere protocol.ConsumeFromWhere
	// Subscriptions maps a topic to its subscription. Its TagsSet and CodeSet
	// slices are shared with the registry and must not be modified.
	Subscriptions map[string]protocol.SubscriptionData
	// Members are the registered connections, sorted by client id, then id.
	Members []Member
	// LastUpdate is the last heartbeat of any member.
	LastUpdate time.Time
}

// Options configures a Registry.
type Options struct {
	// Logger receives an info event whenever a consumer joins or leaves.
	Logger zerolog.Logger
}

// DefaultOptions returns options with a discarding logger.
func DefaultOptions() Options { return Options{Logger: logging.Nop()} }

// Validate reports a problem with o; every Options value is valid today.
func (o *Options) Validate() error { return nil }

// Registry holds the producer and consumer registrations of a broker.
type Registry struct {
	log zerolog.Logger

	mu struct {
		sync.Mutex
		producers map[string]map[uint64]*Member // group → channel id → member
		consumers map[string]*consumerGroup
		channels  map[uint64]*channelGroups // reverse index for ChannelClosed
	}
}

// consumerGroup is the state of one consumer group.
type consumerGroup struct {
	consumeType      protocol.ConsumeType
	messageModel     protocol.MessageModel
	consumeFromWhere protocol.ConsumeFromWhere
	members          map[uint64]*consumerMember
	subs             map[string]protocol.SubscriptionData // union over members
	topicRefs        map[string]int                       // topic → members subscribing to it
	lastUpdate       time.Time
}

// consumerMember is one connection in a consumer group.
type consumerMember struct {
	Member
	topics []string // topics of its last heartbeat carrying subscriptions, sorted
}

// channelGroups lists the groups a channel is registered in.
type channelGroups struct {
	producers map[string]struct{}
	consumers map[string]struct{}
}

// New returns an empty registry.
func New(opts Options) *Registry {
	r := &Registry{log: opts.Logger}
	r.mu.producers = make(map[string]map[uint64]*Member)
	r.mu.consumers = make(map[string]*consumerGroup)
	r.mu.channels = make(map[uint64]*channelGroups)
	return r
}

// Heartbeat registers the connection ch under every producer and consumer
// group of data at time now (ch.ClientID defaults to data.ClientID) and
// returns the consumer groups whose membership or topic set changed. Groups
// with an empty name are ignored.
func (r *Registry) Heartbeat(ch ChannelInfo, data protocol.HeartbeatData, now time.Time) (changedGroups []string) {
	if ch.ClientID == "" {
		ch.ClientID = data.ClientID
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range data.ProducerDataSet {
		if p.GroupName == "" {
			continue
		}
		conns := r.mu.producers[p.GroupName]
		if conns == nil {
			conns = make(map[uint64]*Member)
			r.mu.producers[p.GroupName] = conns
		}
		conns[ch.ID] = &Member{Channel: ch, LastUpdate: now}
		r.indexLocked(ch.ID).producers[p.GroupName] = struct{}{}
	}
	for i := range data.ConsumerDataSet {
		c := &data.ConsumerDataSet[i]
		if c.GroupName == "" {
			continue
		}
		if r.registerConsumerLocked(ch, c, !data.WithoutSub, now) {
			changedGroups = append(changedGroups, c.GroupName)
		}
	}
	return sortedUnique(changedGroups)
}

// registerConsumerLocked registers ch in consumer group c and reports
// whether the group's membership or topic set changed.
func (r *Registry) registerConsumerLocked(ch ChannelInfo, c *protocol.ConsumerData, withSubs bool, now time.Time) bool {
	g := r.mu.consumers[c.GroupName]
	if g == nil {
		g = &consumerGroup{
			members:   make(map[uint64]*consumerMember),
			subs:      make(map[string]protocol.SubscriptionData),
			topicRefs: make(map[string]int),
		}
		r.mu.consumers[c.GroupName] = g
	}
	changed := false
	m := g.members[ch.ID]
	switch {
	case m == nil:
		m = &consumerMember{}
		g.members[ch.ID] = m
		r.indexLocked(ch.ID).consumers[c.GroupName] = struct{}{}
		changed = true
		r.log.Info().Str("group", c.GroupName).Str("clientID", ch.ClientID).
			Str("addr", ch.RemoteAddr).Msg("consumer joined")
	case m.Channel.ClientID != ch.ClientID:
		changed = true
	}
	m.Channel, m.LastUpdate = ch, now
	g.consumeType, g.messageModel, g.consumeFromWhere = c.ConsumeType, c.MessageModel, c.ConsumeFromWhere
	g.lastUpdate = now
	if withSubs && g.setSubscriptions(m, c.SubscriptionDataSet) {
		changed = true
	}
	return changed
}

// setSubscriptions records subs as member m's subscriptions and reports
// whether the group's topic set changed.
func (g *consumerGroup) setSubscriptions(m *consumerMember, subs []protocol.SubscriptionData) bool {
	topics := make([]string, 0, len(subs))
	for i := range subs {
		s := &subs[i]
		topics = append(topics, s.Topic)
		if old, ok := g.subs[s.Topic]; !ok || s.SubVersion > old.SubVersion {
			g.subs[s.Topic] = cloneSubscription(s)
		}
	}
	slices.Sort(topics)
	topics = slices.Compact(topics)
	changed := false
	for _, t := range topics {
		if !slices.Contains(m.topics, t) {
			g.topicRefs[t]++
			changed = changed || g.topicRefs[t] == 1
		}
	}
	for _, t := range m.topics {
		if _, still := slices.BinarySearch(topics, t); !still && g.dropTopicRef(t) {
			changed = true
		}
	}
	m.topics = topics
	return changed
}

// dropTopicRef removes one member's reference to topic and reports whether
// the topic left the group's subscription table.
func (g *consumerGroup) dropTopicRef(topic string) bool {
	g.topicRefs[topic]--
	if g.topicRefs[topic] > 0 {
		return false
	}
	delete(g.topicRefs, topic)
	delete(g.subs, topic)
	return true
}

// removeConsumerLocked removes channel id from consumer group name; the
// group disappears with its last member. It reports whether it was there.
func (r *Registry) removeConsumerLocked(name string, id uint64, reason string) bool {
	g := r.mu.consumers[name]
	if g == nil {
		return false
	}
	m := g.members[id]
	if m == nil {
		return false
	}
	for _, t := range m.topics {
		g.dropTopicRef(t)
	}
	delete(g.members, id)
	if len(g.members) == 0 {
		delete(r.mu.consumers, name)
	}
	if idx := r.mu.channels[id]; idx != nil {
		delete(idx.consumers, name)
		r.pruneIndexLocked(id, idx)
	}
	r.log.Info().Str("group", name).Str("clientID", m.Channel.ClientID).
		Str("addr", m.Channel.RemoteAddr).Str("reason", reason).Msg("consumer left")
	return true
}

// removeProducerLocked removes channel id from producer group name.
func (r *Registry) removeProducerLocked(name string, id uint64) {
	conns := r.mu.producers[name]
	if conns == nil {
		return
	}
	delete(conns, id)
	if len(conns) == 0 {
		delete(r.mu.producers, name)
	}
	if idx := r.mu.channels[id]; idx != nil {
		delete(idx.producers, name)
		r.pruneIndexLocked(id, idx)
	}
}

// indexLocked returns the reverse index entry of channel id, creating it.
func (r *Registry) indexLocked(id uint64) *channelGroups {
	idx := r.mu.channels[id]
	if idx == nil {
		idx = &channelGroups{producers: map[string]struct{}{}, consumers: map[string]struct{}{}}
		r.mu.channels[id] = idx
	}
	return idx
}

func (r *Registry) pruneIndexLocked(id uint64, idx *channelGroups) {
	if len(idx.producers) == 0 && len(idx.consumers) == 0 {
		delete(r.mu.channels, id)
	}
}

// Unregister removes client clientID from producerGroup and consumerGroup
// (either may be empty), as UNREGISTER_CLIENT asks, and returns the consumer
// group if its membership changed.
func (r *Registry) Unregister(clientID, producerGroup, consumerGroup string) (changedGroups []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if conns := r.mu.producers[producerGroup]; producerGroup != "" && conns != nil {
		for id, m := range conns {
			if m.Channel.ClientID == clientID {
				r.removeProducerLocked(producerGroup, id)
			}
		}
	}
	if g := r.mu.consumers[consumerGroup]; consumerGroup != "" && g != nil {
		for id, m := range g.members {
			if m.Channel.ClientID == clientID && r.removeConsumerLocked(consumerGroup, id, "unregister") {
				changedGroups = []string{consumerGroup}
			}
		}
	}
	return changedGroups
}

// ChannelClosed removes every registration of connection channelID and
// returns the consumer groups it left.
func (r *Registry) ChannelClosed(channelID uint64) (changedGroups []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	idx := r.mu.channels[channelID]
	if idx == nil {
		return nil
	}
	for name := range idx.producers {
		r.removeProducerLocked(name, channelID)
	}
	for name := range idx.consumers {
		if r.removeConsumerLocked(name, channelID, "connection closed") {
			changedGroups = append(changedGroups, name)
		}
	}
	delete(r.mu.channels, channelID)
	return sortedUnique(changedGroups)
}

// Expire removes every registration whose last heartbeat is more than
// timeout before now and returns the consumer groups that lost members. The
// broker calls it periodically (RocketMQ: every 10 s, timeout 120 s).
func (r *Registry) Expire(now time.Time, timeout time.Duration) (changedGroups []string) {
	expired := func(last time.Time) bool { return now.Sub(last) > timeout }
	r.mu.Lock()
	defer r.mu.Unlock()
	for name, conns := range r.mu.producers {
		for id, m := range conns {
			if expired(m.LastUpdate) {
				r.removeProducerLocked(name, id)
			}
		}
	}
	for name, g := range r.mu.consumers {
		for id, m := range g.members {
			if expired(m.LastUpdate) && r.removeConsumerLocked(name, id, "heartbeat expired") {
				changedGroups = append(changedGroups, name)
			}
		}
	}
	return sortedUnique(changedGroups)
}

// cloneSubscription copies s with its own tag and code slices.
func cloneSubscription(s *protocol.SubscriptionData) protocol.SubscriptionData {
	c := *s
	c.TagsSet = slices.Clone(s.TagsSet)
	c.CodeSet = slices.Clone(s.CodeSet)
	return c
}

// sortedUnique sorts s and removes duplicates; nil stays nil.
func sortedUnique(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	slices.Sort(s)
	return slices.Compact(s)
}
