package interop

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/conf"
	"github.com/ferrymq/ferry/testutil"
)

// txListener decides each transaction by the prefix of its body: "commit-", "rollback-",
// or "unknown-<commit|rollback>-" (UNKNOWN at first, the suffix when checked).
type txListener struct {
	mu     sync.Mutex
	checks map[string]int
}

func (l *txListener) ExecuteLocalTransaction(m *primitive.Message) primitive.LocalTransactionState {
	switch body := string(m.Body); {
	case strings.HasPrefix(body, "commit-"):
		return primitive.CommitMessageState
	case strings.HasPrefix(body, "rollback-"):
		return primitive.RollbackMessageState
	default:
		return primitive.UnkonwnState
	}
}

func (l *txListener) CheckLocalTransaction(m *primitive.MessageExt) primitive.LocalTransactionState {
	l.mu.Lock()
	l.checks[string(m.Body)]++
	l.mu.Unlock()
	if strings.HasPrefix(string(m.Body), "unknown-commit-") {
		return primitive.CommitMessageState
	}
	return primitive.RollbackMessageState
}

func TestTransactionsCommitRollbackAndCheck(t *testing.T) {
	c := testutil.StartCluster(t, testutil.WithBrokerConfig(func(b *conf.BrokerConfig) {
		b.TransactionTimeout = time.Second
		b.TransactionCheckInterval = time.Second
		b.DelayLevels = "100ms 200ms 300ms 400ms 500ms 600ms 700ms 800ms 900ms 1s 1100ms 1200ms 1300ms 1400ms 1500ms 1600ms 1700ms 1800ms"
	}))
	l := &txListener{checks: map[string]int{}}
	p, err := rocketmq.NewTransactionProducer(l,
		producer.WithNsResolver(primitive.NewPassthroughResolver([]string{c.NamesrvAddr})),
		producer.WithGroupName("tx-pg"),
		producer.WithInstanceName(instance("tx")),
	)
	require.NoError(t, err)
	require.NoError(t, p.Start())
	defer func() { _ = p.Shutdown() }()

	const n = 30
	var bodies []string
	for i := range n {
		for _, kind := range []string{"commit", "rollback", "unknown-commit", "unknown-rollback"} {
			bodies = append(bodies, fmt.Sprintf("%s-%d", kind, i))
		}
	}
	delayed := "commit-delayed"
	bodies = append(bodies, delayed)
	sentAt := map[string]time.Time{}
	for _, b := range bodies {
		msg := primitive.NewMessage("TxTopic", []byte(b))
		if b == delayed {
			msg.WithDelayTimeLevel(10) // 1 s with the level string above
		}
		sentAt[b] = time.Now()
		res, err := p.SendMessageInTransaction(context.Background(), msg)
		require.NoError(t, err, b)
		require.Equal(t, primitive.SendOK, res.Status, b)
	}

	col := newCollector()
	pc := newPushConsumer(t, c, "tx-cg", "TxTopic", "*", col.handler)
	defer func() { _ = pc.Shutdown() }()
	wantCommitted := 2*n + 1
	testutil.Eventually(t, 60*time.Second, func() bool { return col.total.Load() >= int64(wantCommitted) }, "committed transactions delivered")
	// Give the rolled-back ones every chance to show up wrongly: wait until each unknown
	// transaction has been checked (resolved) before judging.
	testutil.Eventually(t, 60*time.Second, func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		for i := range n {
			if l.checks[fmt.Sprintf("unknown-commit-%d", i)] == 0 || l.checks[fmt.Sprintf("unknown-rollback-%d", i)] == 0 {
				return false
			}
		}
		return true
	}, "every unknown transaction checked")
	col.mu.Lock()
	defer col.mu.Unlock()
	for _, b := range bodies {
		switch {
		case strings.HasPrefix(b, "commit-"), strings.HasPrefix(b, "unknown-commit-"):
			require.Equal(t, 1, col.count[b], "%s delivered exactly once", b)
		default:
			require.Zero(t, col.count[b], "%s must never be delivered", b)
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for b, k := range l.checks {
		require.False(t, strings.HasPrefix(b, "commit-") || strings.HasPrefix(b, "rollback-"), "%s was resolved at once and must not be checked", b)
		require.LessOrEqual(t, k, 2, "%s checked %d times", b, k)
	}
}
