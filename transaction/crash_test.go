package transaction

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/internal/mmap"
	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/store"
)

// errKilled is what every store write fails with once the simulated broker is killed.
var errKilled = errors.New("broker killed")

// killStore is a store whose broker is killed (SIGKILL) just before its killAt-th write:
// that write and every later one fail, and onKill runs once at the kill point. What was
// written before stays, as a killed process's page cache does.
type killStore struct {
	*store.Store
	mu     sync.Mutex
	writes int
	killAt int // 0: never
	onKill func()
}

func (k *killStore) PutMessage(rec *message.Record, wait bool) (store.PutResult, error) {
	k.mu.Lock()
	k.writes++
	if k.writes == k.killAt && k.onKill != nil {
		k.onKill()
		k.onKill = nil
	}
	dead := k.killAt > 0 && k.writes >= k.killAt
	k.mu.Unlock()
	if dead {
		return store.PutResult{}, errKilled
	}
	return k.Store.PutMessage(rec, wait)
}

func (k *killStore) count() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.writes
}

// TestCheckCommitSurvivesKill kills the broker before every store write of transactions
// that are resolved by check-back (copy, commit, op entry, ...), restarts it from what
// was stored then — the store's records and the cursor file as last written — and lets
// the producer answer commit to every check, before and after. Every transaction must end
// up committed exactly once: a kill between the committed message and its op entry must
// not let the check after the restart commit it again.
func TestCheckCommitSurvivesKill(t *testing.T) {
	const txns = 3
	total, prepared := runKillScenario(t, txns, 0)
	require.Greater(t, total, prepared)
	for killAt := prepared + 1; killAt <= total+1; killAt++ {
		t.Run(fmt.Sprintf("kill-before-write-%d", killAt), func(t *testing.T) { runKillScenario(t, txns, killAt) })
	}
}

// runKillScenario runs the scenario with the broker killed before write killAt (0: not
// killed) and returns how many store writes the service made before the restart, and how
// many of them were Prepare's.
func runKillScenario(t *testing.T, txns, killAt int) (writes, prepared int) {
	fsys, clock := mmap.NewMemFS(), newTestClock()
	st := openTestStore(t, fsys, clock)
	defer func() { _ = st.Shutdown(context.Background()) }()
	ks := &killStore{Store: st, killAt: killAt}
	checker := newScriptedChecker(t)
	svc := testService(t, ks, fsys, clock, checker, nil)
	cursorPath := "txn/" + cursorFileName
	var cursorAtKill []byte // nil: no cursor file yet
	ks.onKill = func() {
		if ok, _ := fsys.Exists(cursorPath); ok {
			b, err := fsys.ReadFile(cursorPath)
			require.NoError(t, err)
			cursorAtKill = b
		}
	}
	e := &env{t: t, fs: fsys, clock: clock, st: st, checker: checker, svc: svc}
	always := make([]int32, 20)
	for i := range always {
		always[i] = message.TransactionCommitType
	}
	for i := range txns {
		u := fmt.Sprintf("K%d", i)
		e.prepare("Orders", 0, u)
		checker.mu.Lock()
		checker.mu.answers[u] = always
		checker.mu.Unlock()
	}
	prepared = ks.count()
	e.round()
	for range 3 {
		e.clock.advance(6 * time.Second)
		e.round()
	}
	writes = ks.count()
	if killAt == 0 {
		require.Equal(t, 0, svc.Stats().Pending)
		requireCommittedOnce(e, txns)
		return writes, prepared
	}

	// The kill: nothing after it is stored or persisted. Shutdown's cursor write is
	// undone; the store keeps every record written before the kill, and recovers from a
	// crash: an abort file and no checkpoint make it scan and check every record.
	ctx := context.Background()
	_ = svc.Shutdown(ctx)
	if cursorAtKill != nil {
		require.NoError(t, fsys.WriteFileAtomic(cursorPath, cursorAtKill))
	} else {
		_ = fsys.Remove(cursorPath)
	}
	require.NoError(t, st.Shutdown(ctx))
	require.NoError(t, fsys.Remove("store/checkpoint"))
	abort, err := fsys.Create("store/abort")
	require.NoError(t, err)
	require.NoError(t, abort.Close())
	end := st.CommitLog().MaxOffset()

	// The restart, with the same producer: it answers commit to every check.
	e.st = openTestStore(t, fsys, clock)
	defer func() { _ = e.st.Shutdown(context.Background()) }()
	require.Equal(t, end, e.st.CommitLog().MaxOffset(), "recovery kept every record")
	e.svc = testService(t, e.st, fsys, clock, checker, nil)
	for step := 0; e.svc.Stats().Pending > 0; step++ {
		require.Less(t, step, 20, "transactions still pending after the restart: %+v", e.svc.Stats())
		e.clock.advance(10 * time.Second)
		e.round()
	}
	e.round()
	requireCommittedOnce(e, txns)
	return writes, prepared
}

// requireCommittedOnce checks that each of the transactions K0..K<n-1> has exactly one
// committed message in Orders/0.
func requireCommittedOnce(e *env, n int) {
	e.t.Helper()
	seen := map[string]int{}
	for _, rec := range e.queue("Orders", 0) {
		seen[prop(&rec, message.PropertyUniqKey)]++
	}
	for i := range n {
		u := fmt.Sprintf("K%d", i)
		require.Equal(e.t, 1, seen[u], "%s committed %d times", u, seen[u])
	}
}
