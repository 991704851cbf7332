package client

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
)

// SQL92 subscriptions. Every consumer takes its subscription as an expression string:
// a TAG expression ("*", "tagA || tagB") unless SQL92 marked it. An SQL92 subscription
// is registered in heartbeats and sent with every pull as expressionType "SQL92" with
// the expression as it is (no tags, no codes), exactly as the official clients send it;
// the broker evaluates it over each message's properties (and TAGS), so the client
// keeps every message a pull returns. Brokers serve SQL92 only with
// enablePropertyFilter (on by default in Ferry, off in RocketMQ); a broker that does
// not, or an expression it cannot parse, refuses the subscription: push and lite-pull
// consumers ask each broker of the topic first (CHECK_CLIENT_CONFIG, as the Java client
// does) and Start fails, a PullConsumer's Pull fails, in both cases with a
// *SubscriptionError (errors.Is ErrSubscriptionRefused).

// sql92Mark starts an expression SQL92 made. It holds bytes no tag can contain (0x01 and
// 0x02 separate properties), so no TAG expression is ever taken for one.
const sql92Mark = "\x01SQL92\x02"

// SQL92 returns expr as an SQL92 selector, to pass wherever a consumer takes a
// subscription expression (NewPushConsumer, LitePullConsumer.Subscribe,
// PullConsumer.Pull): the consumer then receives the messages whose properties match
// expr, e.g. SQL92("a > 5 AND color = 'red'") or SQL92("TAGS IN ('TagA', 'TagB')"). The
// broker parses it (RocketMQ's grammar); the client only checks that it is not empty.
func SQL92(expr string) string { return sql92Mark + expr }

// cutSQL92 returns the expression of a subscription SQL92 made, or ok false.
func cutSQL92(expr string) (sql string, ok bool) {
	return strings.CutPrefix(expr, sql92Mark)
}

// ErrSubscriptionRefused means a broker refused a subscription: an SQL92 expression it
// cannot parse (SUBSCRIPTION_PARSE_FAILED), or SQL92 on a broker that does not filter by
// properties (enablePropertyFilter false). The error is a *SubscriptionError.
var ErrSubscriptionRefused = errors.New("client: subscription refused")

// SubscriptionError is a broker's refusal of a subscription.
type SubscriptionError struct {
	// Topic is the subscribed topic (as sent, with its namespace if any).
	Topic string
	// Type is the expression type, "SQL92" or "TAG".
	Type string
	// Expression is the subscription expression.
	Expression string
	// Err is the broker's answer, a *BrokerError.
	Err error
}

// Error implements error.
func (e *SubscriptionError) Error() string {
	remark := e.Err.Error()
	var be *BrokerError
	if errors.As(e.Err, &be) {
		remark = fmt.Sprintf("%s answered %s: %s", be.Addr, be.Code, be.Remark)
	}
	return fmt.Sprintf("client: %s subscription %q of topic %s refused: %s", e.Type, e.Expression, e.Topic, remark)
}

// Unwrap makes errors.Is hold for ErrSubscriptionRefused and for what Err matches
// (ErrBroker).
func (e *SubscriptionError) Unwrap() []error { return []error{ErrSubscriptionRefused, e.Err} }

// newSQL92Subscription is the subscription of an SQL92 expression.
func newSQL92Subscription(topic, expr string, base *subscription) (*subscription, error) {
	expr = strings.TrimSpace(expr)
	if expr == "" {
		return nil, fmt.Errorf("%w: empty SQL92 expression", ErrInvalidOptions)
	}
	base.expr, base.typ = expr, protocol.ExpressionSQL92
	return base, nil
}

// exprType is the expression type s is sent with.
func (s *subscription) exprType() protocol.ExpressionType {
	if s.typ == "" {
		return protocol.ExpressionTag
	}
	return s.typ
}

// refusal turns err, a broker's answer to a request carrying s, into a
// *SubscriptionError when it refuses s; other errors come back as they are.
func (s *subscription) refusal(err error) error {
	var be *BrokerError
	if s == nil || !errors.As(err, &be) {
		return err
	}
	switch {
	case be.Code == protocol.SubscriptionParseFailed:
	case be.Code == protocol.SystemError && s.exprType() != protocol.ExpressionTag && strings.Contains(be.Remark, "SQL92"):
		// RocketMQ's "does not support consumer to filter message by SQL92", or an
		// expression type the broker does not know.
	default:
		return err
	}
	return &SubscriptionError{Topic: s.topic, Type: string(s.exprType()), Expression: s.expr, Err: be}
}

// checkSubscriptions asks every broker of the topics of the SQL92 subscriptions among
// subs whether it accepts them (CHECK_CLIENT_CONFIG) and returns the first refusal as a
// *SubscriptionError. A topic without a route yet, a broker that does not know the
// request (REQUEST_CODE_NOT_SUPPORTED) or does not answer is not a refusal: the pulls
// will tell.
func (c *Client) checkSubscriptions(ctx context.Context, group string, subs []*subscription) error {
	for _, s := range subs {
		if s.exprType() == protocol.ExpressionTag {
			continue
		}
		qs, err := c.readQueues(ctx, s.topic)
		if err != nil {
			continue
		}
		data := s.data()
		body, err := protocol.EncodeCheckClientRequestBody(&protocol.CheckClientRequestBody{
			ClientID: c.clientID, Group: group, SubscriptionData: &data})
		if err != nil {
			return fmt.Errorf("client: encode subscription check: %w", err)
		}
		asked := make(map[string]bool)
		for _, q := range qs {
			if asked[q.addr] {
				continue
			}
			asked[q.addr] = true
			req := remoting.NewRequest(int16(protocol.CheckClientConfig), nil)
			req.Body = body
			_, err := c.invoke(ctx, q.addr, req)
			var be *BrokerError
			if err == nil || !errors.As(err, &be) || be.Code == protocol.RequestCodeNotSupported {
				continue
			}
			if refused := s.refusal(err); errors.Is(refused, ErrSubscriptionRefused) {
				return refused
			}
		}
	}
	return nil
}
