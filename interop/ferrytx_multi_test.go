package interop

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/client"
	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/testutil"
)

// multiTxChecker answers the checks of multi-message transactions by their first
// message's body ("check-commit-…" → commit, "check-rollback-…" → rollback) and counts
// the checks per transaction id.
type multiTxChecker struct {
	tp     *client.TransactionProducer
	mu     sync.Mutex
	checks map[string]int
	sizes  map[string]int
}

func (k *multiTxChecker) Check(_ context.Context, m *client.MessageExt) client.TransactionState {
	msgs, err := k.tp.TransactionMessages(m)
	k.mu.Lock()
	k.checks[m.MsgID]++
	k.sizes[m.MsgID] = len(msgs)
	k.mu.Unlock()
	if err != nil || len(msgs) == 0 {
		return client.TransactionUnknown
	}
	switch b := string(msgs[0].Body); {
	case strings.HasPrefix(b, "check-commit-"):
		return client.TransactionCommit
	case strings.HasPrefix(b, "check-rollback-"):
		return client.TransactionRollback
	}
	return client.TransactionUnknown
}

// TestFerryTxMessagesDelivered: Ferry's producer sends transactions of three messages
// over two topics — committed, rolled back, and left unknown for the check-back to commit
// or roll back. The official push consumer and Ferry's push consumer each receive every
// message of every committed transaction exactly once, as ordinary messages, and nothing
// of a rolled-back one; each unknown transaction is checked once, not once per message.
func TestFerryTxMessagesDelivered(t *testing.T) {
	const topicA, topicB, group, n = "FerryTxMultiA", "FerryTxMultiB", "ferrytx-multi-pg", 8
	c := testutil.StartCluster(t, txClusterOptions())
	createTopic(t, c, topicA, 4)
	createTopic(t, c, topicB, 2)

	cl, err := client.New(client.WithNameServers(c.NamesrvAddr), client.WithInstanceName(instance("ferrytx-multi")))
	require.NoError(t, err)
	defer func() { require.NoError(t, cl.Close()) }()
	ck := &multiTxChecker{checks: map[string]int{}, sizes: map[string]int{}}
	tp, err := cl.NewTransactionProducer(group, ck)
	require.NoError(t, err)
	ck.tp = tp
	defer func() { require.NoError(t, tp.Close()) }()

	// Consumers first, so deliveries are counted from the start of each queue.
	official := map[string]*collector{topicA: newCollector(), topicB: newCollector()}
	ferry := newRecorder()
	for _, topic := range []string{topicA, topicB} {
		pc := newPushConsumer(t, c, "ferrytx-multi-cg-"+topic, topic, "*", official[topic].handler)
		defer func() { _ = pc.Shutdown() }()
		newFerryConsumer(t, c, "ferrytx-multi-fcg-"+topic, topic, "*", ferryHandler(ferry, topic))
	}

	ctx := context.Background()
	txn := func(kind string, i int) []*message.Message {
		return []*message.Message{
			message.NewMessage(topicA, fmt.Appendf(nil, "%s-%d-0", kind, i)),
			message.NewMessage(topicB, fmt.Appendf(nil, "%s-%d-1", kind, i)),
			message.NewMessage(topicA, fmt.Appendf(nil, "%s-%d-2", kind, i)),
		}
	}
	outcome := map[string]client.TransactionState{
		"commit": client.TransactionCommit, "rollback": client.TransactionRollback,
		"check-commit": client.TransactionUnknown, "check-rollback": client.TransactionUnknown,
	}
	var unknownIDs []string
	for i := range n {
		for kind, st := range outcome {
			res, err := tp.SendMessagesInTransaction(ctx, txn(kind, i),
				func(context.Context, []*message.Message, client.MessagesTransactionResult) client.TransactionState {
					return st
				})
			require.NoError(t, err, "%s-%d", kind, i)
			require.Len(t, res.Messages, 3)
			if st == client.TransactionUnknown {
				unknownIDs = append(unknownIDs, res.TransactionID)
			}
		}
	}

	want := map[string]int{}
	for i := range n {
		for _, kind := range []string{"commit", "check-commit"} {
			for k := range 3 {
				want[fmt.Sprintf("%s-%d-%d", kind, i, k)] = 1
			}
		}
	}
	officialSeen := func() map[string]int {
		all := map[string]int{}
		for _, col := range official {
			col.mu.Lock()
			for b, k := range col.count {
				all[b] += k
			}
			col.mu.Unlock()
		}
		return all
	}
	ferrySeen := func() map[string]int {
		ferry.mu.Lock()
		defer ferry.mu.Unlock()
		all := map[string]int{}
		for b, k := range ferry.seen {
			all[b] = k
		}
		return all
	}
	testutil.Eventually(t, 60*time.Second, func() bool {
		return len(officialSeen()) >= len(want) && len(ferrySeen()) >= len(want)
	}, "every committed message delivered to both consumers")
	// Rounds of the check-back service go by, so a late duplicate or a rolled-back
	// message would have arrived: wait until every unknown transaction was checked and
	// the rolled-back ones were answered.
	testutil.Eventually(t, 30*time.Second, func() bool {
		ck.mu.Lock()
		defer ck.mu.Unlock()
		return len(ck.checks) == len(unknownIDs)
	}, "every unknown transaction checked")
	require.Equal(t, want, officialSeen(), "the official consumer: each committed message once, nothing else")
	require.Equal(t, want, ferrySeen(), "Ferry's consumer: each committed message once, nothing else")
	ck.mu.Lock()
	defer ck.mu.Unlock()
	for _, id := range unknownIDs {
		require.Equal(t, 1, ck.checks[id], "transaction %s checked once", id)
		require.Equal(t, 3, ck.sizes[id], "the check carries the whole transaction")
	}
}
