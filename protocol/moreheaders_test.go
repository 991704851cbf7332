package protocol

import (
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/remoting"
)

// moreHeaderCases covers the transaction, lookup, consumer, admin,
// name-server admin and client-command headers in the shared header tests
// (round trip, unknown keys, missing and malformed fields, fuzzing).
func moreHeaderCases() []headerCase {
	return []headerCase{
		{
			name: "EndTransactionRequestHeader",
			full: &EndTransactionRequestHeader{ProducerGroup: "pg", TranStateTableOffset: 17, CommitLogOffset: 1 << 33,
				CommitOrRollback: TransactionCommit, FromTransactionCheck: true, MsgID: "C0A8000100002A9F0000000000000001",
				TransactionID: "tx-1", Topic: "T", BrokerName: "broker-a"},
			fresh: func() Header { return new(EndTransactionRequestHeader) },
			required: []string{"producerGroup", "tranStateTableOffset", "commitLogOffset", "commitOrRollback",
				"msgId"},
			typed:  []string{"tranStateTableOffset", "commitLogOffset", "commitOrRollback", "fromTransactionCheck"},
			absent: map[string]bool{"transactionId": true, "topic": true, "bname": true},
		},
		{
			name: "CheckTransactionStateRequestHeader",
			full: &CheckTransactionStateRequestHeader{TranStateTableOffset: 5, CommitLogOffset: 4096,
				MsgID: "uniq", TransactionID: "tx", OffsetMsgID: "0A0000050000291100000000000003E8",
				Topic: TransHalfTopic, BrokerName: "broker-a"},
			fresh:    func() Header { return new(CheckTransactionStateRequestHeader) },
			required: []string{"tranStateTableOffset", "commitLogOffset"},
			typed:    []string{"tranStateTableOffset", "commitLogOffset"},
			absent: map[string]bool{"msgId": true, "transactionId": true, "offsetMsgId": true, "topic": true,
				"bname": true},
		},
		{
			name: "QueryMessageRequestHeader",
			full: &QueryMessageRequestHeader{Topic: "T", Key: "order-1", MaxNum: 32, BeginTimestamp: 1700000000000,
				EndTimestamp: 1700000600000, UniqueKeyQuery: true},
			fresh:    func() Header { return new(QueryMessageRequestHeader) },
			required: []string{"topic", "key", "maxNum", "beginTimestamp", "endTimestamp"},
			typed:    []string{"maxNum", "beginTimestamp", "endTimestamp", "_UNIQUE_KEY_QUERY"},
			absent:   map[string]bool{"_UNIQUE_KEY_QUERY": true},
		},
		{
			name:     "QueryMessageResponseHeader",
			full:     &QueryMessageResponseHeader{IndexLastUpdateTimestamp: 1700000000000, IndexLastUpdatePhyoffset: 1 << 40},
			fresh:    func() Header { return new(QueryMessageResponseHeader) },
			required: []string{"indexLastUpdateTimestamp", "indexLastUpdatePhyoffset"},
			typed:    []string{"indexLastUpdateTimestamp", "indexLastUpdatePhyoffset"},
		},
		{
			name:     "ViewBrokerStatsDataRequestHeader",
			full:     &ViewBrokerStatsDataRequestHeader{StatsName: StatsGroupGetNums, StatsKey: "T@g"},
			fresh:    func() Header { return new(ViewBrokerStatsDataRequestHeader) },
			required: []string{"statsName", "statsKey"},
		},
		{
			name:     "ViewMessageRequestHeader",
			full:     &ViewMessageRequestHeader{Offset: 123456, Topic: "T"},
			fresh:    func() Header { return new(ViewMessageRequestHeader) },
			required: []string{"offset"},
			typed:    []string{"offset"},
			absent:   map[string]bool{"topic": true},
		},
		{
			name: "ConsumerSendMsgBackRequestHeader",
			full: &ConsumerSendMsgBackRequestHeader{Offset: 9999, Group: "cg", DelayLevel: -1, OriginMsgID: "m1",
				OriginTopic: "T", UnitMode: true, MaxReconsumeTimes: ptr(int32(16)), BrokerName: "broker-a"},
			fresh:    func() Header { return new(ConsumerSendMsgBackRequestHeader) },
			required: []string{"offset", "group", "delayLevel"},
			typed:    []string{"offset", "delayLevel", "unitMode", "maxReconsumeTimes"},
			absent: map[string]bool{"originMsgId": true, "originTopic": true, "unitMode": true,
				"maxReconsumeTimes": true, "bname": true},
		},
		{
			name:     "UnregisterClientRequestHeader",
			full:     &UnregisterClientRequestHeader{ClientID: "10.0.0.9@4242", ProducerGroup: "pg", ConsumerGroup: "cg"},
			fresh:    func() Header { return new(UnregisterClientRequestHeader) },
			required: []string{"clientID"},
			absent:   map[string]bool{"producerGroup": true, "consumerGroup": true},
		},
		{
			name:     "NotifyConsumerIDsChangedRequestHeader",
			full:     &NotifyConsumerIDsChangedRequestHeader{ConsumerGroup: "cg"},
			fresh:    func() Header { return new(NotifyConsumerIDsChangedRequestHeader) },
			required: []string{"consumerGroup"},
		},
		{
			name: "CreateTopicRequestHeader",
			full: &CreateTopicRequestHeader{Topic: "T", DefaultTopic: "defaultTopic", ReadQueueNums: 8,
				WriteQueueNums: 4, Perm: PermRead | PermWrite, TopicFilterType: MultiTag, TopicSysFlag: 1,
				Order: true, Attributes: "+message.type=NORMAL", Force: true},
			fresh: func() Header { return new(CreateTopicRequestHeader) },
			required: []string{"topic", "defaultTopic", "readQueueNums", "writeQueueNums", "perm",
				"topicFilterType", "order"},
			typed:  []string{"readQueueNums", "writeQueueNums", "perm", "topicSysFlag", "order", "force"},
			absent: map[string]bool{"topicSysFlag": true, "attributes": true, "force": true},
		},
		{
			name:     "DeleteTopicRequestHeader",
			full:     &DeleteTopicRequestHeader{Topic: "T"},
			fresh:    func() Header { return new(DeleteTopicRequestHeader) },
			required: []string{"topic"},
		},
		{
			name:     "DeleteTopicFromNamesrvRequestHeader",
			full:     &DeleteTopicFromNamesrvRequestHeader{Topic: "T", ClusterName: "DefaultCluster"},
			fresh:    func() Header { return new(DeleteTopicFromNamesrvRequestHeader) },
			required: []string{"topic"},
			absent:   map[string]bool{"clusterName": true},
		},
		{
			name:     "GetBrokerConfigResponseHeader",
			full:     &GetBrokerConfigResponseHeader{Version: `{"counter":2,"stateVersion":0,"timestamp":1700000000000}`},
			fresh:    func() Header { return new(GetBrokerConfigResponseHeader) },
			required: []string{"version"},
		},
		{
			name:     "GetTopicStatsInfoRequestHeader",
			full:     &GetTopicStatsInfoRequestHeader{Topic: "T"},
			fresh:    func() Header { return new(GetTopicStatsInfoRequestHeader) },
			required: []string{"topic"},
		},
		{
			name:     "GetConsumeStatsRequestHeader",
			full:     &GetConsumeStatsRequestHeader{ConsumerGroup: "cg", Topic: "T", TopicList: "T;U"},
			fresh:    func() Header { return new(GetConsumeStatsRequestHeader) },
			required: []string{"consumerGroup"},
			absent:   map[string]bool{"topic": true, "topicList": true},
		},
		{
			name:     "GetConsumerConnectionListRequestHeader",
			full:     &GetConsumerConnectionListRequestHeader{ConsumerGroup: "cg"},
			fresh:    func() Header { return new(GetConsumerConnectionListRequestHeader) },
			required: []string{"consumerGroup"},
		},
		{
			name:     "GetProducerConnectionListRequestHeader",
			full:     &GetProducerConnectionListRequestHeader{ProducerGroup: "pg"},
			fresh:    func() Header { return new(GetProducerConnectionListRequestHeader) },
			required: []string{"producerGroup"},
		},
		{
			name:     "DeleteSubscriptionGroupRequestHeader",
			full:     &DeleteSubscriptionGroupRequestHeader{GroupName: "cg", CleanOffset: true},
			fresh:    func() Header { return new(DeleteSubscriptionGroupRequestHeader) },
			required: []string{"groupName"},
			typed:    []string{"cleanOffset", "removeOffset"},
			absent:   map[string]bool{"cleanOffset": true, "removeOffset": true},
		},
		{
			name:     "QueryTopicConsumeByWhoRequestHeader",
			full:     &QueryTopicConsumeByWhoRequestHeader{Topic: "T"},
			fresh:    func() Header { return new(QueryTopicConsumeByWhoRequestHeader) },
			required: []string{"topic"},
		},
		{
			name: "ResetOffsetRequestHeader",
			full: &ResetOffsetRequestHeader{Topic: "T", Group: "cg", Timestamp: 1700000000000, IsForce: true,
				QueueID: ptr(int32(3)), Offset: ptr(int64(42))},
			fresh:    func() Header { return new(ResetOffsetRequestHeader) },
			required: []string{"topic", "group", "timestamp", "isForce"},
			typed:    []string{"timestamp", "isForce", "queueId", "offset"},
			absent:   map[string]bool{"queueId": true, "offset": true},
		},
		{
			name: "ReplyMessageRequestHeader",
			full: &ReplyMessageRequestHeader{ProducerGroup: "pg", Topic: "DefaultCluster_REPLY_TOPIC", DefaultTopic: "TBW102",
				DefaultTopicQueueNums: 4, QueueID: 0, SysFlag: 1, BornTimestamp: 1700000000000, Flag: 2,
				Properties: "CORRELATION_ID\x01c1\x02", ReconsumeTimes: 1, UnitMode: true, BornHost: "127.0.0.1:5000",
				StoreHost: "127.0.0.1:10911", StoreTimestamp: 1700000000001},
			fresh: func() Header { return new(ReplyMessageRequestHeader) },
			typed: []string{"defaultTopicQueueNums", "queueId", "sysFlag", "bornTimestamp", "flag", "reconsumeTimes",
				"unitMode", "storeTimestamp"},
		},
		{
			name:     "GetConsumerStatusRequestHeader",
			full:     &GetConsumerStatusRequestHeader{Topic: "T", Group: "cg", ClientAddr: "10.0.0.9:50000"},
			fresh:    func() Header { return new(GetConsumerStatusRequestHeader) },
			required: []string{"topic", "group"},
			absent:   map[string]bool{"clientAddr": true},
		},
		{
			name:     "GetConsumerRunningInfoRequestHeader",
			full:     &GetConsumerRunningInfoRequestHeader{ConsumerGroup: "cg", ClientID: "10.0.0.9@4242", JstackEnable: true},
			fresh:    func() Header { return new(GetConsumerRunningInfoRequestHeader) },
			required: []string{"consumerGroup", "clientId"},
			typed:    []string{"jstackEnable"},
			absent:   map[string]bool{"jstackEnable": true},
		},
		{
			name: "ConsumeMessageDirectlyResultRequestHeader",
			full: &ConsumeMessageDirectlyResultRequestHeader{ConsumerGroup: "cg", ClientID: "10.0.0.9@4242",
				MsgID: "0A0000050000291100000000000003E8", BrokerName: "broker-a", Topic: "T",
				TopicSysFlag: 1, GroupSysFlag: 2},
			fresh:    func() Header { return new(ConsumeMessageDirectlyResultRequestHeader) },
			required: []string{"consumerGroup"},
			typed:    []string{"topicSysFlag", "groupSysFlag"},
			absent: map[string]bool{"clientId": true, "msgId": true, "brokerName": true, "topic": true,
				"topicSysFlag": true, "groupSysFlag": true},
		},
		{
			name:     "GetTopicsByClusterRequestHeader",
			full:     &GetTopicsByClusterRequestHeader{Cluster: "DefaultCluster"},
			fresh:    func() Header { return new(GetTopicsByClusterRequestHeader) },
			required: []string{"cluster"},
		},
		{
			name:     "PutKVConfigRequestHeader",
			full:     &PutKVConfigRequestHeader{Namespace: "ORDER_TOPIC_CONFIG", Key: "T", Value: "broker-a:4"},
			fresh:    func() Header { return new(PutKVConfigRequestHeader) },
			required: []string{"namespace", "key", "value"},
		},
		{
			name:     "GetKVConfigRequestHeader",
			full:     &GetKVConfigRequestHeader{Namespace: "ORDER_TOPIC_CONFIG", Key: "T"},
			fresh:    func() Header { return new(GetKVConfigRequestHeader) },
			required: []string{"namespace", "key"},
		},
		{
			name:   "GetKVConfigResponseHeader",
			full:   &GetKVConfigResponseHeader{Value: "broker-a:4"},
			fresh:  func() Header { return new(GetKVConfigResponseHeader) },
			absent: map[string]bool{"value": true},
		},
		{
			name:     "DeleteKVConfigRequestHeader",
			full:     &DeleteKVConfigRequestHeader{Namespace: "ORDER_TOPIC_CONFIG", Key: "T"},
			fresh:    func() Header { return new(DeleteKVConfigRequestHeader) },
			required: []string{"namespace", "key"},
		},
		{
			name:     "GetKVListByNamespaceRequestHeader",
			full:     &GetKVListByNamespaceRequestHeader{Namespace: "ORDER_TOPIC_CONFIG"},
			fresh:    func() Header { return new(GetKVListByNamespaceRequestHeader) },
			required: []string{"namespace"},
		},
	}
}

// extOf builds an extFields container from key/value pairs; a repeated key
// keeps its last value.
func extOf(kv ...string) remoting.Ext {
	ext := make(remoting.Ext, 0, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		ext.Set(kv[i], kv[i+1])
	}
	return ext
}

// extValue reads one key of an extFields container.
func extValue(ext remoting.Ext, key string) (string, bool) {
	return ext.Get(key)
}

// requireExt checks that ext holds key with value want.
func requireExt(t *testing.T, ext remoting.Ext, key, want string) {
	t.Helper()
	v, ok := extValue(ext, key)
	require.True(t, ok, "missing %q", key)
	require.Equal(t, want, v, key)
}

// TestGoClientHeadersDecode decodes the ext maps the official Go client
// writes (internal/request.go), every key included even when empty.
func TestGoClientHeadersDecode(t *testing.T) {
	var end EndTransactionRequestHeader
	require.NoError(t, end.DecodeExt(extOf("producerGroup", "pg", "tranStateTableOffset", "3",
		"commitLogOffset", "4096", "commitOrRollback", "8", "fromTransactionCheck", "false",
		"msgId", "C0A80001", "transactionId", "", "bname", "broker-a")))
	require.Equal(t, EndTransactionRequestHeader{ProducerGroup: "pg", TranStateTableOffset: 3, CommitLogOffset: 4096,
		CommitOrRollback: TransactionCommit, MsgID: "C0A80001", BrokerName: "broker-a"}, end)

	var back ConsumerSendMsgBackRequestHeader
	require.NoError(t, back.DecodeExt(extOf("group", "cg", "offset", "777", "delayLevel", "0",
		"originMsgId", "m", "originTopic", "T", "unitMode", "false", "maxReconsumeTimes", "16", "bname", "b")))
	require.Equal(t, ConsumerSendMsgBackRequestHeader{Offset: 777, Group: "cg", OriginMsgID: "m", OriginTopic: "T",
		MaxReconsumeTimes: ptr(int32(16)), BrokerName: "b"}, back)

	var q QueryMessageRequestHeader
	require.NoError(t, q.DecodeExt(extOf("topic", "T", "key", "k", "maxNum", "32", "beginTimestamp", "1",
		"endTimestamp", "2")))
	require.False(t, q.UniqueKeyQuery)

	var ct CreateTopicRequestHeader
	require.NoError(t, ct.DecodeExt(extOf("topic", "newOne", "defaultTopic", "defaultTopic", "readQueueNums", "8",
		"writeQueueNums", "8", "perm", "6", "topicFilterType", "SINGLE_TAG", "topicSysFlag", "0", "order", "false")))
	require.Equal(t, TopicConfig{TopicName: "newOne", ReadQueueNums: 8, WriteQueueNums: 8, Perm: 6,
		TopicFilterType: SingleTag}, ct.TopicConfig())
}

// TestCheckTransactionStateGoClient checks that what a broker encodes is what
// the Go client's CheckTransactionStateRequestHeader.Decode reads.
func TestCheckTransactionStateGoClient(t *testing.T) {
	h := CheckTransactionStateRequestHeader{TranStateTableOffset: 5, CommitLogOffset: 4096, MsgID: "u",
		TransactionID: "u", OffsetMsgID: "0A0000050000291100000000000003E8", Topic: TransHalfTopic, BrokerName: "b"}
	ext := NewExt(&h)
	requireExt(t, ext, "tranStateTableOffset", "5")
	requireExt(t, ext, "commitLogOffset", "4096")
	requireExt(t, ext, "msgId", "u")
	requireExt(t, ext, "transactionId", "u")
	requireExt(t, ext, "offsetMsgId", "0A0000050000291100000000000003E8")
}

func TestDeleteSubscriptionGroupOffsetKeys(t *testing.T) {
	for _, tc := range []struct {
		ext  remoting.Ext
		want bool
	}{
		{extOf("groupName", "g"), false},
		{extOf("groupName", "g", "cleanOffset", "true"), true},  // Java 5.x
		{extOf("groupName", "g", "removeOffset", "true"), true}, // Java 4.x
		{extOf("groupName", "g", "cleanOffset", "false", "removeOffset", "true"), true},
		{extOf("groupName", "g", "cleanOffset", "false", "removeOffset", "false"), false},
	} {
		var h DeleteSubscriptionGroupRequestHeader
		require.NoError(t, h.DecodeExt(tc.ext))
		require.Equal(t, tc.want, h.CleanOffset, "%v", tc.ext)
	}
	ext := NewExt(&DeleteSubscriptionGroupRequestHeader{GroupName: "g", CleanOffset: true})
	require.Equal(t, extOf("groupName", "g", "cleanOffset", "true", "removeOffset", "true").Map(), ext.Map())
}

func TestResetOffsetQueue(t *testing.T) {
	var h ResetOffsetRequestHeader
	base := []string{"topic", "T", "group", "g", "timestamp", "1", "isForce", "false"}
	require.NoError(t, h.DecodeExt(extOf(base...)))
	_, ok := h.Queue()
	require.False(t, ok)
	require.Nil(t, h.Offset)

	require.NoError(t, h.DecodeExt(extOf(append(base, "queueId", "-1")...))) // Java 5.x "every queue"
	_, ok = h.Queue()
	require.False(t, ok)

	require.NoError(t, h.DecodeExt(extOf(append(base, "queueId", "2", "offset", "9")...)))
	q, ok := h.Queue()
	require.True(t, ok)
	require.Equal(t, int32(2), q)
	require.Equal(t, int64(9), *h.Offset)
}

func TestQueryMessageUniqueKeyFlag(t *testing.T) {
	h := QueryMessageRequestHeader{Topic: "T", Key: "K", MaxNum: 1, UniqueKeyQuery: true}
	requireExt(t, NewExt(&h), "_UNIQUE_KEY_QUERY", "true")
	h.UniqueKeyQuery = false
	_, ok := extValue(NewExt(&h), "_UNIQUE_KEY_QUERY")
	require.False(t, ok)
}

func TestGetConsumeStatsTopics(t *testing.T) {
	require.Nil(t, (&GetConsumeStatsRequestHeader{}).Topics())
	require.Equal(t, []string{"A", "B"}, (&GetConsumeStatsRequestHeader{TopicList: ";A;;B;"}).Topics())
}

func TestCreateTopicDefaultFilterType(t *testing.T) {
	h := CreateTopicRequestHeader{Topic: "T", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6}
	require.Equal(t, SingleTag, h.TopicConfig().TopicFilterType)
}

func TestBrokerConfigVersion(t *testing.T) {
	var h GetBrokerConfigResponseHeader
	dv := DataVersion{Timestamp: 1700000000000, Counter: 7}
	h.SetDataVersion(dv)
	got, err := h.DataVersion()
	require.NoError(t, err)
	require.Equal(t, dv, got)

	// Java's DataVersion JSON (fastjson, alphabetical) decodes too.
	h.Version = `{"counter":7,"stateVersion":0,"timestamp":1700000000000}`
	got, err = h.DataVersion()
	require.NoError(t, err)
	require.Equal(t, dv, got)

	h.Version = "not json"
	_, err = h.DataVersion()
	require.ErrorIs(t, err, ErrBadBody)
}

// TestAllHeadersHaveCases makes sure every type of this package with a
// DecodeExt method is in the shared header table, so the round-trip, error
// and fuzz tests see it.
func TestAllHeadersHaveCases(t *testing.T) {
	cases := map[string]bool{}
	for _, tc := range headerCases() {
		require.False(t, cases[tc.name], "duplicate case %s", tc.name)
		cases[tc.name] = true
	}
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	headers := map[string]bool{}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		require.NoError(t, err)
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv == nil || fn.Name.Name != "DecodeExt" {
				continue
			}
			star, ok := fn.Recv.List[0].Type.(*ast.StarExpr)
			require.True(t, ok, "DecodeExt of %v needs a pointer receiver", fn.Recv.List[0].Type)
			headers[star.X.(*ast.Ident).Name] = true
		}
	}
	require.Equal(t, slices.Sorted(maps.Keys(headers)), slices.Sorted(maps.Keys(cases)))
}
