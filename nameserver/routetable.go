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

// ErrTakeover means a registration or unregistration would rebind a broker name and id,
// or a broker address, that a connection registered and whose registration has not
// expired, without being trusted (ACL admin credentials): an impostor could otherwise
// send a broker's traffic to itself, or make its routes vanish. The binding outlives the
// connection (see RouteTable): a broker that restarts, crashes or reconnects gets it back
// by registering the same address, name and id again.
var ErrTakeover = errors.New("nameserver: broker name, id or address bound to another registration")

// ErrStaleEpoch means a registration of a broker in controller mode (a master epoch,
// protocol.RegisterBrokerRequestHeader.MasterEpoch) met a binding registered with a
// higher master epoch: the broker was replaced by a newer master. It is refused even
// when trusted; RegisterResult.MasterEpoch holds the higher epoch.
var ErrStaleEpoch = errors.New("nameserver: stale master epoch")

// Registrant is the connection a registration or unregistration arrives on.
type Registrant struct {
	// ChannelID is the remoting connection (0: none, as in tests: never owns anything).
	ChannelID uint64
	// IP is the connection's remote address. Among connections registering the same
	// binding, one from the advertised host, else from the address the binding was
	// first registered from, is preferred (see RouteTable).
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
	// ChannelOpen reports whether a connection is still open (a connection may close
	// before its close is reported to RemoveByChannel). nil: every connection counts as
	// open.
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
	// Shared reports a registration of the same binding (cluster, broker name, id
	// and address) that another open connection holds: it refreshed the broker's
	// liveness, and the connection keeps the broker routed if the holder's closes,
	// but its body was not read.
	Shared bool
	// Joined reports that Shared registration's connection was not among the
	// binding's connections before.
	Joined bool
	// Reclaimed reports that the registration took back a binding whose
	// connections had all closed (a restarted or reconnected broker).
	Reclaimed bool
	// MasterEpoch is the master epoch of the group's registered master (controller
	// mode; 0 for a fixed-role master or none), answered to the broker; with an
	// ErrStaleEpoch refusal, the higher epoch of the binding that refused it.
	MasterEpoch int32
	// EpochTakeover reports that the registration's higher master epoch took over a
	// binding held by a lower one (a newly elected master, or an old one back as a slave).
	EpochTakeover bool
}

// Changed reports whether the registration changed the table in a way worth
// logging (anything but a plain liveness refresh).
func (r *RegisterResult) Changed() bool {
	return r.NewAddress || r.Displaced != "" || r.TopicsUpdated || len(r.RemovedTopics) > 0 || r.Joined || r.Reclaimed ||
		r.EpochTakeover
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
	// epoch is the master epoch the registration carried (controller mode); 0: a
	// fixed-role broker.
	epoch int32
	// channelID is the connection that holds the binding: its registrations write
	// the queue data; 0 = none (an in-process caller: the record binds nothing).
	channelID uint64
	ip        netip.Addr // that connection's remote address
	// origin is the remote address of the first registration of this binding:
	// it outlives the connections, and a restarted broker coming from it is
	// preferred over other connections (see rank).
	origin netip.Addr
	// others are the other open connections that registered the same binding
	// (Shared), with their remote addresses: one of them holds it when the
	// holder's connection closes.
	others map[uint64]netip.Addr
}

// expired reports whether the record's registration expired before now.
func (rec *liveBroker) expired(now time.Time) bool {
	return rec.lastUpdate.Add(rec.timeout).Before(now)
}

// bound reports whether the record binds its cluster, name, id and address at
// now: it was registered on a connection and has not expired.
func (rec *liveBroker) bound(now time.Time) bool {
	return rec.channelID != 0 && !rec.expired(now)
}

// sameBinding reports whether the record binds exactly this cluster, broker name, id.
func (rec *liveBroker) sameBinding(cluster, name string, id int64) bool {
	return rec.cluster == cluster && rec.brokerName == name && rec.brokerID == id
}

// hostIs reports whether ip is the host of the broker address addr (an IP
// literal "host:port"); false for names or an invalid ip.
func hostIs(ip netip.Addr, addr string) bool {
	ap, err := netip.ParseAddrPort(addr)
	return err == nil && ip.IsValid() && ap.Addr().Unmap() == ip.Unmap()
}

// rank is how much a connection from ip looks like the broker that rec binds
// at addr: 2 from the advertised host, 1 from where the binding was first
// registered, else 0. Among connections registering the same binding, a
// higher rank takes it over.
func (rec *liveBroker) rank(ip netip.Addr, addr string) int {
	switch {
	case hostIs(ip, addr):
		return 2
	case ip.IsValid() && ip.Unmap() == rec.origin.Unmap():
		return 1
	}
	return 0
}

// RouteTable is the name server's state: clusters, broker groups, topic
// queue data and broker liveness. It performs no I/O and reads no clock
// (callers pass the time), so it is fully unit-testable. It is safe for
// concurrent use; readers share a read lock.
//
// # Bindings
//
// A registration received on a connection binds its (cluster, broker name,
// broker id) to its broker address until the registration expires (its
// heartbeatTimeoutMillis, else BrokerExpiry after the last registration).
// The binding outlives the connection: when every connection that registered
// it has closed (or the broker unregistered), the address leaves the routes
// served to clients, as in RocketMQ, but stays reserved.
//
// Until the binding expires, a registration that is not trusted (ACL admin
// credentials) is refused with ErrTakeover when it would bind that name and id
// to another address, that address to another cluster, name or id, or move
// the name's broker group to another cluster. Not even the connection holding
// the binding may change it, since any connection may come to hold it.
//
// A registration of exactly the binding (the advertised address, name, id and
// cluster) is accepted from any connection: that is how a restarted or
// reconnected broker gets its route back at once. If the holder's connection
// is still open, such a registration only refreshes the broker's liveness and
// joins the binding's connections (Shared): the holder's registrations alone
// write the queue data, and the route stays while any of those connections is
// open. A connection that looks more like the broker (see rank) replaces the
// holder: one from the advertised host (an IP literal) replaces one from
// elsewhere, and one from the address the binding was first registered from
// replaces one from a third address.
//
// # Master epochs (controller mode)
//
// A broker in controller mode registers with its master epoch. When a registration
// with an epoch meets a binding of its address, or of its name and id, that was
// registered with a lower epoch, it takes the binding over (EpochTakeover), trusted or
// not: the new master of an election registers id 0 at once, and the old holder's
// address is freed with it, so the old master can come back as a slave under its own
// id from the same address. A registration meeting a binding of a higher epoch is
// refused with ErrStaleEpoch, trusted or not (also by its own binding registered
// earlier with a higher epoch). Bindings without an epoch (fixed roles) are never
// taken over by epoch, and a registration without one never takes over by epoch.
type RouteTable struct {
	opts RouteTableOptions
	mu   struct {
		sync.RWMutex
		clusters map[string]map[string]struct{}           // cluster → broker names
		brokers  map[string]*brokerGroup                  // broker name → group
		topics   map[string]map[string]protocol.QueueData // topic → broker name → queues
		live     map[string]*liveBroker                   // broker address → liveness
		// reserved are the bindings of addresses no longer served (their
		// connections closed or they unregistered) that have not expired:
		// broker address → its last record (channelID ≠ 0, others empty).
		reserved map[string]*liveBroker
		// reservedIDs indexes reserved by broker name, then id.
		reservedIDs map[string]map[int64]string
		// drained are the broker names whose queues routes answer without the
		// write bit (see drain.go).
		drained map[string]struct{}
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
	t.mu.reserved = make(map[string]*liveBroker)
	t.mu.reservedIDs = make(map[string]map[int64]string)
	t.mu.drained = make(map[string]struct{})
	return t, nil
}

// RegisterBroker records a broker registration (REGISTER_BROKER) received at
// now from from. body may be nil, which means an empty topic table with a
// zero data version, as Java reads a registration without a body.
//
// A registration that would break another registration's binding (see
// RouteTable) is refused with ErrTakeover and changes nothing. One that
// repeats a binding another open connection holds only refreshes the
// broker's liveness (RegisterResult.Shared). Otherwise the address is stored
// under (cluster, broker name, broker id); if it was registered under
// another id or broker name it is moved, and an address that held the same
// id before is dropped. Only a master (id 0) writes topic queue data, and
// only on its first registration or when its data version changed; it then
// rewrites the queue data of every topic in the body and, unless
// RetainUnlistedTopics is set, removes its queues from the topics the body
// no longer lists. Every registration refreshes the address's liveness.
func (t *RouteTable) RegisterBroker(req *protocol.RegisterBrokerRequestHeader, body *protocol.RegisterBrokerBody,
	from Registrant, now time.Time) (RegisterResult, error) {
	if err := checkRegistration(req); err != nil {
		return RegisterResult{}, err
	}
	var wrapper protocol.TopicConfigSerializeWrapper
	if body != nil {
		wrapper = body.TopicConfigSerializeWrapper
	}
	addr, name, id, cluster := req.BrokerAddr, req.BrokerName, req.BrokerID, req.ClusterName

	t.mu.Lock()
	defer t.mu.Unlock()
	res := RegisterResult{DataVersion: wrapper.DataVersion}
	took, held, err := t.checkBindingLocked(req, from, now)
	if err != nil {
		res.MasterEpoch = held
		return res, err
	}
	res.EpochTakeover = took

	prev := t.mu.live[addr]
	if prev != nil && t.joinsLocked(prev, req, from, now) {
		_, member := prev.others[from.ChannelID]
		if prev.others == nil {
			prev.others = make(map[uint64]netip.Addr)
		}
		prev.others[from.ChannelID] = from.IP
		prev.lastUpdate = now
		res.Shared, res.Joined = true, !member
		t.masterAddrLocked(&res, t.mu.brokers[name], id)
		return res, nil
	}
	// The connections sharing the binding stay with it; a holder replaced
	// while its connection is open joins them.
	var others map[uint64]netip.Addr
	origin := from.IP
	if r := t.mu.reserved[addr]; r != nil && r.sameBinding(cluster, name, id) {
		origin = r.origin
	}
	if prev != nil && prev.sameBinding(cluster, name, id) {
		origin = prev.origin
		others = prev.others
		if prev.channelID != 0 && prev.channelID != from.ChannelID && t.open(prev.channelID) {
			if others == nil {
				others = make(map[uint64]netip.Addr)
			}
			others[prev.channelID] = prev.ip
		}
		delete(others, from.ChannelID)
	}
	if r := t.mu.reserved[addr]; r != nil {
		res.Reclaimed = r.sameBinding(cluster, name, id)
		t.unreserveLocked(addr)
	}
	if other, ok := t.mu.reservedIDs[name][id]; ok && other != addr {
		t.unreserveLocked(other) // expired, or a trusted registration rebinds it
	}

	if prev != nil && prev.brokerName != name {
		// The process at this address now calls itself another broker.
		t.removeAddrLocked(addr)
		prev = nil
	}
	res.NewAddress = prev == nil || prev.brokerID != id

	g := t.mu.brokers[name]
	if g == nil {
		g = &brokerGroup{cluster: cluster, addrs: make(map[int64]string)}
		t.mu.brokers[name] = g
	} else if g.cluster != cluster {
		// A broker group belongs to one cluster; re-registering it under
		// another moves the whole group.
		t.removeFromClusterLocked(g.cluster, name)
		g.cluster = cluster
		for _, a := range g.addrs {
			if rec := t.mu.live[a]; rec != nil {
				rec.cluster = cluster
			}
		}
	}
	g.enableActingMaster = req.EnableActingMaster
	g.zoneName = req.ZoneName
	names := t.mu.clusters[cluster]
	if names == nil {
		names = make(map[string]struct{})
		t.mu.clusters[cluster] = names
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
		cluster:      cluster,
		brokerName:   name,
		brokerID:     id,
		lastUpdate:   now,
		timeout:      timeout,
		dataVersion:  wrapper.DataVersion,
		haServerAddr: req.HAServerAddr,
		epoch:        req.MasterEpoch,
		channelID:    from.ChannelID,
		ip:           from.IP,
		origin:       origin,
		others:       others,
	}
	t.masterAddrLocked(&res, g, id)
	return res, nil
}

// masterAddrLocked fills in the answer the master epoch of the group's master
// and, for a slave, its address and HA address, if the master is registered.
func (t *RouteTable) masterAddrLocked(res *RegisterResult, g *brokerGroup, id int64) {
	if g == nil {
		return
	}
	if master, ok := g.addrs[MasterID]; ok {
		if rec := t.mu.live[master]; rec != nil {
			res.MasterEpoch = rec.epoch
			if id != MasterID {
				res.MasterAddr = master
				res.HAServerAddr = rec.haServerAddr
			}
		}
	}
}

// joinsLocked reports whether a registration of rec's address that passed
// checkBindingLocked only joins the connections sharing rec's binding: it
// repeats the binding, which another open connection holds, and does not
// outrank the holder (see rank).
func (t *RouteTable) joinsLocked(rec *liveBroker, req *protocol.RegisterBrokerRequestHeader, from Registrant, now time.Time) bool {
	return !from.Trusted && from.ChannelID != 0 && rec.bound(now) && req.MasterEpoch <= rec.epoch &&
		rec.sameBinding(req.ClusterName, req.BrokerName, req.BrokerID) &&
		rec.channelID != from.ChannelID && t.open(rec.channelID) &&
		rec.rank(from.IP, req.BrokerAddr) <= rec.rank(rec.ip, req.BrokerAddr)
}

// open reports whether the connection with the given id is open.
func (t *RouteTable) open(id uint64) bool {
	return t.opts.ChannelOpen == nil || t.opts.ChannelOpen(id)
}

// holdsLocked reports whether from's connection holds addr's served binding rec.
func (t *RouteTable) holdsLocked(addr string, rec *liveBroker, from Registrant) bool {
	return from.ChannelID != 0 && rec.channelID == from.ChannelID && t.mu.live[addr] == rec
}

// bindingLocked returns the record binding addr: served or reserved (nil: none).
func (t *RouteTable) bindingLocked(addr string) *liveBroker {
	if rec := t.mu.live[addr]; rec != nil {
		return rec
	}
	return t.mu.reserved[addr]
}

// checkBindingLocked refuses (ErrTakeover) a registration that is not trusted
// and would bind its address to another cluster, broker name or id, bind its
// broker name and id to another address, or move its broker group to another
// cluster, while the binding concerned is held (served or reserved, not
// expired; registered on a connection). A registration with a master epoch
// takes over (took) a binding of its address or its name and id held with a
// lower epoch, and is refused (ErrStaleEpoch, with the epoch held) by one held
// with a higher epoch, trusted or not (see RouteTable).
func (t *RouteTable) checkBindingLocked(req *protocol.RegisterBrokerRequestHeader, from Registrant, now time.Time) (
	took bool, held int32, err error) {
	addr, name, id, epoch := req.BrokerAddr, req.BrokerName, req.BrokerID, req.MasterEpoch
	// judge decides a registration that would change rec's binding of a.
	judge := func(a string, rec *liveBroker) error {
		switch {
		case epoch > 0 && rec.epoch > epoch:
			held = rec.epoch
			return staleEpochError(a, rec, epoch)
		case epoch > 0 && rec.epoch > 0 && epoch > rec.epoch:
			took = true
			return nil
		case from.Trusted:
			return nil
		}
		return takeoverError(a, rec, from)
	}
	if rec := t.bindingLocked(addr); rec != nil && rec.bound(now) {
		switch {
		case !rec.sameBinding(req.ClusterName, name, id):
			if err := judge(addr, rec); err != nil {
				return false, held, err
			}
		case epoch > 0 && rec.epoch > epoch: // this broker's own binding, of a newer epoch
			return false, rec.epoch, staleEpochError(addr, rec, epoch)
		}
	}
	other, ok := t.mu.reservedIDs[name][id]
	g := t.mu.brokers[name]
	if g != nil {
		if a, live := g.addrs[id]; live {
			other, ok = a, true
		}
	}
	if ok && other != addr {
		if rec := t.bindingLocked(other); rec != nil && rec.bound(now) {
			if err := judge(other, rec); err != nil {
				return false, held, err
			}
		}
	}
	if from.Trusted {
		return took, 0, nil
	}
	if g != nil && g.cluster != req.ClusterName {
		for _, a := range g.addrs {
			if rec := t.mu.live[a]; rec != nil && rec.bound(now) {
				return false, 0, takeoverError(a, rec, from)
			}
		}
	}
	for _, a := range t.mu.reservedIDs[name] {
		if rec := t.mu.reserved[a]; rec != nil && rec.bound(now) && rec.cluster != req.ClusterName {
			return false, 0, takeoverError(a, rec, from)
		}
	}
	return took, 0, nil
}

// staleEpochError is the ErrStaleEpoch refusing a registration of epoch from rec's
// binding of addr.
func staleEpochError(addr string, rec *liveBroker, epoch int32) error {
	return fmt.Errorf("%w: %s is bound to cluster %s, broker %s, id %d by a registration of master epoch %d; "+
		"this registration's epoch %d is older (this broker was replaced: it must ask the controller for its role)",
		ErrStaleEpoch, addr, rec.cluster, rec.brokerName, rec.brokerID, rec.epoch, epoch)
}

// takeoverError is the ErrTakeover refusing from a change of rec's binding of addr.
func takeoverError(addr string, rec *liveBroker, from Registrant) error {
	return fmt.Errorf("%w: %s is bound to cluster %s, broker %s, id %d, registered from %v until %s; "+
		"request from %v refused (it can be rebound once that registration expires, or with admin credentials)",
		ErrTakeover, addr, rec.cluster, rec.brokerName, rec.brokerID, rec.ip,
		rec.lastUpdate.Add(rec.timeout).UTC().Format(time.RFC3339), from.IP)
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

// UnregisterBroker takes a broker address out of the routes on the broker's
// request (UNREGISTER_BROKER). The request is ignored, and false returned,
// unless the address is registered under exactly that cluster, broker name
// and id, so a late request from a broker's previous incarnation cannot
// remove its successor. From the connection holding the binding it withdraws
// that connection, as its close would: another connection sharing the
// binding takes it over, or the address leaves the routes and its binding
// stays reserved until it expires (see RouteTable). From a connection sharing
// the binding it withdraws only that connection (false); from any other
// connection it is refused with ErrTakeover while the holder's connection is
// open. A trusted request (admin credentials) removes the address and its
// binding at once, also a reserved one.
func (t *RouteTable) UnregisterBroker(cluster, addr, brokerName string, brokerID int64, from Registrant, now time.Time) (bool, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	rec := t.mu.live[addr]
	if rec == nil {
		if r := t.mu.reserved[addr]; r != nil && from.Trusted && r.sameBinding(cluster, brokerName, brokerID) {
			t.unreserveLocked(addr)
			return true, nil
		}
		return false, nil
	}
	if !rec.sameBinding(cluster, brokerName, brokerID) {
		return false, nil
	}
	switch {
	case from.Trusted, !rec.bound(now):
		t.removeAddrLocked(addr)
		return true, nil
	case t.holdsLocked(addr, rec, from):
		return t.withdrawLocked(addr, rec, from.ChannelID), nil
	}
	if _, ok := rec.others[from.ChannelID]; ok && from.ChannelID != 0 {
		delete(rec.others, from.ChannelID)
		return false, nil
	}
	if t.open(rec.channelID) {
		return false, takeoverError(addr, rec, from)
	}
	// The holder's connection closed and its close is still to be handled: as
	// that close would.
	return t.withdrawLocked(addr, rec, rec.channelID), nil
}

// withdrawLocked removes the connection ch from the served binding rec of
// addr. If ch held it, the open connection sharing it with the highest rank
// (lowest id first) takes it over; if none is left,
// the address leaves the routes and its binding is reserved. It reports
// whether the address left the routes.
func (t *RouteTable) withdrawLocked(addr string, rec *liveBroker, ch uint64) bool {
	if ch != rec.channelID {
		delete(rec.others, ch)
		return false
	}
	var (
		next     uint64
		nextIP   netip.Addr
		nextRank int
	)
	for _, id := range slices.Sorted(maps.Keys(rec.others)) {
		ip := rec.others[id]
		if !t.open(id) {
			continue
		}
		if r := rec.rank(ip, addr); next == 0 || r > nextRank {
			next, nextIP, nextRank = id, ip, r
		}
	}
	if next != 0 {
		delete(rec.others, next)
		rec.channelID, rec.ip = next, nextIP
		return false
	}
	t.reserveLocked(addr)
	return true
}

// reserveLocked takes a served address out of the routes (removeAddrLocked)
// and keeps its binding reserved, unless it binds nothing (no connection).
func (t *RouteTable) reserveLocked(addr string) {
	rec := t.mu.live[addr]
	if rec == nil {
		return
	}
	t.removeAddrLocked(addr)
	if rec.channelID == 0 {
		return
	}
	ids := t.mu.reservedIDs[rec.brokerName]
	if ids == nil {
		ids = make(map[int64]string)
		t.mu.reservedIDs[rec.brokerName] = ids
	}
	if old, ok := ids[rec.brokerID]; ok && old != addr {
		delete(t.mu.reserved, old)
	}
	rec.others = nil
	t.mu.reserved[addr] = rec
	ids[rec.brokerID] = addr
}

// unreserveLocked forgets the reserved binding of addr, if any.
func (t *RouteTable) unreserveLocked(addr string) {
	rec := t.mu.reserved[addr]
	if rec == nil {
		return
	}
	delete(t.mu.reserved, addr)
	ids := t.mu.reservedIDs[rec.brokerName]
	if ids[rec.brokerID] == addr {
		delete(ids, rec.brokerID)
		if len(ids) == 0 {
			delete(t.mu.reservedIDs, rec.brokerName)
		}
	}
}

// ExpireBrokers removes every broker address whose last registration plus
// its timeout is before now, and the reserved bindings that expired likewise,
// and returns the addresses removed, sorted.
func (t *RouteTable) ExpireBrokers(now time.Time) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var expired []string
	for addr, rec := range t.mu.live {
		if rec.expired(now) {
			expired = append(expired, addr)
		}
	}
	for _, addr := range expired {
		t.removeAddrLocked(addr)
	}
	for addr, rec := range t.mu.reserved {
		if rec.expired(now) {
			t.unreserveLocked(addr)
			expired = append(expired, addr)
		}
	}
	slices.Sort(expired)
	return expired
}

// RemoveByChannel withdraws the connection channelID (it closed) from every
// binding it registered (see withdrawLocked) and returns the addresses that
// left the routes, sorted; their bindings stay reserved until they expire.
// Channel id 0 matches nothing.
func (t *RouteTable) RemoveByChannel(channelID uint64) []string {
	if channelID == 0 {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	var held []string
	for addr, rec := range t.mu.live {
		if rec.channelID == channelID {
			held = append(held, addr)
		} else {
			delete(rec.others, channelID)
		}
	}
	slices.Sort(held)
	var gone []string
	for _, addr := range held {
		if rec := t.mu.live[addr]; rec != nil && t.withdrawLocked(addr, rec, channelID) {
			gone = append(gone, addr)
		}
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
// It reports false when either list would be empty (TOPIC_NOT_EXIST). The
// queue data of a drained broker group (Drain) lack the write bit.
// orderTopicConf is not set here (the server adds it from its KV config).
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
		qd := queues[name]
		if _, ok := t.mu.drained[name]; ok {
			qd.Perm &^= protocol.PermWrite
		}
		route.QueueDatas = append(route.QueueDatas, qd)
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
