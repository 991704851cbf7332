package offsets

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/broker/internal/metafile/metafiletest"
	"github.com/ferrymq/ferry/internal/fastjson"
	"github.com/ferrymq/ferry/internal/logging"
)

func TestEncodeDecodeRoundTrip(t *testing.T) {
	entries := []entry{
		{Key{Group: "g", Topic: "b", QueueID: 2}, 5},
		{Key{Group: "g", Topic: "a", QueueID: 10}, 1},
		{Key{Group: "g", Topic: "a", QueueID: 9}, 0},
		{Key{Group: "f", Topic: "a", QueueID: 0}, 1 << 62},
	}
	data := encodeEntries(entries)
	require.True(t, json.Valid(data))
	log := logging.Nop()
	got, err := decodeTable(data, &log)
	require.NoError(t, err)
	require.Len(t, got, len(entries))
	for _, e := range entries {
		require.Equal(t, e.offset, got[e.key])
	}
	require.JSONEq(t, `{"offsetTable":{}}`, string(encodeEntries(nil)))
}

// FuzzLoadOffsets checks that decoding any consumerOffset.json never panics,
// that whatever decodes survives an encode and a decode unchanged, and that
// the fastjson pre-pass leaves valid JSON alone. Seeds live in
// testdata/fuzz/FuzzLoadOffsets and include the golden files.
func FuzzLoadOffsets(f *testing.F) {
	metafiletest.Seed(f, "rocketmq4-consumerOffset.json", "rocketmq5-consumerOffset.json")
	log := logging.Nop()
	f.Fuzz(func(t *testing.T, data []byte) {
		if json.Valid(data) {
			require.Equal(t, data, fastjson.QuoteBareKeys(data))
		}
		table, err := decodeTable(data, &log)
		if err != nil {
			require.ErrorIs(t, err, ErrCorrupt)
			return
		}
		entries := make([]entry, 0, len(table))
		for k, off := range table {
			require.GreaterOrEqual(t, off, int64(0))
			require.GreaterOrEqual(t, k.QueueID, int32(0))
			entries = append(entries, entry{k, off})
		}
		again, err := decodeTable(encodeEntries(entries), &log)
		require.NoError(t, err)
		if len(table) == 0 {
			require.Empty(t, again)
			return
		}
		require.Equal(t, table, again)
	})
}
