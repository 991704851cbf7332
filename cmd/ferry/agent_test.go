package main

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/internal/mmap"
	"github.com/ferrymq/ferry/internal/testkit"
	"github.com/ferrymq/ferry/nameserver"
	"github.com/ferrymq/ferry/testutil"
)

// A broker in controller mode whose controllers are not up is not ready and says why;
// once a controller runs, the broker registers, is elected (alone in its group), serves
// as master and /readyz turns 200, logging the ready line; /metrics serves the broker the
// agent runs.
func TestControllerModeReadyz(t *testing.T) {
	cfg := serveConfig(t, t.TempDir())
	ctl := testutil.StartControllers(t, 1, nil)
	ctl.Stop(0) // started again below, on the same port
	cfg.Broker.ControllerMode, cfg.Broker.ControllerAddrs = true, ctl.Addrs
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

	ctl.Start(0)
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
