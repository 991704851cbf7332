package acl

import (
	"context"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/acl/sign"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
)

// A Gate in front of real handlers: signed requests with the right permission reach the
// handler, others are answered NO_PERMISSION without reaching it, including a heartbeat
// whose body subscribes to a denied topic.
func TestGate(t *testing.T) {
	a, err := Parse([]byte(`
accounts:
  - accessKey: producer1
    secretKey: secret-1234
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms: ["Orders=PUB|SUB"]
`))
	require.NoError(t, err)
	g := NewGate(a, zerolog.Nop())
	s, err := remoting.NewServer(remoting.DefaultServerOptions())
	require.NoError(t, err)
	reached := make(chan int16, 16)
	ok := remoting.HandlerFunc(func(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
		reached <- req.Code
		return remoting.NewResponse(req, int16(protocol.Success), ""), nil
	})
	for _, c := range []protocol.RequestCode{protocol.SendMessage, protocol.HeartBeat} {
		require.NoError(t, s.Handle(int16(c), remoting.DefaultPool, g.Wrap(c, ok)))
	}
	remoting.ServeTest(t, s, nil)
	cli, err := remoting.NewClient(remoting.DefaultClientOptions())
	require.NoError(t, err)
	t.Cleanup(func() { _ = cli.Close() })
	creds := sign.Credentials{AccessKey: "producer1", SecretKey: "secret-1234"}
	call := func(code protocol.RequestCode, ext remoting.Ext, body []byte, signed bool) *remoting.Command {
		t.Helper()
		if signed {
			ext = remoting.Ext(creds.SignFields(ext, body))
		}
		req := remoting.NewRequestExt(int16(code), ext)
		req.Body = body
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := cli.Invoke(ctx, s.Addr().String(), req)
		require.NoError(t, err)
		return resp
	}
	send := func(topic string) remoting.Ext {
		return remoting.Ext{{Key: "producerGroup", Value: "pg"}, {Key: "topic", Value: topic}}
	}

	require.Equal(t, int16(protocol.Success), call(protocol.SendMessage, send("Orders"), []byte("x"), true).Code)
	require.Equal(t, int16(protocol.SendMessage), <-reached)
	resp := call(protocol.SendMessage, send("Payroll"), []byte("x"), true)
	require.Equal(t, int16(protocol.NoPermission), resp.Code)
	require.Contains(t, resp.Remark, "Payroll")
	resp = call(protocol.SendMessage, send("Orders"), []byte("x"), false)
	require.Equal(t, int16(protocol.NoPermission), resp.Code, "unsigned")

	hb := func(topic string) []byte {
		b, err := protocol.EncodeHeartbeatData(&protocol.HeartbeatData{ClientID: "c@1", ConsumerDataSet: []protocol.ConsumerData{{
			GroupName: "cg", SubscriptionDataSet: []protocol.SubscriptionData{{Topic: topic, SubString: "*"}}}}})
		require.NoError(t, err)
		return b
	}
	require.Equal(t, int16(protocol.Success), call(protocol.HeartBeat, nil, hb("Orders"), true).Code)
	require.Equal(t, int16(protocol.HeartBeat), <-reached)
	resp = call(protocol.HeartBeat, nil, hb("Payroll"), true)
	require.Equal(t, int16(protocol.NoPermission), resp.Code, "a subscription in the body to a denied topic")
	require.Empty(t, reached, "refused requests never reach the handler")
}
