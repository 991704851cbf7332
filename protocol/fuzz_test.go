package protocol

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/remoting"
)

// FuzzDecodeRouteData checks that the route decoder never panics and that
// whatever it accepts re-encodes to a fixed point the Go client's parser
// understands.
func FuzzDecodeRouteData(f *testing.F) {
	f.Add([]byte(sampleRouteJSON))
	f.Add([]byte(`{"brokerDatas":[{"brokerAddrs":{0:"10.0.0.5:10911",1:"10.0.0.6:10911"},"brokerName":"broker-a","cluster":"DefaultCluster"}],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,"writeQueueNums":4}]}`))
	f.Add([]byte(`{"brokerDatas":[{"brokerAddrs":{}}],"orderTopicConf":"a:1;b:2"}`))
	f.Add([]byte(`{"brokerDatas":[{"brokerAddrs":{-1:"x"}}],"queueDatas":null}`))
	f.Add([]byte(`{`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := DecodeTopicRouteData(data)
		if err != nil {
			require.ErrorIs(t, err, ErrBadBody)
			return
		}
		enc, err := EncodeTopicRouteData(r)
		if err != nil {
			require.ErrorIs(t, err, ErrBadBody) // unsafe address
			return
		}
		r2, err := DecodeTopicRouteData(enc)
		require.NoError(t, err, "%s", enc)
		enc2, err := EncodeTopicRouteData(r2)
		require.NoError(t, err)
		require.Equal(t, string(enc), string(enc2))

		gr, err := goClientDecodeRoute(string(enc))
		require.NoError(t, err)
		require.Len(t, gr.Brokers, len(r2.BrokerDatas))
		for i, bd := range r2.BrokerDatas {
			require.Equal(t, len(bd.BrokerAddrs), len(gr.Brokers[i].BrokerAddresses))
			for id, addr := range bd.BrokerAddrs {
				require.Equal(t, addr, gr.Brokers[i].BrokerAddresses[id])
			}
		}
	})
}

// FuzzDecodeHeartbeat checks that the heartbeat decoder never panics and
// that accepted bodies survive an encode/decode round trip unchanged.
func FuzzDecodeHeartbeat(f *testing.F) {
	f.Add([]byte(goClientHeartbeat))
	f.Add([]byte(`{"clientID":"a@1","consumerDataSet":[{"subscriptionDataSet":[{"codeSet":[1,"2"],"subVersion":1700000000000}]}],"heartbeatFingerprint":3,"withoutSub":true}`))
	f.Add([]byte(`{"producerDataSet":null,"consumerDataSet":[{}]}`))
	f.Add([]byte(`{"x":{0:1}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := DecodeHeartbeatData(data)
		if err != nil {
			require.ErrorIs(t, err, ErrBadBody)
			return
		}
		enc, err := EncodeHeartbeatData(h)
		require.NoError(t, err)
		h2, err := DecodeHeartbeatData(enc)
		require.NoError(t, err, "%s", enc)
		require.Equal(t, h, h2)
		enc2, err := EncodeHeartbeatData(h2)
		require.NoError(t, err)
		require.True(t, bytes.Equal(enc, enc2))
	})
}

// pairsOf serialises an extFields container as "k\x00v\x00k\x00v…" with
// sorted keys, the input format of FuzzHeaderDecode.
func pairsOf(ext remoting.Ext) []byte {
	fields := slices.Clone(ext)
	slices.SortStableFunc(fields, func(a, b remoting.ExtField) int { return strings.Compare(a.Key, b.Key) })
	var b []byte
	for _, f := range fields {
		b = append(b, f.Key...)
		b = append(b, 0)
		b = append(b, f.Value...)
		b = append(b, 0)
	}
	return b
}

// extFromPairs is the inverse of pairsOf; a trailing odd piece is a key
// with an empty value.
func extFromPairs(data []byte) remoting.Ext {
	parts := strings.Split(string(data), "\x00")
	if len(parts)%2 == 1 {
		parts = append(parts, "")
	}
	return extOf(parts...)
}

// FuzzHeaderDecode feeds one extFields container to the DecodeExt of every
// header type: decoding never panics, fails only with a *FieldError wrapping
// ErrMissingField or ErrBadField, and whatever it accepts re-encodes and
// decodes to the same value.
func FuzzHeaderDecode(f *testing.F) {
	for _, tc := range headerCases() {
		f.Add(pairsOf(NewExt(tc.full)))
		f.Add(pairsOf(NewExt(tc.fresh())))
	}
	f.Add([]byte("queueId\x00+7\x00unitMode\x00TRUE\x00offset\x00-0\x00n\x00\x00bname\x00b"))
	f.Add([]byte("commitLogOffset\x009223372036854775808\x00queueId\x002147483648\x00isForce\x00yes"))
	cases := headerCases()
	f.Fuzz(func(t *testing.T, data []byte) {
		ext := extFromPairs(data)
		for _, tc := range cases {
			h := tc.fresh()
			if err := h.DecodeExt(ext); err != nil {
				var fe *FieldError
				require.ErrorAs(t, err, &fe, tc.name)
				require.True(t, errors.Is(err, ErrMissingField) != errors.Is(err, ErrBadField), "%s: %v", tc.name, err)
				continue
			}
			again := tc.fresh()
			require.NoError(t, again.DecodeExt(NewExt(h)), tc.name)
			require.Equal(t, h, again, tc.name)
		}
	})
}

// bodyCodec is one body decoder with its encoder, for FuzzDecodeBody.
type bodyCodec struct {
	name      string
	seeds     []string
	roundTrip func(t *testing.T, data []byte)
}

// bodyCase checks that dec never panics, fails only with ErrBadBody, and
// that what it accepts encodes (or is refused with ErrBadBody) to bytes that
// decode and re-encode to a fixed point; when exact, the first decode
// already is that fixed point.
func bodyCase[T any](name string, dec func([]byte) (T, error), enc func(T) ([]byte, error), exact bool, seeds ...string) bodyCodec {
	return bodyCodec{name: name, seeds: seeds, roundTrip: func(t *testing.T, data []byte) {
		v, err := dec(data)
		if err != nil {
			require.ErrorIs(t, err, ErrBadBody, name)
			return
		}
		b, err := enc(v)
		if err != nil {
			require.ErrorIs(t, err, ErrBadBody, name)
			return
		}
		v2, err := dec(b)
		require.NoError(t, err, "%s: %s", name, b)
		if exact {
			require.Equal(t, v, v2, "%s: %s", name, b)
		}
		b2, err := enc(v2)
		require.NoError(t, err, name)
		require.Equal(t, string(b), string(b2), name)
		v3, err := dec(b2)
		require.NoError(t, err, name)
		require.Equal(t, v2, v3, name)
	}}
}

func bodyCodecs() []bodyCodec {
	ids := func(data []byte) (*[]string, error) {
		l, err := DecodeConsumerIDList(data)
		return &l, err
	}
	encIDs := func(l *[]string) ([]byte, error) { return EncodeConsumerIDList(*l) }
	props := func(data []byte) (map[string]string, error) { return DecodeConfigProperties(data) }
	encProps := func(m map[string]string) ([]byte, error) { return EncodeConfigProperties(m), nil }
	version := func(data []byte) (*DataVersion, error) {
		h := GetBrokerConfigResponseHeader{Version: string(data)}
		dv, err := h.DataVersion()
		return &dv, err
	}
	encVersion := func(dv *DataVersion) ([]byte, error) {
		var h GetBrokerConfigResponseHeader
		h.SetDataVersion(*dv)
		return []byte(h.Version), nil
	}
	return []bodyCodec{
		bodyCase("cluster info", DecodeClusterInfo, EncodeClusterInfo, false,
			`{"brokerAddrTable":{"broker-a":{"brokerAddrs":{0:"10.0.0.5:10911"},"brokerName":"broker-a","cluster":"c"}},"clusterAddrTable":{"c":["broker-b","broker-a","broker-a"]}}`),
		bodyCase("topic list", DecodeTopicList, EncodeTopicList, true,
			`{"topicList":["TopicA","%RETRY%g1"],"brokerAddr":"x"}`),
		bodyCase("consumer id list", ids, encIDs, true, `{"consumerIdList":["10.0.0.9@4242","10.0.0.7@99"]}`),
		bodyCase("register broker body", DecodeRegisterBrokerBody, EncodeRegisterBrokerBody, true,
			`{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":3,"stateVersion":0,"timestamp":1700000000000},"topicConfigTable":{"TopicA":{"topicName":"TopicA","readQueueNums":4,"writeQueueNums":4,"perm":6,"topicFilterType":"SINGLE_TAG","topicSysFlag":0,"order":false,"attributes":{}}},"topicQueueMappingInfoMap":{}}}`),
		bodyCase("lock request", DecodeLockBatchRequestBody, EncodeLockBatchRequestBody, true,
			`{"consumerGroup":"cg","clientId":"10.0.0.9@4242","onlyThisBroker":false,"mqSet":[{"topic":"T","brokerName":"broker-a","queueId":0}]}`),
		bodyCase("lock response", DecodeLockBatchResponseBody, EncodeLockBatchResponseBody, true,
			`{"lockOKMQSet":[{"topic":"T","brokerName":"broker-a","queueId":0}]}`),
		bodyCase("kv table", DecodeKVTable, EncodeKVTable, true, `{"table":{"brokerVersion":"479","msgPutTotalTodayNow":"12"}}`),
		bodyCase("topic stats", DecodeTopicStatsTable, EncodeTopicStatsTable, true, javaTopicStats),
		bodyCase("consume stats", DecodeConsumeStats, EncodeConsumeStats, true,
			`{"consumeTps":0.0,"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:{"brokerOffset":10,"consumerOffset":8,"lastTimestamp":1,"pullOffset":9}}}`),
		bodyCase("consumer connection", DecodeConsumerConnection, EncodeConsumerConnection, true,
			`{"connectionSet":[{"clientAddr":"a:1","clientId":"c","language":"JAVA","version":479}],"consumeType":"CONSUME_ACTIVELY","subscriptionTable":{"T":{"topic":"T","subString":"*","tagsSet":[],"codeSet":["1"],"subVersion":2}}}`),
		bodyCase("producer connection", DecodeProducerConnection, EncodeProducerConnection, true,
			`{"connectionSet":[{"clientAddr":"a:1","clientId":"c","language":"GO","version":317}]}`),
		bodyCase("group list", DecodeGroupList, EncodeGroupList, true, `{"groupList":["cg1","cg2"]}`),
		bodyCase("reset offset body", DecodeResetOffsetBody, EncodeResetOffsetBody, true,
			`{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:100}}`,
			`{"offsetTable":[[{"topic":"T","brokerName":"b","queueId":1},-1]]}`),
		bodyCase("consumer status body", DecodeConsumerStatusBody, EncodeConsumerStatusBody, true,
			`{"consumerTable":{"c":{{"brokerName":"b","queueId":0,"topic":"T"}:7}},"messageQueueTable":{"{\"queueId\":1}":3}}`),
		bodyCase("subscription group config", DecodeSubscriptionGroupConfig, EncodeSubscriptionGroupConfig, true,
			`{"groupName":"cg","consumeEnable":false,"retryMaxTimes":3,"attributes":{"k":"v"}}`),
		bodyCase("subscription group wrapper", DecodeSubscriptionGroupWrapper, EncodeSubscriptionGroupWrapper, true,
			`{"subscriptionGroupTable":{"cg":{"groupName":"cg"},"x":null},"dataVersion":{"timestamp":1,"counter":1},"forbiddenTable":{}}`),
		bodyCase("topic config table", DecodeTopicConfigSerializeWrapper, EncodeTopicConfigSerializeWrapper, true,
			`{"dataVersion":{"counter":2},"topicConfigTable":{"T":{"topicName":"T","perm":6,"attributes":{"a":"b"}}},"topicQueueMappingInfoMap":{"T":{"currIdMap":{0:0}}}}`),
		bodyCase("consumer offset table", DecodeConsumerOffsetSerializeWrapper, EncodeConsumerOffsetSerializeWrapper, true,
			`{"offsetTable":{"TopicA@cg":{0:12,1:7},"%RETRY%cg@cg":{"0":3}},"dataVersion":{"counter":1}}`),
		bodyCase("delay offset table", DecodeDelayOffsetSerializeWrapper, EncodeDelayOffsetSerializeWrapper, true,
			`{"offsetTable":{1:123,2:0,"18":7}}`,
			`{"offsetTable":{"1":1},"ferryTimerProgress":{"watermark":4,"delivered":[[6,9]]}}`),
		bodyCase("check client config", DecodeCheckClientRequestBody, EncodeCheckClientRequestBody, true,
			`{"clientId":"c@1","group":"cg","subscriptionData":{"topic":"T","subString":"a > 1","expressionType":"SQL92","subVersion":3}}`),
		bodyCase("consume message directly result", DecodeConsumeMessageDirectlyResult, EncodeConsumeMessageDirectlyResult, true,
			`{"order":false,"autoCommit":true,"consumeResult":4,"remark":"x","spentTimeMills":3}`,
			`{"consumeResult":"CR_LATER"}`),
		bodyCase("consumer running info", DecodeConsumerRunningInfo, EncodeConsumerRunningInfo, true, goClientRunningInfo,
			`{"jstack":"","mqTable":{{"brokerName":"b","queueId":0,"topic":"T"}:{"droped":true}},"properties":{"k":"v"},"statusTable":{"T":{"pullRT":1}},"subscriptionSet":[{"topic":"T"}]}`),
		bodyCase("broker epoch cache", DecodeBrokerEpochCache, EncodeBrokerEpochCache, true,
			`{"clusterName":"c","brokerName":"broker-a","brokerId":2,"epochList":[{"epoch":1,"startOffset":0,"endOffset":40},{"epoch":3,"startOffset":40,"endOffset":90}],"maxOffset":100}`,
			`{"brokerId":1,"epochList":[],"maxOffset":0}`),
		bodyCase("broker config version", version, encVersion, true, `{"counter":2,"stateVersion":0,"timestamp":1700000000000}`),
		bodyCase("config properties", props, encProps, true,
			"brokerName=broker-a\nlistenPort : 10911\n# c\nk\\ 1=v\\u00E9\\\n  more\r\n"),
	}
}

// FuzzDecodeBody feeds the same bytes to every JSON and text body decoder
// (see bodyCodecs; the route and heartbeat bodies have their own targets).
func FuzzDecodeBody(f *testing.F) {
	codecs := bodyCodecs()
	for _, c := range codecs {
		for _, s := range c.seeds {
			f.Add([]byte(s))
		}
	}
	f.Add([]byte(`{"x":{{"a":{"b":[1,{"c":2}]}}:{0:"z"}}}`))
	f.Add([]byte(`{"offsetTable":{{"queueId":0}:1},"table":{"a":"b"},"groupList":null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, c := range codecs {
			c.roundTrip(t, data)
		}
	})
}

// FuzzBatchReader checks the batch codec against the broker's original
// parser (same acceptance, same items) and that accepted bodies re-encode to
// the input with the ignored magic and CRC fields zeroed.
func FuzzBatchReader(f *testing.F) {
	f.Add(mustHex(f, goClientBatchItem))
	sample, err := EncodeBatch(sampleBatchItems()[:3])
	require.NoError(f, err)
	f.Add(sample)
	f.Add(sample[:len(sample)-3])
	f.Add([]byte{0, 0, 0, 22, 1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x80, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		requireSameAsBrokerDecoder(t, data)
		items, err := readAllBatch(data)
		if err != nil {
			require.ErrorIs(t, err, ErrBadBody)
			var be *BatchError
			require.ErrorAs(t, err, &be)
			require.True(t, errors.Is(err, ErrBatchTruncated) != errors.Is(err, ErrBatchBadLength))
			return
		}
		want := bytes.Clone(data)
		var enc []byte
		off := 0
		for _, it := range items {
			clear(want[off+batchPosMagic : off+batchPosBodyCRC+4])
			off += BatchItemSize(len(it.Body), len(it.Properties))
			if enc, err = AppendBatchItem(enc, it); err != nil {
				require.ErrorIs(t, err, message.ErrPropertiesTooLong)
				return
			}
		}
		require.Equal(t, len(data), off)
		require.Equal(t, string(want), string(enc))
	})
}
