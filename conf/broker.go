package conf

import (
	"net"
	"strconv"
	"time"
)

// BrokerRole is a broker's replication role (RocketMQ brokerRole).
type BrokerRole string

// Broker roles.
const (
	// AsyncMaster acknowledges a send once it is stored locally; slaves catch
	// up asynchronously.
	AsyncMaster BrokerRole = "ASYNC_MASTER"
	// SyncMaster acknowledges a send only after a slave has it as well
	// (or replies FLUSH_SLAVE_TIMEOUT / SLAVE_NOT_AVAILABLE).
	SyncMaster BrokerRole = "SYNC_MASTER"
	// Slave replicates a master's commit log and serves reads only.
	Slave BrokerRole = "SLAVE"
)

// IsMaster reports whether r is ASYNC_MASTER or SYNC_MASTER.
func (r BrokerRole) IsMaster() bool { return r == AsyncMaster || r == SyncMaster }

// FlushDiskType selects when the commit log is fsynced (RocketMQ
// flushDiskType).
type FlushDiskType string

// Flush disk types.
const (
	// AsyncFlush fsyncs in the background every FlushInterval; a send is
	// acknowledged once it is in the page cache.
	AsyncFlush FlushDiskType = "ASYNC_FLUSH"
	// SyncFlush acknowledges a send only after a group commit has fsynced it
	// (or replies FLUSH_DISK_TIMEOUT after SyncFlushTimeout).
	SyncFlush FlushDiskType = "SYNC_FLUSH"
)

// WorkerPools sizes the bounded worker pools, one per request class, so a
// held long poll or a slow fsync never blocks other kinds of request.
// Defaults suit a small (2-core) machine; workers are goroutines, so the
// numbers bound concurrency rather than threads.
type WorkerPools struct {
	// Send handles SEND_MESSAGE(_V2), batches and send-back. Sync-flush and
	// sync-master sends hold a worker while they wait, and more waiting
	// workers make bigger group commits. Default 16. Key
	// broker.workers.send, env FERRY_BROKER_WORKERS_SEND.
	Send int `mapstructure:"send" default:"16" check:"range=1..4096" option:"Workers.Send" property:"sendMessageThreadPoolNums" meaning:"workers for sends (a sync-flush or sync-master send holds one while it waits)"`
	// Pull handles PULL_MESSAGE. Parked long polls do not hold a worker.
	// Default 16. Key broker.workers.pull, env FERRY_BROKER_WORKERS_PULL.
	Pull int `mapstructure:"pull" default:"16" check:"range=1..4096" option:"Workers.Pull" property:"pullMessageThreadPoolNums" meaning:"workers for pulls (a parked long poll holds none)"`
	// Query handles QUERY_MESSAGE and VIEW_MESSAGE_BY_ID (index and random
	// reads). Default 8. Key broker.workers.query, env
	// FERRY_BROKER_WORKERS_QUERY.
	Query int `mapstructure:"query" default:"8" check:"range=1..4096" option:"Workers.Query" meaning:"workers for message queries by key and views by id"`
	// Admin handles heartbeats, offsets, topic/group management and the other
	// small requests. Default 8. Key broker.workers.admin, env
	// FERRY_BROKER_WORKERS_ADMIN.
	Admin int `mapstructure:"admin" default:"8" check:"range=1..4096" option:"Workers.Admin" meaning:"workers for heartbeats, offsets, topic and group admin, other small requests"`
	// Transaction handles END_TRANSACTION. Default 8. Key
	// broker.workers.transaction, env FERRY_BROKER_WORKERS_TRANSACTION.
	Transaction int `mapstructure:"transaction" default:"8" check:"range=1..4096" option:"Workers.Transaction" meaning:"workers for END_TRANSACTION"`
}

// BrokerConfig is the "broker" section: one broker of a broker group
// (a master and its slaves share BrokerName).
//
// Every field's comment gives its default, its key and its environment
// variable (see EnvVarName). Defaults follow RocketMQ 4.9.7 / 5.x unless the
// comment says otherwise.
type BrokerConfig struct {
	// BrokerName names the broker group. Default "broker-a". Key
	// broker.brokerName, env FERRY_BROKER_BROKER_NAME.
	BrokerName string `mapstructure:"brokerName" default:"broker-a" check:"name" option:"BrokerName" property:"brokerName" meaning:"broker group name; a master and its slaves share it"`
	// ClusterName is the cluster the group belongs to. Default
	// "DefaultCluster". Key broker.clusterName, env FERRY_BROKER_CLUSTER_NAME.
	ClusterName string `mapstructure:"clusterName" default:"DefaultCluster" check:"name" option:"ClusterName" property:"brokerClusterName" meaning:"cluster the broker group belongs to"`
	// BrokerID is 0 for a master and > 0 for a slave. Default 0. Key
	// broker.brokerId, env FERRY_BROKER_BROKER_ID.
	BrokerID int `mapstructure:"brokerId" default:"0" option:"BrokerID" property:"brokerId" meaning:"0 for a master, > 0 for a slave"`
	// Role is ASYNC_MASTER, SYNC_MASTER or SLAVE. Default ASYNC_MASTER. Key
	// broker.brokerRole, env FERRY_BROKER_BROKER_ROLE.
	Role BrokerRole `mapstructure:"brokerRole" default:"ASYNC_MASTER" check:"oneOf=ASYNC_MASTER|SYNC_MASTER|SLAVE" option:"Role" property:"brokerRole" meaning:"ASYNC_MASTER, SYNC_MASTER or SLAVE"`

	// Listen is the client-facing TCP address (an empty host listens on all
	// interfaces; port 0 picks a free port). Default "127.0.0.1:10911". Key
	// broker.listen, env FERRY_BROKER_LISTEN, flag --broker-listen.
	Listen string `mapstructure:"listen" default:"127.0.0.1:10911" check:"listen" process:"command" meaning:"client-facing address (empty host = every interface, port 0 = any)"`
	// HTTPListen is the address of the process's HTTP listener for operators
	// (/healthz, /readyz, /metrics; see docs/operations.md): HTTPS when broker.tlsMode is
	// enforcing, HTTPS and plain HTTP when permissive, plain when disabled.
	// Empty turns it off. Default "" (off; `ferry standalone`: 127.0.0.1:9880,
	// where it also covers the name server). Key broker.httpListen, env
	// FERRY_BROKER_HTTP_LISTEN, flag --http-listen.
	HTTPListen string `mapstructure:"httpListen" default:"" check:"listenOrOff" process:"command" meaning:"HTTP address of /healthz, /readyz and /metrics (TLS as broker.tlsMode); empty = off"`
	// MetricsEnable keeps the counters of /metrics the send and pull paths and the
	// remoting server count into (messages and bytes in and out, sizes, request and flush
	// latencies, SYSTEM_BUSY answers); off, they are absent and nothing is counted.
	// Default true. Key broker.metricsEnable, env FERRY_BROKER_METRICS_ENABLE.
	MetricsEnable bool `mapstructure:"metricsEnable" default:"true" option:"MetricsEnable" meaning:"count messages, bytes and latencies for /metrics on the send and pull paths"`
	// MetricsMaxTopics bounds the topic label values of /metrics: beyond this
	// many topics, series sum under topic="_other_". Default 1000. Key
	// broker.metricsMaxTopics, env FERRY_BROKER_METRICS_MAX_TOPICS.
	MetricsMaxTopics int `mapstructure:"metricsMaxTopics" default:"1000" check:"positive" option:"MetricsMaxTopics" meaning:"topic label values of /metrics; beyond them series sum under _other_"`
	// MetricsMaxGroups bounds the consumer_group label values of /metrics:
	// beyond this many groups, series sum under consumer_group="_other_".
	// Default 1000. Key broker.metricsMaxGroups, env
	// FERRY_BROKER_METRICS_MAX_GROUPS.
	MetricsMaxGroups int `mapstructure:"metricsMaxGroups" default:"1000" check:"positive" option:"MetricsMaxGroups" meaning:"consumer_group label values of /metrics; beyond them series sum under _other_"`
	// AdvertisedAddr is the host:port written into stored records (store
	// host, hence offset message ids) and registered in routes; clients
	// connect to it. Empty means Listen, which then needs a specific host.
	// Default "". Key broker.advertisedAddr, env FERRY_BROKER_ADVERTISED_ADDR.
	AdvertisedAddr string `mapstructure:"advertisedAddr" default:"" option:"AdvertisedAddr" property:"brokerAddr" meaning:"host:port put in message ids and routes; empty = broker.listen"`
	// NamesrvAddrs lists the name servers to register with. Default
	// ["127.0.0.1:9876"]. Key broker.namesrvAddrs, env
	// FERRY_BROKER_NAMESRV_ADDRS (separated by ';' or ','), flag
	// --namesrv-addr.
	NamesrvAddrs []string `mapstructure:"namesrvAddrs" default:"127.0.0.1:9876" check:"dialList" option:"NamesrvAddrs" property:"namesrvAddr" meaning:"name servers the broker registers with"`
	// RegisterInterval is the period of re-registration with the name
	// servers; it must be shorter than their broker expiry (120 s). A round a
	// name server did not accept is retried sooner (200 ms, doubling up to
	// this interval). Default 30s. Key broker.registerInterval, env FERRY_BROKER_REGISTER_INTERVAL.
	RegisterInterval time.Duration `mapstructure:"registerInterval" default:"30s" check:"positive" option:"RegisterInterval" property:"registerBrokerTimeoutMills" meaning:"re-registration period (failures retried sooner); below namesrv.brokerExpiry"`
	// MaxFrameSize is the largest remoting frame accepted, in bytes; it must
	// leave 64 KiB beyond MaxMessageSize for headers. Default 16MiB. Key
	// broker.maxFrameSize, env FERRY_BROKER_MAX_FRAME_SIZE.
	MaxFrameSize int64 `mapstructure:"maxFrameSize" default:"16MiB" check:"frameSize" option:"MaxFrameSize" meaning:"largest remoting frame accepted; at least maxMessageSize + 64KiB"`
	// MaxRequestBytes bounds the bytes of request frames the broker holds at
	// once on all connections (being received, queued or handled); a frame
	// over it is answered SYSTEM_BUSY and skipped unread. It must be at least
	// 2 × maxFrameSize (one connection's share). Default 256MiB. Key
	// broker.maxRequestBytes, env FERRY_BROKER_MAX_REQUEST_BYTES.
	MaxRequestBytes int64 `mapstructure:"maxRequestBytes" default:"256MiB" option:"MaxRequestBytes" meaning:"request bytes held at once on all connections; more is SYSTEM_BUSY"`
	// IdleTimeout closes a connection idle for this long. Default 120s. Key
	// broker.idleTimeout, env FERRY_BROKER_IDLE_TIMEOUT.
	IdleTimeout time.Duration `mapstructure:"idleTimeout" default:"2m" check:"positive" option:"IdleTimeout" meaning:"a connection silent for this long is closed"`
	// Workers sizes the request worker pools. Keys broker.workers.*.
	Workers WorkerPools `mapstructure:"workers"`

	// DataDir is the store root (commitlog/, consumequeue/, index/, config/,
	// checkpoint, abort). Default "./data". Key broker.dataDir, env
	// FERRY_BROKER_DATA_DIR, flag --data-dir.
	DataDir string `mapstructure:"dataDir" default:"./data" check:"notEmpty" option:"Store.Dir" property:"storePathRootDir" meaning:"store root: commitlog/, consumequeue/, index/, config/, checkpoint"`
	// FlushDiskType is ASYNC_FLUSH or SYNC_FLUSH. Default ASYNC_FLUSH. Key
	// broker.flushDiskType, env FERRY_BROKER_FLUSH_DISK_TYPE.
	FlushDiskType FlushDiskType `mapstructure:"flushDiskType" default:"ASYNC_FLUSH" check:"oneOf=ASYNC_FLUSH|SYNC_FLUSH" option:"Store.FlushMode" property:"flushDiskType" meaning:"ASYNC_FLUSH (fsync in the background) or SYNC_FLUSH (fsync before replying)"`
	// FlushInterval is the ASYNC_FLUSH flusher period
	// (flushIntervalCommitLog). Default 500ms. Key broker.flushInterval, env
	// FERRY_BROKER_FLUSH_INTERVAL.
	FlushInterval time.Duration `mapstructure:"flushInterval" default:"500ms" check:"positive" option:"Store.FlushInterval" property:"flushIntervalCommitLog" meaning:"ASYNC_FLUSH: period of the flusher"`
	// FlushLeastPages is the minimum number of dirty 4 KiB pages an
	// ASYNC_FLUSH round flushes (0 = any). Default 4. Key
	// broker.flushLeastPages, env FERRY_BROKER_FLUSH_LEAST_PAGES.
	FlushLeastPages int `mapstructure:"flushLeastPages" default:"4" check:"notNegative" option:"Store.FlushLeastPages" property:"flushCommitLogLeastPages" meaning:"ASYNC_FLUSH: fewest dirty 4 KiB pages a round flushes (0 = any)"`
	// FlushThoroughInterval forces an ASYNC_FLUSH round to flush everything
	// regardless of FlushLeastPages at least this often. Default 10s. Key
	// broker.flushThoroughInterval, env FERRY_BROKER_FLUSH_THOROUGH_INTERVAL.
	FlushThoroughInterval time.Duration `mapstructure:"flushThoroughInterval" default:"10s" check:"positive" option:"Store.FlushThoroughInterval" meaning:"ASYNC_FLUSH: flush everything at least this often"`
	// SyncFlushTimeout bounds a SYNC_FLUSH send's wait for its group commit
	// (then FLUSH_DISK_TIMEOUT). Default 5s. Key broker.syncFlushTimeout, env
	// FERRY_BROKER_SYNC_FLUSH_TIMEOUT.
	SyncFlushTimeout time.Duration `mapstructure:"syncFlushTimeout" default:"5s" check:"positive" option:"Store.SyncFlushTimeout" property:"syncFlushTimeout" meaning:"SYNC_FLUSH: a send's wait for its fsync (then FLUSH_DISK_TIMEOUT)"`
	// CommitLogSegmentSize is the size of each commit log file
	// (mappedFileSizeCommitLog); it must hold MaxMessageSize plus 64 KiB.
	// Changing it for an existing store is not supported. Default 1GiB. Key
	// broker.commitLogSegmentSize, env FERRY_BROKER_COMMIT_LOG_SEGMENT_SIZE.
	CommitLogSegmentSize int64 `mapstructure:"commitLogSegmentSize" default:"1GiB" option:"Store.SegmentSize" property:"mappedFileSizeCommitLog" meaning:"size of each commit log file; fixed once a store exists"`
	// ConsumeQueueUnitsPerFile is the number of 20-byte units per consume
	// queue file (300,000 = 6,000,000 bytes). Default 300000. Key
	// broker.consumeQueueUnitsPerFile, env
	// FERRY_BROKER_CONSUME_QUEUE_UNITS_PER_FILE.
	ConsumeQueueUnitsPerFile int `mapstructure:"consumeQueueUnitsPerFile" default:"300000" check:"positive" option:"Store.UnitsPerFile" property:"mappedFileSizeConsumeQueue,unitbytes" meaning:"20-byte units per consume queue file"`
	// MaxMessageSize is the largest stored message body in bytes. Default
	// 4MiB. Key broker.maxMessageSize, env FERRY_BROKER_MAX_MESSAGE_SIZE.
	MaxMessageSize int64 `mapstructure:"maxMessageSize" default:"4MiB" check:"positive" option:"Store.MaxMessageSize" property:"maxMessageSize" meaning:"largest message body stored"`

	// FileReservedTime is how long a commit log segment is kept after its
	// last write before cleanup may delete it (fileReservedTime, 72 h).
	// Default 72h. Key broker.fileReservedTime, env
	// FERRY_BROKER_FILE_RESERVED_TIME.
	FileReservedTime time.Duration `mapstructure:"fileReservedTime" default:"72h" check:"positive" option:"Store.FileReservedTime" property:"fileReservedTime,hours" meaning:"a commit log segment untouched this long may be deleted"`
	// DeleteWhen lists the local hours, ';'-separated, in which expired
	// segments are deleted (see ParseDeleteWhen). Default "04". Key
	// broker.deleteWhen, env FERRY_BROKER_DELETE_WHEN.
	DeleteWhen string `mapstructure:"deleteWhen" default:"04" check:"deleteWhen" option:"Store.DeleteWhen" meaning:"local hours (';'-separated, 00-23) when expired segments are deleted"`
	// DiskMaxUsedRatio is the disk usage percentage above which expired
	// segments are deleted at any hour (diskMaxUsedSpaceRatio). Default 75.
	// Key broker.diskMaxUsedRatio, env FERRY_BROKER_DISK_MAX_USED_RATIO.
	DiskMaxUsedRatio int `mapstructure:"diskMaxUsedRatio" default:"75" check:"percent" option:"Store.DiskMaxUsedRatio" property:"diskMaxUsedSpaceRatio" meaning:"disk usage % above which expired segments are deleted at any hour"`
	// DiskForceCleanRatio is the usage percentage above which the oldest
	// segments are deleted even if not expired (diskSpaceCleanForciblyRatio).
	// Must be >= DiskMaxUsedRatio; 100 disables forced cleaning. Default 85.
	// Key broker.diskForceCleanRatio, env FERRY_BROKER_DISK_FORCE_CLEAN_RATIO.
	DiskForceCleanRatio int `mapstructure:"diskForceCleanRatio" default:"85" check:"percent" option:"Store.DiskForceCleanRatio" property:"diskSpaceCleanForciblyRatio" meaning:"disk usage % above which the oldest segments go even if not expired"`
	// DiskFullRatio is the usage percentage above which the store counts as
	// full and rejects sends with SERVICE_NOT_AVAILABLE until usage drops
	// (diskSpaceWarningLevelRatio). Must be >= DiskMaxUsedRatio. Default 90.
	// Key broker.diskFullRatio, env FERRY_BROKER_DISK_FULL_RATIO.
	DiskFullRatio int `mapstructure:"diskFullRatio" default:"90" check:"percent" option:"Store.DiskFullRatio" property:"diskSpaceWarningLevelRatio" meaning:"disk usage % above which sends are refused (SERVICE_NOT_AVAILABLE)"`
	// CleanResourceInterval is how often the rules above are applied: segments
	// looked for that may or must be deleted (cleanResourceInterval). Default
	// 10s. Key broker.cleanResourceInterval, env
	// FERRY_BROKER_CLEAN_RESOURCE_INTERVAL.
	CleanResourceInterval time.Duration `mapstructure:"cleanResourceInterval" default:"10s" check:"positive" option:"Store.CleanInterval" property:"cleanResourceInterval" meaning:"how often segments are looked for that may or must be deleted"`
	// CompactionReadsPerRound bounds the commit-log records one compaction round
	// of the compacted topics (cleanupPolicy=compact) reads, and the live records
	// of theirs the cleanup copies forward, per round. Default 65536. Key
	// broker.compactionReadsPerRound, env FERRY_BROKER_COMPACTION_READS_PER_ROUND.
	CompactionReadsPerRound int `mapstructure:"compactionReadsPerRound" default:"65536" check:"positive" option:"Store.CompactionReadsPerRound" meaning:"records a compaction round reads, and live records the cleanup copies forward, per round"`
	// ScrubInterval runs a background scrub this often: every commit-log record
	// checked (body CRC included) and every consume-queue unit against its
	// record, the findings logged and counted; it only reports (ferry scrub
	// repairs). 0 disables it. Default 0. Key broker.scrubInterval, env
	// FERRY_BROKER_SCRUB_INTERVAL.
	ScrubInterval time.Duration `mapstructure:"scrubInterval" default:"0s" option:"Store.ScrubInterval" meaning:"background scrub of every record and unit, this often (0 = never); reports only"`
	// ScrubBytesPerSec paces the background scrub's reading. Default 64MiB. Key
	// broker.scrubBytesPerSec, env FERRY_BROKER_SCRUB_BYTES_PER_SEC.
	ScrubBytesPerSec int64 `mapstructure:"scrubBytesPerSec" default:"64MiB" check:"positive" option:"Store.ScrubBytesPerSec" meaning:"read rate of the background scrub"`

	// AutoCreateTopic creates a topic on its first send using the TBW102
	// template (autoCreateTopicEnable). Default true. Key
	// broker.autoCreateTopic, env FERRY_BROKER_AUTO_CREATE_TOPIC.
	AutoCreateTopic bool `mapstructure:"autoCreateTopic" default:"true" option:"AutoCreateTopic" property:"autoCreateTopicEnable" meaning:"a send to an unknown topic creates it from the TBW102 template"`
	// DefaultTopicQueueNums is the queue count of the TBW102 template, which
	// caps auto-created topics: a topic gets min(the producer's request,
	// this). RocketMQ's broker default is 8; the Go client always requests 4.
	// Default 8. Key broker.defaultTopicQueueNums, env
	// FERRY_BROKER_DEFAULT_TOPIC_QUEUE_NUMS.
	DefaultTopicQueueNums int `mapstructure:"defaultTopicQueueNums" default:"8" check:"range=1..1024" option:"DefaultTopicQueueNums" property:"defaultTopicQueueNums" meaning:"queues of the TBW102 template; caps auto-created topics"`

	// DedupMaxKeys bounds the message keys a broker remembers for topics with a
	// dedupWindow attribute, across all of them (oldest dropped first; about
	// 170 bytes each). Default 1048576. Key broker.dedupMaxKeys, env
	// FERRY_BROKER_DEDUP_MAX_KEYS.
	DedupMaxKeys int `mapstructure:"dedupMaxKeys" default:"1048576" check:"positive" option:"DedupMaxKeys" meaning:"message keys remembered for topics with a dedupWindow (oldest dropped first)"`

	// LongPollingEnable parks a pull that finds nothing until a message
	// arrives or the client's suspend timeout passes. Default true. Key
	// broker.longPollingEnable, env FERRY_BROKER_LONG_POLLING_ENABLE.
	LongPollingEnable bool `mapstructure:"longPollingEnable" default:"true" option:"LongPollingEnable" property:"longPollingEnable" meaning:"park a pull that finds nothing until a message arrives"`
	// ShortPollingTimeout is how long an empty pull is parked when long
	// polling is disabled (shortPollingTimeMills). Default 1s. Key
	// broker.shortPollingTimeout, env FERRY_BROKER_SHORT_POLLING_TIMEOUT.
	ShortPollingTimeout time.Duration `mapstructure:"shortPollingTimeout" default:"1s" check:"positive" option:"ShortPollingTimeout" property:"shortPollingTimeMills" meaning:"how long an empty pull is parked when long polling is off"`
	// SlaveReadEnable lets pull answers suggest reading from a slave
	// (suggestWhichBrokerId): a consumer that lags by more than
	// AccessMessageInMemoryMaxRatio of physical memory is sent to its group's
	// whichBrokerWhenConsumeSlowly (default 1), one that caught up back to its
	// group's brokerId (default 0). Off, every answer suggests the master. A
	// SLAVE serves pulls either way (RocketMQ's refuses them when this is off).
	// Default false. Key broker.slaveReadEnable, env
	// FERRY_BROKER_SLAVE_READ_ENABLE.
	SlaveReadEnable bool `mapstructure:"slaveReadEnable" default:"false" option:"SlaveReadEnable" property:"slaveReadEnable" meaning:"pulls may suggest a slave to lagging consumers (suggestWhichBrokerId); off = the master"`
	// AccessMessageInMemoryMaxRatio is the percentage of physical memory a
	// pulled message may lie behind the commit log's end and still count as
	// in memory (page cache); further behind it counts as on disk, which is
	// what makes a pull suggest a slave with SlaveReadEnable. Computed once at
	// start from the machine's memory. Default 40. Key
	// broker.accessMessageInMemoryMaxRatio, env
	// FERRY_BROKER_ACCESS_MESSAGE_IN_MEMORY_MAX_RATIO.
	AccessMessageInMemoryMaxRatio int `mapstructure:"accessMessageInMemoryMaxRatio" default:"40" check:"percent" option:"AccessMessageInMemoryMaxRatio" property:"accessMessageInMemoryMaxRatio" meaning:"% of physical memory a pulled message may lag the log's end and count as in memory"`
	// EnablePropertyFilter serves SQL92 subscriptions (filters over message
	// properties); off, they are refused with SYSTEM_ERROR. Default true
	// (RocketMQ: false). Key broker.enablePropertyFilter, env
	// FERRY_BROKER_ENABLE_PROPERTY_FILTER.
	EnablePropertyFilter bool `mapstructure:"enablePropertyFilter" default:"true" option:"EnablePropertyFilter" property:"enablePropertyFilter" meaning:"serve SQL92 subscriptions (filters over message properties); off = refuse them"`
	// TraceTopicEnable creates the message-trace topic MsgTraceTopicName at
	// start, so clients' trace records (the official client's WithTrace) are
	// stored. Default true (RocketMQ: false). Key broker.traceTopicEnable, env
	// FERRY_BROKER_TRACE_TOPIC_ENABLE.
	TraceTopicEnable bool `mapstructure:"traceTopicEnable" default:"true" option:"TraceTopicEnable" property:"traceTopicEnable" meaning:"create the message-trace topic at start, so clients' trace records are stored"`
	// MsgTraceTopicName is the message-trace topic. Default
	// "RMQ_SYS_TRACE_TOPIC". Key broker.msgTraceTopicName, env
	// FERRY_BROKER_MSG_TRACE_TOPIC_NAME.
	MsgTraceTopicName string `mapstructure:"msgTraceTopicName" default:"RMQ_SYS_TRACE_TOPIC" option:"MsgTraceTopicName" property:"msgTraceTopicName" meaning:"the message-trace topic"`
	// StoreReplyMessageEnable stores request-reply answers in the reply topic
	// as well as pushing them to the requester. Default true. Key
	// broker.storeReplyMessageEnable, env FERRY_BROKER_STORE_REPLY_MESSAGE_ENABLE.
	StoreReplyMessageEnable bool `mapstructure:"storeReplyMessageEnable" default:"true" option:"StoreReplyMessageEnable" property:"storeReplyMessageEnable" meaning:"store request-reply answers in the reply topic as well as pushing them"`

	// ACLEnable checks every request against the accounts in ACLFile
	// (RocketMQ ACL 1.0, plain_acl.yml; see docs/security.md): unsigned or
	// unpermitted requests are refused with NO_PERMISSION. Default false. Key
	// broker.aclEnable, env FERRY_BROKER_ACL_ENABLE.
	ACLEnable bool `mapstructure:"aclEnable" default:"false" option:"ACL" property:"aclEnable" meaning:"check every request against the ACL accounts file (NO_PERMISSION if refused)"`
	// ACLFile is the accounts file, re-read when it changes. Required with
	// ACLEnable. Default "". Key broker.aclFile, env FERRY_BROKER_ACL_FILE.
	ACLFile string `mapstructure:"aclFile" default:"" option:"ACLFile" meaning:"ACL accounts file (plain_acl.yml shape), re-read when it changes"`
	// AccessKey signs, with SecretKey, what this broker sends to name servers
	// and, on a SLAVE, to its master (metadata sync, and the replication
	// hello a master with ACL on requires), for peers with ACL on (an admin
	// account of theirs). Empty: unsigned. Default "". Key broker.accessKey,
	// env FERRY_BROKER_ACCESS_KEY.
	AccessKey string `mapstructure:"accessKey" default:"" option:"Credentials.AccessKey" meaning:"access key this broker signs its requests to name servers / its master with"`
	// SecretKey is AccessKey's secret. Default "". Key broker.secretKey, env
	// FERRY_BROKER_SECRET_KEY.
	SecretKey string `mapstructure:"secretKey" default:"" option:"Credentials.SecretKey" meaning:"secret key of broker.accessKey"`

	// TLSMode is what the broker's port accepts, as RocketMQ's tls.server.mode:
	// "disabled" (plain only), "permissive" (TLS and plain on one port) or
	// "enforcing" (TLS only); a master's HA port follows it. Default
	// "disabled". Key broker.tlsMode, env FERRY_BROKER_TLS_MODE.
	TLSMode string `mapstructure:"tlsMode" default:"disabled" option:"TLS.Mode" property:"tls.server.mode" meaning:"TLS on the broker port: disabled, permissive (TLS and plain) or enforcing (TLS only)"`
	// TLSCertFile is the PEM certificate chain the broker presents. Required
	// unless tlsMode is disabled. Default "". Key broker.tlsCertFile, env
	// FERRY_BROKER_TLS_CERT_FILE.
	TLSCertFile string `mapstructure:"tlsCertFile" default:"" option:"TLS.Config" meaning:"PEM certificate chain the broker presents"`
	// TLSKeyFile is the PEM private key of TLSCertFile. Default "". Key
	// broker.tlsKeyFile, env FERRY_BROKER_TLS_KEY_FILE.
	TLSKeyFile string `mapstructure:"tlsKeyFile" default:"" option:"TLS.Config" meaning:"PEM private key of broker.tlsCertFile"`
	// TLSClientCAFile lists the PEM certificate authorities client
	// certificates are verified against; empty: client certificates are not
	// checked. Default "". Key broker.tlsClientCaFile, env
	// FERRY_BROKER_TLS_CLIENT_CA_FILE.
	TLSClientCAFile string `mapstructure:"tlsClientCaFile" default:"" option:"TLS.Config" meaning:"PEM CAs client certificates are verified against (empty: not checked)"`
	// TLSRequireClientCert refuses TLS clients without a certificate signed by
	// TLSClientCAFile (RocketMQ tls.server.need.client.auth=require). Default
	// false. Key broker.tlsRequireClientCert, env
	// FERRY_BROKER_TLS_REQUIRE_CLIENT_CERT.
	TLSRequireClientCert bool `mapstructure:"tlsRequireClientCert" default:"false" option:"TLS.Config" meaning:"refuse TLS clients without a certificate from broker.tlsClientCaFile"`
	// TLSToNamesrv registers with the name servers over TLS (for name
	// servers with tlsMode enforcing); a SLAVE also dials its master's broker
	// and HA ports with TLS. Default false. Key broker.tlsToNamesrv, env
	// FERRY_BROKER_TLS_TO_NAMESRV.
	TLSToNamesrv bool `mapstructure:"tlsToNamesrv" default:"false" option:"NamesrvTLS" meaning:"register with the name servers (a SLAVE: also reach its master, HA port included) over TLS"`
	// DelayLevels is the delay of each message delay level (level n = n-th
	// entry; syntax in ParseDelayLevels). Default DefaultDelayLevels. Key
	// broker.delayLevels, env FERRY_BROKER_DELAY_LEVELS.
	DelayLevels string `mapstructure:"delayLevels" default:"1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h" check:"delayLevels" option:"DelayLevels" property:"messageDelayLevel" meaning:"delay of each delay level, level 1 first (units ms, s, m, h, d)"`
	// MaxReconsumeTimes is how many redeliveries a consumer group gets before
	// a message goes to %DLQ% when the client does not say (retryMaxTimes).
	// Default 16. Key broker.maxReconsumeTimes, env
	// FERRY_BROKER_MAX_RECONSUME_TIMES.
	MaxReconsumeTimes int `mapstructure:"maxReconsumeTimes" default:"16" check:"notNegative" option:"MaxReconsumeTimes" property:"maxReconsumeTimes" meaning:"redeliveries before a message goes to %DLQ% (when the client does not say)"`

	// TransactionTimeout is the age a half message must reach before the
	// broker asks its producer for the outcome (transactionTimeOut). Default
	// 6s. Key broker.transactionTimeout, env FERRY_BROKER_TRANSACTION_TIMEOUT.
	TransactionTimeout time.Duration `mapstructure:"transactionTimeout" default:"6s" check:"positive" option:"TransactionTimeout" property:"transactionTimeOut" meaning:"age of a half message before its producer is asked for the outcome"`
	// TransactionCheckInterval is the period of the check-back scan. Default
	// 30s, as RocketMQ 5.x (4.x used 60 s). A shorter period resolves
	// orphaned transactions sooner, but every round re-puts each unresolved
	// half message into the commit log and counts one check against
	// TransactionCheckMax, so the time a producer group may be down before its
	// half messages are discarded is about TransactionCheckMax x this period
	// (7.5 min with the defaults); we keep 30s for that margin. Tests should
	// set a short period explicitly. Key broker.transactionCheckInterval, env
	// FERRY_BROKER_TRANSACTION_CHECK_INTERVAL.
	TransactionCheckInterval time.Duration `mapstructure:"transactionCheckInterval" default:"30s" check:"positive" option:"TransactionCheckInterval" property:"transactionCheckInterval" meaning:"period of the transaction check-back scan"`
	// TransactionCheckMax is the number of checks after which a half message
	// is discarded to TRANS_CHECK_MAX_TIME_TOPIC. Default 15. Key
	// broker.transactionCheckMax, env FERRY_BROKER_TRANSACTION_CHECK_MAX.
	TransactionCheckMax int `mapstructure:"transactionCheckMax" default:"15" check:"positive" option:"TransactionCheckMax" property:"transactionCheckMax" meaning:"checks before a half message is discarded"`

	// HAListen is the address masters accept slave replication connections
	// on. Empty means Listen's host with Listen's port + 1 (10912), see
	// EffectiveHAListen. Default "". Key broker.haListen, env
	// FERRY_BROKER_HA_LISTEN.
	HAListen string `mapstructure:"haListen" default:"" option:"HAListen" meaning:"address a master accepts slaves on; empty = listen host, listen port + 1"`
	// HAMasterAddr is the master's HA address a SLAVE connects to; only
	// allowed on a SLAVE. Empty: the slave learns it from the name servers'
	// answer to its registration (RocketMQ's haServerAddr), and follows it
	// when the master moves. Default "". Key broker.haMasterAddr, env
	// FERRY_BROKER_HA_MASTER_ADDR.
	HAMasterAddr string `mapstructure:"haMasterAddr" default:"" option:"HAMasterAddr" property:"haMasterAddress" meaning:"a SLAVE's master HA address (SLAVE only); empty = learned from the name server"`
	// HASlaveTimeout bounds a SYNC_MASTER send's wait for a slave
	// acknowledgement (slaveTimeout; then FLUSH_SLAVE_TIMEOUT). 0 means
	// SyncFlushTimeout, so a send waits for its slave as long as for its
	// fsync (see EffectiveHASlaveTimeout; RocketMQ's own default is 3 s).
	// Default 0. Key broker.haSlaveTimeout, env FERRY_BROKER_HA_SLAVE_TIMEOUT.
	HASlaveTimeout time.Duration `mapstructure:"haSlaveTimeout" default:"0s" option:"HASlaveTimeout" property:"slaveTimeout" meaning:"SYNC_MASTER: a send's wait for a slave ack (FLUSH_SLAVE_TIMEOUT); 0 = syncFlushTimeout"`
	// SlaveSyncInterval is how often a SLAVE copies its master's topics,
	// subscription groups, consumer offsets and delay progress. Default 10s. Key
	// broker.slaveSyncInterval, env FERRY_BROKER_SLAVE_SYNC_INTERVAL.
	SlaveSyncInterval time.Duration `mapstructure:"slaveSyncInterval" default:"10s" check:"positive" option:"SlaveSyncInterval" meaning:"SLAVE: how often topics, groups, offsets and delay progress are copied from the master"`
	// HASlaveFallbehindMax is how far, in bytes, the best slave may lag
	// before a SYNC_MASTER send replies SLAVE_NOT_AVAILABLE without waiting
	// (haSlaveFallbehindMax). Default 256MiB. Key broker.haSlaveFallbehindMax,
	// env FERRY_BROKER_HA_SLAVE_FALLBEHIND_MAX.
	HASlaveFallbehindMax int64 `mapstructure:"haSlaveFallbehindMax" default:"256MiB" check:"positive" option:"HASlaveFallbehindMax" property:"haSlaveFallbehindMax" meaning:"SYNC_MASTER: slave lag beyond which a send replies SLAVE_NOT_AVAILABLE"`

	// ControllerMode takes the broker's role, id and master epoch from the
	// controllers (automatic failover, RocketMQ 5's enableControllerMode; see
	// docs/operations.md): brokerId and brokerRole must then be left unset.
	// Default false. Key broker.controllerMode, env FERRY_BROKER_CONTROLLER_MODE.
	ControllerMode bool `mapstructure:"controllerMode" default:"false" option:"ControllerMode" property:"enableControllerMode" meaning:"take role, id and master epoch from the controllers (automatic failover)"`
	// ControllerAddrs lists the controllers' addresses (their controller.listen),
	// required in controller mode. Default []. Key broker.controllerAddrs, env
	// FERRY_BROKER_CONTROLLER_ADDRS (separated by ';' or ',').
	ControllerAddrs []string `mapstructure:"controllerAddrs" default:"" process:"failover" meaning:"controller addresses (controller.listen of each); required in controller mode"`
	// ControllerHeartbeatInterval is how often a broker in controller mode
	// reports to the controller, and so how soon it learns of an election.
	// Default 1s. Key broker.controllerHeartbeatInterval, env
	// FERRY_BROKER_CONTROLLER_HEARTBEAT_INTERVAL.
	ControllerHeartbeatInterval time.Duration `mapstructure:"controllerHeartbeatInterval" default:"1s" check:"positive" process:"failover" meaning:"controller mode: heartbeat period to the controller (how soon an election is learned)"`
	// ControllerHandoverTimeout bounds a controller-mode master's handover when it
	// is stopped (SIGTERM): it stops serving, has its most caught-up in-sync slave
	// elected and waits for it to serve; 0 stops without handing over. Default 5s.
	// Key broker.controllerHandoverTimeout, env
	// FERRY_BROKER_CONTROLLER_HANDOVER_TIMEOUT.
	ControllerHandoverTimeout time.Duration `mapstructure:"controllerHandoverTimeout" default:"5s" check:"notNegative" process:"failover" meaning:"controller mode: bound on a stopping master's handover to a slave (0: none)"`
	// AllAckInSyncStateSet acknowledges a send (that waits for storage) once every
	// member of the SyncStateSet has it, else FLUSH_SLAVE_TIMEOUT after
	// haSlaveTimeout; controller mode only. Default false. Key
	// broker.allAckInSyncStateSet, env FERRY_BROKER_ALL_ACK_IN_SYNC_STATE_SET.
	AllAckInSyncStateSet bool `mapstructure:"allAckInSyncStateSet" default:"false" option:"AllAckInSyncStateSet" property:"allAckInSyncStateSet" meaning:"controller mode: SEND_OK only once every SyncStateSet member has the message"`
	// MinInSyncReplicas refuses SEND_OK (SLAVE_NOT_AVAILABLE, message kept) while
	// the SyncStateSet, the master included, has fewer members; above 1 only in
	// controller mode. Default 1. Key broker.minInSyncReplicas, env
	// FERRY_BROKER_MIN_IN_SYNC_REPLICAS.
	MinInSyncReplicas int `mapstructure:"minInSyncReplicas" default:"1" check:"range=1..64" option:"MinInSyncReplicas" property:"minInSyncReplicas" meaning:"controller mode: fewer SyncStateSet members (master included) refuse SEND_OK"`
	// HAMaxTimeSlaveNotCatchup drops a member from the SyncStateSet (through the
	// controller) once it has not caught up with the master for this long;
	// controller mode only. Default 15s. Key broker.haMaxTimeSlaveNotCatchup, env
	// FERRY_BROKER_HA_MAX_TIME_SLAVE_NOT_CATCHUP.
	HAMaxTimeSlaveNotCatchup time.Duration `mapstructure:"haMaxTimeSlaveNotCatchup" default:"15s" check:"positive" option:"HAMaxTimeSlaveNotCatchup" property:"haMaxTimeSlaveNotCatchup" meaning:"controller mode: a SyncStateSet member behind this long is dropped"`

	// LogLevel overrides log.level for the broker; empty inherits it. Default
	// "". Key broker.logLevel, env FERRY_BROKER_LOG_LEVEL.
	LogLevel string `mapstructure:"logLevel" default:"" check:"logLevel=inherit" process:"command" meaning:"log level of the broker; empty inherits log.level"`
}

// DefaultBrokerConfig returns the defaults of the broker (the default tags of
// BrokerConfig, see KeyTable): an ASYNC_MASTER with ASYNC_FLUSH on 127.0.0.1:10911 registering with a name
// server on 127.0.0.1:9876.
func DefaultBrokerConfig() BrokerConfig {
	return defaultsOf[BrokerConfig]()
}

// recordOverhead is the room a frame or a segment needs beyond the largest
// body: the broker's encode buffer is maxMessageSize + 64 KiB.
const recordOverhead = 64 * KiB

// Validate checks every field (the check tags of the key table) and the combinations
// between them. The returned error names the offending key ("broker.<field>") and wraps
// ErrInvalidConfig.
func (c BrokerConfig) Validate() error {
	if err := checkKeys(c, "broker."); err != nil {
		return err
	}
	for _, check := range []func() error{
		c.validateController, c.validateIdentity, c.validateNetwork, c.validateStore,
		c.validateMessaging, c.validateHA,
	} {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

func (c BrokerConfig) validateIdentity() error {
	switch {
	case c.Role.IsMaster() && c.BrokerID != 0:
		return invalid("broker.brokerId", "must be 0 for a %s, got %d", c.Role, c.BrokerID)
	case c.Role == Slave && c.BrokerID <= 0:
		return invalid("broker.brokerId", "must be greater than 0 for a SLAVE, got %d", c.BrokerID)
	}
	return nil
}

// validateController checks controller mode: the controllers are listed, the role and
// id are left to them (the defaults: SetRoleKeys refuses them set explicitly), and the
// keys that only controller mode uses are not set without it.
func (c BrokerConfig) validateController() error {
	if !c.ControllerMode {
		switch {
		case c.AllAckInSyncStateSet:
			return invalid("broker.allAckInSyncStateSet", "needs broker.controllerMode (there is no SyncStateSet without it)")
		case c.MinInSyncReplicas > 1:
			return invalid("broker.minInSyncReplicas", "above 1 needs broker.controllerMode (there is no SyncStateSet without it), got %d",
				c.MinInSyncReplicas)
		}
		return nil
	}
	switch {
	case c.BrokerID != 0:
		return invalid("broker.brokerId", "must not be set with broker.controllerMode (the controller assigns it), got %d", c.BrokerID)
	case c.Role != AsyncMaster:
		return invalid("broker.brokerRole", "must not be set with broker.controllerMode (the controller assigns it), got %s", c.Role)
	case c.HAMasterAddr != "":
		return invalid("broker.haMasterAddr", "must not be set with broker.controllerMode (the controller names the master)")
	case len(c.ControllerAddrs) == 0:
		return invalid("broker.controllerAddrs", "must list the controllers when broker.controllerMode is true")
	}
	for _, a := range c.ControllerAddrs {
		if err := checkDialAddr("broker.controllerAddrs", a); err != nil {
			return err
		}
	}
	return nil
}

func (c BrokerConfig) validateNetwork() error {
	if c.AdvertisedAddr != "" {
		return checkDialAddr("broker.advertisedAddr", c.AdvertisedAddr)
	}
	if host, _, _ := splitHostPort(c.Listen); host == "" || net.ParseIP(host).IsUnspecified() {
		return invalid("broker.advertisedAddr", "must be set when broker.listen (%q) has no specific host", c.Listen)
	}
	return nil
}

func (c BrokerConfig) validateStore() error {
	if c.CommitLogSegmentSize < c.MaxMessageSize+recordOverhead {
		return invalid("broker.commitLogSegmentSize", "must be at least broker.maxMessageSize + 64KiB (%d), got %d",
			c.MaxMessageSize+recordOverhead, c.CommitLogSegmentSize)
	}
	if c.MaxRequestBytes < 2*c.MaxFrameSize {
		return invalid("broker.maxRequestBytes", "must be at least 2 × broker.maxFrameSize (%d), got %d",
			2*c.MaxFrameSize, c.MaxRequestBytes)
	}
	if c.MaxFrameSize < c.MaxMessageSize+recordOverhead {
		return invalid("broker.maxFrameSize", "must be at least broker.maxMessageSize + 64KiB (%d), got %d",
			c.MaxMessageSize+recordOverhead, c.MaxFrameSize)
	}
	if c.ScrubInterval < 0 {
		return invalid("broker.scrubInterval", "must not be negative (0 disables the scrub), got %v", c.ScrubInterval)
	}
	if c.DiskForceCleanRatio < c.DiskMaxUsedRatio {
		return invalid("broker.diskForceCleanRatio", "must be at least broker.diskMaxUsedRatio (%d), got %d",
			c.DiskMaxUsedRatio, c.DiskForceCleanRatio)
	}
	if c.DiskFullRatio < c.DiskMaxUsedRatio {
		return invalid("broker.diskFullRatio", "must be at least broker.diskMaxUsedRatio (%d), got %d",
			c.DiskMaxUsedRatio, c.DiskFullRatio)
	}
	return nil
}

func (c BrokerConfig) validateMessaging() error {
	if c.TraceTopicEnable && !validTopicName(c.MsgTraceTopicName) {
		return invalid("broker.msgTraceTopicName", "must be 1 to 127 letters, digits, '-', '_', '%%' or '|', got %q", c.MsgTraceTopicName)
	}
	if c.ACLEnable && c.ACLFile == "" {
		return invalid("broker.aclFile", "must name the accounts file when broker.aclEnable is true")
	}
	if err := checkTLS("broker", c.TLSMode, c.TLSCertFile, c.TLSKeyFile, c.TLSClientCAFile, c.TLSRequireClientCert); err != nil {
		return err
	}
	if (c.AccessKey == "") != (c.SecretKey == "") {
		return invalid("broker.secretKey", "broker.accessKey and broker.secretKey go together (one is empty)")
	}
	return nil
}

// checkTLS validates one server's TLS settings (section is "broker" or "namesrv").
func checkTLS(section, mode, cert, key, clientCA string, requireClientCert bool) error {
	switch mode {
	case "disabled":
		return nil
	case "permissive", "enforcing":
	default:
		return invalid(section+".tlsMode", "must be disabled, permissive or enforcing, got %q", mode)
	}
	if cert == "" || key == "" {
		return invalid(section+".tlsCertFile", "%s.tlsCertFile and %s.tlsKeyFile are required when %s.tlsMode is %s", section, section, section, mode)
	}
	if requireClientCert && clientCA == "" {
		return invalid(section+".tlsClientCaFile", "is required when %s.tlsRequireClientCert is true", section)
	}
	return nil
}

// validTopicName is RocketMQ's topic name rule: 1 to 127 characters of
// [A-Za-z0-9_|%-].
func validTopicName(s string) bool {
	if s == "" || len(s) > 127 {
		return false
	}
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '%', r == '|':
		default:
			return false
		}
	}
	return true
}

func (c BrokerConfig) validateHA() error {
	if c.HAListen != "" {
		if err := checkListenAddr("broker.haListen", c.HAListen); err != nil {
			return err
		}
	} else if _, port, _ := splitHostPort(c.Listen); port == 65535 {
		return invalid("broker.haListen", "must be set when broker.listen uses port 65535 (the default is the listen port + 1)")
	}
	if c.HAListen != "" && c.HAListen == c.Listen {
		if _, port, _ := splitHostPort(c.Listen); port != 0 {
			return invalid("broker.haListen", "must differ from broker.listen (%q)", c.Listen)
		}
	}
	if c.Role == Slave {
		// Empty: learned from the name servers.
		if c.HAMasterAddr != "" {
			if err := checkDialAddr("broker.haMasterAddr", c.HAMasterAddr); err != nil {
				return err
			}
		}
	} else if c.HAMasterAddr != "" {
		return invalid("broker.haMasterAddr", "is only valid for a SLAVE, but broker.brokerRole is %s", c.Role)
	}
	if c.HASlaveTimeout < 0 {
		return invalid("broker.haSlaveTimeout", "must not be negative (0 means broker.syncFlushTimeout), got %s", c.HASlaveTimeout)
	}
	return nil
}

// EffectiveAdvertisedAddr is the address clients and records use:
// AdvertisedAddr, or Listen when that is empty. With port 0 in Listen the
// broker must substitute the port it actually bound.
func (c BrokerConfig) EffectiveAdvertisedAddr() string {
	if c.AdvertisedAddr != "" {
		return c.AdvertisedAddr
	}
	return c.Listen
}

// EffectiveHAListen is the HA listen address: HAListen, or Listen's host
// with Listen's port + 1 (RocketMQ's haListenPort). A Listen port of 0 gives
// port 0 (any free port). It returns "" only if Listen does not parse, which
// Validate rejects.
func (c BrokerConfig) EffectiveHAListen() string {
	if c.HAListen != "" {
		return c.HAListen
	}
	host, port, err := splitHostPort(c.Listen)
	if err != nil {
		return ""
	}
	if port != 0 {
		port++
	}
	return net.JoinHostPort(host, strconv.Itoa(port))
}

// EffectiveHASlaveTimeout is how long a SYNC_MASTER send waits for a slave:
// HASlaveTimeout, or SyncFlushTimeout when that is 0.
func (c BrokerConfig) EffectiveHASlaveTimeout() time.Duration {
	if c.HASlaveTimeout > 0 {
		return c.HASlaveTimeout
	}
	return c.SyncFlushTimeout
}

// DelayLevelDurations parses DelayLevels (see ParseDelayLevels).
func (c BrokerConfig) DelayLevelDurations() ([]time.Duration, error) {
	return ParseDelayLevels(c.DelayLevels)
}
