package protocol

import "github.com/ferrymq/ferry/remoting"

// ScheduleCancelTopic is Ferry's system topic of scheduled-message cancellations: one
// record per cancelled message, its body the message id (UNIQ_KEY). The broker's
// schedule service reads it when it starts and skips the parked messages it names.
const ScheduleCancelTopic = SystemTopicPrefix + "ferry_schedule_cancel"

// Ext keys of FERRY_CANCEL_SCHEDULED.
const (
	cancelMsgID  = "msgId"
	cancelStatus = "status"
)

// Statuses of a successful FERRY_CANCEL_SCHEDULED ([CancelScheduledResponseHeader]).
const (
	// CancelStatusCancelled: the message was parked and is now cancelled.
	CancelStatusCancelled = "CANCELLED"
	// CancelStatusAlreadyCancelled: an earlier request cancelled it.
	CancelStatusAlreadyCancelled = "ALREADY_CANCELLED"
)

// CancelScheduledRequestHeader is the header of FERRY_CANCEL_SCHEDULED (30026): cancel
// the delayed (DELAY level) or timer (TIMER_DELIVER_MS and friends) message with this
// message id, which is the UNIQ_KEY a send returns as its msgId. Answers: SUCCESS with
// a [CancelScheduledResponseHeader]; FERRY_SCHEDULED_ALREADY_DELIVERED when the message
// was delivered to its topic already; QUERY_NOT_FOUND when this broker holds no parked
// message with that id (or its index is off); SERVICE_NOT_AVAILABLE on a slave.
//
// Required: msgId. Topic, when set, is the message's real topic: the broker then also
// tells a delivered message that is no longer parked from an unknown one.
type CancelScheduledRequestHeader struct {
	Topic string // topic (optional): the message's real topic
	MsgID string // msgId (required): the message's UNIQ_KEY
}

// EncodeExt implements Header.
func (h *CancelScheduledRequestHeader) EncodeExt(ext *remoting.Ext) {
	putStr(ext, extTopic, h.Topic)
	setStr(ext, cancelMsgID, h.MsgID)
}

// DecodeExt implements Header.
func (h *CancelScheduledRequestHeader) DecodeExt(ext remoting.Ext) error {
	r := extReader{ext: ext}
	*h = CancelScheduledRequestHeader{Topic: r.str(extTopic, false), MsgID: r.str(cancelMsgID, true)}
	return r.err
}

// CancelScheduledResponseHeader is the header of a successful FERRY_CANCEL_SCHEDULED.
type CancelScheduledResponseHeader struct {
	Status string // status (required): CancelStatusCancelled or CancelStatusAlreadyCancelled
	Topic  string // topic: the message's real topic
}

// EncodeExt implements Header.
func (h *CancelScheduledResponseHeader) EncodeExt(ext *remoting.Ext) {
	setStr(ext, cancelStatus, h.Status)
	putStr(ext, extTopic, h.Topic)
}

// DecodeExt implements Header.
func (h *CancelScheduledResponseHeader) DecodeExt(ext remoting.Ext) error {
	r := extReader{ext: ext}
	*h = CancelScheduledResponseHeader{Status: r.str(cancelStatus, true), Topic: r.str(extTopic, false)}
	return r.err
}
