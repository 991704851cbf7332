package protocol

import (
	"fmt"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// allRequestCodes and allResponseCodes list every named code with its
// RocketMQ name and value; TestCodesMatchSpec cross-checks them by hand.
var allRequestCodes = []struct {
	code RequestCode
	name string
	val  int16
}{
	{SendMessage, "SEND_MESSAGE", 10},
	{PullMessage, "PULL_MESSAGE", 11},
	{QueryMessage, "QUERY_MESSAGE", 12},
	{QueryBrokerOffset, "QUERY_BROKER_OFFSET", 13},
	{QueryConsumerOffset, "QUERY_CONSUMER_OFFSET", 14},
	{UpdateConsumerOffset, "UPDATE_CONSUMER_OFFSET", 15},
	{UpdateAndCreateTopic, "UPDATE_AND_CREATE_TOPIC", 17},
	{UpdateAndCreateTopicList, "UPDATE_AND_CREATE_TOPIC_LIST", 18},
	{GetAllTopicConfig, "GET_ALL_TOPIC_CONFIG", 21},
	{UpdateBrokerConfig, "UPDATE_BROKER_CONFIG", 25},
	{GetBrokerConfig, "GET_BROKER_CONFIG", 26},
	{GetBrokerRuntimeInfo, "GET_BROKER_RUNTIME_INFO", 28},
	{SearchOffsetByTimestamp, "SEARCH_OFFSET_BY_TIMESTAMP", 29},
	{GetMaxOffset, "GET_MAX_OFFSET", 30},
	{GetMinOffset, "GET_MIN_OFFSET", 31},
	{GetEarliestMsgStoretime, "GET_EARLIEST_MSG_STORETIME", 32},
	{ViewMessageByID, "VIEW_MESSAGE_BY_ID", 33},
	{HeartBeat, "HEART_BEAT", 34},
	{UnregisterClient, "UNREGISTER_CLIENT", 35},
	{ConsumerSendMsgBack, "CONSUMER_SEND_MSG_BACK", 36},
	{EndTransaction, "END_TRANSACTION", 37},
	{GetAllConsumerOffset, "GET_ALL_CONSUMER_OFFSET", 43},
	{GetAllDelayOffset, "GET_ALL_DELAY_OFFSET", 45},
	{GetConsumerListByGroup, "GET_CONSUMER_LIST_BY_GROUP", 38},
	{CheckTransactionState, "CHECK_TRANSACTION_STATE", 39},
	{NotifyConsumerIDsChanged, "NOTIFY_CONSUMER_IDS_CHANGED", 40},
	{LockBatchMQ, "LOCK_BATCH_MQ", 41},
	{UnlockBatchMQ, "UNLOCK_BATCH_MQ", 42},
	{CheckClientConfig, "CHECK_CLIENT_CONFIG", 46},
	{PutKVConfig, "PUT_KV_CONFIG", 100},
	{GetKVConfig, "GET_KV_CONFIG", 101},
	{DeleteKVConfig, "DELETE_KV_CONFIG", 102},
	{RegisterBroker, "REGISTER_BROKER", 103},
	{UnregisterBroker, "UNREGISTER_BROKER", 104},
	{GetRouteInfoByTopic, "GET_ROUTEINFO_BY_TOPIC", 105},
	{GetBrokerClusterInfo, "GET_BROKER_CLUSTER_INFO", 106},
	{UpdateAndCreateSubscriptionGroup, "UPDATE_AND_CREATE_SUBSCRIPTIONGROUP", 200},
	{GetAllSubscriptionGroupConfig, "GET_ALL_SUBSCRIPTIONGROUP_CONFIG", 201},
	{GetTopicStatsInfo, "GET_TOPIC_STATS_INFO", 202},
	{GetConsumerConnectionList, "GET_CONSUMER_CONNECTION_LIST", 203},
	{GetProducerConnectionList, "GET_PRODUCER_CONNECTION_LIST", 204},
	{WipeWritePermOfBroker, "WIPE_WRITE_PERM_OF_BROKER", 205},
	{GetAllTopicListFromNameServer, "GET_ALL_TOPIC_LIST_FROM_NAMESERVER", 206},
	{DeleteSubscriptionGroup, "DELETE_SUBSCRIPTIONGROUP", 207},
	{GetConsumeStats, "GET_CONSUME_STATS", 208},
	{DeleteTopicInBroker, "DELETE_TOPIC_IN_BROKER", 215},
	{DeleteTopicInNameSrv, "DELETE_TOPIC_IN_NAMESRV", 216},
	{GetKVListByNamespace, "GET_KVLIST_BY_NAMESPACE", 219},
	{ResetConsumerClientOffset, "RESET_CONSUMER_CLIENT_OFFSET", 220},
	{GetConsumerStatusFromClient, "GET_CONSUMER_STATUS_FROM_CLIENT", 221},
	{InvokeBrokerToResetOffset, "INVOKE_BROKER_TO_RESET_OFFSET", 222},
	{InvokeBrokerToGetConsumerStatus, "INVOKE_BROKER_TO_GET_CONSUMER_STATUS", 223},
	{GetTopicsByCluster, "GET_TOPICS_BY_CLUSTER", 224},
	{QueryTopicConsumeByWho, "QUERY_TOPIC_CONSUME_BY_WHO", 300},
	{GetSystemTopicListFromNS, "GET_SYSTEM_TOPIC_LIST_FROM_NS", 304},
	{GetConsumerRunningInfo, "GET_CONSUMER_RUNNING_INFO", 307},
	{ConsumeMessageDirectly, "CONSUME_MESSAGE_DIRECTLY", 309},
	{SendMessageV2, "SEND_MESSAGE_V2", 310},
	{ViewBrokerStatsData, "VIEW_BROKER_STATS_DATA", 315},
	{UpdateNamesrvConfig, "UPDATE_NAMESRV_CONFIG", 318},
	{GetNamesrvConfig, "GET_NAMESRV_CONFIG", 319},
	{SendBatchMessage, "SEND_BATCH_MESSAGE", 320},
	{QueryConsumeQueue, "QUERY_CONSUME_QUEUE", 321},
	{QueryDataVersion, "QUERY_DATA_VERSION", 322},
	{SendReplyMessage, "SEND_REPLY_MESSAGE", 324},
	{SendReplyMessageV2, "SEND_REPLY_MESSAGE_V2", 325},
	{PushReplyMessageToClient, "PUSH_REPLY_MESSAGE_TO_CLIENT", 326},
	{AddWritePermOfBroker, "ADD_WRITE_PERM_OF_BROKER", 327},
	{GetTopicConfig, "GET_TOPIC_CONFIG", 351},
	{LitePullMessage, "LITE_PULL_MESSAGE", 361},
	{BrokerHeartbeat, "BROKER_HEARTBEAT", 904},
	{ControllerAlterSyncStateSet, "CONTROLLER_ALTER_SYNC_STATE_SET", 1001},
	{ControllerElectMaster, "CONTROLLER_ELECT_MASTER", 1002},
	{ControllerRegisterBroker, "CONTROLLER_REGISTER_BROKER", 1003},
	{ControllerGetReplicaInfo, "CONTROLLER_GET_REPLICA_INFO", 1004},
	{ControllerGetMetadataInfo, "CONTROLLER_GET_METADATA_INFO", 1005},
	{GetBrokerEpochCache, "GET_BROKER_EPOCH_CACHE", 1007},
}

var allResponseCodes = []struct {
	code ResponseCode
	name string
	val  int16
}{
	{Success, "SUCCESS", 0},
	{SystemError, "SYSTEM_ERROR", 1},
	{SystemBusy, "SYSTEM_BUSY", 2},
	{RequestCodeNotSupported, "REQUEST_CODE_NOT_SUPPORTED", 3},
	{FlushDiskTimeout, "FLUSH_DISK_TIMEOUT", 10},
	{SlaveNotAvailable, "SLAVE_NOT_AVAILABLE", 11},
	{FlushSlaveTimeout, "FLUSH_SLAVE_TIMEOUT", 12},
	{MessageIllegal, "MESSAGE_ILLEGAL", 13},
	{ServiceNotAvailable, "SERVICE_NOT_AVAILABLE", 14},
	{VersionNotSupported, "VERSION_NOT_SUPPORTED", 15},
	{NoPermission, "NO_PERMISSION", 16},
	{TopicNotExist, "TOPIC_NOT_EXIST", 17},
	{TopicExistAlready, "TOPIC_EXIST_ALREADY", 18},
	{PullNotFound, "PULL_NOT_FOUND", 19},
	{PullRetryImmediately, "PULL_RETRY_IMMEDIATELY", 20},
	{PullOffsetMoved, "PULL_OFFSET_MOVED", 21},
	{QueryNotFound, "QUERY_NOT_FOUND", 22},
	{SubscriptionParseFailed, "SUBSCRIPTION_PARSE_FAILED", 23},
	{SubscriptionNotExist, "SUBSCRIPTION_NOT_EXIST", 24},
	{SubscriptionNotLatest, "SUBSCRIPTION_NOT_LATEST", 25},
	{SubscriptionGroupNotExist, "SUBSCRIPTION_GROUP_NOT_EXIST", 26},
	{FilterDataNotExist, "FILTER_DATA_NOT_EXIST", 27},
	{FilterDataNotLatest, "FILTER_DATA_NOT_LATEST", 28},
	{InvalidParameter, "INVALID_PARAMETER", 29},
	{TransactionShouldCommit, "TRANSACTION_SHOULD_COMMIT", 200},
	{TransactionShouldRollback, "TRANSACTION_SHOULD_ROLLBACK", 201},
	{TransactionStateUnknow, "TRANSACTION_STATE_UNKNOW", 202},
	{TransactionStateGroupWrong, "TRANSACTION_STATE_GROUP_WRONG", 203},
	{ConsumerNotOnline, "CONSUMER_NOT_ONLINE", 206},
	{NoMessage, "NO_MESSAGE", 208},
	{FlowControl, "FLOW_CONTROL", 215},
	{IllegalOperation, "ILLEGAL_OPERATION", 604},
	{ControllerFencedMasterEpoch, "CONTROLLER_FENCED_MASTER_EPOCH", 2000},
	{ControllerFencedSyncStateSetEpoch, "CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH", 2001},
	{ControllerInvalidMaster, "CONTROLLER_INVALID_MASTER", 2002},
	{ControllerInvalidReplicas, "CONTROLLER_INVALID_REPLICAS", 2003},
	{ControllerMasterNotAvailable, "CONTROLLER_MASTER_NOT_AVAILABLE", 2004},
	{ControllerInvalidRequest, "CONTROLLER_INVALID_REQUEST", 2005},
	{ControllerBrokerNotAlive, "CONTROLLER_BROKER_NOT_ALIVE", 2006},
	{ControllerNotLeader, "CONTROLLER_NOT_LEADER", 2007},
	{ControllerBrokerMetadataNotExist, "CONTROLLER_BROKER_METADATA_NOT_EXIST", 2008},
	{ControllerInvalidCleanBrokerMetadata, "CONTROLLER_INVALID_CLEAN_BROKER_METADATA", 2009},
	{ControllerBrokerNeedToBeRegistered, "CONTROLLER_BROKER_NEED_TO_BE_REGISTERED", 2010},
	{ControllerMasterStillExist, "CONTROLLER_MASTER_STILL_EXIST", 2011},
	{ControllerElectMasterFailed, "CONTROLLER_ELECT_MASTER_FAILED", 2012},
	{ControllerAlterSyncStateSetFailed, "CONTROLLER_ALTER_SYNC_STATE_SET_FAILED", 2013},
	{ControllerBrokerIDInvalid, "CONTROLLER_BROKER_ID_INVALID", 2014},
}

// TestCompatibilityListsEveryCode keeps docs/compatibility.md's request-code table
// complete: every request code Ferry names has a row.
func TestCompatibilityListsEveryCode(t *testing.T) {
	doc, err := os.ReadFile("../docs/compatibility.md")
	require.NoError(t, err)
	for _, c := range allRequestCodes {
		row := fmt.Sprintf("\n| %d | %s", c.val, c.name)
		require.Contains(t, string(doc), row, "docs/compatibility.md has no row for %d %s", c.val, c.name)
	}
}
