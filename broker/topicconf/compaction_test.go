package topicconf

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/store"
)

func TestCompactionAttributes(t *testing.T) {
	got, err := ApplyAttributeChanges(nil, []protocol.AttributeChange{
		{Key: AttrCleanupPolicy, Value: "compact"}, {Key: AttrCompactionKey, Value: "orderId"},
		{Key: AttrDeleteRetention, Value: "1h"}})
	require.NoError(t, err)
	cfg := protocol.TopicConfig{Attributes: got}
	key, del, ok := Compaction(&cfg)
	require.True(t, ok)
	require.Equal(t, "orderId", key)
	require.Equal(t, time.Hour, del)

	cfg.Attributes = map[string]string{AttrCleanupPolicy: "compact"}
	key, del, ok = Compaction(&cfg)
	require.True(t, ok)
	require.Empty(t, key, "KEYS by default")
	require.Equal(t, DefaultDeleteRetention, del)

	cfg.Attributes = map[string]string{AttrCleanupPolicy: "compact", AttrDeleteRetention: "0s"}
	_, del, _ = Compaction(&cfg)
	require.Zero(t, del)
	cfg.Attributes = map[string]string{AttrCleanupPolicy: "compact", AttrDeleteRetention: "7d"}
	_, del, _ = Compaction(&cfg)
	require.Equal(t, 7*24*time.Hour, del)

	cfg.Attributes = map[string]string{AttrRocketMQCleanupPolicy: "COMPACTION"}
	_, del, ok = Compaction(&cfg)
	require.True(t, ok, "RocketMQ 5.1's attribute")
	require.Equal(t, DefaultDeleteRetention, del)

	for _, attrs := range []map[string]string{nil, {AttrCleanupPolicy: "delete"}, {AttrCompactionKey: "k"},
		{AttrRocketMQCleanupPolicy: "DELETE"}} {
		_, _, ok = Compaction(&protocol.TopicConfig{Attributes: attrs})
		require.False(t, ok, "%v", attrs)
	}

	for name, change := range map[string]protocol.AttributeChange{
		"unknown policy":   {Key: AttrCleanupPolicy, Value: "compact,delete"},
		"rocketmq policy":  {Key: AttrRocketMQCleanupPolicy, Value: "compact"},
		"empty key":        {Key: AttrCompactionKey, Value: ""},
		"separator in key": {Key: AttrCompactionKey, Value: "a\x01b"},
		"not a duration":   {Key: AttrDeleteRetention, Value: "soon"},
		"too short":        {Key: AttrDeleteRetention, Value: "10s"},
		"too long":         {Key: AttrDeleteRetention, Value: "400d"},
	} {
		_, err := ApplyAttributeChanges(nil, []protocol.AttributeChange{change})
		require.ErrorIs(t, err, ErrBadAttribute, name)
	}
}

func TestCompactionCopyTopicIsReserved(t *testing.T) {
	require.Equal(t, store.CompactionCopyTopic, protocol.CompactionCopyTopic)
	require.True(t, protocol.IsSystemTopic(protocol.CompactionCopyTopic))
	require.True(t, protocol.IsSendForbiddenTopic(protocol.CompactionCopyTopic))
}
