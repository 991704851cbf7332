package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ferrymq/ferry/protocol"
)

// The low-level pull consumer: one request per call, nothing in the background. A Pull
// is PULL_MESSAGE (11) with the subscription in the request (sysFlag SUBSCRIPTION, plus
// SUSPEND for PullWait), as the official Go client's pull consumers send it, so it works
// against every RocketMQ 4.x broker; the broker never stores an offset from a pull (no
// COMMIT_OFFSET bit). Offsets are read and written with QUERY_CONSUMER_OFFSET (14) and
// UPDATE_CONSUMER_OFFSET (15), queue bounds with GET_MIN_OFFSET (31), GET_MAX_OFFSET (30)
// and SEARCH_OFFSET_BY_TIMESTAMP (29). Requests go to the master of the queue's broker
// name (its lowest slave while the route has no master), looked up on the name servers
// once and again after a connection error; a pull goes to the member the queue's last
// pull answer suggested (suggestWhichBrokerId, see pullAddr), and a route that lacks that
// member is looked up again at most every routeRecheck (a master coming back).

// maxPullNums bounds the messages one pull asks for.
const maxPullNums = 1024

// pullTimeoutMargin is how much longer than the broker's hold a long-polling pull waits
// for its answer.
const pullTimeoutMargin = 15 * time.Second

// routeRecheck is how old a broker group's known addresses must be before a pull whose
// suggested broker they lack looks the route up again.
const routeRecheck = 5 * time.Second

// PullStatus is the outcome of a pull.
type PullStatus int

// Pull outcomes.
const (
	// PullFound: messages were found (PullResult.Messages).
	PullFound PullStatus = iota
	// PullNoNewMessage: the offset is the queue's end; nothing to read yet
	// (PULL_NOT_FOUND).
	PullNoNewMessage
	// PullNoMatchedMessage: messages were read but none matched the expression
	// (PULL_RETRY_IMMEDIATELY, or every message of a found batch filtered out on the
	// client); pull again from NextOffset.
	PullNoMatchedMessage
	// PullOffsetIllegal: the offset is below the queue's minimum or past its end
	// (PULL_OFFSET_MOVED); NextOffset is where to go instead.
	PullOffsetIllegal
)

// String names the status.
func (s PullStatus) String() string {
	switch s {
	case PullFound:
		return "Found"
	case PullNoNewMessage:
		return "NoNewMessage"
	case PullNoMatchedMessage:
		return "NoMatchedMessage"
	case PullOffsetIllegal:
		return "OffsetIllegal"
	}
	return fmt.Sprintf("PullStatus(%d)", int(s))
}

// PullResult is what one pull got.
type PullResult struct {
	// Status says what happened.
	Status PullStatus
	// Messages are the messages found that match the expression, in queue order (only
	// with PullFound). Their bodies are inflated; transactional messages that are not
	// committed never appear.
	Messages []*MessageExt
	// NextOffset is where the next pull of the queue starts: after the last message read
	// (filtered ones included), or the corrected offset of PullOffsetIllegal.
	NextOffset int64
	// CommitOffset is the offset to commit once Messages are handled: NextOffset, or the
	// first chunk of a chunked message of the queue still being reassembled
	// (chunk_reassemble.go), which must be read again after a restart.
	CommitOffset int64
	// MinOffset is the queue's smallest stored offset; MaxOffset the next one to be
	// written, both as the broker answered.
	MinOffset, MaxOffset int64
}

// PullConsumer pulls messages of given queues at given offsets for a consumer group and
// reads and writes the group's committed offsets; the caller decides everything else.
// It starts no goroutine and joins no group (the brokers do not list it as a member), so
// it needs no closing. Create it with Client.NewPullConsumer; it is safe for concurrent
// use. For a consumer that pulls in the background and takes its share of a group's
// queues, see LitePullConsumer.
type PullConsumer struct {
	c      *Client
	group  string
	chunks *reassembler // chunked messages being put together, by queue (chunk_reassemble.go)

	addrs struct {
		sync.Mutex
		m         map[string]brokerGroup // broker name → its members, learned from routes
		suggested map[MessageQueue]int64 // broker id each queue's last pull answer suggested
	}
}

// brokerGroup is what a pull consumer knows of a broker group.
type brokerGroup struct {
	addrs   map[int64]string // by broker id, from the route (read only)
	learned time.Time
}

// NewPullConsumer returns a pull consumer of group. It contacts nobody. Of the consumer
// options only WithChunkReassembly applies: chunked messages are reassembled across the
// pulls of a queue.
func (c *Client) NewPullConsumer(group string, opts ...ConsumerOption) (*PullConsumer, error) {
	group = c.nsWrap(group) // namespace.go
	if err := protocol.ValidateGroup(group); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	o := defaultConsumerOptions()
	for _, opt := range opts {
		opt(&o)
	}
	if err := o.chunks.validate(); err != nil {
		return nil, err
	}
	p := &PullConsumer{c: c, group: group, chunks: newReassembler(o.chunks, &c.log)}
	p.addrs.m = make(map[string]brokerGroup)
	p.addrs.suggested = make(map[MessageQueue]int64)
	return p, nil
}

// Group is the consumer group.
func (p *PullConsumer) Group() string { return p.group }

// FetchQueues lists the readable queues of topic on brokers with a master, sorted by
// broker name and queue id. A topic the name servers do not know is an error wrapping
// ErrNoRoute.
func (p *PullConsumer) FetchQueues(ctx context.Context, topic string) ([]MessageQueue, error) {
	topic = p.c.nsWrap(topic)
	if err := protocol.ValidateTopic(topic); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidArgument, err)
	}
	qs, err := p.c.readQueues(ctx, topic)
	if err != nil {
		return nil, err
	}
	p.learn(qs)
	out := make([]MessageQueue, len(qs))
	for i, q := range qs {
		out[i] = q.mq
	}
	return out, nil
}

// Pull reads up to maxNums messages (1..1024) of mq from offset, keeping those whose tag
// matches expr ("*" or "" for all, or "tagA || tagB") or that an SQL92(…) expression
// matches (a broker's refusal of it is a *SubscriptionError). The broker answers at once: with
// nothing new the status is PullNoNewMessage. Errors wrap ErrInvalidArgument (bad
// arguments), ErrNoRoute (unknown topic or broker) or ErrBroker (a refusal, e.g. a queue
// id past the topic's queues).
func (p *PullConsumer) Pull(ctx context.Context, mq MessageQueue, offset int64, maxNums int, expr string) (PullResult, error) {
	return p.PullWait(ctx, mq, offset, maxNums, expr, 0)
}

// PullWait is Pull with long polling: when nothing new is stored at offset the broker
// holds the request until a message arrives or wait passes (then PullNoNewMessage). A
// deadline of ctx shorter than wait shortens the hold; wait ≤ 0 is Pull.
func (p *PullConsumer) PullWait(ctx context.Context, mq MessageQueue, offset int64, maxNums int, expr string, wait time.Duration) (PullResult, error) {
	mq = p.c.nsQueue(mq)
	if err := checkQueue(mq); err != nil {
		return PullResult{}, err
	}
	if offset < 0 || maxNums < 1 || maxNums > maxPullNums {
		return PullResult{}, fmt.Errorf("%w: offset %d (≥ 0), max messages %d (1..%d)", ErrInvalidArgument,
			offset, maxNums, maxPullNums)
	}
	sub, err := newSubscription(mq.Topic, expr, false)
	if err != nil {
		return PullResult{}, fmt.Errorf("%w: %w", ErrInvalidArgument, err)
	}
	return p.pull(ctx, mq, offset, maxNums, sub, wait)
}

// pull sends one pull and sorts its answer out.
func (p *PullConsumer) pull(ctx context.Context, mq MessageQueue, offset int64, maxNums int, sub *subscription, wait time.Duration) (PullResult, error) {
	if dl, ok := ctx.Deadline(); ok && wait > 0 {
		// Leave the answer time to arrive before the caller gives up.
		left := time.Until(dl)
		wait = min(wait, left-left/5)
		if wait < 10*time.Millisecond {
			wait = 0
		}
	}
	r := pullRequest{group: p.group, mq: mq, offset: offset, max: int32(maxNums), sub: sub}
	if wait > 0 {
		r.suspend = wait
		if _, ok := ctx.Deadline(); !ok {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, wait+pullTimeoutMargin)
			defer cancel()
		}
	}
	addr, err := p.pullAddr(ctx, mq)
	if err != nil {
		return PullResult{}, err
	}
	ans, err := p.c.pullMessage(ctx, addr, &r)
	if err != nil {
		p.suggest(mq, masterID) // the next try goes to the master (or readAddr)
		if ans.answered {
			return PullResult{}, err // the answer's header is malformed
		}
		var be *BrokerError
		if !errors.As(err, &be) && ctx.Err() == nil {
			p.forget(mq.BrokerName)
		}
		return PullResult{}, fmt.Errorf("client: pull %s at %d: %w", mq, offset, err)
	}
	p.suggest(mq, ans.suggested)
	res := PullResult{Status: ans.status, NextOffset: ans.next, MinOffset: ans.min, MaxOffset: ans.max}
	if res.Status != PullFound {
		p.chunks.feed(mq, nil) // gives up partial messages past their bounds
		p.setCommitOffset(mq, &res)
		return res, nil
	}
	// Dropped: what the broker's hash filter let through by collision, and half or
	// rolled-back transactional records.
	res.Messages, err = decodeMessages(ans.body, mq.BrokerName, sub, &p.c.log)
	if err != nil {
		return PullResult{}, fmt.Errorf("client: pull %s at %d from %s: %w", mq, offset, addr, err)
	}
	res.Messages, _ = p.chunks.feed(mq, res.Messages) // chunk_reassemble.go
	if len(res.Messages) == 0 {
		res.Status = PullNoMatchedMessage
	}
	p.c.nsStripMessages(res.Messages)
	p.setCommitOffset(mq, &res)
	return res, nil
}

// CommittedOffset is the group's committed offset of mq — the next message the group
// will consume — or −1 when it has none.
func (p *PullConsumer) CommittedOffset(ctx context.Context, mq MessageQueue) (int64, error) {
	mq = p.c.nsQueue(mq)
	addr, err := p.offsetsAddr(ctx, mq)
	if err != nil {
		return 0, err
	}
	off, err := p.c.committedOffset(ctx, addr, p.group, mq)
	if err != nil {
		p.forgetOnTransportError(mq.BrokerName, err)
		return 0, fmt.Errorf("client: committed offset of %s in %s: %w", p.group, mq, err)
	}
	return off, nil
}

// CommitOffset stores offset (the next message to consume) as the group's committed
// offset of mq on its broker.
func (p *PullConsumer) CommitOffset(ctx context.Context, mq MessageQueue, offset int64) error {
	mq = p.c.nsQueue(mq)
	if offset < 0 {
		if err := checkQueue(mq); err != nil {
			return err
		}
		return fmt.Errorf("%w: offset %d (≥ 0)", ErrInvalidArgument, offset)
	}
	addr, err := p.offsetsAddr(ctx, mq)
	if err != nil {
		return err
	}
	return p.commitOffsetAt(ctx, addr, mq, offset)
}

// commitOffsetAt is CommitOffset to the broker at addr.
func (p *PullConsumer) commitOffsetAt(ctx context.Context, addr string, mq MessageQueue, offset int64) error {
	if err := p.c.commitOffset(ctx, addr, p.group, mq, offset); err != nil {
		p.forgetOnTransportError(mq.BrokerName, err)
		return fmt.Errorf("client: commit offset %d of %s for %s: %w", offset, mq, p.group, err)
	}
	return nil
}

// MinOffset is the smallest offset mq still stores.
func (p *PullConsumer) MinOffset(ctx context.Context, mq MessageQueue) (int64, error) {
	return p.bound(ctx, mq, protocol.GetMinOffset, p.c.minOffset)
}

// MaxOffset is the offset the next message stored in mq will get (the queue's end).
func (p *PullConsumer) MaxOffset(ctx context.Context, mq MessageQueue) (int64, error) {
	return p.bound(ctx, mq, protocol.GetMaxOffset, p.c.maxOffset)
}

// OffsetByTime is the offset of the first message of mq stored at or after t: the max
// offset when all are older, the min offset when all are newer.
func (p *PullConsumer) OffsetByTime(ctx context.Context, mq MessageQueue, t time.Time) (int64, error) {
	return p.bound(ctx, mq, protocol.SearchOffsetByTimestamp, func(ctx context.Context, addr string, mq MessageQueue) (int64, error) {
		return p.c.offsetByTime(ctx, addr, mq, t.UnixMilli())
	})
}

// bound asks mq's broker for one of its offsets with call (the request code names it in
// errors).
func (p *PullConsumer) bound(ctx context.Context, mq MessageQueue, code protocol.RequestCode,
	call func(context.Context, string, MessageQueue) (int64, error)) (int64, error) {
	mq = p.c.nsQueue(mq)
	addr, err := p.offsetsAddr(ctx, mq)
	if err != nil {
		return 0, err
	}
	off, err := call(ctx, addr, mq)
	if err != nil {
		p.forgetOnTransportError(mq.BrokerName, err)
		return 0, fmt.Errorf("client: %s of %s: %w", code, mq, err)
	}
	return off, nil
}

// offsetsAddr checks mq and returns where its offsets are read and written
// (brokerAddr).
func (p *PullConsumer) offsetsAddr(ctx context.Context, mq MessageQueue) (string, error) {
	if err := checkQueue(mq); err != nil {
		return "", err
	}
	return p.brokerAddr(ctx, mq)
}

// checkQueue refuses a malformed queue.
func checkQueue(mq MessageQueue) error {
	if err := protocol.ValidateTopic(mq.Topic); err != nil {
		return fmt.Errorf("%w: queue %s: %w", ErrInvalidArgument, mq, err)
	}
	if mq.BrokerName == "" || mq.QueueID < 0 {
		return fmt.Errorf("%w: queue %s: a broker name and a queue id ≥ 0 are needed", ErrInvalidArgument, mq)
	}
	return nil
}

// brokerAddr is where offsets of mq are read and written: the master of mq's broker
// (its lowest slave while the route has no master, readAddr), looked up on the name
// servers (by mq's topic) when not known yet.
func (p *PullConsumer) brokerAddr(ctx context.Context, mq MessageQueue) (string, error) {
	g, _, err := p.brokerGroup(ctx, mq, false)
	if err != nil {
		return "", err
	}
	return readAddr(g.addrs), nil
}

// pullAddr is where the next pull of mq goes: the member of its broker group the last
// pull answer suggested, else the master, else the lowest slave (the package function
// pullAddr). Known addresses lacking the suggested member are looked up again when they
// are routeRecheck old.
func (p *PullConsumer) pullAddr(ctx context.Context, mq MessageQueue) (string, error) {
	g, id, err := p.brokerGroup(ctx, mq, true)
	if err != nil {
		return "", err
	}
	return pullAddr(g.addrs, id), nil
}

// brokerGroup returns the known members of mq's broker group and the broker id suggested
// for mq, looking the route up when the group is unknown or — with recheck — when the
// suggested member is missing from addresses routeRecheck old. A broker group learned for
// the first time gets a heartbeat to its readAddr, so the client knows which header codec
// it speaks before the first pull.
func (p *PullConsumer) brokerGroup(ctx context.Context, mq MessageQueue, recheck bool) (brokerGroup, int64, error) {
	p.addrs.Lock()
	g, ok := p.addrs.m[mq.BrokerName]
	id := p.addrs.suggested[mq]
	p.addrs.Unlock()
	if ok && (!recheck || g.addrs[id] != "" || time.Since(g.learned) < routeRecheck) {
		return g, id, nil
	}
	qs, err := p.c.readQueues(ctx, mq.Topic)
	if err == nil {
		p.learn(qs)
	}
	p.addrs.Lock()
	g, found := p.addrs.m[mq.BrokerName]
	if found && time.Since(g.learned) >= routeRecheck {
		// Not in the new route, or no route: keep what is known (the slave may still
		// serve), looked up again no sooner than routeRecheck.
		g.learned = time.Now()
		p.addrs.m[mq.BrokerName] = g
	}
	p.addrs.Unlock()
	switch {
	case found:
	case err != nil:
		return brokerGroup{}, 0, err
	default:
		return brokerGroup{}, 0, fmt.Errorf("%w %s: no master of broker %s", ErrNoRoute, mq.Topic, mq.BrokerName)
	}
	if addr := readAddr(g.addrs); !ok {
		if _, ferry := p.c.ferry.Load(addr); !ferry {
			if err := p.c.heartbeat(ctx, addr); err != nil {
				p.c.log.Debug().Err(err).Str("broker", addr).Msg("first heartbeat failed")
			}
		}
	}
	return g, id, nil
}

// learn records the broker addresses of a topic's queues.
func (p *PullConsumer) learn(qs []readQueue) {
	now := time.Now()
	p.addrs.Lock()
	for _, q := range qs {
		p.addrs.m[q.mq.BrokerName] = brokerGroup{addrs: q.addrs, learned: now}
	}
	p.addrs.Unlock()
}

// suggest records the broker id a pull answer suggested for mq's next pull.
func (p *PullConsumer) suggest(mq MessageQueue, id int64) {
	p.addrs.Lock()
	if id == masterID {
		delete(p.addrs.suggested, mq)
	} else {
		p.addrs.suggested[mq] = id
	}
	p.addrs.Unlock()
}

// forget drops a broker's address after a connection error, so the next request looks
// the route up again.
func (p *PullConsumer) forget(broker string) {
	p.addrs.Lock()
	delete(p.addrs.m, broker)
	p.addrs.Unlock()
}

// forgetOnTransportError is forget unless err is the broker's own answer.
func (p *PullConsumer) forgetOnTransportError(broker string, err error) {
	var be *BrokerError
	if !errors.As(err, &be) {
		p.forget(broker)
	}
}
