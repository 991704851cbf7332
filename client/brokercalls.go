package client

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
)

// Requests a broker sends to a push consumer on an operator's behalf (what the official
// clients serve too):
//
//   - RESET_CONSUMER_CLIENT_OFFSET (220, oneway): the broker has moved the group's
//     offsets (INVOKE_BROKER_TO_RESET_OFFSET). The consumer drops each owned queue named
//     in the table — its pull stops, its cached messages are forgotten, handler calls
//     running finish but are not committed — and starts it again at the new offset, once
//     the old queue's handlers are over. Unlike the official clients it does not pause
//     for 10 s first.
//   - CONSUME_MESSAGE_DIRECTLY (309): the group's handler runs on the message in the
//     body, outside any queue (no commit, no retry), and the answer says how it went
//     (CR_SUCCESS, CR_LATER, CR_RETURN_NULL for an unknown result, CR_THROW_EXCEPTION for
//     a panic, with the panic in the remark).
//   - GET_CONSUMER_RUNNING_INFO (307): the group's subscriptions, queue states and
//     settings (and, when asked, a goroutine dump).
//
// Requests naming another client id or a group without a started consumer here are
// answered SYSTEM_ERROR, like the official Go client does.

// handleBrokerCalls registers the handlers of this file on rc, and that of
// PUSH_REPLY_MESSAGE_TO_CLIENT (326, request.go).
func (c *Client) handleBrokerCalls(rc *signingClient) {
	rc.Handle(int16(protocol.ResetConsumerClientOffset), remoting.HandlerFunc(c.onResetOffset))
	rc.Handle(int16(protocol.ConsumeMessageDirectly), remoting.HandlerFunc(c.onConsumeDirectly))
	rc.Handle(int16(protocol.GetConsumerRunningInfo), remoting.HandlerFunc(c.onRunningInfo))
	rc.Handle(int16(protocol.PushReplyMessageToClient), remoting.HandlerFunc(c.onReplyMessage))
}

// startedConsumer returns the started push consumer of group, or nil.
func (c *Client) startedConsumer(group string) *PushConsumer {
	c.groups.Lock()
	pc := c.groups.consumers[group]
	c.groups.Unlock()
	if pc == nil {
		return nil
	}
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if pc.mu.state != consumerStarted {
		return nil
	}
	return pc
}

// calledConsumer finds the consumer a 307 or 309 request addresses.
func (c *Client) calledConsumer(group, clientID string) (*PushConsumer, error) {
	if clientID != "" && clientID != c.clientID {
		return nil, &remoting.CodeError{Code: int16(protocol.SystemError),
			Remark: fmt.Sprintf("Can't find specified client instance of: %s", clientID)}
	}
	pc := c.startedConsumer(group)
	if pc == nil {
		return nil, &remoting.CodeError{Code: int16(protocol.SystemError),
			Remark: fmt.Sprintf("client %s has no running consumer of group %s", c.clientID, group)}
	}
	return pc, nil
}

// onResetOffset serves RESET_CONSUMER_CLIENT_OFFSET.
func (c *Client) onResetOffset(_ context.Context, ch remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.ResetOffsetRequestHeader
	if err := h.DecodeExt(req.ExtFields); err != nil && (h.Topic == "" || h.Group == "") {
		c.log.Warn().Err(err).Str("broker", ch.RemoteAddr()).Msg("bad RESET_CONSUMER_CLIENT_OFFSET header")
		return nil, nil
	}
	body, err := protocol.DecodeResetOffsetBody(req.Body)
	if err != nil {
		c.log.Warn().Err(err).Str("broker", ch.RemoteAddr()).Msg("bad RESET_CONSUMER_CLIENT_OFFSET body")
		return nil, nil
	}
	pc := c.startedConsumer(h.Group)
	if pc == nil {
		c.log.Debug().Str("group", h.Group).Msg("offset reset for a group without consumer; ignored")
		return nil, nil
	}
	n := pc.resetOffsets(h.Topic, body.OffsetTable)
	pc.log.Info().Str("topic", h.Topic).Int("queues", n).Str("broker", ch.RemoteAddr()).Msg("offsets reset by the broker")
	return nil, nil
}

// resetOffsets restarts each owned queue of topic that table names at its new offset and
// returns how many it restarted.
func (pc *PushConsumer) resetOffsets(topic string, table map[protocol.MessageQueue]int64) int {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if pc.mu.state != consumerStarted {
		return 0
	}
	n := 0
	for mq, q := range pc.mu.queues {
		off, ok := table[protocol.MessageQueue(mq)]
		if !ok || mq.Topic != topic || off < 0 {
			continue
		}
		// Not committed: the broker holds the new offset, the old one must not overwrite it.
		pc.dropLocked(q, false)
		nq := pc.newProcessQueue(q.sub, q.route(), pc.mu.draining[mq])
		nq.reset = &off
		pc.mu.queues[mq] = nq
		nq.pulling.Add(1)
		pc.wg.Go(nq.pullLoop)
		if pc.opts.orderly {
			nq.pulling.Add(1)
			pc.wg.Go(nq.consumeLoop)
		}
		n++
	}
	for mq := range table {
		if mq.Topic == topic {
			// A queue owned again later starts at the reset offset, not at the floor of
			// what this consumer had reached before (offsets.go, startOffset).
			delete(pc.mu.reached, MessageQueue(mq))
		}
	}
	return n
}

// firstOffset is where q starts pulling: where a reset put it, or else the group's
// committed offset (startOffset).
func (q *processQueue) firstOffset() (int64, error) {
	if q.reset != nil {
		return *q.reset, nil
	}
	return q.pc.startOffset(q)
}

// onConsumeDirectly serves CONSUME_MESSAGE_DIRECTLY.
func (c *Client) onConsumeDirectly(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.ConsumeMessageDirectlyResultRequestHeader
	if err := h.DecodeExt(req.ExtFields); err != nil {
		return nil, &remoting.CodeError{Code: int16(protocol.SystemError), Remark: err.Error()}
	}
	pc, err := c.calledConsumer(h.ConsumerGroup, h.ClientID)
	if err != nil {
		return nil, err
	}
	var rec message.Record
	if _, err := rec.Decode(req.Body); err != nil {
		return nil, &remoting.CodeError{Code: int16(protocol.SystemError), Remark: "consume directly: " + err.Error()}
	}
	// The message as a pull would deliver it.
	m, err := messageOf(&rec, h.BrokerName)
	if err != nil {
		pc.log.Warn().Err(err).Str("msgID", m.MsgID).Msg("cannot inflate body; delivering it as stored")
	}
	restoreTopic(m, protocol.RetryTopic(pc.group))
	res := pc.consumeDirectly(m)
	body, err := protocol.EncodeConsumeMessageDirectlyResult(&res)
	if err != nil {
		return nil, err
	}
	resp := remoting.NewResponse(req, int16(protocol.Success), "")
	resp.Body = body
	return resp, nil
}

// consumeDirectly runs the handler on m and reports the outcome.
func (pc *PushConsumer) consumeDirectly(m *MessageExt) (res protocol.ConsumeMessageDirectlyResult) {
	start := time.Now()
	res = protocol.ConsumeMessageDirectlyResult{Order: pc.opts.orderly, AutoCommit: true}
	defer func() {
		if r := recover(); r != nil {
			res.ConsumeResult, res.Remark = protocol.CMResultThrowException, fmt.Sprint(r)
		}
		res.SpentTimeMills = time.Since(start).Milliseconds()
	}()
	switch pc.handler(pc.ctx, []*MessageExt{m}) {
	case ConsumeSuccess:
		res.ConsumeResult = protocol.CMResultSuccess
	case ConsumeRetryLater:
		res.ConsumeResult = protocol.CMResultLater
	default:
		res.ConsumeResult = protocol.CMResultReturnNull
	}
	return res
}

// onRunningInfo serves GET_CONSUMER_RUNNING_INFO.
func (c *Client) onRunningInfo(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.GetConsumerRunningInfoRequestHeader
	if err := h.DecodeExt(req.ExtFields); err != nil {
		return nil, &remoting.CodeError{Code: int16(protocol.SystemError), Remark: err.Error()}
	}
	pc, err := c.calledConsumer(h.ConsumerGroup, h.ClientID)
	if err != nil {
		return nil, err
	}
	info := pc.runningInfo(h.JstackEnable)
	body, err := protocol.EncodeConsumerRunningInfo(&info)
	if err != nil {
		return nil, err
	}
	resp := remoting.NewResponse(req, int16(protocol.Success), "")
	resp.Body = body
	return resp, nil
}

// runningInfo describes the consumer: settings, subscriptions, owned queues.
func (pc *PushConsumer) runningInfo(jstack bool) protocol.ConsumerRunningInfo {
	o := &pc.opts
	model := protocol.Clustering
	if o.broadcast {
		model = protocol.Broadcasting
	}
	info := protocol.ConsumerRunningInfo{
		Properties: map[string]string{
			protocol.PropNameServerAddr:     strings.Join(pc.c.opts.NameServers, ";"),
			protocol.PropThreadPoolCoreSize: strconv.Itoa(o.workers),
			protocol.PropConsumeOrderly:     strconv.FormatBool(o.orderly),
			protocol.PropConsumeType:        string(protocol.ConsumePassively),
			protocol.PropClientVersion:      "Ferry",
			"consumerGroup":                 pc.group,
			"messageModel":                  string(model),
			"consumeFromWhere":              string(o.from.wire()),
			"consumeThreadMax":              strconv.Itoa(o.workers),
			"consumeMessageBatchMaxSize":    strconv.Itoa(o.consumeBatch),
			"pullBatchSize":                 strconv.Itoa(o.pullBatch),
			"pullThresholdForQueue":         strconv.Itoa(o.cacheMessages),
			"pullThresholdSizeForQueue":     strconv.Itoa(o.cacheBytes >> 20),
			"maxReconsumeTimes":             strconv.Itoa(o.maxReconsume),
		},
		MQTable:     map[protocol.MessageQueue]protocol.ProcessQueueInfo{},
		StatusTable: map[string]protocol.ConsumeStatus{},
	}
	for _, s := range pc.subs {
		info.SubscriptionSet = append(info.SubscriptionSet, s.data())
		info.StatusTable[s.topic] = protocol.ConsumeStatus{} // figures are not kept yet
	}
	pc.mu.Lock()
	if !pc.mu.startedAt.IsZero() {
		info.Properties[protocol.PropConsumerStartTimestamp] = strconv.FormatInt(pc.mu.startedAt.UnixMilli(), 10)
	}
	queues := make([]*processQueue, 0, len(pc.mu.queues))
	for _, q := range pc.mu.queues {
		queues = append(queues, q)
	}
	pc.mu.Unlock()
	for _, q := range queues {
		info.MQTable[protocol.MessageQueue(q.mq)] = q.info()
	}
	if jstack {
		buf := make([]byte, 1<<20)
		info.Jstack = string(buf[:runtime.Stack(buf, true)])
	}
	return info
}

// info is the queue's state for GET_CONSUMER_RUNNING_INFO.
func (q *processQueue) info() protocol.ProcessQueueInfo {
	commit, ok := q.commitOffset()
	if !ok {
		commit = -1
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	p := protocol.ProcessQueueInfo{CommitOffset: commit, CachedMsgCount: int32(q.mu.count),
		CachedMsgSizeInMiB: int32(q.mu.bytes >> 20), Dropped: q.mu.dropped}
	if w := q.mu.window; len(w) > 0 {
		p.CachedMsgMinOffset, p.CachedMsgMaxOffset = w[0].offset, w[len(w)-1].offset
	}
	if !q.mu.lockedAt.IsZero() {
		p.Locked, p.LastLockTimestamp = true, q.mu.lockedAt.UnixMilli()
	}
	return p
}
