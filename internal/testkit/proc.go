package testkit

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// CPUTicks returns the user and system CPU time process pid has used so far, from
// /proc/<pid>/stat, in clock ticks (USER_HZ, 100 on Linux: 10 ms resolution). It fails tb
// when the file cannot be read or parsed.
func CPUTicks(tb testing.TB, pid int) (user, sys time.Duration) {
	tb.Helper()
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		tb.Fatal(err)
	}
	// utime and stime are fields 14 and 15 of the line, the 12th and 13th after the
	// parenthesised command name.
	f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	if len(f) < 13 {
		tb.Fatalf("unexpected /proc/%d/stat: %q", pid, stat)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		tb.Fatal(err)
	}
	const tick = time.Second / 100
	return time.Duration(utime) * tick, time.Duration(stime) * tick
}

// WaitIdle waits until a process used less than 5 % of a core over two 200 ms windows in
// a row, cpu returning the CPU time it has used so far: then the work left over from its
// start (pre-faulting a segment, say) or from a previous run is over, and is not billed
// to what a benchmark measures next. It returns false when timeout passed first.
func WaitIdle(timeout time.Duration, cpu func() time.Duration) bool {
	const window, limit = 200 * time.Millisecond, 10 * time.Millisecond
	deadline := time.Now().Add(timeout)
	quiet := 0
	for last := cpu(); quiet < 2; {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(window)
		now := cpu()
		if now-last < limit {
			quiet++
		} else {
			quiet = 0
		}
		last = now
	}
	return true
}
