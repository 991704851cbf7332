//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ferrymq/ferry/internal/testkit"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
)

// footprintBinEnv names a ferry binary for BenchmarkIdleFootprint to measure instead of
// building this checkout (to compare with an older build, for example).
const footprintBinEnv = "FERRY_FOOTPRINT_BIN"

// BenchmarkIdleFootprint measures what an idle `ferry standalone` costs on an empty data
// directory, each iteration a new child process on a new directory with no config file:
//
//	ready-ms   from exec until the broker answers a request with SUCCESS
//	routed-ms  from exec until the name server answers the TBW102 route (registered)
//	rss-MB     VmRSS of the child once it has gone idle (under 5 % of a core for 400 ms)
//	hwm-MB     VmHWM, the peak resident set until then
//	disk-MB    blocks allocated under the data directory (fallocated space included)
//
// Nothing is asserted; docs/benchmarks.md ("Idle footprint") records the numbers.
//
//	go test -run '^$' -bench IdleFootprint -benchtime=5x ./cmd/ferry/
//	FERRY_FOOTPRINT_BIN=/tmp/ferry-old go test -run '^$' -bench IdleFootprint -benchtime=5x ./cmd/ferry/
func BenchmarkIdleFootprint(b *testing.B) {
	bin := os.Getenv(footprintBinEnv)
	if bin == "" {
		bin = testkit.Binary(b, "github.com/ferrymq/ferry/cmd/ferry")
	}
	var ready, routed, rss, hwm, disk float64
	for i := 0; i < b.N; i++ {
		m := measureIdle(b, bin)
		ready += m.ready.Seconds() * 1000
		routed += m.routed.Seconds() * 1000
		rss += float64(m.rss) / (1 << 20)
		hwm += float64(m.hwm) / (1 << 20)
		disk += float64(m.disk) / (1 << 20)
	}
	n := float64(b.N)
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(ready/n, "ready-ms")
	b.ReportMetric(routed/n, "routed-ms")
	b.ReportMetric(rss/n, "rss-MB")
	b.ReportMetric(hwm/n, "hwm-MB")
	b.ReportMetric(disk/n, "disk-MB")
}

// idleFootprint is one measurement of BenchmarkIdleFootprint.
type idleFootprint struct {
	ready, routed time.Duration
	rss, hwm      int64 // bytes
	disk          int64 // bytes allocated under the data directory
}

// measureIdle starts bin standalone on a new empty directory and free ports, measures it
// and stops it with SIGTERM.
func measureIdle(b *testing.B, bin string) idleFootprint {
	b.Helper()
	data := filepath.Join(b.TempDir(), "data")
	ns, br := testkit.FreeAddr(b), testkit.FreeAddr(b)
	cmd := exec.Command(bin, "standalone", "--data-dir", data, "--namesrv-listen", ns,
		"--broker-listen", br, "--log-level", "warn", "--http-listen", "")
	cmd.Env = append(os.Environ(), haOnAnyPort)
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cli, err := remoting.NewClient(remoting.DefaultClientOptions())
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = cli.Close() }()

	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
			b.Errorf("ferry did not exit within 15 s of SIGTERM")
		}
	}()
	answered := func(addr string, req *remoting.Command) bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		resp, err := cli.Invoke(ctx, addr, req)
		return err == nil && resp.Code == int16(protocol.Success)
	}
	var m idleFootprint
	for deadline := start.Add(60 * time.Second); m.ready == 0 || m.routed == 0; time.Sleep(2 * time.Millisecond) {
		select {
		case err := <-exited:
			b.Fatalf("ferry exited before serving: %v\n%s", err, logs.String())
		default:
		}
		if time.Now().After(deadline) {
			b.Fatalf("ferry not ready within 60 s\n%s", logs.String())
		}
		if m.ready == 0 && answered(br, remoting.NewRequest(int16(protocol.GetAllSubscriptionGroupConfig), nil)) {
			m.ready = time.Since(start)
		}
		if m.routed == 0 && answered(ns, remoting.NewRequest(int16(protocol.GetRouteInfoByTopic), map[string]string{"topic": "TBW102"})) {
			m.routed = time.Since(start)
		}
	}
	testkit.WaitIdle(30*time.Second, func() time.Duration {
		user, sys := testkit.CPUTicks(b, cmd.Process.Pid)
		return user + sys
	})
	m.rss, m.hwm = procStatus(b, cmd.Process.Pid)
	m.disk = testkit.DiskUsage(b, data)
	return m
}

// procStatus returns VmRSS and VmHWM of pid in bytes.
func procStatus(b *testing.B, pid int) (rss, hwm int64) {
	b.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || (k != "VmRSS" && k != "VmHWM") {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			b.Fatalf("/proc/%d/status: %s: %v", pid, sc.Text(), err)
		}
		if k == "VmRSS" {
			rss = kb << 10
		} else {
			hwm = kb << 10
		}
	}
	return rss, hwm
}
