package client

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/ferrymq/ferry/protocol"
)

// Lite-pull consumers as group members (subscribe mode): the rebalance, the heartbeat
// entries, and the Client's registry of lite-pull consumers (closed by Client.Close;
// the subscribed ones in heartbeats and told of NOTIFY_CONSUMER_IDS_CHANGED).

// rebalance recomputes the consumer's share of every subscribed topic, as the push
// consumer does (rebalance.go). complete is false when a route or a member list was
// missing; err is set only when no name server answered at all.
func (lc *LitePullConsumer) rebalance(ctx context.Context) (complete bool, err error) {
	lc.rebalanceMu.Lock()
	defer lc.rebalanceMu.Unlock()
	lc.mu.Lock()
	topics := slices.Sorted(maps.Keys(lc.mu.subs))
	lc.mu.Unlock()
	complete = true
	routes := make(map[string][]readQueue, len(topics))
	var addrs []string
	var be *BrokerError
	for _, topic := range topics {
		qs, rerr := lc.c.readQueues(ctx, topic)
		if rerr != nil {
			complete = false
			if !errors.As(rerr, &be) {
				err = rerr // no name server answered
			}
			lc.log.Debug().Err(rerr).Str("topic", topic).Msg("no route yet")
			continue
		}
		routes[topic] = qs
		lc.pull.learn(qs)
		for _, q := range qs {
			if !slices.Contains(addrs, q.addr) {
				addrs = append(addrs, q.addr)
			}
		}
	}
	if err != nil {
		return false, err
	}
	lc.member.publishBrokers(ctx, addrs)
	for _, topic := range topics {
		qs, ok := routes[topic]
		if !ok {
			continue // keep what the consumer has
		}
		mine, member, aerr := lc.member.allocate(ctx, qs)
		if aerr != nil {
			lc.log.Warn().Err(aerr).Str("topic", topic).Msg("consumer list failed; keeping the queues")
			complete = false
			continue
		}
		if !member {
			lc.log.Warn().Str("topic", topic).Msg("not in the group's member list; dropping the queues")
			complete = false
		}
		lc.mu.Lock()
		if lc.mu.state == consumerStarted {
			sub := lc.mu.subs[topic]
			want := make(map[MessageQueue]*subscription, len(mine))
			for _, rq := range mine {
				want[rq.mq] = sub
			}
			lc.applyLocked(func(mq MessageQueue) bool { return mq.Topic == topic }, want)
		}
		lc.mu.Unlock()
	}
	return complete, nil
}

// rebalanceLoop rebalances every rebalance interval and when asked to, sooner while the
// last rebalance was incomplete, until Close.
func (lc *LitePullConsumer) rebalanceLoop(complete bool) {
	retry := pullBackoff
	next := func(complete bool) time.Duration {
		if complete {
			retry = pullBackoff
			return lc.opts.rebalance
		}
		d := retry
		retry = min(2*retry, lc.opts.rebalance)
		return min(d, lc.opts.rebalance)
	}
	t := time.NewTimer(next(complete))
	defer t.Stop()
	for {
		select {
		case <-lc.ctx.Done():
			return
		case <-lc.kick:
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(lc.ctx, 2*lc.c.opts.RequestTimeout)
		ok, err := lc.rebalance(ctx)
		cancel()
		if err != nil && lc.ctx.Err() == nil {
			lc.log.Warn().Err(err).Msg("rebalance failed")
		}
		t.Reset(next(ok))
	}
}

// consumerData is the consumer's entry in heartbeats (subscribe mode).
func (lc *LitePullConsumer) consumerData() protocol.ConsumerData {
	d := protocol.ConsumerData{GroupName: lc.group, ConsumeType: protocol.ConsumeActively,
		MessageModel: protocol.Clustering, ConsumeFromWhere: lc.opts.from.wire()}
	lc.mu.Lock()
	for _, topic := range slices.Sorted(maps.Keys(lc.mu.subs)) {
		d.SubscriptionDataSet = append(d.SubscriptionDataSet, lc.mu.subs[topic].data())
	}
	lc.mu.Unlock()
	return d
}

// liteRegistry holds a Client's started lite-pull consumers: Client.Close closes them,
// and the subscribed ones are group members in heartbeats. Its zero value is ready.
type liteRegistry struct {
	mu sync.Mutex
	m  map[*LitePullConsumer]struct{}
}

// addLite registers a starting lite-pull consumer; member says it joins its group,
// which no other consumer of this client may have joined.
func (c *Client) addLite(lc *LitePullConsumer, member bool) error {
	if c.closed.Load() {
		return ErrClosed
	}
	if member {
		c.groups.Lock()
		_, dup := c.groups.consumers[lc.group]
		c.groups.Unlock()
		if dup {
			return fmt.Errorf("%w: this client already has a consumer of group %s", ErrInvalidOptions, lc.group)
		}
	}
	c.lite.mu.Lock()
	defer c.lite.mu.Unlock()
	if member {
		for o := range c.lite.m {
			if o.group == lc.group && o.grouped.Load() {
				return fmt.Errorf("%w: this client already has a consumer of group %s", ErrInvalidOptions, lc.group)
			}
		}
		lc.grouped.Store(true)
	}
	if c.lite.m == nil {
		c.lite.m = make(map[*LitePullConsumer]struct{})
	}
	c.lite.m[lc] = struct{}{}
	return nil
}

// removeLite undoes addLite.
func (c *Client) removeLite(lc *LitePullConsumer) {
	c.lite.mu.Lock()
	delete(c.lite.m, lc)
	c.lite.mu.Unlock()
}

// liteConsumers lists the registered lite-pull consumers; members only if members.
func (c *Client) liteConsumers(members bool) []*LitePullConsumer {
	c.lite.mu.Lock()
	defer c.lite.mu.Unlock()
	out := make([]*LitePullConsumer, 0, len(c.lite.m))
	for lc := range c.lite.m {
		if !members || lc.grouped.Load() {
			out = append(out, lc)
		}
	}
	return out
}

// liteConsumerData appends the heartbeat entries of the subscribed lite-pull consumers.
func (c *Client) liteConsumerData(out []protocol.ConsumerData) []protocol.ConsumerData {
	for _, lc := range c.liteConsumers(true) {
		out = append(out, lc.consumerData())
	}
	return out
}

// liteBrokers appends to out the brokers of the subscribed lite-pull consumers' topics
// that it lacks.
func (c *Client) liteBrokers(out []string) []string {
	for _, lc := range c.liteConsumers(true) {
		for _, a := range *lc.member.brokers.Load() {
			if !slices.Contains(out, a) {
				out = append(out, a)
			}
		}
	}
	return out
}

// closeLitePullConsumers closes the lite-pull consumers still running (Client.Close).
func (c *Client) closeLitePullConsumers() error {
	var errs []error
	for _, lc := range c.liteConsumers(false) {
		errs = append(errs, lc.Close())
	}
	return errors.Join(errs...)
}

// notifyLiteConsumers wakes the rebalance of the subscribed lite-pull consumers of group
// (NOTIFY_CONSUMER_IDS_CHANGED, see Client.onConsumerIDsChanged).
func (c *Client) notifyLiteConsumers(group string) {
	for _, lc := range c.liteConsumers(true) {
		if lc.group == group {
			signal(lc.kick)
		}
	}
}
