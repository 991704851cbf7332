package groupconf

import (
	"encoding/json"
	"fmt"

	"github.com/ferrymq/ferry/protocol"
)

// Limits on a Config's numbers.
const (
	// MaxRetryQueueNums is the largest retry queue count (the topic limit).
	MaxRetryQueueNums = 1024
)

// Config is the subscription group config of one consumer group (RocketMQ
// SubscriptionGroupConfig, 4.x fields). JSON names are RocketMQ's.
type Config struct {
	// GroupName is the consumer group.
	GroupName string `json:"groupName"`
	// ConsumeEnable lets the group pull; false answers pulls with NO_PERMISSION.
	ConsumeEnable bool `json:"consumeEnable"`
	// ConsumeFromMinEnable lets a new group start from the queue's min offset.
	ConsumeFromMinEnable bool `json:"consumeFromMinEnable"`
	// ConsumeBroadcastEnable allows the BROADCASTING message model.
	ConsumeBroadcastEnable bool `json:"consumeBroadcastEnable"`
	// RetryQueueNums is the queue count of the group's %RETRY% topic; 0 means
	// failed messages sent back are dropped.
	RetryQueueNums int32 `json:"retryQueueNums"`
	// RetryMaxTimes is how many times a message is retried before it goes to
	// the %DLQ% topic, when the client does not say.
	RetryMaxTimes int32 `json:"retryMaxTimes"`
	// BrokerID is the broker the group normally pulls from (0 = master).
	BrokerID int64 `json:"brokerId"`
	// WhichBrokerWhenConsumeSlowly is the broker suggested when the group
	// lags far behind (1 = first slave).
	WhichBrokerWhenConsumeSlowly int64 `json:"whichBrokerWhenConsumeSlowly"`
	// NotifyConsumerIDsChangedEnable sends NOTIFY_CONSUMER_IDS_CHANGED to the
	// members when the group's membership changes.
	NotifyConsumerIDsChangedEnable bool `json:"notifyConsumerIdsChangedEnable"`
}

// DefaultConfig returns the RocketMQ defaults for group: consuming,
// min-offset start and broadcasting allowed, 1 retry queue, 16 retries,
// broker 0, broker 1 when slow, change notifications on.
func DefaultConfig(group string) Config {
	return Config{
		GroupName:                      group,
		ConsumeEnable:                  true,
		ConsumeFromMinEnable:           true,
		ConsumeBroadcastEnable:         true,
		RetryQueueNums:                 1,
		RetryMaxTimes:                  16,
		BrokerID:                       0,
		WhichBrokerWhenConsumeSlowly:   1,
		NotifyConsumerIDsChangedEnable: true,
	}
}

// UnmarshalJSON decodes a RocketMQ SubscriptionGroupConfig object; fields
// that are absent keep the RocketMQ defaults (see DefaultConfig) and unknown
// fields are ignored.
func (c *Config) UnmarshalJSON(data []byte) error {
	type plain Config
	p := plain(DefaultConfig(""))
	if err := json.Unmarshal(data, &p); err != nil {
		return fmt.Errorf("groupconf: subscription group config: %w", err)
	}
	*c = Config(p)
	return nil
}

// Validate checks c; the error wraps ErrInvalidConfig.
func (c *Config) Validate() error {
	if err := protocol.ValidateGroup(c.GroupName); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	switch {
	case c.RetryQueueNums < 0 || c.RetryQueueNums > MaxRetryQueueNums:
		return fmt.Errorf("%w: %q: retryQueueNums %d outside 0..%d",
			ErrInvalidConfig, c.GroupName, c.RetryQueueNums, MaxRetryQueueNums)
	case c.RetryMaxTimes < 0:
		return fmt.Errorf("%w: %q: retryMaxTimes %d is negative", ErrInvalidConfig, c.GroupName, c.RetryMaxTimes)
	case c.BrokerID < 0 || c.WhichBrokerWhenConsumeSlowly < 0:
		return fmt.Errorf("%w: %q: broker ids %d/%d must not be negative",
			ErrInvalidConfig, c.GroupName, c.BrokerID, c.WhichBrokerWhenConsumeSlowly)
	}
	return nil
}

// Table is a snapshot of the whole subscription group table with its data
// version: the contents of subscriptionGroup.json and the body of
// GET_ALL_SUBSCRIPTIONGROUP_CONFIG.
type Table struct {
	// SubscriptionGroupTable maps a group name to its config.
	SubscriptionGroupTable map[string]Config
	// DataVersion is the table's version; Counter stays within int32.
	DataVersion protocol.DataVersion
}

// tableJSON is Table's JSON shape (forbiddenTable is RocketMQ 5.x and always
// empty here).
type tableJSON struct {
	SubscriptionGroupTable map[string]Config    `json:"subscriptionGroupTable"`
	DataVersion            protocol.DataVersion `json:"dataVersion"`
	ForbiddenTable         struct{}             `json:"forbiddenTable"`
}

// MarshalJSON writes the RocketMQ shape (see the package doc), with {} for
// an empty table and an empty forbiddenTable.
func (t Table) MarshalJSON() ([]byte, error) {
	return json.Marshal(t.shape())
}

func (t *Table) shape() tableJSON {
	groups := t.SubscriptionGroupTable
	if groups == nil {
		groups = map[string]Config{}
	}
	return tableJSON{SubscriptionGroupTable: groups, DataVersion: t.DataVersion}
}
