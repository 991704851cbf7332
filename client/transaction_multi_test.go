package client

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/testutil"
)

// multiChecker answers checks of multi-message transactions by the body of their first
// message ("commit-…" → commit, else unknown) and records what it was asked, per
// transaction id.
type multiChecker struct {
	tp    *TransactionProducer
	mu    sync.Mutex
	asked map[string]int
	msgs  map[string][]*message.Message
	errs  []error
}

func (k *multiChecker) Check(_ context.Context, m *MessageExt) TransactionState {
	msgs, err := k.tp.TransactionMessages(m)
	k.mu.Lock()
	defer k.mu.Unlock()
	k.asked[m.MsgID]++
	k.msgs[m.MsgID] = msgs
	if err != nil || len(msgs) == 0 {
		k.errs = append(k.errs, fmt.Errorf("check of %s: %d messages, %w", m.MsgID, len(msgs), err))
		return TransactionUnknown
	}
	if strings.HasPrefix(string(msgs[0].Body), "commit-") {
		return TransactionCommit
	}
	return TransactionUnknown
}

func (k *multiChecker) times(id string) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.asked[id]
}

// TestTxMessagesCommitRollbackAndCheckBack: the messages of a committed transaction are
// all stored, each once, in their topics and queues; a rolled-back one stores none; an
// unknown one is checked once for the whole transaction, and the checker sees all its
// messages.
func TestTxMessagesCommitRollbackAndCheckBack(t *testing.T) {
	c := txCluster(t)
	raw := newRawBroker(t, c)
	raw.createTopic("TxMA", 2)
	raw.createTopic("TxMB", 1)
	cl := newTestClient(t, c)
	ck := &multiChecker{asked: map[string]int{}, msgs: map[string][]*message.Message{}}
	tp, err := cl.NewTransactionProducer("TxMPG", ck)
	require.NoError(t, err)
	ck.tp = tp
	defer func() { require.NoError(t, tp.Close()) }()
	ctx := context.Background()

	batch := func(prefix string) []*message.Message {
		var msgs []*message.Message
		for i, topic := range []string{"TxMA", "TxMB", "TxMA", "TxMA"} {
			m := message.NewMessage(topic, fmt.Appendf(nil, "%s-%d", prefix, i))
			m.SetTags(fmt.Sprintf("T%d", i))
			m.SetProperty("user", prefix)
			msgs = append(msgs, m)
		}
		return msgs
	}
	// stored returns the records of both topics whose body starts with prefix.
	stored := func(prefix string) map[string][]message.Record {
		out := map[string][]message.Record{}
		for _, tq := range []struct {
			topic string
			q     int32
		}{{"TxMA", 0}, {"TxMA", 1}, {"TxMB", 0}} {
			for _, rec := range raw.records(tq.topic, tq.q) {
				if strings.HasPrefix(string(rec.Body), prefix+"-") {
					out[string(rec.Body)] = append(out[string(rec.Body)], rec)
				}
			}
		}
		return out
	}

	msgs := batch("direct")
	var localSaw []*message.Message
	res, err := tp.SendMessagesInTransaction(ctx, msgs, func(_ context.Context, ms []*message.Message, r MessagesTransactionResult) TransactionState {
		localSaw = ms
		require.Len(t, r.Messages, 4)
		return TransactionCommit
	})
	require.NoError(t, err)
	require.Equal(t, TransactionCommit, res.State)
	require.Len(t, localSaw, 4)
	require.NotContains(t, msgs[0].Properties, message.PropertyTransactionPrepared, "the caller's messages are not modified")
	testutil.Eventually(t, 5*time.Second, func() bool { return len(stored("direct")) == 4 }, "all committed")
	got := stored("direct")
	for i, r := range res.Messages {
		body := fmt.Sprintf("direct-%d", i)
		require.Len(t, got[body], 1, body)
		rec := got[body][0]
		props := message.ParseProperties(rec.Properties)
		require.Equal(t, r.MsgID, props[message.PropertyUniqKey])
		require.Equal(t, localSaw[i].UniqKey(), r.MsgID)
		require.Equal(t, msgs[i].Topic, r.Topic)
		require.Equal(t, r.Topic, string(rec.Topic))
		require.Equal(t, r.QueueID, rec.QueueID)
		require.Equal(t, fmt.Sprintf("T%d", i), props[message.PropertyTags])
		require.Equal(t, "direct", props["user"])
		require.Equal(t, fmt.Sprint(i), props[PropertyTransactionItem])
		require.NotContains(t, props, message.PropertyRealTopic)
		require.Equal(t, message.TransactionCommitType, message.TransactionType(rec.SysFlag))
	}
	require.Equal(t, res.Messages[0].BrokerName, res.Messages[1].BrokerName)

	_, err = tp.SendMessagesInTransaction(ctx, batch("rolled"), func(context.Context, []*message.Message, MessagesTransactionResult) TransactionState {
		return TransactionRollback
	})
	require.NoError(t, err)

	res, err = tp.SendMessagesInTransaction(ctx, batch("commit"), func(context.Context, []*message.Message, MessagesTransactionResult) TransactionState {
		return TransactionUnknown
	})
	require.NoError(t, err)
	require.Equal(t, TransactionUnknown, res.State)
	require.Empty(t, stored("commit"), "nothing visible before the check")
	testutil.Eventually(t, 10*time.Second, func() bool { return len(stored("commit")) == 4 }, "check-back committed")
	for body, recs := range stored("commit") {
		require.Len(t, recs, 1, body)
	}
	require.Equal(t, 1, ck.times(res.TransactionID), "one check for the whole transaction")
	ck.mu.Lock()
	seen := ck.msgs[res.TransactionID]
	require.Empty(t, ck.errs)
	ck.mu.Unlock()
	require.Len(t, seen, 4)
	for i, m := range seen {
		require.Equal(t, msgs[i].Topic, m.Topic)
		require.Equal(t, fmt.Sprintf("commit-%d", i), string(m.Body))
		require.Equal(t, res.Messages[i].MsgID, m.UniqKey())
	}
	require.Empty(t, stored("rolled"), "a rolled-back transaction stores nothing")

	// Offsets ride along: applied on commit, not on rollback.
	broker := res.Messages[0].BrokerName
	tx := func(prefix string, offset int64) TxMessages {
		return TxMessages{Msgs: batch(prefix), Group: "cgTxOffsets", Offsets: []TxOffset{
			{Queue: MessageQueue{Topic: "TxMA", BrokerName: broker, QueueID: 1}, Offset: offset},
			{Queue: MessageQueue{Topic: "TxMB", BrokerName: broker, QueueID: 0}, Offset: offset + 1},
		}}
	}
	decide := func(st TransactionState) LocalMessagesTransaction {
		return func(context.Context, []*message.Message, MessagesTransactionResult) TransactionState { return st }
	}
	_, err = tp.SendTxMessages(ctx, tx("offrolled", 7), decide(TransactionRollback))
	require.NoError(t, err)
	require.Equal(t, int64(-1), raw.committed("cgTxOffsets", "TxMA", 1), "no offset after a rollback")
	_, err = tp.SendTxMessages(ctx, tx("offcommit", 3), decide(TransactionCommit))
	require.NoError(t, err)
	require.Equal(t, int64(3), raw.committed("cgTxOffsets", "TxMA", 1), "offsets applied by the commit")
	require.Equal(t, int64(4), raw.committed("cgTxOffsets", "TxMB", 0))
	testutil.Eventually(t, 5*time.Second, func() bool { return len(stored("offcommit")) == 4 }, "messages committed")
	require.Empty(t, stored("offrolled"))

	// Conditional offsets: the commit happens only from the offsets named.
	cond := func(prefix string, from, to int64) TxMessages {
		tx := tx(prefix, to)
		tx.Offsets[0].Conditional, tx.Offsets[0].From = true, from
		return tx
	}
	res, err = tp.SendTxMessages(ctx, cond("condstale", 0, 9), decide(TransactionCommit))
	require.ErrorIs(t, err, ErrOffsetConflict, "TxMA:1 is at 3, not 0")
	require.Equal(t, TransactionRollback, res.State)
	require.Equal(t, int64(3), raw.committed("cgTxOffsets", "TxMA", 1), "a conflict moves nothing")
	_, err = tp.SendTxMessages(ctx, cond("condok", 3, 5), decide(TransactionCommit))
	require.NoError(t, err)
	require.Equal(t, int64(5), raw.committed("cgTxOffsets", "TxMA", 1))
	testutil.Eventually(t, 5*time.Second, func() bool { return len(stored("condok")) == 4 }, "messages committed")
	fresh := cond("condfresh", NoOffset, 1)
	fresh.Group = "cgTxOffsetsFresh"
	_, err = tp.SendTxMessages(ctx, fresh, decide(TransactionCommit))
	require.NoError(t, err, "NoOffset: the group has none yet")
	require.Equal(t, int64(1), raw.committed("cgTxOffsetsFresh", "TxMA", 1))
	_, err = tp.SendTxMessages(ctx, fresh, decide(TransactionCommit))
	require.ErrorIs(t, err, ErrOffsetConflict, "the group has one now")
	require.Empty(t, stored("condstale"), "nothing of a refused transaction")
}

// TestTxMessagesRefusedBeforeSending: bad message lists and topics without a common
// broker group are refused before anything is sent.
func TestTxMessagesRefusedBeforeSending(t *testing.T) {
	c := txCluster(t)
	cl := newTestClient(t, c)
	tp, err := cl.NewTransactionProducer("TxMPG2", TransactionCheckerFunc(func(context.Context, *MessageExt) TransactionState {
		return TransactionUnknown
	}))
	require.NoError(t, err)
	defer func() { require.NoError(t, tp.Close()) }()
	ctx := context.Background()
	ran := false
	local := func(context.Context, []*message.Message, MessagesTransactionResult) TransactionState {
		ran = true
		return TransactionCommit
	}
	many := make([]*message.Message, MaxTransactionMessages+1)
	for i := range many {
		many[i] = message.NewMessage("TxX", []byte("x"))
	}
	for name, msgs := range map[string][]*message.Message{
		"none":      nil,
		"too many":  many,
		"nil":       {message.NewMessage("TxX", []byte("x")), nil},
		"bad topic": {message.NewMessage("Tx X", []byte("x"))},
		"no body":   {message.NewMessage("TxX", nil)},
	} {
		_, err := tp.SendMessagesInTransaction(ctx, msgs, local)
		require.ErrorIs(t, err, ErrIllegalMessage, name)
	}
	_, err = tp.SendMessagesInTransaction(ctx, []*message.Message{message.NewMessage("TxX", []byte("x"))}, nil)
	require.ErrorIs(t, err, ErrInvalidOptions)

	// Two topics on different broker groups (routes planted in the cache).
	now := time.Now()
	cl.routes.Lock()
	cl.routes.m["TxOnA"] = &topicRoute{topic: "TxOnA", queues: []queue{{broker: "a", addr: "127.0.0.1:1", id: 0}},
		brokers: []string{"127.0.0.1:1"}, fetched: now}
	cl.routes.m["TxOnB"] = &topicRoute{topic: "TxOnB", queues: []queue{{broker: "b", addr: "127.0.0.1:2", id: 0}},
		brokers: []string{"127.0.0.1:2"}, fetched: now}
	cl.routes.m["TxOnAB"] = &topicRoute{topic: "TxOnAB", queues: []queue{{broker: "a", addr: "127.0.0.1:1", id: 0},
		{broker: "b", addr: "127.0.0.1:2", id: 0}, {broker: "b", addr: "127.0.0.1:2", id: 1}},
		brokers: []string{"127.0.0.1:1", "127.0.0.1:2"}, fetched: now}
	cl.routes.Unlock()
	_, err = tp.SendMessagesInTransaction(ctx, []*message.Message{message.NewMessage("TxOnA", []byte("x")),
		message.NewMessage("TxOnB", []byte("y"))}, local)
	require.ErrorIs(t, err, ErrNoCommonBroker)
	require.False(t, ran)

	// Offsets choose the broker group; it must host every topic.
	onA := MessageQueue{Topic: "TxOnA", BrokerName: "a", QueueID: 0}
	onB := MessageQueue{Topic: "TxOnB", BrokerName: "b", QueueID: 0}
	for name, tc := range map[string]struct {
		tx   TxMessages
		want error
	}{
		"group without offsets": {TxMessages{Msgs: []*message.Message{message.NewMessage("TxOnAB", []byte("x"))}, Group: "g"}, ErrIllegalMessage},
		"offsets without group": {TxMessages{Msgs: []*message.Message{message.NewMessage("TxOnAB", []byte("x"))},
			Offsets: []TxOffset{{Queue: onA, Offset: 1}}}, ErrIllegalMessage},
		"negative offset": {TxMessages{Msgs: []*message.Message{message.NewMessage("TxOnAB", []byte("x"))}, Group: "g",
			Offsets: []TxOffset{{Queue: onA, Offset: -1}}}, ErrIllegalMessage},
		"offsets on two groups": {TxMessages{Msgs: []*message.Message{message.NewMessage("TxOnAB", []byte("x"))}, Group: "g",
			Offsets: []TxOffset{{Queue: onA, Offset: 1}, {Queue: onB, Offset: 1}}}, ErrNoCommonBroker},
		"offsets on a group without the topics": {TxMessages{Msgs: []*message.Message{message.NewMessage("TxOnB", []byte("x"))},
			Group: "g", Offsets: []TxOffset{{Queue: onA, Offset: 1}}}, ErrNoCommonBroker},
	} {
		_, err := tp.SendTxMessages(ctx, tc.tx, local)
		require.ErrorIs(t, err, tc.want, name)
	}
	require.False(t, ran)
	qs, _, err := tp.planQueues(ctx, []*message.Message{message.NewMessage("TxOnAB", []byte("x"))}, "", "a")
	require.NoError(t, err)
	require.Equal(t, "a", qs[0].broker, "the offsets' group is the transaction's")

	// The plan puts every message on the one group all topics share.
	items := []*message.Message{message.NewMessage("TxOnAB", []byte("x")), message.NewMessage("TxOnB", []byte("y")),
		message.NewMessage("TxOnAB", []byte("z"))}
	for range 4 {
		qs, _, err := tp.planQueues(ctx, items, "", "")
		require.NoError(t, err)
		for i, q := range qs {
			require.Equal(t, "b", q.broker, "message %d", i)
		}
	}
}
