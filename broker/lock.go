package broker

// LOCK_BATCH_MQ (41) and UNLOCK_BATCH_MQ (42), for ordered (orderly) consumption.
//
// Behaviour: a queue is locked by one client of a group at a time; the holder renews it by
// locking again, and a lock not renewed for lockExpiry (60 s) may be taken by another
// client. LOCK answers the subset of the requested queues the caller now holds, echoing
// each entry exactly (the Go client compares them as structs); UNLOCK releases the
// caller's locks. Both answer at once (the client's timeout is 1 s).

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
)

// lockExpiry is how long an unrenewed queue lock lasts.
const lockExpiry = 60 * time.Second

// messageQueue is a queue as the clients write it in lock bodies.
type messageQueue struct {
	Topic      string `json:"topic"`
	BrokerName string `json:"brokerName"`
	QueueID    int32  `json:"queueId"`
}

// lockBatchBody is the request body of LOCK_BATCH_MQ and UNLOCK_BATCH_MQ.
type lockBatchBody struct {
	ConsumerGroup  string         `json:"consumerGroup"`
	ClientID       string         `json:"clientId"`
	OnlyThisBroker bool           `json:"onlyThisBroker"`
	MQSet          []messageQueue `json:"mqSet"`
}

// lockEntry is one held queue lock.
type lockEntry struct {
	clientID string
	renewed  time.Time
}

// queueLocks holds the ordered-consumption locks of every group.
type queueLocks struct {
	mu struct {
		sync.Mutex
		groups map[string]map[messageQueue]*lockEntry
	}
}

func newQueueLocks() *queueLocks {
	l := &queueLocks{}
	l.mu.groups = make(map[string]map[messageQueue]*lockEntry)
	return l
}

// lock takes or renews the locks on mqs for client and returns those it now holds.
func (l *queueLocks) lock(group, client string, mqs []messageQueue, now time.Time) []messageQueue {
	l.mu.Lock()
	defer l.mu.Unlock()
	g := l.mu.groups[group]
	if g == nil {
		g = make(map[messageQueue]*lockEntry)
		l.mu.groups[group] = g
	}
	held := make([]messageQueue, 0, len(mqs))
	for _, mq := range mqs {
		e := g[mq]
		switch {
		case e == nil:
			g[mq] = &lockEntry{clientID: client, renewed: now}
		case e.clientID == client || now.Sub(e.renewed) >= lockExpiry:
			e.clientID, e.renewed = client, now
		default:
			continue
		}
		held = append(held, mq)
	}
	return held
}

// unlock releases client's locks on mqs.
func (l *queueLocks) unlock(group, client string, mqs []messageQueue) {
	l.mu.Lock()
	defer l.mu.Unlock()
	g := l.mu.groups[group]
	for _, mq := range mqs {
		if e := g[mq]; e != nil && e.clientID == client {
			delete(g, mq)
		}
	}
}

func (b *Broker) handleLockBatch(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var body lockBatchBody
	if err := json.Unmarshal(req.Body, &body); err != nil {
		return nil, fail(protocol.SystemError, "decode lock body: %v", err)
	}
	held := b.locks.lock(body.ConsumerGroup, body.ClientID, body.MQSet, b.opts.Clock())
	out, err := json.Marshal(struct {
		LockOKMQSet []messageQueue `json:"lockOKMQSet"`
	}{held})
	if err != nil {
		return nil, err
	}
	resp := respond(req, protocol.Success, "")
	resp.Body = out
	return resp, nil
}

func (b *Broker) handleUnlockBatch(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var body lockBatchBody
	if err := json.Unmarshal(req.Body, &body); err != nil {
		return nil, fail(protocol.SystemError, "decode unlock body: %v", err)
	}
	b.locks.unlock(body.ConsumerGroup, body.ClientID, body.MQSet)
	return respond(req, protocol.Success, ""), nil
}
