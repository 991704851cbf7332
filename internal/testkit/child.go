package testkit

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"
)

// childEnv names, in a test binary StartChild re-executed, the role it is to play.
const childEnv = "FERRY_TESTKIT_CHILD"

// RunChildRole makes a test binary that StartChild re-executed play the role its parent
// named: it calls roles[role] with the arguments StartChild was given and exits with
// status 0 should the role return (roles usually print a line and wait to be killed, or
// exit with their own status). An unknown role prints "ERR ..." and exits with status 2.
// In any other process it returns at once. Call it first in TestMain.
//
// Roles report to the parent on standard output, a line at a time (Child.Line).
func RunChildRole(roles map[string]func(args []string)) {
	role, ok := os.LookupEnv(childEnv)
	if !ok {
		return
	}
	run, ok := roles[role]
	if !ok {
		fmt.Println("ERR unknown child role", role) //nolint:forbidigo // a child answers its parent on stdout
		os.Exit(2)
	}
	var args []string
	if i := slices.Index(os.Args, "--"); i >= 0 {
		args = os.Args[i+1:]
	}
	run(args)
	os.Exit(0)
}

// Child is a copy of the test binary running a role (RunChildRole) as a child process.
// What it prints on standard output is read a line at a time (Line, Rest); its standard
// error is kept for failure messages. It is killed, if still running, when the test ends.
type Child struct {
	role   string
	cmd    *exec.Cmd
	stderr Buffer
	more   chan struct{} // a value after lines were added (extra ones dropped)
	exited chan struct{} // closed once every line is read and the process waited for

	mu      sync.Mutex
	lines   []string
	next    int   // lines[next:] are not yet taken
	waitErr error // cmd.Wait's result, read after exited is closed
}

// StartChild re-executes the test binary (with no test to run) as a child that plays
// role with args; the package's TestMain must call RunChildRole. The child is killed at
// tb's cleanup.
func StartChild(tb testing.TB, role string, args ...string) *Child {
	tb.Helper()
	c := &Child{role: role, more: make(chan struct{}, 1), exited: make(chan struct{})}
	c.cmd = exec.Command(os.Args[0], append([]string{"-test.run=^$", "--"}, args...)...)
	c.cmd.Env = append(os.Environ(), childEnv+"="+role)
	c.cmd.Stderr = &c.stderr
	out, err := c.cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		tb.Fatalf("start child %s: %v", role, err)
	}
	go c.read(out)
	tb.Cleanup(func() {
		_ = c.cmd.Process.Kill()
		<-c.exited
	})
	return c
}

// read collects the child's lines until its standard output closes, then waits for it.
func (c *Child) read(out io.Reader) {
	defer close(c.exited)
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		c.mu.Lock()
		c.lines = append(c.lines, sc.Text())
		c.mu.Unlock()
		select {
		case c.more <- struct{}{}:
		default:
		}
	}
	err := c.cmd.Wait()
	c.mu.Lock()
	c.waitErr = err
	c.mu.Unlock()
}

// take returns the next line not yet taken, if there is one.
func (c *Child) take() (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.next == len(c.lines) {
		return "", false
	}
	c.next++
	return c.lines[c.next-1], true
}

// Line returns the next line the child printed, waiting for it at most timeout; it fails
// tb when the child exits or timeout passes first.
func (c *Child) Line(tb testing.TB, timeout time.Duration) string {
	tb.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		if line, ok := c.take(); ok {
			return line
		}
		select {
		case <-c.more:
		case <-c.exited:
			if line, ok := c.take(); ok {
				return line
			}
			tb.Fatalf("child %s exited (%v) before printing a line\n%s", c.role, c.err(), c.stderr.String())
		case <-deadline.C:
			tb.Fatalf("child %s printed no line within %v\n%s", c.role, timeout, c.stderr.String())
		}
	}
}

// Rest returns the lines the child printed that Line has not returned, and takes them.
// After Kill these are all the lines it printed before it died.
func (c *Child) Rest() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	rest := slices.Clone(c.lines[c.next:])
	c.next = len(c.lines)
	return rest
}

// Kill kills the child with SIGKILL and waits until it is gone and everything it printed
// is read. It fails tb when the child had already exited by itself.
func (c *Child) Kill(tb testing.TB) {
	tb.Helper()
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		<-c.exited
		if errors.Is(err, os.ErrProcessDone) {
			tb.Fatalf("child %s exited (%v) before it was killed\n%s", c.role, c.err(), c.stderr.String())
		}
		tb.Fatalf("kill child %s: %v", c.role, err)
	}
	<-c.exited
}

// Stderr returns what the child has written to its standard error so far.
func (c *Child) Stderr() string { return c.stderr.String() }

// Pid returns the child's process id.
func (c *Child) Pid() int { return c.cmd.Process.Pid }

// err returns how the child exited.
func (c *Child) err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.waitErr
}
