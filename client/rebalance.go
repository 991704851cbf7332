package client

import (
	"cmp"
	"context"
	"crypto/md5"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
)

// Rebalance (clustering). For each subscribed topic — the user's and %RETRY%<group> —
// the consumer reads the topic's readable queues from the name servers and the group's
// members from a broker of the topic (GET_CONSUMER_LIST_BY_GROUP), sorts both, and takes
// its share by average allocation, as every RocketMQ client does by default, so members
// of mixed clients agree (or by consistent hashing, WithAllocation). Queues it no longer
// owns are dropped: their pulls stop, their running handlers finish and their offsets
// are committed (and an orderly consumer's locks released); new queues start at the
// group's committed offsets (never below where this consumer got to, offsets.go). A
// member list the broker could not give (no answer, or an error other than "no consumer
// for this group") changes nothing: the consumer keeps its queues. It runs at Start,
// every rebalance interval, at once when a broker sends NOTIFY_CONSUMER_IDS_CHANGED, and
// after a second (then backing off) while a route or the member list is missing. A
// broadcasting consumer takes every queue and does not ask for the member list.

// readQueue is one readable queue of a topic and the addresses of its broker group.
type readQueue struct {
	mq MessageQueue
	// addr is where offsets are read and committed (readAddr): the master, else the
	// lowest slave.
	addr string
	// addrs are the group's members by broker id (0 master, ≥ 1 slaves), from the route;
	// pulls pick one of them (pullAddr). Shared by the group's queues: read only.
	addrs map[int64]string
}

// String formats mq as topic@broker#id.
func (mq MessageQueue) String() string {
	return fmt.Sprintf("%s@%s#%d", mq.Topic, mq.BrokerName, mq.QueueID)
}

// compareQueues orders queues by topic, broker name and queue id, as clients sort them
// before allocating.
func compareQueues(a, b MessageQueue) int {
	return cmp.Or(strings.Compare(a.Topic, b.Topic), strings.Compare(a.BrokerName, b.BrokerName),
		cmp.Compare(a.QueueID, b.QueueID))
}

// readQueues lists a topic's readable queues, sorted, each with the address its
// consumers use (readAddr). Unlike a producer's route it is never built from TBW102: a
// topic that does not exist has none.
func (c *Client) readQueues(ctx context.Context, topic string) ([]readQueue, error) {
	data, err := c.fetchRoute(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("%w %s: %w", ErrNoRoute, topic, err)
	}
	groups := make(map[string]map[int64]string, len(data.BrokerDatas))
	for _, b := range data.BrokerDatas {
		if readAddr(b.BrokerAddrs) != "" {
			groups[b.BrokerName] = b.BrokerAddrs
		}
	}
	var out []readQueue
	for _, qd := range data.QueueDatas {
		addrs, ok := groups[qd.BrokerName]
		if !ok || !protocol.PermReadable(qd.Perm) {
			continue
		}
		addr := readAddr(addrs)
		for id := range qd.ReadQueueNums {
			out = append(out, readQueue{mq: MessageQueue{Topic: topic, BrokerName: qd.BrokerName, QueueID: id},
				addr: addr, addrs: addrs})
		}
	}
	slices.SortFunc(out, func(a, b readQueue) int { return compareQueues(a.mq, b.mq) })
	return out, nil
}

// readAddr is where consumers of a broker group pull, look up and commit offsets: its
// master (id 0), else — the master is down and its slaves serve reads — the slave with
// the lowest id, as the official clients fall back to a slave's address. "" when the
// group has no address.
func readAddr(addrs map[int64]string) string {
	if a := addrs[0]; a != "" {
		return a
	}
	best, addr := int64(-1), ""
	for id, a := range addrs {
		if a != "" && id > 0 && (best < 0 || id < best) {
			best, addr = id, a
		}
	}
	return addr
}

// masterID is the broker id of a group's master.
const masterID = 0

// pullAddr is where a queue's next pull goes, given its broker group's addresses and the
// broker id the last pull answer suggested (suggestWhichBrokerId): that member if the
// route lists it, else the master, else the slave with the lowest id (readAddr). Ferry
// brokers suggest a slave only with slaveReadEnable, to a consumer that lags; a slave
// suggests the master, which moves consumers back once the master is in the route again.
func pullAddr(addrs map[int64]string, suggested int64) string {
	if a := addrs[suggested]; a != "" {
		return a
	}
	return readAddr(addrs)
}

// AllocateFunc is a strategy for splitting a topic's queues between the members of a
// consumer group: given every readable queue of the topic (sorted by topic, broker name
// and queue id) and every member's client id (sorted), it returns the queues of member
// self. Every member computes its own share, so the function must be deterministic and
// the shares of all members must together cover each queue exactly once.
type AllocateFunc func(queues []MessageQueue, members []string, self string) []MessageQueue

// AllocateAveragely is RocketMQ's default strategy (AllocateMessageQueueAveragely): the
// queues are cut into len(members) contiguous ranges, the first len(queues) %
// len(members) one longer, and each member gets the range at its index. Official
// clients use it by default, so members of mixed clients agree. A member joining or
// leaving can move most queues.
func AllocateAveragely(queues []MessageQueue, members []string, self string) []MessageQueue {
	return allocateAverage(queues, members, self)
}

// defaultVirtualNodes is how many points each member has on the consistent-hash ring
// (RocketMQ's default).
const defaultVirtualNodes = 10

// AllocateConsistentHash returns RocketMQ's AllocateMessageQueueConsistentHash strategy:
// each member is placed on a hash ring at virtualNodes points (fewer than 1: 10, the
// default of RocketMQ's clients), each queue goes to the member of the first point at or
// after the queue's hash, wrapping around. When a member joins, only the queues that now
// hash to its points move (about 1/n of them, all to it); when one leaves, only its
// queues move. More virtual nodes spread the queues more evenly. The hashes are those of
// the Java client (MD5 of "<clientId>-<i>" and of the queue's Java toString, first four
// bytes), so Java consumers using that strategy agree with it.
func AllocateConsistentHash(virtualNodes int) AllocateFunc {
	if virtualNodes < 1 {
		virtualNodes = defaultVirtualNodes
	}
	return func(queues []MessageQueue, members []string, self string) []MessageQueue {
		if !slices.Contains(members, self) || len(queues) == 0 {
			return nil
		}
		ring := newHashRing(members, virtualNodes)
		var out []MessageQueue
		for _, mq := range queues {
			if ring.owner(mq.javaString()) == self {
				out = append(out, mq)
			}
		}
		return out
	}
}

// ringPoint is one virtual node of a member on the hash ring.
type ringPoint struct {
	hash   uint32
	member string
}

// hashRing is a consistent-hash ring: points sorted by hash.
type hashRing []ringPoint

// newHashRing places virtualNodes points per member. Two points with one hash keep the
// later member's, as Java's TreeMap does.
func newHashRing(members []string, virtualNodes int) hashRing {
	byHash := make(map[uint32]string, len(members)*virtualNodes)
	for _, m := range members {
		for i := range virtualNodes {
			byHash[ringHash(m+"-"+strconv.Itoa(i))] = m
		}
	}
	r := make(hashRing, 0, len(byHash))
	for h, m := range byHash {
		r = append(r, ringPoint{hash: h, member: m})
	}
	slices.SortFunc(r, func(a, b ringPoint) int { return cmp.Compare(a.hash, b.hash) })
	return r
}

// owner is the member of the first point at or after key's hash, wrapping around.
func (r hashRing) owner(key string) string { return r.at(ringHash(key)) }

// at is the member of the first point at or after h, wrapping around.
func (r hashRing) at(h uint32) string {
	i, _ := slices.BinarySearchFunc(r, h, func(p ringPoint, h uint32) int { return cmp.Compare(p.hash, h) })
	if i == len(r) {
		i = 0
	}
	return r[i].member
}

// ringHash is the Java client's MD5Hash: the first four bytes of the key's MD5, big
// endian, as an unsigned number.
func ringHash(key string) uint32 {
	sum := md5.Sum([]byte(key)) //nolint:gosec // a ring position, not security
	return binary.BigEndian.Uint32(sum[:4])
}

// javaString is the queue as Java's MessageQueue.toString writes it: the key the
// consistent-hash strategy hashes.
func (mq MessageQueue) javaString() string {
	return "MessageQueue [topic=" + mq.Topic + ", brokerName=" + mq.BrokerName + ", queueId=" +
		strconv.Itoa(int(mq.QueueID)) + "]"
}

// allocateAverage is RocketMQ's AllocateMessageQueueAveragely: queues (sorted) are cut
// into len(members) contiguous ranges, the first len(queues) % len(members) one longer,
// and self (an element of the sorted members) gets the range at its index.
func allocateAverage[Q any](queues []Q, members []string, self string) []Q {
	i := slices.Index(members, self)
	if i < 0 || len(queues) == 0 {
		return nil
	}
	n, k := len(queues), len(members)
	mod := n % k
	size := n / k
	if n <= k {
		size = 1
	} else if i < mod {
		size++
	}
	start := i*size + mod
	if i < mod {
		start = i * size
	}
	if start >= n {
		return nil
	}
	return queues[start:min(start+size, n)]
}

// consumerIDs asks a broker for the group's members, sorted. A broker that knows none
// answers SYSTEM_ERROR ("no consumer for this group"; Ferry adds an empty list): that is
// an empty list. Any other error code — SYSTEM_BUSY from a broker shutting down, say —
// is returned: it tells nothing about the members, and a rebalance that took it for an
// empty group would drop every queue of the broker (as RocketMQ's clients do, the
// rebalance keeps them instead).
func (pc *PushConsumer) consumerIDs(ctx context.Context, addr string) ([]string, error) {
	resp, err := pc.c.invoke(ctx, addr, protocol.NewRequest(protocol.GetConsumerListByGroup,
		&protocol.ConsumerListRequestHeader{ConsumerGroup: pc.group}))
	var be *BrokerError
	if err != nil && (!errors.As(err, &be) || be.Code != protocol.SystemError) {
		return nil, err
	}
	if resp == nil || len(resp.Body) == 0 {
		return nil, nil
	}
	ids, derr := protocol.DecodeConsumerIDList(resp.Body)
	if derr != nil {
		return nil, errors.Join(err, fmt.Errorf("client: consumer list from %s: %w", addr, derr))
	}
	slices.Sort(ids)
	return slices.Compact(ids), nil
}

// rebalance recomputes the consumer's queues. complete is false when a route or a
// member list was missing (the loop then tries again soon); err is set only when no name
// server answered at all.
func (pc *PushConsumer) rebalance(ctx context.Context) (complete bool, err error) {
	pc.rebalanceMu.Lock()
	defer pc.rebalanceMu.Unlock()
	complete = true
	routes := make([][]readQueue, len(pc.subs))
	var addrs []string
	var be *BrokerError
	for i, s := range pc.subs {
		qs, rerr := pc.c.readQueues(ctx, s.topic)
		if rerr != nil {
			complete = false
			if !errors.As(rerr, &be) {
				err = rerr // no name server answered
			}
			pc.log.Debug().Err(rerr).Str("topic", s.topic).Msg("no route yet")
			continue
		}
		routes[i] = qs
		for _, q := range qs {
			if !slices.Contains(addrs, q.addr) {
				addrs = append(addrs, q.addr)
			}
		}
	}
	if err != nil {
		return false, err
	}
	pc.publishBrokers(ctx, addrs)
	for i, s := range pc.subs {
		if routes[i] == nil {
			continue // keep what the consumer has
		}
		mine, member, aerr := pc.allocate(ctx, routes[i])
		if aerr != nil {
			pc.log.Warn().Err(aerr).Str("topic", s.topic).Msg("consumer list failed; keeping the queues")
			complete = false
			continue
		}
		if !member {
			// Not a member (yet, or any more): own nothing, so no queue is consumed twice.
			pc.log.Warn().Str("topic", s.topic).Msg("not in the group's member list; dropping the queues")
			complete = false
		}
		pc.assign(s, mine)
	}
	if pc.locking() {
		// Lock the new queues (and renew the others) at once; the lock loop retries those
		// another member still holds.
		pc.lockAll(ctx, true)
	}
	return complete, nil
}

// publishBrokers records the brokers of the subscribed topics (the client heartbeats to
// them) and registers the consumer with the new ones at once.
func (pc *PushConsumer) publishBrokers(ctx context.Context, addrs []string) {
	old := *pc.brokers.Load()
	all := slices.Clone(old)
	for _, a := range addrs {
		if !slices.Contains(all, a) {
			all = append(all, a)
		}
	}
	slices.Sort(all)
	pc.brokers.Store(&all)
	for _, a := range all {
		if !slices.Contains(old, a) {
			if err := pc.c.heartbeat(ctx, a); err != nil {
				pc.log.Warn().Err(err).Str("broker", a).Msg("first consumer heartbeat failed")
			}
		}
	}
}

// allocate returns the consumer's share of a topic's queues (broadcasting: all of
// them). member is false when the broker does not list the consumer in the group even
// after a heartbeat; err is set when the member list could not be read, or the
// heartbeat that should put the consumer on it failed (the broker may be going away: its
// answer is no reason to drop the queues).
func (pc *PushConsumer) allocate(ctx context.Context, qs []readQueue) (mine []readQueue, member bool, err error) {
	if len(qs) == 0 || pc.opts.broadcast {
		return qs, true, nil
	}
	addr := qs[0].addr
	self := pc.c.clientID
	ids, err := pc.consumerIDs(ctx, addr)
	if err == nil && !slices.Contains(ids, self) {
		// The broker has not registered us (yet, or any more): tell it and ask again.
		if err = pc.c.heartbeat(ctx, addr); err == nil {
			ids, err = pc.consumerIDs(ctx, addr)
		}
	}
	if err != nil {
		return nil, false, err
	}
	if !slices.Contains(ids, self) {
		return nil, false, nil
	}
	mqs := make([]MessageQueue, len(qs))
	for i, q := range qs {
		mqs[i] = q.mq
	}
	share := make(map[MessageQueue]bool)
	for _, mq := range pc.opts.allocate(mqs, ids, self) {
		share[mq] = true
	}
	for _, q := range qs {
		if share[q.mq] { // what the strategy returned, restricted to real queues
			mine = append(mine, q)
		}
	}
	return mine, true, nil
}

// assign makes mine the consumer's queues of sub's topic: it drops the others and starts
// the new ones.
func (pc *PushConsumer) assign(sub *subscription, mine []readQueue) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if pc.mu.state != consumerStarted {
		return
	}
	keep := make(map[MessageQueue]readQueue, len(mine))
	for _, rq := range mine {
		keep[rq.mq] = rq
	}
	for mq, q := range pc.mu.queues {
		if mq.Topic != sub.topic {
			continue
		}
		if rq, ok := keep[mq]; ok {
			q.setRoute(rq)
			continue
		}
		pc.dropLocked(q, true)
		pc.log.Info().Str("queue", mq.String()).Msg("queue dropped")
	}
	for _, rq := range mine {
		if _, ok := pc.mu.queues[rq.mq]; ok {
			continue
		}
		q := pc.newProcessQueue(sub, rq, pc.mu.draining[rq.mq])
		pc.mu.queues[rq.mq] = q
		q.pulling.Add(1)
		pc.wg.Go(q.pullLoop)
		if pc.opts.orderly {
			q.pulling.Add(1)
			pc.wg.Go(q.consumeLoop)
		}
		pc.log.Info().Str("queue", rq.mq.String()).Msg("queue assigned")
	}
}

// dropLocked removes q from the queue table and stops it; a goroutine waits for its
// handlers, then commits its offset (unless commit is false) and releases its lock. The
// caller holds pc.mu.
func (pc *PushConsumer) dropLocked(q *processQueue, commit bool) {
	delete(pc.mu.queues, q.mq)
	done := make(chan struct{})
	pc.mu.draining[q.mq] = done
	q.drop()
	pc.wg.Go(func() { pc.finishDrop(q, done, commit) })
}

// rebalanceLoop rebalances every rebalance interval and when asked to, sooner while the
// last rebalance was incomplete, until Close.
func (pc *PushConsumer) rebalanceLoop(complete bool) {
	retry := pullBackoff
	next := func(complete bool) time.Duration {
		if complete {
			retry = pullBackoff
			return pc.opts.rebalance
		}
		d := retry
		retry = min(2*retry, pc.opts.rebalance)
		return min(d, pc.opts.rebalance)
	}
	t := time.NewTimer(next(complete))
	defer t.Stop()
	for {
		select {
		case <-pc.ctx.Done():
			return
		case <-pc.kick:
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(pc.ctx, 2*pc.c.opts.RequestTimeout)
		ok, err := pc.rebalance(ctx)
		cancel()
		if err != nil && pc.ctx.Err() == nil {
			pc.log.Warn().Err(err).Msg("rebalance failed")
		}
		t.Reset(next(ok))
	}
}

// addConsumer registers pc for heartbeats and notifications; a group has at most one
// consumer per client.
func (c *Client) addConsumer(pc *PushConsumer) error {
	if c.closed.Load() {
		return ErrClosed
	}
	c.groups.Lock()
	defer c.groups.Unlock()
	if _, dup := c.groups.consumers[pc.group]; dup {
		return fmt.Errorf("%w: this client already has a consumer of group %s", ErrInvalidOptions, pc.group)
	}
	c.groups.consumers[pc.group] = pc
	return nil
}

// removeConsumer undoes addConsumer.
func (c *Client) removeConsumer(pc *PushConsumer) {
	c.groups.Lock()
	if c.groups.consumers[pc.group] == pc {
		delete(c.groups.consumers, pc.group)
	}
	c.groups.Unlock()
}

// closeConsumers closes the consumers still registered (Client.Close).
func (c *Client) closeConsumers() error {
	c.groups.Lock()
	pcs := make([]*PushConsumer, 0, len(c.groups.consumers))
	for _, pc := range c.groups.consumers {
		pcs = append(pcs, pc)
	}
	c.groups.Unlock()
	var errs []error
	for _, pc := range pcs {
		errs = append(errs, pc.Close())
	}
	return errors.Join(errs...)
}

// consumerBrokersLocked appends to out the brokers of the registered consumers' topics
// that it lacks; the caller holds c.groups.
func (c *Client) consumerBrokersLocked(out []string) []string {
	for _, pc := range c.groups.consumers {
		for _, a := range *pc.brokers.Load() {
			if !slices.Contains(out, a) {
				out = append(out, a)
			}
		}
	}
	return out
}

// onConsumerIDsChanged serves NOTIFY_CONSUMER_IDS_CHANGED (oneway, broker → client): the
// group's consumer rebalances at once.
func (c *Client) onConsumerIDsChanged(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.NotifyConsumerIDsChangedRequestHeader
	if err := h.DecodeExt(req.ExtFields); err != nil {
		return nil, nil //nolint:nilerr // oneway: nothing to answer
	}
	c.groups.Lock()
	pc := c.groups.consumers[h.ConsumerGroup]
	c.groups.Unlock()
	if pc != nil {
		pc.requestRebalance()
	}
	c.notifyLiteConsumers(h.ConsumerGroup)
	return nil, nil
}
