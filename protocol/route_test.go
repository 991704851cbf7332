package protocol

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func sampleRoute() *TopicRouteData {
	return &TopicRouteData{
		QueueDatas: []QueueData{
			{BrokerName: "broker-b", ReadQueueNums: 8, WriteQueueNums: 8, Perm: 6},
			{BrokerName: "broker-a", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6},
		},
		BrokerDatas: []BrokerData{
			{Cluster: "DefaultCluster", BrokerName: "broker-b",
				BrokerAddrs: map[int64]string{10: "10.0.0.8:10911", 2: "10.0.0.7:10911", 0: "10.0.0.6:10911"}},
			{Cluster: "DefaultCluster", BrokerName: "broker-a",
				BrokerAddrs: map[int64]string{0: "10.0.0.5:10911"}},
		},
	}
}

const sampleRouteJSON = `{"brokerDatas":[` +
	`{"brokerAddrs":{"0":"10.0.0.5:10911"},"brokerName":"broker-a","cluster":"DefaultCluster","enableActingMaster":false},` +
	`{"brokerAddrs":{"0":"10.0.0.6:10911","2":"10.0.0.7:10911","10":"10.0.0.8:10911"},"brokerName":"broker-b","cluster":"DefaultCluster","enableActingMaster":false}],` +
	`"filterServerTable":{},` +
	`"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4},` +
	`{"brokerName":"broker-b","perm":6,"readQueueNums":8,"topicSysFlag":0,"writeQueueNums":8}]}`

func TestEncodeTopicRouteDataGolden(t *testing.T) {
	r := sampleRoute()
	before := *sampleRoute()
	got, err := EncodeTopicRouteData(r)
	require.NoError(t, err)
	require.Equal(t, sampleRouteJSON, string(got))
	require.Equal(t, before, *r, "the encoder must not reorder the caller's slices")

	// Compact: json.Compact changes nothing; valid standard JSON.
	var compact bytes.Buffer
	require.NoError(t, json.Compact(&compact, got))
	require.Equal(t, string(got), compact.String())
	require.True(t, json.Valid(got))

	// json.Marshal of the value uses the same encoder.
	viaMarshal, err := json.Marshal(r)
	require.NoError(t, err)
	require.Equal(t, sampleRouteJSON, string(viaMarshal))

	// Deterministic.
	again, err := EncodeTopicRouteData(r)
	require.NoError(t, err)
	require.Equal(t, got, again)
}

func TestEncodeTopicRouteDataEmpty(t *testing.T) {
	got, err := EncodeTopicRouteData(&TopicRouteData{})
	require.NoError(t, err)
	require.Equal(t, `{"brokerDatas":[],"filterServerTable":{},"queueDatas":[]}`, string(got))

	got, err = EncodeTopicRouteData(&TopicRouteData{
		OrderTopicConf: "broker-a:4;broker-b:4",
		BrokerDatas: []BrokerData{{Cluster: "c", BrokerName: "b", EnableActingMaster: true,
			ZoneName: "z1", BrokerAddrs: map[int64]string{}}},
	})
	require.NoError(t, err)
	require.Equal(t, `{"brokerDatas":[{"brokerAddrs":{},"brokerName":"b","cluster":"c","enableActingMaster":true,"zoneName":"z1"}],`+
		`"filterServerTable":{},"orderTopicConf":"broker-a:4;broker-b:4","queueDatas":[]}`, string(got))

	// The Go client's parser copes with {} (and would panic without brokerAddrs).
	r, err := goClientDecodeRoute(string(got))
	require.NoError(t, err)
	require.Len(t, r.Brokers, 1)
	require.Empty(t, r.Brokers[0].BrokerAddresses)
	require.Equal(t, "broker-a:4;broker-b:4", r.OrderTopicConf)
}

func TestEncodeTopicRouteDataRejectsUnsafeAddresses(t *testing.T) {
	for _, addr := range []string{"", " 10.0.0.1:1", "10.0.0.1:1,2", `a"b:1`, "a\\b:1", "a\tb", "ü:1", "a\n"} {
		r := &TopicRouteData{BrokerDatas: []BrokerData{{BrokerName: "b", BrokerAddrs: map[int64]string{0: addr}}}}
		_, err := EncodeTopicRouteData(r)
		require.ErrorIs(t, err, ErrBadBody, "%q", addr)
		_, err = json.Marshal(r)
		require.Error(t, err, "%q", addr)
	}
	// IPv6 is fine: the client splits at the first ':' (after the quoted id).
	r := &TopicRouteData{BrokerDatas: []BrokerData{{BrokerName: "b", BrokerAddrs: map[int64]string{0: "[::1]:10911"}}}}
	got, err := EncodeTopicRouteData(r)
	require.NoError(t, err)
	gr, err := goClientDecodeRoute(string(got))
	require.NoError(t, err)
	require.Equal(t, "[::1]:10911", gr.Brokers[0].BrokerAddresses[0])
}

func TestEncodeTopicRouteDataEscapesNames(t *testing.T) {
	r := &TopicRouteData{
		BrokerDatas: []BrokerData{{Cluster: "c\"1", BrokerName: "b\\<x>\x01é", BrokerAddrs: map[int64]string{0: "h:1"}}},
		QueueDatas:  []QueueData{{BrokerName: "b\\<x>\x01é", Perm: 6}},
	}
	got, err := EncodeTopicRouteData(r)
	require.NoError(t, err)
	require.True(t, json.Valid(got), string(got))
	back, err := DecodeTopicRouteData(got)
	require.NoError(t, err)
	require.Equal(t, r, back)
	gr, err := goClientDecodeRoute(string(got))
	require.NoError(t, err)
	require.Equal(t, "b\\<x>\x01é", gr.Brokers[0].BrokerName)
	require.Equal(t, "c\"1", gr.Brokers[0].Cluster)
}

// TestGoClientParsesOurRoute runs the Go client's route parsing algorithm on
// our output and checks it recovers every address and queue exactly.
func TestGoClientParsesOurRoute(t *testing.T) {
	body, err := EncodeTopicRouteData(sampleRoute())
	require.NoError(t, err)
	r, err := goClientDecodeRoute(string(body))
	require.NoError(t, err)

	require.Equal(t, "", r.OrderTopicConf)
	require.Len(t, r.Queues, 2)
	require.Equal(t, goRouteQueue{BrokerName: "broker-a", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6}, *r.Queues[0])
	require.Equal(t, goRouteQueue{BrokerName: "broker-b", ReadQueueNums: 8, WriteQueueNums: 8, Perm: 6}, *r.Queues[1])
	require.Len(t, r.Brokers, 2)
	require.Equal(t, goRouteBroker{Cluster: "DefaultCluster", BrokerName: "broker-a",
		BrokerAddresses: map[int64]string{0: "10.0.0.5:10911"}}, *r.Brokers[0])
	require.Equal(t, goRouteBroker{Cluster: "DefaultCluster", BrokerName: "broker-b",
		BrokerAddresses: map[int64]string{0: "10.0.0.6:10911", 2: "10.0.0.7:10911", 10: "10.0.0.8:10911"}}, *r.Brokers[1])
}

// TestGoClientParserNeedsCompactAddrs documents why compactness matters: an
// indented brokerAddrs yields addresses with leading spaces.
func TestGoClientParserNeedsCompactAddrs(t *testing.T) {
	r, err := goClientDecodeRoute(`{"queueDatas":[],"brokerDatas":[{"brokerName":"b","brokerAddrs":{"0": "a:1"}}]}`)
	require.NoError(t, err)
	require.Equal(t, " a:1", r.Brokers[0].BrokerAddresses[0])
}

func TestDecodeTopicRouteData(t *testing.T) {
	got, err := DecodeTopicRouteData([]byte(sampleRouteJSON))
	require.NoError(t, err)
	want := sampleRoute()
	want.QueueDatas[0], want.QueueDatas[1] = want.QueueDatas[1], want.QueueDatas[0]
	want.BrokerDatas[0], want.BrokerDatas[1] = want.BrokerDatas[1], want.BrokerDatas[0]
	require.Equal(t, want, got)

	// Round trip: encode(decode(x)) == x for our own output.
	again, err := EncodeTopicRouteData(got)
	require.NoError(t, err)
	require.Equal(t, sampleRouteJSON, string(again))
}

// TestDecodeTopicRouteDataFastjson decodes the non-standard form a Java name
// server sends to old clients: bare integer keys, plus fields we ignore.
func TestDecodeTopicRouteDataFastjson(t *testing.T) {
	body := `{"brokerDatas":[{"brokerAddrs":{0:"10.0.0.5:10911",1:"10.0.0.6:10911"},"brokerName":"broker-a",` +
		`"cluster":"DefaultCluster","enableActingMaster":false}],"filterServerTable":{},` +
		`"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}],` +
		`"topicQueueMappingByBroker":{"broker-a":{"bname":"broker-a","currIdMap":{0:0,1:1}}}}`
	got, err := DecodeTopicRouteData([]byte(body))
	require.NoError(t, err)
	require.Equal(t, &TopicRouteData{
		QueueDatas: []QueueData{{BrokerName: "broker-a", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6}},
		BrokerDatas: []BrokerData{{Cluster: "DefaultCluster", BrokerName: "broker-a",
			BrokerAddrs: map[int64]string{0: "10.0.0.5:10911", 1: "10.0.0.6:10911"}}},
	}, got)
	require.Equal(t, "10.0.0.5:10911", got.BrokerDatas[0].MasterAddr())

	// Spaces around bare keys, pretty-printed input, negative ids.
	got, err = DecodeTopicRouteData([]byte("{\n \"brokerDatas\" : [ { \"brokerAddrs\" : { 0 : \"a:1\" , -1 : \"b:2\" } } ] }"))
	require.NoError(t, err)
	require.Equal(t, map[int64]string{0: "a:1", -1: "b:2"}, got.BrokerDatas[0].BrokerAddrs)
}

func TestDecodeTopicRouteDataNormalizesEmpty(t *testing.T) {
	got, err := DecodeTopicRouteData([]byte(`{"brokerDatas":[{"brokerAddrs":{},"brokerName":"b"}],"queueDatas":[]}`))
	require.NoError(t, err)
	require.Nil(t, got.QueueDatas)
	require.Nil(t, got.BrokerDatas[0].BrokerAddrs)
	require.Equal(t, "", got.BrokerDatas[0].MasterAddr())
}

func TestDecodeTopicRouteDataErrors(t *testing.T) {
	for _, body := range []string{
		"", "   ", "null", "[]", `"x"`, "{", `{"queueDatas":[{"perm":"6"}]}`,
		`{"brokerDatas":[{"brokerAddrs":{"x":"a:1"}}]}`, `{"brokerDatas":[{"brokerAddrs":{1.5:"a:1"}}]}`,
		`{"queueDatas":[{"readQueueNums":4294967296}]}`, `{} trailing`,
	} {
		_, err := DecodeTopicRouteData([]byte(body))
		require.ErrorIs(t, err, ErrBadBody, "%q", body)
	}
}

func TestClusterInfo(t *testing.T) {
	ci := &ClusterInfo{
		BrokerAddrTable: map[string]BrokerData{
			"broker-b": {Cluster: "c1", BrokerName: "broker-b", BrokerAddrs: map[int64]string{0: "10.0.0.6:10911"}},
			"broker-a": {Cluster: "c1", BrokerName: "broker-a"},
		},
		ClusterAddrTable: map[string][]string{"c1": {"broker-b", "broker-a", "broker-b"}, "c0": nil},
	}
	got, err := EncodeClusterInfo(ci)
	require.NoError(t, err)
	const want = `{"brokerAddrTable":{` +
		`"broker-a":{"brokerAddrs":{},"brokerName":"broker-a","cluster":"c1","enableActingMaster":false},` +
		`"broker-b":{"brokerAddrs":{"0":"10.0.0.6:10911"},"brokerName":"broker-b","cluster":"c1","enableActingMaster":false}},` +
		`"clusterAddrTable":{"c0":[],"c1":["broker-a","broker-b"]}}`
	require.Equal(t, want, string(got))
	require.Equal(t, []string{"broker-b", "broker-a", "broker-b"}, ci.ClusterAddrTable["c1"], "input untouched")

	viaMarshal, err := json.Marshal(ci)
	require.NoError(t, err)
	require.Equal(t, want, string(viaMarshal))

	back, err := DecodeClusterInfo(got)
	require.NoError(t, err)
	require.Equal(t, &ClusterInfo{
		BrokerAddrTable: map[string]BrokerData{
			"broker-b": {Cluster: "c1", BrokerName: "broker-b", BrokerAddrs: map[int64]string{0: "10.0.0.6:10911"}},
			"broker-a": {Cluster: "c1", BrokerName: "broker-a"},
		},
		ClusterAddrTable: map[string][]string{"c1": {"broker-a", "broker-b"}, "c0": nil},
	}, back)

	// fastjson form from a Java name server.
	back, err = DecodeClusterInfo([]byte(`{"brokerAddrTable":{"broker-a":{"brokerAddrs":{0:"h:1"},"brokerName":"broker-a","cluster":"c1"}},"clusterAddrTable":{"c1":["broker-a"]}}`))
	require.NoError(t, err)
	require.Equal(t, "h:1", back.BrokerAddrTable["broker-a"].BrokerAddrs[0])

	empty, err := EncodeClusterInfo(&ClusterInfo{})
	require.NoError(t, err)
	require.Equal(t, `{"brokerAddrTable":{},"clusterAddrTable":{}}`, string(empty))
	_, err = DecodeClusterInfo(nil)
	require.ErrorIs(t, err, ErrBadBody)
	_, err = EncodeClusterInfo(&ClusterInfo{BrokerAddrTable: map[string]BrokerData{"b": {BrokerAddrs: map[int64]string{0: "a,b"}}}})
	require.ErrorIs(t, err, ErrBadBody)
}

func TestTopicList(t *testing.T) {
	got, err := EncodeTopicList(&TopicList{TopicList: []string{"TopicA", "%RETRY%g1"}})
	require.NoError(t, err)
	require.Equal(t, `{"topicList":["TopicA","%RETRY%g1"]}`, string(got))
	empty, err := EncodeTopicList(&TopicList{})
	require.NoError(t, err)
	require.Equal(t, `{"topicList":[]}`, string(empty))

	// The Go admin decodes it with encoding/json.
	var admin struct{ TopicList []string }
	require.NoError(t, json.Unmarshal(got, &admin))
	require.Equal(t, []string{"TopicA", "%RETRY%g1"}, admin.TopicList)

	back, err := DecodeTopicList([]byte(`{"brokerAddr":"10.0.0.5:10911","topicList":["TopicA"]}`))
	require.NoError(t, err)
	require.Equal(t, &TopicList{TopicList: []string{"TopicA"}, BrokerAddr: "10.0.0.5:10911"}, back)
	back, err = DecodeTopicList(empty)
	require.NoError(t, err)
	require.Nil(t, back.TopicList)
	_, err = DecodeTopicList([]byte(`{"topicList":"x"}`))
	require.ErrorIs(t, err, ErrBadBody)
}
