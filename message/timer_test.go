package message

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestMessageTimers(t *testing.T) {
	m := NewMessage("T", []byte("x"))
	require.False(t, m.HasTimer())

	m.SetDelayLevel(3)
	require.True(t, m.HasTimer(), "a delay level holds the message back too")
	at := time.UnixMilli(1_900_000_000_123)
	m.SetDeliverAt(at)
	require.Equal(t, "1900000000123", m.Property(PropertyTimerDeliverMs))
	require.Equal(t, at, m.DeliverAt())
	require.Zero(t, m.DelayLevel(), "the timer replaces the delay level")
	require.Zero(t, m.DeliverAfter())

	m.SetDeliverAfter(90 * time.Second)
	require.Equal(t, "90", m.Property(PropertyTimerDelaySec))
	require.Empty(t, m.Property(PropertyTimerDeliverMs), "one timer property at a time")
	require.True(t, m.DeliverAt().IsZero())
	require.Equal(t, 90*time.Second, m.DeliverAfter())

	m.SetDeliverAfter(1500 * time.Millisecond)
	require.Equal(t, "1500", m.Property(PropertyTimerDelayMs))
	require.Empty(t, m.Property(PropertyTimerDelaySec))
	require.Equal(t, 1500*time.Millisecond, m.DeliverAfter())

	m.SetDeliverAfter(0)
	require.False(t, m.HasTimer())
	m.SetDeliverAt(at)
	m.SetDeliverAt(time.Time{})
	require.False(t, m.HasTimer())
	require.NoError(t, m.Validate(0))
}
