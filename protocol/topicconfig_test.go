package protocol

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRegisterBrokerBodyGolden(t *testing.T) {
	body := &RegisterBrokerBody{
		TopicConfigSerializeWrapper: TopicConfigSerializeWrapper{
			DataVersion: DataVersion{Counter: 3, Timestamp: 1700000000000},
			TopicConfigTable: map[string]TopicConfig{
				"TopicA": {TopicName: "TopicA", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6, TopicFilterType: SingleTag},
				"TBW102": {TopicName: "TBW102", ReadQueueNums: 8, WriteQueueNums: 8, Perm: 7, TopicFilterType: SingleTag,
					Attributes: map[string]string{"+message.type": "NORMAL"}},
			},
		},
	}
	got, err := EncodeRegisterBrokerBody(body)
	require.NoError(t, err)
	require.Equal(t, `{"filterServerList":[],"topicConfigSerializeWrapper":{`+
		`"dataVersion":{"stateVersion":0,"timestamp":1700000000000,"counter":3},"topicConfigTable":{`+
		`"TBW102":{"topicName":"TBW102","readQueueNums":8,"writeQueueNums":8,"perm":7,"topicFilterType":"SINGLE_TAG","topicSysFlag":0,"order":false,"attributes":{"+message.type":"NORMAL"}},`+
		`"TopicA":{"topicName":"TopicA","readQueueNums":4,"writeQueueNums":4,"perm":6,"topicFilterType":"SINGLE_TAG","topicSysFlag":0,"order":false,"attributes":{}}},`+
		`"topicQueueMappingInfoMap":{}}}`, string(got))

	back, err := DecodeRegisterBrokerBody(got)
	require.NoError(t, err)
	require.Equal(t, body, back)

	empty, err := EncodeRegisterBrokerBody(&RegisterBrokerBody{})
	require.NoError(t, err)
	require.Equal(t, `{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"stateVersion":0,"timestamp":0,"counter":0},"topicConfigTable":{},"topicQueueMappingInfoMap":{}}}`, string(empty))
	back, err = DecodeRegisterBrokerBody(empty)
	require.NoError(t, err)
	require.Equal(t, &RegisterBrokerBody{}, back)
}

// TestDecodeRegisterBrokerBodyJava decodes a body shaped like a Java 5.x
// broker's (fastjson: alphabetical keys, 5.x mapping tables with bare
// integer keys that we ignore).
func TestDecodeRegisterBrokerBodyJava(t *testing.T) {
	body := `{"filterServerList":["10.0.0.5:30000"],"topicConfigSerializeWrapper":{` +
		`"dataVersion":{"counter":12,"stateVersion":1,"timestamp":1700000000999},` +
		`"mappingDataVersion":{"counter":0,"stateVersion":0,"timestamp":1700000000000},` +
		`"topicConfigTable":{"%RETRY%cg":{"attributes":{},"order":false,"perm":6,"readQueueNums":1,` +
		`"topicFilterType":"SINGLE_TAG","topicName":"%RETRY%cg","topicSysFlag":0,"writeQueueNums":1},` +
		`"OrderTopic":{"order":true,"perm":6,"readQueueNums":2,"topicFilterType":"MULTI_TAG",` +
		`"topicName":"OrderTopic","topicSysFlag":1,"writeQueueNums":2}},` +
		`"topicQueueMappingDetailMap":{},"topicQueueMappingInfoMap":{"S":{"currIdMap":{0:0},"epoch":1}}}}`
	got, err := DecodeRegisterBrokerBody([]byte(body))
	require.NoError(t, err)
	require.Equal(t, &RegisterBrokerBody{
		FilterServerList: []string{"10.0.0.5:30000"},
		TopicConfigSerializeWrapper: TopicConfigSerializeWrapper{
			DataVersion: DataVersion{Counter: 12, StateVersion: 1, Timestamp: 1700000000999},
			TopicConfigTable: map[string]TopicConfig{
				"%RETRY%cg": {TopicName: "%RETRY%cg", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6, TopicFilterType: SingleTag},
				"OrderTopic": {TopicName: "OrderTopic", ReadQueueNums: 2, WriteQueueNums: 2, Perm: 6,
					TopicFilterType: MultiTag, TopicSysFlag: TopicSysFlagUnit, Order: true},
			},
		},
	}, got)

	tc := got.TopicConfigSerializeWrapper.TopicConfigTable["OrderTopic"]
	require.Equal(t, QueueData{BrokerName: "broker-a", ReadQueueNums: 2, WriteQueueNums: 2, Perm: 6,
		TopicSysFlag: TopicSysFlagUnit}, tc.QueueData("broker-a"))

	for _, bad := range []string{"", "x", `{"topicConfigSerializeWrapper":{"dataVersion":{"counter":"1"}}}`} {
		_, err := DecodeRegisterBrokerBody([]byte(bad))
		require.ErrorIs(t, err, ErrBadBody, bad)
	}
}
