package protocol

import "github.com/ferrymq/ferry/remoting"

// SendMessageRequestHeader is the header of SEND_MESSAGE (10) and
// SEND_REPLY_MESSAGE (324) in its V1 long-name form, and — through
// EncodeExtV2/DecodeExtV2 or [SendMessageRequestHeaderV2] — of
// SEND_MESSAGE_V2 (310), SEND_BATCH_MESSAGE (320) and SEND_REPLY_MESSAGE_V2
// (325). The body is the message body (or the batch item list).
//
// The broker stores the body in Topic (queue QueueID, random writable queue
// when negative), auto-creating the topic from DefaultTopic when allowed,
// and answers with a [SendMessageResponseHeader].
//
// Both encoders write every field, empty or not, exactly like the Go client
// (V1 keys producerGroup … batch plus bname; V2 keys a … n).
type SendMessageRequestHeader struct {
	ProducerGroup         string // producerGroup / a (required)
	Topic                 string // topic / b (required)
	DefaultTopic          string // defaultTopic / c (required; clients send TBW102)
	DefaultTopicQueueNums int32  // defaultTopicQueueNums / d (required; Go sends 4)
	QueueID               int32  // queueId / e (required; < 0 lets the broker pick)
	SysFlag               int32  // sysFlag / f (required; message sysFlag bits)
	BornTimestamp         int64  // bornTimestamp / g (required; ms)
	Flag                  int32  // flag / h (required; user flag)
	Properties            string // properties / i (message properties encoding)
	ReconsumeTimes        int32  // reconsumeTimes / j
	UnitMode              bool   // unitMode / k
	MaxReconsumeTimes     int32  // maxReconsumeTimes / l (meaningful for %RETRY% topics)
	Batch                 bool   // batch / m
	BrokerName            string // bname / n (target broker name)
}

// V1 and V2 ext keys of the send request header.
const (
	sendProducerGroup         = "producerGroup"
	sendDefaultTopic          = "defaultTopic"
	sendDefaultTopicQueueNums = "defaultTopicQueueNums"
	sendSysFlag               = "sysFlag"
	sendBornTimestamp         = "bornTimestamp"
	sendFlag                  = "flag"
	sendProperties            = "properties"
	sendReconsumeTimes        = "reconsumeTimes"
	sendUnitMode              = "unitMode"
	sendMaxReconsumeTimes     = "maxReconsumeTimes"
	sendBatch                 = "batch"
)

// EncodeExt writes the V1 (long-name) form.
func (h *SendMessageRequestHeader) EncodeExt(ext *remoting.Ext) {
	ext.Set(sendProducerGroup, h.ProducerGroup)
	ext.Set(extTopic, h.Topic)
	ext.Set(sendDefaultTopic, h.DefaultTopic)
	ext.Set(sendDefaultTopicQueueNums, fmtInt32(h.DefaultTopicQueueNums))
	ext.Set(extQueueID, fmtInt32(h.QueueID))
	ext.Set(sendSysFlag, fmtInt32(h.SysFlag))
	ext.Set(sendBornTimestamp, fmtInt64(h.BornTimestamp))
	ext.Set(sendFlag, fmtInt32(h.Flag))
	ext.Set(sendProperties, h.Properties)
	ext.Set(sendReconsumeTimes, fmtInt32(h.ReconsumeTimes))
	ext.Set(sendUnitMode, fmtBool(h.UnitMode))
	ext.Set(sendMaxReconsumeTimes, fmtInt32(h.MaxReconsumeTimes))
	ext.Set(sendBatch, fmtBool(h.Batch))
	ext.Set(extBrokerName, h.BrokerName)
}

// DecodeExt reads the V1 (long-name) form.
func (h *SendMessageRequestHeader) DecodeExt(ext remoting.Ext) error {
	r := extReader{ext: ext}
	*h = SendMessageRequestHeader{
		ProducerGroup:         r.str(sendProducerGroup, true),
		Topic:                 r.str(extTopic, true),
		DefaultTopic:          r.str(sendDefaultTopic, true),
		DefaultTopicQueueNums: r.int32(sendDefaultTopicQueueNums, true),
		QueueID:               r.int32(extQueueID, true),
		SysFlag:               r.int32(sendSysFlag, true),
		BornTimestamp:         r.int64(sendBornTimestamp, true),
		Flag:                  r.int32(sendFlag, true),
		Properties:            r.str(sendProperties, false),
		ReconsumeTimes:        r.int32(sendReconsumeTimes, false),
		UnitMode:              r.boolean(sendUnitMode, false),
		MaxReconsumeTimes:     r.int32(sendMaxReconsumeTimes, false),
		Batch:                 r.boolean(sendBatch, false),
		BrokerName:            r.str(extBrokerName, false),
	}
	return r.err
}

// EncodeExtV2 writes the V2 (short-name, a … n) form.
func (h *SendMessageRequestHeader) EncodeExtV2(ext *remoting.Ext) {
	ext.Set("a", h.ProducerGroup)
	ext.Set("b", h.Topic)
	ext.Set("c", h.DefaultTopic)
	ext.Set("d", fmtInt32(h.DefaultTopicQueueNums))
	ext.Set("e", fmtInt32(h.QueueID))
	ext.Set("f", fmtInt32(h.SysFlag))
	ext.Set("g", fmtInt64(h.BornTimestamp))
	ext.Set("h", fmtInt32(h.Flag))
	ext.Set("i", h.Properties)
	ext.Set("j", fmtInt32(h.ReconsumeTimes))
	ext.Set("k", fmtBool(h.UnitMode))
	ext.Set("l", fmtInt32(h.MaxReconsumeTimes))
	ext.Set("m", fmtBool(h.Batch))
	ext.Set("n", h.BrokerName)
}

// DecodeExtV2 reads the V2 (short-name) form. The broker name is taken from
// "n", or from the base-header key "bname" when "n" is absent.
func (h *SendMessageRequestHeader) DecodeExtV2(ext remoting.Ext) error {
	r := extReader{ext: ext}
	*h = SendMessageRequestHeader{
		ProducerGroup:         r.str("a", true),
		Topic:                 r.str("b", true),
		DefaultTopic:          r.str("c", true),
		DefaultTopicQueueNums: r.int32("d", true),
		QueueID:               r.int32("e", true),
		SysFlag:               r.int32("f", true),
		BornTimestamp:         r.int64("g", true),
		Flag:                  r.int32("h", true),
		Properties:            r.str("i", false),
		ReconsumeTimes:        r.int32("j", false),
		UnitMode:              r.boolean("k", false),
		MaxReconsumeTimes:     r.int32("l", false),
		Batch:                 r.boolean("m", false),
	}
	if n, ok := ext.Get("n"); ok {
		h.BrokerName = n
	} else {
		h.BrokerName = ext.Value(extBrokerName)
	}
	return r.err
}

// SendMessageRequestHeaderV2 is a [SendMessageRequestHeader] whose Header
// methods use the V2 short-name keys (SEND_MESSAGE_V2 310,
// SEND_BATCH_MESSAGE 320, SEND_REPLY_MESSAGE_V2 325).
type SendMessageRequestHeaderV2 struct {
	SendMessageRequestHeader
}

// EncodeExt writes the V2 (short-name) form.
func (h *SendMessageRequestHeaderV2) EncodeExt(ext *remoting.Ext) {
	h.EncodeExtV2(ext)
}

// DecodeExt reads the V2 (short-name) form.
func (h *SendMessageRequestHeaderV2) DecodeExt(ext remoting.Ext) error {
	return h.DecodeExtV2(ext)
}

// SendHeaderUsesV2 reports whether a send-family request code carries the
// V2 short-name header (SEND_MESSAGE_V2, SEND_BATCH_MESSAGE,
// SEND_REPLY_MESSAGE_V2) rather than V1 (SEND_MESSAGE, SEND_REPLY_MESSAGE).
func SendHeaderUsesV2(code RequestCode) bool {
	switch code {
	case SendMessageV2, SendBatchMessage, SendReplyMessageV2:
		return true
	}
	return false
}

// DecodeSendMessageRequestHeader decodes the send header of a send-family
// request, choosing the V1 or V2 key set from the request code.
func DecodeSendMessageRequestHeader(code RequestCode, ext remoting.Ext) (SendMessageRequestHeader, error) {
	var h SendMessageRequestHeader
	var err error
	if SendHeaderUsesV2(code) {
		err = h.DecodeExtV2(ext)
	} else {
		err = h.DecodeExt(ext)
	}
	return h, err
}

// SendMessageResponseHeader is the response header of the send family
// (SEND_MESSAGE 10, SEND_MESSAGE_V2 310, SEND_BATCH_MESSAGE 320,
// SEND_REPLY_MESSAGE 324/325) for codes SUCCESS, FLUSH_DISK_TIMEOUT,
// FLUSH_SLAVE_TIMEOUT and SLAVE_NOT_AVAILABLE.
//
// MsgID must be the offset message id of the stored record (comma-joined
// ids for a batch): the Go transactional producer panics when it cannot
// decode it. TRACE_ON is always written, like Java does.
type SendMessageResponseHeader struct {
	MsgID         string // msgId (required): offset message id(s)
	QueueID       int32  // queueId (required): queue actually used
	QueueOffset   int64  // queueOffset (required): consume-queue offset of the (first) message
	TransactionID string // transactionId: the message's UNIQ_KEY
	MsgRegion     string // MSG_REGION: region id; clients default to "DefaultRegion"
	TraceOn       bool   // TRACE_ON
}

// Keys of the send response header.
const (
	sendRespMsgID         = "msgId"
	sendRespQueueOffset   = "queueOffset"
	sendRespTransactionID = "transactionId"
	sendRespMsgRegion     = "MSG_REGION"
	sendRespTraceOn       = "TRACE_ON"
)

// EncodeExt implements Header.
func (h *SendMessageResponseHeader) EncodeExt(ext *remoting.Ext) {
	ext.Set(sendRespMsgID, h.MsgID)
	ext.Set(extQueueID, fmtInt32(h.QueueID))
	ext.Set(sendRespQueueOffset, fmtInt64(h.QueueOffset))
	putStr(ext, sendRespTransactionID, h.TransactionID)
	putStr(ext, sendRespMsgRegion, h.MsgRegion)
	ext.Set(sendRespTraceOn, fmtBool(h.TraceOn))
}

// DecodeExt implements Header.
func (h *SendMessageResponseHeader) DecodeExt(ext remoting.Ext) error {
	r := extReader{ext: ext}
	*h = SendMessageResponseHeader{
		MsgID:         r.str(sendRespMsgID, true),
		QueueID:       r.int32(extQueueID, true),
		QueueOffset:   r.int64(sendRespQueueOffset, true),
		TransactionID: r.str(sendRespTransactionID, false),
		MsgRegion:     r.str(sendRespMsgRegion, false),
		TraceOn:       r.boolean(sendRespTraceOn, false),
	}
	return r.err
}
