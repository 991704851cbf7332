package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/ferrymq/ferry/internal/jsonstr"
)

// ProcessQueueInfo is one queue's state in a [ConsumerRunningInfo] (Java
// ProcessQueueInfo). Java writes the dropped flag as "droped" (sic), the Go
// client as "dropped"; decoding accepts both, encoding writes Java's.
type ProcessQueueInfo struct {
	CommitOffset            int64 `json:"commitOffset"`
	CachedMsgMinOffset      int64 `json:"cachedMsgMinOffset"`
	CachedMsgMaxOffset      int64 `json:"cachedMsgMaxOffset"`
	CachedMsgCount          int32 `json:"cachedMsgCount"`
	CachedMsgSizeInMiB      int32 `json:"cachedMsgSizeInMiB"`
	TransactionMsgMinOffset int64 `json:"transactionMsgMinOffset"`
	TransactionMsgMaxOffset int64 `json:"transactionMsgMaxOffset"`
	TransactionMsgCount     int32 `json:"transactionMsgCount"`
	Locked                  bool  `json:"locked"`
	TryUnlockTimes          int64 `json:"tryUnlockTimes"`
	LastLockTimestamp       int64 `json:"lastLockTimestamp"`
	Dropped                 bool  `json:"droped"`
	LastPullTimestamp       int64 `json:"lastPullTimestamp"`
	LastConsumeTimestamp    int64 `json:"lastConsumeTimestamp"`
}

// UnmarshalJSON accepts Java's "droped" and the Go client's "dropped".
func (p *ProcessQueueInfo) UnmarshalJSON(data []byte) error {
	type plain ProcessQueueInfo
	var v struct {
		plain
		GoDropped *bool `json:"dropped"`
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	*p = ProcessQueueInfo(v.plain)
	if v.GoDropped != nil {
		p.Dropped = *v.GoDropped
	}
	return nil
}

// appendProcessQueueInfo writes one mqTable value.
func appendProcessQueueInfo(b []byte, p ProcessQueueInfo) ([]byte, error) {
	v, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("%w: consumer running info: %w", ErrBadBody, err)
	}
	return append(b, v...), nil
}

// ConsumeStatus is one topic's consumption figures in a [ConsumerRunningInfo]
// (Java ConsumeStatus): RTs in ms, rates per second, failures in the last hour.
type ConsumeStatus struct {
	PullRT            float64 `json:"pullRT"`
	PullTPS           float64 `json:"pullTPS"`
	ConsumeRT         float64 `json:"consumeRT"`
	ConsumeOKTPS      float64 `json:"consumeOKTPS"`
	ConsumeFailedTPS  float64 `json:"consumeFailedTPS"`
	ConsumeFailedMsgs int64   `json:"consumeFailedMsgs"`
}

// Keys of ConsumerRunningInfo.Properties that RocketMQ's clients set.
const (
	PropNameServerAddr         = "PROP_NAMESERVER_ADDR"
	PropThreadPoolCoreSize     = "PROP_THREADPOOL_CORE_SIZE"
	PropConsumeOrderly         = "PROP_CONSUMEORDERLY"
	PropConsumeType            = "PROP_CONSUME_TYPE"
	PropClientVersion          = "PROP_CLIENT_VERSION"
	PropConsumerStartTimestamp = "PROP_CONSUMER_START_TIMESTAMP"
)

// ConsumerRunningInfo is the body of a GET_CONSUMER_RUNNING_INFO (307)
// response: one consumer client's state for one group (Java
// ConsumerRunningInfo):
//
//	{"jstack":"","mqTable":{{"brokerName":"b","queueId":0,"topic":"T"}:{"commitOffset":7,…}},
//	 "properties":{"PROP_CONSUME_TYPE":"CONSUME_PASSIVELY",…},"statusTable":{"T":{"pullRT":0.0,…}},
//	 "subscriptionSet":[{"topic":"T","subString":"*",…}]}
//
// mqTable is MessageQueue-keyed, in fastjson's object-key form (see mqmap.go).
// The Go client writes the same fields in another order, with a space before
// "jstack" and the jstack text unescaped; decoding copes with both.
type ConsumerRunningInfo struct {
	Properties      map[string]string
	SubscriptionSet []SubscriptionData
	MQTable         map[MessageQueue]ProcessQueueInfo
	StatusTable     map[string]ConsumeStatus
	Jstack          string // a thread (goroutine) dump, when asked for
}

// EncodeConsumerRunningInfo encodes r compactly, fields in fastjson's
// alphabetical order. An encoding failure (a NaN rate) wraps ErrBadBody.
func EncodeConsumerRunningInfo(r *ConsumerRunningInfo) ([]byte, error) {
	b := append(make([]byte, 0, 512+len(r.MQTable)*320+len(r.Jstack)), `{"jstack":`...)
	b = jsonstr.Append(b, r.Jstack)
	b = append(b, `,"mqTable":`...)
	b, err := appendMQMap(b, r.MQTable, appendProcessQueueInfo)
	if err != nil {
		return nil, err
	}
	// Never null: Java tools read these without a null check.
	props, status, subs := r.Properties, r.StatusTable, r.SubscriptionSet
	if props == nil {
		props = map[string]string{}
	}
	if status == nil {
		status = map[string]ConsumeStatus{}
	}
	if subs == nil {
		subs = []SubscriptionData{}
	}
	for _, f := range []struct {
		key string
		v   any
	}{{"properties", props}, {"statusTable", status}, {"subscriptionSet", subs}} {
		v, err := json.Marshal(f.v)
		if err != nil {
			return nil, fmt.Errorf("%w: consumer running info: %s: %w", ErrBadBody, f.key, err)
		}
		b = append(b, ',', '"')
		b = append(b, f.key...)
		b = append(b, '"', ':')
		b = append(b, v...)
	}
	return append(b, '}'), nil
}

// DecodeConsumerRunningInfo decodes a GET_CONSUMER_RUNNING_INFO response body
// from a Java, Go or Ferry client. Empty maps and lists decode as nil. Errors wrap
// ErrBadBody.
func DecodeConsumerRunningInfo(data []byte) (*ConsumerRunningInfo, error) {
	r, err := decodeRunningInfo(data)
	if err == nil {
		return r, nil
	}
	// The Go client writes `, "jstack":"<dump>" }` without escaping the dump.
	rest, jstack, ok := cutRawJstack(data)
	if !ok {
		return nil, err
	}
	r, err2 := decodeRunningInfo(rest)
	if err2 != nil {
		return nil, err
	}
	r.Jstack = jstack
	return r, nil
}

func decodeRunningInfo(data []byte) (*ConsumerRunningInfo, error) {
	var raw struct {
		Properties      map[string]string        `json:"properties"`
		SubscriptionSet []SubscriptionData       `json:"subscriptionSet"`
		MQTable         json.RawMessage          `json:"mqTable"`
		StatusTable     map[string]ConsumeStatus `json:"statusTable"`
		Jstack          string                   `json:"jstack"`
	}
	if err := decodeJSONObjectKeys("consumer running info", data, &raw); err != nil {
		return nil, err
	}
	table, err := decodeMQMap[ProcessQueueInfo](raw.MQTable)
	if err != nil {
		return nil, fmt.Errorf("%w: consumer running info: mqTable: %w", ErrBadBody, err)
	}
	raw.SubscriptionSet = nilIfEmpty(raw.SubscriptionSet)
	for i := range raw.SubscriptionSet {
		s := &raw.SubscriptionSet[i]
		s.TagsSet, s.CodeSet = nilIfEmpty(s.TagsSet), nilIfEmpty(s.CodeSet)
	}
	return &ConsumerRunningInfo{Properties: nilMapIfEmpty(raw.Properties), SubscriptionSet: raw.SubscriptionSet,
		MQTable: table, StatusTable: nilMapIfEmpty(raw.StatusTable), Jstack: raw.Jstack}, nil
}

// rawJstackKey starts the Go client's jstack field.
var rawJstackKey = []byte(`"jstack":"`)

// cutRawJstack splits a Go client's body ending in `"jstack":"<dump>" }`, with
// the dump unescaped, into the body with an empty jstack and the dump (invalid
// UTF-8 bytes replaced by U+FFFD, as a JSON decoder would).
func cutRawJstack(data []byte) ([]byte, string, bool) {
	i := bytes.LastIndex(data, rawJstackKey)
	if i < 0 {
		return nil, "", false
	}
	tail := bytes.TrimRight(data[i+len(rawJstackKey):], " \t\r\n")
	if len(tail) == 0 || tail[len(tail)-1] != '}' {
		return nil, "", false
	}
	tail = bytes.TrimRight(tail[:len(tail)-1], " \t\r\n")
	if len(tail) == 0 || tail[len(tail)-1] != '"' {
		return nil, "", false
	}
	dump := tail[:len(tail)-1]
	rest := append(bytes.Clone(data[:i]), `"jstack":""}`...)
	return rest, validUTF8(dump), true
}

// validUTF8 returns b as a string with each invalid byte replaced by U+FFFD.
func validUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	out := make([]byte, 0, len(b)+8)
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n == 1 {
			out = utf8.AppendRune(out, utf8.RuneError)
		} else {
			out = append(out, b[:n]...)
		}
		b = b[n:]
	}
	return string(out)
}
