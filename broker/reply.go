package broker

// SEND_REPLY_MESSAGE (324, V1 send header) and SEND_REPLY_MESSAGE_V2 (325, V2 header):
// the answer to a request-reply message.
//
// Behaviour (RocketMQ's ReplyMessageProcessor): the requester sent its request with
// CORRELATION_ID, REPLY_TO_CLIENT (its client id) and TTL; the broker stored it with its
// CLUSTER property; the consumer built the reply for "<cluster>_REPLY_TOPIC" and sends it
// here. The topic is checked as for a send. The reply is pushed with
// PUSH_REPLY_MESSAGE_TO_CLIENT (326) to a connection of the client REPLY_TO_CLIENT names
// (the one its last request came on, else one it registered with a heartbeat as a
// producer, else as a consumer), with PUSH_REPLY_TIME added to
// its properties, and the answer's code is the push's outcome: SUCCESS when the requester
// took it, SYSTEM_ERROR with a remark naming the client when REPLY_TO_CLIENT is missing,
// the client is not connected to this broker, or it refused or did not answer within
// replyPushTimeout. When storing replies is enabled (broker.storeReplyMessageEnable,
// RocketMQ's default true) the reply is then stored in the reply topic, whatever the push
// did, like any message (so it can be looked up by key or id afterwards); a store failure
// is logged and does not change a successful push's answer, as in RocketMQ. A SUCCESS
// answer carries the stored message's offset id, queue and queue offset ("0", the queue
// and 0 when not stored).

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/rs/zerolog"

	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
)

// replyPushTimeout bounds the push of a reply to its requester (RocketMQ: 3 s).
const replyPushTimeout = 3 * time.Second

// clientLookup finds a connection of a client by its id.
type clientLookup interface {
	ClientChannel(clientID string) (uint64, bool)
}

// replier serves the reply family.
type replier struct {
	send    *sender
	clients clientLookup
	conns   *conns
	store   bool // store replies in the reply topic (storeReplyMessageEnable)
	timeout time.Duration
	log     zerolog.Logger
}

// errReplyPush is why a reply could not be pushed; its text is the answer's remark.
var errReplyPush = errors.New("push reply message fail")

// handleReply serves SEND_REPLY_MESSAGE and SEND_REPLY_MESSAGE_V2.
func (r *replier) handleReply(ctx context.Context, ch remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	h, err := protocol.DecodeSendMessageRequestHeader(protocol.RequestCode(req.Code), req.ExtFields)
	if err != nil {
		return nil, fail(protocol.SystemError, "decode reply header: %v", err)
	}
	queueID, _, err := r.send.sendQueue(&h)
	if err != nil {
		return nil, err
	}
	pushErr := r.push(ctx, ch, &h, queueID, req.Body)
	resp := respond(req, protocol.Success, "")
	if pushErr != nil {
		r.log.Warn().Err(pushErr).Str("topic", h.Topic).Msg("reply not delivered")
		resp = respond(req, protocol.SystemError, pushErr.Error())
	}
	rh := protocol.SendMessageResponseHeader{MsgID: "0", QueueID: queueID, MsgRegion: "DefaultRegion", TraceOn: true}
	if r.store {
		msgID, queueOffset, err := r.storeReply(ctx, ch, &h, queueID, req.Body)
		if err != nil {
			r.log.Warn().Err(err).Str("topic", h.Topic).Msg("reply not stored")
		} else {
			rh.MsgID, rh.QueueOffset = msgID, queueOffset
		}
	}
	if pushErr == nil {
		rh.EncodeExt(&resp.ExtFields)
	}
	return resp, nil
}

// push sends the reply to the connection of the client its REPLY_TO_CLIENT names.
func (r *replier) push(ctx context.Context, ch remoting.Channel, h *protocol.SendMessageRequestHeader, queueID int32, body []byte) error {
	props := bytesOf(h.Properties)
	clientID, ok := message.LookupProperty(props, message.PropertyReplyToClient)
	if !ok || len(clientID) == 0 {
		return fmt.Errorf("%w: the reply has no %s property", errReplyPush, message.PropertyReplyToClient)
	}
	conn, ok := r.conns.requester(string(clientID))
	if !ok {
		var id uint64
		if id, ok = r.clients.ClientChannel(string(clientID)); ok {
			conn, ok = r.conns.get(id)
		}
	}
	if !ok {
		return fmt.Errorf("%w: client %s (the requester) is not connected to this broker", errReplyPush, clientID)
	}
	withTime, err := message.AppendWithProperty(nil, props, message.PropertyPushReplyTime,
		strconv.FormatInt(time.Now().UnixMilli(), 10))
	if err != nil {
		return fmt.Errorf("%w: %w", errReplyPush, err)
	}
	ph := protocol.ReplyMessageRequestHeader{
		ProducerGroup: h.ProducerGroup, Topic: h.Topic, DefaultTopic: h.DefaultTopic,
		DefaultTopicQueueNums: h.DefaultTopicQueueNums, QueueID: queueID, SysFlag: h.SysFlag,
		BornTimestamp: h.BornTimestamp, Flag: h.Flag, Properties: string(withTime),
		ReconsumeTimes: h.ReconsumeTimes, UnitMode: h.UnitMode, BornHost: ch.RemoteAddr(),
		StoreHost: r.send.storeHost.String(), StoreTimestamp: time.Now().UnixMilli(),
	}
	cmd := protocol.NewRequest(protocol.PushReplyMessageToClient, &ph)
	cmd.Body = body
	cctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	got, err := conn.Invoke(cctx, cmd)
	if err != nil {
		return fmt.Errorf("%w: to client %s: %w", errReplyPush, clientID, err)
	}
	if got.Code != int16(protocol.Success) {
		return fmt.Errorf("%w: client %s answered %s: %s", errReplyPush, clientID, protocol.ResponseCode(got.Code), got.Remark)
	}
	return nil
}

// storeReply stores the reply in its topic and returns its offset id and queue offset.
func (r *replier) storeReply(ctx context.Context, ch remoting.Channel, h *protocol.SendMessageRequestHeader, queueID int32, body []byte) (string, int64, error) {
	s := r.send
	sc := s.getScratch()
	defer s.putScratch(sc)
	sp := &sc.sp
	*sp = message.ScanProperties(bytesOf(h.Properties))
	props, err := s.brokerProperties(&sc.props, bytesOf(h.Properties), sp)
	if err != nil {
		return "", 0, err
	}
	born := bornHost(ch)
	sc.one[0] = message.Record{Flag: h.Flag, Body: body, Properties: props, QueueID: queueID,
		SysFlag: h.SysFlag, BornTimestamp: h.BornTimestamp, BornHost: born,
		ReconsumeTimes: h.ReconsumeTimes, Topic: bytesOf(h.Topic)}
	if born.Addr().Is6() && !born.Addr().Is4In6() {
		sc.one[0].SysFlag |= message.SysFlagBornHostV6
	}
	recs := sc.one[:]
	res, err := s.store.PutMessages(recs, sp.WaitStore())
	if err != nil && res.Count == 0 {
		return "", 0, err
	}
	if s.rates != nil {
		s.rates.put(h.Topic, res.Count, int64(res.Bytes))
	}
	s.repl.afterPut(ctx, res.NextOffset(), false, protocol.Success)
	return s.offsetMsgIDs(recs, res), res.QueueOffset, nil
}
