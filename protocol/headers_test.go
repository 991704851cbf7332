package protocol

import (
	"errors"
	"maps"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/remoting"
)

func ptr[T any](v T) *T { return &v }

// headerCase describes one Header type for the shared round-trip and
// error-table tests.
type headerCase struct {
	name     string
	full     Header          // every field set to a non-zero value
	fresh    func() Header   // a new zero value of the same type
	required []string        // keys that must be present
	typed    []string        // numeric/boolean keys (required or not) that reject garbage
	absent   map[string]bool // keys that the encoder omits for the zero value
}

// fullSendHeader is a send header with every field set.
func fullSendHeader() SendMessageRequestHeader {
	return SendMessageRequestHeader{
		ProducerGroup: "pg", Topic: "TopicTest", DefaultTopic: AutoCreateTopicKey,
		DefaultTopicQueueNums: 4, QueueID: 3, SysFlag: 5, BornTimestamp: 1700000000123,
		Flag: -7, Properties: "TAGS\x01A\x02UNIQ_KEY\x01C0A8\x02", ReconsumeTimes: 2,
		UnitMode: true, MaxReconsumeTimes: 16, Batch: true, BrokerName: "broker-a",
	}
}

func headerCases() []headerCase {
	send := fullSendHeader()
	return append([]headerCase{
		{
			name: "SendMessageRequestHeader", full: ptr(send),
			fresh: func() Header { return new(SendMessageRequestHeader) },
			required: []string{"producerGroup", "topic", "defaultTopic", "defaultTopicQueueNums",
				"queueId", "sysFlag", "bornTimestamp", "flag"},
			typed: []string{"defaultTopicQueueNums", "queueId", "sysFlag", "bornTimestamp", "flag",
				"reconsumeTimes", "unitMode", "maxReconsumeTimes", "batch"},
		},
		{
			name: "SendMessageRequestHeaderV2", full: &SendMessageRequestHeaderV2{send},
			fresh:    func() Header { return new(SendMessageRequestHeaderV2) },
			required: []string{"a", "b", "c", "d", "e", "f", "g", "h"},
			typed:    []string{"d", "e", "f", "g", "h", "j", "k", "l", "m"},
		},
		{
			name: "SendMessageResponseHeader",
			full: &SendMessageResponseHeader{MsgID: "0A0000050000291100000000000003E8", QueueID: 2,
				QueueOffset: 99, TransactionID: "C0A8000100002A9F0000000000000001", MsgRegion: "DefaultRegion", TraceOn: true},
			fresh:    func() Header { return new(SendMessageResponseHeader) },
			required: []string{"msgId", "queueId", "queueOffset"},
			typed:    []string{"queueId", "queueOffset", "TRACE_ON"},
			absent:   map[string]bool{"transactionId": true, "MSG_REGION": true},
		},
		{
			name: "PullMessageRequestHeader",
			full: &PullMessageRequestHeader{ConsumerGroup: "cg", Topic: "T", QueueID: 1, QueueOffset: 1 << 40,
				MaxMsgNums: 32, SysFlag: PullFlagSuspend | PullFlagSubscription, CommitOffset: 12,
				SuspendTimeoutMillis: 20000, Subscription: "TagA || TagB", SubVersion: 1796010626744717623,
				ExpressionType: ExpressionTag, MaxMsgBytes: 1 << 20, RequestSource: -1,
				ProxyForwardClientID: "proxy-1", BrokerName: "broker-a"},
			fresh: func() Header { return new(PullMessageRequestHeader) },
			required: []string{"consumerGroup", "topic", "queueId", "queueOffset", "maxMsgNums",
				"sysFlag", "commitOffset", "suspendTimeoutMillis", "subVersion"},
			typed: []string{"queueId", "queueOffset", "maxMsgNums", "sysFlag", "commitOffset",
				"suspendTimeoutMillis", "subVersion", "maxMsgBytes", "requestSource"},
			absent: map[string]bool{"subscription": true, "expressionType": true, "maxMsgBytes": true,
				"requestSource": true, "proxyFrowardClientId": true, "bname": true},
		},
		{
			name:     "PullMessageResponseHeader",
			full:     &PullMessageResponseHeader{NextBeginOffset: 10, MinOffset: 1, MaxOffset: 11, SuggestWhichBrokerID: 1},
			fresh:    func() Header { return new(PullMessageResponseHeader) },
			required: []string{"nextBeginOffset", "minOffset", "maxOffset", "suggestWhichBrokerId"},
			typed:    []string{"nextBeginOffset", "minOffset", "maxOffset", "suggestWhichBrokerId"},
		},
		{
			name:     "GetRouteInfoRequestHeader",
			full:     &GetRouteInfoRequestHeader{Topic: "TopicTest", AcceptStandardJSONOnly: true},
			fresh:    func() Header { return new(GetRouteInfoRequestHeader) },
			required: []string{"topic"},
			typed:    []string{"acceptStandardJsonOnly"},
			absent:   map[string]bool{"acceptStandardJsonOnly": true},
		},
		{
			name: "RegisterBrokerRequestHeader",
			full: &RegisterBrokerRequestHeader{BrokerName: "broker-a", BrokerAddr: "10.0.0.5:10911",
				ClusterName: "DefaultCluster", HAServerAddr: "10.0.0.5:10912", BrokerID: 1,
				HeartbeatTimeoutMillis: 60000, EnableActingMaster: true, Compressed: true,
				BodyCrc32: 123456789, ZoneName: "zone-1", MasterEpoch: 3},
			fresh:    func() Header { return new(RegisterBrokerRequestHeader) },
			required: []string{"brokerName", "brokerAddr", "clusterName", "haServerAddr", "brokerId"},
			typed: []string{"brokerId", "heartbeatTimeoutMillis", "enableActingMaster", "compressed",
				"bodyCrc32", "ferryMasterEpoch"},
			absent: map[string]bool{"heartbeatTimeoutMillis": true, "enableActingMaster": true, "__ZONE_NAME": true,
				"ferryMasterEpoch": true},
		},
		{
			name:   "RegisterBrokerResponseHeader",
			full:   &RegisterBrokerResponseHeader{HAServerAddr: "10.0.0.5:10912", MasterAddr: "10.0.0.5:10911", MasterEpoch: 2},
			fresh:  func() Header { return new(RegisterBrokerResponseHeader) },
			typed:  []string{"ferryMasterEpoch"},
			absent: map[string]bool{"haServerAddr": true, "masterAddr": true, "ferryMasterEpoch": true},
		},
		{
			name: "UnregisterBrokerRequestHeader",
			full: &UnregisterBrokerRequestHeader{BrokerName: "broker-a", BrokerAddr: "10.0.0.5:10911",
				ClusterName: "DefaultCluster", BrokerID: 2},
			fresh:    func() Header { return new(UnregisterBrokerRequestHeader) },
			required: []string{"brokerName", "brokerAddr", "clusterName", "brokerId"},
			typed:    []string{"brokerId"},
		},
		{
			name:     "ConsumerListRequestHeader",
			full:     &ConsumerListRequestHeader{ConsumerGroup: "cg"},
			fresh:    func() Header { return new(ConsumerListRequestHeader) },
			required: []string{"consumerGroup"},
		},
		{
			name: "QueryConsumerOffsetRequestHeader",
			full: &QueryConsumerOffsetRequestHeader{ConsumerGroup: "cg", Topic: "T", QueueID: 3,
				SetZeroIfNotFound: ptr(false), BrokerName: "broker-a"},
			fresh:    func() Header { return new(QueryConsumerOffsetRequestHeader) },
			required: []string{"consumerGroup", "topic", "queueId"},
			typed:    []string{"queueId", "setZeroIfNotFound"},
			absent:   map[string]bool{"setZeroIfNotFound": true, "bname": true},
		},
		{
			name: "UpdateConsumerOffsetRequestHeader",
			full: &UpdateConsumerOffsetRequestHeader{ConsumerGroup: "cg", Topic: "T", QueueID: 3,
				CommitOffset: -1, BrokerName: "broker-a"},
			fresh:    func() Header { return new(UpdateConsumerOffsetRequestHeader) },
			required: []string{"consumerGroup", "topic", "queueId", "commitOffset"},
			typed:    []string{"queueId", "commitOffset"},
			absent:   map[string]bool{"bname": true},
		},
		{
			name:     "GetMaxOffsetRequestHeader",
			full:     &GetMaxOffsetRequestHeader{Topic: "T", QueueID: 7, Committed: ptr(true), BrokerName: "broker-a"},
			fresh:    func() Header { return new(GetMaxOffsetRequestHeader) },
			required: []string{"topic", "queueId"},
			typed:    []string{"queueId", "committed"},
			absent:   map[string]bool{"committed": true, "bname": true},
		},
		{
			name:     "GetMinOffsetRequestHeader",
			full:     &GetMinOffsetRequestHeader{Topic: "T", QueueID: 7, BrokerName: "broker-a"},
			fresh:    func() Header { return new(GetMinOffsetRequestHeader) },
			required: []string{"topic", "queueId"},
			typed:    []string{"queueId"},
			absent:   map[string]bool{"bname": true},
		},
		{
			name: "SearchOffsetRequestHeader",
			full: &SearchOffsetRequestHeader{Topic: "T", QueueID: 7, Timestamp: 1700000000000,
				BoundaryType: BoundaryUpper, BrokerName: "broker-a"},
			fresh:    func() Header { return new(SearchOffsetRequestHeader) },
			required: []string{"topic", "queueId", "timestamp"},
			typed:    []string{"queueId", "timestamp"},
			absent:   map[string]bool{"boundaryType": true, "bname": true},
		},
		{
			name:     "GetEarliestMsgStoretimeRequestHeader",
			full:     &GetEarliestMsgStoretimeRequestHeader{Topic: "T", QueueID: 7, BrokerName: "broker-a"},
			fresh:    func() Header { return new(GetEarliestMsgStoretimeRequestHeader) },
			required: []string{"topic", "queueId"},
			typed:    []string{"queueId"},
			absent:   map[string]bool{"bname": true},
		},
		{
			name:     "OffsetResponseHeader",
			full:     &OffsetResponseHeader{Offset: 1<<62 + 5},
			fresh:    func() Header { return new(OffsetResponseHeader) },
			required: []string{"offset"},
			typed:    []string{"offset"},
		},
		{
			name:     "GetEarliestMsgStoretimeResponseHeader",
			full:     &GetEarliestMsgStoretimeResponseHeader{Timestamp: 1700000000000},
			fresh:    func() Header { return new(GetEarliestMsgStoretimeResponseHeader) },
			required: []string{"timestamp"},
			typed:    []string{"timestamp"},
		},
	}, append(append(moreHeaderCases(), writePermHeaderCases()...), cancelHeaderCases()...)...)
}

func TestHeaderRoundTrip(t *testing.T) {
	for _, tc := range headerCases() {
		t.Run(tc.name, func(t *testing.T) {
			ext := NewExt(tc.full)
			got := tc.fresh()
			require.NoError(t, got.DecodeExt(ext))
			require.Equal(t, tc.full, got)

			// The zero value round-trips too, and omits exactly the optional keys.
			zero := tc.fresh()
			zext := NewExt(zero)
			for k := range tc.absent {
				require.NotContains(t, zext.Map(), k)
				require.Contains(t, ext.Map(), k, "full header should write %q", k)
			}
			for _, k := range tc.required {
				require.Contains(t, zext.Map(), k)
			}
			got = tc.fresh()
			require.NoError(t, got.DecodeExt(zext))
			require.Equal(t, zero, got)

			// Decoding resets fields the ext does not mention.
			got = tc.fresh()
			require.NoError(t, got.DecodeExt(ext))
			require.NoError(t, got.DecodeExt(zext))
			require.Equal(t, zero, got)
		})
	}
}

func TestHeaderEncodeReusesMap(t *testing.T) {
	ext := remoting.ExtOf(map[string]string{"opaqueKey": "kept", "topic": "old"})
	(&GetMinOffsetRequestHeader{Topic: "new", QueueID: 1}).EncodeExt(&ext)
	require.Equal(t, map[string]string{"opaqueKey": "kept", "topic": "new", "queueId": "1"}, ext.Map())
	require.Equal(t, 3, ext.Len(), "existing keys are replaced, not repeated")
}

func TestHeaderIgnoresUnknownKeys(t *testing.T) {
	for _, tc := range headerCases() {
		t.Run(tc.name, func(t *testing.T) {
			ext := NewExt(tc.full)
			ext.Set("ns", "x")
			ext.Set("AccessKey", "ak")
			ext.Set("Signature", "sig")
			ext.Set("lo", "true")
			got := tc.fresh()
			require.NoError(t, got.DecodeExt(ext))
			require.Equal(t, tc.full, got)
		})
	}
}

func TestHeaderMissingRequired(t *testing.T) {
	for _, tc := range headerCases() {
		for _, key := range tc.required {
			t.Run(tc.name+"/"+key, func(t *testing.T) {
				ext := NewExt(tc.full)
				ext.Delete(key)
				err := tc.fresh().DecodeExt(ext)
				require.Error(t, err)
				require.ErrorIs(t, err, ErrMissingField)
				require.NotErrorIs(t, err, ErrBadField)
				var fe *FieldError
				require.ErrorAs(t, err, &fe)
				require.Equal(t, key, fe.Field)
				require.Contains(t, err.Error(), `"`+key+`"`)
			})
		}
		t.Run(tc.name+"/empty-map", func(t *testing.T) {
			err := tc.fresh().DecodeExt(remoting.Ext{})
			if len(tc.required) == 0 {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrMissingField)
			var fe *FieldError
			require.ErrorAs(t, err, &fe)
			require.Equal(t, tc.required[0], fe.Field, "the first missing field is reported")
		})
		t.Run(tc.name+"/nil-map", func(t *testing.T) {
			err := tc.fresh().DecodeExt(nil)
			if len(tc.required) == 0 {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, ErrMissingField)
			}
		})
	}
}

func TestHeaderBadValues(t *testing.T) {
	bad := []string{"abc", "1.5", " 1", "0x10", "9223372036854775808", "yes", "1e3"}
	for _, tc := range headerCases() {
		for _, key := range tc.typed {
			for _, v := range bad {
				t.Run(tc.name+"/"+key+"="+v, func(t *testing.T) {
					ext := NewExt(tc.full)
					ext.Set(key, v)
					err := tc.fresh().DecodeExt(ext)
					require.Error(t, err)
					require.ErrorIs(t, err, ErrBadField)
					require.NotErrorIs(t, err, ErrMissingField)
					var fe *FieldError
					require.ErrorAs(t, err, &fe)
					require.Equal(t, key, fe.Field)
					require.Equal(t, v, fe.Value)
				})
			}
		}
	}
}

func TestHeaderNumberRanges(t *testing.T) {
	var h PullMessageRequestHeader
	ext := NewExt(&PullMessageRequestHeader{})
	ext.Set("queueId", "2147483648") // > int32
	require.ErrorIs(t, h.DecodeExt(ext), ErrBadField)
	ext.Set("queueId", "-2147483648")
	ext.Set("queueOffset", "9223372036854775807")
	ext.Set("commitOffset", "+5") // Java's Long.parseLong accepts a sign too
	require.NoError(t, h.DecodeExt(ext))
	require.Equal(t, int32(-2147483648), h.QueueID)
	require.Equal(t, int64(9223372036854775807), h.QueueOffset)
	require.Equal(t, int64(5), h.CommitOffset)
}

func TestHeaderEmptyValues(t *testing.T) {
	// An empty numeric value counts as missing (Java's binary codec turns ""
	// into null); an empty required string is present.
	ext := NewExt(&OffsetResponseHeader{Offset: 1})
	ext.Set("offset", "")
	require.ErrorIs(t, new(OffsetResponseHeader).DecodeExt(ext), ErrMissingField)

	var q QueryConsumerOffsetRequestHeader
	require.NoError(t, q.DecodeExt(remoting.ExtOf(map[string]string{
		"consumerGroup": "", "topic": "", "queueId": "0", "setZeroIfNotFound": "",
	})))
	require.Nil(t, q.SetZeroIfNotFound)
	require.True(t, q.ZeroIfNotFound())
}

func TestHeaderBoolCaseInsensitive(t *testing.T) {
	for v, want := range map[string]bool{"true": true, "TRUE": true, "True": true, "false": false, "FALSE": false, "fAlSe": false} {
		var h SendMessageResponseHeader
		require.NoError(t, h.DecodeExt(remoting.ExtOf(map[string]string{"msgId": "x", "queueId": "0", "queueOffset": "0", "TRACE_ON": v})))
		require.Equal(t, want, h.TraceOn, v)
	}
}

func TestOptionalBoolDefaults(t *testing.T) {
	var q QueryConsumerOffsetRequestHeader
	require.NoError(t, q.DecodeExt(remoting.ExtOf(map[string]string{"consumerGroup": "g", "topic": "t", "queueId": "1"})))
	require.Nil(t, q.SetZeroIfNotFound)
	require.True(t, q.ZeroIfNotFound())
	require.NoError(t, q.DecodeExt(remoting.ExtOf(map[string]string{"consumerGroup": "g", "topic": "t", "queueId": "1", "setZeroIfNotFound": "false"})))
	require.False(t, q.ZeroIfNotFound())

	var m GetMaxOffsetRequestHeader
	require.NoError(t, m.DecodeExt(remoting.ExtOf(map[string]string{"topic": "t", "queueId": "1"})))
	require.Nil(t, m.Committed)
}

func TestFieldErrorMessages(t *testing.T) {
	err := error(&FieldError{Field: "queueId", Err: ErrMissingField})
	require.Equal(t, `protocol: missing required ext field "queueId"`, err.Error())
	err = &FieldError{Field: "queueId", Value: "abc", Err: ErrBadField}
	require.Equal(t, `protocol: malformed ext field "queueId": value "abc"`, err.Error())
	require.True(t, errors.Is(err, ErrBadField))

	long := &FieldError{Field: "f", Value: string(make([]byte, 500)), Err: ErrBadField}
	require.Less(t, len(long.Error()), 500)
}

func TestPullFlags(t *testing.T) {
	h := PullMessageRequestHeader{SysFlag: 3}
	require.True(t, h.HasFlag(PullFlagCommitOffset))
	require.True(t, h.HasFlag(PullFlagCommitOffset|PullFlagSuspend))
	require.False(t, h.HasFlag(PullFlagSubscription))
	require.Equal(t, []int32{1, 2, 4, 8, 16},
		[]int32{PullFlagCommitOffset, PullFlagSuspend, PullFlagSubscription, PullFlagClassFilter, PullFlagLitePull})
}

// TestGoClientPullHeaderDecodes decodes the ext map the Go push consumer
// sends (internal/request.go PullMessageRequestHeader.Encode writes every key,
// including empty ones).
func TestGoClientPullHeaderDecodes(t *testing.T) {
	ext := map[string]string{
		"consumerGroup": "cg", "topic": "TopicTest", "queueId": "2", "queueOffset": "17",
		"maxMsgNums": "32", "sysFlag": "3", "commitOffset": "16", "suspendTimeoutMillis": "20000",
		"subscription": "", "subVersion": "0", "expressionType": "TAG", "bname": "broker-a",
	}
	var h PullMessageRequestHeader
	require.NoError(t, h.DecodeExt(remoting.ExtOf(ext)))
	require.Equal(t, PullMessageRequestHeader{
		ConsumerGroup: "cg", Topic: "TopicTest", QueueID: 2, QueueOffset: 17, MaxMsgNums: 32,
		SysFlag: 3, CommitOffset: 16, SuspendTimeoutMillis: 20000, ExpressionType: ExpressionTag,
		BrokerName: "broker-a",
	}, h)

	// Re-encoding keeps every non-empty value the client sent.
	out := NewExt(&h)
	want := maps.Clone(ext)
	delete(want, "subscription")
	require.Equal(t, want, out.Map())
}
