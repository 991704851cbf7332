package protocol

import (
	"maps"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/remoting"
)

// goClientSend is what the Go producer puts in a SEND_MESSAGE header for an
// ordinary synchronous send (producer.go buildSendRequest).
var goClientSend = SendMessageRequestHeader{
	ProducerGroup:         "pg",
	Topic:                 "TopicTest",
	DefaultTopic:          "TBW102",
	DefaultTopicQueueNums: 4,
	QueueID:               1,
	SysFlag:               0,
	BornTimestamp:         1700000000123,
	Flag:                  0,
	Properties:            "UNIQ_KEY\x01C00002024C880000000096281fe00001\x02TAGS\x01TagA\x02",
	BrokerName:            "broker-a",
}

// TestSendHeaderV1MatchesGoClient compares our V1 encoding with the ext map
// the Go client builds in internal/request.go (SendMessageRequestHeader.Encode):
// the same 14 keys, every one written even when zero or empty, and the same
// textual values.
func TestSendHeaderV1MatchesGoClient(t *testing.T) {
	goClientKeys := []string{
		"producerGroup", "topic", "queueId", "sysFlag", "bornTimestamp", "flag",
		"reconsumeTimes", "unitMode", "maxReconsumeTimes", "defaultTopic",
		"defaultTopicQueueNums", "batch", "properties", "bname",
	}
	ext := NewExt(&goClientSend)
	require.ElementsMatch(t, goClientKeys, slices.Collect(maps.Keys(ext.Map())))
	require.Len(t, ext, len(goClientKeys), "each key once")
	require.Equal(t, map[string]string{
		"producerGroup":         "pg",
		"topic":                 "TopicTest",
		"queueId":               "1",
		"sysFlag":               "0",
		"bornTimestamp":         "1700000000123",
		"flag":                  "0",
		"reconsumeTimes":        "0",
		"unitMode":              "false",
		"maxReconsumeTimes":     "0",
		"defaultTopic":          "TBW102",
		"defaultTopicQueueNums": "4",
		"batch":                 "false",
		"properties":            "UNIQ_KEY\x01C00002024C880000000096281fe00001\x02TAGS\x01TagA\x02",
		"bname":                 "broker-a",
	}, ext.Map())

	// An empty broker name and properties are still written, like the client.
	h := goClientSend
	h.BrokerName, h.Properties = "", ""
	ext = NewExt(&h)
	require.Len(t, ext, 14)
	require.Equal(t, "", ext.Value("bname"))
	require.Equal(t, "", ext.Value("properties"))
}

// TestSendHeaderV2MatchesGoClient compares the V2 form with the Go client's
// SendMessageRequestV2Header.Encode (keys a … n), used for SEND_BATCH_MESSAGE.
func TestSendHeaderV2MatchesGoClient(t *testing.T) {
	h := goClientSend
	h.Batch = true
	h.Properties = ""
	var ext remoting.Ext
	h.EncodeExtV2(&ext)
	require.Equal(t, map[string]string{
		"a": "pg", "b": "TopicTest", "c": "TBW102", "d": "4", "e": "1", "f": "0",
		"g": "1700000000123", "h": "0", "i": "", "j": "0", "k": "false", "l": "0",
		"m": "true", "n": "broker-a",
	}, ext.Map())

	var back SendMessageRequestHeader
	require.NoError(t, back.DecodeExtV2(ext))
	require.Equal(t, h, back)

	// The wrapper type encodes the same map through the Header interface.
	require.Equal(t, ext.Map(), NewExt(&SendMessageRequestHeaderV2{h}).Map())
}

func TestSendHeaderV1V2Conversion(t *testing.T) {
	full := ptr(fullSendHeader())

	v1 := NewExt(full)
	var v2 remoting.Ext
	full.EncodeExtV2(&v2)
	require.Len(t, v2, 14)

	// Decode V1, re-encode as V2 and back: nothing is lost either way.
	var a SendMessageRequestHeader
	require.NoError(t, a.DecodeExt(v1))
	var v2b remoting.Ext
	a.EncodeExtV2(&v2b)
	require.Equal(t, v2.Map(), v2b.Map())
	var b SendMessageRequestHeader
	require.NoError(t, b.DecodeExtV2(v2b))
	require.Equal(t, *full, b)
	require.Equal(t, v1.Map(), NewExt(&b).Map())

	// V1 keys are not V2 keys.
	require.ErrorIs(t, new(SendMessageRequestHeader).DecodeExtV2(v1), ErrMissingField)
	require.ErrorIs(t, new(SendMessageRequestHeader).DecodeExt(v2), ErrMissingField)
}

func TestSendHeaderV2BrokerNameFallback(t *testing.T) {
	var ext remoting.Ext
	goClientSend.EncodeExtV2(&ext)
	ext.Delete("n")
	ext.Set("bname", "broker-z")
	var h SendMessageRequestHeader
	require.NoError(t, h.DecodeExtV2(ext))
	require.Equal(t, "broker-z", h.BrokerName)
	ext.Set("n", "broker-n")
	require.NoError(t, h.DecodeExtV2(ext))
	require.Equal(t, "broker-n", h.BrokerName)
}

func TestDecodeSendMessageRequestHeaderByCode(t *testing.T) {
	v1 := NewExt(&goClientSend)
	v2 := NewExt(&SendMessageRequestHeaderV2{goClientSend})
	for _, tc := range []struct {
		code RequestCode
		ext  remoting.Ext
		v2   bool
	}{
		{SendMessage, v1, false},
		{SendReplyMessage, v1, false},
		{SendMessageV2, v2, true},
		{SendBatchMessage, v2, true},
		{SendReplyMessageV2, v2, true},
	} {
		require.Equal(t, tc.v2, SendHeaderUsesV2(tc.code), tc.code.String())
		h, err := DecodeSendMessageRequestHeader(tc.code, tc.ext)
		require.NoError(t, err, tc.code.String())
		require.Equal(t, goClientSend, h)
		_, err = DecodeSendMessageRequestHeader(tc.code, remoting.Ext{})
		require.ErrorIs(t, err, ErrMissingField)
	}
}

// TestSendResponseGoClientView checks the keys the Go client reads from a
// send response (internal/client.go ProcessSendResponse).
func TestSendResponseGoClientView(t *testing.T) {
	ext := NewExt(&SendMessageResponseHeader{
		MsgID: "0A00000500002A9F0000000000000064", QueueID: 3, QueueOffset: 42,
		TransactionID: "C00002024C880000000096281fe00001", MsgRegion: "DefaultRegion",
	})
	require.Equal(t, map[string]string{
		"msgId": "0A00000500002A9F0000000000000064", "queueId": "3", "queueOffset": "42",
		"transactionId": "C00002024C880000000096281fe00001", "MSG_REGION": "DefaultRegion",
		"TRACE_ON": "false",
	}, ext.Map())
}
