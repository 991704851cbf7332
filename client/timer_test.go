package client

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/testutil"
)

// TestTimerMessagesAreNotBatched: timer messages sent concurrently (which would share
// automatic batches) each go on their own, so the broker holds every one of them until
// its time and none is stored in the topic at once.
func TestTimerMessagesAreNotBatched(t *testing.T) {
	const topic, n, delay = "TimerClient", 40, 3 * time.Second
	c := testutil.StartCluster(t)
	raw := newRawBroker(t, c)
	raw.createTopic(topic, 1)
	cl := newMember(t, c, "timers")
	p, err := cl.NewProducer("pg-timer", WithLinger(20*time.Millisecond))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close()) })

	var wg sync.WaitGroup
	errs := make(chan error, n)
	sent := time.Now()
	for i := range n {
		m := message.NewMessage(topic, []byte{byte(i)})
		if i%2 == 0 {
			m.SetDeliverAfter(delay)
		} else {
			m.SetDeliverAt(sent.Add(delay))
		}
		wg.Add(1)
		p.SendAsync(context.Background(), m, func(_ SendResult, err error) {
			defer wg.Done()
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	if time.Since(sent) < delay {
		require.Zero(t, raw.maxOffset(topic, 0), "nothing delivered before its time")
	}
	testutil.Eventually(t, 30*time.Second, func() bool { return raw.maxOffset(topic, 0) == n }, "every timer message delivered")
	for _, r := range raw.records(topic, 0) {
		require.GreaterOrEqual(t, r.StoreTimestamp, sent.Add(delay).UnixMilli(),
			"stored in the topic at its delivery time, not before")
	}
}
