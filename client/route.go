package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
)

// queue is one writable message queue of a topic.
type queue struct {
	broker string // broker name
	addr   string // master address
	id     int32
}

// topicRoute is what the client knows about where a topic lives.
type topicRoute struct {
	topic   string
	queues  []queue  // writable queues, ordered by broker name then id
	brokers []string // master addresses
	auto    bool     // the topic does not exist yet: built from TBW102, the broker creates it
	fetched time.Time
}

// defaultAutoQueues is how many queues an auto-created topic gets per broker (as the
// official Go client asks).
const defaultAutoQueues = 4

// route returns the cached route of topic, fetching it when unknown.
func (c *Client) route(ctx context.Context, topic string) (*topicRoute, error) {
	c.routes.RLock()
	r := c.routes.m[topic]
	c.routes.RUnlock()
	if r != nil {
		return r, nil
	}
	return c.refreshRoute(ctx, topic)
}

// refreshRoute fetches topic's route from the name servers and caches it. A topic the
// name servers do not know is routed like TBW102, so brokers that allow it create it.
func (c *Client) refreshRoute(ctx context.Context, topic string) (*topicRoute, error) {
	data, err := c.fetchRoute(ctx, topic)
	auto := false
	var be *BrokerError
	if errors.As(err, &be) && be.Code == protocol.TopicNotExist && topic != protocol.AutoCreateTopicKey {
		data, err = c.fetchRoute(ctx, protocol.AutoCreateTopicKey)
		auto = true
	}
	if err != nil {
		return nil, fmt.Errorf("%w %s: %w", ErrNoRoute, topic, err)
	}
	r := buildRoute(topic, data, auto)
	if len(r.queues) == 0 {
		return nil, fmt.Errorf("%w %s: no writable queue", ErrNoRoute, topic)
	}
	c.routes.Lock()
	c.routes.m[topic] = r
	c.routes.Unlock()
	for _, addr := range r.brokers {
		if _, ok := c.ferry.Load(addr); !ok {
			// Learn the broker's codec (and register the groups) before the first send.
			if err := c.heartbeat(ctx, addr); err != nil {
				c.log.Debug().Err(err).Str("broker", addr).Msg("first heartbeat failed")
			}
		}
	}
	return r, nil
}

// fetchRoute asks the name servers for a topic's route.
func (c *Client) fetchRoute(ctx context.Context, topic string) (*protocol.TopicRouteData, error) {
	resp, err := c.invokeNameServer(ctx, func() *remoting.Command {
		return protocol.NewRequest(protocol.GetRouteInfoByTopic, &protocol.GetRouteInfoRequestHeader{Topic: topic})
	})
	if err != nil {
		return nil, err
	}
	data, err := protocol.DecodeTopicRouteData(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("client: route of %s: %w", topic, err)
	}
	return data, nil
}

// buildRoute lists the writable queues of a route: from OrderTopicConf when set
// ("brokerA:4;brokerB:4"), otherwise from every writable queue data whose broker has a
// master.
func buildRoute(topic string, data *protocol.TopicRouteData, auto bool) *topicRoute {
	r := &topicRoute{topic: topic, auto: auto, fetched: time.Now()}
	masters := make(map[string]string, len(data.BrokerDatas))
	for _, b := range data.BrokerDatas {
		if addr := b.MasterAddr(); addr != "" {
			masters[b.BrokerName] = addr
		}
	}
	add := func(broker string, n int32) {
		addr, ok := masters[broker]
		if !ok {
			return
		}
		for id := range n {
			r.queues = append(r.queues, queue{broker: broker, addr: addr, id: id})
		}
		if !slices.Contains(r.brokers, addr) {
			r.brokers = append(r.brokers, addr)
		}
	}
	if data.OrderTopicConf != "" {
		for part := range strings.SplitSeq(data.OrderTopicConf, ";") {
			name, n, ok := strings.Cut(part, ":")
			if cnt, err := strconv.Atoi(n); ok && err == nil && cnt > 0 {
				add(name, int32(cnt))
			}
		}
		return r
	}
	qds := slices.Clone(data.QueueDatas)
	slices.SortFunc(qds, func(a, b protocol.QueueData) int { return strings.Compare(a.BrokerName, b.BrokerName) })
	for _, qd := range qds {
		if !protocol.PermWriteable(qd.Perm) {
			continue
		}
		n := qd.WriteQueueNums
		if auto {
			n = min(n, defaultAutoQueues)
		}
		add(qd.BrokerName, n)
	}
	return r
}

// routeLoop refreshes every cached route about every Options.RouteRefresh until Close.
func (c *Client) routeLoop() {
	t := time.NewTimer(jitter(c.opts.RouteRefresh))
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
		}
		c.routes.RLock()
		topics := make([]string, 0, len(c.routes.m))
		for topic := range c.routes.m {
			topics = append(topics, topic)
		}
		c.routes.RUnlock()
		for _, topic := range topics {
			ctx, cancel := context.WithTimeout(context.Background(), c.opts.RequestTimeout)
			if _, err := c.refreshRoute(ctx, topic); err != nil {
				c.log.Warn().Err(err).Str("topic", topic).Msg("route refresh failed; keeping the old route")
			}
			cancel()
		}
		t.Reset(jitter(c.opts.RouteRefresh))
	}
}

// routeFailureBackoff is the least age of a cached route that a failed connection drops
// (refreshAfterFailure): a dead broker fails every send at once, and each would
// otherwise ask the name servers again.
const routeFailureBackoff = 100 * time.Millisecond

// refreshAfterFailure drops topic's cached route r after a request to one of its brokers
// got no answer (refused, reset, timed out): the broker may be gone and its group served
// by a new master at another address (a failover), which the name servers know before
// the next periodic refresh (Options.RouteRefresh). The next send then fetches the route
// again. A route fetched less than routeFailureBackoff ago is kept, so that a burst of
// failures costs one fetch per backoff, not one each.
func (c *Client) refreshAfterFailure(topic string, r *topicRoute) {
	if time.Since(r.fetched) < routeFailureBackoff {
		return
	}
	c.routes.Lock()
	if c.routes.m[topic] == r {
		delete(c.routes.m, topic)
	}
	c.routes.Unlock()
}

// forgetRoute drops a cached route after a send error, so the next send asks again.
func (c *Client) forgetRoute(topic string) {
	c.routes.Lock()
	delete(c.routes.m, topic)
	c.routes.Unlock()
}
