package topicconf

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/ferrymq/ferry/protocol"
)

// Topic attributes the broker knows. A topic's attributes are kept in its config (the
// "attributes" map of topics.json); an UPDATE_AND_CREATE_TOPIC request changes them with
// "+key=value" and "-key" entries (protocol.ParseAttributeChanges). A key outside this
// table, or a value its check refuses, fails the whole request, as in RocketMQ 5: an
// attribute the broker would silently ignore is worse than a refusal.
const (
	// AttrDedupWindow turns on deduplicated sends for the topic: for this long after a
	// message is stored, a send carrying the same UNIQ_KEY is answered with the first
	// send's result and stores nothing. A Go duration from 1s to 24h.
	AttrDedupWindow = "dedupWindow"
	// AttrMessageType is RocketMQ 5's message type of the topic (NORMAL, FIFO, DELAY,
	// TRANSACTION, MIXED). Ferry keeps it for RocketMQ 5 tools and does not enforce it.
	AttrMessageType = "message.type"
)

// Bounds of AttrDedupWindow.
const (
	MinDedupWindow = time.Second
	MaxDedupWindow = 24 * time.Hour
)

// ErrBadAttribute reports an unknown topic attribute, a value its check refuses, or the
// removal of an attribute the topic does not have.
var ErrBadAttribute = errors.New("topicconf: bad topic attribute")

// knownAttributes lists the attribute keys the broker accepts, sorted.
func knownAttributes() []string {
	return []string{AttrRocketMQCleanupPolicy, AttrCleanupPolicy, AttrCompactionKey, AttrDedupWindow, AttrDeleteRetention,
		AttrMessageType, AttrRetentionBytes, AttrRetentionTime}
}

// checkAttribute validates value for key; ok is false for an unknown key.
func checkAttribute(key, value string) (ok bool, err error) {
	switch key {
	case AttrDedupWindow:
		_, err := parseDedupWindow(value)
		return true, err
	case AttrRetentionTime:
		_, err := parseRetentionTime(value)
		return true, err
	case AttrRetentionBytes:
		return true, checkRetentionBytes(value)
	case AttrCleanupPolicy:
		return true, checkCleanupPolicy(value)
	case AttrRocketMQCleanupPolicy:
		return true, checkRocketMQCleanupPolicy(value)
	case AttrCompactionKey:
		return true, checkCompactionKey(value)
	case AttrDeleteRetention:
		_, err := parseDeleteRetention(value)
		return true, err
	case AttrMessageType:
		if !slices.Contains([]string{"UNSPECIFIED", "NORMAL", "FIFO", "DELAY", "TRANSACTION", "MIXED"}, value) {
			return true, fmt.Errorf("%q is not one of NORMAL, FIFO, DELAY, TRANSACTION, MIXED", value)
		}
		return true, nil
	default:
		return false, nil
	}
}

// ApplyAttributeChanges returns cur (not modified) with changes applied. Removing an
// attribute the topic does not have is an error, as in RocketMQ 5; the result is nil when
// no attribute is left. Errors wrap ErrBadAttribute.
func ApplyAttributeChanges(cur map[string]string, changes []protocol.AttributeChange) (map[string]string, error) {
	if len(changes) == 0 {
		return maps.Clone(cur), nil
	}
	out := maps.Clone(cur)
	if out == nil {
		out = map[string]string{}
	}
	for _, c := range changes {
		known, err := checkAttribute(c.Key, c.Value)
		if !known {
			return nil, fmt.Errorf("%w: unknown attribute %q (known: %v)", ErrBadAttribute, c.Key, knownAttributes())
		}
		if c.Delete {
			if _, ok := out[c.Key]; !ok {
				return nil, fmt.Errorf("%w: cannot remove %q: the topic does not have it", ErrBadAttribute, c.Key)
			}
			delete(out, c.Key)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrBadAttribute, c.Key, err)
		}
		out[c.Key] = c.Value
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// DedupWindow returns the dedup window of a topic's config, 0 when deduplication is off
// (no attribute, or a value that does not parse: configs are checked when they change,
// so that only happens with a hand-edited file).
func DedupWindow(cfg *protocol.TopicConfig) time.Duration {
	v, ok := cfg.Attributes[AttrDedupWindow]
	if !ok {
		return 0
	}
	d, err := parseDedupWindow(v)
	if err != nil {
		return 0
	}
	return d
}

// parseDedupWindow parses and bounds an AttrDedupWindow value.
func parseDedupWindow(v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration such as 10m", v)
	}
	if d < MinDedupWindow || d > MaxDedupWindow {
		return 0, fmt.Errorf("%v is outside %v..%v", d, MinDedupWindow, MaxDedupWindow)
	}
	return d, nil
}
