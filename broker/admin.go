package broker

// Topic and subscription-group administration: UPDATE_AND_CREATE_TOPIC (17),
// DELETE_TOPIC_IN_BROKER (215), UPDATE_AND_CREATE_SUBSCRIPTIONGROUP (200),
// GET_ALL_SUBSCRIPTIONGROUP_CONFIG (201), DELETE_SUBSCRIPTIONGROUP (207).
//
// Behaviour: creating or updating a topic persists it and registers with the name servers
// before answering, so the caller's next step finds the route; bad names and system
// topics answer INVALID_PARAMETER. Deleting drops the topic's config, consume queues and
// consumer offsets and re-registers. A subscription group is created or updated from the
// body's config (a bad name or config answers INVALID_PARAMETER) and deleted with its
// consumer offsets when cleanOffset is set.

import (
	"context"
	"encoding/json"

	"github.com/ferrymq/ferry/acl"
	"github.com/ferrymq/ferry/broker/groupconf"
	"github.com/ferrymq/ferry/broker/topicconf"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
)

// groupAdmin is what the administration needs of the subscription-group table.
type groupAdmin interface {
	All() groupconf.Table
	Update(cfg groupconf.Config) (bool, error)
	Delete(group string) (bool, error)
}

// offsetAdmin is what the administration needs of the consumer-offset table.
type offsetAdmin interface {
	DeleteTopic(topic string) int
	DeleteGroup(group string) int
}

// adminHandler serves topic and group administration.
type adminHandler struct {
	store   MessageStore
	topics  TopicTable
	groups  groupAdmin
	offsets offsetAdmin
	// registerNow registers with the name servers and returns when done.
	registerNow func(ctx context.Context)
}

func (a *adminHandler) handleCreateTopic(ctx context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.CreateTopicRequestHeader
	if err := h.DecodeExt(req.ExtFields); err != nil {
		return nil, fail(protocol.InvalidParameter, "decode header: %v", err)
	}
	if err := protocol.ValidateTopic(h.Topic); err != nil {
		return nil, fail(protocol.InvalidParameter, "%v", err)
	}
	if protocol.IsSystemTopic(h.Topic) {
		return nil, fail(protocol.InvalidParameter, "topic %s is a system topic", h.Topic)
	}
	cfg := h.TopicConfig()
	changes, err := protocol.ParseAttributeChanges(h.Attributes)
	if err != nil {
		return nil, fail(protocol.InvalidParameter, "%v", err)
	}
	// Attributes change only by the entries given: a request without any keeps the
	// topic's (RocketMQ 5 does the same).
	cur, _ := a.topics.Get(h.Topic)
	if cfg.Attributes, err = topicconf.ApplyAttributeChanges(cur.Attributes, changes); err != nil {
		return nil, fail(protocol.InvalidParameter, "%v", err)
	}
	if _, err := a.topics.CreateOrUpdate(cfg); err != nil {
		return nil, fail(protocol.InvalidParameter, "%v", err)
	}
	a.registerNow(ctx)
	return respond(req, protocol.Success, ""), nil
}

func (a *adminHandler) handleDeleteTopic(ctx context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.DeleteTopicRequestHeader
	if err := h.DecodeExt(req.ExtFields); err != nil || protocol.IsSystemTopic(h.Topic) {
		return nil, fail(protocol.InvalidParameter, "topic %q cannot be deleted", h.Topic)
	}
	if _, err := a.topics.Delete(h.Topic); err != nil {
		return nil, fail(protocol.SystemError, "%v", err)
	}
	a.offsets.DeleteTopic(h.Topic)
	if err := a.store.DeleteTopic(h.Topic); err != nil {
		return nil, fail(protocol.SystemError, "%v", err)
	}
	a.registerNow(ctx)
	return respond(req, protocol.Success, ""), nil
}

// handleAllSubscriptionGroups serves GET_ALL_SUBSCRIPTIONGROUP_CONFIG; with ACL on, a
// non-admin account sees only the groups it may SUB.
func (a *adminHandler) handleAllSubscriptionGroups(ctx context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	all := a.groups.All()
	if g := acl.GrantFrom(ctx); !g.Unrestricted() {
		for name := range all.SubscriptionGroupTable {
			if !g.MayGroup(name, acl.PermSub) {
				delete(all.SubscriptionGroupTable, name)
			}
		}
	}
	body, err := json.Marshal(all)
	if err != nil {
		return nil, err
	}
	resp := respond(req, protocol.Success, "")
	resp.Body = body
	return resp, nil
}

// handleUpdateSubscriptionGroup serves UPDATE_AND_CREATE_SUBSCRIPTIONGROUP.
func (a *adminHandler) handleUpdateSubscriptionGroup(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	sg, err := protocol.DecodeSubscriptionGroupConfig(req.Body)
	if err != nil {
		return nil, fail(protocol.InvalidParameter, "decode body: %v", err)
	}
	if err := protocol.ValidateGroup(sg.GroupName); err != nil {
		return nil, fail(protocol.InvalidParameter, "%v", err)
	}
	cfg := groupConfigOf(sg)
	if _, err := a.groups.Update(cfg); err != nil {
		return nil, fail(protocol.InvalidParameter, "subscription group %s: %v", sg.GroupName, err)
	}
	return respond(req, protocol.Success, ""), nil
}

// handleDeleteSubscriptionGroup serves DELETE_SUBSCRIPTIONGROUP (with its offsets when asked).
func (a *adminHandler) handleDeleteSubscriptionGroup(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var rh protocol.DeleteSubscriptionGroupRequestHeader
	if err := rh.DecodeExt(req.ExtFields); err != nil {
		return nil, fail(protocol.InvalidParameter, "decode header: %v", err)
	}
	if _, err := a.groups.Delete(rh.GroupName); err != nil {
		return nil, fail(protocol.SystemError, "delete subscription group %s: %v", rh.GroupName, err)
	}
	if rh.CleanOffset {
		a.offsets.DeleteGroup(rh.GroupName)
	}
	return respond(req, protocol.Success, ""), nil
}
