package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/ferrymq/ferry/remoting"
)

// ConsumeType says whether a consumer is pushed to or pulls itself.
type ConsumeType string

// Consume types.
const (
	ConsumePassively ConsumeType = "CONSUME_PASSIVELY" // push consumer
	ConsumeActively  ConsumeType = "CONSUME_ACTIVELY"  // pull / lite-pull consumer
)

// MessageModel is a consumer group's delivery model.
type MessageModel string

// Message models.
const (
	Clustering   MessageModel = "CLUSTERING"   // each message to one member; offsets on the broker
	Broadcasting MessageModel = "BROADCASTING" // each message to every member; offsets local
)

// ConsumeFromWhere is where a new consumer group starts in a queue.
type ConsumeFromWhere string

// Start positions, used when the group has no stored offset for a queue.
const (
	// ConsumeFromLastOffset starts at the queue's max offset (new messages only).
	ConsumeFromLastOffset ConsumeFromWhere = "CONSUME_FROM_LAST_OFFSET"
	// ConsumeFromFirstOffset starts at offset 0.
	ConsumeFromFirstOffset ConsumeFromWhere = "CONSUME_FROM_FIRST_OFFSET"
	// ConsumeFromTimestamp starts at SEARCH_OFFSET_BY_TIMESTAMP of a client-side time.
	ConsumeFromTimestamp ConsumeFromWhere = "CONSUME_FROM_TIMESTAMP"
	// ConsumeFromMinOffset is a deprecated Java value.
	ConsumeFromMinOffset ConsumeFromWhere = "CONSUME_FROM_MIN_OFFSET"
	// ConsumeFromMaxOffset is a deprecated Java value.
	ConsumeFromMaxOffset ConsumeFromWhere = "CONSUME_FROM_MAX_OFFSET"
	// ConsumeFromLastOffsetAndFromMinWhenBootFirst is a deprecated Java value.
	ConsumeFromLastOffsetAndFromMinWhenBootFirst ConsumeFromWhere = "CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST"
)

// ExpressionType is the language of a subscription expression.
type ExpressionType string

// Expression types. An empty value means ExpressionTag.
const (
	ExpressionTag   ExpressionType = "TAG"   // "*" or "tagA || tagB"
	ExpressionSQL92 ExpressionType = "SQL92" // SQL92 over message properties
)

// SubscribeAll is the TAG expression that matches every message.
const SubscribeAll = "*"

// FerryServerKey is the ext field a Ferry broker adds to its HEART_BEAT response
// (value: the version of Ferry's native protocol, "1"): Ferry's own client then switches
// that connection to the msgpack header. RocketMQ clients ignore it.
const FerryServerKey = "ferryServer"

// FerryServerVersion is the value of FerryServerKey.
const FerryServerVersion = "1"

// HeartbeatData is the JSON body of HEART_BEAT (34): a client's producer
// and consumer groups. The broker registers the client connection under
// every group, keeps each consumer group's subscriptions, creates missing
// %RETRY% topics, notifies consumer groups whose membership changed, and
// answers SUCCESS with its version in the command header.
//
// Encode with [EncodeHeartbeatData] (or json.Marshal), decode with
// [DecodeHeartbeatData]. Empty lists are written as [] and decode as nil.
type HeartbeatData struct {
	ClientID        string         `json:"clientID"`
	ProducerDataSet []ProducerData `json:"producerDataSet"`
	ConsumerDataSet []ConsumerData `json:"consumerDataSet"`
	// HeartbeatFingerprint and WithoutSub are Java 5.x heartbeat-V2 fields.
	HeartbeatFingerprint int32 `json:"heartbeatFingerprint,omitempty"`
	WithoutSub           bool  `json:"withoutSub,omitempty"`
}

// ProducerData names one producer group of a client.
type ProducerData struct {
	GroupName string `json:"groupName"`
}

// ConsumerData describes one consumer group of a client.
type ConsumerData struct {
	GroupName           string             `json:"groupName"`
	ConsumeType         ConsumeType        `json:"consumeType"`
	MessageModel        MessageModel       `json:"messageModel"`
	ConsumeFromWhere    ConsumeFromWhere   `json:"consumeFromWhere"`
	SubscriptionDataSet []SubscriptionData `json:"subscriptionDataSet"`
	UnitMode            bool               `json:"unitMode"`
}

// SubscriptionData is one topic subscription of a consumer group.
type SubscriptionData struct {
	ClassFilterMode bool           `json:"classFilterMode"`
	Topic           string         `json:"topic"`
	SubString       string         `json:"subString"` // "*", "a || b", or an SQL92 expression
	TagsSet         []string       `json:"tagsSet"`   // exact tags; filter on these
	CodeSet         CodeSet        `json:"codeSet"`   // tag hash codes; see CodeSet
	SubVersion      int64          `json:"subVersion"`
	ExpressionType  ExpressionType `json:"expressionType"`
	// FilterClassSource is a Java-only field of the obsolete class filter.
	FilterClassSource string `json:"filterClassSource,omitempty"`
}

// CodeSet holds tag hash codes. The Go client sends them as JSON strings
// ("2598919") hashed over UTF-8 bytes; Java sends numbers hashed over UTF-16
// units, so they differ for non-ASCII tags: filter on TagsSet instead.
// Decoding accepts both forms; encoding writes numbers, like Java.
type CodeSet []int32

// MarshalJSON writes the codes as a JSON array of numbers ([] when empty).
func (c CodeSet) MarshalJSON() ([]byte, error) {
	b := append(make([]byte, 0, 2+len(c)*11), '[')
	for i, v := range c {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(v), 10)
	}
	return append(b, ']'), nil
}

// UnmarshalJSON accepts null or an array whose items are 32-bit integers
// written as JSON numbers or as decimal strings.
func (c *CodeSet) UnmarshalJSON(data []byte) error {
	if bytes.Equal(bytes.TrimSpace(data), []byte("null")) {
		*c = nil
		return nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(data, &items); err != nil {
		return fmt.Errorf("codeSet: %w", err)
	}
	out := make(CodeSet, 0, len(items))
	for _, it := range items {
		text := string(it)
		if len(it) > 0 && it[0] == '"' {
			if err := json.Unmarshal(it, &text); err != nil {
				return fmt.Errorf("codeSet: %w", err)
			}
		}
		v, err := strconv.ParseInt(text, 10, 32)
		if err != nil {
			return fmt.Errorf("codeSet: item %.32q is not a 32-bit integer", text)
		}
		out = append(out, int32(v))
	}
	*c = out
	return nil
}

// MarshalJSON writes nil lists as [].
func (h HeartbeatData) MarshalJSON() ([]byte, error) {
	type plain HeartbeatData
	p := plain(h)
	if p.ProducerDataSet == nil {
		p.ProducerDataSet = []ProducerData{}
	}
	if p.ConsumerDataSet == nil {
		p.ConsumerDataSet = []ConsumerData{}
	}
	return json.Marshal(p)
}

// MarshalJSON writes a nil subscription list as [].
func (c ConsumerData) MarshalJSON() ([]byte, error) {
	type plain ConsumerData
	p := plain(c)
	if p.SubscriptionDataSet == nil {
		p.SubscriptionDataSet = []SubscriptionData{}
	}
	return json.Marshal(p)
}

// MarshalJSON writes nil tag and code sets as [].
func (s SubscriptionData) MarshalJSON() ([]byte, error) {
	type plain SubscriptionData
	p := plain(s)
	if p.TagsSet == nil {
		p.TagsSet = []string{}
	}
	if p.CodeSet == nil {
		p.CodeSet = CodeSet{}
	}
	return json.Marshal(p)
}

// EncodeHeartbeatData encodes h as compact JSON.
func EncodeHeartbeatData(h *HeartbeatData) ([]byte, error) {
	b, err := json.Marshal(h)
	if err != nil {
		return nil, fmt.Errorf("%w: heartbeat: %w", ErrBadBody, err)
	}
	return b, nil
}

// DecodeHeartbeatData decodes a HEART_BEAT body from the Go client (string
// codeSet, nanosecond subVersion) or a Java client (numeric codeSet,
// millisecond subVersion, extra fields ignored). Empty lists decode as nil.
// Errors wrap ErrBadBody.
func DecodeHeartbeatData(data []byte) (*HeartbeatData, error) {
	var h HeartbeatData
	if err := decodeJSON("heartbeat", data, &h); err != nil {
		return nil, err
	}
	h.ProducerDataSet = nilIfEmpty(h.ProducerDataSet)
	h.ConsumerDataSet = nilIfEmpty(h.ConsumerDataSet)
	for i := range h.ConsumerDataSet {
		c := &h.ConsumerDataSet[i]
		c.SubscriptionDataSet = nilIfEmpty(c.SubscriptionDataSet)
		for j := range c.SubscriptionDataSet {
			s := &c.SubscriptionDataSet[j]
			s.TagsSet = nilIfEmpty(s.TagsSet)
			s.CodeSet = nilIfEmpty(s.CodeSet)
		}
	}
	return &h, nil
}

// ConsumerListRequestHeader is the header of GET_CONSUMER_LIST_BY_GROUP
// (38). The broker answers SUCCESS with a consumer-id-list body (see
// [EncodeConsumerIDList]) naming every live client of the group; the Go
// client ignores the code and drops its queues if the list lacks its own id.
type ConsumerListRequestHeader struct {
	ConsumerGroup string // consumerGroup (required)
}

// EncodeExt implements Header.
func (h *ConsumerListRequestHeader) EncodeExt(ext *remoting.Ext) {
	ext.Set(extConsumerGroup, h.ConsumerGroup)
}

// DecodeExt implements Header.
func (h *ConsumerListRequestHeader) DecodeExt(ext remoting.Ext) error {
	r := extReader{ext: ext}
	h.ConsumerGroup = r.str(extConsumerGroup, true)
	return r.err
}

type consumerIDList struct {
	ConsumerIDList []string `json:"consumerIdList"`
}

// EncodeConsumerIDList encodes the GET_CONSUMER_LIST_BY_GROUP response body
// {"consumerIdList":["10.0.0.9@4242",…]} in the given order ([] when empty).
func EncodeConsumerIDList(ids []string) ([]byte, error) {
	if ids == nil {
		ids = []string{}
	}
	b, err := json.Marshal(consumerIDList{ids})
	if err != nil {
		return nil, fmt.Errorf("%w: consumer id list: %w", ErrBadBody, err)
	}
	return b, nil
}

// DecodeConsumerIDList decodes a GET_CONSUMER_LIST_BY_GROUP response body.
// An empty list decodes as nil. Errors wrap ErrBadBody.
func DecodeConsumerIDList(data []byte) ([]string, error) {
	var l consumerIDList
	if err := decodeJSON("consumer id list", data, &l); err != nil {
		return nil, err
	}
	return nilIfEmpty(l.ConsumerIDList), nil
}

// CheckClientRequestBody is the body of CHECK_CLIENT_CONFIG (46): a client (Java) asks
// whether the broker accepts a subscription before it starts consuming.
//
//	{"clientId":"10.0.0.1@1","group":"cg","subscriptionData":{"topic":"T","subString":"a > 1","expressionType":"SQL92",...}}
type CheckClientRequestBody struct {
	ClientID         string            `json:"clientId"`
	Group            string            `json:"group"`
	SubscriptionData *SubscriptionData `json:"subscriptionData"`
	Namespace        string            `json:"namespace,omitempty"`
}

// DecodeCheckClientRequestBody decodes a CHECK_CLIENT_CONFIG body. Errors wrap ErrBadBody.
func DecodeCheckClientRequestBody(data []byte) (*CheckClientRequestBody, error) {
	var b CheckClientRequestBody
	if err := decodeJSON("check client config", data, &b); err != nil {
		return nil, err
	}
	if s := b.SubscriptionData; s != nil {
		s.TagsSet = nilIfEmpty(s.TagsSet)
		s.CodeSet = nilIfEmpty(s.CodeSet)
	}
	return &b, nil
}

// EncodeCheckClientRequestBody encodes b as JSON.
func EncodeCheckClientRequestBody(b *CheckClientRequestBody) ([]byte, error) {
	return marshalBody("check client config", b)
}
