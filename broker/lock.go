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
	"sync"
	"time"

	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
)

// lockExpiry is how long an unrenewed queue lock lasts.
const lockExpiry = 60 * time.Second

// lockEntry is one held queue lock.
type lockEntry struct {
	clientID string
	renewed  time.Time
}

// queueLocks holds the ordered-consumption locks of every group.
type queueLocks struct {
	mu struct {
		sync.Mutex
		groups map[string]map[protocol.MessageQueue]*lockEntry
	}
}

func newQueueLocks() *queueLocks {
	l := &queueLocks{}
	l.mu.groups = make(map[string]map[protocol.MessageQueue]*lockEntry)
	return l
}

// lock takes or renews the locks on mqs for client and returns those it now holds.
func (l *queueLocks) lock(group, client string, mqs []protocol.MessageQueue, now time.Time) []protocol.MessageQueue {
	l.mu.Lock()
	defer l.mu.Unlock()
	g := l.mu.groups[group]
	if g == nil {
		g = make(map[protocol.MessageQueue]*lockEntry)
		l.mu.groups[group] = g
	}
	held := make([]protocol.MessageQueue, 0, len(mqs))
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
func (l *queueLocks) unlock(group, client string, mqs []protocol.MessageQueue) {
	l.mu.Lock()
	defer l.mu.Unlock()
	g := l.mu.groups[group]
	for _, mq := range mqs {
		if e := g[mq]; e != nil && e.clientID == client {
			delete(g, mq)
		}
	}
}

// lockHandler serves LOCK_BATCH_MQ and UNLOCK_BATCH_MQ.
type lockHandler struct {
	locks *queueLocks
	clock func() time.Time
}

func (lh *lockHandler) handleLockBatch(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	body, err := protocol.DecodeLockBatchRequestBody(req.Body)
	if err != nil {
		return nil, fail(protocol.SystemError, "decode lock body: %v", err)
	}
	held := lh.locks.lock(body.ConsumerGroup, body.ClientID, body.MQSet, lh.clock())
	out, err := protocol.EncodeLockBatchResponseBody(&protocol.LockBatchResponseBody{LockOKMQSet: held})
	if err != nil {
		return nil, err
	}
	resp := respond(req, protocol.Success, "")
	resp.Body = out
	return resp, nil
}

func (lh *lockHandler) handleUnlockBatch(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	body, err := protocol.DecodeLockBatchRequestBody(req.Body)
	if err != nil {
		return nil, fail(protocol.SystemError, "decode unlock body: %v", err)
	}
	lh.locks.unlock(body.ConsumerGroup, body.ClientID, body.MQSet)
	return respond(req, protocol.Success, ""), nil
}
