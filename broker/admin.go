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

	"github.com/ferrymq/ferry/acl"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
)

// adminHandler serves topic and group administration.
type adminHandler struct {
	store   MessageStore
	topics  TopicTable
	groups  GroupTable
	offsets OffsetTable
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
