package nameserver

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/ferrymq/ferry/protocol"
)

// MasterID is the broker id of a broker group's master; slaves use 1, 2, ….
const MasterID int64 = 0

// ErrInvalidRegistration is wrapped by the errors RegisterBroker returns for
// a request that cannot be recorded.
var ErrInvalidRegistration = errors.New("nameserver: invalid broker registration")

// ErrTakeover means a registration or unregistration would replace or remove a broker
// address that another connection registered and still holds (open, not expired),
// without being trusted (ACL admin credentials): an impostor could otherwise send a live
// broker's traffic to itself, or make its routes vanish. A broker re-registers on the
// connection it registered on; after a reconnect the old connection is closed (or its
// registration expires), so its own registrations go through.
var ErrTakeover = errors.New("nameserver: broker registered by another live connection")

// Registrant is the connection a registration or unregistration arrives on.
type Registrant struct {
	// ChannelID is the remoting connection (0: none, as in tests: never owns anything).
	ChannelID uint64
	// IP is the connection's remote address (kept for messages).
	IP netip.Addr
	// Trusted is a request authenticated with admin credentials (ACL): it may take over
	// any registration.
	Trusted bool
}

// RouteTableOptions configures a RouteTable.
type RouteTableOptions struct {
	// BrokerExpiry is how long a broker address stays registered without
	// re-registering, unless its registration carries heartbeatTimeoutMillis.
	// RocketMQ: 120 s.
	BrokerExpiry time.Duration
	// RetainUnlistedTopics keeps a master's queue data for topics that are
	// missing from its latest registration body. By default (false) every
	// registration body is taken as the broker's full topic table, so a topic
	// it no longer lists loses this broker's queues. Set it when Java brokers
	// that send one-topic "increment" registrations must be served; their
	// other topics would otherwise vanish until the next full registration.
	RetainUnlistedTopics bool
	// ChannelOpen reports whether a connection is still open; a registration held by a
	// closed one can be taken over. nil: every connection counts as open.
	ChannelOpen func(id uint64) bool
}

// DefaultRouteTableOptions returns the RocketMQ defaults: a 120 s expiry and
// full-table registration semantics.
func DefaultRouteTableOptions() RouteTableOptions {
	return RouteTableOptions{BrokerExpiry: 120 * time.Second}
}

// Validate reports the first invalid option.
func (o RouteTableOptions) Validate() error {
	if o.BrokerExpiry <= 0 {
		return fmt.Errorf("nameserver: BrokerExpiry must be positive, got %v", o.BrokerExpiry)
	}
	return nil
}

// RegisterResult is what RegisterBroker reports: the response fields for
// the broker and what changed in the table (for logging).
type RegisterResult struct {
	// MasterAddr is the master's address, set for a slave whose master is
	// registered and alive.
	MasterAddr string
	// HAServerAddr is that master's HA address (set with MasterAddr).
	HAServerAddr string
	// NewAddress reports that the address was not registered under this
	// broker name and id before.
	NewAddress bool
	// Displaced is the address that held the same broker id before and was
	// replaced by this registration ("" if none).
	Displaced string
	// TopicsUpdated reports that the registrant is a master whose queue data
	// was rewritten from the body (first registration or new data version).
	TopicsUpdated bool
	// RemovedTopics are the topics that lost this broker's queues because the
	// body no longer lists them.
	RemovedTopics []string
	// DataVersion is the data version the registration carried.
	DataVersion protocol.DataVersion
}

// Changed reports whether the registration changed the table in a way worth
// logging (anything but a plain liveness refresh).
func (r *RegisterResult) Changed() bool {
	return r.NewAddress || r.Displaced != "" || r.TopicsUpdated || len(r.RemovedTopics) > 0
}

// brokerGroup is the table's record of one broker name.
type brokerGroup struct {
	cluster            string
	addrs              map[int64]string // broker id → address
	enableActingMaster bool
	zoneName           string
}

// liveBroker is the liveness record of one broker address. The set of live
// records and the addresses of all broker groups correspond one to one:
// every address in a group has a record naming that group and id, and every
// record's address is in its group. That is what lets expiry remove
// everything a broker contributed.
type liveBroker struct {
	cluster      string
	brokerName   string
	brokerID     int64
	lastUpdate   time.Time
	timeout      time.Duration
	dataVersion  protocol.DataVersion
	haServerAddr string
	channelID    uint64     // remoting channel that carried the last registration; 0 = none
	ip           netip.Addr // that channel's remote address
}

// RouteTable is the name server's state: clusters, broker groups, topic
// queue data and broker liveness. It performs no I/O and reads no clock
// (callers pass the time), so it is fully unit-testable. It is safe for
// concurrent use; readers share a read lock.
type RouteTable struct {
	opts RouteTableOptions
	mu   struct {
		sync.RWMutex
		clusters map[string]map[string]struct{}           // cluster → broker names
		brokers  map[string]*brokerGroup                  // broker name → group
		topics   map[string]map[string]protocol.QueueData // topic → broker name → queues
		live     map[string]*liveBroker                   // broker address → liveness
	}
}

// NewRouteTable returns an empty table.
func NewRouteTable(opts RouteTableOptions) (*RouteTable, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	t := &RouteTable{opts: opts}
	t.mu.clusters = make(map[string]map[string]struct{})
	t.mu.brokers = make(map[string]*brokerGroup)
	t.mu.topics = make(map[string]map[string]protocol.QueueData)
	t.mu.live = make(map[string]*liveBroker)
	return t, nil
}

// RegisterBroker records a broker registration (REGISTER_BROKER) received at
// now on the remoting channel channelID (0 if none). body may be nil, which
// means an empty topic table with a zero data version, as Java reads a
// registration without a body.
//
// The address is stored under (cluster, broker name, broker id); if it was
// registered under another id or broker name it is moved, and an address
// that held the same id before is dropped. Only a master (id 0) writes topic
// queue data, and only on its first registration or when its data version
// changed; it then rewrites the queue data of every topic in the body and,
// unless RetainUnlistedTopics is set, removes its queues from the topics the
// body no longer lists. Every registration refreshes the address's liveness.
func (t *RouteTable) RegisterBroker(req *protocol.RegisterBrokerRequestHeader, body *protocol.RegisterBrokerBody,
	from Registrant, now time.Time) (RegisterResult, error) {
	if err := checkRegistration(req); err != nil {
		return RegisterResult{}, err
	}
	channelID := from.ChannelID
	var wrapper protocol.TopicConfigSerializeWrapper
	if body != nil {
		wrapper = body.TopicConfigSerializeWrapper
	}
	addr, name, id := req.BrokerAddr, req.BrokerName, req.BrokerID

	t.mu.Lock()
	defer t.mu.Unlock()
	res := RegisterResult{DataVersion: wrapper.DataVersion}
	if err := t.checkOwnerLocked(addr, from, now); err != nil {
		return res, err
	}
	if g := t.mu.brokers[name]; g != nil {
		if old, ok := g.addrs[id]; ok && old != addr {
			if err := t.checkOwnerLocked(old, from, now); err != nil {
				return res, err
			}
		}
	}

	prev := t.mu.live[addr]
	if prev != nil && prev.brokerName != name {
		// The process at this address now calls itself another broker.
		t.removeAddrLocked(addr)
		prev = nil
	}
	res.NewAddress = prev == nil || prev.brokerID != id

	g := t.mu.brokers[name]
	if g == nil {
		g = &brokerGroup{cluster: req.ClusterName, addrs: make(map[int64]string)}
		t.mu.brokers[name] = g
	} else if g.cluster != req.ClusterName {
		// A broker group belongs to one cluster; re-registering it under
		// another moves the whole group.
		t.removeFromClusterLocked(g.cluster, name)
		g.cluster = req.ClusterName
		for _, a := range g.addrs {
			if rec := t.mu.live[a]; rec != nil {
				rec.cluster = req.ClusterName
			}
		}
	}
	g.enableActingMaster = req.EnableActingMaster
	g.zoneName = req.ZoneName
	names := t.mu.clusters[req.ClusterName]
	if names == nil {
		names = make(map[string]struct{})
		t.mu.clusters[req.ClusterName] = names
	}
	names[name] = struct{}{}

	// An address registered under another id is removed first (slave→master switch).
	for otherID, a := range g.addrs {
		if a == addr && otherID != id {
			delete(g.addrs, otherID)
		}
	}
	if old, ok := g.addrs[id]; ok && old != addr {
		delete(t.mu.live, old)
		res.Displaced = old
	}
	g.addrs[id] = addr

	if id == MasterID && (res.NewAddress || prev.dataVersion != wrapper.DataVersion) {
		res.TopicsUpdated = true
		res.RemovedTopics = t.writeTopicsLocked(name, wrapper.TopicConfigTable)
	}

	timeout := t.opts.BrokerExpiry
	if req.HeartbeatTimeoutMillis > 0 {
		timeout = time.Duration(req.HeartbeatTimeoutMillis) * time.Millisecond
	}
	t.mu.live[addr] = &liveBroker{
		cluster:      req.ClusterName,
		brokerName:   name,
		brokerID:     id,
		lastUpdate:   now,
		timeout:      timeout,
		dataVersion:  wrapper.DataVersion,
		haServerAddr: req.HAServerAddr,
		channelID:    channelID,
		ip:           from.IP,
	}

	if id != MasterID {
		if master, ok := g.addrs[MasterID]; ok {
			if rec := t.mu.live[master]; rec != nil {
				res.MasterAddr = master
				res.HAServerAddr = rec.haServerAddr
			}
		}
	}
	return res, nil
}

// writeTopicsLocked stores the queue data of brokerName's topics and, unless
// unlisted topics are retained, removes brokerName from the topics missing
// from table. It returns the topics removed for the broker, sorted.
func (t *RouteTable) writeTopicsLocked(brokerName string, table map[string]protocol.TopicConfig) []string {
	listed := make(map[string]struct{}, len(table))
	for key, tc := range table {
		topic := tc.TopicName
		if topic == "" {
			topic = key
		}
		if topic == "" {
			continue
		}
		listed[topic] = struct{}{}
		queues := t.mu.topics[topic]
		if queues == nil {
			queues = make(map[string]protocol.QueueData)
			t.mu.topics[topic] = queues
		}
		queues[brokerName] = tc.QueueData(brokerName)
	}
	if t.opts.RetainUnlistedTopics {
		return nil
	}
	var removed []string
	for topic, queues := range t.mu.topics {
		if _, ok := listed[topic]; ok {
			continue
		}
		if _, ok := queues[brokerName]; !ok {
			continue
		}
		delete(queues, brokerName)
		if len(queues) == 0 {
			delete(t.mu.topics, topic)
		}
		removed = append(removed, topic)
	}
	slices.Sort(removed)
	return removed
}

// checkRegistration validates the fields RegisterBroker relies on.
func checkRegistration(req *protocol.RegisterBrokerRequestHeader) error {
	switch {
	case req == nil:
		return fmt.Errorf("%w: no header", ErrInvalidRegistration)
	case req.BrokerName == "":
		return fmt.Errorf("%w: empty brokerName", ErrInvalidRegistration)
	case req.ClusterName == "":
		return fmt.Errorf("%w: empty clusterName", ErrInvalidRegistration)
	case req.BrokerID < 0:
		return fmt.Errorf("%w: negative brokerId %d", ErrInvalidRegistration, req.BrokerID)
	}
	return checkBrokerAddr(req.BrokerAddr)
}

// checkBrokerAddr rejects addresses that could not be served in a route:
// the Go client splits the raw brokerAddrs text on ',' and strips every '"',
// so such bytes (and whitespace, control and non-ASCII bytes, and '\') would
// corrupt the route of every topic the broker hosts.
func checkBrokerAddr(addr string) error {
	if addr == "" {
		return fmt.Errorf("%w: empty brokerAddr", ErrInvalidRegistration)
	}
	for i := 0; i < len(addr); i++ {
		if c := addr[i]; c <= ' ' || c >= 0x7f || c == '"' || c == ',' || c == '\\' {
			return fmt.Errorf("%w: brokerAddr %q has unsafe byte %q", ErrInvalidRegistration, addr, c)
		}
	}
	return nil
}

// UnregisterBroker removes a broker address on the broker's request
// (UNREGISTER_BROKER), as expiry would. The request is ignored, and false
// returned, unless the address is registered under exactly that cluster,
// broker name and id, so a late request from a broker's previous incarnation
// cannot remove its successor.
func (t *RouteTable) UnregisterBroker(cluster, addr, brokerName string, brokerID int64, from Registrant, now time.Time) (bool, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	rec := t.mu.live[addr]
	if rec == nil || rec.brokerName != brokerName || rec.cluster != cluster || rec.brokerID != brokerID {
		return false, nil
	}
	if err := t.checkOwnerLocked(addr, from, now); err != nil {
		return false, err
	}
	t.removeAddrLocked(addr)
	return true, nil
}

// checkOwnerLocked refuses (ErrTakeover) a change to addr's registration by from when
// another connection holds it (open, not expired) and from is not trusted.
func (t *RouteTable) checkOwnerLocked(addr string, from Registrant, now time.Time) error {
	rec := t.mu.live[addr]
	switch {
	case rec == nil, from.Trusted, rec.channelID == 0, rec.channelID == from.ChannelID,
		rec.lastUpdate.Add(rec.timeout).Before(now),
		t.opts.ChannelOpen != nil && !t.opts.ChannelOpen(rec.channelID):
		return nil
	}
	return fmt.Errorf("%w: %s (broker %s, id %d) is held by a connection from %v; it can be replaced once that connection closes or the registration expires, or with admin credentials",
		ErrTakeover, addr, rec.brokerName, rec.brokerID, rec.ip)
}

// ExpireBrokers removes every broker address whose last registration plus
// its timeout is before now, and returns the removed addresses, sorted.
func (t *RouteTable) ExpireBrokers(now time.Time) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var expired []string
	for addr, rec := range t.mu.live {
		if rec.lastUpdate.Add(rec.timeout).Before(now) {
			expired = append(expired, addr)
		}
	}
	slices.Sort(expired)
	for _, addr := range expired {
		t.removeAddrLocked(addr)
	}
	return expired
}

// RemoveByChannel removes every broker address whose latest registration
// arrived on the channel (its connection closed) and returns them, sorted.
// Channel id 0 matches nothing.
func (t *RouteTable) RemoveByChannel(channelID uint64) []string {
	if channelID == 0 {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	var gone []string
	for addr, rec := range t.mu.live {
		if rec.channelID == channelID {
			gone = append(gone, addr)
		}
	}
	slices.Sort(gone)
	for _, addr := range gone {
		t.removeAddrLocked(addr)
	}
	return gone
}

// removeAddrLocked forgets a broker address: its liveness record and its
// place in its broker group. Removing a group's last address removes the
// group from its cluster and its queue data from every topic; clusters and
// topics left empty disappear.
func (t *RouteTable) removeAddrLocked(addr string) {
	rec := t.mu.live[addr]
	if rec == nil {
		return
	}
	delete(t.mu.live, addr)
	g := t.mu.brokers[rec.brokerName]
	if g == nil {
		return
	}
	for id, a := range g.addrs {
		if a == addr {
			delete(g.addrs, id)
		}
	}
	if len(g.addrs) > 0 {
		return
	}
	delete(t.mu.brokers, rec.brokerName)
	t.removeFromClusterLocked(g.cluster, rec.brokerName)
	for topic, queues := range t.mu.topics {
		delete(queues, rec.brokerName)
		if len(queues) == 0 {
			delete(t.mu.topics, topic)
		}
	}
}

// removeFromClusterLocked removes a broker name from a cluster and drops the
// cluster when it is left empty.
func (t *RouteTable) removeFromClusterLocked(cluster, brokerName string) {
	names := t.mu.clusters[cluster]
	delete(names, brokerName)
	if len(names) == 0 {
		delete(t.mu.clusters, cluster)
	}
}

// TopicRoute returns the route of a topic: the queue data of every broker
// group hosting it that is still registered, and those groups' broker data.
// It reports false when either list would be empty (TOPIC_NOT_EXIST).
// orderTopicConf is never set: the name server keeps no ORDER_TOPIC_CONFIG
// KV namespace.
func (t *RouteTable) TopicRoute(topic string) (protocol.TopicRouteData, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	queues := t.mu.topics[topic]
	var route protocol.TopicRouteData
	for _, name := range slices.Sorted(maps.Keys(queues)) {
		g := t.mu.brokers[name]
		if g == nil {
			continue
		}
		route.QueueDatas = append(route.QueueDatas, queues[name])
		route.BrokerDatas = append(route.BrokerDatas, g.data(name))
	}
	if len(route.QueueDatas) == 0 || len(route.BrokerDatas) == 0 {
		return protocol.TopicRouteData{}, false
	}
	return route, true
}

// data returns a copy of the group as a route BrokerData.
func (g *brokerGroup) data(name string) protocol.BrokerData {
	return protocol.BrokerData{
		Cluster:            g.cluster,
		BrokerName:         name,
		BrokerAddrs:        maps.Clone(g.addrs),
		EnableActingMaster: g.enableActingMaster,
		ZoneName:           g.zoneName,
	}
}

// ClusterInfo returns a copy of the cluster and broker tables
// (GET_BROKER_CLUSTER_INFO).
func (t *RouteTable) ClusterInfo() protocol.ClusterInfo {
	t.mu.RLock()
	defer t.mu.RUnlock()
	info := protocol.ClusterInfo{
		BrokerAddrTable:  make(map[string]protocol.BrokerData, len(t.mu.brokers)),
		ClusterAddrTable: make(map[string][]string, len(t.mu.clusters)),
	}
	for name, g := range t.mu.brokers {
		info.BrokerAddrTable[name] = g.data(name)
	}
	for cluster, names := range t.mu.clusters {
		info.ClusterAddrTable[cluster] = slices.Sorted(maps.Keys(names))
	}
	return info
}

// TopicList returns every topic that has queue data, sorted
// (GET_ALL_TOPIC_LIST_FROM_NAMESERVER).
func (t *RouteTable) TopicList() []string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return slices.Sorted(maps.Keys(t.mu.topics))
}

// DeleteTopic removes a topic's route (DELETE_TOPIC_IN_NAMESRV): all of it
// when cluster is empty, otherwise only the queue data of that cluster's
// broker groups. It reports whether anything was removed. A broker that
// still has the topic adds it back the next time its data version changes.
func (t *RouteTable) DeleteTopic(topic, cluster string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	queues, ok := t.mu.topics[topic]
	if !ok {
		return false
	}
	if cluster == "" {
		delete(t.mu.topics, topic)
		return true
	}
	removed := false
	for name := range t.mu.clusters[cluster] {
		if _, ok := queues[name]; ok {
			delete(queues, name)
			removed = true
		}
	}
	if len(queues) == 0 {
		delete(t.mu.topics, topic)
	}
	return removed
}

// BrokerInfo describes one registered broker address (see Brokers).
type BrokerInfo struct {
	Cluster      string               // cluster of the broker group
	BrokerName   string               // broker group
	BrokerID     int64                // 0 = master
	Addr         string               // address clients dial
	HAServerAddr string               // HA address the broker registered
	LastUpdate   time.Time            // time of the latest registration
	Timeout      time.Duration        // expiry after LastUpdate
	DataVersion  protocol.DataVersion // data version of the latest registration
}

// Brokers returns every registered broker address, sorted by broker name,
// then id.
func (t *RouteTable) Brokers() []BrokerInfo {
	t.mu.RLock()
	defer t.mu.RUnlock()
	out := make([]BrokerInfo, 0, len(t.mu.live))
	for addr, rec := range t.mu.live {
		out = append(out, BrokerInfo{
			Cluster:      rec.cluster,
			BrokerName:   rec.brokerName,
			BrokerID:     rec.brokerID,
			Addr:         addr,
			HAServerAddr: rec.haServerAddr,
			LastUpdate:   rec.lastUpdate,
			Timeout:      rec.timeout,
			DataVersion:  rec.dataVersion,
		})
	}
	slices.SortFunc(out, func(a, b BrokerInfo) int {
		return cmp.Or(cmp.Compare(a.BrokerName, b.BrokerName), cmp.Compare(a.BrokerID, b.BrokerID))
	})
	return out
}
