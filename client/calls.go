package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
)

// The typed broker calls: every request the consumers and the admin API (and through it
// ferryctl) send about a queue's messages and offsets is built, sent and its answer
// decoded here, once:
//
//	PULL_MESSAGE (11)                pullMessage
//	QUERY_MESSAGE (12)               queryMessages
//	QUERY_CONSUMER_OFFSET (14)       committedOffset
//	UPDATE_CONSUMER_OFFSET (15)      commitOffset
//	SEARCH_OFFSET_BY_TIMESTAMP (29)  offsetByTime
//	GET_MAX_OFFSET (30)              maxOffset
//	GET_MIN_OFFSET (31)              minOffset
//	VIEW_MESSAGE_BY_ID (33)          viewMessage
//
// and stored records become messages in one place (messageOf, decodeMessages). A call
// goes to the address it is given and adds neither routing nor retries: the callers — the
// push consumer's queues (pull.go, offsets.go), the pull and lite-pull consumers
// (pullconsumer.go) and the Admin (admin*.go) — choose the broker, say what failed in
// their own words and decide what an answer means to them. Requests a broker sends to
// the client are served in brokercalls.go.

// pullRequest is one PULL_MESSAGE. The subscription travels with the request (sysFlag
// SUBSCRIPTION), so the broker filters by it whatever the group's heartbeat table holds;
// the broker never stores an offset from it (no COMMIT_OFFSET bit).
type pullRequest struct {
	group  string
	mq     MessageQueue
	offset int64
	max    int32
	// sub is the expression and its version; nil: "*", version 0.
	sub *subscription
	// suspend > 0 lets the broker hold a request that finds nothing this long (long
	// polling, sysFlag SUSPEND).
	suspend time.Duration
}

// pullAnswer is a broker's answer to a pull.
type pullAnswer struct {
	// status is PullFound, or what PULL_NOT_FOUND (PullNoNewMessage),
	// PULL_RETRY_IMMEDIATELY (PullNoMatchedMessage) and PULL_OFFSET_MOVED
	// (PullOffsetIllegal) mean; the body's messages are not filtered yet.
	status PullStatus
	// answered: the broker answered with one of those codes (its header may still be
	// malformed); false after a connection error or another code.
	answered bool
	// next is where the next pull starts; min and max the queue's bounds.
	next, min, max int64
	// suggested is the broker id the next pull of the queue should go to.
	suggested int64
	// body holds the records found (PullFound).
	body []byte
}

// pullMessage sends r to addr. An error is the broker's refusal (a *BrokerError other
// than the three codes pullAnswer names), a connection error, or — answered set — an
// answer whose header does not decode.
func (c *Client) pullMessage(ctx context.Context, addr string, r *pullRequest) (pullAnswer, error) {
	h := protocol.PullMessageRequestHeader{
		ConsumerGroup: r.group, Topic: r.mq.Topic, QueueID: r.mq.QueueID, QueueOffset: r.offset,
		MaxMsgNums: r.max, SysFlag: protocol.PullFlagSubscription, Subscription: protocol.SubscribeAll,
		ExpressionType: protocol.ExpressionTag, BrokerName: r.mq.BrokerName,
	}
	if r.sub != nil {
		h.Subscription, h.SubVersion, h.ExpressionType = r.sub.expr, r.sub.version, r.sub.exprType()
	}
	if r.suspend > 0 {
		h.SysFlag |= protocol.PullFlagSuspend
		h.SuspendTimeoutMillis = r.suspend.Milliseconds()
	}
	// protocol.NewRequest, with the header's type known: h stays on the stack.
	req := remoting.NewRequestExt(int16(protocol.PullMessage), nil)
	h.EncodeExt(&req.ExtFields)
	resp, err := c.invoke(ctx, addr, req)
	var a pullAnswer
	if err == nil {
		a.status = PullFound
	} else if st, ok := pullStatusOf(err); ok {
		a.status = st
	} else {
		return a, r.sub.refusal(err) // a refused SQL92 subscription: *SubscriptionError
	}
	a.answered = true
	var rh protocol.PullMessageResponseHeader
	if err := rh.DecodeExt(resp.ExtFields); err != nil {
		return a, fmt.Errorf("client: pull response from %s: %w", addr, err)
	}
	a.next, a.min, a.max, a.suggested = rh.NextBeginOffset, rh.MinOffset, rh.MaxOffset, rh.SuggestWhichBrokerID
	if a.status == PullFound {
		a.body = resp.Body
	}
	return a, nil
}

// pullStatusOf is what a pull's failure err means when it is one of the three answers
// pullAnswer names (PULL_NOT_FOUND, PULL_RETRY_IMMEDIATELY, PULL_OFFSET_MOVED); ok is
// false for any other error. (A function of its own: the error holder errors.As needs
// escapes, and only failed pulls should pay for it.)
func pullStatusOf(err error) (status PullStatus, ok bool) {
	var be *BrokerError
	if !errors.As(err, &be) {
		return 0, false
	}
	switch be.Code {
	case protocol.PullNotFound:
		return PullNoNewMessage, true
	case protocol.PullRetryImmediately:
		return PullNoMatchedMessage, true
	case protocol.PullOffsetMoved:
		return PullOffsetIllegal, true
	}
	return 0, false
}

// offsetCall sends an offset request (answered by an OffsetResponseHeader) to addr.
func (c *Client) offsetCall(ctx context.Context, addr string, code protocol.RequestCode, h protocol.Header) (int64, error) {
	resp, err := c.invoke(ctx, addr, protocol.NewRequest(code, h))
	if err != nil {
		return 0, err
	}
	off, err := offsetOf(resp)
	if err != nil {
		return 0, fmt.Errorf("client: %s answer from %s: %w", code, addr, err)
	}
	return off, nil
}

// offsetOf decodes the offset of an offset response.
func offsetOf(resp *remoting.Command) (int64, error) {
	var h protocol.OffsetResponseHeader
	err := h.DecodeExt(resp.ExtFields)
	return h.Offset, err
}

// minOffset is the smallest offset mq still stores (GET_MIN_OFFSET).
func (c *Client) minOffset(ctx context.Context, addr string, mq MessageQueue) (int64, error) {
	return c.offsetCall(ctx, addr, protocol.GetMinOffset, &protocol.GetMinOffsetRequestHeader{
		Topic: mq.Topic, QueueID: mq.QueueID, BrokerName: mq.BrokerName})
}

// maxOffset is the offset the next message stored in mq gets (GET_MAX_OFFSET).
func (c *Client) maxOffset(ctx context.Context, addr string, mq MessageQueue) (int64, error) {
	return c.offsetCall(ctx, addr, protocol.GetMaxOffset, &protocol.GetMaxOffsetRequestHeader{
		Topic: mq.Topic, QueueID: mq.QueueID, BrokerName: mq.BrokerName})
}

// offsetByTime is the offset of the first message of mq stored at or after the
// Unix-millisecond time ms (SEARCH_OFFSET_BY_TIMESTAMP).
func (c *Client) offsetByTime(ctx context.Context, addr string, mq MessageQueue, ms int64) (int64, error) {
	return c.offsetCall(ctx, addr, protocol.SearchOffsetByTimestamp, &protocol.SearchOffsetRequestHeader{
		Topic: mq.Topic, QueueID: mq.QueueID, Timestamp: ms, BrokerName: mq.BrokerName})
}

// committedOffset is group's committed offset of mq (QUERY_CONSUMER_OFFSET), or −1 when
// it has none (QUERY_NOT_FOUND, or a negative offset).
func (c *Client) committedOffset(ctx context.Context, addr, group string, mq MessageQueue) (int64, error) {
	// setZeroIfNotFound=false: a group without an offset has none, even in a queue never
	// truncated (where a RocketMQ 5 broker answers 0 by default).
	no := false
	off, err := c.offsetCall(ctx, addr, protocol.QueryConsumerOffset, &protocol.QueryConsumerOffsetRequestHeader{
		ConsumerGroup: group, Topic: mq.Topic, QueueID: mq.QueueID, SetZeroIfNotFound: &no, BrokerName: mq.BrokerName})
	switch {
	case hasCode(err, protocol.QueryNotFound):
		return -1, nil
	case err != nil:
		return 0, err
	}
	return max(off, -1), nil
}

// commitOffset stores offset as group's committed offset of mq (UPDATE_CONSUMER_OFFSET).
func (c *Client) commitOffset(ctx context.Context, addr, group string, mq MessageQueue, offset int64) error {
	_, err := c.invoke(ctx, addr, protocol.NewRequest(protocol.UpdateConsumerOffset, &protocol.UpdateConsumerOffsetRequestHeader{
		ConsumerGroup: group, Topic: mq.Topic, QueueID: mq.QueueID, CommitOffset: offset, BrokerName: mq.BrokerName}))
	return err
}

// viewMessage reads the record at commit-log offset of broker group broker from addr
// (VIEW_MESSAGE_BY_ID).
func (c *Client) viewMessage(ctx context.Context, addr, broker string, offset int64) ([]*MessageExt, error) {
	return c.messagesCall(ctx, addr, broker, protocol.ViewMessageByID, &protocol.ViewMessageRequestHeader{Offset: offset})
}

// queryMessages sends the key query h to the master of broker group broker at addr
// (QUERY_MESSAGE). An error decoding the answer comes with the messages before the bad
// record.
func (c *Client) queryMessages(ctx context.Context, addr, broker string, h *protocol.QueryMessageRequestHeader) ([]*MessageExt, error) {
	return c.messagesCall(ctx, addr, broker, protocol.QueryMessage, h)
}

// messagesCall sends a request answered by stored records to addr, the master of broker
// group broker, and decodes them (decodeMessages).
func (c *Client) messagesCall(ctx context.Context, addr, broker string, code protocol.RequestCode, h protocol.Header) ([]*MessageExt, error) {
	resp, err := c.invoke(ctx, addr, protocol.NewRequest(code, h))
	if err != nil {
		return nil, err
	}
	msgs, err := decodeMessages(resp.Body, broker, nil, &c.log)
	if err != nil {
		return msgs, fmt.Errorf("client: %s answer from %s: %w", code, addr, err)
	}
	return msgs, nil
}

// onEachBroker runs call for every broker in parallel and then calls handle with each
// outcome, serialized, in the order of brokers.
func onEachBroker[T any](brokers []brokerRef, call func(brokerRef) (T, error), handle func(brokerRef, T, error)) {
	type outcome struct {
		v   T
		err error
	}
	outs := make([]outcome, len(brokers))
	var wg sync.WaitGroup
	for i, b := range brokers {
		wg.Go(func() {
			v, err := call(b)
			outs[i] = outcome{v, err}
		})
	}
	wg.Wait()
	for i, b := range brokers {
		handle(b, outs[i].v, outs[i].err)
	}
}
