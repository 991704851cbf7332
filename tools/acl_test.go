package tools_test

import (
	"context"
	"encoding/json"
	"net/netip"
	"sync"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/acl"
	"github.com/ferrymq/ferry/acl/sign"
	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
)

// aclCluster is a fake name server and broker behind an ACL gate, answering what
// `topic route` and `send` need, and recording the access key of each request that
// passes the gate.
type aclCluster struct {
	namesrv string
	mu      sync.Mutex
	keys    []string // access keys of the requests that passed, in order
}

// passed returns the access keys recorded since the n-th request, and the new count.
func (c *aclCluster) passed(n int) ([]string, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.keys[n:]...), len(c.keys)
}

func startACLCluster(t *testing.T) *aclCluster {
	t.Helper()
	a, err := acl.Parse([]byte(`
accounts:
  - accessKey: ctlEnvUser
    secretKey: ctlEnvSecret
    defaultTopicPerm: PUB|SUB
  - accessKey: ctlFlagUser
    secretKey: ctlFlagSecret
    defaultTopicPerm: PUB|SUB
`))
	require.NoError(t, err)
	gate := acl.NewGate(a, zerolog.Nop())
	c := &aclCluster{}
	serve := func(handlers map[protocol.RequestCode]remoting.HandlerFunc) string {
		s, err := remoting.NewServer(remoting.DefaultServerOptions())
		require.NoError(t, err)
		for code, h := range handlers {
			record := func(ctx context.Context, ch remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
				c.mu.Lock()
				c.keys = append(c.keys, req.ExtFields.Value(sign.FieldAccessKey))
				c.mu.Unlock()
				return h(ctx, ch, req)
			}
			require.NoError(t, s.Handle(int16(code), remoting.DefaultPool, gate.Wrap(code, record)))
		}
		remoting.ServeTest(t, s, nil)
		return s.Addr().String()
	}
	ok := func(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
		return remoting.NewResponse(req, int16(protocol.Success), ""), nil
	}
	broker := serve(map[protocol.RequestCode]remoting.HandlerFunc{
		protocol.HeartBeat: ok,
		protocol.SendMessageV2: func(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
			resp := remoting.NewResponse(req, int16(protocol.Success), "")
			h := protocol.SendMessageResponseHeader{MsgID: message.OffsetMsgID(netip.MustParseAddrPort("127.0.0.1:10911"), 64)}
			h.EncodeExt(&resp.ExtFields)
			return resp, nil
		},
	})
	c.namesrv = serve(map[protocol.RequestCode]remoting.HandlerFunc{
		protocol.GetRouteInfoByTopic: func(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
			resp := remoting.NewResponse(req, int16(protocol.Success), "")
			var err error
			resp.Body, err = protocol.EncodeTopicRouteData(&protocol.TopicRouteData{
				QueueDatas: []protocol.QueueData{{BrokerName: "broker-a", ReadQueueNums: 1, WriteQueueNums: 1,
					Perm: protocol.PermRead | protocol.PermWrite}},
				BrokerDatas: []protocol.BrokerData{{Cluster: "c", BrokerName: "broker-a", BrokerAddrs: map[int64]string{0: broker}}},
			})
			return resp, err
		},
	})
	return c
}

// --access-key and --secret-key, or FERRY_ACCESS_KEY and FERRY_SECRET_KEY, sign every
// request of a command (flags win over the variables, key by key); without them a
// cluster with ACL on refuses, and the error says how to give an account.
func TestACLCredentials(t *testing.T) {
	c := startACLCluster(t)
	ns := "FERRY_NAMESRV=" + c.namesrv
	envAccount := []string{ns, "FERRY_ACCESS_KEY=ctlEnvUser", "FERRY_SECRET_KEY=ctlEnvSecret"}
	flagAccount := []string{"--access-key", "ctlFlagUser", "--secret-key", "ctlFlagSecret"}
	route := []string{"topic", "route", "-t", "Orders", "-o", "json"}
	send := []string{"send", "-t", "Orders", "-o", "json", "hello"}
	seen := 0

	for _, tc := range []struct {
		name string
		env  []string
		args []string
		user string
	}{
		{"environment", envAccount, nil, "ctlEnvUser"},
		{"flags", []string{ns}, flagAccount, "ctlFlagUser"},
		{"flags win", envAccount, flagAccount, "ctlFlagUser"},
		{"secret flag wins", []string{ns, "FERRY_ACCESS_KEY=ctlEnvUser", "FERRY_SECRET_KEY=wrong-secret"},
			[]string{"--secret-key", "ctlEnvSecret"}, "ctlEnvUser"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, cmd := range [][]string{route, send} {
				out, errOut, code := runEnv(t, tc.env, append(append([]string(nil), cmd...), tc.args...)...)
				require.Equal(t, 0, code, "ferryctl %v: %s", cmd, errOut)
				require.True(t, json.Valid([]byte(out)), out)
				var keys []string
				keys, seen = c.passed(seen)
				require.NotEmpty(t, keys)
				for _, k := range keys {
					require.Equal(t, tc.user, k, "ferryctl %v", cmd)
				}
			}
		})
	}

	t.Run("refused", func(t *testing.T) {
		_, errOut, code := runEnv(t, []string{ns}, route...)
		require.Equal(t, 1, code, errOut)
		require.Contains(t, errOut, "NO_PERMISSION (16)")
		require.Contains(t, errOut, "no AccessKey")
		require.Contains(t, errOut, "--access-key and --secret-key (or FERRY_ACCESS_KEY and FERRY_SECRET_KEY)")

		_, errOut, code = runEnv(t, envAccount, append(append([]string(nil), send...), "--secret-key", "wrong-secret")...)
		require.Equal(t, 1, code, errOut)
		require.Contains(t, errOut, "NO_PERMISSION (16)")
		require.Contains(t, errOut, "signature mismatch")
		require.NotContains(t, errOut, "FERRY_ACCESS_KEY", "no hint when an account was given")
		require.NotContains(t, errOut, "wrong-secret")
		keys, _ := c.passed(seen)
		require.Empty(t, keys)
	})

	t.Run("usage", func(t *testing.T) {
		_, errOut, code := runEnv(t, []string{ns}, append(append([]string(nil), route...), "--access-key", "ctlFlagUser")...)
		require.Equal(t, 2, code, errOut)
		require.Contains(t, errOut, "--access-key and --secret-key")
		_, errOut, code = runEnv(t, []string{ns, "FERRY_SECRET_KEY=ctlEnvSecret"}, route...)
		require.Equal(t, 2, code, errOut)

		out, errOut, code := runEnv(t, envAccount, "send", "--help")
		require.Equal(t, 0, code, errOut)
		require.Contains(t, out, "--access-key")
		require.Contains(t, out, "--secret-key")
		require.Contains(t, out, "FERRY_SECRET_KEY")
		require.NotContains(t, out, "ctlEnvSecret", "help never shows a secret")
	})
}
