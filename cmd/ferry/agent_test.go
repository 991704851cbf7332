package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/controller"
	"github.com/ferrymq/ferry/internal/mmap"
	"github.com/ferrymq/ferry/internal/testkit"
	"github.com/ferrymq/ferry/nameserver"
)

// A broker in controller mode whose controllers are not up is not ready and says why;
// once a controller runs, the broker registers, is elected (alone in its group), serves
// as master and /readyz turns 200, logging the ready line; /metrics serves the broker the
// agent runs.
func TestControllerModeReadyz(t *testing.T) {
	cfg := serveConfig(t, t.TempDir())
	ctlAddr := testkit.FreeAddr(t)
	cfg.Broker.ControllerMode, cfg.Broker.ControllerAddrs = true, []string{ctlAddr}
	cfg.Broker.HAListen = testkit.FreeAddr(t)
	cfg.Broker.NamesrvAddrs = []string{startTestNameServer(t)}
	logs := startServe(t, "broker", cfg, mmap.OSFS{})
	testkit.Eventually(t, 30*time.Second, func() bool {
		code, r, ok := tryProbe(t, cfg.Broker.HTTPListen, "/readyz")
		m := r.Missing["broker"]
		return ok && code == http.StatusServiceUnavailable && len(m) == 1 && m[0] == "not registered with a controller"
	}, "not ready: no controller")
	code, _ := probe(t, cfg.Broker.HTTPListen, "/healthz")
	require.Equal(t, http.StatusOK, code, "alive without controllers")
	require.NotContains(t, logs.String(), readyLine)

	startOneController(t, ctlAddr)
	testkit.Eventually(t, 30*time.Second, func() bool {
		code, _ := probe(t, cfg.Broker.HTTPListen, "/readyz")
		return code == http.StatusOK
	}, "/readyz 200 once the controller elected the broker")
	require.Contains(t, logs.String(), readyLine)
	require.Contains(t, logs.String(), "broker serving its assigned role")
	require.Contains(t, getMetrics(t, cfg.Broker.HTTPListen), "\nrocketmq_topic_number ", "the running broker's collector")
}

// startTestNameServer runs a name server stopped at cleanup and returns its address.
func startTestNameServer(t *testing.T) string {
	t.Helper()
	ns, err := nameserver.New(nameserver.DefaultOptions())
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	require.NoError(t, ns.Start(ln))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		require.NoError(t, ns.Shutdown(ctx))
	})
	return ns.Addr()
}

// startOneController runs a single-node controller cluster whose remoting port is addr,
// stopped at cleanup.
func startOneController(t *testing.T, addr string) {
	t.Helper()
	raft, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	o := controller.DefaultServerOptions()
	o.Raft.NodeID, o.Raft.RaftListen, o.Raft.Listener = "n0", raft.Addr().String(), raft
	o.Raft.Peers, o.Raft.DataDir = []string{fmt.Sprintf("n0@%s", raft.Addr())}, filepath.Join(t.TempDir(), "ctl")
	s, err := controller.NewServer(o)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", addr)
	require.NoError(t, err, "the reserved port is still free")
	require.NoError(t, s.Start(ln))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, s.Shutdown(ctx))
	})
}
