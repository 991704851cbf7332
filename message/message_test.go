package message

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMessageAccessors(t *testing.T) {
	m := NewMessage("TopicTest", []byte("body"))
	require.Empty(t, m.Tags())
	require.Nil(t, m.Keys())
	require.Zero(t, m.DelayLevel())

	m.SetTags("TagA")
	m.SetKeys("k1", "k2")
	m.SetDelayLevel(3)
	m.SetUniqKey("ID1")
	m.SetShardingKey("order-1")
	m.SetProperty("custom", "v")
	require.Equal(t, "TagA", m.Tags())
	require.Equal(t, []string{"k1", "k2"}, m.Keys())
	require.Equal(t, 3, m.DelayLevel())
	require.Equal(t, "ID1", m.UniqKey())
	require.Equal(t, "order-1", m.ShardingKey())
	require.Equal(t, map[string]string{
		PropertyTags: "TagA", PropertyKeys: "k1 k2", PropertyDelayLevel: "3",
		PropertyUniqKey: "ID1", PropertyShardingKey: "order-1", "custom": "v",
	}, m.Properties)

	b, err := m.AppendProperties(nil)
	require.NoError(t, err)
	require.Equal(t, m.Properties, ParseProperties(b))

	m.SetTags("")
	m.SetKeys()
	m.SetDelayLevel(0)
	m.SetUniqKey("")
	m.SetShardingKey("")
	m.RemoveProperty("custom")
	require.Empty(t, m.Properties)

	m.SetProperty(PropertyDelayLevel, "x")
	require.Zero(t, m.DelayLevel())
}

func TestMessageValidate(t *testing.T) {
	ok := func() *Message {
		m := NewMessage("T", []byte("b"))
		m.SetTags("TagA")
		return m
	}
	require.NoError(t, ok().Validate(0))

	m := ok()
	m.Topic = ""
	require.ErrorIs(t, m.Validate(0), ErrTopicEmpty)
	m.Topic = strings.Repeat("t", MaxTopicLength+1)
	require.ErrorIs(t, m.Validate(0), ErrTopicTooLong)
	m.Topic = strings.Repeat("t", MaxTopicLength)
	require.NoError(t, m.Validate(0))

	m = ok()
	m.Body = nil
	require.ErrorIs(t, m.Validate(0), ErrBodyEmpty)
	m.Body = make([]byte, 11)
	require.ErrorIs(t, m.Validate(10), ErrBodyTooLarge)
	require.NoError(t, m.Validate(11))
	m.Body = make([]byte, DefaultMaxBodySize+1)
	require.ErrorIs(t, m.Validate(0), ErrBodyTooLarge)

	m = ok()
	m.SetProperty("k", "bad\x02")
	require.ErrorIs(t, m.Validate(0), ErrInvalidProperty)

	m = ok()
	m.SetProperty("big", strings.Repeat("v", MaxPropertiesLength))
	require.ErrorIs(t, m.Validate(0), ErrPropertiesTooLong)
}
