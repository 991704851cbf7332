package client

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
)

// The admin API: what an operator's tool (ferryctl, issue 13) does through the RocketMQ
// admin requests. Files:
//
//   - admin.go: the Admin type, broker targets, topics, cluster and broker information,
//     the name servers' KV config;
//   - admin_query.go: message lookups by id, key and queue offset;
//   - admin_group.go: consumer groups — offsets, consume statistics, subscription
//     groups, connections, offset resets, consume-by-who, running info, direct
//     consumption.
//
// Every call is one or more plain requests on the Client's connections; the Admin keeps
// no state and starts no goroutine that outlives a call (requests to several brokers
// run in parallel inside the call). Results merged from several brokers are this
// package's types; bodies that are one broker's answer as it is are protocol's types.
//
// Which requests Ferry serves today: the broker serves topics (17, 215), statistics
// (202, 208), connections (203, 204), subscription groups (200, 201, 207), consume-by-who
// (300), its config and runtime info (26, 28), message lookups (12, 33), pulls and
// offsets (11, 14, 15, 29, 30, 31, 38); the name server serves 105, 106, 206, 216, the
// KV config (100–102, 219) and broker drains (205, 327; admin_drain.go).
// The others (INVOKE_BROKER_TO_RESET_OFFSET 222, GET_CONSUMER_RUNNING_INFO 307,
// CONSUME_MESSAGE_DIRECTLY 309, GET_TOPICS_BY_CLUSTER 224)
// are sent as RocketMQ defines them; Ferry answers REQUEST_CODE_NOT_SUPPORTED until it
// serves them. TopicStats, ConsumeStats and ResetOffsetByTime fall back to per-queue
// offset requests for brokers that do not serve theirs (documented at each).

// Admin sentinels; the errors of Admin wrap them (test with errors.Is).
var (
	// ErrNotFound means the message (or KV entry) asked for does not exist.
	ErrNotFound = errors.New("client: not found")
	// ErrInvalidArgument means an argument of an Admin call is malformed (a topic or
	// group name, a message id, a queue id, an unknown broker); nothing was changed.
	ErrInvalidArgument = errors.New("client: invalid argument")
)

// Admin is the administration API of a Client: topics, cluster and broker information,
// message lookups and consumer groups. Get it with Client.Admin; it is safe for
// concurrent use and needs no closing (it lives as long as its Client).
type Admin struct {
	c *Client
}

// Admin returns the administration API of c.
func (c *Client) Admin() *Admin { return &Admin{c: c} }

// BrokerInfo is one broker group as the name servers know it.
type BrokerInfo struct {
	// Cluster is the cluster the group belongs to.
	Cluster string
	// Name is the broker (group) name.
	Name string
	// Addrs maps a broker id to its address ("host:port"); id 0 is the master.
	Addrs map[int64]string
}

// MasterAddr is the master's address, or "" when the group has no master.
func (b BrokerInfo) MasterAddr() string { return b.Addrs[0] }

// ClusterInfo is the name servers' view of the cluster (GET_BROKER_CLUSTER_INFO).
type ClusterInfo struct {
	// Clusters maps a cluster name to the names of its broker groups, sorted.
	Clusters map[string][]string
	// Brokers maps a broker name to its group.
	Brokers map[string]BrokerInfo
}

// brokerRef is one broker a request goes to: its group name ("" when unknown) and its
// address.
type brokerRef struct {
	name, addr string
}

// masters lists the master of every broker group of cluster ("" = every cluster),
// sorted by broker name.
func (ci *ClusterInfo) masters(cluster string) []brokerRef {
	var out []brokerRef
	for name, b := range ci.Brokers {
		if (cluster == "" || b.Cluster == cluster) && b.MasterAddr() != "" {
			out = append(out, brokerRef{name: name, addr: b.MasterAddr()})
		}
	}
	slices.SortFunc(out, func(a, b brokerRef) int { return strings.Compare(a.name, b.name) })
	return out
}

// brokerAt finds the broker group with a member at addr and that member's address as
// registered, comparing addresses as IP and port when they parse.
func (ci *ClusterInfo) brokerAt(addr string) (BrokerInfo, string, bool) {
	want, perr := netip.ParseAddrPort(addr)
	for _, name := range slices.Sorted(maps.Keys(ci.Brokers)) {
		b := ci.Brokers[name]
		for _, id := range slices.Sorted(maps.Keys(b.Addrs)) {
			a := b.Addrs[id]
			if a == addr {
				return b, a, true
			}
			got, err := netip.ParseAddrPort(a)
			if perr == nil && err == nil && got.Addr().Unmap() == want.Addr().Unmap() && got.Port() == want.Port() {
				return b, a, true
			}
		}
	}
	return BrokerInfo{}, "", false
}

// ClusterInfo asks the name servers for the clusters and their broker groups.
func (a *Admin) ClusterInfo(ctx context.Context) (*ClusterInfo, error) {
	resp, err := a.c.invokeNameServer(ctx, func() *remoting.Command {
		return protocol.NewRequest(protocol.GetBrokerClusterInfo, nil)
	})
	if err != nil {
		return nil, fmt.Errorf("client: cluster info: %w", err)
	}
	pi, err := protocol.DecodeClusterInfo(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("client: cluster info: %w", err)
	}
	ci := &ClusterInfo{Clusters: map[string][]string{}, Brokers: map[string]BrokerInfo{}}
	for name, bd := range pi.BrokerAddrTable {
		ci.Brokers[name] = BrokerInfo{Cluster: bd.Cluster, Name: name, Addrs: maps.Clone(bd.BrokerAddrs)}
	}
	for cluster, names := range pi.ClusterAddrTable {
		ci.Clusters[cluster] = slices.Compact(slices.Sorted(slices.Values(names)))
	}
	return ci, nil
}

// Target selects the brokers an admin write goes to. The zero Target means every master
// of every cluster the name servers know (for DeleteTopic: the brokers of the topic's
// route).
type Target struct {
	// Cluster selects every master broker of this cluster.
	Cluster string
	// Brokers lists brokers by address ("host:port", any member of a group) or by broker
	// (group) name, which means the group's master. An entry that parses as host:port is
	// an address, otherwise a name.
	Brokers []string
}

// isZero reports whether t selects nothing explicitly.
func (t Target) isZero() bool { return t.Cluster == "" && len(t.Brokers) == 0 }

// isAddr reports whether s has the host:port layout of a broker address.
func isAddr(s string) bool {
	host, port, err := net.SplitHostPort(s)
	return err == nil && host != "" && port != ""
}

// resolve lists the brokers t selects (the union of Cluster's masters and Brokers),
// without duplicates, sorted by name then address.
func (a *Admin) resolve(ctx context.Context, t Target) ([]brokerRef, error) {
	ci, err := a.ClusterInfo(ctx)
	if err != nil {
		return nil, err
	}
	var out []brokerRef
	if t.isZero() {
		out = ci.masters("")
	}
	if t.Cluster != "" {
		if _, ok := ci.Clusters[t.Cluster]; !ok {
			return nil, fmt.Errorf("%w: cluster %q is unknown to the name servers (known: %s)",
				ErrInvalidArgument, t.Cluster, strings.Join(slices.Sorted(maps.Keys(ci.Clusters)), ", "))
		}
		out = append(out, ci.masters(t.Cluster)...)
	}
	for _, s := range t.Brokers {
		r, err := resolveBroker(ci, s)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(x, y brokerRef) int {
		return cmp.Or(strings.Compare(x.name, y.name), strings.Compare(x.addr, y.addr))
	})
	out = slices.CompactFunc(out, func(x, y brokerRef) bool { return x.addr == y.addr })
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no master broker selected (cluster %q, brokers %q)", ErrInvalidArgument, t.Cluster, t.Brokers)
	}
	return out, nil
}

// resolveBroker turns a broker name or address into a brokerRef. An address the name
// servers do not know is used as given, with no name.
func resolveBroker(ci *ClusterInfo, s string) (brokerRef, error) {
	if b, ok := ci.Brokers[s]; ok {
		if b.MasterAddr() == "" {
			return brokerRef{}, fmt.Errorf("%w: broker %s has no master", ErrInvalidArgument, s)
		}
		return brokerRef{name: s, addr: b.MasterAddr()}, nil
	}
	if isAddr(s) {
		b, _, _ := ci.brokerAt(s)
		return brokerRef{name: b.Name, addr: s}, nil
	}
	return brokerRef{}, fmt.Errorf("%w: %q is neither a broker name the name servers know nor a host:port address",
		ErrInvalidArgument, s)
}

// brokerAddr turns one broker name or address into an address, asking the name servers
// only for a name.
func (a *Admin) brokerAddr(ctx context.Context, broker string) (string, error) {
	if isAddr(broker) {
		return broker, nil
	}
	ci, err := a.ClusterInfo(ctx)
	if err != nil {
		return "", err
	}
	r, err := resolveBroker(ci, broker)
	return r.addr, err
}

// eachBroker sends one request per broker in parallel (req builds it for a broker) and
// calls handle with each outcome, serialized, in the order of brokers.
func (a *Admin) eachBroker(ctx context.Context, brokers []brokerRef, req func(brokerRef) *remoting.Command,
	handle func(brokerRef, *remoting.Command, error)) {
	onEachBroker(brokers, func(b brokerRef) (*remoting.Command, error) { return a.c.invoke(ctx, b.addr, req(b)) }, handle)
}

// QueueInfo is a topic's queues on one broker group, as its route says.
type QueueInfo struct {
	// Broker is the broker (group) name.
	Broker string
	// ReadQueues and WriteQueues count the queues consumers read and producers write.
	ReadQueues, WriteQueues int32
	// Perm holds the protocol.Perm* bits (read, write, inherit).
	Perm int32
	// SysFlag holds the protocol.TopicSysFlag* bits.
	SysFlag int32
}

// TopicRoute is where a topic lives: the name servers' GET_ROUTEINFO_BY_TOPIC answer.
type TopicRoute struct {
	// Topic is the topic's name.
	Topic string
	// Queues lists the topic's queues per broker group, sorted by broker name.
	Queues []QueueInfo
	// Brokers lists the broker groups holding the topic, sorted by name.
	Brokers []BrokerInfo
	// OrderTopicConf is set for ordered topics: "brokerA:4;brokerB:4" (broker name and
	// queue count, separated by ';').
	OrderTopicConf string
}

// master returns the master address of broker group name, or "".
func (r *TopicRoute) master(name string) string {
	for _, b := range r.Brokers {
		if b.Name == name {
			return b.MasterAddr()
		}
	}
	return ""
}

// queues returns the QueueInfo of broker group name.
func (r *TopicRoute) queues(name string) (QueueInfo, bool) {
	for _, q := range r.Queues {
		if q.Broker == name {
			return q, true
		}
	}
	return QueueInfo{}, false
}

// brokers lists the masters of the broker groups with queues of the topic.
func (r *TopicRoute) brokers() []brokerRef {
	var out []brokerRef
	for _, q := range r.Queues {
		if addr := r.master(q.Broker); addr != "" {
			out = append(out, brokerRef{name: q.Broker, addr: addr})
		}
	}
	return out
}

// messageQueues lists the topic's queues on broker group name: as many as the larger of
// its read and write queue counts.
func (r *TopicRoute) messageQueues(name string) []MessageQueue {
	qi, _ := r.queues(name)
	n := max(qi.ReadQueues, qi.WriteQueues)
	out := make([]MessageQueue, 0, n)
	for id := range n {
		out = append(out, MessageQueue{Topic: r.Topic, BrokerName: name, QueueID: id})
	}
	return out
}

// checkTopic validates a topic name argument.
func checkTopic(topic string) error {
	if err := protocol.ValidateTopic(topic); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidArgument, err)
	}
	return nil
}

// checkGroup validates a group name argument.
func checkGroup(group string) error {
	if err := protocol.ValidateGroup(group); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidArgument, err)
	}
	return nil
}

// TopicRoute asks the name servers where topic lives. A topic they do not know is an
// error wrapping ErrNoRoute (and a *BrokerError with code TOPIC_NOT_EXIST).
func (a *Admin) TopicRoute(ctx context.Context, topic string) (*TopicRoute, error) {
	if err := checkTopic(topic); err != nil {
		return nil, err
	}
	data, err := a.c.fetchRoute(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("%w %s: %w", ErrNoRoute, topic, err)
	}
	r := &TopicRoute{Topic: topic, OrderTopicConf: data.OrderTopicConf}
	for _, qd := range data.QueueDatas {
		r.Queues = append(r.Queues, QueueInfo{Broker: qd.BrokerName, ReadQueues: qd.ReadQueueNums,
			WriteQueues: qd.WriteQueueNums, Perm: qd.Perm, SysFlag: qd.TopicSysFlag})
	}
	for _, bd := range data.BrokerDatas {
		r.Brokers = append(r.Brokers, BrokerInfo{Cluster: bd.Cluster, Name: bd.BrokerName, Addrs: maps.Clone(bd.BrokerAddrs)})
	}
	slices.SortFunc(r.Queues, func(x, y QueueInfo) int { return strings.Compare(x.Broker, y.Broker) })
	slices.SortFunc(r.Brokers, func(x, y BrokerInfo) int { return strings.Compare(x.Name, y.Name) })
	if len(r.brokers()) == 0 {
		return nil, fmt.Errorf("%w %s: the route has no broker with a master", ErrNoRoute, topic)
	}
	return r, nil
}

// ListTopics lists every topic the name servers know (GET_ALL_TOPIC_LIST_FROM_NAMESERVER),
// including retry, dead-letter and system topics, sorted.
func (a *Admin) ListTopics(ctx context.Context) ([]string, error) {
	return a.topicList(ctx, "all topics", func() *remoting.Command {
		return protocol.NewRequest(protocol.GetAllTopicListFromNameServer, nil)
	})
}

// ClusterTopics lists the topics hosted by the brokers of cluster (GET_TOPICS_BY_CLUSTER),
// sorted.
func (a *Admin) ClusterTopics(ctx context.Context, cluster string) ([]string, error) {
	if cluster == "" {
		return nil, fmt.Errorf("%w: empty cluster name", ErrInvalidArgument)
	}
	return a.topicList(ctx, "topics of cluster "+cluster, func() *remoting.Command {
		return protocol.NewRequest(protocol.GetTopicsByCluster, &protocol.GetTopicsByClusterRequestHeader{Cluster: cluster})
	})
}

// topicList sends a name-server request answered by a TopicList.
func (a *Admin) topicList(ctx context.Context, what string, req func() *remoting.Command) ([]string, error) {
	resp, err := a.c.invokeNameServer(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("client: %s: %w", what, err)
	}
	tl, err := protocol.DecodeTopicList(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("client: %s: %w", what, err)
	}
	return slices.Compact(slices.Sorted(slices.Values(tl.TopicList))), nil
}

// TopicConfig describes a topic to create or update. Zero fields take defaults.
type TopicConfig struct {
	// Name is the topic's name (required): [%|a-zA-Z0-9_-], at most 127 characters.
	Name string
	// ReadQueues and WriteQueues count the topic's queues on each broker. When both are
	// zero they default to 8 (CreateTopic) or keep the broker's current counts
	// (UpdateTopic); when one is zero it equals the other.
	ReadQueues, WriteQueues int32
	// Perm holds protocol.Perm* bits; zero means read and write (CreateTopic) or the
	// current permission (UpdateTopic).
	Perm int32
	// Order marks the topic as ordered.
	Order bool
	// FilterType is how messages carry tags; empty means protocol.SingleTag.
	FilterType protocol.TopicFilterType
	// SysFlag holds protocol.TopicSysFlag* bits; zero keeps the current flags on update.
	SysFlag int32
	// Attributes sets topic attributes (RocketMQ 5's, and Ferry's such as "dedupWindow":
	// "10m", see docs/delivery.md); RemoveAttributes removes some. Attributes named in
	// neither keep their value on update. The broker refuses (ErrInvalidArgument) a key
	// it does not know or a value it does not accept.
	Attributes       map[string]string
	RemoveAttributes []string
}

// defaultTopicQueues is the queue count of a new topic when none is given (as mqadmin).
const defaultTopicQueues = 8

// header validates cfg, fills its defaults from cur (a broker's current queues; zero
// for a new topic) and builds the request header.
func (cfg TopicConfig) header(cur QueueInfo) (*protocol.CreateTopicRequestHeader, error) {
	if err := checkTopic(cfg.Name); err != nil {
		return nil, err
	}
	if cfg.ReadQueues < 0 || cfg.WriteQueues < 0 {
		return nil, fmt.Errorf("%w: topic %s: negative queue count (read %d, write %d)", ErrInvalidArgument,
			cfg.Name, cfg.ReadQueues, cfg.WriteQueues)
	}
	if cfg.Perm&^(protocol.PermInherit|protocol.PermWrite|protocol.PermRead|protocol.PermPriority) != 0 {
		return nil, fmt.Errorf("%w: topic %s: perm %#x has bits outside 0xF", ErrInvalidArgument, cfg.Name, cfg.Perm)
	}
	switch cfg.FilterType {
	case "":
		cfg.FilterType = protocol.SingleTag
	case protocol.SingleTag, protocol.MultiTag:
	default:
		return nil, fmt.Errorf("%w: topic %s: filter type %q (want %s or %s)", ErrInvalidArgument, cfg.Name,
			cfg.FilterType, protocol.SingleTag, protocol.MultiTag)
	}
	switch {
	case cfg.ReadQueues == 0 && cfg.WriteQueues == 0 && cur.ReadQueues > 0:
		cfg.ReadQueues, cfg.WriteQueues = cur.ReadQueues, cur.WriteQueues
	case cfg.ReadQueues == 0 && cfg.WriteQueues == 0:
		cfg.ReadQueues, cfg.WriteQueues = defaultTopicQueues, defaultTopicQueues
	case cfg.ReadQueues == 0:
		cfg.ReadQueues = cfg.WriteQueues
	case cfg.WriteQueues == 0:
		cfg.WriteQueues = cfg.ReadQueues
	}
	if cfg.Perm == 0 {
		cfg.Perm = cmp.Or(cur.Perm, protocol.PermRead|protocol.PermWrite)
	}
	if cfg.SysFlag == 0 {
		cfg.SysFlag = cur.SysFlag
	}
	attrs, err := cfg.attributeChanges()
	if err != nil {
		return nil, err
	}
	return &protocol.CreateTopicRequestHeader{
		Topic: cfg.Name, DefaultTopic: protocol.AutoCreateTopicKey, ReadQueueNums: cfg.ReadQueues,
		WriteQueueNums: cfg.WriteQueues, Perm: cfg.Perm, TopicFilterType: cfg.FilterType,
		TopicSysFlag: cfg.SysFlag, Order: cfg.Order, Attributes: attrs,
	}, nil
}

// attributeChanges encodes Attributes (sorted by key) and RemoveAttributes as the
// request's attributes field.
func (cfg TopicConfig) attributeChanges() (string, error) {
	var changes []protocol.AttributeChange
	for _, k := range slices.Sorted(maps.Keys(cfg.Attributes)) {
		changes = append(changes, protocol.AttributeChange{Key: k, Value: cfg.Attributes[k]})
	}
	for _, k := range cfg.RemoveAttributes {
		changes = append(changes, protocol.AttributeChange{Key: k, Delete: true})
	}
	field := protocol.FormatAttributeChanges(changes)
	if _, err := protocol.ParseAttributeChanges(field); err != nil {
		return "", fmt.Errorf("%w: topic %s: %w", ErrInvalidArgument, cfg.Name, err)
	}
	return field, nil
}

// CreateTopic creates (or replaces) a topic on the brokers of target
// (UPDATE_AND_CREATE_TOPIC); the zero Target means every master. A Ferry broker
// registers the topic with the name servers before answering, so its route exists when
// CreateTopic returns. A broker's refusal (a system topic, a bad name) is a *BrokerError;
// the errors of several brokers are joined, each naming its broker.
func (a *Admin) CreateTopic(ctx context.Context, cfg TopicConfig, target Target) error {
	h, err := cfg.header(QueueInfo{})
	if err != nil {
		return err
	}
	brokers, err := a.resolve(ctx, target)
	if err != nil {
		return fmt.Errorf("client: create topic %s: %w", cfg.Name, err)
	}
	defer a.c.forgetRoute(cfg.Name)
	return a.writeAll(ctx, "create topic "+cfg.Name, brokers, func(brokerRef) *remoting.Command {
		return protocol.NewRequest(protocol.UpdateAndCreateTopic, h)
	})
}

// UpdateTopic changes an existing topic on every broker that holds it: zero fields of cfg
// keep each broker's current queue counts, permission and flags (Order and FilterType
// are always taken from cfg). A topic the name servers do not know is an error wrapping
// ErrNoRoute.
func (a *Admin) UpdateTopic(ctx context.Context, cfg TopicConfig) error {
	if err := checkTopic(cfg.Name); err != nil {
		return err
	}
	r, err := a.TopicRoute(ctx, cfg.Name)
	if err != nil {
		return fmt.Errorf("client: update topic: %w", err)
	}
	headers := map[string]*protocol.CreateTopicRequestHeader{}
	for _, b := range r.brokers() {
		cur, _ := r.queues(b.name)
		if headers[b.name], err = cfg.header(cur); err != nil {
			return err
		}
	}
	defer a.c.forgetRoute(cfg.Name)
	return a.writeAll(ctx, "update topic "+cfg.Name, r.brokers(), func(b brokerRef) *remoting.Command {
		return protocol.NewRequest(protocol.UpdateAndCreateTopic, headers[b.name])
	})
}

// DeleteTopic deletes a topic from the brokers of target (DELETE_TOPIC_IN_BROKER: its
// config, queues and consumer offsets) and then from every name server
// (DELETE_TOPIC_IN_NAMESRV, restricted to target.Cluster when set). The zero Target means
// the brokers of the topic's current route; a topic without a route is then an error
// wrapping ErrNoRoute.
func (a *Admin) DeleteTopic(ctx context.Context, topic string, target Target) error {
	if err := checkTopic(topic); err != nil {
		return err
	}
	var brokers []brokerRef
	if target.isZero() {
		r, err := a.TopicRoute(ctx, topic)
		if err != nil {
			return fmt.Errorf("client: delete topic: %w", err)
		}
		brokers = r.brokers()
	} else {
		var err error
		if brokers, err = a.resolve(ctx, target); err != nil {
			return fmt.Errorf("client: delete topic %s: %w", topic, err)
		}
	}
	defer a.c.forgetRoute(topic)
	if err := a.writeAll(ctx, "delete topic "+topic, brokers, func(brokerRef) *remoting.Command {
		return protocol.NewRequest(protocol.DeleteTopicInBroker, &protocol.DeleteTopicRequestHeader{Topic: topic})
	}); err != nil {
		return err
	}
	return a.nameServersAll(ctx, "delete topic "+topic, func() *remoting.Command {
		return protocol.NewRequest(protocol.DeleteTopicInNameSrv,
			&protocol.DeleteTopicFromNamesrvRequestHeader{Topic: topic, ClusterName: target.Cluster})
	})
}

// writeAll sends a request to every broker and joins their errors.
func (a *Admin) writeAll(ctx context.Context, what string, brokers []brokerRef, req func(brokerRef) *remoting.Command) error {
	var errs []error
	a.eachBroker(ctx, brokers, req, func(b brokerRef, _ *remoting.Command, err error) {
		if err != nil {
			errs = append(errs, fmt.Errorf("client: %s on broker %s (%s): %w", what, b.name, b.addr, err))
		}
	})
	return errors.Join(errs...)
}

// nameServersAll sends a request to every name server and joins their errors.
func (a *Admin) nameServersAll(ctx context.Context, what string, req func() *remoting.Command) error {
	var errs []error
	for _, ns := range a.c.opts.NameServers {
		if _, err := a.c.invoke(ctx, ns, req()); err != nil {
			errs = append(errs, fmt.Errorf("client: %s on name server %s: %w", what, ns, err))
		}
	}
	return errors.Join(errs...)
}

// QueueStats is one queue's offset range (GET_TOPIC_STATS_INFO).
type QueueStats struct {
	// Queue names the queue.
	Queue MessageQueue
	// MinOffset is the smallest offset still stored; MaxOffset the next offset to be
	// written (MaxOffset − MinOffset messages are stored).
	MinOffset, MaxOffset int64
	// LastUpdate is the store time of the queue's last message (zero when empty).
	LastUpdate time.Time
}

// TopicStats is a topic's queues on every broker holding it.
type TopicStats struct {
	// Topic is the topic's name.
	Topic string
	// Queues lists every queue, sorted by broker name and queue id.
	Queues []QueueStats
}

// Messages is how many messages the topic's queues hold: the sum of MaxOffset −
// MinOffset.
func (s *TopicStats) Messages() int64 {
	var n int64
	for _, q := range s.Queues {
		n += q.MaxOffset - q.MinOffset
	}
	return n
}

// TopicStats reports the offset range of every queue of topic on every broker holding it
// (GET_TOPIC_STATS_INFO). A broker that does not serve that request
// (REQUEST_CODE_NOT_SUPPORTED, Ferry today) is asked queue by queue instead:
// GET_MIN_OFFSET, GET_MAX_OFFSET and, for the last update time, a one-message pull of the
// last message (as the tools consumer group, see QueryByOffset).
func (a *Admin) TopicStats(ctx context.Context, topic string) (*TopicStats, error) {
	r, err := a.TopicRoute(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("client: topic stats: %w", err)
	}
	st := &TopicStats{Topic: topic}
	var errs []error
	a.eachBroker(ctx, r.brokers(), func(brokerRef) *remoting.Command {
		return protocol.NewRequest(protocol.GetTopicStatsInfo, &protocol.GetTopicStatsInfoRequestHeader{Topic: topic})
	}, func(b brokerRef, resp *remoting.Command, err error) {
		if isNotSupported(err) {
			qs, err := a.topicStatsByOffsets(ctx, b, r.messageQueues(b.name))
			st.Queues = append(st.Queues, qs...)
			errs = append(errs, err)
			return
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("client: topic stats of %s on %s: %w", topic, b.addr, err))
			return
		}
		table, err := protocol.DecodeTopicStatsTable(resp.Body)
		if err != nil {
			errs = append(errs, fmt.Errorf("client: topic stats of %s from %s: %w", topic, b.addr, err))
			return
		}
		for mq, o := range table.OffsetTable {
			st.Queues = append(st.Queues, QueueStats{Queue: MessageQueue(mq), MinOffset: o.MinOffset,
				MaxOffset: o.MaxOffset, LastUpdate: msTime(o.LastUpdateTimestamp)})
		}
	})
	slices.SortFunc(st.Queues, func(x, y QueueStats) int { return compareQueues(x.Queue, y.Queue) })
	return st, errors.Join(errs...)
}

// topicStatsByOffsets builds the stats of queues on broker b from per-queue requests.
func (a *Admin) topicStatsByOffsets(ctx context.Context, b brokerRef, queues []MessageQueue) ([]QueueStats, error) {
	out := make([]QueueStats, 0, len(queues))
	for _, mq := range queues {
		qs := QueueStats{Queue: mq}
		var err error
		if qs.MinOffset, err = a.c.minOffset(ctx, b.addr, mq); err != nil {
			return out, fmt.Errorf("client: min offset of %s: %w", mq, err)
		}
		if qs.MaxOffset, err = a.c.maxOffset(ctx, b.addr, mq); err != nil {
			return out, fmt.Errorf("client: max offset of %s: %w", mq, err)
		}
		if qs.MaxOffset > qs.MinOffset {
			m, err := a.pullOne(ctx, b.addr, mq, qs.MaxOffset-1)
			switch {
			case err == nil:
				qs.LastUpdate = m.StoreTime
			case !errors.Is(err, ErrNotFound):
				return out, fmt.Errorf("client: last message of %s: %w", mq, err)
			}
		}
		out = append(out, qs)
	}
	return out, nil
}

// msTime converts a Unix-millisecond timestamp; 0 is the zero Time.
func msTime(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

// isNotSupported reports whether err is a REQUEST_CODE_NOT_SUPPORTED answer.
func isNotSupported(err error) bool { return hasCode(err, protocol.RequestCodeNotSupported) }

// hasCode reports whether err is a *BrokerError with code.
func hasCode(err error, code protocol.ResponseCode) bool {
	var be *BrokerError
	return errors.As(err, &be) && be.Code == code
}

// BrokerRuntimeInfo asks one broker (address or broker name) for its run-time statistics
// (GET_BROKER_RUNTIME_INFO): a table of named values as the broker writes them (flush
// mode, role, disk use, put and get rates, versions, uptime, …).
func (a *Admin) BrokerRuntimeInfo(ctx context.Context, broker string) (map[string]string, error) {
	addr, err := a.brokerAddr(ctx, broker)
	if err != nil {
		return nil, fmt.Errorf("client: broker runtime info: %w", err)
	}
	resp, err := a.c.invoke(ctx, addr, protocol.NewRequest(protocol.GetBrokerRuntimeInfo, nil))
	if err != nil {
		return nil, fmt.Errorf("client: broker runtime info: %w", err)
	}
	t, err := protocol.DecodeKVTable(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("client: broker runtime info from %s: %w", addr, err)
	}
	return t.Table, nil
}

// BrokerConfig asks one broker (address or broker name) for its configuration
// (GET_BROKER_CONFIG): the settings as key → value, decoded from the Java properties text
// the broker sends.
func (a *Admin) BrokerConfig(ctx context.Context, broker string) (map[string]string, error) {
	addr, err := a.brokerAddr(ctx, broker)
	if err != nil {
		return nil, fmt.Errorf("client: broker config: %w", err)
	}
	resp, err := a.c.invoke(ctx, addr, protocol.NewRequest(protocol.GetBrokerConfig, nil))
	if err != nil {
		return nil, fmt.Errorf("client: broker config: %w", err)
	}
	m, err := protocol.DecodeConfigProperties(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("client: broker config from %s: %w", addr, err)
	}
	return m, nil
}

// PutKVConfig stores value under (namespace, key) on every name server (PUT_KV_CONFIG).
// The ORDER_TOPIC_CONFIG namespace maps a topic to the orderTopicConf of its route.
func (a *Admin) PutKVConfig(ctx context.Context, namespace, key, value string) error {
	if namespace == "" || key == "" {
		return fmt.Errorf("%w: KV config needs a namespace and a key", ErrInvalidArgument)
	}
	return a.nameServersAll(ctx, "put KV config", func() *remoting.Command {
		return protocol.NewRequest(protocol.PutKVConfig, &protocol.PutKVConfigRequestHeader{Namespace: namespace, Key: key, Value: value})
	})
}

// KVConfig reads the value stored under (namespace, key) (GET_KV_CONFIG); an absent
// entry is an error wrapping ErrNotFound.
func (a *Admin) KVConfig(ctx context.Context, namespace, key string) (string, error) {
	if namespace == "" || key == "" {
		return "", fmt.Errorf("%w: KV config needs a namespace and a key", ErrInvalidArgument)
	}
	resp, err := a.c.invokeNameServer(ctx, func() *remoting.Command {
		return protocol.NewRequest(protocol.GetKVConfig, &protocol.GetKVConfigRequestHeader{Namespace: namespace, Key: key})
	})
	if hasCode(err, protocol.QueryNotFound) {
		return "", fmt.Errorf("%w: KV config %s/%s: %w", ErrNotFound, namespace, key, err)
	}
	if err != nil {
		return "", fmt.Errorf("client: KV config %s/%s: %w", namespace, key, err)
	}
	var h protocol.GetKVConfigResponseHeader
	if err := h.DecodeExt(resp.ExtFields); err != nil {
		return "", fmt.Errorf("client: KV config %s/%s: %w", namespace, key, err)
	}
	return h.Value, nil
}

// KVList reads every entry of a namespace (GET_KVLIST_BY_NAMESPACE); an unknown
// namespace is an error wrapping ErrNotFound.
func (a *Admin) KVList(ctx context.Context, namespace string) (map[string]string, error) {
	if namespace == "" {
		return nil, fmt.Errorf("%w: empty KV namespace", ErrInvalidArgument)
	}
	resp, err := a.c.invokeNameServer(ctx, func() *remoting.Command {
		return protocol.NewRequest(protocol.GetKVListByNamespace, &protocol.GetKVListByNamespaceRequestHeader{Namespace: namespace})
	})
	if hasCode(err, protocol.QueryNotFound) {
		return nil, fmt.Errorf("%w: KV namespace %s: %w", ErrNotFound, namespace, err)
	}
	if err != nil {
		return nil, fmt.Errorf("client: KV namespace %s: %w", namespace, err)
	}
	t, err := protocol.DecodeKVTable(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("client: KV namespace %s: %w", namespace, err)
	}
	return t.Table, nil
}

// DeleteKVConfig removes (namespace, key) from every name server (DELETE_KV_CONFIG).
func (a *Admin) DeleteKVConfig(ctx context.Context, namespace, key string) error {
	if namespace == "" || key == "" {
		return fmt.Errorf("%w: KV config needs a namespace and a key", ErrInvalidArgument)
	}
	return a.nameServersAll(ctx, "delete KV config", func() *remoting.Command {
		return protocol.NewRequest(protocol.DeleteKVConfig, &protocol.DeleteKVConfigRequestHeader{Namespace: namespace, Key: key})
	})
}
