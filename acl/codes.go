package acl

import (
	"strconv"

	"github.com/ferrymq/ferry/protocol"
)

// Request codes of RocketMQ's ACL administration and static topics, which package
// protocol does not name (Ferry does not serve them); they are admin-only here so a
// broker that ever does serve them is safe by default.
const (
	codeUpdateAndCreateACLConfig      int16 = 50  // UPDATE_AND_CREATE_ACL_CONFIG
	codeDeleteACLConfig               int16 = 51  // DELETE_ACL_CONFIG
	codeGetBrokerClusterACLInfo       int16 = 52  // GET_BROKER_CLUSTER_ACL_INFO
	codeUpdateGlobalWhiteAddrs        int16 = 53  // UPDATE_GLOBAL_WHITE_ADDRS_CONFIG
	codeGetBrokerClusterACLConfig     int16 = 54  // GET_BROKER_CLUSTER_ACL_CONFIG
	codeUpdateAndCreateStaticTopic    int16 = 513 // UPDATE_AND_CREATE_STATIC_TOPIC
	uniqueKeyQueryField                     = "_UNIQUE_KEY_QUERY"
	lastVersionSkippingUniqueKeyQuery       = 399 // MQVersion.Version.V4_9_3.ordinal()
)

// Rule is what one request code needs (one row of the table in the package doc).
type Rule struct {
	// Code is the request code; Name its RocketMQ name.
	Code int16
	Name string
	// Admin: only admin accounts may send the code.
	Admin bool
	// TopicPerm is the permission every topic of the request needs (0: topics are not
	// checked). A %RETRY% topic is checked as its group with SUB instead.
	TopicPerm Perm
	// GroupPerm is the permission every consumer group of the request needs (0: groups
	// are not checked).
	GroupPerm Perm
	// TopicField and GroupField name the ext fields that carry the request's topic and
	// group; Check reads them itself. Empty when the header carries none (resources
	// that live in the body, like HEART_BEAT's, come from Request.Topics and
	// Request.Groups).
	TopicField string
	GroupField string
	// Referenced: the topic the code touches is that of a stored record the request
	// refers to (by commit-log offset or message id), known only once the handler has
	// read the record; a topic the header names is not trusted. The gate hands the
	// handler the caller ([GrantFrom]) and the handler checks TopicPerm on the record's
	// topic before answering.
	Referenced bool
	// Filtered: a listing or statistic. The gate hands the handler the caller
	// ([GrantFrom]); the handler leaves out the topics (TopicPerm) and groups
	// (GroupPerm) the caller may not access, and refuses a topic the request names
	// explicitly that the gate could not check.
	Filtered bool
	// RetryRecords: a %RETRY% or %DLQ% topic named in TopicField holds copies of records
	// of the topics the group consumed. For a caller held to its permissions the gate
	// hands the handler a [*Grant] ([GrantFrom]) with such a request, so that the answer
	// leaves out the copies whose original topic (RETRY_TOPIC) the caller may not read;
	// other topics (the hot path) get nothing added.
	RetryRecords bool
	// Open: any authenticated account may send the code. The answer names no topic and
	// no record, or only the caller's own client data. Every code a Ferry server serves
	// has a row; Open marks the ones that deliberately need no permission.
	Open bool
	// Ferry marks rows where Ferry is stricter than RocketMQ 4.9/5.x PlainAccessResource
	// (which checks only the signature for these codes) or adds an admin-only code.
	Ferry bool
}

// Rules returns the request-code table, grouped by role. Codes not in it need only an
// authenticated account (a valid signature), as in RocketMQ; every code a Ferry broker
// or name server serves has a row (Open ones need only that), which a test enforces.
func Rules() []Rule {
	c := func(code protocol.RequestCode) int16 { return int16(code) }
	const (
		pub = PermPub
		sub = PermSub
	)
	admin := func(code int16, name string, ferry bool) Rule {
		return Rule{Code: code, Name: name, Admin: true, Ferry: ferry}
	}
	return []Rule{
		// Producers.
		{Code: c(protocol.SendMessage), Name: "SEND_MESSAGE", TopicPerm: pub, TopicField: "topic"},
		{Code: c(protocol.SendMessageV2), Name: "SEND_MESSAGE_V2", TopicPerm: pub, TopicField: "b"},
		{Code: c(protocol.SendBatchMessage), Name: "SEND_BATCH_MESSAGE", TopicPerm: pub, TopicField: "b"},
		{Code: c(protocol.SendReplyMessage), Name: "SEND_REPLY_MESSAGE", TopicPerm: pub, TopicField: "topic", Ferry: true},
		{Code: c(protocol.SendReplyMessageV2), Name: "SEND_REPLY_MESSAGE_V2", TopicPerm: pub, TopicField: "b", Ferry: true},
		{Code: c(protocol.EndTransaction), Name: "END_TRANSACTION", TopicPerm: pub, Referenced: true, Ferry: true},
		// Consumers.
		{Code: c(protocol.PullMessage), Name: "PULL_MESSAGE", TopicPerm: sub, GroupPerm: sub, TopicField: "topic", GroupField: "consumerGroup", RetryRecords: true},
		{Code: c(protocol.LitePullMessage), Name: "LITE_PULL_MESSAGE", TopicPerm: sub, GroupPerm: sub, TopicField: "topic", GroupField: "consumerGroup", RetryRecords: true, Ferry: true},
		{Code: c(protocol.QueryMessage), Name: "QUERY_MESSAGE", TopicPerm: sub, TopicField: "topic", RetryRecords: true},
		{Code: c(protocol.ViewMessageByID), Name: "VIEW_MESSAGE_BY_ID", TopicPerm: sub, Referenced: true, Ferry: true},
		{Code: c(protocol.QueryConsumerOffset), Name: "QUERY_CONSUMER_OFFSET", TopicPerm: sub, GroupPerm: sub, TopicField: "topic", GroupField: "consumerGroup", Ferry: true},
		{Code: c(protocol.UpdateConsumerOffset), Name: "UPDATE_CONSUMER_OFFSET", TopicPerm: sub, GroupPerm: sub, TopicField: "topic", GroupField: "consumerGroup"},
		{Code: c(protocol.SearchOffsetByTimestamp), Name: "SEARCH_OFFSET_BY_TIMESTAMP", TopicPerm: sub, TopicField: "topic", Ferry: true},
		{Code: c(protocol.GetMaxOffset), Name: "GET_MAX_OFFSET", TopicPerm: sub, TopicField: "topic", Ferry: true},
		{Code: c(protocol.GetMinOffset), Name: "GET_MIN_OFFSET", TopicPerm: sub, TopicField: "topic", Ferry: true},
		{Code: c(protocol.GetEarliestMsgStoretime), Name: "GET_EARLIEST_MSG_STORETIME", TopicPerm: sub, TopicField: "topic", Ferry: true},
		{Code: c(protocol.HeartBeat), Name: "HEART_BEAT", TopicPerm: sub, GroupPerm: sub},
		{Code: c(protocol.UnregisterClient), Name: "UNREGISTER_CLIENT", GroupPerm: sub, GroupField: "consumerGroup"},
		{Code: c(protocol.ConsumerSendMsgBack), Name: "CONSUMER_SEND_MSG_BACK", TopicPerm: sub, GroupPerm: sub, GroupField: "group", Referenced: true},
		{Code: c(protocol.GetConsumerListByGroup), Name: "GET_CONSUMER_LIST_BY_GROUP", GroupPerm: sub, GroupField: "consumerGroup"},
		{Code: c(protocol.LockBatchMQ), Name: "LOCK_BATCH_MQ", TopicPerm: sub, GroupPerm: sub, Ferry: true},
		{Code: c(protocol.UnlockBatchMQ), Name: "UNLOCK_BATCH_MQ", TopicPerm: sub, GroupPerm: sub, Ferry: true},
		{Code: c(protocol.CheckClientConfig), Name: "CHECK_CLIENT_CONFIG", Open: true},
		// Routes (name server).
		{Code: c(protocol.GetRouteInfoByTopic), Name: "GET_ROUTEINFO_BY_TOPIC", TopicPerm: PermAny, TopicField: "topic", Ferry: true},
		{Code: c(protocol.GetBrokerClusterInfo), Name: "GET_BROKER_CLUSTER_INFO", Open: true},
		// Listings, statistics and operator tools.
		{Code: c(protocol.GetAllTopicConfig), Name: "GET_ALL_TOPIC_CONFIG", TopicPerm: PermAny, Filtered: true, Ferry: true},
		{Code: c(protocol.GetAllSubscriptionGroupConfig), Name: "GET_ALL_SUBSCRIPTIONGROUP_CONFIG", GroupPerm: sub, Filtered: true, Ferry: true},
		{Code: c(protocol.GetTopicStatsInfo), Name: "GET_TOPIC_STATS_INFO", TopicPerm: sub, TopicField: "topic", Ferry: true},
		{Code: c(protocol.GetConsumeStats), Name: "GET_CONSUME_STATS", TopicPerm: sub, GroupPerm: sub, TopicField: "topic", GroupField: "consumerGroup", Filtered: true, Ferry: true},
		{Code: c(protocol.GetConsumerConnectionList), Name: "GET_CONSUMER_CONNECTION_LIST", TopicPerm: sub, GroupPerm: sub, GroupField: "consumerGroup", Filtered: true, Ferry: true},
		{Code: c(protocol.GetProducerConnectionList), Name: "GET_PRODUCER_CONNECTION_LIST", Open: true},
		{Code: c(protocol.QueryTopicConsumeByWho), Name: "QUERY_TOPIC_CONSUME_BY_WHO", TopicPerm: sub, TopicField: "topic", Ferry: true},
		{Code: c(protocol.GetBrokerRuntimeInfo), Name: "GET_BROKER_RUNTIME_INFO", Open: true},
		{Code: c(protocol.ConsumeMessageDirectly), Name: "CONSUME_MESSAGE_DIRECTLY", TopicPerm: sub, GroupPerm: sub, GroupField: "consumerGroup", Referenced: true, Ferry: true},
		// Administration (RocketMQ's Permission.ADMIN_CODE, plus Ferry's additions).
		admin(c(protocol.UpdateAndCreateTopic), "UPDATE_AND_CREATE_TOPIC", false),
		admin(c(protocol.UpdateAndCreateTopicList), "UPDATE_AND_CREATE_TOPIC_LIST", true),
		admin(c(protocol.FerryCancelScheduled), "FERRY_CANCEL_SCHEDULED", true),
		admin(c(protocol.UpdateBrokerConfig), "UPDATE_BROKER_CONFIG", false),
		admin(c(protocol.GetBrokerConfig), "GET_BROKER_CONFIG", true),
		admin(codeUpdateAndCreateACLConfig, "UPDATE_AND_CREATE_ACL_CONFIG", false),
		admin(codeDeleteACLConfig, "DELETE_ACL_CONFIG", false),
		admin(codeGetBrokerClusterACLInfo, "GET_BROKER_CLUSTER_ACL_INFO", false),
		admin(codeUpdateGlobalWhiteAddrs, "UPDATE_GLOBAL_WHITE_ADDRS_CONFIG", true),
		admin(codeGetBrokerClusterACLConfig, "GET_BROKER_CLUSTER_ACL_CONFIG", true),
		admin(c(protocol.PutKVConfig), "PUT_KV_CONFIG", true),
		admin(c(protocol.DeleteKVConfig), "DELETE_KV_CONFIG", true),
		admin(c(protocol.GetKVConfig), "GET_KV_CONFIG", true),
		admin(c(protocol.GetKVListByNamespace), "GET_KVLIST_BY_NAMESPACE", true),
		admin(c(protocol.RegisterBroker), "REGISTER_BROKER", true),
		admin(c(protocol.UnregisterBroker), "UNREGISTER_BROKER", true),
		admin(c(protocol.UpdateAndCreateSubscriptionGroup), "UPDATE_AND_CREATE_SUBSCRIPTIONGROUP", false),
		admin(c(protocol.WipeWritePermOfBroker), "WIPE_WRITE_PERM_OF_BROKER", true),
		admin(c(protocol.DeleteSubscriptionGroup), "DELETE_SUBSCRIPTIONGROUP", false),
		admin(c(protocol.DeleteTopicInBroker), "DELETE_TOPIC_IN_BROKER", false),
		admin(c(protocol.DeleteTopicInNameSrv), "DELETE_TOPIC_IN_NAMESRV", true),
		admin(c(protocol.InvokeBrokerToResetOffset), "INVOKE_BROKER_TO_RESET_OFFSET", true),
		admin(c(protocol.UpdateNamesrvConfig), "UPDATE_NAMESRV_CONFIG", true),
		admin(c(protocol.GetNamesrvConfig), "GET_NAMESRV_CONFIG", true),
		admin(c(protocol.AddWritePermOfBroker), "ADD_WRITE_PERM_OF_BROKER", true),
		admin(codeUpdateAndCreateStaticTopic, "UPDATE_AND_CREATE_STATIC_TOPIC", false),
		admin(c(protocol.GetAllConsumerOffset), "GET_ALL_CONSUMER_OFFSET", true),
		admin(c(protocol.GetAllDelayOffset), "GET_ALL_DELAY_OFFSET", true),
		admin(c(protocol.GetConsumerRunningInfo), "GET_CONSUMER_RUNNING_INFO", true),
		admin(c(protocol.GetAllTopicListFromNameServer), "GET_ALL_TOPIC_LIST_FROM_NAMESERVER", true),
		admin(c(protocol.GetBrokerEpochCache), "GET_BROKER_EPOCH_CACHE", true),
		admin(c(protocol.ViewBrokerStatsData), "VIEW_BROKER_STATS_DATA", true),
		// The controller (controller.aclEnable): every request of brokers and tools.
		admin(c(protocol.BrokerHeartbeat), "BROKER_HEARTBEAT", true),
		admin(c(protocol.ControllerAlterSyncStateSet), "CONTROLLER_ALTER_SYNC_STATE_SET", true),
		admin(c(protocol.ControllerElectMaster), "CONTROLLER_ELECT_MASTER", true),
		admin(c(protocol.ControllerRegisterBroker), "CONTROLLER_REGISTER_BROKER", true),
		admin(c(protocol.ControllerGetReplicaInfo), "CONTROLLER_GET_REPLICA_INFO", true),
		admin(c(protocol.ControllerGetMetadataInfo), "CONTROLLER_GET_METADATA_INFO", true),
	}
}

// RuleOf returns the row of code in [Rules], if it has one.
func RuleOf(code int16) (Rule, bool) {
	for _, r := range Rules() {
		if r.Code == code {
			return r, true
		}
	}
	return Rule{}, false
}

// codeName returns "NAME (code)" for error texts.
func codeName(code int16) string {
	name := protocol.RequestCode(code).String()
	for _, r := range Rules() {
		if r.Code == code {
			name = r.Name
			break
		}
	}
	return name + " (" + strconv.Itoa(int(code)) + ")"
}
