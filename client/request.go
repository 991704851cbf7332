package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
)

// Request-reply (RocketMQ's, so Ferry and the official clients answer each other).
//
// The requester sends the request like any message, with CORRELATION_ID (a new id),
// REPLY_TO_CLIENT (its client id) and TTL (ms) properties; the broker stores it with the
// CLUSTER property. A consumer answers with a reply (NewReply) for the cluster's reply
// topic "<cluster>_REPLY_TOPIC" carrying the same CORRELATION_ID and REPLY_TO_CLIENT,
// sent with SEND_REPLY_MESSAGE (324; Producer.SendReply). That broker pushes it to the
// requester's connection with PUSH_REPLY_MESSAGE_TO_CLIENT (326), which the Client
// serves here: the pending Request with that correlation id gets the reply.

// ErrNotRequest means a message is not a request-reply message where one is needed:
// NewReply was given a message without CLUSTER, REPLY_TO_CLIENT or CORRELATION_ID, or
// SendReply a message without REPLY_TO_CLIENT or CORRELATION_ID.
var ErrNotRequest = errors.New("client: not a request-reply message")

// replyMessageType is the MSG_TYPE of a reply.
const replyMessageType = "reply"

// replyRegistry holds the pending requests of a Client by correlation id. Its zero value
// is ready.
type replyRegistry struct {
	mu sync.Mutex
	m  map[string]chan *MessageExt // each with capacity 1
}

// add registers a pending request and returns the channel its reply arrives on.
func (r *replyRegistry) add(id string) chan *MessageExt {
	ch := make(chan *MessageExt, 1)
	r.mu.Lock()
	if r.m == nil {
		r.m = make(map[string]chan *MessageExt)
	}
	r.m[id] = ch
	r.mu.Unlock()
	return ch
}

// remove forgets a pending request.
func (r *replyRegistry) remove(id string) {
	r.mu.Lock()
	delete(r.m, id)
	r.mu.Unlock()
}

// deliver hands m to the pending request id; it reports whether one was waiting. A
// second reply to one request is dropped.
func (r *replyRegistry) deliver(id string, m *MessageExt) bool {
	r.mu.Lock()
	ch, ok := r.m[id]
	delete(r.m, id)
	r.mu.Unlock()
	if ok {
		ch <- m
	}
	return ok
}

// Request sends msg as a request and waits for its reply, which a consumer of the topic
// sends with NewReply and Producer.SendReply (or an official client with its
// CreateReplyMessage). ctx bounds the whole exchange; without a deadline the client's
// request timeout applies. The remaining time travels as the TTL property. msg itself is
// not changed (the request is a copy with the request properties added); it is sent on
// its own request, round robin, without the producer's selector. The reply's Topic is
// the cluster's reply topic; its Body is the answer. Errors: the send's, or ctx's end
// (context.DeadlineExceeded when no reply came in time).
func (p *Producer) Request(ctx context.Context, msg *message.Message) (*MessageExt, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, p.c.opts.RequestTimeout)
		defer cancel()
	}
	dl, _ := ctx.Deadline()
	req := &message.Message{Topic: msg.Topic, Flag: msg.Flag, Body: msg.Body, Properties: maps.Clone(msg.Properties)}
	id := p.c.ids.Next()
	req.SetProperty(message.PropertyCorrelationID, id)
	req.SetProperty(message.PropertyReplyToClient, p.c.clientID)
	req.SetProperty(message.PropertyTTL, strconv.FormatInt(max(time.Until(dl).Milliseconds(), 1), 10))
	out, err := p.prepare(req)
	if err != nil {
		return nil, err
	}
	r, err := p.c.route(ctx, out.topic)
	if err != nil {
		return nil, err
	}
	replies := p.c.replies.add(id)
	defer p.c.replies.remove(id)
	sent := make(chan error, 1)
	p.sendOne(ctx, r, laneKey{topic: out.topic, queue: -1}, out, func(_ SendResult, err error) { sent <- err })
	for {
		select {
		case err := <-sent:
			if err != nil {
				return nil, fmt.Errorf("client: request to %s: %w", msg.Topic, err)
			}
			sent = nil // the reply may come before or after the send's answer
		case m := <-replies:
			return m, nil
		case <-ctx.Done():
			return nil, fmt.Errorf("client: request to %s: no reply: %w", msg.Topic, ctx.Err())
		}
	}
}

// NewReply returns the reply to request with body: a message for the reply topic of the
// cluster that stored the request, with MSG_TYPE "reply" and the request's
// CORRELATION_ID, REPLY_TO_CLIENT and TTL. Send it with Producer.SendReply. Unlike the
// official Go client's CreateReplyMessage, the reply carries body. The error wraps
// ErrNotRequest when request lacks one of those properties.
func NewReply(request *MessageExt, body []byte) (*message.Message, error) {
	cluster := request.Property(message.PropertyCluster)
	replyTo := request.Property(message.PropertyReplyToClient)
	id := request.Property(message.PropertyCorrelationID)
	if cluster == "" || replyTo == "" || id == "" {
		return nil, fmt.Errorf("%w: message %s has no %s, %s or %s property", ErrNotRequest, request.MsgID,
			message.PropertyCluster, message.PropertyReplyToClient, message.PropertyCorrelationID)
	}
	reply := message.NewMessage(protocol.ReplyTopic(cluster), body)
	reply.SetProperty(message.PropertyMsgType, replyMessageType)
	reply.SetProperty(message.PropertyCorrelationID, id)
	reply.SetProperty(message.PropertyReplyToClient, replyTo)
	if ttl := request.Property(message.PropertyTTL); ttl != "" {
		reply.SetProperty(message.PropertyTTL, ttl)
	}
	return reply, nil
}

// SendReply sends a reply (NewReply) with SEND_REPLY_MESSAGE: the broker pushes it to
// the requester and stores it in the reply topic. The reply's topic is used as it is (no
// namespace: reply topics belong to the cluster). When a broker cannot push it (the
// requester is not connected there, or gone) it answers SYSTEM_ERROR naming the client;
// SendReply then tries the reply topic's other brokers and returns the last refusal, a
// *BrokerError. The error wraps ErrNotRequest when reply has no REPLY_TO_CLIENT or
// CORRELATION_ID.
func (p *Producer) SendReply(ctx context.Context, reply *message.Message) (SendResult, error) {
	if reply.Property(message.PropertyReplyToClient) == "" || reply.Property(message.PropertyCorrelationID) == "" {
		return SendResult{}, fmt.Errorf("%w: the reply has no %s or %s property", ErrNotRequest,
			message.PropertyReplyToClient, message.PropertyCorrelationID)
	}
	out, err := p.prepare(reply)
	if err != nil {
		return SendResult{}, err
	}
	out.topic = reply.Topic
	r, err := p.c.route(ctx, out.topic)
	if err != nil {
		return SendResult{}, err
	}
	tried := make(map[string]bool)
	start := int(p.rr.Add(1))
	var errs []error
	for i := range r.queues {
		q := r.queues[(start+i)%len(r.queues)]
		if tried[q.broker] {
			continue
		}
		tried[q.broker] = true
		res, err := p.sendReplyTo(ctx, r, q, out)
		if err == nil {
			return res, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil || errors.Is(err, ErrClosed) {
			break
		}
	}
	return SendResult{}, fmt.Errorf("client: send reply: %w", errors.Join(errs...))
}

// sendReplyTo sends out to queue q with SEND_REPLY_MESSAGE (V1 send header).
func (p *Producer) sendReplyTo(ctx context.Context, r *topicRoute, q queue, out *outgoing) (SendResult, error) {
	h := protocol.SendMessageRequestHeader{
		ProducerGroup: p.group, Topic: out.topic, DefaultTopic: protocol.AutoCreateTopicKey,
		DefaultTopicQueueNums: defaultAutoQueues, QueueID: q.id, SysFlag: out.sysFlag,
		BornTimestamp: time.Now().UnixMilli(), Flag: out.flag, Properties: string(out.props),
		BrokerName: q.broker,
	}
	req := protocol.NewRequest(protocol.SendReplyMessage, &h)
	req.Body = out.body
	resp, err := p.c.invoke(ctx, q.addr, req)
	if err != nil {
		return SendResult{}, err
	}
	var rh protocol.SendMessageResponseHeader
	if err := rh.DecodeExt(resp.ExtFields); err != nil {
		return SendResult{}, fmt.Errorf("client: reply response from %s: %w", q.addr, err)
	}
	return SendResult{MsgID: out.uniq, OffsetMsgID: rh.MsgID, Topic: r.topic, BrokerName: q.broker,
		QueueID: rh.QueueID, QueueOffset: rh.QueueOffset}, nil
}

// onReplyMessage serves PUSH_REPLY_MESSAGE_TO_CLIENT: a reply for a pending Request. It
// answers SUCCESS even when no request waits for it any more (it timed out), as the
// official clients do.
func (c *Client) onReplyMessage(_ context.Context, ch remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.ReplyMessageRequestHeader
	if err := h.DecodeExt(req.ExtFields); err != nil {
		return nil, &remoting.CodeError{Code: int16(protocol.SystemError), Remark: fmt.Sprintf("bad reply header: %v", err)}
	}
	m := &MessageExt{
		Queue:          MessageQueue{Topic: h.Topic, QueueID: h.QueueID},
		ReconsumeTimes: h.ReconsumeTimes,
		BornTime:       time.UnixMilli(h.BornTimestamp),
		StoreTime:      time.UnixMilli(h.StoreTimestamp),
		SysFlag:        h.SysFlag,
	}
	m.Topic, m.Flag = h.Topic, h.Flag
	m.Properties = message.ParseProperties([]byte(h.Properties))
	m.BornHost, _ = netip.ParseAddrPort(h.BornHost)
	m.StoreHost, _ = netip.ParseAddrPort(h.StoreHost)
	m.Body = bytes.Clone(req.Body)
	if message.IsZlibCompressed(h.SysFlag) {
		body, err := message.Decompress(req.Body, 0)
		if err != nil {
			return nil, &remoting.CodeError{Code: int16(protocol.SystemError), Remark: fmt.Sprintf("reply body: %v", err)}
		}
		m.Body = body
	}
	m.MsgID = m.UniqKey()
	id := m.Property(message.PropertyCorrelationID)
	if !c.replies.deliver(id, m) {
		c.log.Debug().Str("correlationID", id).Str("broker", ch.RemoteAddr()).Msg("reply for no pending request; dropped")
	}
	return remoting.NewResponse(req, int16(protocol.Success), ""), nil
}
