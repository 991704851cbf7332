package main

import (
	"bufio"
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/internal/testkit"
)

func TestRunRejectsBadConfigNamingTheKey(t *testing.T) {
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"standalone", "--broker-listen", "bad", "--data-dir", t.TempDir()}, &out, &errb)
	require.Equal(t, 1, code)
	require.Contains(t, errb.String(), "broker.listen")
}

func TestRunUsageAndConfig(t *testing.T) {
	var out, errb bytes.Buffer
	require.Equal(t, 2, run(context.Background(), nil, &out, &errb))
	require.Contains(t, errb.String(), "standalone")
	out.Reset()
	require.Equal(t, 0, run(context.Background(), []string{"config"}, &out, &errb))
	require.Contains(t, out.String(), "broker.dataDir")
	require.Equal(t, 2, run(context.Background(), []string{"nope"}, &out, &errb))
}

// Help and version are answers, not errors; a bad flag or a stray argument is an error
// that says what was wrong.
func TestRunHelpVersionAndBadArguments(t *testing.T) {
	for _, args := range [][]string{{"help"}, {"-h"}, {"--help"}} {
		var out, errb bytes.Buffer
		require.Equal(t, 0, run(context.Background(), args, &out, &errb), "%v", args)
		require.Contains(t, out.String(), "standalone", "%v prints the usage on stdout", args)
		require.Contains(t, out.String(), "--data-dir")
	}
	var out, errb bytes.Buffer
	require.Equal(t, 0, run(context.Background(), []string{"version"}, &out, &errb))
	require.True(t, strings.HasPrefix(out.String(), "ferry "), out.String())
	require.Contains(t, out.String(), "go1.")

	for args, want := range map[string]string{
		"broker --no-such-flag":      "unknown flag: --no-such-flag",
		"broker --data-dir":          "flag needs an argument",
		"standalone extra-thing":     `unexpected argument "extra-thing"`,
		"namesrv --log-level info x": `unexpected argument "x"`,
	} {
		var out, errb bytes.Buffer
		require.Equal(t, 2, run(context.Background(), strings.Fields(args), &out, &errb), args)
		require.Contains(t, errb.String(), want, args)
	}
}

// haOnAnyPort lets a test broker's HA listener take any free port instead of its
// listen port + 1.
const haOnAnyPort = "FERRY_BROKER_HA_LISTEN=127.0.0.1:0"

// The real binary in standalone mode: it serves both ports, lays the store out under
// --data-dir, and exits cleanly within 10 s of SIGTERM.
func TestStandaloneProcessStartsAndStopsGracefully(t *testing.T) {
	bin := testkit.Binary(t, "github.com/ferrymq/ferry/cmd/ferry")
	data := t.TempDir()
	ns, br := testkit.FreeAddr(t), testkit.FreeAddr(t)
	cmd := exec.Command(bin, "standalone", "--data-dir", data, "--namesrv-listen", ns, "--broker-listen", br, "--log-level", "info", "--http-listen", "")
	// The HA port would be br+1: under connection churn that even port is often held
	// by a client socket (Linux hands even ports to connect and odd ones to bind(0)).
	cmd.Env = append(os.Environ(), haOnAnyPort)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	sc := bufio.NewScanner(stderr)
	ready := false
	for sc.Scan() {
		if strings.Contains(sc.Text(), "ferry is ready") {
			ready = true
			break
		}
	}
	require.True(t, ready, "ferry reported ready")
	go func() {
		for sc.Scan() { // drain the rest of the log
		}
	}()
	for _, addr := range []string{ns, br} {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		require.NoError(t, err, addr)
		require.NoError(t, c.Close())
	}
	for _, p := range []string{"commitlog", "consumequeue", "config", "checkpoint", "abort", "lock"} {
		_, err := os.Stat(filepath.Join(data, p))
		require.NoError(t, err, "%s under the data dir", p)
	}
	// A second process on the same data directory is refused, naming the holder, and
	// exits without touching the store.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	second := exec.CommandContext(ctx, bin, "standalone", "--data-dir", data, "--http-listen", "", "--namesrv-listen", testkit.FreeAddr(t),
		"--broker-listen", testkit.FreeAddr(t))
	second.Env = append(os.Environ(), haOnAnyPort)
	out, err := second.CombinedOutput()
	require.Error(t, err, "the second process must fail: %s", out)
	require.Contains(t, string(out), "is in use")
	require.Contains(t, string(out), strconv.Itoa(cmd.Process.Pid), "the error names the process holding the store")
	start := time.Now()
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		require.NoError(t, err, "clean exit")
	case <-time.After(15 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("ferry did not exit within 15 s of SIGTERM")
	}
	require.Less(t, time.Since(start), 10*time.Second)
	_, err = os.Stat(filepath.Join(data, "abort"))
	require.True(t, os.IsNotExist(err), "abort file removed by the clean shutdown")
}

// A misspelled FERRY_* variable is not silently ignored: it is logged with the likely key.
func TestRunWarnsAboutUnknownEnvironmentVariables(t *testing.T) {
	t.Setenv("FERRY_BROKER_LISTN", "127.0.0.1:1")
	var out, errb bytes.Buffer
	require.Equal(t, 0, run(context.Background(), []string{"config"}, &out, &errb))
	require.Contains(t, errb.String(), "FERRY_BROKER_LISTN")
	require.Contains(t, errb.String(), "FERRY_BROKER_LISTEN")
}
