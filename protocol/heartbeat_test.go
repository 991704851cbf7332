package protocol

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// goClientHeartbeat is the body the Go client sends (spec §5.1,
// internal/model.go heartbeatData encoded with jsoniter).
const goClientHeartbeat = `{"clientID":"10.0.0.9@4242",
 "producerDataSet":[{"groupName":"pg"}],
 "consumerDataSet":[{"groupName":"cg","consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING",
    "consumeFromWhere":"CONSUME_FROM_LAST_OFFSET",
    "subscriptionDataSet":[
      {"classFilterMode":false,"topic":"TopicTest","subString":"TagA || TagB",
       "tagsSet":["TagA","TagB"],"codeSet":["2598919","2598920"],
       "subVersion":1796010626744717623,"expressionType":"TAG"},
      {"classFilterMode":false,"topic":"%RETRY%cg","subString":"*","tagsSet":[],"codeSet":[],
       "subVersion":1796010626744722833,"expressionType":"TAG"}],
    "unitMode":false}]}`

var goClientHeartbeatDecoded = &HeartbeatData{
	ClientID:        "10.0.0.9@4242",
	ProducerDataSet: []ProducerData{{GroupName: "pg"}},
	ConsumerDataSet: []ConsumerData{{
		GroupName:        "cg",
		ConsumeType:      ConsumePassively,
		MessageModel:     Clustering,
		ConsumeFromWhere: ConsumeFromLastOffset,
		SubscriptionDataSet: []SubscriptionData{
			{Topic: "TopicTest", SubString: "TagA || TagB", TagsSet: []string{"TagA", "TagB"},
				CodeSet: CodeSet{2598919, 2598920}, SubVersion: 1796010626744717623, ExpressionType: ExpressionTag},
			{Topic: "%RETRY%cg", SubString: SubscribeAll, SubVersion: 1796010626744722833, ExpressionType: ExpressionTag},
		},
	}},
}

func TestDecodeHeartbeatGoClient(t *testing.T) {
	got, err := DecodeHeartbeatData([]byte(goClientHeartbeat))
	require.NoError(t, err)
	require.Equal(t, goClientHeartbeatDecoded, got)
	// Nanosecond subVersion survives exactly (no float64 detour).
	require.Equal(t, int64(1796010626744717623), got.ConsumerDataSet[0].SubscriptionDataSet[0].SubVersion)

	// A producer-only Go client: empty sets.
	got, err = DecodeHeartbeatData([]byte(`{"clientID":"10.0.0.9@1","producerDataSet":[{"groupName":"DEFAULT_PRODUCER"}],"consumerDataSet":[]}`))
	require.NoError(t, err)
	require.Equal(t, &HeartbeatData{ClientID: "10.0.0.9@1", ProducerDataSet: []ProducerData{{GroupName: DefaultProducerGroup}}}, got)
}

// TestDecodeHeartbeatJava decodes a Java-client body: numeric codeSet
// (including a negative hash), millisecond subVersion, alphabetical keys,
// Java-only fields and unknown extras.
func TestDecodeHeartbeatJava(t *testing.T) {
	body := `{"clientID":"192.168.1.3@12345#9876543210","consumerDataSet":[{"consumeFromWhere":"CONSUME_FROM_FIRST_OFFSET",` +
		`"consumeType":"CONSUME_ACTIVELY","groupName":"jcg","messageModel":"BROADCASTING","subscriptionDataSet":[` +
		`{"classFilterMode":false,"codeSet":[2598919,-1822575361],"expressionType":"TAG","filterClassSource":null,` +
		`"subString":"TagA || 标签","subVersion":1700000000123,"tagsSet":["TagA","标签"],"topic":"JTopic"},` +
		`{"classFilterMode":false,"codeSet":[],"expressionType":"SQL92","subString":"a > 5","subVersion":1700000000124,` +
		`"tagsSet":[],"topic":"SqlTopic"}],"unitMode":false}],"heartbeatFingerprint":-123456,` +
		`"producerDataSet":[{"groupName":"jpg"},{"groupName":"CLIENT_INNER_PRODUCER"}],"withoutSub":true,"futureField":{"x":[1,2]}}`
	got, err := DecodeHeartbeatData([]byte(body))
	require.NoError(t, err)
	require.Equal(t, &HeartbeatData{
		ClientID:             "192.168.1.3@12345#9876543210",
		ProducerDataSet:      []ProducerData{{GroupName: "jpg"}, {GroupName: ClientInnerProducerGroup}},
		HeartbeatFingerprint: -123456,
		WithoutSub:           true,
		ConsumerDataSet: []ConsumerData{{
			GroupName: "jcg", ConsumeType: ConsumeActively, MessageModel: Broadcasting,
			ConsumeFromWhere: ConsumeFromFirstOffset,
			SubscriptionDataSet: []SubscriptionData{
				{Topic: "JTopic", SubString: "TagA || 标签", TagsSet: []string{"TagA", "标签"},
					CodeSet: CodeSet{2598919, -1822575361}, SubVersion: 1700000000123, ExpressionType: ExpressionTag},
				{Topic: "SqlTopic", SubString: "a > 5", SubVersion: 1700000000124, ExpressionType: ExpressionSQL92},
			},
		}},
	}, got)
}

func TestEncodeHeartbeat(t *testing.T) {
	got, err := EncodeHeartbeatData(goClientHeartbeatDecoded)
	require.NoError(t, err)
	require.Equal(t, `{"clientID":"10.0.0.9@4242","producerDataSet":[{"groupName":"pg"}],"consumerDataSet":[`+
		`{"groupName":"cg","consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING","consumeFromWhere":"CONSUME_FROM_LAST_OFFSET","subscriptionDataSet":[`+
		`{"classFilterMode":false,"topic":"TopicTest","subString":"TagA || TagB","tagsSet":["TagA","TagB"],"codeSet":[2598919,2598920],"subVersion":1796010626744717623,"expressionType":"TAG"},`+
		`{"classFilterMode":false,"topic":"%RETRY%cg","subString":"*","tagsSet":[],"codeSet":[],"subVersion":1796010626744722833,"expressionType":"TAG"}],`+
		`"unitMode":false}]}`, string(got))

	back, err := DecodeHeartbeatData(got)
	require.NoError(t, err)
	require.Equal(t, goClientHeartbeatDecoded, back)

	empty, err := EncodeHeartbeatData(&HeartbeatData{ClientID: "c"})
	require.NoError(t, err)
	require.Equal(t, `{"clientID":"c","producerDataSet":[],"consumerDataSet":[]}`, string(empty))

	// json.Marshal of a consumer with no subscriptions writes [].
	b, err := json.Marshal(ConsumerData{GroupName: "g"})
	require.NoError(t, err)
	require.Contains(t, string(b), `"subscriptionDataSet":[]`)
}

func TestDecodeHeartbeatCodeSet(t *testing.T) {
	for body, want := range map[string]CodeSet{
		`{"consumerDataSet":[{"subscriptionDataSet":[{"codeSet":null}]}]}`:              nil,
		`{"consumerDataSet":[{"subscriptionDataSet":[{"codeSet":["1",2,"-3"]}]}]}`:      {1, 2, -3},
		`{"consumerDataSet":[{"subscriptionDataSet":[{"codeSet":[2147483647]}]}]}`:      {2147483647},
		`{"consumerDataSet":[{"subscriptionDataSet":[{"codeSet":["-2147483648"]}]}]}`:   {-2147483648},
		`{"consumerDataSet":[{"subscriptionDataSet":[{"codeSet":[ "7" , 8 ]}]}]}`:       {7, 8},
		`{"consumerDataSet":[{"subscriptionDataSet":[{"topic":"no codeSet at all"}]}]}`: nil,
	} {
		got, err := DecodeHeartbeatData([]byte(body))
		require.NoError(t, err, body)
		require.Equal(t, want, got.ConsumerDataSet[0].SubscriptionDataSet[0].CodeSet, body)
	}
	for _, body := range []string{
		`{"consumerDataSet":[{"subscriptionDataSet":[{"codeSet":["x"]}]}]}`,
		`{"consumerDataSet":[{"subscriptionDataSet":[{"codeSet":[2147483648]}]}]}`,
		`{"consumerDataSet":[{"subscriptionDataSet":[{"codeSet":[1.5]}]}]}`,
		`{"consumerDataSet":[{"subscriptionDataSet":[{"codeSet":[true]}]}]}`,
		`{"consumerDataSet":[{"subscriptionDataSet":[{"codeSet":"1"}]}]}`,
		`{"consumerDataSet":[{"subscriptionDataSet":[{"subVersion":"1"}]}]}`,
		``, `[]`, `{"clientID":1}`,
	} {
		_, err := DecodeHeartbeatData([]byte(body))
		require.ErrorIs(t, err, ErrBadBody, body)
	}
}

func TestConsumerIDList(t *testing.T) {
	got, err := EncodeConsumerIDList([]string{"10.0.0.9@4242", "10.0.0.7@99"})
	require.NoError(t, err)
	require.Equal(t, `{"consumerIdList":["10.0.0.9@4242","10.0.0.7@99"]}`, string(got))
	require.Equal(t, []string{"10.0.0.9@4242", "10.0.0.7@99"}, goClientConsumerIDs(string(got)))

	empty, err := EncodeConsumerIDList(nil)
	require.NoError(t, err)
	require.Equal(t, `{"consumerIdList":[]}`, string(empty))

	ids, err := DecodeConsumerIDList([]byte(`{"consumerIdList": ["a1", "a2", "a3"] }`))
	require.NoError(t, err)
	require.Equal(t, []string{"a1", "a2", "a3"}, ids)
	ids, err = DecodeConsumerIDList(empty)
	require.NoError(t, err)
	require.Nil(t, ids)
	_, err = DecodeConsumerIDList([]byte(`{"consumerIdList":{}}`))
	require.ErrorIs(t, err, ErrBadBody)
}
