//go:build linux

package interop

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/client"
	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/protocol"
)

// TestFailoverKeepsCancellation: a timer message cancelled on the master stays cancelled
// when the controllers promote a slave after the master is killed (issue 26): the cancel
// record is in the replicated commit log, and the new master reads it before it delivers.
func TestFailoverKeepsCancellation(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes; -short")
	}
	c := newFOCluster(t, "", []string{foGroup}, 3, "  slaveSyncInterval: 1s\n")
	v := c.settled(t, foGroup, 1, 3, 60*time.Second)
	const topic = "FoCancel"
	c.createTopic(t, topic)
	c.waitTopicEverywhere(t, foGroup, topic)
	cl, err := client.New(client.WithNameServers(c.nsAddr), client.WithInstanceName(instance("fo-cancel")),
		client.WithRouteRefresh(time.Second))
	require.NoError(t, err)
	t.Cleanup(func() { _ = cl.Close() })

	var mu sync.Mutex
	got := map[string]string{} // body → the broker that stored it
	pc, err := cl.NewPushConsumer("fo-cancel-cg", topic, "*", func(_ context.Context, msgs []*client.MessageExt) client.ConsumeResult {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range msgs {
			got[string(m.Body)] = m.StoreHost.String()
		}
		return client.ConsumeSuccess
	}, client.WithConsumeFrom(client.ConsumeFromFirstOffset))
	require.NoError(t, err)
	require.NoError(t, pc.Start(context.Background()))
	t.Cleanup(func() { _ = pc.Close() })

	p, err := cl.NewProducer("fo-cancel-pg")
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	due := time.Now().Add(20 * time.Second)
	send := func(body string, at time.Time) string {
		m := message.NewMessage(topic, []byte(body))
		m.SetDeliverAt(at)
		res, err := p.Send(context.Background(), m)
		require.NoError(t, err)
		return res.MsgID
	}
	cancelled := send("cancelled", due)
	send("kept", due.Add(time.Second)) // due after the cancelled one: its delivery proves the loop passed it

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	res, err := cl.Admin().CancelScheduled(ctx, topic, cancelled)
	cancel()
	require.NoError(t, err)
	require.False(t, res.AlreadyCancelled)
	for _, b := range c.groupBrokers(foGroup) {
		haEventually(t, 30*time.Second, b.proc, func() bool {
			return foMaxOffset(c, b.listen, protocol.ScheduleCancelTopic, 0) >= 1
		}, b.name+" holds the cancel record")
	}

	old := c.master(v)
	foKill(t, old.proc)
	nv := c.settled(t, foGroup, v.MasterEpoch+1, 2, 60*time.Second)
	nm := c.master(nv)
	t.Logf("%s killed, %s master at epoch %d", old.listen, nm.listen, nv.MasterEpoch)

	haEventually(t, 90*time.Second, c.ns, func() bool {
		mu.Lock()
		defer mu.Unlock()
		_, ok := got["kept"]
		return ok
	}, "the message not cancelled delivered by the new master")
	mu.Lock()
	_, delivered := got["cancelled"]
	keptBy := got["kept"]
	mu.Unlock()
	require.False(t, delivered, "the cancelled message is never delivered, by the old master or the new one")
	require.Equal(t, nm.listen, keptBy, "delivered by the new master")
	// The new master stored one message in the topic: the cancelled one, due first, would
	// have been stored before the kept one.
	var stored int64
	for q := range int32(16) {
		stored += max(foMaxOffset(c, nm.listen, topic, q), 0)
	}
	require.Equal(t, int64(1), stored, "only the message not cancelled is in the topic")

	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	res, err = cl.Admin().CancelScheduled(ctx, topic, cancelled)
	cancel()
	require.NoError(t, err)
	require.True(t, res.AlreadyCancelled, "the new master knows the cancellation")
}
