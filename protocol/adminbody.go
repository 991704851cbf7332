package protocol

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
)

// Admin bodies: KVTable, topic and consume statistics, connection lists,
// group lists and topic-config tables. All are JSON in RocketMQ's (fastjson)
// shapes; see mqmap.go for the MessageQueue-keyed maps.

// KVTable is the body of GET_BROKER_RUNTIME_INFO (28) responses (broker
// run-time statistics, every value a string) and of GET_KVLIST_BY_NAMESPACE
// (219) responses: {"table":{"key":"value",…}}.
type KVTable struct {
	Table map[string]string `json:"table"`
}

// EncodeKVTable encodes t as compact JSON with sorted keys ({} when empty).
func EncodeKVTable(t *KVTable) ([]byte, error) {
	table := t.Table
	if table == nil {
		table = map[string]string{}
	}
	return marshalBody("kv table", KVTable{Table: table})
}

// DecodeKVTable decodes a KVTable body. An empty table decodes as nil.
// Errors wrap ErrBadBody.
func DecodeKVTable(data []byte) (*KVTable, error) {
	var t KVTable
	if err := decodeJSON("kv table", data, &t); err != nil {
		return nil, err
	}
	t.Table = nilMapIfEmpty(t.Table)
	return &t, nil
}

// TopicOffset is the offset range of one queue in a [TopicStatsTable].
type TopicOffset struct {
	MinOffset           int64 `json:"minOffset"`
	MaxOffset           int64 `json:"maxOffset"`           // next offset to be written
	LastUpdateTimestamp int64 `json:"lastUpdateTimestamp"` // store time of the last message, ms (0 when empty)
}

func appendTopicOffset(b []byte, o TopicOffset) ([]byte, error) {
	b = append(b, `{"lastUpdateTimestamp":`...)
	b = strconv.AppendInt(b, o.LastUpdateTimestamp, 10)
	b = append(b, `,"maxOffset":`...)
	b = strconv.AppendInt(b, o.MaxOffset, 10)
	b = append(b, `,"minOffset":`...)
	b = strconv.AppendInt(b, o.MinOffset, 10)
	return append(b, '}'), nil
}

// TopicStatsTable is the body of a GET_TOPIC_STATS_INFO (202) response: the
// offset range of every queue of the topic on the broker.
//
//	{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:{"lastUpdateTimestamp":…,"maxOffset":10,"minOffset":0}},"topicPutTps":0}
type TopicStatsTable struct {
	OffsetTable map[MessageQueue]TopicOffset
	TopicPutTps float64 // Java 5.x topicPutTps
}

// EncodeTopicStatsTable encodes t in fastjson's object-key form (see
// mqmap.go). A NaN or infinite rate is rejected with ErrBadBody.
func EncodeTopicStatsTable(t *TopicStatsTable) ([]byte, error) {
	b := append(make([]byte, 0, 64+len(t.OffsetTable)*128), `{"offsetTable":`...)
	b, err := appendMQMap(b, t.OffsetTable, appendTopicOffset)
	if err != nil {
		return nil, err
	}
	b = append(b, `,"topicPutTps":`...)
	if b, err = appendJSONFloat(b, "topic stats", t.TopicPutTps); err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}

// DecodeTopicStatsTable decodes a GET_TOPIC_STATS_INFO body. An empty table
// decodes as nil. Errors wrap ErrBadBody.
func DecodeTopicStatsTable(data []byte) (*TopicStatsTable, error) {
	var raw struct {
		OffsetTable json.RawMessage `json:"offsetTable"`
		TopicPutTps float64         `json:"topicPutTps"`
	}
	if err := decodeJSONObjectKeys("topic stats", data, &raw); err != nil {
		return nil, err
	}
	table, err := decodeMQMap[TopicOffset](raw.OffsetTable)
	if err != nil {
		return nil, fmt.Errorf("%w: topic stats: offsetTable: %w", ErrBadBody, err)
	}
	return &TopicStatsTable{OffsetTable: table, TopicPutTps: raw.TopicPutTps}, nil
}

// OffsetWrapper is one queue's consume progress in [ConsumeStats].
type OffsetWrapper struct {
	BrokerOffset   int64 `json:"brokerOffset"`   // queue max offset
	ConsumerOffset int64 `json:"consumerOffset"` // group's committed offset
	PullOffset     int64 `json:"pullOffset"`     // Java 5.x: next offset the group will pull
	LastTimestamp  int64 `json:"lastTimestamp"`  // store time of the last consumed message, ms
}

func appendOffsetWrapper(b []byte, o OffsetWrapper) ([]byte, error) {
	b = append(b, `{"brokerOffset":`...)
	b = strconv.AppendInt(b, o.BrokerOffset, 10)
	b = append(b, `,"consumerOffset":`...)
	b = strconv.AppendInt(b, o.ConsumerOffset, 10)
	b = append(b, `,"lastTimestamp":`...)
	b = strconv.AppendInt(b, o.LastTimestamp, 10)
	b = append(b, `,"pullOffset":`...)
	b = strconv.AppendInt(b, o.PullOffset, 10)
	return append(b, '}'), nil
}

// ConsumeStats is the body of a GET_CONSUME_STATS (208) response: a consumer
// group's progress in every queue of its topics (or of the requested topic)
// on the broker.
//
//	{"consumeTps":0,"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:{"brokerOffset":10,"consumerOffset":8,"lastTimestamp":…,"pullOffset":9}}}
type ConsumeStats struct {
	OffsetTable map[MessageQueue]OffsetWrapper
	ConsumeTps  float64
}

// EncodeConsumeStats encodes s in fastjson's object-key form (see
// mqmap.go). A NaN or infinite rate is rejected with ErrBadBody.
func EncodeConsumeStats(s *ConsumeStats) ([]byte, error) {
	b := append(make([]byte, 0, 64+len(s.OffsetTable)*144), `{"consumeTps":`...)
	b, err := appendJSONFloat(b, "consume stats", s.ConsumeTps)
	if err != nil {
		return nil, err
	}
	b = append(b, `,"offsetTable":`...)
	if b, err = appendMQMap(b, s.OffsetTable, appendOffsetWrapper); err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}

// DecodeConsumeStats decodes a GET_CONSUME_STATS body. An empty table decodes
// as nil. Errors wrap ErrBadBody.
func DecodeConsumeStats(data []byte) (*ConsumeStats, error) {
	var raw struct {
		OffsetTable json.RawMessage `json:"offsetTable"`
		ConsumeTps  float64         `json:"consumeTps"`
	}
	if err := decodeJSONObjectKeys("consume stats", data, &raw); err != nil {
		return nil, err
	}
	table, err := decodeMQMap[OffsetWrapper](raw.OffsetTable)
	if err != nil {
		return nil, fmt.Errorf("%w: consume stats: offsetTable: %w", ErrBadBody, err)
	}
	return &ConsumeStats{OffsetTable: table, ConsumeTps: raw.ConsumeTps}, nil
}

// Connection describes one client connection in a [ConsumerConnection] or
// [ProducerConnection].
type Connection struct {
	ClientAddr string `json:"clientAddr"` // "ip:port" of the connection's peer
	ClientID   string `json:"clientId"`
	Language   string `json:"language"` // language name as in command headers: "JAVA", "GO", …
	Version    int32  `json:"version"`  // client version ordinal from its command headers
}

// ConsumerConnection is the body of a GET_CONSUMER_CONNECTION_LIST (203)
// response: a consumer group's live connections on the broker and what the
// group registered by HEART_BEAT. The broker answers CONSUMER_NOT_ONLINE
// when the group has no connection.
type ConsumerConnection struct {
	ConnectionSet     []Connection                `json:"connectionSet"`
	ConsumeFromWhere  ConsumeFromWhere            `json:"consumeFromWhere,omitempty"`
	ConsumeType       ConsumeType                 `json:"consumeType,omitempty"`
	MessageModel      MessageModel                `json:"messageModel,omitempty"`
	SubscriptionTable map[string]SubscriptionData `json:"subscriptionTable"` // topic → subscription
}

// EncodeConsumerConnection encodes c as compact JSON, keeping the order of
// ConnectionSet; empty collections are written as [] and {}.
func EncodeConsumerConnection(c *ConsumerConnection) ([]byte, error) {
	out := *c
	if out.ConnectionSet == nil {
		out.ConnectionSet = []Connection{}
	}
	if out.SubscriptionTable == nil {
		out.SubscriptionTable = map[string]SubscriptionData{}
	}
	type plain ConsumerConnection
	return marshalBody("consumer connection", plain(out))
}

// DecodeConsumerConnection decodes a GET_CONSUMER_CONNECTION_LIST body (Java
// numeric or Go string codeSet items are both accepted). Empty collections
// decode as nil. Errors wrap ErrBadBody.
func DecodeConsumerConnection(data []byte) (*ConsumerConnection, error) {
	var c ConsumerConnection
	if err := decodeJSON("consumer connection", data, &c); err != nil {
		return nil, err
	}
	c.ConnectionSet = nilIfEmpty(c.ConnectionSet)
	c.SubscriptionTable = nilMapIfEmpty(c.SubscriptionTable)
	for topic, s := range c.SubscriptionTable {
		s.TagsSet = nilIfEmpty(s.TagsSet)
		s.CodeSet = nilIfEmpty(s.CodeSet)
		c.SubscriptionTable[topic] = s
	}
	return &c, nil
}

// ProducerConnection is the body of a GET_PRODUCER_CONNECTION_LIST (204)
// response: {"connectionSet":[{"clientAddr":…,"clientId":…,"language":"GO","version":317}]}.
type ProducerConnection struct {
	ConnectionSet []Connection `json:"connectionSet"`
}

// EncodeProducerConnection encodes p as compact JSON, keeping the order of
// ConnectionSet ([] when empty).
func EncodeProducerConnection(p *ProducerConnection) ([]byte, error) {
	out := *p
	if out.ConnectionSet == nil {
		out.ConnectionSet = []Connection{}
	}
	return marshalBody("producer connection", out)
}

// DecodeProducerConnection decodes a GET_PRODUCER_CONNECTION_LIST body. An
// empty set decodes as nil. Errors wrap ErrBadBody.
func DecodeProducerConnection(data []byte) (*ProducerConnection, error) {
	var p ProducerConnection
	if err := decodeJSON("producer connection", data, &p); err != nil {
		return nil, err
	}
	p.ConnectionSet = nilIfEmpty(p.ConnectionSet)
	return &p, nil
}

// GroupList is the body of a QUERY_TOPIC_CONSUME_BY_WHO (300) response: the
// consumer groups that subscribe to or hold offsets for the topic on the
// broker, {"groupList":["cg1","cg2"]}.
type GroupList struct {
	GroupList []string `json:"groupList"`
}

// EncodeGroupList encodes g as compact JSON, keeping the order of the list
// ([] when empty).
func EncodeGroupList(g *GroupList) ([]byte, error) {
	out := *g
	if out.GroupList == nil {
		out.GroupList = []string{}
	}
	return marshalBody("group list", out)
}

// DecodeGroupList decodes a QUERY_TOPIC_CONSUME_BY_WHO body. An empty list
// decodes as nil. Errors wrap ErrBadBody.
func DecodeGroupList(data []byte) (*GroupList, error) {
	var g GroupList
	if err := decodeJSON("group list", data, &g); err != nil {
		return nil, err
	}
	g.GroupList = nilIfEmpty(g.GroupList)
	return &g, nil
}

// EncodeTopicConfigSerializeWrapper encodes a broker's topic table — the
// body of a GET_ALL_TOPIC_CONFIG (21) response — as compact JSON with sorted
// topic names:
//
//	{"dataVersion":{…},"topicConfigTable":{"T":{"topicName":"T",…}},"topicQueueMappingInfoMap":{}}
func EncodeTopicConfigSerializeWrapper(w *TopicConfigSerializeWrapper) ([]byte, error) {
	return marshalBody("topic config table", w)
}

// DecodeTopicConfigSerializeWrapper decodes a GET_ALL_TOPIC_CONFIG body from
// Ferry or a Java broker (5.x mapping tables, with fastjson's bare integer
// keys, are ignored). Empty maps decode as nil. Errors wrap ErrBadBody.
func DecodeTopicConfigSerializeWrapper(data []byte) (*TopicConfigSerializeWrapper, error) {
	var w TopicConfigSerializeWrapper
	if err := decodeJSON("topic config table", data, &w); err != nil {
		return nil, err
	}
	w.TopicConfigTable = nilMapIfEmpty(w.TopicConfigTable)
	for name, tc := range w.TopicConfigTable {
		tc.Attributes = nilMapIfEmpty(tc.Attributes)
		w.TopicConfigTable[name] = tc
	}
	return &w, nil
}

// SubscriptionGroupConfig is the configuration of one consumer group on a
// broker (Java SubscriptionGroupConfig): the body of
// UPDATE_AND_CREATE_SUBSCRIPTIONGROUP (200) requests and an entry of
// [SubscriptionGroupWrapper]. The broker creates or replaces the group's
// config, persists it and answers SUCCESS.
//
// Fields absent from a decoded body take RocketMQ's defaults (see
// [DefaultSubscriptionGroupConfig]); the encoder writes every field. The 5.x
// groupRetryPolicy and subscriptionDataSet objects are not carried.
type SubscriptionGroupConfig struct {
	GroupName                      string            `json:"groupName"`
	ConsumeEnable                  bool              `json:"consumeEnable"`                  // false: pulls answer NO_PERMISSION
	ConsumeFromMinEnable           bool              `json:"consumeFromMinEnable"`           // a new group may start at the min offset
	ConsumeBroadcastEnable         bool              `json:"consumeBroadcastEnable"`         // BROADCASTING allowed
	ConsumeMessageOrderly          bool              `json:"consumeMessageOrderly"`          // Java 5.x
	RetryQueueNums                 int32             `json:"retryQueueNums"`                 // queues of %RETRY%<group>
	RetryMaxTimes                  int32             `json:"retryMaxTimes"`                  // retries before the DLQ
	BrokerID                       int64             `json:"brokerId"`                       // broker the group pulls from (0 = master)
	WhichBrokerWhenConsumeSlowly   int64             `json:"whichBrokerWhenConsumeSlowly"`   // broker suggested when lagging
	NotifyConsumerIDsChangedEnable bool              `json:"notifyConsumerIdsChangedEnable"` // send NOTIFY_CONSUMER_IDS_CHANGED
	GroupSysFlag                   int32             `json:"groupSysFlag"`                   // Java 5.x
	ConsumeTimeoutMinute           int32             `json:"consumeTimeoutMinute"`           // Java 5.x
	Attributes                     map[string]string `json:"attributes"`                     // Java 5.x; {} when empty
}

// DefaultSubscriptionGroupConfig returns RocketMQ's defaults for group:
// consuming, min-offset start and broadcasting allowed, 1 retry queue, 16
// retries, broker 0 (broker 1 when slow), change notifications on, a 15
// minute consume timeout.
func DefaultSubscriptionGroupConfig(group string) SubscriptionGroupConfig {
	return SubscriptionGroupConfig{
		GroupName:                      group,
		ConsumeEnable:                  true,
		ConsumeFromMinEnable:           true,
		ConsumeBroadcastEnable:         true,
		RetryQueueNums:                 1,
		RetryMaxTimes:                  16,
		WhichBrokerWhenConsumeSlowly:   1,
		NotifyConsumerIDsChangedEnable: true,
		ConsumeTimeoutMinute:           15,
	}
}

// MarshalJSON writes attributes as {} when empty.
func (c SubscriptionGroupConfig) MarshalJSON() ([]byte, error) {
	type plain SubscriptionGroupConfig
	p := plain(c)
	if p.Attributes == nil {
		p.Attributes = map[string]string{}
	}
	return json.Marshal(p)
}

// UnmarshalJSON fills absent fields with RocketMQ's defaults and decodes
// empty attributes as nil.
func (c *SubscriptionGroupConfig) UnmarshalJSON(data []byte) error {
	type plain SubscriptionGroupConfig
	p := plain(DefaultSubscriptionGroupConfig(""))
	if err := json.Unmarshal(data, &p); err != nil {
		return err
	}
	p.Attributes = nilMapIfEmpty(p.Attributes)
	*c = SubscriptionGroupConfig(p)
	return nil
}

// EncodeSubscriptionGroupConfig encodes c as compact JSON (the
// UPDATE_AND_CREATE_SUBSCRIPTIONGROUP body).
func EncodeSubscriptionGroupConfig(c *SubscriptionGroupConfig) ([]byte, error) {
	return marshalBody("subscription group config", c)
}

// DecodeSubscriptionGroupConfig decodes an UPDATE_AND_CREATE_SUBSCRIPTIONGROUP
// body. Errors wrap ErrBadBody.
func DecodeSubscriptionGroupConfig(data []byte) (*SubscriptionGroupConfig, error) {
	var c SubscriptionGroupConfig
	if err := decodeJSON("subscription group config", data, &c); err != nil {
		return nil, err
	}
	return &c, nil
}

// SubscriptionGroupWrapper is the body of a GET_ALL_SUBSCRIPTIONGROUP_CONFIG
// (201) response:
//
//	{"dataVersion":{…},"forbiddenTable":{},"subscriptionGroupTable":{"cg":{"groupName":"cg",…}}}
//
// The Go admin decodes dataVersion.counter as an int32. forbiddenTable (5.x)
// is always written empty and ignored on decode.
type SubscriptionGroupWrapper struct {
	SubscriptionGroupTable map[string]SubscriptionGroupConfig // group name → config
	DataVersion            DataVersion
}

type subscriptionGroupWrapperJSON struct {
	DataVersion            DataVersion                        `json:"dataVersion"`
	ForbiddenTable         struct{}                           `json:"forbiddenTable"`
	SubscriptionGroupTable map[string]SubscriptionGroupConfig `json:"subscriptionGroupTable"`
}

// EncodeSubscriptionGroupWrapper encodes w as compact JSON with sorted group
// names ({} when empty).
func EncodeSubscriptionGroupWrapper(w *SubscriptionGroupWrapper) ([]byte, error) {
	table := w.SubscriptionGroupTable
	if table == nil {
		table = map[string]SubscriptionGroupConfig{}
	}
	return marshalBody("subscription group table", subscriptionGroupWrapperJSON{
		DataVersion: w.DataVersion, SubscriptionGroupTable: table,
	})
}

// DecodeSubscriptionGroupWrapper decodes a GET_ALL_SUBSCRIPTIONGROUP_CONFIG
// body. An empty table decodes as nil. Errors wrap ErrBadBody.
func DecodeSubscriptionGroupWrapper(data []byte) (*SubscriptionGroupWrapper, error) {
	var raw struct {
		DataVersion            DataVersion                        `json:"dataVersion"`
		SubscriptionGroupTable map[string]SubscriptionGroupConfig `json:"subscriptionGroupTable"`
	}
	if err := decodeJSON("subscription group table", data, &raw); err != nil {
		return nil, err
	}
	return &SubscriptionGroupWrapper{
		SubscriptionGroupTable: nilMapIfEmpty(raw.SubscriptionGroupTable),
		DataVersion:            raw.DataVersion,
	}, nil
}

// appendJSONFloat writes f as a JSON number the way encoding/json does; NaN
// and infinities are rejected with ErrBadBody.
func appendJSONFloat(b []byte, what string, f float64) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, fmt.Errorf("%w: %s: rate %v is not a JSON number", ErrBadBody, what, f)
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	return strconv.AppendFloat(b, f, format, -1, 64), nil
}
