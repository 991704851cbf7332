package client

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/protocol"
)

// TestAdminDrainBroker: DrainBroker makes the broker's queues read-only in routes and
// reports the name server's count; UndrainBroker restores them.
func TestAdminDrainBroker(t *testing.T) {
	e := newAdminEnv(t)
	ctx := adminCtx(t)
	e.createTopic("AdminDrained", 2)
	perm := func() int32 {
		r, err := e.a.TopicRoute(ctx, "AdminDrained")
		require.NoError(t, err)
		require.Len(t, r.Queues, 1)
		return r.Queues[0].Perm
	}
	require.True(t, protocol.PermWriteable(perm()))

	counts, err := e.a.DrainBroker(ctx, e.broker)
	require.NoError(t, err)
	require.Len(t, counts, 1)
	require.Equal(t, e.c.NamesrvAddr, counts[0].NameServer)
	require.Positive(t, counts[0].Topics)
	require.False(t, protocol.PermWriteable(perm()))
	require.True(t, protocol.PermReadable(perm()))

	undo, err := e.a.UndrainBroker(ctx, e.broker)
	require.NoError(t, err)
	require.Equal(t, counts, undo)
	require.True(t, protocol.PermWriteable(perm()))

	_, err = e.a.DrainBroker(ctx, "")
	require.ErrorIs(t, err, ErrInvalidArgument)
}
