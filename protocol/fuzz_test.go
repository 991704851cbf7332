package protocol

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
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

// FuzzQuoteBareKeys checks the fastjson pre-pass never panics and is
// idempotent.
func FuzzQuoteBareKeys(f *testing.F) {
	f.Add([]byte(`{0:"a",-1:{2:[3,{4:5}]},"s":"{6:7}"}`))
	f.Add([]byte(`{"a\"":1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		once := quoteBareKeys(data)
		require.Equal(t, string(once), string(quoteBareKeys(once)))
	})
}
