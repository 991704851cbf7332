package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/ferrymq/ferry/internal/fastjson"
	"github.com/ferrymq/ferry/internal/jsonstr"
)

// MessageQueue-keyed maps.
//
// Several admin bodies are Java Map<MessageQueue, V>, which fastjson writes
// with JSON objects as keys — not valid JSON:
//
//	{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:100,{"brokerName":"b","queueId":1,"topic":"T"}:200}}
//
// Encoders here write exactly that form: compact, keys in fastjson's
// alphabetical field order (brokerName, queueId, topic), entries sorted by
// topic, broker name and queue id. It is what Java (fastjson) reads and what
// the Go client's hand-written RESET_CONSUMER_CLIENT_OFFSET parser expects
// (it splits the raw text on ",{" and "}:", so no whitespace is allowed).
//
// Decoders accept that form, the same keys written as JSON strings holding
// the object ({"{\"brokerName\":…}":100}), and gson's array-of-pairs form
// ([[{"topic":"T",…},100],…]).

// appendMQKey writes mq as a compact JSON object in fastjson field order.
func appendMQKey(b []byte, mq MessageQueue) []byte {
	b = append(b, `{"brokerName":`...)
	b = jsonstr.Append(b, mq.BrokerName)
	b = append(b, `,"queueId":`...)
	b = strconv.AppendInt(b, int64(mq.QueueID), 10)
	b = append(b, `,"topic":`...)
	b = jsonstr.Append(b, mq.Topic)
	return append(b, '}')
}

// appendMQMap writes m in fastjson's object-key form, sorted by queue, with
// appendV writing each value. An empty map is written as {}.
func appendMQMap[V any](b []byte, m map[MessageQueue]V, appendV func([]byte, V) ([]byte, error)) ([]byte, error) {
	b = append(b, '{')
	var err error
	for i, mq := range slices.SortedFunc(maps.Keys(m), CompareMessageQueue) {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendMQKey(b, mq)
		b = append(b, ':')
		if b, err = appendV(b, m[mq]); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// appendInt64Value writes an int64 map value.
func appendInt64Value(b []byte, v int64) ([]byte, error) {
	return strconv.AppendInt(b, v, 10), nil
}

// mqKey is a MessageQueue map key written as the text of a JSON object; the
// pre-pass fastjson.QuoteObjectKeys turns fastjson's object keys into such strings.
type mqKey MessageQueue

// UnmarshalText parses the JSON object text of a queue key.
func (k *mqKey) UnmarshalText(text []byte) error {
	trimmed := bytes.TrimSpace(text)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return fmt.Errorf("message queue key %.64q is not a JSON object", text)
	}
	var mq MessageQueue
	if err := json.Unmarshal(trimmed, &mq); err != nil {
		return fmt.Errorf("message queue key: %w", err)
	}
	*k = mqKey(mq)
	return nil
}

// decodeMQMap decodes one MessageQueue-keyed map from raw, which has been
// through fastjson.QuoteObjectKeys. null and empty maps decode as nil.
func decodeMQMap[V any](raw json.RawMessage) (map[MessageQueue]V, error) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		return nil, nil
	}
	out := make(map[MessageQueue]V)
	if trimmed[0] == '[' {
		// gson: [[{"topic":…},v],…]
		var pairs [][]json.RawMessage
		if err := json.Unmarshal(trimmed, &pairs); err != nil {
			return nil, err
		}
		for i, p := range pairs {
			if len(p) != 2 {
				return nil, fmt.Errorf("entry %d has %d elements, want a [queue, value] pair", i, len(p))
			}
			var k mqKey
			if err := k.UnmarshalText(p[0]); err != nil {
				return nil, err
			}
			var v V
			if err := json.Unmarshal(p[1], &v); err != nil {
				return nil, err
			}
			out[MessageQueue(k)] = v
		}
	} else {
		var m map[mqKey]V
		if err := json.Unmarshal(trimmed, &m); err != nil {
			return nil, err
		}
		for k, v := range m {
			out[MessageQueue(k)] = v
		}
	}
	return nilMapIfEmpty(out), nil
}

// decodeJSONObjectKeys is decodeJSON for bodies that may hold fastjson maps
// with object keys: those keys are turned into JSON strings first.
func decodeJSONObjectKeys(what string, data []byte, v any) error {
	return decodeJSON(what, fastjson.QuoteObjectKeys(data), v)
}
