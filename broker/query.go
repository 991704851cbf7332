package broker

// QUERY_MESSAGE (12) and VIEW_MESSAGE_BY_ID (33).
//
// Behaviour: QUERY_MESSAGE looks up "topic#key" in the index within [beginTimestamp,
// endTimestamp], at most min(maxNum, 64) hits (32 for a UNIQ_KEY lookup), filtering hash
// collisions by the real key, and answers the records end to end, or QUERY_NOT_FOUND.
// VIEW_MESSAGE_BY_ID answers the record at a commit-log offset, or SYSTEM_ERROR; with ACL
// on, only when the caller may SUB the record's own topic (checkRecordTopics), whatever
// topic the header names.

import (
	"context"
	"time"

	"github.com/ferrymq/ferry/acl"
	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
)

// maxQueryHits bounds a key query (RocketMQ maxMsgsNumBatch).
const maxQueryHits = 64

// maxUniqKeyHits bounds a UNIQ_KEY query (RocketMQ: 32, whatever maxNum says).
const maxUniqKeyHits = 32

// queryHandler serves the message lookups.
type queryHandler struct {
	store MessageStore
	clock func() time.Time
}

func (q *queryHandler) handleQueryMessage(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.QueryMessageRequestHeader
	if err := h.DecodeExt(req.ExtFields); err != nil {
		return nil, fail(protocol.SystemError, "decode header: %v", err)
	}
	maxNum := int(h.MaxNum)
	if h.UniqueKeyQuery {
		maxNum = maxUniqKeyHits
	}
	res, err := q.store.QueryByKey(h.Topic, h.Key, h.UniqueKeyQuery, min(max(maxNum, 1), maxQueryHits), h.BeginTimestamp, h.EndTimestamp)
	if err != nil {
		return nil, fail(protocol.SystemError, "%v", err)
	}
	if len(res.Records) == 0 {
		res.Release()
		return respond(req, protocol.QueryNotFound, "can not find message, maybe time range not correct"), nil
	}
	resp := respond(req, protocol.Success, "")
	rh := protocol.QueryMessageResponseHeader{
		IndexLastUpdateTimestamp: q.clock().UnixMilli(),
		IndexLastUpdatePhyoffset: q.store.DispatchedOffset(),
	}
	rh.EncodeExt(&resp.ExtFields)
	resp.BodyVec = res.Records
	resp.OnWritten = func(error) { res.Release() }
	return resp, nil
}

func (q *queryHandler) handleViewMessage(ctx context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.ViewMessageRequestHeader
	if err := h.DecodeExt(req.ExtFields); err != nil {
		return nil, fail(protocol.SystemError, "decode header: %v", err)
	}
	raw, view, err := q.store.ReadRecordBytes(h.Offset)
	if err != nil {
		return nil, fail(protocol.SystemError, "can not find message by the offset %d: %v", h.Offset, err)
	}
	if g := acl.GrantFrom(ctx); !g.Unrestricted() {
		rec, _, err := message.DecodeRecord(raw)
		if err == nil {
			err = checkRecordTopics(g, &rec, acl.PermSub)
		}
		if err != nil {
			view.Release()
			return nil, err
		}
	}
	resp := respond(req, protocol.Success, "")
	resp.BodyVec = [][]byte{raw}
	resp.OnWritten = func(error) { view.Release() }
	return resp, nil
}
