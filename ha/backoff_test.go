package ha

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestNextRetrySchedule: the reconnect delays start at the floor, grow by half per failed
// attempt, stop at the ceiling, and go back to the floor after a connection that worked.
func TestNextRetrySchedule(t *testing.T) {
	floor, ceiling := DefaultRetryFloor, DefaultRetryMax
	var d, total time.Duration
	var at []time.Duration
	for range 8 {
		d = nextRetry(d, false, floor, ceiling)
		total += d
		at = append(at, total)
	}
	require.Equal(t, floor, at[0], "the first attempt after a loss comes after the floor")
	require.Less(t, at[3], 250*time.Millisecond, "four attempts within the first quarter second")
	require.Greater(t, at[7], time.Second, "eight attempts spread over more than a second")
	for range 40 {
		d = nextRetry(d, false, floor, ceiling)
		require.LessOrEqual(t, d, ceiling)
	}
	require.Equal(t, ceiling, d, "a master that stays away is dialled every RetryMax")
	require.Equal(t, floor, nextRetry(d, true, floor, ceiling), "a connection that moved data resets the backoff")
	require.Equal(t, floor, nextRetry(0, false, floor, ceiling))
}

// TestJitterStaysWithinAQuarter: the wait is the delay less at most a quarter of it.
func TestJitterStaysWithinAQuarter(t *testing.T) {
	d := 100 * time.Millisecond
	require.Equal(t, d, jitter(d, func(int64) int64 { return 0 }))
	require.Equal(t, d*3/4, jitter(d, func(n int64) int64 { return n - 1 }), "the largest draw")
	require.Equal(t, time.Duration(3), jitter(3, func(n int64) int64 { return n - 1 }), "below 4 ns nothing is taken")
}
