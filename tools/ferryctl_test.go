package tools_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/ferrymq/ferry/internal/leaktest"
	"github.com/ferrymq/ferry/internal/testkit"
	"github.com/ferrymq/ferry/testutil"
)

// TestMain removes the built binary (testkit.Main) and checks for leaked goroutines;
// netpoll's pollers (the in-process broker's) stay.
func TestMain(m *testing.M) {
	code := testkit.Main(m).Run()
	if code == 0 {
		if err := goleak.Find(leaktest.Netpoll()...); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// ferryctl builds the real binary once per test process.
func ferryctl(t *testing.T) string {
	t.Helper()
	return testkit.Binary(t, "github.com/ferrymq/ferry/cmd/ferryctl")
}

// run executes ferryctl with args and returns stdout, stderr and the exit status.
func run(t *testing.T, namesrv string, args ...string) (string, string, int) {
	t.Helper()
	return runEnv(t, []string{"FERRY_NAMESRV=" + namesrv}, args...)
}

// runEnv is run with the environment variables env (KEY=value) set; ferryctl's ACL
// variables are not inherited from the test's environment.
func runEnv(t *testing.T, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(ferryctl(t), args...)
	for _, kv := range cmd.Environ() {
		if !strings.HasPrefix(kv, "FERRY_ACCESS_KEY=") && !strings.HasPrefix(kv, "FERRY_SECRET_KEY=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return out.String(), errb.String(), code
}

func TestSendConsumeAndBench(t *testing.T) {
	c := testutil.StartCluster(t)
	out, errOut, code := run(t, c.NamesrvAddr, "send", "-t", "CtlTopic", "--tags", "created", "--keys", "order-42",
		"-p", "color=red", "--count", "3", "-o", "json", "hello ferry")
	require.Equal(t, 0, code, errOut)
	var sent []struct {
		MsgID       string `json:"msgId"`
		QueueOffset int64  `json:"queueOffset"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &sent))
	require.Len(t, sent, 3)

	out, errOut, code = run(t, c.NamesrvAddr, "consume", "-t", "CtlTopic", "--from", "first", "--count", "3", "-o", "json")
	require.Equal(t, 0, code, errOut)
	var got []map[string]any
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var m map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &m), sc.Text())
		got = append(got, m)
	}
	require.Len(t, got, 3, "one JSON object per message")
	ids := map[string]bool{}
	for _, m := range got {
		require.Equal(t, "hello ferry", m["body"])
		require.Equal(t, "created", m["tags"])
		require.Equal(t, "red", m["properties"].(map[string]any)["color"])
		ids[m["msgId"].(string)] = true
	}
	for _, s := range sent {
		require.True(t, ids[s.MsgID], "message %s consumed", s.MsgID)
	}

	out, errOut, code = run(t, c.NamesrvAddr, "bench", "produce", "-t", "CtlBench", "--count", "3000", "--duration", "0", "--size", "256", "-o", "json")
	require.Equal(t, 0, code, errOut)
	var rep struct {
		Kind      string `json:"kind"`
		Messages  int64  `json:"messages"`
		Errors    int64  `json:"errors"`
		LatencyUs struct {
			P50, P99 float64
		} `json:"latencyUs"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	require.Equal(t, "produce", rep.Kind)
	require.Equal(t, int64(3000), rep.Messages)
	require.Zero(t, rep.Errors)
	require.Positive(t, rep.LatencyUs.P50)
	require.GreaterOrEqual(t, rep.LatencyUs.P99, rep.LatencyUs.P50)
	require.NotContains(t, errOut, "\r", "no bar when stderr is not a terminal")
}

func TestBadInputIsOneLineAndNonZero(t *testing.T) {
	_, errOut, code := run(t, "127.0.0.1:1", "send", "-t", "T", "x")
	require.Equal(t, 1, code)
	require.Equal(t, 1, strings.Count(strings.TrimSpace(errOut), "\n")+1, "one line: %q", errOut)
	require.Contains(t, errOut, "no name server answered")
	require.NotContains(t, errOut, "goroutine", "never a stack trace")

	_, errOut, code = run(t, "127.0.0.1:1", "send", "-t", "T", "-o", "xml", "x")
	require.Equal(t, 2, code, errOut)
	require.Contains(t, errOut, "-o must be")
	_, errOut, code = run(t, "127.0.0.1:1", "send", "x")
	require.Equal(t, 2, code, errOut)
	require.Contains(t, errOut, "--topic is required")
	_, errOut, code = run(t, "127.0.0.1:1", "bogus")
	require.Equal(t, 2, code, errOut)
	_, errOut, code = run(t, "127.0.0.1:1", "send", "-t", "bad topic!", "x")
	require.Equal(t, 1, code, errOut)
	require.Contains(t, errOut, "illegal")
}

func TestBenchTx(t *testing.T) {
	c := testutil.StartCluster(t)
	out, errOut, code := run(t, c.NamesrvAddr, "bench", "tx", "-t", "CtlTx", "--count", "200", "--duration", "0",
		"--producers", "2", "--rollback-every", "4", "-o", "json")
	require.Equal(t, 0, code, errOut)
	var rep struct {
		Kind     string `json:"kind"`
		Messages int64  `json:"messages"`
		Errors   int64  `json:"errors"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	require.Equal(t, "tx", rep.Kind)
	require.Equal(t, int64(200), rep.Messages)
	require.Zero(t, rep.Errors)
	var status []struct{ MinOffset, MaxOffset int64 }
	testutil.Eventually(t, 10*time.Second, func() bool {
		status = nil
		o, _, code := run(t, c.NamesrvAddr, "topic", "status", "-t", "CtlTx", "-o", "json")
		if code != 0 || json.Unmarshal([]byte(o), &status) != nil {
			return false
		}
		var n int64
		for _, q := range status {
			n += q.MaxOffset - q.MinOffset
		}
		return n == 150
	}, "the 150 committed transactions (50 of 200 rolled back) are in the topic")
}
