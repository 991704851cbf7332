package broker

// UPDATE_AND_CREATE_TOPIC (17), DELETE_TOPIC_IN_BROKER (215),
// GET_ALL_SUBSCRIPTIONGROUP_CONFIG (201).
//
// Behaviour: creating or updating a topic persists it and registers with the name servers
// before answering, so the caller's next step finds the route; bad names and system
// topics answer INVALID_PARAMETER. Deleting drops the topic's config, consume queues and
// consumer offsets and re-registers.

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
)

func (b *Broker) handleCreateTopic(ctx context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	topic := req.Ext("topic")
	if err := protocol.ValidateTopic(topic); err != nil {
		return nil, fail(protocol.InvalidParameter, "%v", err)
	}
	if protocol.IsSystemTopic(topic) {
		return nil, fail(protocol.InvalidParameter, "topic %s is a system topic", topic)
	}
	var bad []string
	num := func(key string, def int32) int32 {
		v, ok := req.ExtFields[key]
		if !ok || v == "" {
			return def
		}
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil {
			bad = append(bad, key+"="+v)
		}
		return int32(n)
	}
	cfg := protocol.TopicConfig{
		TopicName:       topic,
		ReadQueueNums:   num("readQueueNums", 8),
		WriteQueueNums:  num("writeQueueNums", 8),
		Perm:            num("perm", 6),
		TopicFilterType: protocol.TopicFilterType(req.Ext("topicFilterType")),
		TopicSysFlag:    num("topicSysFlag", 0),
		Order:           req.Ext("order") == "true",
	}
	if len(bad) > 0 {
		return nil, fail(protocol.InvalidParameter, "topic %s: fields are not 32-bit integers: %s", topic, strings.Join(bad, ", "))
	}
	if cfg.TopicFilterType == "" {
		cfg.TopicFilterType = "SINGLE_TAG"
	}
	if _, err := b.topics.CreateOrUpdate(cfg); err != nil {
		return nil, fail(protocol.InvalidParameter, "%v", err)
	}
	b.registerAll(ctx)
	return respond(req, protocol.Success, ""), nil
}

func (b *Broker) handleDeleteTopic(ctx context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	topic := req.Ext("topic")
	if topic == "" || protocol.IsSystemTopic(topic) {
		return nil, fail(protocol.InvalidParameter, "topic %q cannot be deleted", topic)
	}
	if _, err := b.topics.Delete(topic); err != nil {
		return nil, fail(protocol.SystemError, "%v", err)
	}
	b.offsets.DeleteTopic(topic)
	if err := b.store.DeleteTopic(topic); err != nil {
		return nil, fail(protocol.SystemError, "%v", err)
	}
	b.registerAll(ctx)
	return respond(req, protocol.Success, ""), nil
}

func (b *Broker) handleAllSubscriptionGroups(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	body, err := json.Marshal(b.groups.All())
	if err != nil {
		return nil, err
	}
	resp := respond(req, protocol.Success, "")
	resp.Body = body
	return resp, nil
}
