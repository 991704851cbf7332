//go:build linux

package interop

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ferrymq/ferry/internal/testkit"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
)

// ferryProc is a `ferry standalone` child process started by a benchmark.
type ferryProc struct {
	cmd         *exec.Cmd
	namesrvAddr string
	brokerAddr  string
	pprofAddr   string // empty: no --pprof-listen
	log         *testkit.Buffer
	exited      chan struct{} // closed once cmd.Wait has returned
	waitErr     error         // cmd.Wait's result, read after exited is closed
}

// ferryPkg is the package of the ferry program the process tests start (testkit.Binary).
const ferryPkg = "github.com/ferrymq/ferry/cmd/ferry"

// startFerryProcess builds cmd/ferry (once per test process), starts it in standalone
// mode (async flush, its own data directory and free loopback ports, --pprof-listen when
// withPprof) and waits until the name server answers the route of the broker's default
// topic, that is until the broker has registered. The process is stopped with SIGTERM at
// cleanup.
func startFerryProcess(tb testing.TB, withPprof bool) *ferryProc {
	tb.Helper()
	dir := tb.TempDir()
	bin := testkit.Binary(tb, ferryPkg)
	p := &ferryProc{
		namesrvAddr: testkit.FreeAddr(tb),
		brokerAddr:  testkit.FreeAddr(tb),
		log:         &testkit.Buffer{Max: 16 << 10},
		exited:      make(chan struct{}),
	}
	args := []string{
		"standalone", "--data-dir", filepath.Join(dir, "data"),
		"--namesrv-listen", p.namesrvAddr, "--broker-listen", p.brokerAddr,
		"--log-level", "warn", "--http-listen", "",
	}
	if withPprof {
		p.pprofAddr = testkit.FreeAddr(tb)
		args = append(args, "--pprof-listen", p.pprofAddr)
	}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env = append(os.Environ(), haOnAnyPort)
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	// Should this process die without its cleanup, the child dies with it.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		tb.Fatalf("start ferry: %v", err)
	}
	go func() {
		p.waitErr = p.cmd.Wait()
		close(p.exited)
	}()
	tb.Cleanup(func() { p.stop(tb) })
	p.waitRegistered(tb, 30*time.Second)
	return p
}

// waitRegistered polls the name server for the route of TBW102, the topic the broker
// registers for auto-creation, until it is there.
func (p *ferryProc) waitRegistered(tb testing.TB, timeout time.Duration) {
	tb.Helper()
	opts := remoting.DefaultClientOptions()
	opts.RequestTimeout = time.Second
	cli, err := remoting.NewClient(opts)
	if err != nil {
		tb.Fatal(err)
	}
	defer func() { _ = cli.Close() }()
	deadline := time.Now().Add(timeout)
	for {
		select {
		case <-p.exited:
			tb.Fatalf("ferry exited before serving: %v\n%s", p.waitErr, p.log)
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		resp, err := cli.Invoke(ctx, p.namesrvAddr,
			remoting.NewRequest(int16(protocol.GetRouteInfoByTopic), map[string]string{"topic": "TBW102"}))
		cancel()
		if err == nil && resp.Code == int16(protocol.Success) {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("ferry did not serve the TBW102 route within %s (last: %v)\n%s", timeout, err, p.log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop sends SIGTERM and waits for a clean exit, killing the process after 15 s.
func (p *ferryProc) stop(tb testing.TB) {
	tb.Helper()
	select {
	case <-p.exited:
		tb.Errorf("ferry exited early: %v\n%s", p.waitErr, p.log)
		return
	default:
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		tb.Errorf("SIGTERM ferry: %v", err)
	}
	select {
	case <-p.exited:
		if p.waitErr != nil {
			tb.Errorf("ferry exit: %v\n%s", p.waitErr, p.log)
		}
	case <-time.After(15 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
		tb.Errorf("ferry did not exit within 15 s of SIGTERM\n%s", p.log)
	}
}

// waitIdle waits until the child used less than 5 % of a core over two 200 ms windows in
// a row, so that work left over from startup (the background pre-faulting of the next
// commit-log segment) or from the previous run is not billed to the next timed loop. It
// gives up after timeout, logging it.
func (p *ferryProc) waitIdle(tb testing.TB, timeout time.Duration) {
	tb.Helper()
	if !testkit.WaitIdle(timeout, func() time.Duration { return p.cpu(tb) }) {
		tb.Logf("ferry still busy after %s; measuring anyway", timeout)
	}
}

// cpu returns the CPU time (user + system, all threads) the child has used so far, with
// nanosecond resolution from its process CPU-time clock, or from /proc/<pid>/stat in clock
// ticks should that clock be unavailable.
func (p *ferryProc) cpu(tb testing.TB) time.Duration {
	tb.Helper()
	// MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED) of the kernel, what clock_getcpuclockid(3)
	// returns: the process's summed scheduler run time, exited threads included.
	clock := int32(^uint32(p.cmd.Process.Pid)<<3 | 2)
	var ts unix.Timespec
	if err := unix.ClockGettime(clock, &ts); err == nil {
		return time.Duration(ts.Nano())
	}
	user, sys := p.cpuTicks(tb)
	return user + sys
}

// cpuTicks returns the child's user and system CPU time from /proc/<pid>/stat, in clock
// ticks (USER_HZ, 100 on Linux: 10 ms resolution).
func (p *ferryProc) cpuTicks(tb testing.TB) (user, sys time.Duration) {
	tb.Helper()
	return testkit.CPUTicks(tb, p.cmd.Process.Pid)
}

// selfCPU returns the CPU time this process has used so far.
func selfCPU(tb testing.TB) time.Duration {
	tb.Helper()
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_PROCESS_CPUTIME_ID, &ts); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ts.Nano())
}

// fetchPprof saves the child's /debug/pprof/<path> to file.
func (p *ferryProc) fetchPprof(path, file string) error {
	if p.pprofAddr == "" {
		return errors.New("ferry runs without --pprof-listen")
	}
	cli := http.Client{Timeout: time.Minute, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := cli.Get("http://" + p.pprofAddr + "/debug/pprof/" + path)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return fmt.Errorf("pprof %s: %s: %s", path, resp.Status, msg)
	}
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	return os.WriteFile(file, data, 0o600)
}

// haOnAnyPort lets a child broker's HA listener take any free port instead of its listen
// port + 1, which under connection churn is often held by a client socket (Linux hands
// even ports to connect and odd ones to bind(0)).
const haOnAnyPort = "FERRY_BROKER_HA_LISTEN=127.0.0.1:0"
