package broker

// CONSUMER_SEND_MSG_BACK (36): a consumer hands back a message it failed to consume.
//
// Behaviour (storage spec §10): the group's config is found or created (a group with no
// retry queues drops the message and answers SUCCESS); the original record is read at
// `offset` (SYSTEM_ERROR if it is gone). When its reconsume count has reached the group's
// retry limit (retryPolicy.limit) or the requested delay level is negative, a copy goes
// to the dead-letter topic %DLQ%<group> (created on demand, one queue) without delay.
// Otherwise a copy goes to %RETRY%<group> with delay level = the requested one or 3 +
// reconsume count, which the schedule service holds back until due. The copy keeps body,
// flag, sysflag, born host and time and all properties, adds RETRY_TOPIC (the original
// topic) and ORIGIN_MESSAGE_ID (the first delivery's id) when absent, and has reconsume
// count + 1.
//
// The same limit and comparison decide a direct send to %RETRY%<group> (a client whose
// send-back failed resends the message itself): past the limit it goes to the DLQ.

import (
	"context"
	"math/rand/v2"
	"strconv"

	"github.com/rs/zerolog"

	"github.com/ferrymq/ferry/acl"
	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
)

// retryPolicy is the one home of the retry and dead-letter rules.
type retryPolicy struct {
	topics TopicTable
	groups GroupTable
	log    zerolog.Logger
}

// limit is how many times a message of a group may be reconsumed before it goes to the
// dead-letter queue: the client's own limit when it sends one, else the group's
// retryMaxTimes (for groups created on demand: the broker's MaxReconsumeTimes setting).
func limit(groupMax int32, requested int32, given bool) int32 {
	if given && requested >= 0 {
		return requested
	}
	return groupMax
}

// exhausted reports whether a message already reconsumed reconsumeTimes times has used
// up its retries (RocketMQ compares the same way on both paths).
func exhausted(reconsumeTimes, limit int32) bool { return reconsumeTimes >= limit }

// redirectExhausted sends a message for %RETRY%<group> whose reconsume count is past the
// limit to the group's dead-letter topic instead, without delay (remoting spec §6.1 step
// 4). The official clients send maxReconsumeTimes 0 on every plain send, so only a
// positive value counts as the client's own limit here.
// The record's DELAY property is removed, and sp (the scan of its properties) updated to
// match, so the schedule rewrite that follows does not park the dead letter.
func (p *retryPolicy) redirectExhausted(h *protocol.SendMessageRequestHeader, rec *message.Record, sp *message.SendProps) error {
	group, ok := protocol.RetryGroup(h.Topic)
	if !ok {
		return nil
	}
	gcfg, _, err := p.groups.FindOrCreate(group)
	if err != nil {
		return fail(protocol.SubscriptionGroupNotExist, "group %s: %v", group, err)
	}
	if !exhausted(h.ReconsumeTimes, limit(gcfg.RetryMaxTimes, h.MaxReconsumeTimes, h.MaxReconsumeTimes > 0)) {
		return nil
	}
	cfg, _, err := p.topics.CreateDLQTopic(group)
	if err != nil {
		return fail(protocol.SystemError, "create DLQ topic: %v", err)
	}
	rec.Topic, rec.QueueID = []byte(cfg.TopicName), 0
	rec.Properties = message.RemoveProperty(rec.Properties, message.PropertyDelayLevel)
	sp.DelayLevel = nil
	p.log.Info().Str("group", group).Int32("reconsumeTimes", h.ReconsumeTimes).Msg("retry message moved to the dead-letter queue")
	return nil
}

// handleSendBack serves CONSUMER_SEND_MSG_BACK. With ACL on the caller needs, besides
// SUB on the group (checked by the gate), SUB on the original record's topic
// (checkRecordTopics): else any account could copy any record into its own retry topic
// and pull it from there.
func (s *sender) handleSendBack(ctx context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.ConsumerSendMsgBackRequestHeader
	if err := h.DecodeExt(req.ExtFields); err != nil {
		return nil, fail(protocol.SystemError, "decode header: %v", err)
	}
	p := s.retry
	gcfg, _, err := p.groups.FindOrCreate(h.Group)
	if err != nil {
		return nil, fail(protocol.SubscriptionGroupNotExist, "group %s: %v", h.Group, err)
	}
	if gcfg.RetryQueueNums <= 0 {
		return respond(req, protocol.Success, "retry disabled for this group; message dropped"), nil
	}
	orig, view, err := s.store.ReadMessage(h.Offset)
	if err != nil {
		return nil, fail(protocol.SystemError, "look up message at %d: %v", h.Offset, err)
	}
	defer view.Release()
	if err := checkRecordTopics(acl.GrantFrom(ctx), &orig, acl.PermSub); err != nil {
		return nil, err
	}

	props := orig.Properties
	if _, ok := message.LookupProperty(props, message.PropertyRetryTopic); !ok {
		props, err = message.SetProperty(props, message.PropertyRetryTopic, string(orig.Topic))
		if err != nil {
			return nil, fail(protocol.SystemError, "%v", err)
		}
	}
	if _, ok := message.LookupProperty(props, message.PropertyOriginMessageID); !ok {
		origin := h.OriginMsgID
		if origin == "" {
			origin = orig.MsgID()
		}
		if props, err = message.SetProperty(props, message.PropertyOriginMessageID, origin); err != nil {
			return nil, fail(protocol.SystemError, "%v", err)
		}
	}
	props = message.RemoveProperty(props, message.PropertyDelayLevel)

	rec := message.Record{
		Flag: orig.Flag, Body: orig.Body, SysFlag: orig.SysFlag &^ message.SysFlagTransactionMask,
		BornTimestamp: orig.BornTimestamp, BornHost: orig.BornHost, ReconsumeTimes: orig.ReconsumeTimes + 1,
	}
	delayLevel := h.DelayLevel
	var requested int32
	if h.MaxReconsumeTimes != nil {
		requested = *h.MaxReconsumeTimes
	}
	var topic string
	if exhausted(orig.ReconsumeTimes, limit(gcfg.RetryMaxTimes, requested, h.MaxReconsumeTimes != nil)) || delayLevel < 0 {
		cfg, _, err := p.topics.CreateDLQTopic(h.Group)
		if err != nil {
			return nil, fail(protocol.SystemError, "create DLQ topic: %v", err)
		}
		topic, rec.QueueID = cfg.TopicName, 0
		p.log.Info().Str("group", h.Group).Str("msgId", orig.MsgID()).Int32("reconsumeTimes", orig.ReconsumeTimes).
			Msg("message moved to the dead-letter queue")
	} else {
		cfg, _, err := p.topics.CreateRetryTopic(h.Group, int(max(gcfg.RetryQueueNums, 1)))
		if err != nil {
			return nil, fail(protocol.SystemError, "create retry topic: %v", err)
		}
		topic, rec.QueueID = cfg.TopicName, rand.Int32N(max(cfg.WriteQueueNums, 1))
		if delayLevel == 0 {
			delayLevel = 3 + orig.ReconsumeTimes
		}
		if props, err = message.SetProperty(props, message.PropertyDelayLevel, strconv.Itoa(int(delayLevel))); err != nil {
			return nil, fail(protocol.SystemError, "%v", err)
		}
	}
	rec.Topic, rec.Properties = []byte(topic), props
	sp := message.ScanProperties(rec.Properties)
	if _, _, err := s.sched.RewriteScanned(&rec, &sp, nil); err != nil {
		return nil, fail(protocol.MessageIllegal, "%v", err)
	}
	if _, err := s.store.PutMessage(&rec, false); err != nil {
		return nil, storeError(err)
	}
	return respond(req, protocol.Success, ""), nil
}
