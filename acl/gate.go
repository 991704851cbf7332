package acl

// Gate puts the ACL in front of request handlers: every request is checked before its
// handler runs; a refusal is answered NO_PERMISSION (16)
// with the reason as remark (never a secret) and logged, at most once a second with a
// count of the refusals not logged. The topics and groups a request names in its body
// (HEART_BEAT's subscriptions and groups, LOCK/UNLOCK_BATCH_MQ's queues) are read here;
// the ACL reads the ext fields itself. For a code whose Rule is Referenced or Filtered
// the handler gets a [*Grant] in its context (see [GrantFrom]) to check what it learns
// only by reading the store; other codes (the send and pull paths) get nothing added.

import (
	"context"
	"net/netip"

	"github.com/rs/zerolog"

	"github.com/ferrymq/ferry/internal/logging"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
)

// Checker decides whether a request is allowed (*Watcher, *ACL).
type Checker interface {
	// Check decides on req.
	Check(req Request) error
	// Authorize is Check that also returns who the request was allowed as.
	Authorize(req Request) (Caller, error)
}

// Gate wraps request handlers with an ACL check. It is safe for concurrent use.
type Gate struct {
	acl Checker
	log zerolog.Logger

	refusals logging.Sampler
}

// NewGate returns a gate checking requests with c and logging refusals to log.
func NewGate(c Checker, log zerolog.Logger) *Gate {
	return &Gate{acl: c, log: log}
}

// Wrap returns h behind the check: a refused request is answered NO_PERMISSION with the
// reason as remark and never reaches h.
//
// For a code whose Rule is Referenced or Filtered, h finds a [*Grant] in its context;
// for a RetryRecords code, when the request names a %RETRY% or %DLQ% topic and the
// caller is held to its permissions.
func (g *Gate) Wrap(code protocol.RequestCode, h remoting.HandlerFunc) remoting.HandlerFunc {
	if r, ok := RuleOf(int16(code)); ok && r.RetryRecords {
		return func(ctx context.Context, ch remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
			caller, err := g.acl.Authorize(g.request(code, ch, req))
			if err != nil {
				g.logRefusal(ch, code, err)
				return nil, &remoting.CodeError{Code: int16(protocol.NoPermission), Remark: err.Error()}
			}
			if t := req.ExtFields.Value(r.TopicField); !caller.Unrestricted() && (protocol.IsRetryTopic(t) || protocol.IsDLQTopic(t)) {
				ctx = context.WithValue(ctx, grantKey{}, &Grant{caller: caller, gate: g, ch: ch, code: code})
			}
			return h(ctx, ch, req)
		}
	}
	if r, ok := RuleOf(int16(code)); ok && (r.Referenced || r.Filtered) {
		return func(ctx context.Context, ch remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
			caller, err := g.acl.Authorize(g.request(code, ch, req))
			if err != nil {
				g.logRefusal(ch, code, err)
				return nil, &remoting.CodeError{Code: int16(protocol.NoPermission), Remark: err.Error()}
			}
			return h(context.WithValue(ctx, grantKey{}, &Grant{caller: caller, gate: g, ch: ch, code: code}), ch, req)
		}
	}
	return func(ctx context.Context, ch remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
		if err := g.acl.Check(g.request(code, ch, req)); err != nil {
			g.logRefusal(ch, code, err)
			return nil, &remoting.CodeError{Code: int16(protocol.NoPermission), Remark: err.Error()}
		}
		return h(ctx, ch, req)
	}
}

// request is what the ACL decides req on.
func (g *Gate) request(code protocol.RequestCode, ch remoting.Channel, req *remoting.Command) Request {
	r := Request{Code: req.Code, Version: req.Version, Fields: req.ExtFields, Body: req.Body}
	if ap, err := netip.ParseAddrPort(ch.RemoteAddr()); err == nil {
		r.Addr = ap.Addr()
	}
	r.Topics, r.Groups = bodyResources(code, req.Body)
	return r
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
	ok, suppressed := g.refusals.Allow()
	if !ok {
		return
	}
	g.log.Warn().Err(err).Str("remote", ch.RemoteAddr()).Stringer("code", code).
		Int64("suppressed", suppressed).Msg("request refused by ACL")
}
