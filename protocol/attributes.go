package protocol

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Topic attributes (RocketMQ 5.x) travel in UPDATE_AND_CREATE_TOPIC's attributes field as
// a list of changes separated by ',':
//
//	+key=value   set key to value (create or replace)
//	-key         remove key (no value)
//
// for example "+dedupWindow=10m,-message.type". Keys and values are non-empty and hold
// no ',' or '=' (a value may not hold '='); nothing is trimmed. An empty field means no
// change: the topic keeps the attributes it has. The broker stores the resulting map in
// the topic's config ("attributes" in topics.json and in GET_ALL_TOPIC_CONFIG) under the
// keys without their sign.

// ErrBadAttributes reports an attributes field that does not follow the format above.
var ErrBadAttributes = errors.New("protocol: malformed topic attributes")

// AttributeChange is one entry of an attributes field.
type AttributeChange struct {
	Key    string // the attribute's name, without the sign
	Value  string // the new value; empty for a removal
	Delete bool   // "-key": remove the attribute
}

// ParseAttributeChanges decodes an attributes field; an empty field is no change. A key
// named twice is an error, as in RocketMQ.
func ParseAttributeChanges(s string) ([]AttributeChange, error) {
	if s == "" {
		return nil, nil
	}
	var out []AttributeChange
	for item := range strings.SplitSeq(s, ",") {
		c, err := parseAttributeChange(item)
		if err != nil {
			return nil, err
		}
		if slices.ContainsFunc(out, func(o AttributeChange) bool { return o.Key == c.Key }) {
			return nil, fmt.Errorf("%w: %q named twice", ErrBadAttributes, c.Key)
		}
		out = append(out, c)
	}
	return out, nil
}

// parseAttributeChange decodes one "+key=value" or "-key" entry.
func parseAttributeChange(item string) (AttributeChange, error) {
	if len(item) < 2 {
		return AttributeChange{}, fmt.Errorf("%w: entry %q: want +key=value or -key", ErrBadAttributes, item)
	}
	body := item[1:]
	switch item[0] {
	case '+':
		key, value, ok := strings.Cut(body, "=")
		if !ok || key == "" || value == "" || strings.Contains(value, "=") {
			return AttributeChange{}, fmt.Errorf("%w: entry %q: want +key=value", ErrBadAttributes, item)
		}
		return AttributeChange{Key: key, Value: value}, nil
	case '-':
		if strings.Contains(body, "=") {
			return AttributeChange{}, fmt.Errorf("%w: entry %q: a removal takes no value", ErrBadAttributes, item)
		}
		return AttributeChange{Key: body, Delete: true}, nil
	default:
		return AttributeChange{}, fmt.Errorf("%w: entry %q: starts with neither + nor -", ErrBadAttributes, item)
	}
}

// FormatAttributeChanges encodes changes as an attributes field, in the order given. It
// does not validate: ParseAttributeChanges of its output reports what is wrong.
func FormatAttributeChanges(changes []AttributeChange) string {
	var b strings.Builder
	for i, c := range changes {
		if i > 0 {
			b.WriteByte(',')
		}
		if c.Delete {
			b.WriteByte('-')
			b.WriteString(c.Key)
			continue
		}
		b.WriteByte('+')
		b.WriteString(c.Key)
		b.WriteByte('=')
		b.WriteString(c.Value)
	}
	return b.String()
}
