package protocol

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
func (h *SendMessageRequestHeader) EncodeExt(ext map[string]string) {
	ext[sendProducerGroup] = h.ProducerGroup
	ext[extTopic] = h.Topic
	ext[sendDefaultTopic] = h.DefaultTopic
	ext[sendDefaultTopicQueueNums] = fmtInt32(h.DefaultTopicQueueNums)
	ext[extQueueID] = fmtInt32(h.QueueID)
	ext[sendSysFlag] = fmtInt32(h.SysFlag)
	ext[sendBornTimestamp] = fmtInt64(h.BornTimestamp)
	ext[sendFlag] = fmtInt32(h.Flag)
	ext[sendProperties] = h.Properties
	ext[sendReconsumeTimes] = fmtInt32(h.ReconsumeTimes)
	ext[sendUnitMode] = fmtBool(h.UnitMode)
	ext[sendMaxReconsumeTimes] = fmtInt32(h.MaxReconsumeTimes)
	ext[sendBatch] = fmtBool(h.Batch)
	ext[extBrokerName] = h.BrokerName
}

// DecodeExt reads the V1 (long-name) form.
func (h *SendMessageRequestHeader) DecodeExt(ext map[string]string) error {
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
func (h *SendMessageRequestHeader) EncodeExtV2(ext map[string]string) {
	ext["a"] = h.ProducerGroup
	ext["b"] = h.Topic
	ext["c"] = h.DefaultTopic
	ext["d"] = fmtInt32(h.DefaultTopicQueueNums)
	ext["e"] = fmtInt32(h.QueueID)
	ext["f"] = fmtInt32(h.SysFlag)
	ext["g"] = fmtInt64(h.BornTimestamp)
	ext["h"] = fmtInt32(h.Flag)
	ext["i"] = h.Properties
	ext["j"] = fmtInt32(h.ReconsumeTimes)
	ext["k"] = fmtBool(h.UnitMode)
	ext["l"] = fmtInt32(h.MaxReconsumeTimes)
	ext["m"] = fmtBool(h.Batch)
	ext["n"] = h.BrokerName
}

// DecodeExtV2 reads the V2 (short-name) form. The broker name is taken from
// "n", or from the base-header key "bname" when "n" is absent.
func (h *SendMessageRequestHeader) DecodeExtV2(ext map[string]string) error {
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
	if n, ok := ext["n"]; ok {
		h.BrokerName = n
	} else {
		h.BrokerName = ext[extBrokerName]
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
func (h *SendMessageRequestHeaderV2) EncodeExt(ext map[string]string) {
	h.EncodeExtV2(ext)
}

// DecodeExt reads the V2 (short-name) form.
func (h *SendMessageRequestHeaderV2) DecodeExt(ext map[string]string) error {
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
func DecodeSendMessageRequestHeader(code RequestCode, ext map[string]string) (SendMessageRequestHeader, error) {
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
func (h *SendMessageResponseHeader) EncodeExt(ext map[string]string) {
	ext[sendRespMsgID] = h.MsgID
	ext[extQueueID] = fmtInt32(h.QueueID)
	ext[sendRespQueueOffset] = fmtInt64(h.QueueOffset)
	putStr(ext, sendRespTransactionID, h.TransactionID)
	putStr(ext, sendRespMsgRegion, h.MsgRegion)
	ext[sendRespTraceOn] = fmtBool(h.TraceOn)
}

// DecodeExt implements Header.
func (h *SendMessageResponseHeader) DecodeExt(ext map[string]string) error {
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
