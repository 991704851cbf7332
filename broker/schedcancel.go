package broker

import (
	"context"
	"errors"
	"net/netip"
	"time"

	"github.com/rs/zerolog"

	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
	"github.com/ferrymq/ferry/schedule"
	"github.com/ferrymq/ferry/store"
)

// FERRY_CANCEL_SCHEDULED (30026): cancel a delayed or timer message that is not delivered
// yet. The broker looks the message id (UNIQ_KEY) up in the key index of the delay-level
// topic and of the timer topic; a parked copy found there is handed to the schedule
// service, which checks its delivery progress and, when the message is still waiting,
// stores a cancel record in protocol.ScheduleCancelTopic (see schedule/cancel.go) before
// answering. Answers:
//
//   - SUCCESS, status CANCELLED: it will never be delivered; ALREADY_CANCELLED: an
//     earlier request cancelled it.
//   - FERRY_SCHEDULED_ALREADY_DELIVERED: it was delivered (or is being delivered right
//     now); also when no parked copy remains but the request's topic holds the id.
//   - QUERY_NOT_FOUND: no parked copy and (with a topic) no message with that id. The
//     index must be on (the default); the search covers the parked copies still in the
//     commit log.
//   - on a slave: the slave refusal, like sends (cancelling writes a record).

// cancelIndexSpan is how far back in store time the index is searched for parked copies:
// the longest a timer may wait (schedule.Options.MaxTimerDelay, 7 days) plus a margin.
const cancelIndexSpan = 8 * 24 * time.Hour

// cancelStore is what the cancel handler needs from the store.
type cancelStore interface {
	QueryByKey(topic, key string, uniqKey bool, maxNum int, begin, end int64) (*store.QueryResult, error)
	PutMessage(rec *message.Record, wait bool) (store.PutResult, error)
	// WaitDispatched waits until the index covers the log below phy.
	WaitDispatched(ctx context.Context, phy int64) error
}

// cancelDispatchWait bounds how long a cancel waits for the index to cover the messages
// stored before it (a cancel sent right after its message's send).
const cancelDispatchWait = 5 * time.Second

// cancelHandler serves FERRY_CANCEL_SCHEDULED.
type cancelHandler struct {
	store  cancelStore
	logEnd func() int64 // the commit log's end
	sched  *schedule.Service
	host   netip.AddrPort
	clock  func() time.Time
	log    zerolog.Logger
}

// handleCancel serves FERRY_CANCEL_SCHEDULED.
func (h *cancelHandler) handleCancel(ctx context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var rh protocol.CancelScheduledRequestHeader
	if err := rh.DecodeExt(req.ExtFields); err != nil {
		return nil, fail(protocol.SystemError, "decode header: %v", err)
	}
	if rh.MsgID == "" {
		return nil, fail(protocol.InvalidParameter, "msgId is empty")
	}
	wctx, cancel := context.WithTimeout(ctx, cancelDispatchWait)
	err := h.store.WaitDispatched(wctx, h.logEnd())
	cancel()
	if err != nil {
		return nil, fail(protocol.SystemBusy, "the index is behind the log: %v", err)
	}
	now := h.clock()
	begin, end := now.Add(-cancelIndexSpan).UnixMilli(), now.Add(time.Hour).UnixMilli()
	parked, realTopic, err := h.findParked(rh.MsgID, begin, end)
	if err != nil {
		return nil, fail(protocol.SystemError, "%v", err)
	}
	if parked == nil {
		if rh.Topic != "" {
			found, err := h.exists(rh.Topic, rh.MsgID, begin, end)
			if err != nil {
				return nil, fail(protocol.SystemError, "%v", err)
			}
			if found {
				return respond(req, protocol.FerryScheduledAlreadyDelivered,
					"message "+rh.MsgID+" is in topic "+rh.Topic+" already: delivered, or never scheduled"), nil
			}
		}
		return respond(req, protocol.QueryNotFound, "no scheduled message with id "+rh.MsgID+" on this broker"), nil
	}
	outcome, err := h.sched.Cancel(*parked, func() error {
		rec, err := schedule.CancelRecord(rh.MsgID, now, h.host)
		if err != nil {
			return err
		}
		_, err = h.store.PutMessage(&rec, true)
		return err
	})
	if err != nil {
		code := protocol.SystemError
		if errors.Is(err, store.ErrDiskFull) {
			code = protocol.ServiceNotAvailable
		}
		return nil, fail(code, "cancel %s: %v", rh.MsgID, err)
	}
	switch outcome {
	case schedule.AlreadyDelivered:
		return respond(req, protocol.FerryScheduledAlreadyDelivered,
			"message "+rh.MsgID+" was delivered to topic "+realTopic+" already"), nil
	case schedule.AlreadyCancelled:
		return h.answer(req, protocol.CancelStatusAlreadyCancelled, realTopic), nil
	}
	h.log.Info().Str("msgId", rh.MsgID).Str("topic", realTopic).Str("parkedIn", parked.Topic).
		Int32("queue", parked.QueueID).Int64("queueOffset", parked.QueueOffset).Msg("scheduled message cancelled")
	return h.answer(req, protocol.CancelStatusCancelled, realTopic), nil
}

// answer is a SUCCESS with status.
func (h *cancelHandler) answer(req *remoting.Command, status, topic string) *remoting.Command {
	resp := respond(req, protocol.Success, "")
	(&protocol.CancelScheduledResponseHeader{Status: status, Topic: topic}).EncodeExt(&resp.ExtFields)
	return resp
}

// findParked returns the newest parked copy of the message with id, with its real topic,
// or nil.
func (h *cancelHandler) findParked(id string, begin, end int64) (*schedule.Parked, string, error) {
	for _, topic := range []string{protocol.ScheduleTopic, protocol.TimerTopic} {
		res, err := h.store.QueryByKey(topic, id, true, 1, begin, end)
		if err != nil {
			return nil, "", err
		}
		var p *schedule.Parked
		var realTopic string
		if len(res.Records) > 0 {
			rec, _, err := message.DecodeRecord(res.Records[0])
			if err == nil {
				p = &schedule.Parked{ID: id, Topic: topic, QueueID: rec.QueueID, QueueOffset: rec.QueueOffset}
				v, _ := rec.Property(message.PropertyRealTopic)
				realTopic = string(v)
			}
		}
		res.Release()
		if p != nil {
			return p, realTopic, nil
		}
	}
	return nil, "", nil
}

// exists reports whether topic holds a message with id.
func (h *cancelHandler) exists(topic, id string, begin, end int64) (bool, error) {
	res, err := h.store.QueryByKey(topic, id, true, 1, begin, end)
	if err != nil {
		return false, err
	}
	defer res.Release()
	return len(res.Records) > 0, nil
}
