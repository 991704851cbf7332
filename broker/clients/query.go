package clients

import (
	"cmp"
	"maps"
	"slices"

	"github.com/ferrymq/ferry/protocol"
)

// ConsumerIDs returns the distinct client ids registered in consumer group
// group, sorted (GET_CONSUMER_LIST_BY_GROUP).
func (r *Registry) ConsumerIDs(group string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	g := r.mu.consumers[group]
	if g == nil {
		return nil
	}
	ids := make([]string, 0, len(g.members))
	for _, m := range g.members {
		ids = append(ids, m.Channel.ClientID)
	}
	return sortedUnique(ids)
}

// ConsumerChannels returns the connections registered in consumer group
// group, sorted (the receivers of NOTIFY_CONSUMER_IDS_CHANGED).
func (r *Registry) ConsumerChannels(group string) []uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	g := r.mu.consumers[group]
	if g == nil {
		return nil
	}
	return slices.Sorted(maps.Keys(g.members))
}

// ConsumerChannel returns a connection of client clientID in consumer group
// group (the most recently refreshed one if it has several).
func (r *Registry) ConsumerChannel(group, clientID string) (uint64, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	g := r.mu.consumers[group]
	if g == nil {
		return 0, false
	}
	var best *consumerMember
	for _, m := range g.members {
		if m.Channel.ClientID == clientID && (best == nil || m.LastUpdate.After(best.LastUpdate) ||
			(m.LastUpdate.Equal(best.LastUpdate) && m.Channel.ID > best.Channel.ID)) {
			best = m
		}
	}
	if best == nil {
		return 0, false
	}
	return best.Channel.ID, true
}

// Subscription returns consumer group group's subscription to topic. Its
// TagsSet and CodeSet slices are shared with the registry and must not be
// modified.
func (r *Registry) Subscription(group, topic string) (protocol.SubscriptionData, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if g := r.mu.consumers[group]; g != nil {
		s, ok := g.subs[topic]
		return s, ok
	}
	return protocol.SubscriptionData{}, false
}

// ConsumerGroupInfo returns a snapshot of consumer group group.
func (r *Registry) ConsumerGroupInfo(group string) (ConsumerGroupInfo, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	g := r.mu.consumers[group]
	if g == nil {
		return ConsumerGroupInfo{}, false
	}
	info := ConsumerGroupInfo{
		Group:            group,
		ConsumeType:      g.consumeType,
		MessageModel:     g.messageModel,
		ConsumeFromWhere: g.consumeFromWhere,
		Subscriptions:    maps.Clone(g.subs),
		Members:          make([]Member, 0, len(g.members)),
		LastUpdate:       g.lastUpdate,
	}
	for _, m := range g.members {
		info.Members = append(info.Members, m.Member)
	}
	slices.SortFunc(info.Members, func(a, b Member) int {
		return cmp.Or(cmp.Compare(a.Channel.ClientID, b.Channel.ClientID), cmp.Compare(a.Channel.ID, b.Channel.ID))
	})
	return info, true
}

// ProducerChannels returns the connections registered in producer group
// group, sorted (candidates for CHECK_TRANSACTION_STATE).
func (r *Registry) ProducerChannels(group string) []uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	conns := r.mu.producers[group]
	if conns == nil {
		return nil
	}
	return slices.Sorted(maps.Keys(conns))
}

// Producers returns the connections registered in producer group group,
// sorted by client id, then id (GET_PRODUCER_CONNECTION_LIST).
func (r *Registry) Producers(group string) []Member {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Member, 0, len(r.mu.producers[group]))
	for _, m := range r.mu.producers[group] {
		out = append(out, *m)
	}
	slices.SortFunc(out, func(a, b Member) int {
		return cmp.Or(cmp.Compare(a.Channel.ClientID, b.Channel.ClientID), cmp.Compare(a.Channel.ID, b.Channel.ID))
	})
	return out
}

// Groups returns the consumer groups with at least one member, sorted.
func (r *Registry) Groups() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Sorted(maps.Keys(r.mu.consumers))
}

// ProducerGroups returns the producer groups with at least one connection,
// sorted.
func (r *Registry) ProducerGroups() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Sorted(maps.Keys(r.mu.producers))
}

// ClientChannel returns a connection of client clientID, the most recently refreshed one
// of those it registered as a producer, else as a consumer (the receiver of a
// request-reply answer, PUSH_REPLY_MESSAGE_TO_CLIENT: RocketMQ looks among producers; a
// client process shares one id and one connection per broker between its producers and
// consumers).
func (r *Registry) ClientChannel(clientID string) (uint64, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var best *Member
	pick := func(m *Member) {
		if m.Channel.ClientID == clientID && (best == nil || m.LastUpdate.After(best.LastUpdate) ||
			(m.LastUpdate.Equal(best.LastUpdate) && m.Channel.ID > best.Channel.ID)) {
			best = m
		}
	}
	for _, g := range r.mu.producers {
		for _, m := range g {
			pick(m)
		}
	}
	if best == nil {
		for _, g := range r.mu.consumers {
			for _, m := range g.members {
				pick(&m.Member)
			}
		}
	}
	if best == nil {
		return 0, false
	}
	return best.Channel.ID, true
}
