//go:build linux

package interop

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/client"
	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
)

// What continues on the new master after an automatic failover (issue 21, "What
// continues"): ordered consumption, a pending transaction, a due delayed message.

// foContinueKeys is how many sharding keys the ordered producer cycles through.
const foContinueKeys = 8

// foOrdered records an orderly consumer's deliveries: per key, the sequence numbers in
// the order handled.
type foOrdered struct {
	mu    sync.Mutex
	byKey map[int][]int
	log   map[int][]string // per key, each delivery: seq@queue:offset at time
}

// add records "k<key>/<seq>" bodies.
func (o *foOrdered) add(t *testing.T, msgs []*client.MessageExt) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, m := range msgs {
		var k, seq int
		_, err := fmt.Sscanf(string(m.Body), "k%d/%d", &k, &seq)
		assert.NoError(t, err, string(m.Body))
		o.byKey[k] = append(o.byKey[k], seq)
		o.log[k] = append(o.log[k], fmt.Sprintf("%d@q%d:%d %s from %s", seq, m.Queue.QueueID, m.QueueOffset, time.Now().Format("15:04:05.000"), m.StoreHost))
	}
}

// has reports whether key's seq was delivered.
func (o *foOrdered) has(key, seq int) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, s := range o.byKey[key] {
		if s == seq {
			return true
		}
	}
	return false
}

// outOfOrder returns, for each key, the first delivery that came before one of the key's
// earlier messages had been delivered (a redelivery of an earlier message is in order).
func (o *foOrdered) outOfOrder() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var bad []string
	for k, seqs := range o.byKey {
		next := 0 // every seq below next was delivered
		for i, s := range seqs {
			if s > next {
				bad = append(bad, fmt.Sprintf("key %d: seq %d at delivery %d before seq %d; deliveries %v", k, s, i, next, o.log[k][:min(len(o.log[k]), i+8)]))
				break
			}
			if s == next {
				next++
			}
		}
	}
	return bad
}

// TestFailoverContinuesOnNewMaster: three controllers and a group of three brokers in
// controller mode. Before the master is SIGKILLed, an orderly consumer of Ferry's client
// consumes keyed messages that a producer (HashSelector) sends without a pause, a
// transactional producer leaves a half message pending (its local transaction answers
// unknown), and a message is sent with delay level 3 (10 s). After the failover, on the
// new master:
//   - ordered consumption continues, every key's messages in send order, and goes on past
//     the 30 s the consumer trusts a lock it could not renew: so it re-took its queue
//     locks on the new master (the old one is gone);
//   - the pending transaction is checked back (the checker answers commit once the
//     master is dead) and its message is delivered, stored by the new master;
//   - the delayed message is delivered when due, put back by the new master;
//   - a topic's dedup window holds: a retry of a message stored before the kill is
//     answered by the new master with the first send's queue and offset, and not stored.
func TestFailoverContinuesOnNewMaster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes; -short")
	}
	// Quick transaction checks that do not give up during the failover, and topics copied
	// to the slaves at once.
	c := newFOCluster(t, "", []string{foGroup}, 3,
		"  transactionCheckInterval: 1s\n  transactionTimeout: 1s\n  transactionCheckMax: 1000\n  slaveSyncInterval: 1s\n")
	v := c.settled(t, foGroup, 1, 3, 60*time.Second)
	const orderTopic, txTopic, delayTopic = "FoOrder", "FoTx", "FoDelay"
	for _, topic := range []string{orderTopic, txTopic, delayTopic} {
		c.createTopic(t, topic)
		c.waitTopicEverywhere(t, foGroup, topic)
	}
	// Routes refreshed every second: the transactional producer sends nothing after the
	// failover, and a broker checks back only producers that heartbeat to it.
	newClient := func() *client.Client {
		cl, err := client.New(client.WithNameServers(c.nsAddr), client.WithInstanceName(instance("fo-cont")),
			client.WithRouteRefresh(time.Second))
		require.NoError(t, err)
		t.Cleanup(func() { _ = cl.Close() })
		return cl
	}

	ordered := &foOrdered{byKey: map[int][]int{}, log: map[int][]string{}}
	oc, err := newClient().NewPushConsumer("fo-order-cg", orderTopic, "*", func(_ context.Context, msgs []*client.MessageExt) client.ConsumeResult {
		ordered.add(t, msgs)
		return client.ConsumeSuccess
	}, client.WithOrderly(), client.WithConsumeFrom(client.ConsumeFromFirstOffset), client.WithConsumeBatch(4))
	require.NoError(t, err)
	require.NoError(t, oc.Start(context.Background()))
	t.Cleanup(func() { _ = oc.Close() })

	type delivered struct {
		store        string // host:port of the broker that stored it
		born, stored time.Time
	}
	var dmu sync.Mutex
	got := map[string]delivered{}
	record := func(_ context.Context, msgs []*client.MessageExt) client.ConsumeResult {
		dmu.Lock()
		defer dmu.Unlock()
		for _, m := range msgs {
			got[string(m.Body)] = delivered{store: m.StoreHost.String(), born: m.BornTime, stored: m.StoreTime}
		}
		return client.ConsumeSuccess
	}
	for _, topic := range []string{txTopic, delayTopic} {
		pc, err := newClient().NewPushConsumer("fo-"+strings.ToLower(topic)+"-cg", topic, "*", record,
			client.WithConsumeFrom(client.ConsumeFromFirstOffset))
		require.NoError(t, err)
		require.NoError(t, pc.Start(context.Background()))
		t.Cleanup(func() { _ = pc.Close() })
	}
	deliveredAs := func(body string) (delivered, bool) {
		dmu.Lock()
		defer dmu.Unlock()
		d, ok := got[body]
		return d, ok
	}

	// The ordered load: key seq%8, each key's messages numbered, one send at a time.
	op, err := newClient().NewProducer("fo-order-pg", client.WithSelector(client.HashSelector))
	require.NoError(t, err)
	var (
		omu     sync.Mutex
		acked   = map[int]int{} // per key, 1 + the last acknowledged seq (sends are in order)
		ackedAt = map[int]time.Time{}
		stop    atomic.Bool
		done    = make(chan struct{})
	)
	go func() {
		defer close(done)
		next := map[int]int{}
		for i := 0; !stop.Load(); i++ {
			k := i % foContinueKeys
			m := message.NewMessage(orderTopic, fmt.Appendf(nil, "k%d/%d", k, next[k]))
			m.SetShardingKey("key-" + strconv.Itoa(k))
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			start := time.Now()
			_, err := op.Send(ctx, m)
			cancel()
			if err != nil {
				i-- // the key's message again, so that its sequence has no hole
				time.Sleep(20 * time.Millisecond)
				continue
			}
			omu.Lock()
			next[k]++
			acked[k] = next[k]
			ackedAt[k] = start
			omu.Unlock()
			time.Sleep(10 * time.Millisecond)
		}
	}()
	t.Cleanup(func() {
		stop.Store(true)
		<-done
		_ = op.Close()
	})
	haEventually(t, 30*time.Second, c.ns, func() bool { return ordered.has(foContinueKeys-1, 10) }, "ordered consumption under way")

	// A pending transaction: unknown until the master is dead, then committed.
	var killed atomic.Bool
	var checksAfter atomic.Int64
	tp, err := newClient().NewTransactionProducer("fo-tx-pg", client.TransactionCheckerFunc(
		func(_ context.Context, m *client.MessageExt) client.TransactionState {
			if !killed.Load() {
				return client.TransactionUnknown
			}
			checksAfter.Add(1)
			return client.TransactionCommit
		}))
	require.NoError(t, err)
	t.Cleanup(func() { _ = tp.Close() })
	tr, err := tp.SendInTransaction(context.Background(), message.NewMessage(txTopic, []byte("pending")),
		func(context.Context, *message.Message, client.SendResult) client.TransactionState {
			return client.TransactionUnknown
		})
	require.NoError(t, err)
	require.Equal(t, client.TransactionUnknown, tr.State)

	// A delayed message, due 10 s from now.
	dp, err := newClient().NewProducer("fo-delay-pg")
	require.NoError(t, err)
	t.Cleanup(func() { _ = dp.Close() })
	dm := message.NewMessage(delayTopic, []byte("delayed"))
	dm.SetDelayLevel(3)
	_, err = dp.Send(context.Background(), dm)
	require.NoError(t, err)

	// A message to a topic with a dedup window, on every broker of the group before the kill.
	const dedupTopic = "FoDedup"
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	require.NoError(t, newClient().Admin().CreateTopic(ctx, client.TopicConfig{Name: dedupTopic,
		Attributes: map[string]string{"dedupWindow": "10m"}}, client.Target{}))
	cancel()
	c.waitTopicEverywhere(t, foGroup, dedupTopic)
	first, err := dp.Send(context.Background(), message.NewMessage(dedupTopic, []byte("once")))
	require.NoError(t, err)
	for _, b := range c.groupBrokers(foGroup) {
		haEventually(t, 30*time.Second, b.proc, func() bool {
			return foMaxOffset(c, b.listen, dedupTopic, first.QueueID) > first.QueueOffset
		}, b.name+" holds the deduplicated message")
	}

	old := c.master(v)
	killed.Store(true)
	killedAt := time.Now()
	foKill(t, old.proc)
	nv := c.settled(t, foGroup, v.MasterEpoch+1, 2, 60*time.Second)
	nm := c.master(nv)
	t.Logf("%s killed, %s master at epoch %d", old.listen, nm.listen, nv.MasterEpoch)

	var tx delivered
	var ok bool
	haEventually(t, 60*time.Second, c.ns, func() bool { tx, ok = deliveredAs("pending"); return ok }, "the pending transaction committed and delivered")
	require.Equal(t, nm.listen, tx.store, "the commit was stored by the new master")
	require.Positive(t, checksAfter.Load(), "checked back after the kill")

	retry := foResend(t, c, nm.listen, dedupTopic, first.MsgID)
	require.Equal(t, first.QueueID, retry.QueueID, "the retry is answered with the first send's queue")
	require.Equal(t, first.QueueOffset, retry.QueueOffset, "and offset")
	require.Equal(t, first.QueueOffset+1, foMaxOffset(c, nm.listen, dedupTopic, first.QueueID), "and not stored")

	var dl delivered
	haEventually(t, 60*time.Second, c.ns, func() bool { dl, ok = deliveredAs("delayed"); return ok }, "the delayed message delivered")
	require.Equal(t, nm.listen, dl.store, "the delayed message was put back by the new master")
	require.GreaterOrEqual(t, dl.stored.Sub(dl.born), 9*time.Second, "delivered when due, not before")

	// Ordered consumption past the consumer's 30 s trust in a lock it did not renew.
	lockLapse := killedAt.Add(31 * time.Second)
	var want map[int]int
	haEventually(t, 120*time.Second, c.ns, func() bool {
		omu.Lock()
		want = map[int]int{}
		for k, n := range acked {
			if ackedAt[k].After(lockLapse) {
				want[k] = n
			}
		}
		omu.Unlock()
		if len(want) < foContinueKeys {
			return false
		}
		for k, n := range want {
			if !ordered.has(k, n-1) {
				return false
			}
		}
		return true
	}, "every key's messages sent 31 s after the kill consumed")
	stop.Store(true)
	<-done
	omu.Lock()
	final := acked
	omu.Unlock()
	haEventually(t, 60*time.Second, c.ns, func() bool {
		for k, n := range final {
			for s := range n {
				if !ordered.has(k, s) {
					return false
				}
			}
		}
		return true
	}, "every acknowledged ordered message consumed")
	require.Empty(t, ordered.outOfOrder(), "ordered consumption across the failover")
	total := 0
	for _, n := range final {
		total += n
	}
	t.Logf("%d ordered messages over %d keys consumed in order; transaction committed via %s; delayed message delivered after %v",
		total, foContinueKeys, tx.store, dl.stored.Sub(dl.born).Round(time.Millisecond))
}

// foMaxOffset is a queue's GET_MAX_OFFSET on the broker at addr, -1 when it cannot say.
func foMaxOffset(c *foCluster, addr, topic string, queueID int32) int64 {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	resp, err := c.rc.Invoke(ctx, addr, remoting.NewRequest(int16(protocol.GetMaxOffset),
		map[string]string{"topic": topic, "queueId": strconv.Itoa(int(queueID))}))
	if err != nil || resp.Code != int16(protocol.Success) {
		return -1
	}
	v, _ := resp.ExtFields.Get("offset")
	off, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return -1
	}
	return off
}

// foResend sends a message carrying UNIQ_KEY uniqKey to topic on the broker at addr with
// a raw SEND_MESSAGE_V2 (a client's retry) and returns the answer's header.
func foResend(t *testing.T, c *foCluster, addr, topic, uniqKey string) protocol.SendMessageResponseHeader {
	t.Helper()
	props, err := message.EncodeProperties(map[string]string{message.PropertyUniqKey: uniqKey})
	require.NoError(t, err)
	h := protocol.SendMessageRequestHeader{ProducerGroup: "fo-dedup-raw", Topic: topic, DefaultTopic: "TBW102",
		QueueID: -1, BornTimestamp: time.Now().UnixMilli(), Properties: string(props)}
	req := remoting.NewRequestExt(int16(protocol.SendMessageV2), nil)
	h.EncodeExtV2(&req.ExtFields)
	req.Body = []byte("once")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.rc.Invoke(ctx, addr, req)
	require.NoError(t, err)
	require.Equal(t, int16(protocol.Success), resp.Code, resp.Remark)
	var rh protocol.SendMessageResponseHeader
	require.NoError(t, rh.DecodeExt(resp.ExtFields))
	return rh
}
