package topicconf

import (
	"fmt"
	"time"

	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/protocol"
)

// Compaction attributes: a compacted topic keeps at least the latest message of every
// key in each queue (the store's compaction rounds, store/compaction.go). Kafka spells
// the first one cleanup.policy; RocketMQ 5.1 has a COMPACTION message type instead.
const (
	// AttrCleanupPolicy is "compact" for a compacted topic, "delete" (the default) for
	// one whose messages only go with the commit log's cleanup and retention.
	AttrCleanupPolicy = "cleanupPolicy"
	// AttrCompactionKey names the property that holds a message's key; without it the
	// key is the first word of KEYS.
	AttrCompactionKey = "compactionKey"
	// AttrRocketMQCleanupPolicy is RocketMQ 5.1's spelling: "COMPACTION" makes the topic
	// compacted like cleanupPolicy=compact, "DELETE" is the default. It is accepted so
	// that RocketMQ 5 tools (mqadmin updateTopic -a +cleanup.policy=COMPACTION) work.
	AttrRocketMQCleanupPolicy = "cleanup.policy"
	// AttrDeleteRetention is how long a tombstone (a message with an empty body) of a
	// compacted topic stays readable before it is dropped: a Go duration from 0s to
	// 8760h, "d" allowed for days. Default DefaultDeleteRetention.
	AttrDeleteRetention = "deleteRetention"
)

// Values of AttrCleanupPolicy.
const (
	CleanupDelete  = "delete"
	CleanupCompact = "compact"
)

// DefaultDeleteRetention is the tombstone delay of a compacted topic without
// AttrDeleteRetention (Kafka's delete.retention.ms default).
const DefaultDeleteRetention = 24 * time.Hour

// Compaction returns a topic's compaction settings: ok is false unless its
// AttrCleanupPolicy is "compact" (or AttrRocketMQCleanupPolicy "COMPACTION"). keyProperty is empty for KEYS; a hand-edited value
// that does not parse reads as the default.
func Compaction(cfg *protocol.TopicConfig) (keyProperty string, deleteRetention time.Duration, ok bool) {
	if cfg.Attributes[AttrCleanupPolicy] != CleanupCompact && cfg.Attributes[AttrRocketMQCleanupPolicy] != "COMPACTION" {
		return "", 0, false
	}
	deleteRetention = DefaultDeleteRetention
	if v, has := cfg.Attributes[AttrDeleteRetention]; has {
		if d, err := parseDeleteRetention(v); err == nil {
			deleteRetention = d
		}
	}
	if v := cfg.Attributes[AttrCompactionKey]; checkCompactionKey(v) == nil {
		keyProperty = v
	}
	return keyProperty, deleteRetention, true
}

// checkCleanupPolicy validates an AttrCleanupPolicy value.
func checkCleanupPolicy(v string) error {
	if v != CleanupDelete && v != CleanupCompact {
		return fmt.Errorf("%q is not %s or %s", v, CleanupDelete, CleanupCompact)
	}
	return nil
}

// checkRocketMQCleanupPolicy validates an AttrRocketMQCleanupPolicy value.
func checkRocketMQCleanupPolicy(v string) error {
	if v != "DELETE" && v != "COMPACTION" {
		return fmt.Errorf("%q is not DELETE or COMPACTION", v)
	}
	return nil
}

// checkCompactionKey validates an AttrCompactionKey value: a property name.
func checkCompactionKey(v string) error {
	if err := message.ValidateProperty(v, ""); err != nil {
		return fmt.Errorf("%q is not a property name: %w", v, err)
	}
	return nil
}

// parseDeleteRetention parses and bounds an AttrDeleteRetention value.
func parseDeleteRetention(v string) (time.Duration, error) {
	if v == "0" || v == "0s" {
		return 0, nil
	}
	d, err := parseRetentionTime(v)
	if err != nil {
		return 0, err
	}
	return d, nil
}
