package client

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestAdminMessagesByTime reads a queue of more messages than one pull answers, whole,
// cut at maxNum, and from a time in its middle.
func TestAdminMessagesByTime(t *testing.T) {
	e := newAdminEnv(t)
	e.createTopic("OpsByTime", 2)
	sent := e.send("OpsByTime", bodies("m", 90), nil)
	e.waitQueued("OpsByTime", 90)
	ctx := adminCtx(t)

	all, truncated, err := e.a.MessagesByTime(ctx, "OpsByTime", time.Time{}, time.Time{}, 1000)
	require.NoError(t, err)
	require.False(t, truncated)
	require.Len(t, all, 90, "45 a queue: two pulls of each")
	seen := map[string]bool{}
	for i, m := range all {
		seen[m.MsgID] = true
		if i > 0 {
			require.False(t, m.StoreTime.Before(all[i-1].StoreTime), "ordered by store time")
		}
	}
	for _, s := range sent {
		require.True(t, seen[s.MsgID], "%s listed", s.MsgID)
	}

	cut, truncated, err := e.a.MessagesByTime(ctx, "OpsByTime", time.Time{}, time.Time{}, 50)
	require.NoError(t, err)
	require.True(t, truncated)
	require.Len(t, cut, 50)
	for i := range cut {
		require.Equal(t, all[i].StoreTime, cut[i].StoreTime, "the oldest 50")
	}

	exact, truncated, err := e.a.MessagesByTime(ctx, "OpsByTime", time.Time{}, time.Time{}, 90)
	require.NoError(t, err)
	require.False(t, truncated, "exactly maxNum stored: not truncated")
	require.Len(t, exact, 90)

	mid := all[60].StoreTime
	tail, _, err := e.a.MessagesByTime(ctx, "OpsByTime", mid, time.Time{}, 1000)
	require.NoError(t, err)
	want := 0
	for _, m := range all {
		if !m.StoreTime.Before(mid) {
			want++
		}
	}
	require.Len(t, tail, want)
	head, _, err := e.a.MessagesByTime(ctx, "OpsByTime", time.Time{}, mid, 1000)
	require.NoError(t, err)
	require.Equal(t, 90, len(head)+len(tail)-countAt(all, mid), "the two halves meet at mid")

	_, _, err = e.a.MessagesByTime(ctx, "OpsByTime", mid, mid.Add(-time.Second), 10)
	require.ErrorIs(t, err, ErrInvalidArgument)
	_, _, err = e.a.MessagesByTime(ctx, "OpsByTime", time.Time{}, time.Time{}, 0)
	require.ErrorIs(t, err, ErrInvalidArgument)
	_, _, err = e.a.MessagesByTime(ctx, "OpsNoSuchTopic", time.Time{}, time.Time{}, 10)
	require.ErrorIs(t, err, ErrNoRoute)
}

// countAt counts the messages stored at t exactly.
func countAt(msgs []*MessageExt, t time.Time) int {
	n := 0
	for _, m := range msgs {
		if m.StoreTime.Equal(t) {
			n++
		}
	}
	return n
}

func TestAdminCloneOffsetsBadInput(t *testing.T) {
	e := newAdminEnv(t)
	ctx := adminCtx(t)
	for _, tc := range []struct{ src, dst string }{{"a", "a"}, {"", "b"}, {"a", "bad group!"}} {
		_, err := e.a.CloneOffsets(ctx, tc.src, tc.dst, "T")
		require.ErrorIs(t, err, ErrInvalidArgument, fmt.Sprint(tc))
	}
	_, err := e.a.CloneOffsets(ctx, "a", "b", "OpsNoSuchTopic")
	require.ErrorIs(t, err, ErrNoRoute)
}
