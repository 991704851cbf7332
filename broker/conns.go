package broker

import (
	"context"
	"sync"

	"github.com/rs/zerolog"

	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
)

// conns remembers the live client connections the broker may call back: every connection
// that sent a heartbeat or a half message, by id, and per producer group the connection
// its last half message came on (the fallback target of transaction checks).
type conns struct {
	byID    sync.Map // connection id → remoting.Channel
	txConns sync.Map // producer group → connection id
	// requesters: client id → the connection its last request-reply message came on, so
	// a reply reaches a requester that has not sent a heartbeat to this broker yet.
	requesters sync.Map
}

// remember records a connection.
func (c *conns) remember(ch remoting.Channel) { c.byID.Store(ch.ID(), ch) }

// rememberTx records the connection a producer group's half message came on.
func (c *conns) rememberTx(group string, ch remoting.Channel) {
	c.remember(ch)
	c.txConns.Store(group, ch.ID())
}

// get returns a live connection.
func (c *conns) get(id uint64) (remoting.Channel, bool) {
	v, ok := c.byID.Load(id)
	if !ok {
		return nil, false
	}
	return v.(remoting.Channel), true
}

// txConn returns the id of the connection a group's last half message came on.
func (c *conns) txConn(group string) (uint64, bool) {
	v, ok := c.txConns.Load(group)
	if !ok {
		return 0, false
	}
	return v.(uint64), true
}

// rememberRequester records the connection a client's request-reply message came on.
func (c *conns) rememberRequester(clientID []byte, ch remoting.Channel) {
	if v, ok := c.requesters.Load(string(clientID)); ok && v.(uint64) == ch.ID() {
		return // the common case: no allocation
	}
	c.remember(ch)
	c.requesters.Store(string(clientID), ch.ID())
}

// requester returns the connection client clientID's last request-reply message came on.
func (c *conns) requester(clientID string) (remoting.Channel, bool) {
	v, ok := c.requesters.Load(clientID)
	if !ok {
		return nil, false
	}
	return c.get(v.(uint64))
}

// closed forgets a connection.
func (c *conns) closed(id uint64) {
	c.byID.Delete(id)
	forget := func(key, v any) bool {
		if v.(uint64) == id {
			c.txConns.CompareAndDelete(key, v)
			c.requesters.CompareAndDelete(key, v)
		}
		return true
	}
	c.txConns.Range(forget)
	c.requesters.Range(forget)
}

// notifier tells the members of consumer groups that the membership changed
// (NOTIFY_CONSUMER_IDS_CHANGED, oneway), so they rebalance at once.
type notifier struct {
	clients ClientRegistry
	conns   *conns
	log     zerolog.Logger
}

// groupsChanged notifies every live member of each group.
func (n *notifier) groupsChanged(groups []string) {
	for _, g := range groups {
		h := protocol.NotifyConsumerIDsChangedRequestHeader{ConsumerGroup: g}
		for _, id := range n.clients.ConsumerChannels(g) {
			ch, ok := n.conns.get(id)
			if !ok {
				continue
			}
			req := protocol.NewRequest(protocol.NotifyConsumerIDsChanged, &h)
			if err := ch.InvokeOneway(context.Background(), req); err != nil {
				n.log.Debug().Err(err).Str("group", g).Msg("notify consumer ids changed")
			}
		}
	}
}
