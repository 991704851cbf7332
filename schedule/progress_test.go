package schedule

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDelayOffsetsFile(t *testing.T) {
	b := encodeDelayOffsets([]int64{123, 0, 7})
	require.Equal(t, "{\"offsetTable\":{\"1\":123,\"2\":0,\"3\":7}}\n", string(b))
	got, err := decodeDelayOffsets(b)
	require.NoError(t, err)
	require.Equal(t, map[int]int64{1: 123, 2: 0, 3: 7}, got)

	// fastjson's bare keys, 5.x's dataVersion, whitespace, keys inside strings untouched.
	got, err = decodeDelayOffsets([]byte(`{"dataVersion":{"counter":3,"timestamp":1700000000000,"x":"{1:2}"},
		"offsetTable":{ 1:5 , 18 : 900,"3":4}}`))
	require.NoError(t, err)
	require.Equal(t, map[int]int64{1: 5, 18: 900, 3: 4}, got)

	got, err = decodeDelayOffsets([]byte(`{}`))
	require.NoError(t, err)
	require.Empty(t, got)

	for _, bad := range []string{``, `[]`, `{"offsetTable":{"a":1}}`, `{"offsetTable":{0:1}}`,
		`{"offsetTable":{-1:1}}`, `{"offsetTable":{1:1.5}}`, `{"offsetTable":{1:"x"}}`, `{"offsetTable":`} {
		_, err := decodeDelayOffsets([]byte(bad))
		require.Error(t, err, bad)
	}
}

func TestTimerProgressFile(t *testing.T) {
	b := encodeTimerProgress(120, []offsetRange{{125, 130}, {131, 132}})
	require.Equal(t, "{\"version\":1,\"watermark\":120,\"delivered\":[[125,130],[131,132]]}\n", string(b))
	w, done, err := decodeTimerProgress(b)
	require.NoError(t, err)
	require.Equal(t, int64(120), w)
	require.Equal(t, []offsetRange{{125, 130}, {131, 132}}, done)

	// Touching ranges merge, and a range at the watermark raises it.
	w, done, err = decodeTimerProgress([]byte(`{"version":1,"watermark":5,"delivered":[[5,8],[8,9],[10,12],[12,13]]}`))
	require.NoError(t, err)
	require.Equal(t, int64(9), w)
	require.Equal(t, []offsetRange{{10, 13}}, done)

	w, done, err = decodeTimerProgress([]byte(`{"version":1,"watermark":0}`))
	require.NoError(t, err)
	require.Zero(t, w)
	require.Empty(t, done)

	for _, bad := range []string{``, `{}`, `{"version":2,"watermark":0}`, `{"version":1,"watermark":-1}`,
		`{"version":1,"watermark":5,"delivered":[[3,6]]}`, `{"version":1,"watermark":0,"delivered":[[3,3]]}`,
		`{"version":1,"watermark":0,"delivered":[[6,8],[3,4]]}`, `{"version":1,"watermark":0,"delivered":[[3,8],[5,9]]}`,
		`{"version":1,"watermark":0,"delivered":[[3]]}`, `{"version":1,"watermark":"0"}`} {
		_, _, err := decodeTimerProgress([]byte(bad))
		require.Error(t, err, bad)
	}
}

func FuzzDecodeDelayOffsets(f *testing.F) {
	f.Add([]byte(`{"offsetTable":{"1":123,"2":0}}`))
	f.Add([]byte(`{"offsetTable":{1:5,-2:3},"dataVersion":{"counter":1}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		table, err := decodeDelayOffsets(data)
		if err != nil {
			return
		}
		for level := range table {
			if level < 1 {
				t.Fatalf("level %d accepted", level)
			}
		}
	})
}

func FuzzDecodeTimerProgress(f *testing.F) {
	f.Add([]byte(`{"version":1,"watermark":120,"delivered":[[125,130],[131,132]]}`))
	f.Add([]byte(`{"version":1,"watermark":0,"delivered":[]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		w, done, err := decodeTimerProgress(data)
		if err != nil {
			return
		}
		prev := w
		for _, r := range done {
			if r.Start <= prev || r.End <= r.Start {
				t.Fatalf("bad normalised ranges: watermark %d, %v", w, done)
			}
			prev = r.End
		}
		w2, done2, err := decodeTimerProgress(encodeTimerProgress(w, done))
		if err != nil || w2 != w || len(done2) != len(done) {
			t.Fatalf("round trip: %v %d %v", err, w2, done2)
		}
	})
}
