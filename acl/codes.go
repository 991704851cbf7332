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
	// Ferry marks rows where Ferry is stricter than RocketMQ 4.9/5.x PlainAccessResource
	// (which checks only the signature for these codes) or adds an admin-only code.
	Ferry bool
}

// Rules returns the request-code table, grouped by role. Codes not in it need only an
// authenticated account (a valid signature), as in RocketMQ.
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
		{Code: c(protocol.EndTransaction), Name: "END_TRANSACTION", TopicPerm: pub, Ferry: true},
		// Consumers.
		{Code: c(protocol.PullMessage), Name: "PULL_MESSAGE", TopicPerm: sub, GroupPerm: sub, TopicField: "topic", GroupField: "consumerGroup"},
		{Code: c(protocol.LitePullMessage), Name: "LITE_PULL_MESSAGE", TopicPerm: sub, GroupPerm: sub, TopicField: "topic", GroupField: "consumerGroup", Ferry: true},
		{Code: c(protocol.QueryMessage), Name: "QUERY_MESSAGE", TopicPerm: sub, TopicField: "topic"},
		{Code: c(protocol.ViewMessageByID), Name: "VIEW_MESSAGE_BY_ID", TopicPerm: sub, Ferry: true},
		{Code: c(protocol.QueryConsumerOffset), Name: "QUERY_CONSUMER_OFFSET", TopicPerm: sub, GroupPerm: sub, TopicField: "topic", GroupField: "consumerGroup", Ferry: true},
		{Code: c(protocol.UpdateConsumerOffset), Name: "UPDATE_CONSUMER_OFFSET", TopicPerm: sub, GroupPerm: sub, TopicField: "topic", GroupField: "consumerGroup"},
		{Code: c(protocol.SearchOffsetByTimestamp), Name: "SEARCH_OFFSET_BY_TIMESTAMP", TopicPerm: sub, TopicField: "topic", Ferry: true},
		{Code: c(protocol.GetMaxOffset), Name: "GET_MAX_OFFSET", TopicPerm: sub, TopicField: "topic", Ferry: true},
		{Code: c(protocol.GetMinOffset), Name: "GET_MIN_OFFSET", TopicPerm: sub, TopicField: "topic", Ferry: true},
		{Code: c(protocol.GetEarliestMsgStoretime), Name: "GET_EARLIEST_MSG_STORETIME", TopicPerm: sub, TopicField: "topic", Ferry: true},
		{Code: c(protocol.HeartBeat), Name: "HEART_BEAT", TopicPerm: sub, GroupPerm: sub},
		{Code: c(protocol.UnregisterClient), Name: "UNREGISTER_CLIENT", GroupPerm: sub, GroupField: "consumerGroup"},
		{Code: c(protocol.ConsumerSendMsgBack), Name: "CONSUMER_SEND_MSG_BACK", GroupPerm: sub, GroupField: "group"},
		{Code: c(protocol.GetConsumerListByGroup), Name: "GET_CONSUMER_LIST_BY_GROUP", GroupPerm: sub, GroupField: "consumerGroup"},
		{Code: c(protocol.LockBatchMQ), Name: "LOCK_BATCH_MQ", TopicPerm: sub, GroupPerm: sub, Ferry: true},
		{Code: c(protocol.UnlockBatchMQ), Name: "UNLOCK_BATCH_MQ", TopicPerm: sub, GroupPerm: sub, Ferry: true},
		// Administration (RocketMQ's Permission.ADMIN_CODE, plus Ferry's additions).
		admin(c(protocol.UpdateAndCreateTopic), "UPDATE_AND_CREATE_TOPIC", false),
		admin(c(protocol.UpdateAndCreateTopicList), "UPDATE_AND_CREATE_TOPIC_LIST", true),
		admin(c(protocol.UpdateBrokerConfig), "UPDATE_BROKER_CONFIG", false),
		admin(c(protocol.GetBrokerConfig), "GET_BROKER_CONFIG", true),
		admin(codeUpdateAndCreateACLConfig, "UPDATE_AND_CREATE_ACL_CONFIG", false),
		admin(codeDeleteACLConfig, "DELETE_ACL_CONFIG", false),
		admin(codeGetBrokerClusterACLInfo, "GET_BROKER_CLUSTER_ACL_INFO", false),
		admin(codeUpdateGlobalWhiteAddrs, "UPDATE_GLOBAL_WHITE_ADDRS_CONFIG", true),
		admin(codeGetBrokerClusterACLConfig, "GET_BROKER_CLUSTER_ACL_CONFIG", true),
		admin(c(protocol.PutKVConfig), "PUT_KV_CONFIG", true),
		admin(c(protocol.DeleteKVConfig), "DELETE_KV_CONFIG", true),
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
	}
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
