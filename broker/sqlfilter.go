package broker

// SQL92 subscriptions (expressionType SQL92) and CHECK_CLIENT_CONFIG (46).
//
// Behaviour: a consumer subscribes with an SQL92 expression over message properties
// (package filter, RocketMQ's grammar and typing). The broker compiles each distinct
// expression once and keeps it (sqlFilters, bounded); pulls evaluate it against the
// properties of each stored record (the record itself is still sent without copying).
// enablePropertyFilter (RocketMQ's name; on by default in Ferry, off in RocketMQ) turns
// SQL92 off: such subscriptions are then refused with SYSTEM_ERROR, as RocketMQ refuses
// them. An expression that does not compile is refused with SUBSCRIPTION_PARSE_FAILED
// and the parser's message, and never treated as "*": at CHECK_CLIENT_CONFIG (what the
// Java client asks before it starts), at HEART_BEAT (after the rest of the heartbeat is
// registered: RocketMQ answers SUCCESS there and lets the consumer receive nothing; Ferry
// names the problem, which the Go client logs), and at every pull of that subscription.
// Expression types other than TAG and SQL92 are refused the same way.

import (
	"context"
	"errors"
	"sync"

	"github.com/ferrymq/ferry/filter"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
)

// maxCompiledFilters bounds the compiled expressions kept; past it the cache starts
// over (a client cycling through expressions costs compilations, not memory).
const maxCompiledFilters = 4096

// errPropertyFilterOff is the remark RocketMQ answers an SQL92 subscription with when
// property filtering is disabled.
var errPropertyFilterOff = errors.New("The broker does not support consumer to filter message by SQL92 (broker.enablePropertyFilter is false)") //nolint:staticcheck // RocketMQ's remark

// sqlFilters compiles SQL92 subscriptions, once per distinct expression.
type sqlFilters struct {
	enabled bool // enablePropertyFilter
	mu      sync.Mutex
	cache   map[string]*filter.Expr
}

// newSQLFilters returns the compiler; enabled is enablePropertyFilter.
func newSQLFilters(enabled bool) *sqlFilters {
	return &sqlFilters{enabled: enabled, cache: make(map[string]*filter.Expr)}
}

// compile returns the compiled expr: errPropertyFilterOff when SQL92 is disabled, or
// the parser's error (matching filter.ErrSyntax). A nil *sqlFilters compiles without a
// cache (handler tests).
func (f *sqlFilters) compile(expr string) (*filter.Expr, error) {
	if f == nil {
		return filter.Compile(expr)
	}
	if !f.enabled {
		return nil, errPropertyFilterOff
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if x, ok := f.cache[expr]; ok {
		return x, nil
	}
	x, err := filter.Compile(expr)
	if err != nil {
		return nil, err
	}
	if len(f.cache) >= maxCompiledFilters {
		clear(f.cache)
	}
	f.cache[expr] = x
	return x, nil
}

// forSubscription returns the compiled SQL92 filter of a subscription (nil for a TAG
// one) or the handler error refusing it.
func (f *sqlFilters) forSubscription(typ protocol.ExpressionType, expr string) (*filter.Expr, error) {
	switch typ {
	case "", protocol.ExpressionTag:
		return nil, nil
	case protocol.ExpressionSQL92:
	default:
		return nil, fail(protocol.SystemError, "expression type %q is not supported (TAG or SQL92)", typ)
	}
	x, err := f.compile(expr)
	switch {
	case errors.Is(err, errPropertyFilterOff):
		return nil, fail(protocol.SystemError, "%v", err)
	case err != nil:
		return nil, fail(protocol.SubscriptionParseFailed, "SQL92 expression %q: %v", expr, err)
	}
	return x, nil
}

// checkHeartbeat returns the refusal of the first SQL92 subscription of data that
// cannot be served, naming its group and topic, or nil.
func (f *sqlFilters) checkHeartbeat(data *protocol.HeartbeatData) error {
	for _, cd := range data.ConsumerDataSet {
		for _, sub := range cd.SubscriptionDataSet {
			if _, err := f.forSubscription(sub.ExpressionType, sub.SubString); err != nil {
				var ce *remoting.CodeError
				if errors.As(err, &ce) {
					return fail(protocol.ResponseCode(ce.Code), "group %s, topic %s: %s", cd.GroupName, sub.Topic, ce.Remark)
				}
				return err
			}
		}
	}
	return nil
}

// handleCheckClientConfig serves CHECK_CLIENT_CONFIG.
func (c *clientHandler) handleCheckClientConfig(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	body, err := protocol.DecodeCheckClientRequestBody(req.Body)
	if err != nil {
		return nil, fail(protocol.SystemError, "decode check client config: %v", err)
	}
	if sub := body.SubscriptionData; sub != nil {
		if _, err := c.sql.forSubscription(sub.ExpressionType, sub.SubString); err != nil {
			c.log.Warn().Err(err).Str("client", body.ClientID).Str("group", body.Group).Str("topic", sub.Topic).
				Msg("subscription refused")
			return nil, err
		}
	}
	return respond(req, protocol.Success, ""), nil
}
