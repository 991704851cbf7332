package client

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/conf"
	"github.com/ferrymq/ferry/internal/testkit"
	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/testutil"
)

// replaceMaster stops c's broker and starts a master "broker-b" on another port and data
// directory, registered with the same name server: what clients see of a failover, the
// topic's writable queues at a new address. (Another group rather than broker-a's new
// master: the name server keeps broker-a's id 0 bound to the old address for a while,
// and a failover's takeover of that binding is the name server's to test.)
func replaceMaster(t *testing.T, c *testutil.Cluster) {
	t.Helper()
	c.StopBroker(t)
	c.StartSlave(t, func(b *conf.BrokerConfig) {
		b.BrokerName, b.Role, b.BrokerID, b.HAListen = "broker-b", conf.AsyncMaster, 0, "127.0.0.1:0"
	})
}

// TestConnectionFailureRefreshesTheRoute: after the group's master moved to another
// address, a producer that does not retry finds it within a few sends rather than at the
// next periodic route refresh (30 s): a send without an answer drops the cached route.
func TestConnectionFailureRefreshesTheRoute(t *testing.T) {
	c := testutil.StartCluster(t)
	cl := newTestClient(t, c)
	p, err := cl.NewProducer("MovePG", WithRetries(0))
	require.NoError(t, err)
	defer func() { require.NoError(t, p.Close()) }()
	ctx := context.Background()
	_, err = p.Send(ctx, message.NewMessage("MoveTopic", []byte("before")))
	require.NoError(t, err)

	replaceMaster(t, c)
	failures := 0
	testkit.EventuallyEvery(t, 10*time.Second, 10*time.Millisecond, func() bool {
		sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		res, err := p.Send(sctx, message.NewMessage("MoveTopic", []byte("after")))
		if err != nil {
			failures++
			return false
		}
		require.Equal(t, "broker-b", res.BrokerName)
		return true
	}, "a send reaching the new master")
	require.Positive(t, failures, "the first send after the move went to the old address")
}

// TestTransactionConnectionFailureRefreshesTheRoute is the same for a transactional
// producer, whose half messages are never retried after a send without an answer.
func TestTransactionConnectionFailureRefreshesTheRoute(t *testing.T) {
	c := testutil.StartCluster(t)
	cl := newTestClient(t, c)
	tp, err := cl.NewTransactionProducer("MoveTxPG", newTxChecker())
	require.NoError(t, err)
	defer func() { require.NoError(t, tp.Close()) }()
	ctx := context.Background()
	commit := returns(t, "MoveTxPG", TransactionCommit)
	_, err = tp.SendInTransaction(ctx, message.NewMessage("MoveTxTopic", []byte("before")), commit)
	require.NoError(t, err)

	replaceMaster(t, c)
	failures := 0
	testkit.EventuallyEvery(t, 10*time.Second, 10*time.Millisecond, func() bool {
		sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		res, err := tp.SendInTransaction(sctx, message.NewMessage("MoveTxTopic", []byte("after")), commit)
		if err != nil {
			failures++
			return false
		}
		require.Equal(t, TransactionCommit, res.State)
		require.Equal(t, "broker-b", res.BrokerName)
		return true
	}, "a transactional send reaching the new master")
	require.Positive(t, failures, "the first send after the move went to the old address")
}
