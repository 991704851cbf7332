package testkit

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	RunChildRole(map[string]func([]string){
		"echo": func(args []string) {
			// One write, so that both lines are there once the first is.
			fmt.Print("READY\n" + strings.Join(args, " ") + "\n")
			select {} // killed by the test
		},
		"quit": func([]string) {},
	})
	goleak.VerifyTestMain(Main(m))
}

// fakeTB records the first failure and ends the goroutine it runs on, as t.Fatal does.
type fakeTB struct {
	testing.TB
	mu     sync.Mutex
	failed string
}

func (f *fakeTB) Fatalf(format string, args ...any) {
	f.mu.Lock()
	f.failed = fmt.Sprintf(format, args...)
	f.mu.Unlock()
	runtime.Goexit()
}

func (f *fakeTB) Fatal(args ...any) { f.Fatalf("%s", fmt.Sprint(args...)) }

// failure runs fn with a fakeTB on its own goroutine and returns the failure it reported
// ("" when none).
func failure(t *testing.T, fn func(tb testing.TB)) string {
	f := &fakeTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(f)
	}()
	<-done
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.failed
}

func TestUntil(t *testing.T) {
	var n atomic.Int32
	require.True(t, Until(time.Minute, time.Millisecond, func() bool { return n.Add(1) == 5 }))
	require.Equal(t, int32(5), n.Load(), "polled until the condition held, not after")
	start := time.Now()
	require.False(t, Until(20*time.Millisecond, time.Millisecond, func() bool { return false }))
	require.GreaterOrEqual(t, time.Since(start), 20*time.Millisecond, "gave up only after the timeout")
}

func TestEventuallyFailsNamingWhat(t *testing.T) {
	require.Empty(t, failure(t, func(tb testing.TB) {
		var n atomic.Int32
		Eventually(tb, time.Minute, func() bool { return n.Add(1) > 3 }, "three polls")
	}))
	msg := failure(t, func(tb testing.TB) {
		EventuallyEvery(tb, 10*time.Millisecond, time.Millisecond, func() bool { return false }, "the impossible")
	})
	require.Contains(t, msg, "the impossible")
	require.Contains(t, msg, "timed out after 10ms")
}

func TestBufferKeepsTheTail(t *testing.T) {
	var all Buffer
	tail := Buffer{Max: 4}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				_, _ = all.Write([]byte("ab"))
				_, _ = tail.Write([]byte("ab"))
			}
		})
	}
	wg.Wait()
	require.Len(t, all.String(), 1600)
	require.Equal(t, "abab", tail.String())
	_, _ = tail.Write([]byte("xyz"))
	require.Equal(t, "bxyz", tail.String())
	all.Reset()
	require.Empty(t, all.String())
}

func TestFreeAddrNeverRepeats(t *testing.T) {
	seen := map[string]bool{}
	for range 200 {
		addr := FreeAddr(t)
		require.True(t, strings.HasPrefix(addr, "127.0.0.1:"), addr)
		require.False(t, seen[addr], "%s handed out twice", addr)
		seen[addr] = true
	}
}

func TestDiskUsage(t *testing.T) {
	dir := t.TempDir()
	sparse := filepath.Join(dir, "sparse")
	require.NoError(t, os.WriteFile(sparse, nil, 0o600))
	require.NoError(t, os.Truncate(sparse, 64<<20))
	require.Less(t, DiskUsage(t, sparse), int64(1<<20), "a hole takes no space")
	full := filepath.Join(dir, "sub", "full")
	require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o700))
	require.NoError(t, os.WriteFile(full, make([]byte, 1<<20), 0o600))
	require.GreaterOrEqual(t, DiskUsage(t, full), int64(1<<20))
	require.Equal(t, DiskUsage(t, sparse)+DiskUsage(t, full), DiskUsage(t, dir), "a directory sums its files")
	require.Contains(t, failure(t, func(tb testing.TB) { DiskUsage(tb, filepath.Join(dir, "missing")) }), "missing")
}

func TestChildHandshake(t *testing.T) {
	c := StartChild(t, "echo", "a", "b c")
	require.Equal(t, "READY", c.Line(t, time.Minute))
	c.Kill(t)
	require.Equal(t, []string{"a b c"}, c.Rest(), "lines printed before the kill are kept")
	require.Empty(t, c.Rest())
	require.Contains(t, failure(t, func(tb testing.TB) { c.Line(tb, time.Minute) }), "exited")
}

func TestChildThatExitsFailsLineAndKill(t *testing.T) {
	c := StartChild(t, "quit")
	require.Contains(t, failure(t, func(tb testing.TB) { c.Line(tb, time.Minute) }), "child quit exited (<nil>)")
	require.Contains(t, failure(t, func(tb testing.TB) { c.Kill(tb) }), "before it was killed")

	u := StartChild(t, "no-such-role")
	require.Equal(t, "ERR unknown child role no-such-role", u.Line(t, time.Minute))
	require.Contains(t, failure(t, func(tb testing.TB) { u.Line(tb, time.Minute) }), "exit status 2")
}

func TestChildLineTimesOut(t *testing.T) {
	c := StartChild(t, "echo")
	require.Equal(t, "READY", c.Line(t, time.Minute))
	require.Empty(t, c.Line(t, time.Minute), "no arguments")
	require.Contains(t, failure(t, func(tb testing.TB) { c.Line(tb, 20*time.Millisecond) }), "no line within 20ms")
}

func TestBinaryBuildsOnce(t *testing.T) {
	const pkg = "github.com/ferrymq/ferry/internal/testkit/testdata/hello"
	bin := Binary(t, pkg)
	out, err := exec.Command(bin, "x", "y").Output()
	require.NoError(t, err)
	require.Equal(t, "[x y]\n", string(out))
	st, err := os.Stat(bin)
	require.NoError(t, err)
	require.Equal(t, bin, Binary(t, pkg), "the same program again")
	again, err := os.Stat(bin)
	require.NoError(t, err)
	require.Equal(t, st.ModTime(), again.ModTime(), "not rebuilt")

	const bad = "github.com/ferrymq/ferry/internal/testkit/testdata/nosuch"
	require.Contains(t, failure(t, func(tb testing.TB) { Binary(tb, bad) }), "go build "+bad)
	require.Contains(t, failure(t, func(tb testing.TB) { Binary(tb, bad) }), "go build "+bad, "a failed build fails again")
}

func TestCPUTicksCountsWork(t *testing.T) {
	user0, sys0 := CPUTicks(t, os.Getpid())
	start := time.Now()
	for time.Since(start) < 100*time.Millisecond { // busy: this process's CPU time grows
	}
	user, sys := CPUTicks(t, os.Getpid())
	require.Greater(t, user+sys, user0+sys0)
	require.Contains(t, failure(t, func(tb testing.TB) { CPUTicks(tb, -1) }), "/proc/-1/stat")
}

func TestWaitIdle(t *testing.T) {
	var calls int
	require.True(t, WaitIdle(time.Minute, func() time.Duration { calls++; return time.Second }))
	require.Equal(t, 3, calls, "a first reading and two quiet windows")
	var used time.Duration
	busy := func() time.Duration { used += 20 * time.Millisecond; return used }
	require.False(t, WaitIdle(500*time.Millisecond, busy), "10 % of a core is not idle")
}

// fixedUsage is a DiskUser with a fixed answer.
type fixedUsage struct {
	total, free uint64
	err         error
}

func (f fixedUsage) DiskUsage(string) (uint64, uint64, error) { return f.total, f.free, f.err }

func TestUsed(t *testing.T) {
	require.Equal(t, int64(300), Used(t, fixedUsage{total: 1000, free: 700}))
	require.Contains(t, failure(t, func(tb testing.TB) { Used(tb, fixedUsage{err: os.ErrPermission}) }), "permission denied")
}

// echoServer answers every connection by echoing what it reads, until the test ends.
func echoServer(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Go(func() { _, _ = io.Copy(c, c) })
		}
	})
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

func TestProxyFreezesCutsAndCutsAfter(t *testing.T) {
	p := StartProxy(t, echoServer(t))
	c, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err)
	defer c.Close()
	echo := func(msg string) (string, error) {
		if _, err := c.Write([]byte(msg)); err != nil {
			return "", err
		}
		buf := make([]byte, len(msg))
		_, err := io.ReadFull(c, buf)
		return string(buf), err
	}
	got, err := echo("hello")
	require.NoError(t, err)
	require.Equal(t, "hello", got)

	p.SetFrozen(true)
	_, err = c.Write([]byte("held"))
	require.NoError(t, err)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(50*time.Millisecond)))
	_, err = c.Read(make([]byte, 4))
	require.ErrorIs(t, err, os.ErrDeadlineExceeded, "nothing passes while frozen")
	require.NoError(t, c.SetReadDeadline(time.Time{}))
	p.SetFrozen(false)
	buf := make([]byte, 4)
	_, err = io.ReadFull(c, buf)
	require.NoError(t, err)
	require.Equal(t, "held", string(buf), "the held bytes pass once thawed")

	p.Cut()
	_, err = io.ReadFull(c, buf)
	require.ErrorIs(t, err, io.EOF, "a cut connection is closed")

	p.SetCutAfter(3)
	c2, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err)
	defer c2.Close()
	_, err = c2.Write([]byte("abcdef"))
	require.NoError(t, err)
	require.NoError(t, c2.SetReadDeadline(time.Now().Add(10*time.Second))) // fail, not hang, when not cut
	rest, err := io.ReadAll(c2)
	require.NoError(t, err)
	require.Equal(t, "abc", string(rest), "closed after 3 bytes from the target")
}

func TestProxyCutReplies(t *testing.T) {
	p := StartProxy(t, echoServer(t))
	p.CutReplies(1)
	c, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Write([]byte("lost"))
	require.NoError(t, err)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(10*time.Second)))
	got, err := io.ReadAll(c)
	require.NoError(t, err)
	require.Empty(t, got, "the reply is dropped and the connection closed")
	require.Equal(t, 1, p.RepliesCut())

	c2, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err)
	defer c2.Close()
	_, err = c2.Write([]byte("kept"))
	require.NoError(t, err)
	buf := make([]byte, 4)
	_, err = io.ReadFull(c2, buf)
	require.NoError(t, err)
	require.Equal(t, "kept", string(buf), "only the next reply was cut")
}

// A proxy closed while frozen delivers nothing it held: a cut link loses what was in
// flight (a replication test relies on it: an acknowledgement held by the freeze must
// not reach the master when the link is cut).
func TestProxyClosedWhileFrozenDropsWhatItHeld(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	received := make(chan []byte, 1)
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() {
		c, err := ln.Accept()
		if err != nil {
			received <- nil
			return
		}
		defer c.Close()
		b, _ := io.ReadAll(c)
		received <- b
	})
	p := StartProxy(t, ln.Addr().String())
	c, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err)
	defer c.Close()
	p.SetFrozen(true)
	_, err = c.Write([]byte("held"))
	require.NoError(t, err)
	Eventually(t, 5*time.Second, func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.holding == 1
	}, "the proxy holds the bytes")
	p.Close()
	require.Empty(t, <-received, "nothing held reaches the target after the proxy closed")
}

func TestClock(t *testing.T) {
	start := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	c := NewClock(start)
	require.Equal(t, start, c.Now())
	c.Add(time.Minute)
	require.Equal(t, start.Add(time.Minute), c.Now())
}
