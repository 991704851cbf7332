package broker

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
	"github.com/ferrymq/ferry/store"
)

// The send family runs inline exactly when a send cannot wait for a flush or a slave; a
// slave's refusals always do; nothing else ever does.
func TestInlineRoutes(t *testing.T) {
	sends := []protocol.RequestCode{protocol.SendMessage, protocol.SendMessageV2, protocol.SendBatchMessage}
	cases := map[string]struct {
		mutate      func(*Options)
		sendsInline bool
	}{
		"async master":                       {func(*Options) {}, true},
		"sync flush":                         {func(o *Options) { o.Store.FlushMode = store.FlushSync }, false},
		"sync master":                        {func(o *Options) { o.Role = RoleSyncMaster }, false},
		"controller mode":                    {func(o *Options) { o.ControllerMode = true }, true},
		"controller mode, sync master":       {func(o *Options) { o.ControllerMode, o.Role = true, RoleSyncMaster }, false},
		"controller mode, all ack":           {func(o *Options) { o.ControllerMode, o.AllAckInSyncStateSet = true, true }, false},
		"slave (refusals)":                   {func(o *Options) { o.Role = RoleSlave }, true},
		"slave (refusals) with a sync flush": {func(o *Options) { o.Role, o.Store.FlushMode = RoleSlave, store.FlushSync }, true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := DefaultOptions()
			tc.mutate(&o)
			b := &Broker{opts: o, server: routeServer(t)}
			require.NoError(t, b.registerHandlers())
			for _, code := range sends {
				r, ok := b.server.Route(int16(code))
				require.True(t, ok)
				require.Equal(t, tc.sendsInline, r.Inline, "code %d", code)
				require.True(t, r.ReuseFrames)
				if !r.Inline {
					require.Equal(t, poolSend, r.Pool)
				}
			}
			r, _ := b.server.Route(int16(protocol.EndTransaction))
			require.Equal(t, o.Role == RoleSlave, r.Inline, "END_TRANSACTION is inline as a slave's refusal only")
			r, _ = b.server.Route(int16(protocol.ConsumerSendMsgBack))
			require.Equal(t, o.Role == RoleSlave, r.Inline, "CONSUMER_SEND_MSG_BACK is inline as a slave's refusal only")
			for _, code := range []protocol.RequestCode{protocol.PullMessage, protocol.HeartBeat, protocol.UpdateConsumerOffset} {
				r, _ := b.server.Route(int16(code))
				require.False(t, r.Inline, "code %d", code)
			}
		})
	}
}

// routeServer is a remoting server with the broker's pools, for registering routes.
func routeServer(t *testing.T) *remoting.Server {
	t.Helper()
	so := remoting.DefaultServerOptions()
	for _, p := range []string{poolSend, poolPull, poolQuery, poolAdmin, poolTx} {
		so.Pools = append(so.Pools, remoting.PoolOptions{Name: p, Workers: 1, QueueSize: 1})
	}
	s, err := remoting.NewServer(so)
	require.NoError(t, err)
	return s
}
