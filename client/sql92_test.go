package client

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/broker"
	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/testutil"
)

// TestSQL92Expressions: SQL92 marks an expression so that no TAG expression is taken for
// one, and the subscription goes out as expressionType SQL92 without tags.
func TestSQL92Expressions(t *testing.T) {
	s, err := newSubscription("T", SQL92("  a > 5 AND b = 'x' "), false)
	require.NoError(t, err)
	d := s.data()
	require.Equal(t, protocol.ExpressionSQL92, d.ExpressionType)
	require.Equal(t, "a > 5 AND b = 'x'", d.SubString)
	require.Empty(t, d.TagsSet)
	require.Empty(t, d.CodeSet)
	require.True(t, s.matchesRaw([]byte("TAGS\x01any\x02")), "the broker filtered: every message is kept")

	tag, err := newSubscription("T", "SQL92 || a > 5", false)
	require.NoError(t, err)
	require.Equal(t, protocol.ExpressionTag, tag.data().ExpressionType, "a TAG expression stays one")
	require.Equal(t, []string{"SQL92", "a > 5"}, tag.tags)

	_, err = newSubscription("T", SQL92(" "), false)
	require.ErrorIs(t, err, ErrInvalidOptions)
}

// sql92Env is a broker with a topic of 4 queues holding n messages with property n = i
// and a tag.
type sql92Env struct {
	c      *testutil.Cluster
	cl     *Client
	bodies []string
}

func newSQL92Env(t *testing.T, topic string, n int, opts ...testutil.Option) *sql92Env {
	t.Helper()
	c := testutil.StartCluster(t, opts...)
	newRawBroker(t, c).createTopic(topic, 4)
	cl := newMember(t, c, "sql")
	p, err := cl.NewProducer("pg-sql")
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close()) })
	bodies := names("sql-", n)
	sendAll(t, p, topic, bodies, func(m *message.Message, i int) {
		m.SetProperty("n", strconv.Itoa(i))
		m.SetTags([]string{"TagA", "TagB"}[i%2])
	})
	return &sql92Env{c: c, cl: cl, bodies: bodies}
}

// TestSQL92Consumers: push, lite-pull and pull consumers with an SQL92 selector get
// exactly the messages it matches.
func TestSQL92Consumers(t *testing.T) {
	const topic, n = "Sql92Client", 200
	e := newSQL92Env(t, topic, n)
	const expr = "n >= 50 AND n < 120 AND TAGS = 'TagA'"
	var want []string
	for i, b := range e.bodies {
		if i >= 50 && i < 120 && i%2 == 0 {
			want = append(want, b)
		}
	}

	d := newDeliveries()
	startConsumer(t, e.cl, "cg-sql-push", topic, SQL92(expr), d.handler("push", nil))
	testutil.Eventually(t, 30*time.Second, func() bool { return d.got(want, 1) == len(want) }, "the push consumer's messages")
	require.Zero(t, d.got(slicesWithout(e.bodies, want), 1), "nothing else")

	lc, err := e.cl.NewLitePullConsumer("cg-sql-lite", WithConsumeFrom(ConsumeFromFirstOffset))
	require.NoError(t, err)
	require.NoError(t, lc.Subscribe(topic, SQL92(expr)))
	require.NoError(t, lc.Start(stepCtx(t)))
	t.Cleanup(func() { require.NoError(t, lc.Close()) })
	var lite []string
	testutil.Eventually(t, 30*time.Second, func() bool {
		for _, m := range lc.Poll(context.Background(), 100*time.Millisecond) {
			lite = append(lite, string(m.Body))
		}
		return len(lite) >= len(want)
	}, "the lite-pull consumer's messages")
	require.ElementsMatch(t, want, lite)

	pull, err := e.cl.NewPullConsumer("cg-sql-pull")
	require.NoError(t, err)
	qs, err := pull.FetchQueues(stepCtx(t), topic)
	require.NoError(t, err)
	var pulled []string
	for _, mq := range qs {
		for off := int64(0); ; {
			res, err := pull.Pull(stepCtx(t), mq, off, 32, SQL92(expr))
			require.NoError(t, err)
			if res.Status == PullNoNewMessage {
				break
			}
			for _, m := range res.Messages {
				pulled = append(pulled, string(m.Body))
			}
			off = res.NextOffset
		}
	}
	require.ElementsMatch(t, want, pulled)
}

// slicesWithout is all minus the elements of some.
func slicesWithout(all, some []string) []string {
	var out []string
	for _, s := range all {
		if !slices.Contains(some, s) {
			out = append(out, s)
		}
	}
	return out
}

// TestSQL92Refused: an expression the broker cannot parse, or SQL92 on a broker without
// property filtering, fails Start of push and lite-pull consumers and Pull with a
// *SubscriptionError naming the expression.
func TestSQL92Refused(t *testing.T) {
	const topic = "Sql92Refused"
	check := func(t *testing.T, e *sql92Env, expr string, code protocol.ResponseCode) {
		t.Helper()
		refused := func(err error) {
			t.Helper()
			require.ErrorIs(t, err, ErrSubscriptionRefused)
			require.ErrorIs(t, err, ErrBroker)
			var se *SubscriptionError
			require.True(t, errors.As(err, &se), "%v", err)
			require.Equal(t, "SQL92", se.Type)
			require.Equal(t, expr, se.Expression)
			require.Equal(t, topic, se.Topic)
			var be *BrokerError
			require.True(t, errors.As(err, &be))
			require.Equal(t, code, be.Code)
			require.Contains(t, err.Error(), expr)
		}
		pc, err := e.cl.NewPushConsumer("cg-refused", topic, SQL92(expr), func(context.Context, []*MessageExt) ConsumeResult {
			return ConsumeSuccess
		})
		require.NoError(t, err)
		refused(pc.Start(stepCtx(t)))
		require.NoError(t, pc.Close())

		lc, err := e.cl.NewLitePullConsumer("cg-refused-lite")
		require.NoError(t, err)
		require.NoError(t, lc.Subscribe(topic, SQL92(expr)))
		refused(lc.Start(stepCtx(t)))
		require.NoError(t, lc.Close())

		pull, err := e.cl.NewPullConsumer("cg-refused-pull")
		require.NoError(t, err)
		qs, err := pull.FetchQueues(stepCtx(t), topic)
		require.NoError(t, err)
		_, err = pull.Pull(stepCtx(t), qs[0], 0, 8, SQL92(expr))
		refused(err)
	}
	t.Run("bad expression", func(t *testing.T) {
		check(t, newSQL92Env(t, topic, 4), "n >>= 1", protocol.SubscriptionParseFailed)
	})
	t.Run("filter disabled", func(t *testing.T) {
		e := newSQL92Env(t, topic, 4, testutil.WithBrokerOptions(func(o *broker.Options) { o.EnablePropertyFilter = false }))
		check(t, e, "n > 1", protocol.SystemError)
	})
}
