package client

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The fault table avoids a broker for RocketMQ's durations after a slow answer or a
// failure, forgets it after a good answer or once the time has passed, and the round
// robin passes over an avoided broker unless every broker is avoided.
func TestFaultAvoidance(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	f := newFaultTable(func() time.Time { return now })
	f.update("a", 10*time.Millisecond, false)
	require.True(t, f.available("a"), "a fast answer")
	f.update("a", 600*time.Millisecond, false)
	require.False(t, f.available("a"), "an answer after 600 ms")
	now = now.Add(29 * time.Second)
	require.False(t, f.available("a"))
	now = now.Add(2 * time.Second)
	require.True(t, f.available("a"), "30 s later")
	f.update("a", 0, true)
	require.False(t, f.available("a"), "a failure")
	now = now.Add(179 * time.Second)
	require.False(t, f.available("a"), "a failure counts as 3 s: 180 s")
	f.update("a", time.Millisecond, false)
	require.True(t, f.available("a"), "a good answer ends it")

	p := &Producer{fault: f}
	r := &topicRoute{queues: []queue{{broker: "a", id: 0}, {broker: "a", id: 1}, {broker: "b", id: 0}, {broker: "b", id: 1}}}
	f.update("b", 20*time.Second, false)
	for range 8 {
		require.Equal(t, "a", p.pickQueue(r, laneKey{queue: -1}, "").broker, "b is avoided")
	}
	f.update("a", 0, true)
	seen := map[string]bool{}
	for range 8 {
		seen[p.pickQueue(r, laneKey{queue: -1}, "").broker] = true
	}
	require.Equal(t, map[string]bool{"a": true, "b": true}, seen, "everything avoided: all are used")
	require.Equal(t, "b", p.pickQueue(r, laneKey{queue: -1}, "a").broker, "a retry still avoids its failed broker")
	require.Equal(t, int32(1), p.pickQueue(r, laneKey{queue: 3}, "").id, "a selector's queue is kept")
	require.True(t, (&Producer{}).fault.available("x"), "a nil table avoids nothing")
}
