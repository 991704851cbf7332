package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/conf"
	"github.com/ferrymq/ferry/controller"
	"github.com/ferrymq/ferry/internal/mmap"
	"github.com/ferrymq/ferry/internal/testkit"
)

// controllerNodes are the addresses of a three-node controller cluster on loopback.
type controllerNodes struct {
	listen, raft, http []string
	peers              []string
}

func newControllerNodes(t *testing.T) controllerNodes {
	var n controllerNodes
	for i := range 3 {
		n.listen = append(n.listen, testkit.FreeAddr(t))
		n.raft = append(n.raft, testkit.FreeAddr(t))
		n.http = append(n.http, testkit.FreeAddr(t))
		n.peers = append(n.peers, fmt.Sprintf("n%d@%s", i, n.raft[i]))
	}
	return n
}

// config is node i's controller section, data under dir.
func (n controllerNodes) config(i int, dir string) conf.ControllerConfig {
	c := conf.DefaultControllerConfig()
	c.NodeID, c.Listen, c.RaftListen, c.HTTPListen = fmt.Sprintf("n%d", i), n.listen[i], n.raft[i], n.http[i]
	c.Peers, c.DataDir = n.peers, filepath.Join(dir, fmt.Sprintf("n%d", i))
	c.BrokerHeartbeatTimeout = time.Second
	return c
}

// A controller alone of its three is not ready (no Raft leader) and says so on /readyz;
// once a second node runs, both are ready, logging the ready line, and serve the state.
func TestControllerReadyz(t *testing.T) {
	nodes, dir := newControllerNodes(t), t.TempDir()
	cfg0 := conf.DefaultConfig()
	cfg0.Controller = nodes.config(0, dir)
	logs0 := startServe(t, "controller", &cfg0, mmap.OSFS{})
	testkit.Eventually(t, 30*time.Second, func() bool {
		code, r, ok := tryProbe(t, nodes.http[0], "/readyz")
		return ok && code == http.StatusServiceUnavailable && len(r.Missing["controller"]) == 1 &&
			r.Missing["controller"][0] == "no Raft leader known"
	}, "one node of three: no leader")
	code, _ := probe(t, nodes.http[0], "/healthz")
	require.Equal(t, http.StatusOK, code, "alive without a leader")
	require.NotContains(t, logs0.String(), readyLine)

	cfg1 := conf.DefaultConfig()
	cfg1.Controller = nodes.config(1, dir)
	logs1 := startServe(t, "controller", &cfg1, mmap.OSFS{})
	for i, logs := range []*testkit.Buffer{logs0, logs1} {
		testkit.Eventually(t, 30*time.Second, func() bool {
			code, _ := probe(t, nodes.http[i], "/readyz")
			return code == http.StatusOK
		}, fmt.Sprintf("node %d ready", i))
		require.Contains(t, logs.String(), readyLine)
	}
	o := controller.DefaultClientOptions()
	o.Addrs = nodes.listen[:2]
	cl, err := controller.NewClient(o)
	require.NoError(t, err)
	defer func() { require.NoError(t, cl.Close()) }()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := cl.Status(ctx)
	require.NoError(t, err)
	require.Equal(t, "Leader", st.State)
	require.Len(t, st.Nodes, 3)
	metrics := getMetrics(t, nodes.http[0])
	require.Contains(t, metrics, "\ngo_goroutines ")
}

// `ferry config controller` shows the controller's keys only; the port in use is named
// by its key.
func TestControllerConfigAndPortInUse(t *testing.T) {
	var out, errb bytes.Buffer
	require.Equal(t, 0, run(context.Background(), []string{"config", "controller"}, &out, &errb), errb.String())
	require.Contains(t, out.String(), "controller.brokerHeartbeatTimeout")
	require.Contains(t, out.String(), "controller.peers")
	require.NotContains(t, out.String(), "broker.dataDir")
	require.Equal(t, "127.0.0.1:9890", configValue(t, "controller.httpListen", "controller", "--http-listen", "127.0.0.1:9890"))

	nodes := newControllerNodes(t)
	cfg := conf.DefaultConfig()
	cfg.Controller = nodes.config(0, t.TempDir())
	cfg.Controller.RaftListen = cfg.Controller.Listen // both ports on one address
	err := serve(context.Background(), "controller", &cfg, zerolog.Nop(), mmap.OSFS{})
	require.ErrorContains(t, err, "controller.raftListen")
}

// The real binary: three `ferry controller --config FILE` processes each log the ready
// line once a leader is elected, answer /readyz 200, and stop on SIGTERM.
func TestControllerProcessesReachReady(t *testing.T) {
	bin := testkit.Binary(t, "github.com/ferrymq/ferry/cmd/ferry")
	nodes, dir := newControllerNodes(t), t.TempDir()
	type proc struct {
		cmd   *exec.Cmd
		ready chan struct{}
		done  chan struct{}
	}
	var procs []proc
	for i := range 3 {
		c := nodes.config(i, dir)
		file := filepath.Join(dir, fmt.Sprintf("controller-%d.yaml", i))
		require.NoError(t, os.WriteFile(file, []byte(fmt.Sprintf(`controller:
  nodeId: %s
  listen: %s
  raftListen: %s
  peers: [%s]
  dataDir: %s
  brokerHeartbeatTimeout: 3s
  electUncleanMaster: false
  httpListen: %s
log:
  level: info
  format: json
`, c.NodeID, c.Listen, c.RaftListen, strings.Join(c.Peers, ", "), c.DataDir, c.HTTPListen)), 0o600))
		cmd := exec.Command(bin, "controller", "--config", file)
		stderr, err := cmd.StderrPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		p := proc{cmd: cmd, ready: make(chan struct{}), done: make(chan struct{})}
		go func() {
			defer close(p.done)
			sc := bufio.NewScanner(stderr)
			seen := false
			for sc.Scan() {
				if !seen && strings.Contains(sc.Text(), readyLine) {
					seen = true
					close(p.ready)
				}
			}
		}()
		procs = append(procs, p)
	}
	t.Cleanup(func() {
		for _, p := range procs {
			_ = p.cmd.Process.Kill() // after a failure only: a stopped process is gone
			<-p.done
			_ = p.cmd.Wait()
		}
	})
	for i, p := range procs {
		select {
		case <-p.ready:
		case <-p.done:
			t.Fatalf("controller %d exited before it was ready", i)
		case <-time.After(60 * time.Second):
			t.Fatalf("controller %d logged no ready line", i)
		}
		code, _ := probe(t, nodes.http[i], "/readyz")
		require.Equal(t, http.StatusOK, code)
	}
	for i, p := range procs {
		require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
		select {
		case <-p.done:
		case <-time.After(30 * time.Second):
			t.Fatalf("controller %d did not stop on SIGTERM", i)
		}
		require.NoError(t, p.cmd.Wait(), "controller %d exits 0", i)
	}
	require.FileExists(t, filepath.Join(dir, "n0", "raft.db"))
}
