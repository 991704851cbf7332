package broker

// INVOKE_BROKER_TO_RESET_OFFSET (222), CONSUME_MESSAGE_DIRECTLY (309) and
// GET_CONSUMER_RUNNING_INFO (307): admin requests the broker carries out with calls to
// the group's consumers (broker → client).
//
// Behaviour: a reset computes, for each read queue of the topic (or only the 5.x
// queueId), the offset of the first message stored at or after the timestamp (the
// queue's max offset for a future time or −1, its min offset for 0 or a past time; the
// 5.x offset, clamped to the queue, when given); without isForce a queue keeps a committed
// offset that is already lower, as RocketMQ does. The offsets are written to the group's
// offset table whether or not the group is online (so an offline group is reset
// directly, where a Java broker answers CONSUMER_NOT_ONLINE and lets the tool do it);
// each live connection of the group then gets RESET_CONSUMER_CLIENT_OFFSET (220, oneway,
// as RocketMQ sends it) with the table, and the answer is the same table.
//
// CONSUME_MESSAGE_DIRECTLY reads the record named by the offset message id (with ACL on,
// only if the caller may SUB the record's topic, checkRecordTopics), sets the
// brokerName field to this broker's and forwards the request with the record as body to
// the connection of the named consumer client of the group; GET_CONSUMER_RUNNING_INFO is
// forwarded as it is. The client's answer (code, remark, fields, body) is returned as the
// answer; a client not connected for the group gives CONSUMER_NOT_ONLINE, a client that
// does not answer within clientCallTimeout SYSTEM_ERROR.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/rs/zerolog"

	"github.com/ferrymq/ferry/acl"
	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
	"github.com/ferrymq/ferry/store"
)

// clientCallTimeout bounds a forwarded call to a consumer (RocketMQ: 10 s).
const clientCallTimeout = 10 * time.Second

// resetStore is what the client calls need of the message store.
type resetStore interface {
	MinOffset(topic string, queueID int32) int64
	MaxOffset(topic string, queueID int32) int64
	OffsetByTime(topic string, queueID int32, ts int64, upper bool) (int64, error)
	ReadRecordBytes(phy int64) ([]byte, *store.View, error)
}

// consumerLookup is what the client calls need of the client registry.
type consumerLookup interface {
	ConsumerChannels(group string) []uint64
	ConsumerChannel(group, clientID string) (uint64, bool)
}

// clientCallHandler serves the requests of this file.
type clientCallHandler struct {
	store      resetStore
	topics     TopicTable
	offsets    OffsetTable
	clients    consumerLookup
	conns      *conns
	brokerName string
	timeout    time.Duration
	log        zerolog.Logger
}

// handleResetOffset serves INVOKE_BROKER_TO_RESET_OFFSET.
func (h *clientCallHandler) handleResetOffset(ctx context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var rh protocol.ResetOffsetRequestHeader
	if err := rh.DecodeExt(req.ExtFields); err != nil {
		return nil, fail(protocol.InvalidParameter, "decode header: %v", err)
	}
	if err := protocol.ValidateGroup(rh.Group); err != nil {
		return nil, fail(protocol.InvalidParameter, "%v", err)
	}
	cfg, ok := h.topics.Get(rh.Topic)
	if !ok {
		return nil, fail(protocol.TopicNotExist, "reset offset: topic %s does not exist on this broker", rh.Topic)
	}
	queues := make([]int32, 0, cfg.ReadQueueNums)
	if q, one := rh.Queue(); one {
		if q >= cfg.ReadQueueNums {
			return nil, fail(protocol.InvalidParameter, "reset offset: topic %s has %d read queues, no queue %d", rh.Topic, cfg.ReadQueueNums, q)
		}
		queues = append(queues, q)
	} else {
		for q := range cfg.ReadQueueNums {
			queues = append(queues, q)
		}
	}
	body := protocol.ResetOffsetBody{OffsetTable: make(map[protocol.MessageQueue]int64, len(queues))}
	for _, q := range queues {
		off, err := h.resetTarget(&rh, q, len(queues) == 1)
		if err != nil {
			return nil, fail(protocol.SystemError, "reset offset of %s queue %d: %v", rh.Topic, q, err)
		}
		if cur, found := h.offsets.Query(rh.Group, rh.Topic, q); found && !rh.IsForce && cur <= off {
			off = cur // not forced: only move back
		}
		h.offsets.Commit(rh.Group, rh.Topic, q, off)
		body.OffsetTable[protocol.MessageQueue{Topic: rh.Topic, BrokerName: h.brokerName, QueueID: q}] = off
	}
	enc, err := protocol.EncodeResetOffsetBody(&body)
	if err != nil {
		return nil, fmt.Errorf("broker: encode reset offsets: %w", err)
	}
	h.tellConsumers(ctx, &rh, enc)
	resp := respond(req, protocol.Success, "")
	resp.Body = enc
	return resp, nil
}

// resetTarget is the offset a reset moves queue q to.
func (h *clientCallHandler) resetTarget(rh *protocol.ResetOffsetRequestHeader, q int32, single bool) (int64, error) {
	lo, hi := h.store.MinOffset(rh.Topic, q), h.store.MaxOffset(rh.Topic, q)
	switch {
	case rh.Offset != nil && single:
		return min(max(*rh.Offset, lo), hi), nil
	case rh.Timestamp < 0: // Java's −1: the end
		return hi, nil
	}
	off, err := h.store.OffsetByTime(rh.Topic, q, rh.Timestamp, false)
	if err != nil {
		return 0, err
	}
	return min(max(off, lo), hi), nil
}

// tellConsumers sends RESET_CONSUMER_CLIENT_OFFSET, oneway, to every live connection of
// the group.
func (h *clientCallHandler) tellConsumers(ctx context.Context, rh *protocol.ResetOffsetRequestHeader, body []byte) {
	ch := protocol.ResetOffsetRequestHeader{Topic: rh.Topic, Group: rh.Group, Timestamp: rh.Timestamp, IsForce: rh.IsForce}
	for _, id := range h.clients.ConsumerChannels(rh.Group) {
		conn, ok := h.conns.get(id)
		if !ok {
			continue
		}
		cmd := protocol.NewRequest(protocol.ResetConsumerClientOffset, &ch)
		cmd.Body = body
		if err := conn.InvokeOneway(ctx, cmd); err != nil {
			h.log.Warn().Err(err).Str("group", rh.Group).Str("client", conn.RemoteAddr()).Msg("telling a consumer to reset its offsets")
		}
	}
}

// handleConsumeDirectly serves CONSUME_MESSAGE_DIRECTLY.
func (h *clientCallHandler) handleConsumeDirectly(ctx context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var rh protocol.ConsumeMessageDirectlyResultRequestHeader
	if err := rh.DecodeExt(req.ExtFields); err != nil {
		return nil, fail(protocol.InvalidParameter, "decode header: %v", err)
	}
	_, phy, err := message.DecodeOffsetMsgID(rh.MsgID)
	if err != nil {
		return nil, fail(protocol.InvalidParameter, "consume directly: message id %q: %v", rh.MsgID, err)
	}
	raw, view, err := h.store.ReadRecordBytes(phy)
	if err != nil {
		return nil, fail(protocol.SystemError, "consume directly: no message %s on this broker: %v", rh.MsgID, err)
	}
	if g := acl.GrantFrom(ctx); !g.Unrestricted() {
		orig, _, err := message.DecodeRecord(raw)
		if err == nil {
			err = checkRecordTopics(g, &orig, acl.PermSub)
		}
		if err != nil {
			view.Release()
			return nil, err
		}
	}
	rec := slices.Clone(raw) // the view is released before the call goes out
	view.Release()
	rh.BrokerName = h.brokerName
	fwd := protocol.NewRequest(protocol.ConsumeMessageDirectly, &rh)
	fwd.Body = rec
	return h.callConsumer(ctx, req, rh.ConsumerGroup, rh.ClientID, fwd)
}

// handleRunningInfo serves GET_CONSUMER_RUNNING_INFO.
func (h *clientCallHandler) handleRunningInfo(ctx context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var rh protocol.GetConsumerRunningInfoRequestHeader
	if err := rh.DecodeExt(req.ExtFields); err != nil {
		return nil, fail(protocol.InvalidParameter, "decode header: %v", err)
	}
	return h.callConsumer(ctx, req, rh.ConsumerGroup, rh.ClientID, protocol.NewRequest(protocol.GetConsumerRunningInfo, &rh))
}

// callConsumer sends fwd to the connection of client clientID of group and answers req
// with the client's response.
func (h *clientCallHandler) callConsumer(ctx context.Context, req *remoting.Command, group, clientID string, fwd *remoting.Command) (*remoting.Command, error) {
	id, ok := h.clients.ConsumerChannel(group, clientID)
	var conn remoting.Channel
	if ok {
		conn, ok = h.conns.get(id)
	}
	if !ok {
		return nil, fail(protocol.ConsumerNotOnline, "consumer %q of group %s is not connected to this broker", clientID, group)
	}
	ctx, cancel := context.WithTimeout(ctx, h.timeout)
	defer cancel()
	got, err := conn.Invoke(ctx, fwd)
	if err != nil {
		if errors.Is(err, remoting.ErrTimeout) {
			return nil, fail(protocol.SystemError, "consumer %s of group %s did not answer within %v", clientID, group, h.timeout)
		}
		return nil, fail(protocol.SystemError, "consumer %s of group %s: %v", clientID, group, err)
	}
	resp := respond(req, protocol.ResponseCode(got.Code), got.Remark)
	for _, f := range got.ExtFields {
		resp.SetExt(f.Key, f.Value)
	}
	resp.Body = got.Body
	return resp, nil
}
