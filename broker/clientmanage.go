package broker

// HEART_BEAT (34), UNREGISTER_CLIENT (35), GET_CONSUMER_LIST_BY_GROUP (38);
// CHECK_CLIENT_CONFIG (46) is in sqlfilter.go.
//
// Behaviour: a heartbeat registers the connection under every producer and consumer group
// it names, auto-creates each consumer group's subscription-group config and its retry
// topic (registered with the name servers at once, since the Go consumer looks up its
// route), and notifies the members of groups whose membership changed. A heartbeat with
// an SQL92 subscription that cannot be served is registered all the same and answered
// with the refusal (sqlfilter.go). The answer carries
// the broker version (479) in the header, as the clients expect. The consumer list always
// includes every live member; the official Go client ignores its response code.

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/ferrymq/ferry/broker/clients"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
)

// clientHandler serves client registration.
type clientHandler struct {
	clients ClientRegistry
	groups  GroupTable
	topics  TopicTable
	conns   *conns
	notify  *notifier
	sql     *sqlFilters // SQL92 subscriptions
	clock   func() time.Time
	log     zerolog.Logger
}

// handleHeartbeat serves HEART_BEAT.
func (c *clientHandler) handleHeartbeat(_ context.Context, ch remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	data, err := protocol.DecodeHeartbeatData(req.Body)
	if err != nil {
		return nil, fail(protocol.SystemError, "decode heartbeat: %v", err)
	}
	c.conns.remember(ch)
	for _, cd := range data.ConsumerDataSet {
		if cd.GroupName == "" {
			continue
		}
		gcfg, _, err := c.groups.FindOrCreate(cd.GroupName)
		if err != nil {
			return nil, fail(protocol.SubscriptionGroupNotExist, "group %s: %v", cd.GroupName, err)
		}
		if _, _, err := c.topics.CreateRetryTopic(cd.GroupName, int(max(gcfg.RetryQueueNums, 1))); err != nil {
			c.log.Warn().Err(err).Str("group", cd.GroupName).Msg("creating retry topic")
		}
	}
	info := clients.ChannelInfo{ID: ch.ID(), RemoteAddr: ch.RemoteAddr(), ClientID: data.ClientID,
		Language: req.Language.String(), Version: req.Version}
	changed := c.clients.Heartbeat(info, *data, c.clock())
	if len(changed) > 0 {
		c.log.Info().Str("client", data.ClientID).Str("groups", joinSorted(changed)).Msg("consumer groups changed")
		c.notify.groupsChanged(changed)
	}
	resp := respond(req, protocol.Success, "")
	if err := c.sql.checkHeartbeat(data); err != nil {
		var ce *remoting.CodeError
		if errors.As(err, &ce) {
			c.log.Warn().Str("client", data.ClientID).Str("remark", ce.Remark).Msg("subscription refused")
			resp = respond(req, protocol.ResponseCode(ce.Code), ce.Remark)
		}
	}
	resp.SetExt(protocol.FerryServerKey, protocol.FerryServerVersion)
	return resp, nil
}

// handleUnregisterClient serves UNREGISTER_CLIENT.
func (c *clientHandler) handleUnregisterClient(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.UnregisterClientRequestHeader
	if err := h.DecodeExt(req.ExtFields); err != nil {
		return nil, fail(protocol.SystemError, "decode header: %v", err)
	}
	c.notify.groupsChanged(c.clients.Unregister(h.ClientID, h.ProducerGroup, h.ConsumerGroup))
	return respond(req, protocol.Success, ""), nil
}

// handleConsumerList serves GET_CONSUMER_LIST_BY_GROUP.
func (c *clientHandler) handleConsumerList(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.ConsumerListRequestHeader
	if err := h.DecodeExt(req.ExtFields); err != nil {
		return nil, fail(protocol.SystemError, "decode header: %v", err)
	}
	ids := c.clients.ConsumerIDs(h.ConsumerGroup)
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

// channelClosed forgets a connection and notifies the consumer groups it was in.
func (c *clientHandler) channelClosed(id uint64) {
	c.conns.closed(id)
	c.notify.groupsChanged(c.clients.ChannelClosed(id))
}

// expire drops registrations not refreshed by a heartbeat for clientExpiry, every 10 s
// until stop is closed.
func (c *clientHandler) expire(stop <-chan struct{}) {
	t := time.NewTicker(10 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			c.notify.groupsChanged(c.clients.Expire(c.clock(), clientExpiry))
		}
	}
}

// joinSorted joins ids for logs.
func joinSorted(ids []string) string {
	ids = slices.Clone(ids)
	slices.Sort(ids)
	return strings.Join(ids, ",")
}
