package protocol

import "strconv"

// RequestCode is the code of a remoting request (RocketMQ RequestCode).
type RequestCode int16

// Request codes (spec §2.2, §3.7, §10). Each comment says what the request
// does; the handlers and the spec describe the details.
const (
	// SendMessage (SEND_MESSAGE) sends one message (V1 long-name header).
	SendMessage RequestCode = 10
	// PullMessage (PULL_MESSAGE) pulls messages from one queue, optionally long-polling.
	PullMessage RequestCode = 11
	// QueryMessage (QUERY_MESSAGE) looks messages up by key or UNIQ_KEY in the index.
	QueryMessage RequestCode = 12
	// QueryBrokerOffset (QUERY_BROKER_OFFSET) is a legacy broker-offset query (unused).
	QueryBrokerOffset RequestCode = 13
	// QueryConsumerOffset (QUERY_CONSUMER_OFFSET) reads a group's committed offset for a queue.
	QueryConsumerOffset RequestCode = 14
	// UpdateConsumerOffset (UPDATE_CONSUMER_OFFSET) commits a group's offset for a queue.
	UpdateConsumerOffset RequestCode = 15
	// UpdateAndCreateTopic (UPDATE_AND_CREATE_TOPIC) creates or replaces a topic config on a broker.
	UpdateAndCreateTopic RequestCode = 17
	// UpdateAndCreateTopicList (UPDATE_AND_CREATE_TOPIC_LIST) is the 5.x batch variant of UpdateAndCreateTopic.
	UpdateAndCreateTopicList RequestCode = 18
	// GetAllTopicConfig (GET_ALL_TOPIC_CONFIG) returns a broker's whole topic config table (tools).
	GetAllTopicConfig RequestCode = 21
	// UpdateBrokerConfig (UPDATE_BROKER_CONFIG) updates broker properties at run time (tools).
	UpdateBrokerConfig RequestCode = 25
	// GetBrokerConfig (GET_BROKER_CONFIG) returns broker properties (tools).
	GetBrokerConfig RequestCode = 26
	// GetBrokerRuntimeInfo (GET_BROKER_RUNTIME_INFO) returns broker run-time statistics (tools).
	GetBrokerRuntimeInfo RequestCode = 28
	// SearchOffsetByTimestamp (SEARCH_OFFSET_BY_TIMESTAMP) finds the queue offset for a store timestamp.
	SearchOffsetByTimestamp RequestCode = 29
	// GetMaxOffset (GET_MAX_OFFSET) returns the next offset to be written in a queue.
	GetMaxOffset RequestCode = 30
	// GetMinOffset (GET_MIN_OFFSET) returns the smallest offset still stored in a queue.
	GetMinOffset RequestCode = 31
	// GetEarliestMsgStoretime (GET_EARLIEST_MSG_STORETIME) returns the store time of a queue's oldest message.
	GetEarliestMsgStoretime RequestCode = 32
	// ViewMessageByID (VIEW_MESSAGE_BY_ID) reads the record at a commit-log offset.
	ViewMessageByID RequestCode = 33
	// HeartBeat (HEART_BEAT) registers a client's producer and consumer groups.
	HeartBeat RequestCode = 34
	// UnregisterClient (UNREGISTER_CLIENT) removes a client from its groups (Java clients only).
	UnregisterClient RequestCode = 35
	// ConsumerSendMsgBack (CONSUMER_SEND_MSG_BACK) returns a failed message for retry or dead-lettering.
	ConsumerSendMsgBack RequestCode = 36
	// EndTransaction (END_TRANSACTION) commits or rolls back a half message.
	EndTransaction RequestCode = 37
	// GetConsumerListByGroup (GET_CONSUMER_LIST_BY_GROUP) lists the live client ids of a consumer group.
	GetConsumerListByGroup RequestCode = 38
	// CheckTransactionState (CHECK_TRANSACTION_STATE) asks a producer (broker to client) for a transaction's state.
	CheckTransactionState RequestCode = 39
	// NotifyConsumerIDsChanged (NOTIFY_CONSUMER_IDS_CHANGED) tells consumers (broker to client) to rebalance.
	NotifyConsumerIDsChanged RequestCode = 40
	// LockBatchMQ (LOCK_BATCH_MQ) locks queues for ordered consumption.
	LockBatchMQ RequestCode = 41
	// UnlockBatchMQ (UNLOCK_BATCH_MQ) releases queue locks.
	UnlockBatchMQ RequestCode = 42
	// GetAllConsumerOffset (GET_ALL_CONSUMER_OFFSET) returns a broker's whole consumer offset table (slave sync).
	GetAllConsumerOffset RequestCode = 43
	// GetAllDelayOffset (GET_ALL_DELAY_OFFSET) returns a broker's delay-level progress (slave sync).
	GetAllDelayOffset RequestCode = 45
	// CheckClientConfig (CHECK_CLIENT_CONFIG) validates a non-TAG subscription (Java clients).
	CheckClientConfig RequestCode = 46
	// PutKVConfig (PUT_KV_CONFIG) stores a name-server KV entry.
	PutKVConfig RequestCode = 100
	// GetKVConfig (GET_KV_CONFIG) reads a name-server KV entry.
	GetKVConfig RequestCode = 101
	// DeleteKVConfig (DELETE_KV_CONFIG) deletes a name-server KV entry.
	DeleteKVConfig RequestCode = 102
	// RegisterBroker (REGISTER_BROKER) registers a broker and its topics with a name server.
	RegisterBroker RequestCode = 103
	// UnregisterBroker (UNREGISTER_BROKER) removes a broker address from a name server.
	UnregisterBroker RequestCode = 104
	// GetRouteInfoByTopic (GET_ROUTEINFO_BY_TOPIC) returns a topic's route from a name server.
	GetRouteInfoByTopic RequestCode = 105
	// GetBrokerClusterInfo (GET_BROKER_CLUSTER_INFO) returns the name server's cluster table.
	GetBrokerClusterInfo RequestCode = 106
	// UpdateAndCreateSubscriptionGroup (UPDATE_AND_CREATE_SUBSCRIPTIONGROUP) creates or replaces a subscription group config (tools).
	UpdateAndCreateSubscriptionGroup RequestCode = 200
	// GetAllSubscriptionGroupConfig (GET_ALL_SUBSCRIPTIONGROUP_CONFIG) returns a broker's subscription group table.
	GetAllSubscriptionGroupConfig RequestCode = 201
	// GetTopicStatsInfo (GET_TOPIC_STATS_INFO) returns per-queue offsets of a topic (tools).
	GetTopicStatsInfo RequestCode = 202
	// GetConsumerConnectionList (GET_CONSUMER_CONNECTION_LIST) lists a consumer group's connections (tools).
	GetConsumerConnectionList RequestCode = 203
	// GetProducerConnectionList (GET_PRODUCER_CONNECTION_LIST) lists a producer group's connections (tools).
	GetProducerConnectionList RequestCode = 204
	// WipeWritePermOfBroker (WIPE_WRITE_PERM_OF_BROKER) removes write permission of a broker on a name server (tools).
	WipeWritePermOfBroker RequestCode = 205
	// GetAllTopicListFromNameServer (GET_ALL_TOPIC_LIST_FROM_NAMESERVER) lists every topic a name server knows.
	GetAllTopicListFromNameServer RequestCode = 206
	// DeleteSubscriptionGroup (DELETE_SUBSCRIPTIONGROUP) deletes a subscription group config (tools).
	DeleteSubscriptionGroup RequestCode = 207
	// GetConsumeStats (GET_CONSUME_STATS) returns a group's consume progress (tools).
	GetConsumeStats RequestCode = 208
	// DeleteTopicInBroker (DELETE_TOPIC_IN_BROKER) deletes a topic on a broker.
	DeleteTopicInBroker RequestCode = 215
	// DeleteTopicInNameSrv (DELETE_TOPIC_IN_NAMESRV) deletes a topic's route on a name server.
	DeleteTopicInNameSrv RequestCode = 216
	// GetKVListByNamespace (GET_KVLIST_BY_NAMESPACE) lists a name-server KV namespace (tools).
	GetKVListByNamespace RequestCode = 219
	// ResetConsumerClientOffset (RESET_CONSUMER_CLIENT_OFFSET) tells a consumer (broker to client) to reset offsets.
	ResetConsumerClientOffset RequestCode = 220
	// GetConsumerStatusFromClient (GET_CONSUMER_STATUS_FROM_CLIENT) asks a consumer (broker to client) for its offsets.
	GetConsumerStatusFromClient RequestCode = 221
	// InvokeBrokerToResetOffset (INVOKE_BROKER_TO_RESET_OFFSET) asks a broker to reset a group's offsets (tools).
	InvokeBrokerToResetOffset RequestCode = 222
	// InvokeBrokerToGetConsumerStatus (INVOKE_BROKER_TO_GET_CONSUMER_STATUS) asks a broker to collect consumer status (tools).
	InvokeBrokerToGetConsumerStatus RequestCode = 223
	// GetTopicsByCluster (GET_TOPICS_BY_CLUSTER) lists the topics of a cluster (tools).
	GetTopicsByCluster RequestCode = 224
	// QueryTopicConsumeByWho (QUERY_TOPIC_CONSUME_BY_WHO) lists the groups consuming a topic (tools).
	QueryTopicConsumeByWho RequestCode = 300
	// GetSystemTopicListFromNS (GET_SYSTEM_TOPIC_LIST_FROM_NS) lists system topics from a name server (tools).
	GetSystemTopicListFromNS RequestCode = 304
	// GetConsumerRunningInfo (GET_CONSUMER_RUNNING_INFO) asks a consumer (broker to client) for run-time info.
	GetConsumerRunningInfo RequestCode = 307
	// ConsumeMessageDirectly (CONSUME_MESSAGE_DIRECTLY) asks a consumer (broker to client) to consume one message.
	ConsumeMessageDirectly RequestCode = 309
	// SendMessageV2 (SEND_MESSAGE_V2) sends one message (V2 short-name header).
	SendMessageV2 RequestCode = 310
	// UpdateNamesrvConfig (UPDATE_NAMESRV_CONFIG) updates name-server properties (tools).
	UpdateNamesrvConfig RequestCode = 318
	// GetNamesrvConfig (GET_NAMESRV_CONFIG) returns name-server properties (tools).
	GetNamesrvConfig RequestCode = 319
	// SendBatchMessage (SEND_BATCH_MESSAGE) sends a batch of messages (V2 header).
	SendBatchMessage RequestCode = 320
	// QueryConsumeQueue (QUERY_CONSUME_QUEUE) dumps consume-queue units (tools).
	QueryConsumeQueue RequestCode = 321
	// QueryDataVersion (QUERY_DATA_VERSION) asks a name server whether a broker's data version changed.
	QueryDataVersion RequestCode = 322
	// SendReplyMessage (SEND_REPLY_MESSAGE) sends a request-reply answer (V1 header).
	SendReplyMessage RequestCode = 324
	// SendReplyMessageV2 (SEND_REPLY_MESSAGE_V2) sends a request-reply answer (V2 header).
	SendReplyMessageV2 RequestCode = 325
	// PushReplyMessageToClient (PUSH_REPLY_MESSAGE_TO_CLIENT) delivers a reply (broker to client) to the requester.
	PushReplyMessageToClient RequestCode = 326
	// AddWritePermOfBroker (ADD_WRITE_PERM_OF_BROKER) restores write permission of a broker on a name server (tools).
	AddWritePermOfBroker RequestCode = 327
	// GetTopicConfig (GET_TOPIC_CONFIG) returns one topic config (tools).
	GetTopicConfig RequestCode = 351
	// LitePullMessage (LITE_PULL_MESSAGE) is PullMessage as sent by Java lite-pull consumers.
	LitePullMessage RequestCode = 361
	// BrokerHeartbeat (BROKER_HEARTBEAT) is a 5.x broker-to-name-server keep-alive.
	BrokerHeartbeat RequestCode = 904
)

// String returns the RocketMQ name of the code, e.g. "SEND_MESSAGE", or
// "RequestCode(n)" for a code this package does not know.
func (c RequestCode) String() string {
	if s, ok := c.name(); ok {
		return s
	}
	return "RequestCode(" + strconv.Itoa(int(c)) + ")"
}

// Known reports whether the code is one this package names.
func (c RequestCode) Known() bool {
	_, ok := c.name()
	return ok
}

func (c RequestCode) name() (string, bool) {
	switch c {
	case SendMessage:
		return "SEND_MESSAGE", true
	case PullMessage:
		return "PULL_MESSAGE", true
	case QueryMessage:
		return "QUERY_MESSAGE", true
	case QueryBrokerOffset:
		return "QUERY_BROKER_OFFSET", true
	case QueryConsumerOffset:
		return "QUERY_CONSUMER_OFFSET", true
	case UpdateConsumerOffset:
		return "UPDATE_CONSUMER_OFFSET", true
	case UpdateAndCreateTopic:
		return "UPDATE_AND_CREATE_TOPIC", true
	case UpdateAndCreateTopicList:
		return "UPDATE_AND_CREATE_TOPIC_LIST", true
	case GetAllTopicConfig:
		return "GET_ALL_TOPIC_CONFIG", true
	case UpdateBrokerConfig:
		return "UPDATE_BROKER_CONFIG", true
	case GetBrokerConfig:
		return "GET_BROKER_CONFIG", true
	case GetBrokerRuntimeInfo:
		return "GET_BROKER_RUNTIME_INFO", true
	case SearchOffsetByTimestamp:
		return "SEARCH_OFFSET_BY_TIMESTAMP", true
	case GetMaxOffset:
		return "GET_MAX_OFFSET", true
	case GetMinOffset:
		return "GET_MIN_OFFSET", true
	case GetEarliestMsgStoretime:
		return "GET_EARLIEST_MSG_STORETIME", true
	case ViewMessageByID:
		return "VIEW_MESSAGE_BY_ID", true
	case HeartBeat:
		return "HEART_BEAT", true
	case UnregisterClient:
		return "UNREGISTER_CLIENT", true
	case ConsumerSendMsgBack:
		return "CONSUMER_SEND_MSG_BACK", true
	case EndTransaction:
		return "END_TRANSACTION", true
	case GetConsumerListByGroup:
		return "GET_CONSUMER_LIST_BY_GROUP", true
	case CheckTransactionState:
		return "CHECK_TRANSACTION_STATE", true
	case NotifyConsumerIDsChanged:
		return "NOTIFY_CONSUMER_IDS_CHANGED", true
	case LockBatchMQ:
		return "LOCK_BATCH_MQ", true
	case UnlockBatchMQ:
		return "UNLOCK_BATCH_MQ", true
	case GetAllConsumerOffset:
		return "GET_ALL_CONSUMER_OFFSET", true
	case GetAllDelayOffset:
		return "GET_ALL_DELAY_OFFSET", true
	case CheckClientConfig:
		return "CHECK_CLIENT_CONFIG", true
	case PutKVConfig:
		return "PUT_KV_CONFIG", true
	case GetKVConfig:
		return "GET_KV_CONFIG", true
	case DeleteKVConfig:
		return "DELETE_KV_CONFIG", true
	case RegisterBroker:
		return "REGISTER_BROKER", true
	case UnregisterBroker:
		return "UNREGISTER_BROKER", true
	case GetRouteInfoByTopic:
		return "GET_ROUTEINFO_BY_TOPIC", true
	case GetBrokerClusterInfo:
		return "GET_BROKER_CLUSTER_INFO", true
	case UpdateAndCreateSubscriptionGroup:
		return "UPDATE_AND_CREATE_SUBSCRIPTIONGROUP", true
	case GetAllSubscriptionGroupConfig:
		return "GET_ALL_SUBSCRIPTIONGROUP_CONFIG", true
	case GetTopicStatsInfo:
		return "GET_TOPIC_STATS_INFO", true
	case GetConsumerConnectionList:
		return "GET_CONSUMER_CONNECTION_LIST", true
	case GetProducerConnectionList:
		return "GET_PRODUCER_CONNECTION_LIST", true
	case WipeWritePermOfBroker:
		return "WIPE_WRITE_PERM_OF_BROKER", true
	case GetAllTopicListFromNameServer:
		return "GET_ALL_TOPIC_LIST_FROM_NAMESERVER", true
	case DeleteSubscriptionGroup:
		return "DELETE_SUBSCRIPTIONGROUP", true
	case GetConsumeStats:
		return "GET_CONSUME_STATS", true
	case DeleteTopicInBroker:
		return "DELETE_TOPIC_IN_BROKER", true
	case DeleteTopicInNameSrv:
		return "DELETE_TOPIC_IN_NAMESRV", true
	case GetKVListByNamespace:
		return "GET_KVLIST_BY_NAMESPACE", true
	case ResetConsumerClientOffset:
		return "RESET_CONSUMER_CLIENT_OFFSET", true
	case GetConsumerStatusFromClient:
		return "GET_CONSUMER_STATUS_FROM_CLIENT", true
	case InvokeBrokerToResetOffset:
		return "INVOKE_BROKER_TO_RESET_OFFSET", true
	case InvokeBrokerToGetConsumerStatus:
		return "INVOKE_BROKER_TO_GET_CONSUMER_STATUS", true
	case GetTopicsByCluster:
		return "GET_TOPICS_BY_CLUSTER", true
	case QueryTopicConsumeByWho:
		return "QUERY_TOPIC_CONSUME_BY_WHO", true
	case GetSystemTopicListFromNS:
		return "GET_SYSTEM_TOPIC_LIST_FROM_NS", true
	case GetConsumerRunningInfo:
		return "GET_CONSUMER_RUNNING_INFO", true
	case ConsumeMessageDirectly:
		return "CONSUME_MESSAGE_DIRECTLY", true
	case SendMessageV2:
		return "SEND_MESSAGE_V2", true
	case UpdateNamesrvConfig:
		return "UPDATE_NAMESRV_CONFIG", true
	case GetNamesrvConfig:
		return "GET_NAMESRV_CONFIG", true
	case SendBatchMessage:
		return "SEND_BATCH_MESSAGE", true
	case QueryConsumeQueue:
		return "QUERY_CONSUME_QUEUE", true
	case QueryDataVersion:
		return "QUERY_DATA_VERSION", true
	case SendReplyMessage:
		return "SEND_REPLY_MESSAGE", true
	case SendReplyMessageV2:
		return "SEND_REPLY_MESSAGE_V2", true
	case PushReplyMessageToClient:
		return "PUSH_REPLY_MESSAGE_TO_CLIENT", true
	case AddWritePermOfBroker:
		return "ADD_WRITE_PERM_OF_BROKER", true
	case GetTopicConfig:
		return "GET_TOPIC_CONFIG", true
	case LitePullMessage:
		return "LITE_PULL_MESSAGE", true
	case BrokerHeartbeat:
		return "BROKER_HEARTBEAT", true
	}
	return "", false
}

// ResponseCode is the code of a remoting response (RocketMQ ResponseCode).
type ResponseCode int16

// Response codes.
const (
	// Success (SUCCESS): the request succeeded.
	Success ResponseCode = 0
	// SystemError (SYSTEM_ERROR): the handler failed; the remark says why.
	SystemError ResponseCode = 1
	// SystemBusy (SYSTEM_BUSY): the server is overloaded.
	SystemBusy ResponseCode = 2
	// RequestCodeNotSupported (REQUEST_CODE_NOT_SUPPORTED): the request code is unknown.
	RequestCodeNotSupported ResponseCode = 3
	// FlushDiskTimeout (FLUSH_DISK_TIMEOUT): the message is stored but the disk flush timed out.
	FlushDiskTimeout ResponseCode = 10
	// SlaveNotAvailable (SLAVE_NOT_AVAILABLE): the message is stored but no slave is available.
	SlaveNotAvailable ResponseCode = 11
	// FlushSlaveTimeout (FLUSH_SLAVE_TIMEOUT): the message is stored but replication timed out.
	FlushSlaveTimeout ResponseCode = 12
	// MessageIllegal (MESSAGE_ILLEGAL): the message is malformed or too large.
	MessageIllegal ResponseCode = 13
	// ServiceNotAvailable (SERVICE_NOT_AVAILABLE): the broker cannot serve the request now.
	ServiceNotAvailable ResponseCode = 14
	// VersionNotSupported (VERSION_NOT_SUPPORTED): the client version is not supported.
	VersionNotSupported ResponseCode = 15
	// NoPermission (NO_PERMISSION): the topic or broker forbids the operation.
	NoPermission ResponseCode = 16
	// TopicNotExist (TOPIC_NOT_EXIST): the topic (or its route) does not exist.
	TopicNotExist ResponseCode = 17
	// TopicExistAlready (TOPIC_EXIST_ALREADY): the topic already exists.
	TopicExistAlready ResponseCode = 18
	// PullNotFound (PULL_NOT_FOUND): no new message is available.
	PullNotFound ResponseCode = 19
	// PullRetryImmediately (PULL_RETRY_IMMEDIATELY): entries were scanned but none matched the filter.
	PullRetryImmediately ResponseCode = 20
	// PullOffsetMoved (PULL_OFFSET_MOVED): the requested offset is illegal; use nextBeginOffset.
	PullOffsetMoved ResponseCode = 21
	// QueryNotFound (QUERY_NOT_FOUND): no consumer offset or indexed message was found.
	QueryNotFound ResponseCode = 22
	// SubscriptionParseFailed (SUBSCRIPTION_PARSE_FAILED): the subscription expression does not parse.
	SubscriptionParseFailed ResponseCode = 23
	// SubscriptionNotExist (SUBSCRIPTION_NOT_EXIST): the group has no subscription for the topic.
	SubscriptionNotExist ResponseCode = 24
	// SubscriptionNotLatest (SUBSCRIPTION_NOT_LATEST): the registered subscription is older than the request's.
	SubscriptionNotLatest ResponseCode = 25
	// SubscriptionGroupNotExist (SUBSCRIPTION_GROUP_NOT_EXIST): the subscription group config does not exist.
	SubscriptionGroupNotExist ResponseCode = 26
	// FilterDataNotExist (FILTER_DATA_NOT_EXIST): SQL92 filter data is missing.
	FilterDataNotExist ResponseCode = 27
	// FilterDataNotLatest (FILTER_DATA_NOT_LATEST): SQL92 filter data is stale.
	FilterDataNotLatest ResponseCode = 28
	// InvalidParameter (INVALID_PARAMETER): a request parameter is out of range or malformed.
	InvalidParameter ResponseCode = 29
	// TransactionShouldCommit (TRANSACTION_SHOULD_COMMIT): is a legacy transaction state.
	TransactionShouldCommit ResponseCode = 200
	// TransactionShouldRollback (TRANSACTION_SHOULD_ROLLBACK): is a legacy transaction state.
	TransactionShouldRollback ResponseCode = 201
	// TransactionStateUnknow (TRANSACTION_STATE_UNKNOW): is a legacy transaction state (sic).
	TransactionStateUnknow ResponseCode = 202
	// TransactionStateGroupWrong (TRANSACTION_STATE_GROUP_WRONG): is a legacy transaction state.
	TransactionStateGroupWrong ResponseCode = 203
	// ConsumerNotOnline (CONSUMER_NOT_ONLINE): the addressed consumer is not connected.
	ConsumerNotOnline ResponseCode = 206
	// NoMessage (NO_MESSAGE): there is no message to return.
	NoMessage ResponseCode = 208
	// FlowControl (FLOW_CONTROL): the request was rejected by flow control.
	FlowControl ResponseCode = 215
	// IllegalOperation (ILLEGAL_OPERATION): the operation is not allowed now (e.g. END_TRANSACTION after the immunity window).
	IllegalOperation ResponseCode = 604
)

// String returns the RocketMQ name of the code, e.g. "PULL_NOT_FOUND", or
// "ResponseCode(n)" for a code this package does not know.
func (c ResponseCode) String() string {
	if s, ok := c.name(); ok {
		return s
	}
	return "ResponseCode(" + strconv.Itoa(int(c)) + ")"
}

// Known reports whether the code is one this package names.
func (c ResponseCode) Known() bool {
	_, ok := c.name()
	return ok
}

func (c ResponseCode) name() (string, bool) {
	switch c {
	case Success:
		return "SUCCESS", true
	case SystemError:
		return "SYSTEM_ERROR", true
	case SystemBusy:
		return "SYSTEM_BUSY", true
	case RequestCodeNotSupported:
		return "REQUEST_CODE_NOT_SUPPORTED", true
	case FlushDiskTimeout:
		return "FLUSH_DISK_TIMEOUT", true
	case SlaveNotAvailable:
		return "SLAVE_NOT_AVAILABLE", true
	case FlushSlaveTimeout:
		return "FLUSH_SLAVE_TIMEOUT", true
	case MessageIllegal:
		return "MESSAGE_ILLEGAL", true
	case ServiceNotAvailable:
		return "SERVICE_NOT_AVAILABLE", true
	case VersionNotSupported:
		return "VERSION_NOT_SUPPORTED", true
	case NoPermission:
		return "NO_PERMISSION", true
	case TopicNotExist:
		return "TOPIC_NOT_EXIST", true
	case TopicExistAlready:
		return "TOPIC_EXIST_ALREADY", true
	case PullNotFound:
		return "PULL_NOT_FOUND", true
	case PullRetryImmediately:
		return "PULL_RETRY_IMMEDIATELY", true
	case PullOffsetMoved:
		return "PULL_OFFSET_MOVED", true
	case QueryNotFound:
		return "QUERY_NOT_FOUND", true
	case SubscriptionParseFailed:
		return "SUBSCRIPTION_PARSE_FAILED", true
	case SubscriptionNotExist:
		return "SUBSCRIPTION_NOT_EXIST", true
	case SubscriptionNotLatest:
		return "SUBSCRIPTION_NOT_LATEST", true
	case SubscriptionGroupNotExist:
		return "SUBSCRIPTION_GROUP_NOT_EXIST", true
	case FilterDataNotExist:
		return "FILTER_DATA_NOT_EXIST", true
	case FilterDataNotLatest:
		return "FILTER_DATA_NOT_LATEST", true
	case InvalidParameter:
		return "INVALID_PARAMETER", true
	case TransactionShouldCommit:
		return "TRANSACTION_SHOULD_COMMIT", true
	case TransactionShouldRollback:
		return "TRANSACTION_SHOULD_ROLLBACK", true
	case TransactionStateUnknow:
		return "TRANSACTION_STATE_UNKNOW", true
	case TransactionStateGroupWrong:
		return "TRANSACTION_STATE_GROUP_WRONG", true
	case ConsumerNotOnline:
		return "CONSUMER_NOT_ONLINE", true
	case NoMessage:
		return "NO_MESSAGE", true
	case FlowControl:
		return "FLOW_CONTROL", true
	case IllegalOperation:
		return "ILLEGAL_OPERATION", true
	}
	return "", false
}
