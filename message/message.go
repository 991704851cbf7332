package message

import (
	"fmt"
	"strconv"
	"strings"
)

// Message is a message as a producer builds it: topic, user flag, body and
// properties. It is a plain value with no locking; do not modify one from
// several goroutines.
type Message struct {
	// Topic is the destination topic.
	Topic string
	// Flag is an opaque user flag stored with the message.
	Flag int32
	// Body is the payload.
	Body []byte
	// Properties holds the message properties; nil means none. The setters
	// allocate it on first use.
	Properties map[string]string
}

// NewMessage returns a message for topic with body.
func NewMessage(topic string, body []byte) *Message {
	return &Message{Topic: topic, Body: body}
}

// Property returns the value of key, or "" if it is not set.
func (m *Message) Property(key string) string { return m.Properties[key] }

// SetProperty sets key to value. Encoding fails later with
// ErrInvalidProperty if key is empty or either contains 0x01 or 0x02; see
// Validate.
func (m *Message) SetProperty(key, value string) {
	if m.Properties == nil {
		m.Properties = make(map[string]string)
	}
	m.Properties[key] = value
}

// RemoveProperty deletes key.
func (m *Message) RemoveProperty(key string) { delete(m.Properties, key) }

// Tags returns the TAGS property.
func (m *Message) Tags() string { return m.Property(PropertyTags) }

// SetTags sets the TAGS property (the filter tag), or removes it when tags is
// empty.
func (m *Message) SetTags(tags string) { m.setOrRemove(PropertyTags, tags) }

// Keys returns the business keys of the KEYS property.
func (m *Message) Keys() []string { return SplitKeys(m.Property(PropertyKeys)) }

// SetKeys sets the KEYS property to keys joined by KeySeparator (keys
// themselves should not contain it), or removes it when keys is empty.
func (m *Message) SetKeys(keys ...string) {
	m.setOrRemove(PropertyKeys, strings.Join(keys, KeySeparator))
}

// DelayLevel returns the DELAY property (1..18 for 1s..2h), or 0 if it is not
// set or not a number.
func (m *Message) DelayLevel() int {
	n, err := strconv.Atoi(m.Property(PropertyDelayLevel))
	if err != nil {
		return 0
	}
	return n
}

// SetDelayLevel sets the DELAY property, or removes it when level <= 0. The
// broker clamps levels above its highest level.
func (m *Message) SetDelayLevel(level int) {
	if level <= 0 {
		m.RemoveProperty(PropertyDelayLevel)
		return
	}
	m.SetProperty(PropertyDelayLevel, strconv.Itoa(level))
}

// UniqKey returns the UNIQ_KEY property (the client message id).
func (m *Message) UniqKey() string { return m.Property(PropertyUniqKey) }

// SetUniqKey sets the UNIQ_KEY property, or removes it when id is empty.
func (m *Message) SetUniqKey(id string) { m.setOrRemove(PropertyUniqKey, id) }

// ShardingKey returns the SHARDING_KEY property (the ordering key).
func (m *Message) ShardingKey() string { return m.Property(PropertyShardingKey) }

// SetShardingKey sets the SHARDING_KEY property, or removes it when key is
// empty.
func (m *Message) SetShardingKey(key string) { m.setOrRemove(PropertyShardingKey, key) }

func (m *Message) setOrRemove(key, value string) {
	if value == "" {
		m.RemoveProperty(key)
		return
	}
	m.SetProperty(key, value)
}

// AppendProperties appends the message's encoded properties to dst; see the
// package-level AppendProperties.
func (m *Message) AppendProperties(dst []byte) ([]byte, error) {
	return AppendProperties(dst, m.Properties)
}

// Validate checks the message before sending: a non-empty topic of at most
// MaxTopicLength bytes, a non-empty body of at most maxBodySize bytes
// (DefaultMaxBodySize if maxBodySize <= 0), encodable properties of at most
// MaxPropertiesLength bytes.
func (m *Message) Validate(maxBodySize int) error {
	switch {
	case m.Topic == "":
		return ErrTopicEmpty
	case len(m.Topic) > MaxTopicLength:
		return fmt.Errorf("%w: %d bytes, max %d", ErrTopicTooLong, len(m.Topic), MaxTopicLength)
	case len(m.Body) == 0:
		return ErrBodyEmpty
	}
	if maxBodySize <= 0 {
		maxBodySize = DefaultMaxBodySize
	}
	if len(m.Body) > maxBodySize {
		return fmt.Errorf("%w: %d bytes, max %d", ErrBodyTooLarge, len(m.Body), maxBodySize)
	}
	size := 0
	for k, v := range m.Properties {
		if err := ValidateProperty(k, v); err != nil {
			return err
		}
		size += len(k) + len(v) + 2
	}
	if size > MaxPropertiesLength {
		return fmt.Errorf("%w: %d bytes, max %d", ErrPropertiesTooLong, size, MaxPropertiesLength)
	}
	return nil
}
