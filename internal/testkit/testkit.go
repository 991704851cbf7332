// Package testkit is what the tests of every layer share: polling instead of sleeping
// (Eventually, Until), the test binary re-run as a child process with a line handshake
// (StartChild, RunChildRole), a program built once per test process (Binary, Main), a
// child's CPU time and the wait until it is idle (CPUTicks, WaitIdle), the disk space
// files take (DiskUsage, Used), golden files (Testdata), a log sink safe for concurrent
// writers (Buffer), free loopback addresses (FreeAddr) and a TCP proxy that freezes or
// cuts a link (Proxy), and the runner of scripted state-machine tests (RunScripts).
//
// It imports only the standard library, so that any package's tests may use it, down to
// the lowest layer; package testutil, which starts whole servers, builds on it. Only tests
// import it.
package testkit

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Eventually polls cond every millisecond until it holds; when timeout passes first it
// fails tb, naming what it waited for. cond runs on the calling goroutine, so it may
// itself fail tb.
func Eventually(tb testing.TB, timeout time.Duration, cond func() bool, what string) {
	tb.Helper()
	EventuallyEvery(tb, timeout, time.Millisecond, cond, what)
}

// EventuallyEvery is Eventually polling every interval, for conditions that cost a
// request or a file read to evaluate.
func EventuallyEvery(tb testing.TB, timeout, interval time.Duration, cond func() bool, what string) {
	tb.Helper()
	if !Until(timeout, interval, cond) {
		tb.Fatalf("timed out after %v waiting for: %s", timeout, what)
	}
}

// Until polls cond every interval until it holds (true) or timeout passes (false): for
// waits whose failure message says what was seen meanwhile.
func Until(timeout, interval time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(interval)
	}
	return true
}

// Testdata returns the contents of testdata/name, the package's golden files, failing tb
// when it cannot be read.
func Testdata(tb testing.TB, name string) []byte {
	tb.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		tb.Fatalf("golden file: %v", err)
	}
	return data
}
