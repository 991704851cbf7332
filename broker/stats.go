package broker

import (
	"context"
	"fmt"
	"maps"
	"math"
	"runtime/debug"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/ferrymq/ferry/acl"
	"github.com/ferrymq/ferry/broker/clients"
	traffic "github.com/ferrymq/ferry/broker/stats"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
)

// The administration requests an operator's tools send (ferryctl, RocketMQ's mqadmin):
// statistics, connections and the broker's configuration (topics and subscription
// groups are created and deleted in admin.go).

// statsStore is what the statistics need of the message store.
type statsStore interface {
	MinOffset(topic string, queueID int32) int64
	MaxOffset(topic string, queueID int32) int64
	LatestStoreTime(topic string, queueID int32) (int64, error)
	DiskUsedRatio() float64
	CommitLogRange() (minOffset, maxOffset int64)
	DispatchedOffset() int64
}

// offsetStats is what the statistics need of the consumer-offset table.
type offsetStats interface {
	Query(group, topic string, queueID int32) (int64, bool)
	TopicsOf(group string) []string
	GroupsOf(topic string) []string
}

// clientStats is what the connection lists need of the client registry.
type clientStats interface {
	ConsumerGroupInfo(group string) (clients.ConsumerGroupInfo, bool)
	Producers(group string) []clients.Member
	Groups() []string
}

// statsHandler serves the administration requests of this file.
type statsHandler struct {
	store   statsStore
	topics  TopicTable
	offsets offsetStats
	clients clientStats
	rates   *brokerRates
	config  map[string]string // GET_BROKER_CONFIG's properties, fixed at New
	// liveConfig adds the properties known only once started (the HA listener's) over
	// config; nil: none.
	liveConfig func() map[string]string
	// brokerName names the broker's queues in topic statistics.
	brokerName string
	booted     time.Time
	clock      func() time.Time
	version    protocol.DataVersion
}

// handleTopicStats serves GET_TOPIC_STATS_INFO: each queue's offset range and last store time.
func (h *statsHandler) handleTopicStats(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var rh protocol.GetTopicStatsInfoRequestHeader
	if err := rh.DecodeExt(req.ExtFields); err != nil {
		return nil, fail(protocol.InvalidParameter, "decode header: %v", err)
	}
	cfg, ok := h.topics.Get(rh.Topic)
	if !ok {
		return nil, fail(protocol.TopicNotExist, "topic %s does not exist on this broker", rh.Topic)
	}
	t := protocol.TopicStatsTable{OffsetTable: map[protocol.MessageQueue]protocol.TopicOffset{},
		TopicPutTps: h.rates.topicPutTps(rh.Topic)}
	for q := range max(cfg.ReadQueueNums, cfg.WriteQueueNums) {
		last, _ := h.store.LatestStoreTime(rh.Topic, q) // a queue being cleaned has no time
		t.OffsetTable[protocol.MessageQueue{Topic: rh.Topic, BrokerName: h.brokerName, QueueID: q}] = protocol.TopicOffset{
			MinOffset: h.store.MinOffset(rh.Topic, q), MaxOffset: h.store.MaxOffset(rh.Topic, q), LastUpdateTimestamp: last}
	}
	body, err := protocol.EncodeTopicStatsTable(&t)
	return bodyResponse(req, body, err)
}

// handleConsumeStats serves GET_CONSUME_STATS: a group's progress in every queue of the
// topic asked for (every topic it has offsets or subscriptions for when none is).
//
// With ACL on, a non-admin account is refused a topic it names (topic, topicList) but
// may not SUB, and the topics found from the group leave out those it may not SUB.
func (h *statsHandler) handleConsumeStats(ctx context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var rh protocol.GetConsumeStatsRequestHeader
	if err := rh.DecodeExt(req.ExtFields); err != nil {
		return nil, fail(protocol.InvalidParameter, "decode header: %v", err)
	}
	grant := acl.GrantFrom(ctx)
	topics := rh.Topics()
	if rh.Topic != "" {
		topics = append(topics, rh.Topic)
	}
	for _, t := range topics {
		if err := grant.CheckTopic(t, acl.PermSub); err != nil {
			return nil, err
		}
	}
	if len(topics) == 0 {
		topics = h.offsets.TopicsOf(rh.ConsumerGroup)
		if info, ok := h.clients.ConsumerGroupInfo(rh.ConsumerGroup); ok {
			for t := range info.Subscriptions {
				if !slices.Contains(topics, t) {
					topics = append(topics, t)
				}
			}
		}
		topics = slices.DeleteFunc(topics, func(t string) bool { return !grant.MayTopic(t, acl.PermSub) })
	}
	stats := protocol.ConsumeStats{OffsetTable: map[protocol.MessageQueue]protocol.OffsetWrapper{},
		ConsumeTps: h.rates.groupGetTps(rh.ConsumerGroup, topics)}
	for _, topic := range topics {
		cfg, ok := h.topics.Get(topic)
		if !ok {
			continue
		}
		for q := range cfg.ReadQueueNums {
			committed, found := h.offsets.Query(rh.ConsumerGroup, topic, q)
			if !found {
				committed = 0
			}
			var last int64
			if committed > 0 {
				last, _ = h.store.LatestStoreTime(topic, q) // an upper bound when caught up
			}
			stats.OffsetTable[protocol.MessageQueue{Topic: topic, BrokerName: h.brokerName, QueueID: q}] = protocol.OffsetWrapper{
				BrokerOffset: h.store.MaxOffset(topic, q), ConsumerOffset: committed, PullOffset: committed, LastTimestamp: last}
		}
	}
	body, err := protocol.EncodeConsumeStats(&stats)
	return bodyResponse(req, body, err)
}

// connectionOf describes a registered connection for the connection lists.
func connectionOf(m clients.Member) protocol.Connection {
	return protocol.Connection{ClientAddr: m.Channel.RemoteAddr, ClientID: m.Channel.ClientID,
		Language: m.Channel.Language, Version: int32(m.Channel.Version)}
}

// handleConsumerConnections serves GET_CONSUMER_CONNECTION_LIST. With ACL on, a
// non-admin account sees only the subscriptions to topics it may SUB.
func (h *statsHandler) handleConsumerConnections(ctx context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var rh protocol.GetConsumerConnectionListRequestHeader
	if err := rh.DecodeExt(req.ExtFields); err != nil {
		return nil, fail(protocol.InvalidParameter, "decode header: %v", err)
	}
	info, ok := h.clients.ConsumerGroupInfo(rh.ConsumerGroup)
	if !ok || len(info.Members) == 0 {
		return nil, fail(protocol.ConsumerNotOnline, "consumer group %s has no connection to this broker", rh.ConsumerGroup)
	}
	if g := acl.GrantFrom(ctx); !g.Unrestricted() {
		maps.DeleteFunc(info.Subscriptions, func(t string, _ protocol.SubscriptionData) bool { return !g.MayTopic(t, acl.PermSub) })
	}
	cc := protocol.ConsumerConnection{ConsumeFromWhere: info.ConsumeFromWhere, ConsumeType: info.ConsumeType,
		MessageModel: info.MessageModel, SubscriptionTable: info.Subscriptions}
	for _, m := range info.Members {
		cc.ConnectionSet = append(cc.ConnectionSet, connectionOf(m))
	}
	body, err := protocol.EncodeConsumerConnection(&cc)
	return bodyResponse(req, body, err)
}

// handleProducerConnections serves GET_PRODUCER_CONNECTION_LIST.
func (h *statsHandler) handleProducerConnections(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var rh protocol.GetProducerConnectionListRequestHeader
	if err := rh.DecodeExt(req.ExtFields); err != nil {
		return nil, fail(protocol.InvalidParameter, "decode header: %v", err)
	}
	pc := protocol.ProducerConnection{}
	for _, m := range h.clients.Producers(rh.ProducerGroup) {
		pc.ConnectionSet = append(pc.ConnectionSet, connectionOf(m))
	}
	body, err := protocol.EncodeProducerConnection(&pc)
	return bodyResponse(req, body, err)
}

// handleConsumeByWho serves QUERY_TOPIC_CONSUME_BY_WHO: the groups with offsets for the
// topic or subscribed to it.
func (h *statsHandler) handleConsumeByWho(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var rh protocol.QueryTopicConsumeByWhoRequestHeader
	if err := rh.DecodeExt(req.ExtFields); err != nil {
		return nil, fail(protocol.InvalidParameter, "decode header: %v", err)
	}
	groups := h.offsets.GroupsOf(rh.Topic)
	for _, g := range h.clients.Groups() {
		if info, ok := h.clients.ConsumerGroupInfo(g); ok {
			if _, sub := info.Subscriptions[rh.Topic]; sub && !slices.Contains(groups, g) {
				groups = append(groups, g)
			}
		}
	}
	slices.Sort(groups)
	body, err := protocol.EncodeGroupList(&protocol.GroupList{GroupList: groups})
	return bodyResponse(req, body, err)
}

// handleBrokerConfig serves GET_BROKER_CONFIG: the broker's settings as Java properties.
func (h *statsHandler) handleBrokerConfig(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	resp := respond(req, protocol.Success, "")
	rh := protocol.GetBrokerConfigResponseHeader{}
	rh.SetDataVersion(h.version)
	rh.EncodeExt(&resp.ExtFields)
	props := h.config
	if h.liveConfig != nil {
		if live := h.liveConfig(); len(live) > 0 {
			props = maps.Clone(h.config)
			maps.Copy(props, live)
		}
	}
	resp.Body = protocol.EncodeConfigProperties(props)
	return resp, nil
}

// handleRuntimeInfo serves GET_BROKER_RUNTIME_INFO: RocketMQ's keys where Ferry has the
// figure, plus Ferry's own (damage counters, dispatch lag).
func (h *statsHandler) handleRuntimeInfo(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	now := h.clock()
	minOff, maxOff := h.store.CommitLogRange()
	up := now.Sub(h.booted)
	t := protocol.KVTable{Table: map[string]string{
		"brokerVersionDesc":   ferryVersion(),
		"brokerVersion":       "0",
		"bootTimestamp":       strconv.FormatInt(h.booted.UnixMilli(), 10),
		"runtime":             fmt.Sprintf("[ %d days, %d hours, %d minutes, %d seconds ]", int(up.Hours())/24, int(up.Hours())%24, int(up.Minutes())%60, int(up.Seconds())%60),
		"commitLogMinOffset":  strconv.FormatInt(minOff, 10),
		"commitLogMaxOffset":  strconv.FormatInt(maxOff, 10),
		"commitLogDiskRatio":  strconv.FormatFloat(h.store.DiskUsedRatio(), 'f', 4, 64),
		"dispatchBehindBytes": strconv.FormatInt(max(maxOff-h.store.DispatchedOffset(), 0), 10),
		"msgPutTotalTodayNow": strconv.FormatInt(h.rates.puts.total(), 10),
		"msgGetTotalTodayNow": strconv.FormatInt(h.rates.gets.total(), 10),
		"putTps":              h.rates.puts.tpsTriple(now),
		"getTransferedTps":    h.rates.gets.tpsTriple(now),
		"brokerRole":          h.config["brokerRole"],
		"flushDiskType":       h.config["flushDiskType"],
	}}
	for k, v := range h.rates.extra() {
		t.Table[k] = v
	}
	body, err := protocol.EncodeKVTable(&t)
	return bodyResponse(req, body, err)
}

// handleViewStats serves VIEW_BROKER_STATS_DATA: one statistic of a topic or a
// (topic, group) over the last minute, hour and day (package broker/stats). A statistic
// never counted is answered SYSTEM_ERROR, as RocketMQ does.
func (h *statsHandler) handleViewStats(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var rh protocol.ViewBrokerStatsDataRequestHeader
	if err := rh.DecodeExt(req.ExtFields); err != nil {
		return nil, fail(protocol.InvalidParameter, "decode header: %v", err)
	}
	var d protocol.BrokerStatsData
	ok := false
	if h.rates.traffic != nil {
		d, ok = h.rates.traffic.Lookup(rh.StatsName, rh.StatsKey)
	}
	if !ok {
		return nil, fail(protocol.SystemError, "The stats <%s> <%s> not exist", rh.StatsName, rh.StatsKey)
	}
	body, err := protocol.EncodeBrokerStatsData(&d)
	return bodyResponse(req, body, err)
}

// bodyResponse answers SUCCESS with an encoded body, or the encoding error.
func bodyResponse(req *remoting.Command, body []byte, err error) (*remoting.Command, error) {
	if err != nil {
		return nil, fmt.Errorf("broker: encode response: %w", err)
	}
	resp := respond(req, protocol.Success, "")
	resp.Body = body
	return resp, nil
}

// ferryVersion is the running build's module version, or "devel".
func ferryVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return "Ferry " + bi.Main.Version
	}
	return "Ferry devel"
}

// rateBuckets is a per-second counter over the last minute, for TPS figures: Add costs one
// atomic add (and a reset when a new second starts).
type rateBuckets struct {
	sum     atomic.Int64
	buckets [64]struct {
		sec atomic.Int64
		n   atomic.Int64
	}
	now func() time.Time
}

// add counts n events now.
func (r *rateBuckets) add(n int64) {
	r.sum.Add(n)
	sec := r.now().Unix()
	b := &r.buckets[sec%int64(len(r.buckets))]
	if old := b.sec.Load(); old != sec && b.sec.CompareAndSwap(old, sec) {
		b.n.Store(0)
	}
	b.n.Add(n)
}

// total is every event counted.
func (r *rateBuckets) total() int64 { return r.sum.Load() }

// rate is the mean events per second over the window seconds before now's second.
func (r *rateBuckets) rate(now time.Time, window int64) float64 {
	cur := now.Unix()
	var n int64
	for i := range r.buckets {
		b := &r.buckets[i]
		if s := b.sec.Load(); s < cur && s >= cur-window {
			n += b.n.Load()
		}
	}
	return float64(n) / float64(window)
}

// tpsTriple is RocketMQ's "10s 60s 600s" rate string (the 600 s figure is the minute's).
func (r *rateBuckets) tpsTriple(now time.Time) string {
	f := func(v float64) string { return strconv.FormatFloat(math.Round(v*100)/100, 'f', 2, 64) }
	m := r.rate(now, 60)
	return f(r.rate(now, 10)) + " " + f(m) + " " + f(m)
}

// brokerRates counts the messages the broker stores and serves.
type brokerRates struct {
	puts, gets rateBuckets
	// traffic keeps the per-topic and per-group figures of VIEW_BROKER_STATS_DATA; nil
	// in some unit tests.
	traffic *traffic.Stats
	damage  func() map[string]string // the store's damage counters, as runtime-info keys
}

// put counts a send request that stored n messages of size bytes in topic.
func (r *brokerRates) put(topic string, n int, size int64) {
	r.puts.add(int64(n))
	if r.traffic != nil {
		r.traffic.Put(topic, n, size)
	}
}

// get counts a pull answer that handed group n messages of size bytes of topic.
func (r *brokerRates) get(topic, group string, n int, size int64) {
	r.gets.add(int64(n))
	if r.traffic != nil {
		r.traffic.Get(topic, group, n, size)
	}
}

func newBrokerRates(now func() time.Time, damage func() map[string]string) *brokerRates {
	r := &brokerRates{damage: damage}
	r.puts.now, r.gets.now = now, now
	return r
}

// topicPutTps is topic's put rate over the last minute (its TOPIC_PUT_NUMS figure); the
// broker-wide rate of the last 10 s when no per-topic figures are kept (unit tests).
func (r *brokerRates) topicPutTps(topic string) float64 {
	if r.traffic == nil {
		return r.puts.rate(r.puts.now(), 10)
	}
	d, _ := r.traffic.Lookup(protocol.StatsTopicPutNums, topic) // nothing counted: 0
	return d.StatsMinute.TPS
}

// groupGetTps is group's get rate from topics over the last minute (the sum of its
// GROUP_GET_NUMS figures); the broker-wide rate of the last 10 s when no per-group figures
// are kept (unit tests).
func (r *brokerRates) groupGetTps(group string, topics []string) float64 {
	if r.traffic == nil {
		return r.gets.rate(r.gets.now(), 10)
	}
	var tps float64
	for _, t := range topics {
		d, _ := r.traffic.Lookup(protocol.StatsGroupGetNums, t+protocol.StatsKeySeparator+group)
		tps += d.StatsMinute.TPS
	}
	return tps
}

// extra are Ferry's own runtime-info keys.
func (r *brokerRates) extra() map[string]string {
	if r.damage == nil {
		return nil
	}
	return r.damage()
}
