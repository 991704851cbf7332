package broker

// QUERY_CONSUMER_OFFSET (14), UPDATE_CONSUMER_OFFSET (15), GET_MAX_OFFSET (30),
// GET_MIN_OFFSET (31), GET_EARLIEST_MSG_STORETIME (32), SEARCH_OFFSET_BY_TIMESTAMP (29).
//
// Behaviour: offsets always come back in an `offset` ext field (the Go client reads it
// without checking the code). A group with no committed offset gets 0 when the queue has
// never lost messages to cleanup and is not empty (so a new group sees what was sent
// before it started, as RocketMQ does while offset 0 is still cached), else
// QUERY_NOT_FOUND. A negative commit (the Go client sends −1 for "nothing consumed") is
// ignored. Commits of one connection for one queue (here and in pulls) apply in the order
// they arrived, by remoting.Command.Seq, whichever worker serves them first.

import (
	"context"

	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
)

// offsetHandler serves the consumer-offset and queue-position requests.
type offsetHandler struct {
	store   MessageStore
	offsets OffsetTable
}

// offsetResponse answers SUCCESS with an offset.
func offsetResponse(req *remoting.Command, offset int64) *remoting.Command {
	resp := respond(req, protocol.Success, "")
	rh := protocol.OffsetResponseHeader{Offset: offset}
	rh.EncodeExt(&resp.ExtFields)
	return resp
}

func (o *offsetHandler) handleQueryConsumerOffset(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.QueryConsumerOffsetRequestHeader
	if err := h.DecodeExt(req.ExtFields); err != nil {
		return nil, fail(protocol.SystemError, "decode header: %v", err)
	}
	if off, ok := o.offsets.Query(h.ConsumerGroup, h.Topic, h.QueueID); ok {
		return offsetResponse(req, off), nil
	}
	if h.ZeroIfNotFound() && o.store.MinOffset(h.Topic, h.QueueID) == 0 && o.store.MaxOffset(h.Topic, h.QueueID) > 0 {
		return offsetResponse(req, 0), nil
	}
	return respond(req, protocol.QueryNotFound, "no offset stored for this group and queue"), nil
}

// handleUpdateConsumerOffset applies a commit in the order its connection sent it: the
// Go client sends its commits oneway, and this pool's workers may serve two of them out
// of order, so a commit overtaken by a later one of the same connection (a higher Seq) is
// ignored rather than allowed to move the offset back or forth (see OffsetTable.CommitFrom).
func (o *offsetHandler) handleUpdateConsumerOffset(_ context.Context, ch remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.UpdateConsumerOffsetRequestHeader
	if err := h.DecodeExt(req.ExtFields); err != nil {
		return nil, fail(protocol.SystemError, "decode header: %v", err)
	}
	o.offsets.CommitFrom(h.ConsumerGroup, h.Topic, h.QueueID, h.CommitOffset, ch.ID(), req.Seq)
	return respond(req, protocol.Success, ""), nil
}

func (o *offsetHandler) handleGetMaxOffset(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.GetMaxOffsetRequestHeader
	if err := h.DecodeExt(req.ExtFields); err != nil {
		return nil, fail(protocol.SystemError, "decode header: %v", err)
	}
	return offsetResponse(req, o.store.MaxOffset(h.Topic, h.QueueID)), nil
}

func (o *offsetHandler) handleGetMinOffset(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.GetMinOffsetRequestHeader
	if err := h.DecodeExt(req.ExtFields); err != nil {
		return nil, fail(protocol.SystemError, "decode header: %v", err)
	}
	return offsetResponse(req, o.store.MinOffset(h.Topic, h.QueueID)), nil
}

func (o *offsetHandler) handleEarliestStoreTime(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.GetEarliestMsgStoretimeRequestHeader
	if err := h.DecodeExt(req.ExtFields); err != nil {
		return nil, fail(protocol.SystemError, "decode header: %v", err)
	}
	ts, err := o.store.EarliestStoreTime(h.Topic, h.QueueID)
	if err != nil {
		ts = 0
	}
	resp := respond(req, protocol.Success, "")
	rh := protocol.GetEarliestMsgStoretimeResponseHeader{Timestamp: ts}
	rh.EncodeExt(&resp.ExtFields)
	return resp, nil
}

func (o *offsetHandler) handleSearchOffset(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.SearchOffsetRequestHeader
	if err := h.DecodeExt(req.ExtFields); err != nil {
		return nil, fail(protocol.SystemError, "decode header: %v", err)
	}
	off, err := o.store.OffsetByTime(h.Topic, h.QueueID, h.Timestamp, h.BoundaryType == protocol.BoundaryUpper)
	if err != nil {
		return nil, fail(protocol.SystemError, "%v", err)
	}
	return offsetResponse(req, off), nil
}
