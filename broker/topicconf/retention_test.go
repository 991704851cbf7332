package topicconf

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/protocol"
)

func TestRetentionAttributes(t *testing.T) {
	got, err := ApplyAttributeChanges(nil, []protocol.AttributeChange{
		{Key: AttrRetentionTime, Value: "24h"}, {Key: AttrRetentionBytes, Value: "10GiB"}})
	require.NoError(t, err)
	cfg := protocol.TopicConfig{Attributes: got}
	age, size := Retention(&cfg)
	require.Equal(t, 24*time.Hour, age)
	require.Equal(t, int64(10)<<30, size)

	cfg.Attributes = map[string]string{AttrRetentionTime: "7d"}
	age, size = Retention(&cfg)
	require.Equal(t, 7*24*time.Hour, age)
	require.Zero(t, size)

	age, size = Retention(&protocol.TopicConfig{})
	require.Zero(t, age)
	require.Zero(t, size)
	cfg.Attributes = map[string]string{AttrRetentionTime: "later", AttrRetentionBytes: "lots"} // hand-edited
	age, size = Retention(&cfg)
	require.Zero(t, age)
	require.Zero(t, size)

	for name, change := range map[string]protocol.AttributeChange{
		"not a duration":  {Key: AttrRetentionTime, Value: "soon"},
		"too short":       {Key: AttrRetentionTime, Value: "30s"},
		"too long":        {Key: AttrRetentionTime, Value: "400d"},
		"negative days":   {Key: AttrRetentionTime, Value: "-1d"},
		"not a size":      {Key: AttrRetentionBytes, Value: "big"},
		"decimal suffix":  {Key: AttrRetentionBytes, Value: "10GB"},
		"too small":       {Key: AttrRetentionBytes, Value: "512"},
		"overflow":        {Key: AttrRetentionBytes, Value: "9000000000TiB"},
		"negative size":   {Key: AttrRetentionBytes, Value: "-1MiB"},
		"remove absent":   {Key: AttrRetentionBytes, Delete: true},
		"empty size":      {Key: AttrRetentionBytes, Value: "GiB"},
		"fractional size": {Key: AttrRetentionBytes, Value: "1.5GiB"},
	} {
		_, err := ApplyAttributeChanges(nil, []protocol.AttributeChange{change})
		require.ErrorIs(t, err, ErrBadAttribute, name)
	}
}

func TestParseByteSize(t *testing.T) {
	for in, want := range map[string]int64{
		"0": 0, "1048576": 1 << 20, "512KiB": 512 << 10, "10MiB": 10 << 20, "10GiB": 10 << 30,
		"2TiB": 2 << 40, "100B": 100,
	} {
		got, err := ParseByteSize(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
}
