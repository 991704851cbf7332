package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/ferrymq/ferry/internal/jsonstr"
	"github.com/ferrymq/ferry/remoting"
)

// Requests that reach consumers, directly from the broker (B→C) or relayed
// for an admin tool: RESET_CONSUMER_CLIENT_OFFSET (220) /
// INVOKE_BROKER_TO_RESET_OFFSET (222), GET_CONSUMER_STATUS_FROM_CLIENT
// (221) / INVOKE_BROKER_TO_GET_CONSUMER_STATUS (223),
// GET_CONSUMER_RUNNING_INFO (307) and CONSUME_MESSAGE_DIRECTLY (309).

// Keys of the client-command headers.
const (
	cmdGroup        = "group"
	cmdTimestamp    = "timestamp"
	cmdIsForce      = "isForce"
	cmdOffset       = "offset"
	cmdClientAddr   = "clientAddr"
	cmdClientID     = "clientId"
	cmdJstackEnable = "jstackEnable"
	cmdMsgID        = "msgId"
	cmdBrokerName   = "brokerName"
	cmdTopicSysFlag = "topicSysFlag"
	cmdGroupSysFlag = "groupSysFlag"
)

// ResetOffsetRequestHeader is the header of INVOKE_BROKER_TO_RESET_OFFSET
// (222, admin → broker) and of RESET_CONSUMER_CLIENT_OFFSET (220, broker →
// each consumer of the group).
//
// For 222 the broker computes, for every queue of Topic (or only QueueID when
// set, Java 5.x), the offset of the first message stored at or after
// Timestamp (or Offset when set, Java 5.x), stores it as Group's offset when
// it is behind (always when IsForce), sends 220 with a [ResetOffsetBody] to
// every live consumer of the group, and answers SUCCESS with the same
// [ResetOffsetBody]. A consumer receiving 220 suspends the queues, waits,
// applies the offsets and sends no response.
//
// Required: topic, group, timestamp and isForce.
type ResetOffsetRequestHeader struct {
	Topic     string // topic (required)
	Group     string // group (required): consumer group
	Timestamp int64  // timestamp (required): reset to the first message stored at or after it, ms
	IsForce   bool   // isForce (required): also move offsets forward
	// QueueID is Java 5.x queueId: reset only that queue. nil (absent) means
	// every queue; Java clients send −1 for that.
	QueueID *int32
	// Offset is Java 5.x offset: reset QueueID to exactly this offset.
	Offset *int64
}

// EncodeExt implements Header.
func (h *ResetOffsetRequestHeader) EncodeExt(ext *remoting.Ext) {
	setStr(ext, extTopic, h.Topic)
	setStr(ext, cmdGroup, h.Group)
	setInt64(ext, cmdTimestamp, h.Timestamp)
	setBool(ext, cmdIsForce, h.IsForce)
	putOptInt32(ext, extQueueID, h.QueueID)
	putOptInt64(ext, cmdOffset, h.Offset)
}

// DecodeExt implements Header.
func (h *ResetOffsetRequestHeader) DecodeExt(ext remoting.Ext) error {
	r := extReader{ext: ext}
	*h = ResetOffsetRequestHeader{
		Topic:     r.str(extTopic, true),
		Group:     r.str(cmdGroup, true),
		Timestamp: r.int64(cmdTimestamp, true),
		IsForce:   r.boolean(cmdIsForce, true),
		QueueID:   r.optInt32(extQueueID),
		Offset:    r.optInt64(cmdOffset),
	}
	return r.err
}

// Queue returns the single queue to reset and true, or false when the
// request covers every queue (QueueID absent or negative).
func (h *ResetOffsetRequestHeader) Queue() (int32, bool) {
	if h.QueueID == nil || *h.QueueID < 0 {
		return 0, false
	}
	return *h.QueueID, true
}

// ResetOffsetBody is the body of RESET_CONSUMER_CLIENT_OFFSET (220) requests
// and of INVOKE_BROKER_TO_RESET_OFFSET (222) responses: the new offset of
// each queue, {"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:100}}
// in fastjson's object-key form (see mqmap.go). The Go client parses it by
// splitting the raw text on ",{" and "}:", which this encoder's compact
// output satisfies as long as topic and broker names hold no '{' or '}'.
type ResetOffsetBody struct {
	OffsetTable map[MessageQueue]int64
}

// EncodeResetOffsetBody encodes b compactly in fastjson's object-key form.
func EncodeResetOffsetBody(b *ResetOffsetBody) ([]byte, error) {
	out := append(make([]byte, 0, 32+len(b.OffsetTable)*80), `{"offsetTable":`...)
	out, err := appendMQMap(out, b.OffsetTable, appendInt64Value)
	if err != nil {
		return nil, err
	}
	return append(out, '}'), nil
}

// DecodeResetOffsetBody decodes a ResetOffsetBody in fastjson's object-key
// form, with string keys, or in gson's array-of-pairs form. An empty table
// decodes as nil. Errors wrap ErrBadBody.
func DecodeResetOffsetBody(data []byte) (*ResetOffsetBody, error) {
	var raw struct {
		OffsetTable json.RawMessage `json:"offsetTable"`
	}
	if err := decodeJSONObjectKeys("reset offset body", data, &raw); err != nil {
		return nil, err
	}
	table, err := decodeMQMap[int64](raw.OffsetTable)
	if err != nil {
		return nil, fmt.Errorf("%w: reset offset body: offsetTable: %w", ErrBadBody, err)
	}
	return &ResetOffsetBody{OffsetTable: table}, nil
}

// GetConsumerStatusRequestHeader is the header of
// GET_CONSUMER_STATUS_FROM_CLIENT (221, broker → consumer) and
// INVOKE_BROKER_TO_GET_CONSUMER_STATUS (223, admin → broker). No body.
//
// A consumer answers 221 with a [ConsumerStatusBody] holding its current
// offset of every queue of Topic it consumes for Group; for 223 the broker
// asks every live consumer of Group (only ClientAddr's when set) and answers
// with their offsets in ConsumerTable.
//
// Required: topic and group.
type GetConsumerStatusRequestHeader struct {
	Topic      string // topic (required)
	Group      string // group (required): consumer group
	ClientAddr string // clientAddr: restrict 223 to one client address
}

// EncodeExt implements Header.
func (h *GetConsumerStatusRequestHeader) EncodeExt(ext *remoting.Ext) {
	setStr(ext, extTopic, h.Topic)
	setStr(ext, cmdGroup, h.Group)
	putStr(ext, cmdClientAddr, h.ClientAddr)
}

// DecodeExt implements Header.
func (h *GetConsumerStatusRequestHeader) DecodeExt(ext remoting.Ext) error {
	r := extReader{ext: ext}
	*h = GetConsumerStatusRequestHeader{
		Topic:      r.str(extTopic, true),
		Group:      r.str(cmdGroup, true),
		ClientAddr: r.str(cmdClientAddr, false),
	}
	return r.err
}

// ConsumerStatusBody is Java's GetConsumerStatusBody, the response body of
// GET_CONSUMER_STATUS_FROM_CLIENT (221: MessageQueueTable, a consumer's own
// offsets) and INVOKE_BROKER_TO_GET_CONSUMER_STATUS (223: ConsumerTable,
// client id → that client's offsets). Both maps are MessageQueue-keyed and
// written in fastjson's object-key form (see mqmap.go):
//
//	{"consumerTable":{"10.0.0.9@4242":{{"brokerName":"b","queueId":0,"topic":"T"}:7}},"messageQueueTable":{}}
type ConsumerStatusBody struct {
	MessageQueueTable map[MessageQueue]int64
	ConsumerTable     map[string]map[MessageQueue]int64
}

// EncodeConsumerStatusBody encodes b compactly, client ids sorted.
func EncodeConsumerStatusBody(b *ConsumerStatusBody) ([]byte, error) {
	out := append(make([]byte, 0, 64), `{"consumerTable":{`...)
	var err error
	for i, id := range slices.Sorted(maps.Keys(b.ConsumerTable)) {
		if i > 0 {
			out = append(out, ',')
		}
		out = jsonstr.Append(out, id)
		out = append(out, ':')
		if out, err = appendMQMap(out, b.ConsumerTable[id], appendInt64Value); err != nil {
			return nil, err
		}
	}
	out = append(out, `},"messageQueueTable":`...)
	if out, err = appendMQMap(out, b.MessageQueueTable, appendInt64Value); err != nil {
		return nil, err
	}
	return append(out, '}'), nil
}

// DecodeConsumerStatusBody decodes a 221 or 223 response body. Empty maps
// decode as nil. Errors wrap ErrBadBody.
func DecodeConsumerStatusBody(data []byte) (*ConsumerStatusBody, error) {
	var raw struct {
		MessageQueueTable json.RawMessage            `json:"messageQueueTable"`
		ConsumerTable     map[string]json.RawMessage `json:"consumerTable"`
	}
	if err := decodeJSONObjectKeys("consumer status body", data, &raw); err != nil {
		return nil, err
	}
	var b ConsumerStatusBody
	var err error
	if b.MessageQueueTable, err = decodeMQMap[int64](raw.MessageQueueTable); err != nil {
		return nil, fmt.Errorf("%w: consumer status body: messageQueueTable: %w", ErrBadBody, err)
	}
	for id, r := range raw.ConsumerTable {
		m, err := decodeMQMap[int64](r)
		if err != nil {
			return nil, fmt.Errorf("%w: consumer status body: consumerTable[%.64q]: %w", ErrBadBody, id, err)
		}
		if b.ConsumerTable == nil {
			b.ConsumerTable = make(map[string]map[MessageQueue]int64, len(raw.ConsumerTable))
		}
		b.ConsumerTable[id] = m
	}
	return &b, nil
}

// GetConsumerRunningInfoRequestHeader is the header of
// GET_CONSUMER_RUNNING_INFO (307), sent by an admin tool to a broker, which
// relays it to the consumer's connection. No body. The consumer answers
// SUCCESS with its running info (properties, subscriptions, per-queue
// state and, when JstackEnable, a thread dump), or SYSTEM_ERROR when it
// does not know the group.
//
// Required: consumerGroup and clientId.
type GetConsumerRunningInfoRequestHeader struct {
	ConsumerGroup string // consumerGroup (required)
	ClientID      string // clientId (required)
	JstackEnable  bool   // jstackEnable: include a thread dump
}

// EncodeExt implements Header.
func (h *GetConsumerRunningInfoRequestHeader) EncodeExt(ext *remoting.Ext) {
	setStr(ext, extConsumerGroup, h.ConsumerGroup)
	setStr(ext, cmdClientID, h.ClientID)
	putBool(ext, cmdJstackEnable, h.JstackEnable)
}

// DecodeExt implements Header.
func (h *GetConsumerRunningInfoRequestHeader) DecodeExt(ext remoting.Ext) error {
	r := extReader{ext: ext}
	*h = GetConsumerRunningInfoRequestHeader{
		ConsumerGroup: r.str(extConsumerGroup, true),
		ClientID:      r.str(cmdClientID, true),
		JstackEnable:  r.boolean(cmdJstackEnable, false),
	}
	return r.err
}

// ConsumeMessageDirectlyResultRequestHeader is the header of
// CONSUME_MESSAGE_DIRECTLY (309), sent by an admin tool to a broker, which
// reads the message MsgID and relays the request to consumer ClientID with
// the message record as body. The consumer runs its listener on it and
// answers SUCCESS with a [ConsumeMessageDirectlyResult].
//
// Required: consumerGroup.
type ConsumeMessageDirectlyResultRequestHeader struct {
	ConsumerGroup string // consumerGroup (required)
	ClientID      string // clientId: target consumer
	MsgID         string // msgId: offset message id of the message
	BrokerName    string // brokerName: broker holding the message
	Topic         string // topic (Java 5.x)
	TopicSysFlag  int32  // topicSysFlag (Java 5.x)
	GroupSysFlag  int32  // groupSysFlag (Java 5.x)
}

// EncodeExt implements Header.
func (h *ConsumeMessageDirectlyResultRequestHeader) EncodeExt(ext *remoting.Ext) {
	setStr(ext, extConsumerGroup, h.ConsumerGroup)
	putStr(ext, cmdClientID, h.ClientID)
	putStr(ext, cmdMsgID, h.MsgID)
	putStr(ext, cmdBrokerName, h.BrokerName)
	putStr(ext, extTopic, h.Topic)
	putInt32(ext, cmdTopicSysFlag, h.TopicSysFlag)
	putInt32(ext, cmdGroupSysFlag, h.GroupSysFlag)
}

// DecodeExt implements Header.
func (h *ConsumeMessageDirectlyResultRequestHeader) DecodeExt(ext remoting.Ext) error {
	r := extReader{ext: ext}
	*h = ConsumeMessageDirectlyResultRequestHeader{
		ConsumerGroup: r.str(extConsumerGroup, true),
		ClientID:      r.str(cmdClientID, false),
		MsgID:         r.str(cmdMsgID, false),
		BrokerName:    r.str(cmdBrokerName, false),
		Topic:         r.str(extTopic, false),
		TopicSysFlag:  r.int32(cmdTopicSysFlag, false),
		GroupSysFlag:  r.int32(cmdGroupSysFlag, false),
	}
	return r.err
}

// CMResult is the outcome of CONSUME_MESSAGE_DIRECTLY (Java enum CMResult).
// Java writes the enum name; the Go client writes its ordinal, which
// decoding maps to the same names. An empty value means absent.
type CMResult string

// Consume-message-directly results, in Java ordinal order (0..5).
const (
	CMResultSuccess        CMResult = "CR_SUCCESS"
	CMResultLater          CMResult = "CR_LATER"
	CMResultRollback       CMResult = "CR_ROLLBACK"
	CMResultCommit         CMResult = "CR_COMMIT"
	CMResultThrowException CMResult = "CR_THROW_EXCEPTION"
	CMResultReturnNull     CMResult = "CR_RETURN_NULL"
)

// cmResults is indexed by Java ordinal; it is never mutated.
var cmResults = [...]CMResult{CMResultSuccess, CMResultLater, CMResultRollback,
	CMResultCommit, CMResultThrowException, CMResultReturnNull}

// UnmarshalJSON accepts an enum name (any string, kept as is), a Java
// ordinal 0..5 (the Go client's form) or null.
func (c *CMResult) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	switch {
	case bytes.Equal(data, []byte("null")):
		return nil
	case len(data) > 0 && data[0] == '"':
		var s string
		if err := json.Unmarshal(data, &s); err != nil {
			return err
		}
		*c = CMResult(s)
		return nil
	}
	n, err := strconv.Atoi(string(data))
	if err != nil || n < 0 || n >= len(cmResults) {
		return fmt.Errorf("consumeResult %.32q is neither a CMResult name nor an ordinal 0..%d", data, len(cmResults)-1)
	}
	*c = cmResults[n]
	return nil
}

// ConsumeMessageDirectlyResult is the body of a CONSUME_MESSAGE_DIRECTLY
// (309) response:
// {"autoCommit":true,"consumeResult":"CR_SUCCESS","order":false,"remark":"","spentTimeMills":3}.
// Decoding fills an absent autoCommit with Java's default, true.
type ConsumeMessageDirectlyResult struct {
	AutoCommit     bool     `json:"autoCommit"`
	ConsumeResult  CMResult `json:"consumeResult,omitempty"`
	Order          bool     `json:"order"`
	Remark         string   `json:"remark"`
	SpentTimeMills int64    `json:"spentTimeMills"` // (sic) ms spent in the listener
}

// EncodeConsumeMessageDirectlyResult encodes r as compact JSON with the
// consume result as its Java enum name.
func EncodeConsumeMessageDirectlyResult(r *ConsumeMessageDirectlyResult) ([]byte, error) {
	return marshalBody("consume message directly result", r)
}

// DecodeConsumeMessageDirectlyResult decodes a CONSUME_MESSAGE_DIRECTLY
// response body from a Java (enum name) or Go (ordinal) client. Errors wrap
// ErrBadBody.
func DecodeConsumeMessageDirectlyResult(data []byte) (*ConsumeMessageDirectlyResult, error) {
	r := ConsumeMessageDirectlyResult{AutoCommit: true}
	if err := decodeJSON("consume message directly result", data, &r); err != nil {
		return nil, err
	}
	return &r, nil
}
