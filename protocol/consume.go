package protocol

import (
	"cmp"
	"encoding/json"
	"fmt"

	"github.com/ferrymq/ferry/remoting"
)

// Consumer-side headers and bodies: UNREGISTER_CLIENT (35),
// CONSUMER_SEND_MSG_BACK (36), NOTIFY_CONSUMER_IDS_CHANGED (40) and the
// LOCK_BATCH_MQ / UNLOCK_BATCH_MQ (41/42) bodies.

// Keys of the consumer-side headers.
const (
	clientIDUpper           = "clientID" // UNREGISTER_CLIENT spells it with a capital D
	sendBackOffset          = "offset"
	sendBackGroup           = "group"
	sendBackDelayLevel      = "delayLevel"
	sendBackOriginMsgID     = "originMsgId"
	sendBackOriginTopic     = "originTopic"
	sendBackUnitMode        = "unitMode"
	sendBackMaxReconsume    = "maxReconsumeTimes"
	unregisterProducerGroup = "producerGroup"
)

// ConsumerSendMsgBackRequestHeader is the header of CONSUMER_SEND_MSG_BACK
// (36): a consumer hands a message it failed to consume back to the broker.
// No body.
//
// The broker reads the record at commit-log offset Offset and stores a copy
// in %RETRY%<Group> with delay level DelayLevel (3 + reconsume times when
// DelayLevel is 0), or in %DLQ%<Group> when DelayLevel is negative or the
// record has been reconsumed MaxReconsumeTimes times (the group's
// retryMaxTimes when MaxReconsumeTimes is nil). It answers SUCCESS, or
// SUBSCRIPTION_GROUP_NOT_EXIST / SYSTEM_ERROR.
//
// Required: offset, group and delayLevel.
type ConsumerSendMsgBackRequestHeader struct {
	Offset      int64  // offset (required): commit-log offset of the failed message
	Group       string // group (required): consumer group
	DelayLevel  int32  // delayLevel (required): 0 = broker's choice, < 0 = straight to the DLQ
	OriginMsgID string // originMsgId: msg id of the first delivery
	OriginTopic string // originTopic: the message's original topic
	UnitMode    bool   // unitMode
	// MaxReconsumeTimes is maxReconsumeTimes; nil (absent) means the group's
	// retryMaxTimes.
	MaxReconsumeTimes *int32
	BrokerName        string // bname
}

// EncodeExt implements Header.
func (h *ConsumerSendMsgBackRequestHeader) EncodeExt(ext *remoting.Ext) {
	setInt64(ext, sendBackOffset, h.Offset)
	setStr(ext, sendBackGroup, h.Group)
	setInt32(ext, sendBackDelayLevel, h.DelayLevel)
	putStr(ext, sendBackOriginMsgID, h.OriginMsgID)
	putStr(ext, sendBackOriginTopic, h.OriginTopic)
	putBool(ext, sendBackUnitMode, h.UnitMode)
	putOptInt32(ext, sendBackMaxReconsume, h.MaxReconsumeTimes)
	putStr(ext, extBrokerName, h.BrokerName)
}

// DecodeExt implements Header.
func (h *ConsumerSendMsgBackRequestHeader) DecodeExt(ext remoting.Ext) error {
	r := extReader{ext: ext}
	*h = ConsumerSendMsgBackRequestHeader{
		Offset:            r.int64(sendBackOffset, true),
		Group:             r.str(sendBackGroup, true),
		DelayLevel:        r.int32(sendBackDelayLevel, true),
		OriginMsgID:       r.str(sendBackOriginMsgID, false),
		OriginTopic:       r.str(sendBackOriginTopic, false),
		UnitMode:          r.boolean(sendBackUnitMode, false),
		MaxReconsumeTimes: r.optInt32(sendBackMaxReconsume),
		BrokerName:        r.str(extBrokerName, false),
	}
	return r.err
}

// UnregisterClientRequestHeader is the header of UNREGISTER_CLIENT (35),
// sent by Java clients on shutdown (never by the Go client). No body. The
// broker removes ClientID from the named producer and/or consumer group,
// notifies the consumer group's members if it changed, and answers SUCCESS.
//
// Required: clientID (with a capital D, unlike every other header).
type UnregisterClientRequestHeader struct {
	ClientID      string // clientID (required)
	ProducerGroup string // producerGroup: empty when the client has no producer to remove
	ConsumerGroup string // consumerGroup: empty when the client has no consumer to remove
}

// EncodeExt implements Header.
func (h *UnregisterClientRequestHeader) EncodeExt(ext *remoting.Ext) {
	setStr(ext, clientIDUpper, h.ClientID)
	putStr(ext, unregisterProducerGroup, h.ProducerGroup)
	putStr(ext, extConsumerGroup, h.ConsumerGroup)
}

// DecodeExt implements Header.
func (h *UnregisterClientRequestHeader) DecodeExt(ext remoting.Ext) error {
	r := extReader{ext: ext}
	*h = UnregisterClientRequestHeader{
		ClientID:      r.str(clientIDUpper, true),
		ProducerGroup: r.str(unregisterProducerGroup, false),
		ConsumerGroup: r.str(extConsumerGroup, false),
	}
	return r.err
}

// NotifyConsumerIDsChangedRequestHeader is the header of
// NOTIFY_CONSUMER_IDS_CHANGED (40), sent oneway by the broker to every
// connection of a consumer group whose membership or subscriptions changed.
// No body. Clients rebalance at once and send no response.
//
// Required: consumerGroup.
type NotifyConsumerIDsChangedRequestHeader struct {
	ConsumerGroup string // consumerGroup (required)
}

// EncodeExt implements Header.
func (h *NotifyConsumerIDsChangedRequestHeader) EncodeExt(ext *remoting.Ext) {
	encodeOneStr(ext, extConsumerGroup, h.ConsumerGroup)
}

// DecodeExt implements Header.
func (h *NotifyConsumerIDsChangedRequestHeader) DecodeExt(ext remoting.Ext) (err error) {
	h.ConsumerGroup, err = decodeOneStr(ext, extConsumerGroup)
	return err
}

// MessageQueue names one queue: a topic's queue QueueID on broker group
// BrokerName. It is the element of lock bodies and the key of the
// MessageQueue-keyed maps in admin bodies (see [TopicStatsTable]).
type MessageQueue struct {
	Topic      string `json:"topic"`
	BrokerName string `json:"brokerName"`
	QueueID    int32  `json:"queueId"`
}

// CompareMessageQueue orders queues by topic, broker name and queue id, the
// order clients sort them in before allocating.
func CompareMessageQueue(a, b MessageQueue) int {
	return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.BrokerName, b.BrokerName),
		cmp.Compare(a.QueueID, b.QueueID))
}

// LockBatchRequestBody is the JSON body of LOCK_BATCH_MQ (41) and
// UNLOCK_BATCH_MQ (42), sent by ordered consumers (no ext fields):
//
//	{"consumerGroup":"cg","clientId":"10.0.0.9@4242","onlyThisBroker":false,
//	 "mqSet":[{"topic":"T","brokerName":"broker-a","queueId":0}]}
//
// For LOCK the broker locks (or renews) every queue of MQSet that no other
// live client of the group holds and answers SUCCESS with a
// [LockBatchResponseBody] echoing exactly the queues now held; for UNLOCK it
// releases the caller's locks and answers SUCCESS without a body. The Go
// client omits onlyThisBroker and may send "mqSet":null.
type LockBatchRequestBody struct {
	ConsumerGroup  string         `json:"consumerGroup"`
	ClientID       string         `json:"clientId"`
	OnlyThisBroker bool           `json:"onlyThisBroker"` // Java 5.x
	MQSet          []MessageQueue `json:"mqSet"`
}

// EncodeLockBatchRequestBody encodes b as compact JSON, keeping the order of
// MQSet and writing an empty set as [].
func EncodeLockBatchRequestBody(b *LockBatchRequestBody) ([]byte, error) {
	out := *b
	if out.MQSet == nil {
		out.MQSet = []MessageQueue{}
	}
	type plain LockBatchRequestBody
	return marshalBody("lock batch request", plain(out))
}

// DecodeLockBatchRequestBody decodes a LOCK_BATCH_MQ or UNLOCK_BATCH_MQ
// body. An empty or null mqSet decodes as nil. Errors wrap ErrBadBody.
func DecodeLockBatchRequestBody(data []byte) (*LockBatchRequestBody, error) {
	var b LockBatchRequestBody
	if err := decodeJSON("lock batch request", data, &b); err != nil {
		return nil, err
	}
	b.MQSet = nilIfEmpty(b.MQSet)
	return &b, nil
}

// LockBatchResponseBody is the body of a successful LOCK_BATCH_MQ (41)
// response: {"lockOKMQSet":[{"topic":"T","brokerName":"broker-a","queueId":0}]},
// the requested queues the caller now holds, each echoed exactly (the Go
// client compares them as structs). An empty or undecodable body means
// nothing is locked.
type LockBatchResponseBody struct {
	LockOKMQSet []MessageQueue `json:"lockOKMQSet"`
}

// EncodeLockBatchResponseBody encodes b as compact JSON, keeping the order of
// LockOKMQSet and writing an empty set as [].
func EncodeLockBatchResponseBody(b *LockBatchResponseBody) ([]byte, error) {
	out := *b
	if out.LockOKMQSet == nil {
		out.LockOKMQSet = []MessageQueue{}
	}
	type plain LockBatchResponseBody
	return marshalBody("lock batch response", plain(out))
}

// DecodeLockBatchResponseBody decodes a LOCK_BATCH_MQ response body. An
// empty set decodes as nil. Errors wrap ErrBadBody.
func DecodeLockBatchResponseBody(data []byte) (*LockBatchResponseBody, error) {
	var b LockBatchResponseBody
	if err := decodeJSON("lock batch response", data, &b); err != nil {
		return nil, err
	}
	b.LockOKMQSet = nilIfEmpty(b.LockOKMQSet)
	return &b, nil
}

// marshalBody encodes v with encoding/json, wrapping failures in ErrBadBody.
func marshalBody(what string, v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrBadBody, what, err)
	}
	return b, nil
}
