package protocol

// The String methods of RequestCode and ResponseCode are generated from the
// line comments below (the RocketMQ names); run `go generate ./protocol` after
// adding a code. `make lint` fails when codes_string.go is out of date.
//go:generate go run golang.org/x/tools/cmd/stringer@v0.42.0 -type=RequestCode,ResponseCode -linecomment -output=codes_string.go

import "strings"

// RequestCode is the code of a remoting request (RocketMQ RequestCode).
type RequestCode int16

// Request codes (spec §2.2, §3.7, §10). Each comment says what the request
// does; the handlers and the spec describe the details.
const (
	// SendMessage (SEND_MESSAGE) sends one message (V1 long-name header).
	SendMessage RequestCode = 10 // SEND_MESSAGE
	// PullMessage (PULL_MESSAGE) pulls messages from one queue, optionally long-polling.
	PullMessage RequestCode = 11 // PULL_MESSAGE
	// QueryMessage (QUERY_MESSAGE) looks messages up by key or UNIQ_KEY in the index.
	QueryMessage RequestCode = 12 // QUERY_MESSAGE
	// QueryBrokerOffset (QUERY_BROKER_OFFSET) is a legacy broker-offset query (unused).
	QueryBrokerOffset RequestCode = 13 // QUERY_BROKER_OFFSET
	// QueryConsumerOffset (QUERY_CONSUMER_OFFSET) reads a group's committed offset for a queue.
	QueryConsumerOffset RequestCode = 14 // QUERY_CONSUMER_OFFSET
	// UpdateConsumerOffset (UPDATE_CONSUMER_OFFSET) commits a group's offset for a queue.
	UpdateConsumerOffset RequestCode = 15 // UPDATE_CONSUMER_OFFSET
	// UpdateAndCreateTopic (UPDATE_AND_CREATE_TOPIC) creates or replaces a topic config on a broker.
	UpdateAndCreateTopic RequestCode = 17 // UPDATE_AND_CREATE_TOPIC
	// UpdateAndCreateTopicList (UPDATE_AND_CREATE_TOPIC_LIST) is the 5.x batch variant of UpdateAndCreateTopic.
	UpdateAndCreateTopicList RequestCode = 18 // UPDATE_AND_CREATE_TOPIC_LIST
	// GetAllTopicConfig (GET_ALL_TOPIC_CONFIG) returns a broker's whole topic config table (tools).
	GetAllTopicConfig RequestCode = 21 // GET_ALL_TOPIC_CONFIG
	// UpdateBrokerConfig (UPDATE_BROKER_CONFIG) updates broker properties at run time (tools).
	UpdateBrokerConfig RequestCode = 25 // UPDATE_BROKER_CONFIG
	// GetBrokerConfig (GET_BROKER_CONFIG) returns broker properties (tools).
	GetBrokerConfig RequestCode = 26 // GET_BROKER_CONFIG
	// GetBrokerRuntimeInfo (GET_BROKER_RUNTIME_INFO) returns broker run-time statistics (tools).
	GetBrokerRuntimeInfo RequestCode = 28 // GET_BROKER_RUNTIME_INFO
	// SearchOffsetByTimestamp (SEARCH_OFFSET_BY_TIMESTAMP) finds the queue offset for a store timestamp.
	SearchOffsetByTimestamp RequestCode = 29 // SEARCH_OFFSET_BY_TIMESTAMP
	// GetMaxOffset (GET_MAX_OFFSET) returns the next offset to be written in a queue.
	GetMaxOffset RequestCode = 30 // GET_MAX_OFFSET
	// GetMinOffset (GET_MIN_OFFSET) returns the smallest offset still stored in a queue.
	GetMinOffset RequestCode = 31 // GET_MIN_OFFSET
	// GetEarliestMsgStoretime (GET_EARLIEST_MSG_STORETIME) returns the store time of a queue's oldest message.
	GetEarliestMsgStoretime RequestCode = 32 // GET_EARLIEST_MSG_STORETIME
	// ViewMessageByID (VIEW_MESSAGE_BY_ID) reads the record at a commit-log offset.
	ViewMessageByID RequestCode = 33 // VIEW_MESSAGE_BY_ID
	// HeartBeat (HEART_BEAT) registers a client's producer and consumer groups.
	HeartBeat RequestCode = 34 // HEART_BEAT
	// UnregisterClient (UNREGISTER_CLIENT) removes a client from its groups (Java clients only).
	UnregisterClient RequestCode = 35 // UNREGISTER_CLIENT
	// ConsumerSendMsgBack (CONSUMER_SEND_MSG_BACK) returns a failed message for retry or dead-lettering.
	ConsumerSendMsgBack RequestCode = 36 // CONSUMER_SEND_MSG_BACK
	// EndTransaction (END_TRANSACTION) commits or rolls back a half message.
	EndTransaction RequestCode = 37 // END_TRANSACTION
	// GetConsumerListByGroup (GET_CONSUMER_LIST_BY_GROUP) lists the live client ids of a consumer group.
	GetConsumerListByGroup RequestCode = 38 // GET_CONSUMER_LIST_BY_GROUP
	// CheckTransactionState (CHECK_TRANSACTION_STATE) asks a producer (broker to client) for a transaction's state.
	CheckTransactionState RequestCode = 39 // CHECK_TRANSACTION_STATE
	// NotifyConsumerIDsChanged (NOTIFY_CONSUMER_IDS_CHANGED) tells consumers (broker to client) to rebalance.
	NotifyConsumerIDsChanged RequestCode = 40 // NOTIFY_CONSUMER_IDS_CHANGED
	// LockBatchMQ (LOCK_BATCH_MQ) locks queues for ordered consumption.
	LockBatchMQ RequestCode = 41 // LOCK_BATCH_MQ
	// UnlockBatchMQ (UNLOCK_BATCH_MQ) releases queue locks.
	UnlockBatchMQ RequestCode = 42 // UNLOCK_BATCH_MQ
	// GetAllConsumerOffset (GET_ALL_CONSUMER_OFFSET) returns a broker's whole consumer offset table (slave sync).
	GetAllConsumerOffset RequestCode = 43 // GET_ALL_CONSUMER_OFFSET
	// GetAllDelayOffset (GET_ALL_DELAY_OFFSET) returns a broker's delay-level progress (slave sync).
	GetAllDelayOffset RequestCode = 45 // GET_ALL_DELAY_OFFSET
	// CheckClientConfig (CHECK_CLIENT_CONFIG) validates a non-TAG subscription (Java clients).
	CheckClientConfig RequestCode = 46 // CHECK_CLIENT_CONFIG
	// PutKVConfig (PUT_KV_CONFIG) stores a name-server KV entry.
	PutKVConfig RequestCode = 100 // PUT_KV_CONFIG
	// GetKVConfig (GET_KV_CONFIG) reads a name-server KV entry.
	GetKVConfig RequestCode = 101 // GET_KV_CONFIG
	// DeleteKVConfig (DELETE_KV_CONFIG) deletes a name-server KV entry.
	DeleteKVConfig RequestCode = 102 // DELETE_KV_CONFIG
	// RegisterBroker (REGISTER_BROKER) registers a broker and its topics with a name server.
	RegisterBroker RequestCode = 103 // REGISTER_BROKER
	// UnregisterBroker (UNREGISTER_BROKER) removes a broker address from a name server.
	UnregisterBroker RequestCode = 104 // UNREGISTER_BROKER
	// GetRouteInfoByTopic (GET_ROUTEINFO_BY_TOPIC) returns a topic's route from a name server.
	GetRouteInfoByTopic RequestCode = 105 // GET_ROUTEINFO_BY_TOPIC
	// GetBrokerClusterInfo (GET_BROKER_CLUSTER_INFO) returns the name server's cluster table.
	GetBrokerClusterInfo RequestCode = 106 // GET_BROKER_CLUSTER_INFO
	// UpdateAndCreateSubscriptionGroup (UPDATE_AND_CREATE_SUBSCRIPTIONGROUP) creates or replaces a subscription group config (tools).
	UpdateAndCreateSubscriptionGroup RequestCode = 200 // UPDATE_AND_CREATE_SUBSCRIPTIONGROUP
	// GetAllSubscriptionGroupConfig (GET_ALL_SUBSCRIPTIONGROUP_CONFIG) returns a broker's subscription group table.
	GetAllSubscriptionGroupConfig RequestCode = 201 // GET_ALL_SUBSCRIPTIONGROUP_CONFIG
	// GetTopicStatsInfo (GET_TOPIC_STATS_INFO) returns per-queue offsets of a topic (tools).
	GetTopicStatsInfo RequestCode = 202 // GET_TOPIC_STATS_INFO
	// GetConsumerConnectionList (GET_CONSUMER_CONNECTION_LIST) lists a consumer group's connections (tools).
	GetConsumerConnectionList RequestCode = 203 // GET_CONSUMER_CONNECTION_LIST
	// GetProducerConnectionList (GET_PRODUCER_CONNECTION_LIST) lists a producer group's connections (tools).
	GetProducerConnectionList RequestCode = 204 // GET_PRODUCER_CONNECTION_LIST
	// WipeWritePermOfBroker (WIPE_WRITE_PERM_OF_BROKER) removes write permission of a broker on a name server (tools).
	WipeWritePermOfBroker RequestCode = 205 // WIPE_WRITE_PERM_OF_BROKER
	// GetAllTopicListFromNameServer (GET_ALL_TOPIC_LIST_FROM_NAMESERVER) lists every topic a name server knows.
	GetAllTopicListFromNameServer RequestCode = 206 // GET_ALL_TOPIC_LIST_FROM_NAMESERVER
	// DeleteSubscriptionGroup (DELETE_SUBSCRIPTIONGROUP) deletes a subscription group config (tools).
	DeleteSubscriptionGroup RequestCode = 207 // DELETE_SUBSCRIPTIONGROUP
	// GetConsumeStats (GET_CONSUME_STATS) returns a group's consume progress (tools).
	GetConsumeStats RequestCode = 208 // GET_CONSUME_STATS
	// DeleteTopicInBroker (DELETE_TOPIC_IN_BROKER) deletes a topic on a broker.
	DeleteTopicInBroker RequestCode = 215 // DELETE_TOPIC_IN_BROKER
	// DeleteTopicInNameSrv (DELETE_TOPIC_IN_NAMESRV) deletes a topic's route on a name server.
	DeleteTopicInNameSrv RequestCode = 216 // DELETE_TOPIC_IN_NAMESRV
	// GetKVListByNamespace (GET_KVLIST_BY_NAMESPACE) lists a name-server KV namespace (tools).
	GetKVListByNamespace RequestCode = 219 // GET_KVLIST_BY_NAMESPACE
	// ResetConsumerClientOffset (RESET_CONSUMER_CLIENT_OFFSET) tells a consumer (broker to client) to reset offsets.
	ResetConsumerClientOffset RequestCode = 220 // RESET_CONSUMER_CLIENT_OFFSET
	// GetConsumerStatusFromClient (GET_CONSUMER_STATUS_FROM_CLIENT) asks a consumer (broker to client) for its offsets.
	GetConsumerStatusFromClient RequestCode = 221 // GET_CONSUMER_STATUS_FROM_CLIENT
	// InvokeBrokerToResetOffset (INVOKE_BROKER_TO_RESET_OFFSET) asks a broker to reset a group's offsets (tools).
	InvokeBrokerToResetOffset RequestCode = 222 // INVOKE_BROKER_TO_RESET_OFFSET
	// InvokeBrokerToGetConsumerStatus (INVOKE_BROKER_TO_GET_CONSUMER_STATUS) asks a broker to collect consumer status (tools).
	InvokeBrokerToGetConsumerStatus RequestCode = 223 // INVOKE_BROKER_TO_GET_CONSUMER_STATUS
	// GetTopicsByCluster (GET_TOPICS_BY_CLUSTER) lists the topics of a cluster (tools).
	GetTopicsByCluster RequestCode = 224 // GET_TOPICS_BY_CLUSTER
	// QueryTopicConsumeByWho (QUERY_TOPIC_CONSUME_BY_WHO) lists the groups consuming a topic (tools).
	QueryTopicConsumeByWho RequestCode = 300 // QUERY_TOPIC_CONSUME_BY_WHO
	// GetSystemTopicListFromNS (GET_SYSTEM_TOPIC_LIST_FROM_NS) lists system topics from a name server (tools).
	GetSystemTopicListFromNS RequestCode = 304 // GET_SYSTEM_TOPIC_LIST_FROM_NS
	// GetConsumerRunningInfo (GET_CONSUMER_RUNNING_INFO) asks a consumer (broker to client) for run-time info.
	GetConsumerRunningInfo RequestCode = 307 // GET_CONSUMER_RUNNING_INFO
	// ConsumeMessageDirectly (CONSUME_MESSAGE_DIRECTLY) asks a consumer (broker to client) to consume one message.
	ConsumeMessageDirectly RequestCode = 309 // CONSUME_MESSAGE_DIRECTLY
	// SendMessageV2 (SEND_MESSAGE_V2) sends one message (V2 short-name header).
	SendMessageV2 RequestCode = 310 // SEND_MESSAGE_V2
	// ViewBrokerStatsData (VIEW_BROKER_STATS_DATA) reads one statistic's minute, hour and day figures (tools).
	ViewBrokerStatsData RequestCode = 315 // VIEW_BROKER_STATS_DATA
	// UpdateNamesrvConfig (UPDATE_NAMESRV_CONFIG) updates name-server properties (tools).
	UpdateNamesrvConfig RequestCode = 318 // UPDATE_NAMESRV_CONFIG
	// GetNamesrvConfig (GET_NAMESRV_CONFIG) returns name-server properties (tools).
	GetNamesrvConfig RequestCode = 319 // GET_NAMESRV_CONFIG
	// SendBatchMessage (SEND_BATCH_MESSAGE) sends a batch of messages (V2 header).
	SendBatchMessage RequestCode = 320 // SEND_BATCH_MESSAGE
	// QueryConsumeQueue (QUERY_CONSUME_QUEUE) dumps consume-queue units (tools).
	QueryConsumeQueue RequestCode = 321 // QUERY_CONSUME_QUEUE
	// QueryDataVersion (QUERY_DATA_VERSION) asks a name server whether a broker's data version changed.
	QueryDataVersion RequestCode = 322 // QUERY_DATA_VERSION
	// SendReplyMessage (SEND_REPLY_MESSAGE) sends a request-reply answer (V1 header).
	SendReplyMessage RequestCode = 324 // SEND_REPLY_MESSAGE
	// SendReplyMessageV2 (SEND_REPLY_MESSAGE_V2) sends a request-reply answer (V2 header).
	SendReplyMessageV2 RequestCode = 325 // SEND_REPLY_MESSAGE_V2
	// PushReplyMessageToClient (PUSH_REPLY_MESSAGE_TO_CLIENT) delivers a reply (broker to client) to the requester.
	PushReplyMessageToClient RequestCode = 326 // PUSH_REPLY_MESSAGE_TO_CLIENT
	// AddWritePermOfBroker (ADD_WRITE_PERM_OF_BROKER) restores write permission of a broker on a name server (tools).
	AddWritePermOfBroker RequestCode = 327 // ADD_WRITE_PERM_OF_BROKER
	// GetTopicConfig (GET_TOPIC_CONFIG) returns one topic config (tools).
	GetTopicConfig RequestCode = 351 // GET_TOPIC_CONFIG
	// LitePullMessage (LITE_PULL_MESSAGE) is PullMessage as sent by Java lite-pull consumers.
	LitePullMessage RequestCode = 361 // LITE_PULL_MESSAGE
	// BrokerHeartbeat (BROKER_HEARTBEAT) is a 5.x broker-to-name-server keep-alive.
	BrokerHeartbeat RequestCode = 904 // BROKER_HEARTBEAT
	// ControllerAlterSyncStateSet (CONTROLLER_ALTER_SYNC_STATE_SET) asks the controller to replace a group's SyncStateSet (the master, quoting its epochs).
	ControllerAlterSyncStateSet RequestCode = 1001 // CONTROLLER_ALTER_SYNC_STATE_SET
	// ControllerElectMaster (CONTROLLER_ELECT_MASTER) asks the controller to elect a group's master (planned switchover).
	ControllerElectMaster RequestCode = 1002 // CONTROLLER_ELECT_MASTER
	// ControllerRegisterBroker (CONTROLLER_REGISTER_BROKER) registers a broker with the controller, which assigns its id.
	ControllerRegisterBroker RequestCode = 1003 // CONTROLLER_REGISTER_BROKER
	// ControllerGetReplicaInfo (CONTROLLER_GET_REPLICA_INFO) reads a group's master, epochs, SyncStateSet and members.
	ControllerGetReplicaInfo RequestCode = 1004 // CONTROLLER_GET_REPLICA_INFO
	// ControllerGetMetadataInfo (CONTROLLER_GET_METADATA_INFO) reads a controller node's Raft status and every group.
	ControllerGetMetadataInfo RequestCode = 1005 // CONTROLLER_GET_METADATA_INFO
	// GetBrokerEpochCache (GET_BROKER_EPOCH_CACHE, RocketMQ 5 controller mode) returns a
	// broker's epoch history and commit-log end ([BrokerEpochCache] body), which a slave
	// compares with its own to find where their logs agree.
	GetBrokerEpochCache RequestCode = 1007 // GET_BROKER_EPOCH_CACHE

	// Ferry's own request codes are 30000 and up, far outside the range RocketMQ uses,
	// and are served by Ferry's brokers only.

	// FerryCancelScheduled (FERRY_CANCEL_SCHEDULED) cancels a delayed or timer message not
	// yet delivered, by message id ([CancelScheduledRequestHeader]).
	FerryCancelScheduled RequestCode = 30026 // FERRY_CANCEL_SCHEDULED
)

// Known reports whether the code is one this package names (String then
// returns its RocketMQ name rather than "RequestCode(n)").
func (c RequestCode) Known() bool {
	return !strings.HasPrefix(c.String(), "RequestCode(")
}

// ResponseCode is the code of a remoting response (RocketMQ ResponseCode).
type ResponseCode int16

// Response codes.
const (
	// Success (SUCCESS): the request succeeded.
	Success ResponseCode = 0 // SUCCESS
	// SystemError (SYSTEM_ERROR): the handler failed; the remark says why.
	SystemError ResponseCode = 1 // SYSTEM_ERROR
	// SystemBusy (SYSTEM_BUSY): the server is overloaded.
	SystemBusy ResponseCode = 2 // SYSTEM_BUSY
	// RequestCodeNotSupported (REQUEST_CODE_NOT_SUPPORTED): the request code is unknown.
	RequestCodeNotSupported ResponseCode = 3 // REQUEST_CODE_NOT_SUPPORTED
	// FlushDiskTimeout (FLUSH_DISK_TIMEOUT): the message is stored but the disk flush timed out.
	FlushDiskTimeout ResponseCode = 10 // FLUSH_DISK_TIMEOUT
	// SlaveNotAvailable (SLAVE_NOT_AVAILABLE): the message is stored but no slave is available.
	SlaveNotAvailable ResponseCode = 11 // SLAVE_NOT_AVAILABLE
	// FlushSlaveTimeout (FLUSH_SLAVE_TIMEOUT): the message is stored but replication timed out.
	FlushSlaveTimeout ResponseCode = 12 // FLUSH_SLAVE_TIMEOUT
	// MessageIllegal (MESSAGE_ILLEGAL): the message is malformed or too large.
	MessageIllegal ResponseCode = 13 // MESSAGE_ILLEGAL
	// ServiceNotAvailable (SERVICE_NOT_AVAILABLE): the broker cannot serve the request now.
	ServiceNotAvailable ResponseCode = 14 // SERVICE_NOT_AVAILABLE
	// VersionNotSupported (VERSION_NOT_SUPPORTED): the client version is not supported.
	VersionNotSupported ResponseCode = 15 // VERSION_NOT_SUPPORTED
	// NoPermission (NO_PERMISSION): the topic or broker forbids the operation.
	NoPermission ResponseCode = 16 // NO_PERMISSION
	// TopicNotExist (TOPIC_NOT_EXIST): the topic (or its route) does not exist.
	TopicNotExist ResponseCode = 17 // TOPIC_NOT_EXIST
	// TopicExistAlready (TOPIC_EXIST_ALREADY): the topic already exists.
	TopicExistAlready ResponseCode = 18 // TOPIC_EXIST_ALREADY
	// PullNotFound (PULL_NOT_FOUND): no new message is available.
	PullNotFound ResponseCode = 19 // PULL_NOT_FOUND
	// PullRetryImmediately (PULL_RETRY_IMMEDIATELY): entries were scanned but none matched the filter.
	PullRetryImmediately ResponseCode = 20 // PULL_RETRY_IMMEDIATELY
	// PullOffsetMoved (PULL_OFFSET_MOVED): the requested offset is illegal; use nextBeginOffset.
	PullOffsetMoved ResponseCode = 21 // PULL_OFFSET_MOVED
	// QueryNotFound (QUERY_NOT_FOUND): no consumer offset or indexed message was found.
	QueryNotFound ResponseCode = 22 // QUERY_NOT_FOUND
	// SubscriptionParseFailed (SUBSCRIPTION_PARSE_FAILED): the subscription expression does not parse.
	SubscriptionParseFailed ResponseCode = 23 // SUBSCRIPTION_PARSE_FAILED
	// SubscriptionNotExist (SUBSCRIPTION_NOT_EXIST): the group has no subscription for the topic.
	SubscriptionNotExist ResponseCode = 24 // SUBSCRIPTION_NOT_EXIST
	// SubscriptionNotLatest (SUBSCRIPTION_NOT_LATEST): the registered subscription is older than the request's.
	SubscriptionNotLatest ResponseCode = 25 // SUBSCRIPTION_NOT_LATEST
	// SubscriptionGroupNotExist (SUBSCRIPTION_GROUP_NOT_EXIST): the subscription group config does not exist.
	SubscriptionGroupNotExist ResponseCode = 26 // SUBSCRIPTION_GROUP_NOT_EXIST
	// FilterDataNotExist (FILTER_DATA_NOT_EXIST): SQL92 filter data is missing.
	FilterDataNotExist ResponseCode = 27 // FILTER_DATA_NOT_EXIST
	// FilterDataNotLatest (FILTER_DATA_NOT_LATEST): SQL92 filter data is stale.
	FilterDataNotLatest ResponseCode = 28 // FILTER_DATA_NOT_LATEST
	// InvalidParameter (INVALID_PARAMETER): a request parameter is out of range or malformed.
	InvalidParameter ResponseCode = 29 // INVALID_PARAMETER
	// TransactionShouldCommit (TRANSACTION_SHOULD_COMMIT): is a legacy transaction state.
	TransactionShouldCommit ResponseCode = 200 // TRANSACTION_SHOULD_COMMIT
	// TransactionShouldRollback (TRANSACTION_SHOULD_ROLLBACK): is a legacy transaction state.
	TransactionShouldRollback ResponseCode = 201 // TRANSACTION_SHOULD_ROLLBACK
	// TransactionStateUnknow (TRANSACTION_STATE_UNKNOW): is a legacy transaction state (sic).
	TransactionStateUnknow ResponseCode = 202 // TRANSACTION_STATE_UNKNOW
	// TransactionStateGroupWrong (TRANSACTION_STATE_GROUP_WRONG): is a legacy transaction state.
	TransactionStateGroupWrong ResponseCode = 203 // TRANSACTION_STATE_GROUP_WRONG
	// ConsumerNotOnline (CONSUMER_NOT_ONLINE): the addressed consumer is not connected.
	ConsumerNotOnline ResponseCode = 206 // CONSUMER_NOT_ONLINE
	// NoMessage (NO_MESSAGE): there is no message to return.
	NoMessage ResponseCode = 208 // NO_MESSAGE
	// FlowControl (FLOW_CONTROL): the request was rejected by flow control.
	FlowControl ResponseCode = 215 // FLOW_CONTROL
	// IllegalOperation (ILLEGAL_OPERATION): the operation is not allowed now (e.g. END_TRANSACTION after the immunity window).
	IllegalOperation ResponseCode = 604 // ILLEGAL_OPERATION
	// ControllerFencedMasterEpoch (CONTROLLER_FENCED_MASTER_EPOCH): the request quotes a master epoch other than the current one.
	ControllerFencedMasterEpoch ResponseCode = 2000 // CONTROLLER_FENCED_MASTER_EPOCH
	// ControllerFencedSyncStateSetEpoch (CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH): the request quotes an old SyncStateSet epoch.
	ControllerFencedSyncStateSetEpoch ResponseCode = 2001 // CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH
	// ControllerInvalidMaster (CONTROLLER_INVALID_MASTER): the requesting broker is not the group's master.
	ControllerInvalidMaster ResponseCode = 2002 // CONTROLLER_INVALID_MASTER
	// ControllerInvalidReplicas (CONTROLLER_INVALID_REPLICAS): the requested SyncStateSet is not acceptable (without the master).
	ControllerInvalidReplicas ResponseCode = 2003 // CONTROLLER_INVALID_REPLICAS
	// ControllerMasterNotAvailable (CONTROLLER_MASTER_NOT_AVAILABLE): no eligible broker to elect: the group has no master.
	ControllerMasterNotAvailable ResponseCode = 2004 // CONTROLLER_MASTER_NOT_AVAILABLE
	// ControllerInvalidRequest (CONTROLLER_INVALID_REQUEST): the request is malformed.
	ControllerInvalidRequest ResponseCode = 2005 // CONTROLLER_INVALID_REQUEST
	// ControllerBrokerNotAlive (CONTROLLER_BROKER_NOT_ALIVE): a broker the request needs alive has no fresh heartbeat.
	ControllerBrokerNotAlive ResponseCode = 2006 // CONTROLLER_BROKER_NOT_ALIVE
	// ControllerNotLeader (CONTROLLER_NOT_LEADER): this controller node is not the Raft leader; the remark and ext fields name the leader.
	ControllerNotLeader ResponseCode = 2007 // CONTROLLER_NOT_LEADER
	// ControllerBrokerMetadataNotExist (CONTROLLER_BROKER_METADATA_NOT_EXIST): no broker of the named group is registered.
	ControllerBrokerMetadataNotExist ResponseCode = 2008 // CONTROLLER_BROKER_METADATA_NOT_EXIST
	// ControllerInvalidCleanBrokerMetadata (CONTROLLER_INVALID_CLEAN_BROKER_METADATA): a request to clean broker metadata is invalid (not served by Ferry).
	ControllerInvalidCleanBrokerMetadata ResponseCode = 2009 // CONTROLLER_INVALID_CLEAN_BROKER_METADATA
	// ControllerBrokerNeedToBeRegistered (CONTROLLER_BROKER_NEED_TO_BE_REGISTERED): the broker id is not a member of the group: register first.
	ControllerBrokerNeedToBeRegistered ResponseCode = 2010 // CONTROLLER_BROKER_NEED_TO_BE_REGISTERED
	// ControllerMasterStillExist (CONTROLLER_MASTER_STILL_EXIST): the master is alive and eligible: no election.
	ControllerMasterStillExist ResponseCode = 2011 // CONTROLLER_MASTER_STILL_EXIST
	// ControllerElectMasterFailed (CONTROLLER_ELECT_MASTER_FAILED): the designated broker may not be elected.
	ControllerElectMasterFailed ResponseCode = 2012 // CONTROLLER_ELECT_MASTER_FAILED
	// ControllerAlterSyncStateSetFailed (CONTROLLER_ALTER_SYNC_STATE_SET_FAILED): the SyncStateSet was not changed (already the requested set).
	ControllerAlterSyncStateSetFailed ResponseCode = 2013 // CONTROLLER_ALTER_SYNC_STATE_SET_FAILED
	// ControllerBrokerIDInvalid (CONTROLLER_BROKER_ID_INVALID): the broker id and address do not fit the group (the address is another member's).
	ControllerBrokerIDInvalid ResponseCode = 2014 // CONTROLLER_BROKER_ID_INVALID
	// FerryScheduledAlreadyDelivered (FERRY_SCHEDULED_ALREADY_DELIVERED): the scheduled
	// message a FERRY_CANCEL_SCHEDULED names was delivered already (Ferry's own code,
	// 30000 and up like its request codes).
	FerryScheduledAlreadyDelivered ResponseCode = 30026 // FERRY_SCHEDULED_ALREADY_DELIVERED
	// FerryTransactionOffsetConflict (FERRY_TRANSACTION_OFFSET_CONFLICT): an
	// END_TRANSACTION commit whose conditional consumer offsets (FERRY_TRAN_OFFSETS_FROM)
	// did not hold; the broker rolled the transaction back (Ferry's own code).
	FerryTransactionOffsetConflict ResponseCode = 30027 // FERRY_TRANSACTION_OFFSET_CONFLICT
)

// Known reports whether the code is one this package names (String then
// returns its RocketMQ name rather than "ResponseCode(n)").
func (c ResponseCode) Known() bool {
	return !strings.HasPrefix(c.String(), "ResponseCode(")
}
