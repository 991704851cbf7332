package interop

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
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

const (
	multiKillGroup  = "ferrytx-multi-kill-pg"
	multiKillTopicA = "FerryTxMultiKillA"
	multiKillTopicB = "FerryTxMultiKillB"
	multiKillItems  = 64
)

// multiKillPad makes each message of the kill test about 1 KiB.
var multiKillPad = strings.Repeat("p", 1000)

// multiKillTxn is transaction i of the multi-message kill test: multiKillItems messages
// "mk-<i>-<k>" alternating between the two topics.
func multiKillTxn(i int) []*message.Message {
	msgs := make([]*message.Message, multiKillItems)
	for k := range msgs {
		topic := multiKillTopicA
		if k%2 == 1 {
			topic = multiKillTopicB
		}
		msgs[k] = message.NewMessage(topic, fmt.Appendf(nil, "mk-%d-%d", i, k))
		msgs[k].SetProperty("pad", multiKillPad) // a longer commit: more kills land inside it
	}
	return msgs
}

// multiKillCommits is whether transaction i is to be committed (else rolled back), as
// both its local transaction and the check-back decide.
func multiKillCommits(i int) bool { return i%3 != 2 }

// multiKillChecker answers checks by multiKillCommits, recording when it last answered.
type multiKillChecker struct {
	tp   atomic.Pointer[client.TransactionProducer]
	last atomic.Int64 // Unix ns of the last check
}

func (k *multiKillChecker) Check(_ context.Context, m *client.MessageExt) client.TransactionState {
	k.last.Store(time.Now().UnixNano())
	tp := k.tp.Load()
	if tp == nil {
		return client.TransactionUnknown
	}
	msgs, err := tp.TransactionMessages(m)
	if err != nil || len(msgs) == 0 {
		return client.TransactionUnknown
	}
	var i, item int
	if _, err := fmt.Sscanf(string(msgs[0].Body), "mk-%d-%d", &i, &item); err != nil {
		return client.TransactionUnknown
	}
	if multiKillCommits(i) {
		return client.TransactionCommit
	}
	return client.TransactionRollback
}

// newMultiKillProducer returns a transaction producer of multiKillGroup on its own client.
func newMultiKillProducer(ns, instance string) (*client.Client, *client.TransactionProducer, *multiKillChecker, error) {
	cl, err := client.New(client.WithNameServers(ns), client.WithInstanceName(instance))
	if err != nil {
		return nil, nil, nil, err
	}
	ck := &multiKillChecker{}
	tp, err := cl.NewTransactionProducer(multiKillGroup, ck)
	if err != nil {
		_ = cl.Close()
		return nil, nil, nil, err
	}
	ck.tp.Store(tp)
	return cl, tp, ck, nil
}

// multiKillTx is transaction i of the kill test with its consumer offset: group
// "mkg-<i>" consumes topic A's queue 0 of broker from offset i+1 — one group per
// transaction, so which offsets were applied tells which transactions committed.
func multiKillTx(i int, broker string) client.TxMessages {
	return client.TxMessages{Msgs: multiKillTxn(i), Group: multiKillOffsetGroup(i), Offsets: []client.TxOffset{{
		Queue: client.MessageQueue{Topic: multiKillTopicA, BrokerName: broker, QueueID: 0}, Offset: int64(i) + 1}}}
}

// multiKillOffsetGroup is the consumer group whose offset transaction i commits.
func multiKillOffsetGroup(i int) string { return "mkg-" + strconv.Itoa(i) }

// ferryTxMultiChild is the child side of TestFerryTxMessagesSurviveKills (args: the name
// server's address, the first transaction number and the broker's name): it sends
// transactions (multiKillTx) from that number on, forever, printing "P <i>" from each
// local transaction (the half message is stored then). Local transactions answer unknown
// for every fourth transaction and multiKillCommits otherwise; failed sends (the broker
// is down) are retried with the next number.
func ferryTxMultiChild(args []string) {
	start, _ := strconv.Atoi(args[1])
	broker := args[2]
	_, tp, _, err := newMultiKillProducer(args[0], "ferrytx-multi-child-"+args[1])
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(2)
	}
	fmt.Println("READY")
	deadline := time.Now().Add(3 * time.Minute) // the test kills it long before
	for i := start; time.Now().Before(deadline); i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		_, err := tp.SendTxMessages(ctx, multiKillTx(i, broker),
			func(context.Context, []*message.Message, client.MessagesTransactionResult) client.TransactionState {
				fmt.Println("P", i)
				switch {
				case i%4 == 0:
					return client.TransactionUnknown
				case multiKillCommits(i):
					return client.TransactionCommit
				}
				return client.TransactionRollback
			})
		cancel()
		if err != nil {
			<-time.After(50 * time.Millisecond) // the broker may be down; do not spin
		}
	}
	os.Exit(3)
}

// TestFerryTxOffsetsResumeOfficialConsumer: consume-transform-produce. Ferry's pull
// consumer reads inputs the official producer sent; Ferry's producer sends the outputs of
// the first six with the input group's offset in one committed transaction, and of the
// rest in one rolled back. The official push consumer of the input group then starts at
// the committed offset — it gets exactly the last four inputs — and the outputs of the
// first six are consumable, those of the rolled-back transaction are not.
func TestFerryTxOffsetsResumeOfficialConsumer(t *testing.T) {
	const in, out, inGroup, n = "FerryTxPipeIn", "FerryTxPipeOut", "ferrytx-pipe-in-cg", 10
	c := testutil.StartCluster(t, txClusterOptions())
	createTopic(t, c, in, 1)
	createTopic(t, c, out, 2)
	p := newProducer(t, c, "ferrytx-pipe-src")
	for i := range n {
		_, err := p.SendSync(context.Background(), primitive.NewMessage(in, fmt.Appendf(nil, "in-%d", i)))
		require.NoError(t, err)
	}

	cl, err := client.New(client.WithNameServers(c.NamesrvAddr), client.WithInstanceName(instance("ferrytx-pipe")))
	require.NoError(t, err)
	defer func() { require.NoError(t, cl.Close()) }()
	tp, err := cl.NewTransactionProducer("ferrytx-pipe-pg", client.TransactionCheckerFunc(
		func(context.Context, *client.MessageExt) client.TransactionState { return client.TransactionUnknown }))
	require.NoError(t, err)
	defer func() { require.NoError(t, tp.Close()) }()
	pc, err := cl.NewPullConsumer(inGroup)
	require.NoError(t, err)
	ctx := context.Background()
	mqs, err := pc.FetchQueues(ctx, in)
	require.NoError(t, err)
	require.Len(t, mqs, 1)
	var inputs []*client.MessageExt
	for off := int64(0); len(inputs) < n; {
		r, err := pc.Pull(ctx, mqs[0], off, 32, "*")
		require.NoError(t, err)
		inputs = append(inputs, r.Messages...)
		off = r.NextOffset
	}
	transform := func(batch []*client.MessageExt, st client.TransactionState) {
		tx := client.TxMessages{Group: inGroup, Offsets: []client.TxOffset{
			{Queue: mqs[0], Offset: batch[len(batch)-1].QueueOffset + 1}}}
		for _, m := range batch {
			tx.Msgs = append(tx.Msgs, message.NewMessage(out, append([]byte("out-"), m.Body...)))
		}
		res, err := tp.SendTxMessages(ctx, tx, func(context.Context, []*message.Message, client.MessagesTransactionResult) client.TransactionState {
			return st
		})
		require.NoError(t, err)
		require.Equal(t, st, res.State)
	}
	transform(inputs[:6], client.TransactionCommit)
	transform(inputs[6:], client.TransactionRollback)
	committed, err := pc.CommittedOffset(ctx, mqs[0])
	require.NoError(t, err)
	require.Equal(t, inputs[5].QueueOffset+1, committed)

	resumed, outputs := newCollector(), newCollector()
	pin := newPushConsumer(t, c, inGroup, in, "*", resumed.handler)
	defer func() { _ = pin.Shutdown() }()
	pout := newPushConsumer(t, c, "ferrytx-pipe-out-cg", out, "*", outputs.handler)
	defer func() { _ = pout.Shutdown() }()
	testutil.Eventually(t, 30*time.Second, func() bool {
		return resumed.total.Load() >= n-6 && outputs.total.Load() >= 6
	}, "the rest of the inputs and the committed outputs delivered")
	want := map[string]int{}
	for i := 6; i < n; i++ {
		want[fmt.Sprintf("in-%d", i)] = 1
	}
	resumed.mu.Lock()
	require.Equal(t, want, resumed.count, "the official consumer resumes at the transaction's offset")
	resumed.mu.Unlock()
	want = map[string]int{}
	for i := range 6 {
		want[fmt.Sprintf("out-in-%d", i)] = 1
	}
	outputs.mu.Lock()
	require.Equal(t, want, outputs.count, "the committed outputs, once; none of the rolled-back ones")
	outputs.mu.Unlock()
}
