package message

import (
	"bytes"
	"fmt"
	"iter"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Property encoding: UTF-8 text "key 0x01 value 0x02 key 0x01 value 0x02 ...",
// every pair (including the last) terminated by 0x02, order not significant.
// These separators are part of the on-disk and wire format.
const (
	// NameValueSeparator separates a property key from its value.
	NameValueSeparator byte = 0x01
	// PropertySeparator terminates each key/value pair.
	PropertySeparator byte = 0x02
	// KeySeparator separates the business keys inside the KEYS property.
	KeySeparator = " "
)

// Well-known property names (RocketMQ MessageConst).
const (
	// PropertyTags is the message tag (filter key).
	PropertyTags = "TAGS"
	// PropertyKeys holds space-separated business keys, each indexed.
	PropertyKeys = "KEYS"
	// PropertyUniqKey is the client message id (UNIQ_KEY), indexed.
	PropertyUniqKey = "UNIQ_KEY"
	// PropertyWaitStoreMsgOK is "true" when the producer waits for the flush;
	// the broker removes it before storing.
	PropertyWaitStoreMsgOK = "WAIT"
	// PropertyDelayLevel is the delay level, 1..18.
	PropertyDelayLevel = "DELAY"
	// PropertyTimerDeliverMs is the absolute delivery time in ms (5.x timer).
	PropertyTimerDeliverMs = "TIMER_DELIVER_MS"
	// PropertyTimerDelaySec is a relative delay in seconds (5.x timer).
	PropertyTimerDelaySec = "TIMER_DELAY_SEC"
	// PropertyTimerDelayMs is a relative delay in ms (5.x timer).
	PropertyTimerDelayMs = "TIMER_DELAY_MS"
	// PropertyTimerOutMs is the computed delivery time while in the timer
	// topic.
	PropertyTimerOutMs = "TIMER_OUT_MS"
	// PropertyRealTopic is the original topic while parked in a half, delay
	// or timer topic.
	PropertyRealTopic = "REAL_TOPIC"
	// PropertyRealQueueID is the original queue id while parked.
	PropertyRealQueueID = "REAL_QID"
	// PropertyTransactionPrepared is "true" on a half message.
	PropertyTransactionPrepared = "TRAN_MSG"
	// PropertyProducerGroup is the producer group of a half message.
	PropertyProducerGroup = "PGROUP"
	// PropertyTransactionID is the transaction id.
	PropertyTransactionID = "__transactionId__"
	// PropertyTransactionCheckTimes counts transaction checks done so far.
	PropertyTransactionCheckTimes = "TRANSACTION_CHECK_TIMES"
	// PropertyCheckImmunityTimeInSeconds delays the first transaction check.
	PropertyCheckImmunityTimeInSeconds = "CHECK_IMMUNITY_TIME_IN_SECONDS"
	// PropertyTransactionPreparedQueueOffset is the original half-queue
	// offset of a re-put half message.
	PropertyTransactionPreparedQueueOffset = "TRAN_PREPARED_QUEUE_OFFSET"
	// PropertyRetryTopic is the original topic of a retry message.
	PropertyRetryTopic = "RETRY_TOPIC"
	// PropertyOriginMessageID is the message id of the first delivery.
	PropertyOriginMessageID = "ORIGIN_MESSAGE_ID"
	// PropertyReconsumeTime is the retry count on a client-side resend.
	PropertyReconsumeTime = "RECONSUME_TIME"
	// PropertyMaxReconsumeTimes is the retry limit on a client-side resend.
	PropertyMaxReconsumeTimes = "MAX_RECONSUME_TIMES"
	// PropertyMinOffset is the queue's min offset at pull time (client-local).
	PropertyMinOffset = "MIN_OFFSET"
	// PropertyMaxOffset is the queue's max offset at pull time (client-local).
	PropertyMaxOffset = "MAX_OFFSET"
	// PropertyConsumeStartTime is the consume start time (client-local).
	PropertyConsumeStartTime = "CONSUME_START_TIME"
	// PropertyMsgRegion is the region (a broker response field, not stored).
	PropertyMsgRegion = "MSG_REGION"
	// PropertyTraceSwitch is the trace switch (a broker response field).
	PropertyTraceSwitch = "TRACE_ON"
	// PropertyCluster is the cluster name the broker adds on every send.
	PropertyCluster = "CLUSTER"
	// PropertyCorrelationID links a request-reply pair.
	PropertyCorrelationID = "CORRELATION_ID"
	// PropertyReplyToClient is the client id a reply goes to.
	PropertyReplyToClient = "REPLY_TO_CLIENT"
	// PropertyTTL is the request-reply time to live.
	PropertyTTL = "TTL"
	// PropertyMsgType is the message type; MsgTypeReply for replies.
	PropertyMsgType = "MSG_TYPE"
	// PropertyPushReplyTime is when the broker pushed a reply to its requester (ms).
	PropertyPushReplyTime = "PUSH_REPLY_TIME"
	// PropertyArriveTime is the reply arrival time.
	PropertyArriveTime = "ARRIVE_TIME"
	// PropertyShardingKey is the ordering key of ordered messages.
	PropertyShardingKey = "SHARDING_KEY"
	// PropertyInnerNum is the inner-batch message count (5.x).
	PropertyInnerNum = "INNER_NUM"
	// PropertyInnerBase is the inner-batch base offset (5.x).
	PropertyInnerBase = "INNER_BASE"
	// PropertyCRC32 is the optional whole-record CRC (5.x).
	PropertyCRC32 = "__CRC32#"
	// PropertyDLQOriginTopic is the original topic of a DLQ message (5.x).
	PropertyDLQOriginTopic = "DLQ_ORIGIN_TOPIC"
	// PropertyDLQOriginMessageID is the original id of a DLQ message (5.x).
	PropertyDLQOriginMessageID = "DLQ_ORIGIN_MESSAGE_ID"

	// MsgTypeReply is the PropertyMsgType value of a reply message.
	MsgTypeReply = "reply"
)

// ValidateProperty reports, as ErrInvalidProperty, whether key or value
// cannot be encoded: an empty key, or a 0x01/0x02 separator in either.
func ValidateProperty(key, value string) error {
	if key == "" {
		return fmt.Errorf("%w: empty key", ErrInvalidProperty)
	}
	if strings.IndexByte(key, NameValueSeparator) >= 0 || strings.IndexByte(key, PropertySeparator) >= 0 {
		return fmt.Errorf("%w: key %q contains a separator byte", ErrInvalidProperty, key)
	}
	if strings.IndexByte(value, NameValueSeparator) >= 0 || strings.IndexByte(value, PropertySeparator) >= 0 {
		return fmt.Errorf("%w: value of %q contains a separator byte", ErrInvalidProperty, key)
	}
	return nil
}

// nextFragment splits off the first 0x02-terminated fragment of b (the
// whole of b if it has no terminator).
func nextFragment(b []byte) (frag, rest []byte) {
	if i := bytes.IndexByte(b, PropertySeparator); i >= 0 {
		return b[:i], b[i+1:]
	}
	return b, nil
}

// splitPair splits a fragment into key and value. Like the Go client, it
// accepts only fragments with exactly one 0x01; unlike it, it also rejects
// an empty key. The results have their capacity clipped.
func splitPair(frag []byte) (key, value []byte, ok bool) {
	i := bytes.IndexByte(frag, NameValueSeparator)
	if i <= 0 {
		return nil, nil, false
	}
	value = frag[i+1 : len(frag) : len(frag)]
	if bytes.IndexByte(value, NameValueSeparator) >= 0 {
		return nil, nil, false
	}
	return frag[:i:i], value, true
}

// PropertyPairs iterates over the key/value pairs of raw properties in
// order, without allocating; keys and values alias props. Fragments that do
// not split into exactly one non-empty key and one value are skipped, as in
// ParseProperties. A key repeated in props is yielded each time.
func PropertyPairs(props []byte) iter.Seq2[[]byte, []byte] {
	return func(yield func(key, value []byte) bool) {
		for rest := props; len(rest) > 0; {
			var frag []byte
			frag, rest = nextFragment(rest)
			if k, v, ok := splitPair(frag); ok && !yield(k, v) {
				return
			}
		}
	}
}

// LookupProperty returns the value of key in raw properties without
// allocating; the value aliases props. When key occurs more than once, the
// last occurrence wins, matching ParseProperties.
func LookupProperty(props []byte, key string) (value []byte, ok bool) {
	for rest := props; len(rest) > 0; {
		var frag []byte
		frag, rest = nextFragment(rest)
		// Cheap pre-check before the full split.
		if len(frag) <= len(key) || frag[len(key)] != NameValueSeparator || string(frag[:len(key)]) != key {
			continue
		}
		if _, v, valid := splitPair(frag); valid {
			value, ok = v, true
		}
	}
	return value, ok
}

// ParseProperties decodes raw properties into a new map. Like the official Go
// client it splits on 0x02, then on 0x01, and keeps only fragments with
// exactly two parts; it also skips empty keys. A repeated key keeps its last
// value.
func ParseProperties(props []byte) map[string]string {
	m := make(map[string]string, bytes.Count(props, []byte{PropertySeparator})+1)
	for k, v := range PropertyPairs(props) {
		m[string(k)] = string(v)
	}
	return m
}

// AppendProperty appends one encoded pair "key 0x01 value 0x02" to dst. It
// does not look for an existing pair with the same key. It fails with
// ErrInvalidProperty (leaving dst unchanged) when the pair cannot be encoded.
func AppendProperty(dst []byte, key, value string) ([]byte, error) {
	if err := ValidateProperty(key, value); err != nil {
		return dst, err
	}
	return appendPair(dst, key, value), nil
}

// AppendPair appends one encoded pair "key 0x01 value 0x02" without checking either for
// separators: for hot paths whose key is a constant and whose value cannot hold one (a
// validated topic name, an id, a property value split out of encoded properties).
func AppendPair(dst []byte, key string, value []byte) []byte {
	dst = append(dst, key...)
	dst = append(dst, NameValueSeparator)
	dst = append(dst, value...)
	return append(dst, PropertySeparator)
}

// AppendIntPair appends "key 0x01 decimal(v) 0x02" (see AppendPair).
func AppendIntPair(dst []byte, key string, v int64) []byte {
	dst = append(dst, key...)
	dst = append(dst, NameValueSeparator)
	dst = strconv.AppendInt(dst, v, 10)
	return append(dst, PropertySeparator)
}

func appendPair[S ~string | ~[]byte](dst []byte, key, value S) []byte {
	dst = append(dst, key...)
	dst = append(dst, NameValueSeparator)
	dst = append(dst, value...)
	return append(dst, PropertySeparator)
}

// AppendProperties appends the encoding of m to dst, pairs sorted by key so
// the output is deterministic. It fails with ErrInvalidProperty (leaving dst
// unchanged) if a key or value cannot be encoded. It does not enforce
// MaxPropertiesLength; encoding a record does.
func AppendProperties(dst []byte, m map[string]string) ([]byte, error) {
	keys := slices.Sorted(maps.Keys(m))
	for _, k := range keys {
		if err := ValidateProperty(k, m[k]); err != nil {
			return dst, err
		}
	}
	for _, k := range keys {
		dst = appendPair(dst, k, m[k])
	}
	return dst, nil
}

// EncodeProperties returns the encoding of m as AppendProperties does.
func EncodeProperties(m map[string]string) ([]byte, error) {
	return AppendProperties(nil, m)
}

// AppendWithoutProperty appends to dst the raw properties props with every
// pair for key removed. The other pairs keep their order and are written in
// normalised form (each terminated by 0x02); fragments ParseProperties would
// skip are dropped.
func AppendWithoutProperty(dst, props []byte, key string) []byte {
	for k, v := range PropertyPairs(props) {
		if string(k) != key {
			dst = appendPair(dst, k, v)
		}
	}
	return dst
}

// AppendWithProperty appends to dst the raw properties props with key set to
// value: existing pairs for key are removed (as by AppendWithoutProperty) and
// the new pair is appended last. It fails with ErrInvalidProperty (leaving
// dst unchanged) when the pair cannot be encoded.
func AppendWithProperty(dst, props []byte, key, value string) ([]byte, error) {
	if err := ValidateProperty(key, value); err != nil {
		return dst, err
	}
	dst = AppendWithoutProperty(dst, props, key)
	return appendPair(dst, key, value), nil
}

// SetProperty returns new raw properties equal to props with key set to
// value; props is not modified. See AppendWithProperty.
func SetProperty(props []byte, key, value string) ([]byte, error) {
	dst := make([]byte, 0, len(props)+len(key)+len(value)+2)
	return AppendWithProperty(dst, props, key, value)
}

// RemoveProperty returns new raw properties equal to props without key;
// props is not modified. See AppendWithoutProperty.
func RemoveProperty(props []byte, key string) []byte {
	return AppendWithoutProperty(make([]byte, 0, len(props)), props, key)
}

// KeyWords iterates over the business keys in a KEYS property value: the
// pieces between KeySeparator characters, skipping empty ones (RocketMQ
// indexes each non-empty piece). It does not allocate; the words alias keys.
func KeyWords(keys []byte) iter.Seq[[]byte] {
	return func(yield func([]byte) bool) {
		for rest := keys; len(rest) > 0; {
			word := rest
			if i := bytes.IndexByte(rest, KeySeparator[0]); i >= 0 {
				word, rest = rest[:i:i], rest[i+1:]
			} else {
				rest = nil
			}
			if len(word) > 0 && !yield(word) {
				return
			}
		}
	}
}

// SplitKeys splits a KEYS property value into its non-empty business keys.
func SplitKeys(keys string) []string {
	var out []string
	for w := range strings.SplitSeq(keys, KeySeparator) {
		if w != "" {
			out = append(out, w)
		}
	}
	return out
}
