package protocol

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The slave-sync bodies read what a Java 4.x/5.x broker writes (fastjson's bare integer
// keys, 5.x dataVersion) and write sorted standard JSON.
func TestConsumerOffsetSerializeWrapperBody(t *testing.T) {
	java := `{"offsetTable":{"TopicA@cg":{0:12,1:7},"%RETRY%cg@cg":{0:3}},"dataVersion":{"counter":4,"timestamp":1}}`
	w, err := DecodeConsumerOffsetSerializeWrapper([]byte(java))
	require.NoError(t, err)
	require.Equal(t, map[string]map[int32]int64{"TopicA@cg": {0: 12, 1: 7}, "%RETRY%cg@cg": {0: 3}}, w.OffsetTable)
	enc, err := EncodeConsumerOffsetSerializeWrapper(w)
	require.NoError(t, err)
	require.JSONEq(t, `{"offsetTable":{"%RETRY%cg@cg":{"0":3},"TopicA@cg":{"0":12,"1":7}}}`, string(enc))

	enc, err = EncodeConsumerOffsetSerializeWrapper(&ConsumerOffsetSerializeWrapper{})
	require.NoError(t, err)
	require.Equal(t, `{"offsetTable":{}}`, string(enc))
	w, err = DecodeConsumerOffsetSerializeWrapper(enc)
	require.NoError(t, err)
	require.Nil(t, w.OffsetTable)

	for _, bad := range []string{"", "[]", `{"offsetTable":{"T@g":{"x":1}}}`, `{"offsetTable":{"T@g":{0:"1"}}}`} {
		_, err := DecodeConsumerOffsetSerializeWrapper([]byte(bad))
		require.ErrorIs(t, err, ErrBadBody, bad)
	}
}

func TestDelayOffsetSerializeWrapperBody(t *testing.T) {
	w, err := DecodeDelayOffsetSerializeWrapper([]byte(`{"offsetTable":{1:123,2:0,18:7},"dataVersion":{"counter":1}}`))
	require.NoError(t, err)
	require.Equal(t, map[int32]int64{1: 123, 2: 0, 18: 7}, w.OffsetTable)
	enc, err := EncodeDelayOffsetSerializeWrapper(w)
	require.NoError(t, err)
	require.Equal(t, `{"offsetTable":{"1":123,"18":7,"2":0}}`, string(enc))
	_, err = DecodeDelayOffsetSerializeWrapper([]byte(`{"offsetTable":{"a":1}}`))
	require.ErrorIs(t, err, ErrBadBody)

	// Ferry's timer progress rides along (RocketMQ ignores the unknown field).
	w.TimerProgress = &TimerProgress{Watermark: 40, Delivered: [][2]int64{{42, 45}}}
	enc, err = EncodeDelayOffsetSerializeWrapper(w)
	require.NoError(t, err)
	require.Equal(t, `{"offsetTable":{"1":123,"18":7,"2":0},"ferryTimerProgress":{"watermark":40,"delivered":[[42,45]]}}`, string(enc))
	back, err := DecodeDelayOffsetSerializeWrapper(enc)
	require.NoError(t, err)
	require.Equal(t, w, back)
}
