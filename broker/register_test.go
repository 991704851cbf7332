package broker_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/broker"
	"github.com/ferrymq/ferry/nameserver"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
	"github.com/ferrymq/ferry/testutil"
)

// A name server that was down when a topic was created learns the topic within seconds of
// coming back: a failed registration round is retried on a short backoff, not only at the
// (here ten-minute) registration interval.
func TestRegistrationRetriedAfterFailure(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	late := ln.Addr().String()
	require.NoError(t, ln.Close()) // nothing listens there until the name server starts below

	c := testutil.StartCluster(t, testutil.WithBrokerOptions(func(o *broker.Options) {
		o.NamesrvAddrs = append(o.NamesrvAddrs, late)
		o.RegisterInterval = 10 * time.Minute
	}))
	rc, err := remoting.NewClient(remoting.DefaultClientOptions())
	require.NoError(t, err)
	defer func() { require.NoError(t, rc.Close()) }()
	resp := call(t, rc, c.BrokerAddr, protocol.UpdateAndCreateTopic, &protocol.CreateTopicRequestHeader{Topic: "LateTopic",
		DefaultTopic: "TBW102", ReadQueueNums: 2, WriteQueueNums: 2, Perm: protocol.PermRead | protocol.PermWrite}, nil)
	require.Equal(t, int16(protocol.Success), resp.Code, resp.Remark)

	ns := startNamesrvAt(t, late)
	testutil.Eventually(t, 20*time.Second, func() bool {
		_, ok := ns.Table().TopicRoute("LateTopic")
		return ok
	}, "the late name server routes the topic")
}

// startNamesrvAt starts a name server on addr, a port reserved earlier (FreeAddr) that a
// broker was already told to register with, and stops it when the test ends.
func startNamesrvAt(t *testing.T, addr string) *nameserver.Server {
	t.Helper()
	ns, err := nameserver.New(nameserver.DefaultOptions())
	require.NoError(t, err)
	ln, err := net.Listen("tcp", addr)
	require.NoError(t, err, "the reserved port is still free")
	require.NoError(t, ns.Start(ln))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		require.NoError(t, ns.Shutdown(ctx))
	})
	return ns
}
