package interop

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/client"
	"github.com/ferrymq/ferry/internal/testkit"
	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/testutil"
)

const (
	ferryTxGroup = "ferrytx-kill-pg"
	ferryTxTopic = "FerryTxKillTopic"
)

// ferryTxChild is the child side of TestFerryTxSurviveProducerKill (args: the name
// server's address and a count n): a process with Ferry's transactional producer that
// sends n half messages whose local transactions never finish, prints SENT once every one
// of them is stored, and waits to be killed.
func ferryTxChild(args []string) {
	ns := args[0]
	n, _ := strconv.Atoi(args[1])
	if err := runFerryTxChild(ns, n); err != nil {
		fmt.Println("ERR", err)
		os.Exit(2)
	}
	fmt.Println("SENT")
	<-time.After(2 * time.Minute) // the test kills it long before; never outlive it for long
	os.Exit(3)
}

// runFerryTxChild sends n transactions concurrently and returns once all their half
// messages are stored, their local transactions blocked before END_TRANSACTION.
func runFerryTxChild(ns string, n int) error {
	cl, err := client.New(client.WithNameServers(ns), client.WithInstanceName("ferrytx-child"))
	if err != nil {
		return err
	}
	tp, err := cl.NewTransactionProducer(ferryTxGroup, client.TransactionCheckerFunc(
		func(context.Context, *client.MessageExt) client.TransactionState { return client.TransactionUnknown }))
	if err != nil {
		return err
	}
	// Route and header codec first, so the concurrent sends below find both settled.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := tp.Register(ctx, ferryTxTopic); err != nil {
		return err
	}
	stored := make(chan struct{}, n)
	failed := make(chan error, n)
	for i := range n {
		go func() {
			msg := message.NewMessage(ferryTxTopic, []byte(fmt.Sprintf("tx-%d", i)))
			_, err := tp.SendInTransaction(context.Background(), msg,
				func(context.Context, *message.Message, client.SendResult) client.TransactionState {
					stored <- struct{}{}
					select {} // killed before ending the transaction
				})
			failed <- fmt.Errorf("tx-%d: %w", i, err)
		}()
	}
	timeout := time.After(30 * time.Second)
	for range n {
		select {
		case <-stored:
		case err := <-failed:
			return err
		case <-timeout:
			return errors.New("half messages not stored within 30 s")
		}
	}
	return nil
}

// ferryTxDecider answers checks: commit for even transaction numbers, rollback for odd.
type ferryTxDecider struct {
	mu     sync.Mutex
	checks map[string]int
}

func (d *ferryTxDecider) Check(_ context.Context, m *client.MessageExt) client.TransactionState {
	d.mu.Lock()
	d.checks[string(m.Body)]++
	d.mu.Unlock()
	i, _ := strconv.Atoi(strings.TrimPrefix(string(m.Body), "tx-"))
	if i%2 == 0 {
		return client.TransactionCommit
	}
	return client.TransactionRollback
}

func (d *ferryTxDecider) checked() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.checks)
}

// TestFerryTxSurviveProducerKill: transactions started by Ferry's producer in a child
// process killed with SIGKILL after storing its half messages and before ending them are
// checked back and resolved by a new Ferry transaction producer of the group in this
// process (commit even, roll back odd); the official push consumer gets exactly the
// committed ones, once each.
func TestFerryTxSurviveProducerKill(t *testing.T) {
	c := testutil.StartCluster(t, txClusterOptions())
	createTopic(t, c, ferryTxTopic, 4)
	const n = 40
	child := testkit.StartChild(t, "ferrytx", c.NamesrvAddr, strconv.Itoa(n))
	require.Equal(t, "SENT", child.Line(t, 60*time.Second), "child output")
	child.Kill(t)

	cl, err := client.New(client.WithNameServers(c.NamesrvAddr), client.WithInstanceName(instance("ferrytx-decider")))
	require.NoError(t, err)
	defer func() { require.NoError(t, cl.Close()) }()
	d := &ferryTxDecider{checks: map[string]int{}}
	tp, err := cl.NewTransactionProducer(ferryTxGroup, d)
	require.NoError(t, err)
	defer func() { require.NoError(t, tp.Close()) }()
	// Unlike the official client, no warm-up send is needed for the broker to know the group.
	require.NoError(t, tp.Register(context.Background(), ferryTxTopic))

	col := newCollector()
	pc := newPushConsumer(t, c, "ferrytx-kill-cg", ferryTxTopic, "*", col.handler)
	defer func() { _ = pc.Shutdown() }()
	testutil.Eventually(t, 90*time.Second, func() bool {
		return col.total.Load() >= n/2 && d.checked() == n
	}, "every transaction checked, the committed ones delivered")
	col.mu.Lock()
	for i := range n {
		want := 0
		if i%2 == 0 {
			want = 1
		}
		require.Equal(t, want, col.count[fmt.Sprintf("tx-%d", i)], "tx-%d", i)
	}
	col.mu.Unlock()
	d.mu.Lock()
	defer d.mu.Unlock()
	for b, k := range d.checks {
		require.LessOrEqual(t, k, 3, "%s checked %d times after it was resolved", b, k)
	}
}
