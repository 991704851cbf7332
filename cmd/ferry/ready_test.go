package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/client"
	"github.com/ferrymq/ferry/conf"
	"github.com/ferrymq/ferry/internal/mmap"
	"github.com/ferrymq/ferry/internal/testkit"
	"github.com/ferrymq/ferry/launch"
	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/nameserver"
	"github.com/ferrymq/ferry/observe"
	"github.com/ferrymq/ferry/testutil"
)

// readyLine is what serve logs when /readyz turns 200.
const readyLine = "ferry is ready"

// probe GETs path from the HTTP listener at addr: the status and the decoded report.
func probe(t *testing.T, addr, path string) (int, observe.Report) {
	t.Helper()
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}
	resp, err := c.Get("http://" + addr + path)
	require.NoError(t, err, path)
	defer func() { require.NoError(t, resp.Body.Close()) }()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var r observe.Report
	require.NoError(t, json.Unmarshal(body, &r), string(body))
	return resp.StatusCode, r
}

// tryProbe is probe for polling: false while the listener is not up yet (serve binds it
// in the background).
func tryProbe(t *testing.T, addr, path string) (int, observe.Report, bool) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return 0, observe.Report{}, false
	}
	require.NoError(t, c.Close())
	code, r := probe(t, addr, path)
	return code, r, true
}

// serveConfig is a configuration of mode on free loopback ports, data under dir.
func serveConfig(t *testing.T, dir string) *conf.Config {
	cfg := conf.DefaultConfig()
	cfg.NameServer.Listen, cfg.Broker.Listen = testkit.FreeAddr(t), testkit.FreeAddr(t)
	cfg.Broker.HTTPListen, cfg.Broker.HAListen = testkit.FreeAddr(t), "127.0.0.1:0"
	cfg.Broker.DataDir, cfg.Broker.CommitLogSegmentSize = dir, launch.StandaloneSegmentSize
	return &cfg
}

// startServe runs serve in the background until the test ends; it returns the log.
func startServe(t *testing.T, mode string, cfg *conf.Config, fsys mmap.FS) *testkit.Buffer {
	t.Helper()
	logs := &testkit.Buffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, mode, cfg, zerolog.New(logs), fsys) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	return logs
}

// While the store is being recovered (held here, deterministically, at its first file
// mapping) /readyz is 503 naming it, /healthz is 200, the broker's port is already open
// and the ready line is not logged; once recovery completes /readyz turns 200, and the
// ready line is in the log by the time the first 200 is answered.
func TestReadyzDuringRecovery(t *testing.T) {
	dir := t.TempDir()
	fsys := mmap.NewErrorFS(mmap.OSFS{})
	held, release := make(chan struct{}), make(chan struct{})
	fsys.Inject(mmap.Rule{Ops: mmap.OpOpenMapped, Path: mmap.PathContains("commitlog"), Times: 1,
		Hook: func(mmap.Op, string) error {
			close(held)
			<-release
			return nil
		}})
	cfg := serveConfig(t, dir)
	logs := startServe(t, "standalone", cfg, fsys)
	var releaseOnce sync.Once
	t.Cleanup(func() { releaseOnce.Do(func() { close(release) }) }) // before serve's cleanup waits
	select {
	case <-held:
	case <-time.After(30 * time.Second):
		t.Fatal("the store never mapped its commit log")
	}
	code, r := probe(t, cfg.Broker.HTTPListen, "/readyz")
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Equal(t, []string{"store not recovered"}, r.Missing["broker"], "%+v", r)
	code, _ = probe(t, cfg.Broker.HTTPListen, "/healthz")
	require.Equal(t, http.StatusOK, code, "alive while recovering")
	c, err := net.Dial("tcp", cfg.Broker.Listen)
	require.NoError(t, err, "the broker's port is bound already")
	require.NoError(t, c.Close())
	require.NotContains(t, logs.String(), readyLine)

	releaseOnce.Do(func() { close(release) })
	testutil.Eventually(t, 30*time.Second, func() bool {
		code, _ := probe(t, cfg.Broker.HTTPListen, "/readyz")
		return code == http.StatusOK
	}, "/readyz 200 after recovery and registration")
	require.Contains(t, logs.String(), readyLine, "logged before the first 200")
	code, _ = probe(t, cfg.Broker.HTTPListen, "/healthz")
	require.Equal(t, http.StatusOK, code)
}

// A broker whose name server is not up is not ready (its store recovered); once the name
// server starts, /readyz turns 200 within the registration retry backoff.
func TestReadyzWaitsForRegistration(t *testing.T) {
	cfg := serveConfig(t, t.TempDir())
	late := testkit.FreeAddr(t)
	cfg.Broker.NamesrvAddrs = []string{late}
	logs := startServe(t, "broker", cfg, mmap.OSFS{})
	testutil.Eventually(t, 30*time.Second, func() bool {
		_, r, ok := tryProbe(t, cfg.Broker.HTTPListen, "/readyz")
		m := r.Missing["broker"]
		return ok && len(m) == 1 && m[0] == "not registered with a name server"
	}, "the store recovered, the registration missing")
	code, _ := probe(t, cfg.Broker.HTTPListen, "/readyz")
	require.Equal(t, http.StatusServiceUnavailable, code)
	code, _ = probe(t, cfg.Broker.HTTPListen, "/healthz")
	require.Equal(t, http.StatusOK, code)
	require.NotContains(t, logs.String(), readyLine)

	ns, err := nameserver.New(nameserver.DefaultOptions())
	require.NoError(t, err)
	ln, err := net.Listen("tcp", late)
	require.NoError(t, err, "the reserved port is still free")
	require.NoError(t, ns.Start(ln))
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		require.NoError(t, ns.Shutdown(ctx))
	}()
	testutil.Eventually(t, 20*time.Second, func() bool {
		code, _ := probe(t, cfg.Broker.HTTPListen, "/readyz")
		return code == http.StatusOK
	}, "/readyz 200 once the name server accepted the registration")
	require.Contains(t, logs.String(), readyLine)
	metrics := getMetrics(t, cfg.Broker.HTTPListen)
	require.Contains(t, metrics, "\nrocketmq_topic_number ", "the broker's collector is served")
	require.Contains(t, metrics, "\ngo_goroutines ")
}

// getMetrics GETs /metrics from the HTTP listener at addr.
func getMetrics(t *testing.T, addr string) string {
	t.Helper()
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}
	resp, err := c.Get("http://" + addr + "/metrics")
	require.NoError(t, err)
	defer func() { require.NoError(t, resp.Body.Close()) }()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(body)
}

// ferry namesrv serves its own HTTP listener (namesrv.httpListen, --http-listen).
func TestNamesrvReadyz(t *testing.T) {
	cfg := serveConfig(t, t.TempDir())
	cfg.NameServer.HTTPListen = testkit.FreeAddr(t)
	logs := startServe(t, "namesrv", cfg, mmap.OSFS{})
	testutil.Eventually(t, 30*time.Second, func() bool {
		code, _, ok := tryProbe(t, cfg.NameServer.HTTPListen, "/readyz")
		return ok && code == http.StatusOK
	}, "the name server serving")
	require.Contains(t, logs.String(), readyLine)
	metrics := getMetrics(t, cfg.NameServer.HTTPListen)
	require.Contains(t, metrics, "\ngo_goroutines ", "the runtime collectors")
	require.NotContains(t, metrics, "rocketmq_", "no broker here")
	_, err := net.Dial("tcp", cfg.Broker.HTTPListen)
	require.Error(t, err, "ferry namesrv does not serve broker.httpListen")
}

// The real binary: `ferry standalone` whose broker registers with a name server the test
// starts only after the ports are open. The ready line must not appear before that name
// server is up, and once it appears a client's first send succeeds (a new topic, routed
// through the registered TBW102 template), and the message is received.
func TestStandaloneProcessReadyLineMeansClientsCanUseIt(t *testing.T) {
	bin := testkit.Binary(t, "github.com/ferrymq/ferry/cmd/ferry")
	ns, br, httpAddr, late := testkit.FreeAddr(t), testkit.FreeAddr(t), testkit.FreeAddr(t), testkit.FreeAddr(t)
	cmd := exec.Command(bin, "standalone", "--data-dir", t.TempDir(), "--namesrv-listen", ns, "--broker-listen", br,
		"--http-listen", httpAddr, "--namesrv-addr", late, "--log-level", "info")
	cmd.Env = append(os.Environ(), haOnAnyPort)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	defer func() {
		require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
		require.NoError(t, cmd.Wait())
	}()
	lines := make(chan string, 1024)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	// Until the broker's store is recovered and its port served: no ready line.
	next := func(what string) string {
		t.Helper()
		select {
		case l, ok := <-lines:
			require.True(t, ok, "ferry exited while waiting for %s", what)
			return l
		case <-time.After(60 * time.Second):
			t.Fatalf("no log line while waiting for %s", what)
			return ""
		}
	}
	for l := next("the broker to start"); !strings.Contains(l, "broker started"); l = next("the broker to start") {
		require.NotContains(t, l, readyLine, "ready before the broker started")
	}
	code, r := probe(t, httpAddr, "/readyz")
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Equal(t, []string{"not registered with a name server"}, r.Missing["broker"])
	// Every line so far (the failed registrations among them) is not the ready line.
	for drained := false; !drained; {
		select {
		case l := <-lines:
			require.NotContains(t, l, readyLine, "ready before a name server accepted the broker")
		default:
			drained = true
		}
	}

	nso := nameserver.DefaultOptions()
	server, err := nameserver.New(nso)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", late)
	require.NoError(t, err, "the reserved port is still free")
	require.NoError(t, server.Start(ln))
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		require.NoError(t, server.Shutdown(ctx))
	}()
	for l := next("the ready line"); !strings.Contains(l, readyLine); l = next("the ready line") {
	}
	go func() {
		for range lines { // drain the rest of the log
		}
	}()

	// At the first attempt: no retry, no wait.
	c, err := client.New(client.WithNameServers(late))
	require.NoError(t, err)
	defer func() { require.NoError(t, c.Close()) }()
	p, err := c.NewProducer("ready-producers")
	require.NoError(t, err)
	defer func() { require.NoError(t, p.Close()) }()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := p.Send(ctx, message.NewMessage("ReadyTopic", []byte("first")))
	require.NoError(t, err, "a send right after the ready line")
	pc, err := c.NewPullConsumer("ready-consumers")
	require.NoError(t, err)
	// The send created the topic (autoCreateTopic); its own route reaches the name
	// server with the registration that creation triggers, which is not readiness: the
	// pull may wait for it, and for the dispatcher, which queues a stored message
	// asynchronously (a pull before that finds no new message).
	mq := client.MessageQueue{Topic: res.Topic, BrokerName: res.BrokerName, QueueID: res.QueueID}
	var pr client.PullResult
	testutil.Eventually(t, 20*time.Second, func() bool {
		pr, err = pc.Pull(ctx, mq, res.QueueOffset, 1, "*")
		return err == nil && pr.Status != client.PullNoNewMessage
	}, "the new topic's route and the message queued")
	require.Equal(t, client.PullFound, pr.Status)
	require.Len(t, pr.Messages, 1)
	require.Equal(t, "first", string(pr.Messages[0].Body))
}

// `ferry config` shows the HTTP listener each command serves: standalone's default, off
// for a broker, and --http-listen on the key of the server run.
func TestConfigShowsTheHTTPListener(t *testing.T) {
	data := t.TempDir()
	require.Equal(t, launch.StandaloneHTTPListen, configValue(t, "broker.httpListen", "standalone", "--data-dir", data))
	require.Empty(t, configValue(t, "broker.httpListen", "broker", "--data-dir", data))
	require.Empty(t, configValue(t, "broker.httpListen", "standalone", "--data-dir", data, "--http-listen", ""), "explicitly off")
	require.Equal(t, "127.0.0.1:9881", configValue(t, "namesrv.httpListen", "namesrv", "--http-listen", "127.0.0.1:9881"))
}
