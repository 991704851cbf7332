package protocol

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"
)

var (
	mqA0 = MessageQueue{Topic: "T", BrokerName: "broker-a", QueueID: 0}
	mqA1 = MessageQueue{Topic: "T", BrokerName: "broker-a", QueueID: 1}
	mqB0 = MessageQueue{Topic: "T", BrokerName: "broker-b", QueueID: 0}
)

// fastjson writes MessageQueue-keyed maps with object keys, fields sorted.
const javaTopicStats = `{"offsetTable":{{"brokerName":"broker-b","queueId":0,"topic":"T"}:{"lastUpdateTimestamp":1700000000001,"maxOffset":5,"minOffset":1},` +
	`{"brokerName":"broker-a","queueId":1,"topic":"T"}:{"lastUpdateTimestamp":0,"maxOffset":0,"minOffset":0}},"topicPutTps":1.5}`

func TestTopicStatsTable(t *testing.T) {
	got, err := DecodeTopicStatsTable([]byte(javaTopicStats))
	require.NoError(t, err)
	want := &TopicStatsTable{OffsetTable: map[MessageQueue]TopicOffset{
		mqB0: {MinOffset: 1, MaxOffset: 5, LastUpdateTimestamp: 1700000000001},
		mqA1: {},
	}, TopicPutTps: 1.5}
	require.Equal(t, want, got)

	enc, err := EncodeTopicStatsTable(got)
	require.NoError(t, err)
	require.Equal(t, `{"offsetTable":{{"brokerName":"broker-a","queueId":1,"topic":"T"}:{"lastUpdateTimestamp":0,"maxOffset":0,"minOffset":0},`+
		`{"brokerName":"broker-b","queueId":0,"topic":"T"}:{"lastUpdateTimestamp":1700000000001,"maxOffset":5,"minOffset":1}},"topicPutTps":1.5}`, string(enc))

	// Java 4.x has no topicPutTps; an empty table decodes as nil.
	got, err = DecodeTopicStatsTable([]byte(`{"offsetTable":{}}`))
	require.NoError(t, err)
	require.Equal(t, &TopicStatsTable{}, got)
	enc, err = EncodeTopicStatsTable(&TopicStatsTable{})
	require.NoError(t, err)
	require.Equal(t, `{"offsetTable":{},"topicPutTps":0}`, string(enc))

	_, err = EncodeTopicStatsTable(&TopicStatsTable{TopicPutTps: math.NaN()})
	require.ErrorIs(t, err, ErrBadBody)
}

func TestMQMapForms(t *testing.T) {
	want := &ResetOffsetBody{OffsetTable: map[MessageQueue]int64{mqA0: 100, mqB0: -1}}
	for name, body := range map[string]string{
		"fastjson": `{"offsetTable":{{"brokerName":"broker-a","queueId":0,"topic":"T"}:100,{"brokerName":"broker-b","queueId":0,"topic":"T"}:-1}}`,
		"spaced":   "{ \"offsetTable\" : { {\"topic\":\"T\", \"brokerName\":\"broker-a\",\"queueId\":0} : 100 ,\n {\"queueId\":0,\"brokerName\":\"broker-b\",\"topic\":\"T\"}:-1 } }",
		"string":   `{"offsetTable":{"{\"brokerName\":\"broker-a\",\"queueId\":0,\"topic\":\"T\"}":100,"{\"brokerName\":\"broker-b\",\"queueId\":0,\"topic\":\"T\"}":-1}}`,
		"gson":     `{"offsetTable":[[{"topic":"T","brokerName":"broker-a","queueId":0},100],[{"topic":"T","brokerName":"broker-b","queueId":0},-1]]}`,
	} {
		t.Run(name, func(t *testing.T) {
			got, err := DecodeResetOffsetBody([]byte(body))
			require.NoError(t, err)
			require.Equal(t, want, got)
		})
	}
	for name, body := range map[string]string{
		"key not an object": `{"offsetTable":{"x":1}}`,
		"bad queue id":      `{"offsetTable":{{"queueId":"0"}:1}}`,
		"bad value":         `{"offsetTable":{{"queueId":0}:"1"}}`,
		"gson triple":       `{"offsetTable":[[{"queueId":0},1,2]]}`,
		"gson bad key":      `{"offsetTable":[["q",1]]}`,
		"unbalanced key":    `{"offsetTable":{{"queueId":0:1}}`,
		"number table":      `{"offsetTable":5}`,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := DecodeResetOffsetBody([]byte(body))
			require.ErrorIs(t, err, ErrBadBody)
		})
	}
	got, err := DecodeResetOffsetBody([]byte(`{"offsetTable":null}`))
	require.NoError(t, err)
	require.Equal(t, &ResetOffsetBody{}, got)
}

// goClientResetOffsets parses a RESET_CONSUMER_CLIENT_OFFSET body the way
// the Go client does (internal/model.go ResetOffsetBody.Decode): valid JSON
// goes to its gson parser, anything else to its fastjson parser, which splits
// the raw offsetTable text on ",{" and "}:".
func goClientResetOffsets(t *testing.T, body []byte) map[MessageQueue]int64 {
	out := map[MessageQueue]int64{}
	if gjson.ValidBytes(body) {
		s := gjson.GetBytes(body, "offsetTable").String()
		require.LessOrEqual(t, len(s), 2, "only an empty table is valid JSON")
		return out
	}
	s := gjson.GetBytes(body, "offsetTable").String()
	for _, v := range strings.Split(s[2:len(s)-1], ",{") {
		tuple := strings.Split(v, "}:")
		var mq MessageQueue
		require.NoError(t, json.Unmarshal([]byte("{"+tuple[0]+"}"), &mq))
		off, err := strconv.Atoi(tuple[1])
		require.NoError(t, err)
		out[mq] = int64(off)
	}
	return out
}

func TestResetOffsetBodyGoClient(t *testing.T) {
	table := map[MessageQueue]int64{mqA0: 100, mqA1: 0, mqB0: 1 << 40}
	enc, err := EncodeResetOffsetBody(&ResetOffsetBody{OffsetTable: table})
	require.NoError(t, err)
	require.Equal(t, `{"offsetTable":{{"brokerName":"broker-a","queueId":0,"topic":"T"}:100,`+
		`{"brokerName":"broker-a","queueId":1,"topic":"T"}:0,{"brokerName":"broker-b","queueId":0,"topic":"T"}:1099511627776}}`, string(enc))
	require.Equal(t, table, goClientResetOffsets(t, enc))

	enc, err = EncodeResetOffsetBody(&ResetOffsetBody{})
	require.NoError(t, err)
	require.Equal(t, `{"offsetTable":{}}`, string(enc))
	require.Empty(t, goClientResetOffsets(t, enc))
}

func TestConsumeStats(t *testing.T) {
	java4 := `{"consumeTps":0.0,"offsetTable":{{"brokerName":"broker-a","queueId":0,"topic":"T"}:{"brokerOffset":10,"consumerOffset":8,"lastTimestamp":1700000000000}}}`
	got, err := DecodeConsumeStats([]byte(java4))
	require.NoError(t, err)
	require.Equal(t, &ConsumeStats{OffsetTable: map[MessageQueue]OffsetWrapper{
		mqA0: {BrokerOffset: 10, ConsumerOffset: 8, LastTimestamp: 1700000000000},
	}}, got)
	got.ConsumeTps = 2.25
	got.OffsetTable[mqA0] = OffsetWrapper{BrokerOffset: 10, ConsumerOffset: 8, PullOffset: 9, LastTimestamp: 1}
	enc, err := EncodeConsumeStats(got)
	require.NoError(t, err)
	require.Equal(t, `{"consumeTps":2.25,"offsetTable":{{"brokerName":"broker-a","queueId":0,"topic":"T"}:`+
		`{"brokerOffset":10,"consumerOffset":8,"lastTimestamp":1,"pullOffset":9}}}`, string(enc))
	back, err := DecodeConsumeStats(enc)
	require.NoError(t, err)
	require.Equal(t, got, back)

	_, err = EncodeConsumeStats(&ConsumeStats{ConsumeTps: math.Inf(1)})
	require.ErrorIs(t, err, ErrBadBody)
	enc, err = EncodeConsumeStats(&ConsumeStats{ConsumeTps: 1e-9})
	require.NoError(t, err)
	require.Equal(t, `{"consumeTps":1e-09,"offsetTable":{}}`, string(enc))
}

func TestConsumerStatusBody(t *testing.T) {
	b := &ConsumerStatusBody{
		MessageQueueTable: map[MessageQueue]int64{mqA0: 3},
		ConsumerTable:     map[string]map[MessageQueue]int64{"c2": {mqB0: 7}, "c1": nil},
	}
	enc, err := EncodeConsumerStatusBody(b)
	require.NoError(t, err)
	require.Equal(t, `{"consumerTable":{"c1":{},"c2":{{"brokerName":"broker-b","queueId":0,"topic":"T"}:7}},`+
		`"messageQueueTable":{{"brokerName":"broker-a","queueId":0,"topic":"T"}:3}}`, string(enc))
	got, err := DecodeConsumerStatusBody(enc)
	require.NoError(t, err)
	require.Equal(t, b, got)

	// The Go client's 221 answer.
	got, err = DecodeConsumerStatusBody([]byte(`{"messageQueueTable":{{"topic":"T","brokerName":"broker-a","queueId":0}:3}}`))
	require.NoError(t, err)
	require.Equal(t, &ConsumerStatusBody{MessageQueueTable: map[MessageQueue]int64{mqA0: 3}}, got)

	_, err = DecodeConsumerStatusBody([]byte(`{"consumerTable":{"c":{"x":1}}}`))
	require.ErrorIs(t, err, ErrBadBody)
}

func TestKVTable(t *testing.T) {
	enc, err := EncodeKVTable(&KVTable{Table: map[string]string{"b": "2", "a": "1"}})
	require.NoError(t, err)
	require.Equal(t, `{"table":{"a":"1","b":"2"}}`, string(enc))
	got, err := DecodeKVTable(enc)
	require.NoError(t, err)
	require.Equal(t, &KVTable{Table: map[string]string{"a": "1", "b": "2"}}, got)

	enc, err = EncodeKVTable(&KVTable{})
	require.NoError(t, err)
	require.Equal(t, `{"table":{}}`, string(enc))
	got, err = DecodeKVTable(enc)
	require.NoError(t, err)
	require.Equal(t, &KVTable{}, got)

	_, err = DecodeKVTable([]byte(`{"table":{"a":1}}`))
	require.ErrorIs(t, err, ErrBadBody)
}

func TestConnections(t *testing.T) {
	java := `{"connectionSet":[{"clientAddr":"10.0.0.9:50000","clientId":"10.0.0.9@4242","language":"GO","version":317}],` +
		`"consumeFromWhere":"CONSUME_FROM_LAST_OFFSET","consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING",` +
		`"subscriptionTable":{"T":{"classFilterMode":false,"codeSet":[65],"expressionType":"TAG","subString":"A","subVersion":1,"tagsSet":["A"],"topic":"T"}}}`
	got, err := DecodeConsumerConnection([]byte(java))
	require.NoError(t, err)
	want := &ConsumerConnection{
		ConnectionSet:    []Connection{{ClientAddr: "10.0.0.9:50000", ClientID: "10.0.0.9@4242", Language: "GO", Version: 317}},
		ConsumeFromWhere: ConsumeFromLastOffset, ConsumeType: ConsumePassively, MessageModel: Clustering,
		SubscriptionTable: map[string]SubscriptionData{"T": {Topic: "T", SubString: "A", TagsSet: []string{"A"},
			CodeSet: CodeSet{65}, SubVersion: 1, ExpressionType: ExpressionTag}},
	}
	require.Equal(t, want, got)
	enc, err := EncodeConsumerConnection(got)
	require.NoError(t, err)
	back, err := DecodeConsumerConnection(enc)
	require.NoError(t, err)
	require.Equal(t, want, back)

	enc, err = EncodeConsumerConnection(&ConsumerConnection{})
	require.NoError(t, err)
	require.Equal(t, `{"connectionSet":[],"subscriptionTable":{}}`, string(enc))

	p := &ProducerConnection{ConnectionSet: want.ConnectionSet}
	enc, err = EncodeProducerConnection(p)
	require.NoError(t, err)
	require.Equal(t, `{"connectionSet":[{"clientAddr":"10.0.0.9:50000","clientId":"10.0.0.9@4242","language":"GO","version":317}]}`, string(enc))
	gotP, err := DecodeProducerConnection(enc)
	require.NoError(t, err)
	require.Equal(t, p, gotP)
	enc, err = EncodeProducerConnection(&ProducerConnection{})
	require.NoError(t, err)
	require.Equal(t, `{"connectionSet":[]}`, string(enc))
}

func TestGroupList(t *testing.T) {
	enc, err := EncodeGroupList(&GroupList{GroupList: []string{"b", "a"}})
	require.NoError(t, err)
	require.Equal(t, `{"groupList":["b","a"]}`, string(enc))
	got, err := DecodeGroupList(enc)
	require.NoError(t, err)
	require.Equal(t, []string{"b", "a"}, got.GroupList)
	enc, err = EncodeGroupList(&GroupList{})
	require.NoError(t, err)
	require.Equal(t, `{"groupList":[]}`, string(enc))
	got, err = DecodeGroupList(enc)
	require.NoError(t, err)
	require.Nil(t, got.GroupList)
}

func TestLockBatchBodies(t *testing.T) {
	// What the Go client sends: no onlyThisBroker, field order topic/brokerName/queueId.
	goBody := `{"consumerGroup":"cg","clientId":"10.0.0.9@4242","mqSet":[{"topic":"T","brokerName":"broker-a","queueId":0},{"topic":"T","brokerName":"broker-b","queueId":0}]}`
	req, err := DecodeLockBatchRequestBody([]byte(goBody))
	require.NoError(t, err)
	require.Equal(t, &LockBatchRequestBody{ConsumerGroup: "cg", ClientID: "10.0.0.9@4242", MQSet: []MessageQueue{mqA0, mqB0}}, req)
	enc, err := EncodeLockBatchRequestBody(req)
	require.NoError(t, err)
	require.Equal(t, `{"consumerGroup":"cg","clientId":"10.0.0.9@4242","onlyThisBroker":false,"mqSet":[`+
		`{"topic":"T","brokerName":"broker-a","queueId":0},{"topic":"T","brokerName":"broker-b","queueId":0}]}`, string(enc))

	req, err = DecodeLockBatchRequestBody([]byte(`{"consumerGroup":"cg","clientId":"c","mqSet":null}`))
	require.NoError(t, err)
	require.Nil(t, req.MQSet)
	enc, err = EncodeLockBatchRequestBody(req)
	require.NoError(t, err)
	require.Contains(t, string(enc), `"mqSet":[]`)

	resp := &LockBatchResponseBody{LockOKMQSet: []MessageQueue{mqB0}}
	enc, err = EncodeLockBatchResponseBody(resp)
	require.NoError(t, err)
	require.Equal(t, `{"lockOKMQSet":[{"topic":"T","brokerName":"broker-b","queueId":0}]}`, string(enc))
	got, err := DecodeLockBatchResponseBody(enc)
	require.NoError(t, err)
	require.Equal(t, resp, got)
	enc, err = EncodeLockBatchResponseBody(&LockBatchResponseBody{})
	require.NoError(t, err)
	require.Equal(t, `{"lockOKMQSet":[]}`, string(enc))

	_, err = DecodeLockBatchRequestBody([]byte(`{"mqSet":[{"queueId":"x"}]}`))
	require.ErrorIs(t, err, ErrBadBody)
}

func TestSubscriptionGroupConfig(t *testing.T) {
	// A 4.x body: the 5.x fields take their defaults.
	got, err := DecodeSubscriptionGroupConfig([]byte(`{"groupName":"cg","consumeEnable":false,"retryMaxTimes":3}`))
	require.NoError(t, err)
	want := DefaultSubscriptionGroupConfig("cg")
	want.ConsumeEnable, want.RetryMaxTimes = false, 3
	require.Equal(t, &want, got)

	enc, err := EncodeSubscriptionGroupConfig(got)
	require.NoError(t, err)
	require.Equal(t, `{"groupName":"cg","consumeEnable":false,"consumeFromMinEnable":true,"consumeBroadcastEnable":true,`+
		`"consumeMessageOrderly":false,"retryQueueNums":1,"retryMaxTimes":3,"brokerId":0,"whichBrokerWhenConsumeSlowly":1,`+
		`"notifyConsumerIdsChangedEnable":true,"groupSysFlag":0,"consumeTimeoutMinute":15,"attributes":{}}`, string(enc))
	back, err := DecodeSubscriptionGroupConfig(enc)
	require.NoError(t, err)
	require.Equal(t, got, back)

	w := &SubscriptionGroupWrapper{
		SubscriptionGroupTable: map[string]SubscriptionGroupConfig{"cg": want},
		DataVersion:            DataVersion{Timestamp: 1700000000000, Counter: 1},
	}
	enc, err = EncodeSubscriptionGroupWrapper(w)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(enc), `{"dataVersion":{"stateVersion":0,"timestamp":1700000000000,"counter":1},"forbiddenTable":{},"subscriptionGroupTable":{"cg":{"groupName":"cg",`), string(enc))
	gotW, err := DecodeSubscriptionGroupWrapper(enc)
	require.NoError(t, err)
	require.Equal(t, w, gotW)

	// What the Go admin parses: counter must fit an int32.
	var goShape struct {
		SubscriptionGroupTable map[string]struct{ GroupName string } `json:"subscriptionGroupTable"`
		DataVersion            struct{ Counter int32 }               `json:"dataVersion"`
	}
	require.NoError(t, json.Unmarshal(enc, &goShape))
	require.Equal(t, "cg", goShape.SubscriptionGroupTable["cg"].GroupName)

	enc, err = EncodeSubscriptionGroupWrapper(&SubscriptionGroupWrapper{})
	require.NoError(t, err)
	gotW, err = DecodeSubscriptionGroupWrapper(enc)
	require.NoError(t, err)
	require.Equal(t, &SubscriptionGroupWrapper{}, gotW)
}

func TestTopicConfigSerializeWrapperBody(t *testing.T) {
	w := &TopicConfigSerializeWrapper{
		TopicConfigTable: map[string]TopicConfig{"T": {TopicName: "T", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6, TopicFilterType: SingleTag}},
		DataVersion:      DataVersion{Timestamp: 1, Counter: 2},
	}
	enc, err := EncodeTopicConfigSerializeWrapper(w)
	require.NoError(t, err)
	got, err := DecodeTopicConfigSerializeWrapper(enc)
	require.NoError(t, err)
	require.Equal(t, w, got)

	// Java 5.x TopicConfigAndMappingSerializeWrapper with fastjson int keys.
	java := `{"dataVersion":{"counter":2,"stateVersion":0,"timestamp":1},"mappingDataVersion":{"counter":0},` +
		`"topicConfigTable":{"T":{"attributes":{},"order":false,"perm":6,"readQueueNums":4,"topicFilterType":"SINGLE_TAG","topicName":"T","topicSysFlag":0,"writeQueueNums":4}},` +
		`"topicQueueMappingDetailMap":{},"topicQueueMappingInfoMap":{"T":{"currIdMap":{0:0}}}}`
	got, err = DecodeTopicConfigSerializeWrapper([]byte(java))
	require.NoError(t, err)
	require.Equal(t, w, got)
}

func TestConsumeMessageDirectlyResult(t *testing.T) {
	// Go client: ordinal consumeResult.
	got, err := DecodeConsumeMessageDirectlyResult([]byte(`{"order":false,"autoCommit":true,"consumeResult":1,"remark":"","spentTimeMills":4}`))
	require.NoError(t, err)
	require.Equal(t, &ConsumeMessageDirectlyResult{AutoCommit: true, ConsumeResult: CMResultLater, SpentTimeMills: 4}, got)

	// Java: enum name; absent autoCommit defaults to true.
	got, err = DecodeConsumeMessageDirectlyResult([]byte(`{"consumeResult":"CR_THROW_EXCEPTION","order":true,"remark":"boom"}`))
	require.NoError(t, err)
	require.Equal(t, &ConsumeMessageDirectlyResult{AutoCommit: true, ConsumeResult: CMResultThrowException, Order: true, Remark: "boom"}, got)

	enc, err := EncodeConsumeMessageDirectlyResult(got)
	require.NoError(t, err)
	require.Equal(t, `{"autoCommit":true,"consumeResult":"CR_THROW_EXCEPTION","order":true,"remark":"boom","spentTimeMills":0}`, string(enc))

	for i, want := range []CMResult{CMResultSuccess, CMResultLater, CMResultRollback, CMResultCommit, CMResultThrowException, CMResultReturnNull} {
		var c CMResult
		require.NoError(t, json.Unmarshal([]byte(strconv.Itoa(i)), &c))
		require.Equal(t, want, c)
	}
	for _, bad := range []string{"6", "-1", "1.5", "true"} {
		_, err := DecodeConsumeMessageDirectlyResult([]byte(`{"consumeResult":` + bad + `}`))
		require.ErrorIs(t, err, ErrBadBody, bad)
	}
	got, err = DecodeConsumeMessageDirectlyResult([]byte(`{"consumeResult":null}`))
	require.NoError(t, err)
	require.Equal(t, CMResult(""), got.ConsumeResult)
}

func TestConfigProperties(t *testing.T) {
	m := map[string]string{
		"brokerName":       "broker-a",
		"storePathRootDir": `C:\store`,
		"empty":            "",
		"a key=with:seps":  " leading and trailing ",
		"#comment":         "!x",
		"multi":            "line1\nline2\r\tx",
		"unicode":          "héllo 世界 😀",
		"ctl":              "\x00\x7f",
	}
	enc := EncodeConfigProperties(m)
	require.Contains(t, string(enc), "brokerName=broker-a\n")
	require.Contains(t, string(enc), `storePathRootDir=C:\\store`+"\n")
	require.Contains(t, string(enc), `unicode=h\u00E9llo \u4E16\u754C \uD83D\uDE00`+"\n")
	got, err := DecodeConfigProperties(enc)
	require.NoError(t, err)
	require.Equal(t, m, got)

	// What a Java broker writes (MixAll.properties2String) and Properties.load quirks.
	java := "# comment\n! also comment\n  brokerClusterName = DefaultCluster\r\n" +
		"listenPort:10911\rflushDiskType ASYNC_FLUSH\nnamesrvAddr=a:9876;\\\n    b:9876\n" +
		"spaced\\ key=v\\u0041\\t\nnoValue\n\nlast=\\\\\n"
	got, err = DecodeConfigProperties([]byte(java))
	require.NoError(t, err)
	require.Equal(t, map[string]string{
		"brokerClusterName": "DefaultCluster",
		"listenPort":        "10911",
		"flushDiskType":     "ASYNC_FLUSH",
		"namesrvAddr":       "a:9876;b:9876",
		"spaced key":        "vA\t",
		"noValue":           "",
		"last":              `\`,
	}, got)

	got, err = DecodeConfigProperties(nil)
	require.NoError(t, err)
	require.Nil(t, got)
	require.Empty(t, EncodeConfigProperties(nil))

	for _, bad := range []string{`a=\u12`, `a=\u12G4`, "a=\\u"} {
		_, err := DecodeConfigProperties([]byte(bad))
		require.ErrorIs(t, err, ErrBadBody, bad)
	}
}
