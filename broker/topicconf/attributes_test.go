package topicconf

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/protocol"
)

func TestApplyAttributeChanges(t *testing.T) {
	cur := map[string]string{AttrMessageType: "NORMAL"}
	got, err := ApplyAttributeChanges(cur, []protocol.AttributeChange{{Key: AttrDedupWindow, Value: "10m"}})
	require.NoError(t, err)
	require.Equal(t, map[string]string{AttrMessageType: "NORMAL", AttrDedupWindow: "10m"}, got)
	require.Equal(t, map[string]string{AttrMessageType: "NORMAL"}, cur, "the current map is not modified")

	got, err = ApplyAttributeChanges(got, []protocol.AttributeChange{{Key: AttrDedupWindow, Delete: true}, {Key: AttrMessageType, Delete: true}})
	require.NoError(t, err)
	require.Nil(t, got, "no attribute left")

	for name, change := range map[string]protocol.AttributeChange{
		"unknown":        {Key: "retention", Value: "1h"},
		"not a duration": {Key: AttrDedupWindow, Value: "soon"},
		"too short":      {Key: AttrDedupWindow, Value: "10ms"},
		"too long":       {Key: AttrDedupWindow, Value: "25h"},
		"message type":   {Key: AttrMessageType, Value: "ANY"},
		"remove absent":  {Key: AttrDedupWindow, Delete: true},
	} {
		_, err := ApplyAttributeChanges(cur, []protocol.AttributeChange{change})
		require.ErrorIs(t, err, ErrBadAttribute, name)
	}
}

func TestDedupWindow(t *testing.T) {
	cfg := protocol.TopicConfig{Attributes: map[string]string{AttrDedupWindow: "90s"}}
	require.Equal(t, 90*time.Second, DedupWindow(&cfg))
	require.Zero(t, DedupWindow(&protocol.TopicConfig{}))
	cfg.Attributes[AttrDedupWindow] = "bogus" // only a hand-edited file has this
	require.Zero(t, DedupWindow(&cfg))
}
