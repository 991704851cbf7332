package broker

// HEART_BEAT (34), UNREGISTER_CLIENT (35), GET_CONSUMER_LIST_BY_GROUP (38).
//
// Behaviour: a heartbeat registers the connection under every producer and consumer group
// it names, auto-creates each consumer group's subscription-group config and its retry
// topic (registered with the name servers at once, since the Go consumer looks up its
// route), and notifies the members of groups whose membership changed. The answer carries
// the broker version (479) in the header, as the clients expect. The consumer list always
// includes every live member; the official Go client ignores its response code.

import (
	"context"

	"github.com/ferrymq/ferry/broker/clients"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
)

// handleHeartbeat serves HEART_BEAT.
func (b *Broker) handleHeartbeat(_ context.Context, ch remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	data, err := protocol.DecodeHeartbeatData(req.Body)
	if err != nil {
		return nil, fail(protocol.SystemError, "decode heartbeat: %v", err)
	}
	b.chans.Store(ch.ID(), ch)
	for _, c := range data.ConsumerDataSet {
		if c.GroupName == "" {
			continue
		}
		gcfg, _, err := b.groups.FindOrCreate(c.GroupName)
		if err != nil {
			return nil, fail(protocol.SubscriptionGroupNotExist, "group %s: %v", c.GroupName, err)
		}
		if _, _, err := b.topics.CreateRetryTopic(c.GroupName, int(max(gcfg.RetryQueueNums, 1))); err != nil {
			b.log.Warn().Err(err).Str("group", c.GroupName).Msg("creating retry topic")
		}
	}
	info := clients.ChannelInfo{ID: ch.ID(), RemoteAddr: ch.RemoteAddr(), ClientID: data.ClientID,
		Language: req.Language.String(), Version: req.Version}
	changed := b.clients.Heartbeat(info, *data, b.opts.Clock())
	if len(changed) > 0 {
		b.log.Info().Str("client", data.ClientID).Str("groups", joinSorted(changed)).Msg("consumer groups changed")
		b.notifyGroups(changed)
	}
	return respond(req, protocol.Success, ""), nil
}

// handleUnregisterClient serves UNREGISTER_CLIENT.
func (b *Broker) handleUnregisterClient(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	clientID := req.Ext("clientID")
	if clientID == "" {
		return nil, fail(protocol.SystemError, "clientID is required")
	}
	b.notifyGroups(b.clients.Unregister(clientID, req.Ext("producerGroup"), req.Ext("consumerGroup")))
	return respond(req, protocol.Success, ""), nil
}

// handleConsumerList serves GET_CONSUMER_LIST_BY_GROUP.
func (b *Broker) handleConsumerList(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.ConsumerListRequestHeader
	if err := h.DecodeExt(req.ExtFields); err != nil {
		return nil, fail(protocol.SystemError, "decode header: %v", err)
	}
	ids := b.clients.ConsumerIDs(h.ConsumerGroup)
	body, err := protocol.EncodeConsumerIDList(ids)
	if err != nil {
		return nil, err
	}
	resp := respond(req, protocol.Success, "")
	if len(ids) == 0 {
		resp = respond(req, protocol.SystemError, "no consumer for this group: "+h.ConsumerGroup)
	}
	resp.Body = body
	return resp, nil
}
