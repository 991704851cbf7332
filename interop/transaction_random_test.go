package interop

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/testutil"
)

// randomListener decides transaction i by fate[i]: 0 commit, 1 rollback, 2 unknown then
// commit on check, 3 unknown then rollback on check, 4 sent by a producer that then dies
// (its group's surviving producer answers the check: commit for even i, rollback for odd).
// It counts checks per transaction id.
type randomListener struct {
	fate     []int
	mu       sync.Mutex
	checks   map[string]int
	resolved map[string]time.Time // when the producer gave a final answer
}

func txIndex(m *primitive.Message) int {
	i, _ := strconv.Atoi(strings.TrimPrefix(string(m.Body), "rnd-"))
	return i
}

func (l *randomListener) ExecuteLocalTransaction(m *primitive.Message) primitive.LocalTransactionState {
	switch l.fate[txIndex(m)] {
	case 0:
		l.markResolved(m)
		return primitive.CommitMessageState
	case 1:
		l.markResolved(m)
		return primitive.RollbackMessageState
	default:
		return primitive.UnkonwnState
	}
}

func (l *randomListener) markResolved(m *primitive.Message) {
	l.mu.Lock()
	l.resolved[string(m.Body)] = time.Now()
	l.mu.Unlock()
}

func (l *randomListener) CheckLocalTransaction(m *primitive.MessageExt) primitive.LocalTransactionState {
	l.mu.Lock()
	defer l.mu.Unlock()
	body := string(m.Body)
	l.checks[body]++
	if _, done := l.resolved[body]; !done {
		l.resolved[body] = time.Now()
	}
	i := txIndex(&m.Message)
	if l.fate[i] == 2 || (l.fate[i] == 4 && i%2 == 0) {
		return primitive.CommitMessageState
	}
	return primitive.RollbackMessageState
}

// isCommitted reports whether transaction i with fate f ends committed.
func isCommitted(f, i int) bool { return f == 0 || f == 2 || (f == 4 && i%2 == 0) }

// 10,000 transactions with random outcomes, a fifth of them from a producer that dies: every one resolved, no rolled-back message
// delivered, no committed one lost or delivered twice, no transaction checked more than
// the maximum or after it was resolved.
func TestTransactionsRandomOutcomes(t *testing.T) {
	n := 10000
	if testing.Short() {
		n = 1000
	}
	c := testutil.StartCluster(t, txClusterOptions())
	rng := rand.New(rand.NewPCG(4, 2))
	l := &randomListener{fate: make([]int, n), checks: map[string]int{}, resolved: map[string]time.Time{}}
	for i := range l.fate {
		l.fate[i] = rng.IntN(5)
	}
	p, err := rocketmq.NewTransactionProducer(l,
		producer.WithNsResolver(primitive.NewPassthroughResolver([]string{c.NamesrvAddr})),
		producer.WithGroupName("tx-rnd-pg"), producer.WithInstanceName(instance("tx-rnd")))
	require.NoError(t, err)
	require.NoError(t, p.Start())
	defer func() { _ = p.Shutdown() }()
	// The "crashing" producer: same group, its own client and connection, shut down right
	// after its sends, leaving its transactions to the group's surviving producer.
	doomed, err := rocketmq.NewTransactionProducer(l,
		producer.WithNsResolver(primitive.NewPassthroughResolver([]string{c.NamesrvAddr})),
		producer.WithGroupName("tx-rnd-pg"), producer.WithInstanceName(instance("tx-rnd-doomed")))
	require.NoError(t, err)
	require.NoError(t, doomed.Start())
	start := time.Now()
	for i := range n {
		sender := p
		if l.fate[i] == 4 {
			sender = doomed
		}
		_, err := sender.SendMessageInTransaction(context.Background(), primitive.NewMessage("TxRandom", []byte(fmt.Sprintf("rnd-%d", i))))
		require.NoError(t, err)
	}
	require.NoError(t, doomed.Shutdown())
	committed := 0
	for i, f := range l.fate {
		if isCommitted(f, i) {
			committed++
		}
	}
	col := newCollector()
	pc := newPushConsumer(t, c, "tx-rnd-cg", "TxRandom", "*", col.handler)
	defer func() { _ = pc.Shutdown() }()
	// Timeout 1 s × (15 checks + 1), plus the time the sends took.
	limit := time.Since(start) + 16*time.Second + 30*time.Second
	testutil.Eventually(t, limit, func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return len(l.resolved) == n && col.total.Load() >= int64(committed)
	}, "every transaction resolved and every commit delivered")

	col.mu.Lock()
	for i, f := range l.fate {
		body := fmt.Sprintf("rnd-%d", i)
		if isCommitted(f, i) {
			require.Equal(t, 1, col.count[body], "committed %s delivered exactly once", body)
		} else {
			require.Zero(t, col.count[body], "rolled-back %s delivered", body)
		}
	}
	col.mu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	maxChecks := 0
	for body, k := range l.checks {
		i, _ := strconv.Atoi(strings.TrimPrefix(body, "rnd-"))
		require.GreaterOrEqual(t, l.fate[i], 2, "%s was resolved when sent and must never be checked", body)
		require.LessOrEqual(t, k, 15, "%s checked more than the maximum", body)
		maxChecks = max(maxChecks, k)
	}
	t.Logf("%d transactions, %d committed, %d checked, at most %d checks for one, %v", n, committed, len(l.checks), maxChecks, time.Since(start))
}
