package protocol

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRequestCodeNames(t *testing.T) {
	names := map[string]bool{}
	values := map[RequestCode]bool{}
	for _, c := range allRequestCodes {
		require.Equal(t, c.val, int16(c.code), c.name)
		require.Equal(t, c.name, c.code.String())
		require.True(t, c.code.Known(), c.name)
		require.False(t, names[c.name], "duplicate name %s", c.name)
		require.False(t, values[c.code], "duplicate value %d", c.code)
		names[c.name], values[c.code] = true, true
	}
	require.Equal(t, "RequestCode(9999)", RequestCode(9999).String())
	require.False(t, RequestCode(9999).Known())
	require.Equal(t, "RequestCode(-1)", RequestCode(-1).String())
}

func TestResponseCodeNames(t *testing.T) {
	names := map[string]bool{}
	values := map[ResponseCode]bool{}
	for _, c := range allResponseCodes {
		require.Equal(t, c.val, int16(c.code), c.name)
		require.Equal(t, c.name, c.code.String())
		require.True(t, c.code.Known(), c.name)
		require.False(t, names[c.name], "duplicate name %s", c.name)
		require.False(t, values[c.code], "duplicate value %d", c.code)
		names[c.name], values[c.code] = true, true
	}
	require.Equal(t, "ResponseCode(4)", ResponseCode(4).String())
	require.False(t, ResponseCode(4).Known())
}

// TestCodesMatchSpec spot-checks values against the tables of spec §2 (and
// the Go client's internal/request.go constants), independent of the
// generated table above.
func TestCodesMatchSpec(t *testing.T) {
	req := map[RequestCode]int16{
		SendMessage: 10, PullMessage: 11, QueryMessage: 12, QueryConsumerOffset: 14,
		UpdateConsumerOffset: 15, UpdateAndCreateTopic: 17, SearchOffsetByTimestamp: 29,
		GetMaxOffset: 30, GetMinOffset: 31, GetEarliestMsgStoretime: 32, ViewMessageByID: 33,
		HeartBeat: 34, UnregisterClient: 35, ConsumerSendMsgBack: 36, EndTransaction: 37,
		GetConsumerListByGroup: 38, CheckTransactionState: 39, NotifyConsumerIDsChanged: 40,
		LockBatchMQ: 41, UnlockBatchMQ: 42, GetAllConsumerOffset: 43, GetAllDelayOffset: 45, CheckClientConfig: 46, RegisterBroker: 103,
		UnregisterBroker: 104, GetRouteInfoByTopic: 105, GetBrokerClusterInfo: 106,
		GetAllSubscriptionGroupConfig: 201, GetAllTopicListFromNameServer: 206,
		DeleteTopicInBroker: 215, DeleteTopicInNameSrv: 216, ResetConsumerClientOffset: 220,
		GetConsumerStatusFromClient: 221, GetConsumerRunningInfo: 307, ConsumeMessageDirectly: 309,
		SendMessageV2: 310, SendBatchMessage: 320, QueryDataVersion: 322, BrokerHeartbeat: 904,
		SendReplyMessage: 324, SendReplyMessageV2: 325, PushReplyMessageToClient: 326,
		LitePullMessage: 361, GetBrokerRuntimeInfo: 28, GetTopicStatsInfo: 202, GetConsumeStats: 208,
		GetConsumerConnectionList: 203, GetProducerConnectionList: 204,
		UpdateAndCreateSubscriptionGroup: 200, DeleteSubscriptionGroup: 207,
		InvokeBrokerToResetOffset: 222, InvokeBrokerToGetConsumerStatus: 223,
		QueryTopicConsumeByWho: 300, GetAllTopicConfig: 21, GetTopicConfig: 351,
		GetBrokerConfig: 26, UpdateBrokerConfig: 25, QueryConsumeQueue: 321,
	}
	for c, v := range req {
		require.Equal(t, v, int16(c), c.String())
	}
	resp := map[ResponseCode]int16{
		Success: 0, SystemError: 1, SystemBusy: 2, RequestCodeNotSupported: 3,
		FlushDiskTimeout: 10, SlaveNotAvailable: 11, FlushSlaveTimeout: 12, MessageIllegal: 13,
		ServiceNotAvailable: 14, VersionNotSupported: 15, NoPermission: 16, TopicNotExist: 17,
		TopicExistAlready: 18, PullNotFound: 19, PullRetryImmediately: 20, PullOffsetMoved: 21,
		QueryNotFound: 22, SubscriptionParseFailed: 23, SubscriptionNotExist: 24,
		SubscriptionNotLatest: 25, SubscriptionGroupNotExist: 26, FilterDataNotExist: 27,
		FilterDataNotLatest: 28, InvalidParameter: 29, TransactionShouldCommit: 200,
		TransactionShouldRollback: 201, TransactionStateUnknow: 202, TransactionStateGroupWrong: 203,
		ConsumerNotOnline: 206, NoMessage: 208, FlowControl: 215, IllegalOperation: 604,
	}
	for c, v := range resp {
		require.Equal(t, v, int16(c), c.String())
	}
	require.Equal(t, "SEND_MESSAGE", SendMessage.String())
	require.Equal(t, "GET_ROUTEINFO_BY_TOPIC", GetRouteInfoByTopic.String())
	require.Equal(t, "PULL_NOT_FOUND", PullNotFound.String())
	require.Equal(t, "REQUEST_CODE_NOT_SUPPORTED", RequestCodeNotSupported.String())
}
