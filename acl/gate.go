package acl

// Gate puts the ACL in front of request handlers: every request is checked before its
// handler runs; a refusal is answered NO_PERMISSION (16)
// with the reason as remark (never a secret) and logged, at most once a second with a
// count of the refusals not logged. The topics and groups a request names in its body
// (HEART_BEAT's subscriptions and groups, LOCK/UNLOCK_BATCH_MQ's queues) are read here;
// the ACL reads the ext fields itself.

import (
	"context"
	"net/netip"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
)

// Checker decides whether a request is allowed (*Watcher, *ACL).
type Checker interface {
	Check(req Request) error
}

// Gate wraps request handlers with an ACL check. It is safe for concurrent use.
type Gate struct {
	acl Checker
	log zerolog.Logger

	mu         sync.Mutex
	lastLog    time.Time
	suppressed int
}

// NewGate returns a gate checking requests with c and logging refusals to log.
func NewGate(c Checker, log zerolog.Logger) *Gate {
	return &Gate{acl: c, log: log}
}

// Wrap returns h behind the check: a refused request is answered NO_PERMISSION with the
// reason as remark and never reaches h.
func (g *Gate) Wrap(code protocol.RequestCode, h remoting.HandlerFunc) remoting.HandlerFunc {
	return func(ctx context.Context, ch remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
		r := Request{Code: req.Code, Version: req.Version, Fields: req.ExtFields, Body: req.Body}
		if ap, err := netip.ParseAddrPort(ch.RemoteAddr()); err == nil {
			r.Addr = ap.Addr()
		}
		r.Topics, r.Groups = bodyResources(code, req.Body)
		if err := g.acl.Check(r); err != nil {
			g.logRefusal(ch, code, err)
			return nil, &remoting.CodeError{Code: int16(protocol.NoPermission), Remark: err.Error()}
		}
		return h(ctx, ch, req)
	}
}

// bodyResources returns the topics and groups a request names in its body. A body that
// does not decode names nothing here; the handler refuses it.
func bodyResources(code protocol.RequestCode, body []byte) (topics, groups []string) {
	switch code {
	case protocol.HeartBeat:
		data, err := protocol.DecodeHeartbeatData(body)
		if err != nil {
			return nil, nil
		}
		for _, cd := range data.ConsumerDataSet {
			groups = append(groups, cd.GroupName)
			for _, sub := range cd.SubscriptionDataSet {
				topics = append(topics, sub.Topic)
			}
		}
	case protocol.LockBatchMQ, protocol.UnlockBatchMQ:
		b, err := protocol.DecodeLockBatchRequestBody(body)
		if err != nil {
			return nil, nil
		}
		groups = append(groups, b.ConsumerGroup)
		for _, mq := range b.MQSet {
			topics = append(topics, mq.Topic)
		}
	}
	return topics, groups
}

// logRefusal logs a refusal, at most once a second.
func (g *Gate) logRefusal(ch remoting.Channel, code protocol.RequestCode, err error) {
	g.mu.Lock()
	now := time.Now()
	if now.Sub(g.lastLog) < time.Second {
		g.suppressed++
		g.mu.Unlock()
		return
	}
	g.lastLog = now
	suppressed := g.suppressed
	g.suppressed = 0
	g.mu.Unlock()
	g.log.Warn().Err(err).Str("remote", ch.RemoteAddr()).Stringer("code", code).
		Int("suppressed", suppressed).Msg("request refused by ACL")
}
