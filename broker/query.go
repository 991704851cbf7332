package broker

// QUERY_MESSAGE (12) and VIEW_MESSAGE_BY_ID (33).
//
// Behaviour: QUERY_MESSAGE looks up "topic#key" in the index within [beginTimestamp,
// endTimestamp], at most min(maxNum, 64) hits (32 for a UNIQ_KEY lookup), filtering hash
// collisions by the real key, and answers the records end to end, or QUERY_NOT_FOUND.
// VIEW_MESSAGE_BY_ID answers the record at a commit-log offset, or SYSTEM_ERROR.

import (
	"context"
	"strconv"

	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
)

// maxQueryHits bounds a key query (RocketMQ maxMsgsNumBatch).
const maxQueryHits = 64

func (b *Broker) handleQueryMessage(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	topic, key := req.Ext("topic"), req.Ext("key")
	maxNum, err1 := strconv.Atoi(req.Ext("maxNum"))
	begin, err2 := strconv.ParseInt(req.Ext("beginTimestamp"), 10, 64)
	end, err3 := strconv.ParseInt(req.Ext("endTimestamp"), 10, 64)
	if topic == "" || key == "" || err1 != nil || err2 != nil || err3 != nil {
		return nil, fail(protocol.SystemError, "topic, key, maxNum, beginTimestamp and endTimestamp are required")
	}
	uniq := req.Ext("_UNIQUE_KEY_QUERY") == "true"
	if uniq {
		maxNum = 32
	}
	res, err := b.store.QueryByKey(topic, key, uniq, min(max(maxNum, 1), maxQueryHits), begin, end)
	if err != nil {
		return nil, fail(protocol.SystemError, "%v", err)
	}
	if len(res.Records) == 0 {
		res.Release()
		return respond(req, protocol.QueryNotFound, "can not find message, maybe time range not correct"), nil
	}
	resp := respond(req, protocol.Success, "")
	resp.ExtFields = map[string]string{
		"indexLastUpdateTimestamp": itoa(b.opts.Clock().UnixMilli()),
		"indexLastUpdatePhyoffset": itoa(b.store.DispatchedOffset()),
	}
	resp.BodyVec = res.Records
	resp.OnWritten = func(error) { res.Release() }
	return resp, nil
}

func (b *Broker) handleViewMessage(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	off, err := strconv.ParseInt(req.Ext("offset"), 10, 64)
	if err != nil {
		return nil, fail(protocol.SystemError, "offset is required")
	}
	rec, v, err := b.store.ReadMessage(off)
	if err != nil {
		return nil, fail(protocol.SystemError, "can not find message by the offset %d: %v", off, err)
	}
	body, err := b.store.CommitLog().Read(off, int(rec.StoreSize))
	v.Release()
	if err != nil {
		return nil, fail(protocol.SystemError, "can not read message at %d: %v", off, err)
	}
	resp := respond(req, protocol.Success, "")
	resp.BodyVec = [][]byte{body.Bytes()}
	resp.OnWritten = func(error) { body.Release() }
	return resp, nil
}
