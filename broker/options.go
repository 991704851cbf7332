package broker

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/rs/zerolog"

	"github.com/ferrymq/ferry/acl"
	"github.com/ferrymq/ferry/acl/sign"
	"github.com/ferrymq/ferry/broker/dedup"
	"github.com/ferrymq/ferry/internal/delaylevel"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
	"github.com/ferrymq/ferry/store"
)

// ErrInvalidOptions is wrapped by every error Options.Validate returns.
var ErrInvalidOptions = errors.New("broker: invalid options")

// Workers sizes the worker pools, one per request class, so a held long poll or a slow
// fsync never blocks other kinds of request.
type Workers struct {
	Send        int // SEND_MESSAGE(_V2), batches, CONSUMER_SEND_MSG_BACK
	Pull        int // PULL_MESSAGE, LITE_PULL_MESSAGE
	Query       int // QUERY_MESSAGE, VIEW_MESSAGE_BY_ID
	Admin       int // heartbeats, offsets, topics, groups, locks and other small requests
	Transaction int // END_TRANSACTION
}

// Role is a broker's replication role (RocketMQ brokerRole).
type Role uint8

// Replication roles.
const (
	// RoleAsyncMaster answers a send once it is stored locally; slaves catch up.
	RoleAsyncMaster Role = iota
	// RoleSyncMaster answers a send that waits for storage only once a slave has
	// acknowledged it (else FLUSH_SLAVE_TIMEOUT or SLAVE_NOT_AVAILABLE, message stored).
	RoleSyncMaster
	// RoleSlave replicates its master's commit log, serves reads and refuses writes.
	RoleSlave
)

// String is RocketMQ's name of the role.
func (r Role) String() string {
	switch r {
	case RoleAsyncMaster:
		return "ASYNC_MASTER"
	case RoleSyncMaster:
		return "SYNC_MASTER"
	case RoleSlave:
		return "SLAVE"
	}
	return fmt.Sprintf("Role(%d)", uint8(r))
}

// Options configures a Broker. Start from DefaultOptions; the server's configuration file
// is mapped onto it by the launcher (package launch), so the broker knows nothing of
// config files.
type Options struct {
	// BrokerName and ClusterName name the broker group and its cluster.
	BrokerName, ClusterName string
	// BrokerID is 0 for a master, ≥ 1 for a slave.
	BrokerID int64
	// AdvertisedAddr is the "ip:port" clients are told to use; it is also the store
	// host written into records and message ids.
	AdvertisedAddr string
	// Role is the replication role: RoleAsyncMaster (the default), RoleSyncMaster or
	// RoleSlave. A master (BrokerID 0) serves slaves on HAListen; a slave (BrokerID ≥ 1)
	// replicates its master's commit log and refuses writes.
	Role Role
	// HAListen is where a master accepts slave connections ("host:port", port 0 for any
	// free port). Empty on a master: HAAddr, else AdvertisedAddr's port + 1.
	HAListen string
	// HAAddr is the replication address registered with the name servers. Empty: the
	// HA listener's bound address (AdvertisedAddr's host when it listens on all
	// interfaces).
	HAAddr string
	// HAMasterAddr is a slave's static master HA address. Empty: the slave learns it from
	// the name servers' REGISTER_BROKER answer (haServerAddr), as RocketMQ does.
	HAMasterAddr string
	// HASlaveTimeout bounds a SYNC_MASTER send's wait for a slave acknowledgement
	// (RocketMQ slaveTimeout; then FLUSH_SLAVE_TIMEOUT). Default: Store.SyncFlushTimeout
	// (5 s), what the configuration's haSlaveTimeout 0 resolves to.
	HASlaveTimeout time.Duration
	// HASlaveFallbehindMax: a SYNC_MASTER send answers SLAVE_NOT_AVAILABLE without
	// waiting when the best slave is this many bytes or more behind the message's end.
	HASlaveFallbehindMax int64
	// SlaveSyncInterval is how often a slave copies its master's topics, subscription
	// groups, consumer offsets and delay progress (RocketMQ: 10 s); it also copies them
	// as soon as it learns the master's address from a registration answer.
	SlaveSyncInterval time.Duration
	// NamesrvAddrs are the name servers registered with (none: not registered).
	NamesrvAddrs []string
	// RegisterInterval is how often the broker re-registers (RocketMQ: 30 s).
	RegisterInterval time.Duration

	// MaxFrameSize bounds one request frame; IdleTimeout closes silent connections.
	MaxFrameSize int
	IdleTimeout  time.Duration
	// MaxRequestBytes bounds the request bytes held on all connections (0: the remoting
	// default, see remoting.ServerOptions.MaxRequestBytes).
	MaxRequestBytes int64
	// Workers sizes the worker pools.
	Workers Workers

	// Store configures the message store; Dir is also where the metadata lives, on
	// Store.FS. The broker sets its StoreHost (from AdvertisedAddr), TagsCode and
	// Notify; everything else, Logger and Clock included, is taken as given.
	Store store.Options
	// DelayLevels are the delay of each level, level 1 first.
	DelayLevels []time.Duration

	// AutoCreateTopic lets a send to an unknown topic create it from the template topic
	// with DefaultTopicQueueNums queues.
	AutoCreateTopic       bool
	DefaultTopicQueueNums int
	// MaxReconsumeTimes is the retry limit of a consumer group created on demand (its
	// retryMaxTimes): a message handed back more often goes to %DLQ%<group>. A client
	// that sends its own limit (maxReconsumeTimes in the request) overrides it.
	MaxReconsumeTimes int
	// DedupMaxKeys bounds the message keys remembered for topics with a dedupWindow
	// attribute (package dedup), across all of them; the oldest is dropped first.
	DedupMaxKeys int
	// LongPollingEnable holds pulls that find nothing for the client's suspend timeout;
	// otherwise for at most ShortPollingTimeout.
	LongPollingEnable   bool
	ShortPollingTimeout time.Duration
	// SlaveReadEnable (RocketMQ slaveReadEnable) lets pull answers suggest a slave: the
	// group's whichBrokerWhenConsumeSlowly when the pull read a record further behind the
	// log's end than Store.InMemoryMaxBytes, else the group's brokerId. Without it every
	// answer suggests the master. A slave serves pulls either way (see pull.go).
	SlaveReadEnable bool
	// AccessMessageInMemoryMaxRatio is the percentage of physical memory
	// Store.InMemoryMaxBytes was computed from (RocketMQ accessMessageInMemoryMaxRatio,
	// 40). The launcher does the computing; the broker only reports it
	// (GET_BROKER_CONFIG).
	AccessMessageInMemoryMaxRatio int
	// EnablePropertyFilter (RocketMQ enablePropertyFilter) serves SQL92 subscriptions;
	// off, they are refused with SYSTEM_ERROR. Default true (RocketMQ: false).
	EnablePropertyFilter bool
	// TraceTopicEnable creates MsgTraceTopicName (1 queue) at start, so clients' message
	// trace (the official client's WithTrace) has somewhere to store its records.
	// Default true (RocketMQ: false).
	TraceTopicEnable bool
	// MsgTraceTopicName is the trace topic (RocketMQ msgTraceTopicName). Default
	// RMQ_SYS_TRACE_TOPIC.
	MsgTraceTopicName string
	// StoreReplyMessageEnable stores request-reply answers in the reply topic as well as
	// pushing them to the requester (RocketMQ storeReplyMessageEnable). Default true.
	StoreReplyMessageEnable bool
	// ACL, when set, checks every request before it is served (aclEnable; package acl):
	// a refused one is answered NO_PERMISSION. nil: no access control, unless ACLFile
	// is set.
	ACL acl.Checker
	// ACLFile, when set and ACL is nil, is an accounts file the broker loads (New fails
	// on a bad file) and re-reads when it changes (acl.Watcher, closed by Shutdown).
	ACLFile string
	// TLS, when set and not disabled, serves TLS on the broker's port (remoting.TLSConfig:
	// permissive or enforcing). nil: plain only.
	TLS *remoting.TLSConfig
	// NamesrvTLS, when set, is the TLS configuration the broker dials its name servers
	// (and, on a slave, its master's broker port for metadata sync and its HA port for
	// replication) with. nil: plain.
	NamesrvTLS *tls.Config
	// Credentials sign the requests this broker sends to name servers (registration)
	// and, on a slave, to its master (metadata sync), for peers with ACL on; a slave
	// also proves them to its master's HA port (an admin account there, when the
	// master has ACL on). Empty AccessKey: unsigned, and no replication hello.
	Credentials sign.Credentials

	// TransactionTimeout is the age of an unresolved half message before its first
	// check; TransactionCheckInterval the pause between checks (0: the service's
	// default); TransactionCheckMax the checks before it is discarded.
	TransactionTimeout       time.Duration
	TransactionCheckInterval time.Duration
	TransactionCheckMax      int

	// ControllerMode: the role, the id and the master epoch come from the controller,
	// through the failover agent that builds the broker (a role change restarts the
	// Broker object with new options; see controller.go). Off: fixed roles, as configured.
	ControllerMode bool
	// AssignedID is, in controller mode, the broker id the controller assigned this broker
	// (≥ 1). A master registers with the name servers as BrokerID 0 but is AssignedID in
	// its SyncStateSet; a slave's BrokerID is its assigned id (AssignedID 0 means
	// BrokerID, another value must equal it).
	AssignedID int64
	// MasterEpoch is, in controller mode, the master epoch this broker serves under (≥ 1):
	// carried in its name-server registrations (ext field ferryMasterEpoch) and, on a
	// slave, in its HA identity hello; a master admits only slaves of its epoch.
	MasterEpoch int32
	// SyncStateSet is, in controller mode, a master's line to the controller for its own
	// group (required on a master, unused on a slave): the broker grows the set as slaves
	// catch up and shrinks it when a member falls behind for HAMaxTimeSlaveNotCatchup.
	SyncStateSet SyncStateSetKeeper
	// AllAckInSyncStateSet (controller mode only): a send that waits for storage is
	// answered SEND_OK once every member of the SyncStateSet has acknowledged it, else
	// FLUSH_SLAVE_TIMEOUT after HASlaveTimeout (the message is kept). Off: the Role's
	// rule (a SYNC_MASTER waits for any one slave).
	AllAckInSyncStateSet bool
	// MinInSyncReplicas (default 1; above 1 only in controller mode): a master whose
	// SyncStateSet has fewer members (itself included) answers a send that waits for
	// storage SLAVE_NOT_AVAILABLE at once (the message is kept).
	MinInSyncReplicas int
	// HAMaxTimeSlaveNotCatchup (controller mode, default 15 s): a member of the
	// SyncStateSet that has not caught up with the master's log for this long (or has
	// been disconnected that long) is dropped from the set through the controller. It
	// also bounds how often a slave reports its offset when idle.
	HAMaxTimeSlaveNotCatchup time.Duration
	// Epochs is the broker's epoch history (the failover agent's epoch file), served by
	// GET_BROKER_EPOCH_CACHE so a slave can find where its log agrees with its master's.
	// nil: an empty history.
	Epochs EpochSource
	// OnFenced, when set, is called when the broker learns that it is stale: a slave
	// showed a higher master epoch, or a name server refused or answered its registration
	// with one. The reason wraps ErrFenced. It is called on the goroutine that learned it
	// (the HA listener's or the registrar's), possibly more than once, and must return
	// promptly: it must not wait for the broker's Shutdown (signal the agent's own loop).
	OnFenced func(reason error)

	// MetricsEnable keeps the counters of /metrics that the send and pull paths and the
	// remoting server count into: messages and bytes in and out, message sizes, request
	// latencies and SYSTEM_BUSY answers, commit-log flush latencies, and the pull offsets
	// behind rocketmq_consumer_inflight_messages (see Metrics). Off, those are absent
	// and nothing is counted; what /metrics reads on a scrape (lag, backlogs, disk,
	// replication) is still served. Default true.
	MetricsEnable bool
	// MetricsMaxTopics and MetricsMaxGroups bound the topic and consumer_group label
	// values of /metrics: the first that many topics and groups the broker reports get
	// series of their own, the others share MetricsOtherLabel (default 1000 each).
	MetricsMaxTopics, MetricsMaxGroups int

	// ConfigProperties, when set, lists the settings GET_BROKER_CONFIG reports, under
	// RocketMQ's property names, from the options as New resolved them (the ACL file
	// loaded). The launcher sets it from the configuration's key table (package conf), so
	// the broker keeps no list of property names. nil: only what the broker learns as it
	// starts (haServerAddr, haListenPort).
	ConfigProperties func(*Options) map[string]string

	// Logger receives everything the broker logs.
	Logger zerolog.Logger
	// Clock is the broker's clock (time.Now by default).
	Clock func() time.Time
}

// DefaultOptions returns RocketMQ's defaults for a master broker "broker-a" of
// "DefaultCluster" advertised on 127.0.0.1:10911, storing under ./data.
func DefaultOptions() Options {
	so := store.DefaultOptions()
	so.Dir = "data"
	return Options{
		BrokerName:                    "broker-a",
		ClusterName:                   "DefaultCluster",
		AdvertisedAddr:                "127.0.0.1:10911",
		RegisterInterval:              30 * time.Second,
		HASlaveTimeout:                so.SyncFlushTimeout,
		HASlaveFallbehindMax:          256 << 20,
		SlaveSyncInterval:             10 * time.Second,
		MaxFrameSize:                  16 << 20,
		IdleTimeout:                   120 * time.Second,
		Workers:                       Workers{Send: 16, Pull: 16, Query: 8, Admin: 8, Transaction: 8},
		Store:                         so,
		DelayLevels:                   defaultDelayLevels(),
		AutoCreateTopic:               true,
		DefaultTopicQueueNums:         8,
		MaxReconsumeTimes:             16,
		LongPollingEnable:             true,
		DedupMaxKeys:                  dedup.DefaultMaxKeys,
		ShortPollingTimeout:           time.Second,
		AccessMessageInMemoryMaxRatio: 40,
		EnablePropertyFilter:          true,
		TraceTopicEnable:              true,
		MsgTraceTopicName:             protocol.TraceTopic,
		StoreReplyMessageEnable:       true,
		TransactionTimeout:            6 * time.Second,
		TransactionCheckMax:           15,
		MinInSyncReplicas:             1,
		HAMaxTimeSlaveNotCatchup:      15 * time.Second,
		MetricsEnable:                 true,
		MetricsMaxTopics:              1000,
		MetricsMaxGroups:              1000,
		Logger:                        zerolog.Nop(),
		Clock:                         time.Now,
	}
}

// Validate reports the first problem, wrapping ErrInvalidOptions.
func (o *Options) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidOptions, fmt.Sprintf(format, args...))
	}
	switch {
	case o.BrokerName == "":
		return bad("BrokerName is empty")
	case o.BrokerID < 0:
		return bad("BrokerID %d is negative", o.BrokerID)
	case o.Role > RoleSlave:
		return bad("Role %d is unknown", o.Role)
	case o.Role == RoleSlave && o.BrokerID == 0:
		return bad("a SLAVE needs a BrokerID ≥ 1")
	case o.Role != RoleSlave && o.BrokerID != 0:
		return bad("a %s needs BrokerID 0, got %d", o.Role, o.BrokerID)
	case o.Role == RoleSyncMaster && (o.HASlaveTimeout <= 0 || o.HASlaveFallbehindMax <= 0):
		return bad("a SYNC_MASTER needs a positive HASlaveTimeout (%v) and HASlaveFallbehindMax (%d)",
			o.HASlaveTimeout, o.HASlaveFallbehindMax)
	case o.Role == RoleSlave && o.SlaveSyncInterval <= 0:
		return bad("a SLAVE needs a positive SlaveSyncInterval (%v)", o.SlaveSyncInterval)
	case o.Clock == nil:
		return bad("Clock is nil")
	case o.RegisterInterval <= 0:
		return bad("RegisterInterval %v must be positive", o.RegisterInterval)
	case o.MaxFrameSize <= 0:
		return bad("MaxFrameSize %d must be positive", o.MaxFrameSize)
	case o.Workers.Send <= 0 || o.Workers.Pull <= 0 || o.Workers.Query <= 0 || o.Workers.Admin <= 0 || o.Workers.Transaction <= 0:
		return bad("every worker pool needs at least one worker: %+v", o.Workers)
	case o.DedupMaxKeys <= 0:
		return bad("DedupMaxKeys %d must be positive", o.DedupMaxKeys)
	case o.DefaultTopicQueueNums <= 0:
		return bad("DefaultTopicQueueNums %d must be positive", o.DefaultTopicQueueNums)
	case o.MaxReconsumeTimes < 0:
		return bad("MaxReconsumeTimes %d is negative", o.MaxReconsumeTimes)
	case len(o.DelayLevels) == 0:
		return bad("DelayLevels is empty")
	case o.TransactionCheckMax <= 0:
		return bad("TransactionCheckMax %d must be positive", o.TransactionCheckMax)
	case o.AccessMessageInMemoryMaxRatio < 0 || o.AccessMessageInMemoryMaxRatio > 100:
		return bad("AccessMessageInMemoryMaxRatio %d is not a percentage", o.AccessMessageInMemoryMaxRatio)
	case o.MinInSyncReplicas < 1:
		return bad("MinInSyncReplicas %d must be at least 1", o.MinInSyncReplicas)
	case o.MetricsMaxTopics < 1 || o.MetricsMaxGroups < 1:
		return bad("MetricsMaxTopics %d and MetricsMaxGroups %d must be at least 1", o.MetricsMaxTopics, o.MetricsMaxGroups)
	}
	if err := o.validateControllerMode(); err != nil {
		return bad("%v", err)
	}
	if _, err := netip.ParseAddrPort(o.AdvertisedAddr); err != nil {
		return bad("AdvertisedAddr %q must be ip:port: %v", o.AdvertisedAddr, err)
	}
	if err := o.Store.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	return nil
}

// defaultDelayLevels parses delaylevel.Default, which is known to parse.
func defaultDelayLevels() []time.Duration {
	levels, err := delaylevel.Parse(delaylevel.Default)
	if err != nil {
		panic("broker: the default delay levels do not parse: " + err.Error())
	}
	return levels
}

// validateControllerMode checks the controller-mode fields: set together in controller
// mode, absent otherwise.
func (o *Options) validateControllerMode() error {
	if !o.ControllerMode {
		switch {
		case o.AssignedID != 0 || o.MasterEpoch != 0 || o.SyncStateSet != nil:
			return errors.New("AssignedID, MasterEpoch and SyncStateSet are for controller mode (ControllerMode is off)")
		case o.AllAckInSyncStateSet:
			return errors.New("AllAckInSyncStateSet needs controller mode (ControllerMode is off)")
		case o.MinInSyncReplicas > 1:
			return fmt.Errorf("MinInSyncReplicas %d needs controller mode (ControllerMode is off)", o.MinInSyncReplicas)
		}
		return nil
	}
	switch {
	case o.MasterEpoch < 1:
		return fmt.Errorf("controller mode needs a MasterEpoch ≥ 1, got %d", o.MasterEpoch)
	case o.HAMaxTimeSlaveNotCatchup <= 0:
		return fmt.Errorf("HAMaxTimeSlaveNotCatchup %v must be positive", o.HAMaxTimeSlaveNotCatchup)
	case o.HASlaveTimeout <= 0:
		return fmt.Errorf("controller mode needs a positive HASlaveTimeout (%v)", o.HASlaveTimeout)
	case o.Role == RoleSlave:
		switch {
		case o.AssignedID != 0 && o.AssignedID != o.BrokerID:
			return fmt.Errorf("a SLAVE in controller mode registers under its AssignedID %d, but BrokerID is %d", o.AssignedID, o.BrokerID)
		case o.HAMasterAddr == "":
			return errors.New("a SLAVE in controller mode needs HAMasterAddr (its master's HA address, from the controller)")
		}
	case o.AssignedID < 1:
		return fmt.Errorf("a %s in controller mode needs its AssignedID (≥ 1), got %d", o.Role, o.AssignedID)
	case o.SyncStateSet == nil:
		return fmt.Errorf("a %s in controller mode needs a SyncStateSet keeper", o.Role)
	}
	return nil
}

// selfID is the broker's id in its group's SyncStateSet (controller mode): AssignedID,
// else BrokerID.
func (o *Options) selfID() int64 {
	if o.AssignedID != 0 {
		return o.AssignedID
	}
	return o.BrokerID
}
