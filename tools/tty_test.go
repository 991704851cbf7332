//go:build linux

package tools_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/testutil"
)

// TestBenchProgressBarOnATerminal runs `ferryctl bench produce` on a pseudo-terminal: it
// must draw a progress bar (rewritten in place with \r) and end with its table; on a
// pipe (TestSendConsumeAndBench) it writes plain lines instead.
func TestBenchProgressBarOnATerminal(t *testing.T) {
	c := testutil.StartCluster(t)
	cmd := exec.Command(ferryctl(t), "bench", "produce", "-t", "TTYBench", "--duration", "2s", "--producers", "1", "--size", "128")
	cmd.Env = append(cmd.Environ(), "FERRY_NAMESRV="+c.NamesrvAddr)
	tty, err := pty.Start(cmd)
	require.NoError(t, err)
	defer func() { _ = tty.Close() }()
	var out bytes.Buffer
	copied := make(chan error, 1)
	go func() {
		_, err := io.Copy(&out, tty)
		copied <- err
	}()
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case err := <-waited:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("bench produce did not finish")
	}
	select { // the reader ends with EIO once the child has exited and the pty drained
	case err := <-copied:
		if err != nil && !errors.Is(err, syscall.EIO) && !errors.Is(err, os.ErrClosed) {
			require.NoError(t, err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("reading the terminal did not end")
	}
	s := out.String()
	require.Contains(t, s, "\r[", "a bar rewritten in place")
	require.Contains(t, s, "%", "with the share done")
	require.Contains(t, s, "msgs/s")
	require.True(t, strings.Contains(s, "produce") && strings.Contains(s, "p99"), "the final table: %q", s)
}
