package broker

// CONSUMER_SEND_MSG_BACK (36): a consumer hands back a message it failed to consume.
//
// Behaviour (storage spec §10): the group's config is found or created (a group with no
// retry queues drops the message and answers SUCCESS); the original record is read at
// `offset` (SYSTEM_ERROR if it is gone). When its reconsume count has reached the limit
// (the header's maxReconsumeTimes, else the group's retryMaxTimes, 16) or the requested
// delay level is negative, a copy goes to the dead-letter topic %DLQ%<group> (created on
// demand, one queue) without delay. Otherwise a copy goes to %RETRY%<group> with delay level
// = the requested one or 3 + reconsume count, which the schedule service holds back until
// due. The copy keeps body, flag, sysflag, born host and time and all properties, adds
// RETRY_TOPIC (the original topic) and ORIGIN_MESSAGE_ID (the first delivery's id) when
// absent, and has reconsume count + 1.

import (
	"context"
	"math/rand/v2"
	"strconv"

	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
)

func (b *Broker) handleSendBack(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	offset, err1 := strconv.ParseInt(req.Ext("offset"), 10, 64)
	delayLevel, err2 := strconv.Atoi(req.Ext("delayLevel"))
	group := req.Ext("group")
	if err1 != nil || err2 != nil || group == "" {
		return nil, fail(protocol.SystemError, "offset, group and delayLevel are required")
	}
	gcfg, _, err := b.groups.FindOrCreate(group)
	if err != nil {
		return nil, fail(protocol.SubscriptionGroupNotExist, "group %s: %v", group, err)
	}
	if gcfg.RetryQueueNums <= 0 {
		return respond(req, protocol.Success, "retry disabled for this group; message dropped"), nil
	}
	orig, view, err := b.store.ReadMessage(offset)
	if err != nil {
		return nil, fail(protocol.SystemError, "look up message at %d: %v", offset, err)
	}
	defer view.Release()

	maxTimes := int32(gcfg.RetryMaxTimes)
	if v := req.Ext("maxReconsumeTimes"); v != "" {
		if n, err := strconv.Atoi(v); err == nil && n >= 0 {
			maxTimes = int32(n)
		}
	}
	props := orig.Properties
	if _, ok := message.LookupProperty(props, message.PropertyRetryTopic); !ok {
		props, err = message.SetProperty(props, message.PropertyRetryTopic, string(orig.Topic))
		if err != nil {
			return nil, fail(protocol.SystemError, "%v", err)
		}
	}
	if _, ok := message.LookupProperty(props, message.PropertyOriginMessageID); !ok {
		origin := req.Ext("originMsgId")
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
	var topic string
	if orig.ReconsumeTimes >= maxTimes || delayLevel < 0 {
		cfg, _, err := b.topics.CreateDLQTopic(group)
		if err != nil {
			return nil, fail(protocol.SystemError, "create DLQ topic: %v", err)
		}
		topic, rec.QueueID = cfg.TopicName, 0
		b.log.Info().Str("group", group).Str("msgId", orig.MsgID()).Int32("reconsumeTimes", orig.ReconsumeTimes).
			Msg("message moved to the dead-letter queue")
	} else {
		cfg, _, err := b.topics.CreateRetryTopic(group, int(max(gcfg.RetryQueueNums, 1)))
		if err != nil {
			return nil, fail(protocol.SystemError, "create retry topic: %v", err)
		}
		topic, rec.QueueID = cfg.TopicName, rand.Int32N(max(cfg.WriteQueueNums, 1))
		if delayLevel == 0 {
			delayLevel = 3 + int(orig.ReconsumeTimes)
		}
		if props, err = message.SetProperty(props, message.PropertyDelayLevel, strconv.Itoa(delayLevel)); err != nil {
			return nil, fail(protocol.SystemError, "%v", err)
		}
	}
	rec.Topic, rec.Properties = []byte(topic), props
	if err := b.routeDelayed(&rec); err != nil {
		return nil, err
	}
	if _, err := b.store.PutMessage(&rec, false); err != nil {
		return nil, storeError(err)
	}
	return respond(req, protocol.Success, ""), nil
}

// routeDelayed moves a record that asks for a delay into the schedule topic. It is a
// no-op until the schedule service is wired in.
func (b *Broker) routeDelayed(rec *message.Record) error {
	if b.delay == nil {
		return nil
	}
	return b.delay(rec)
}
