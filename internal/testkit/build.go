package testkit

import (
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
)

// built holds the programs Binary built in this process, by package, and the
// directory they are in; Main's Run removes it.
var built struct {
	sync.Mutex
	dir  string
	bins map[string]string
	errs map[string]error
}

// underMain is set while Main's Run runs the tests: Binary refuses to build otherwise,
// since nothing would remove what it built.
var underMain atomic.Bool

// Tests runs a package's tests through the kit; see Main.
type Tests struct{ m *testing.M }

// Main wraps m for TestMain: its Run runs the tests, then removes what the kit made for
// the whole process (the programs Binary built). It is a goleak.TestingM, so
//
//	func TestMain(m *testing.M) { goleak.VerifyTestMain(testkit.Main(m)) }
//
// checks for leaked goroutines as well.
func Main(m *testing.M) Tests { return Tests{m: m} }

// Run runs the tests and returns their exit code, after removing the built programs.
func (t Tests) Run() int {
	underMain.Store(true)
	code := t.m.Run()
	underMain.Store(false)
	built.Lock()
	defer built.Unlock()
	if built.dir != "" {
		if err := os.RemoveAll(built.dir); err != nil && code == 0 {
			fmt.Fprintln(os.Stderr, "testkit: removing built programs:", err) //nolint:forbidigo // a test binary reports beside the testing package's output
			code = 1
		}
		built.dir, built.bins, built.errs = "", nil, nil
	}
	return code
}

// Binary returns the path of the program of the Go package pkg (an import path such as
// "github.com/ferrymq/ferry/cmd/ferry"), built with `go build` the first time a test of
// this process asks for it and shared by the later ones; a failed build fails every
// test that asks. The package's TestMain must run the tests through Main, which removes
// the programs afterwards.
func Binary(tb testing.TB, pkg string) string {
	tb.Helper()
	if !underMain.Load() {
		tb.Fatalf("testkit.Binary(%q): TestMain must run the tests through testkit.Main", pkg)
	}
	built.Lock()
	defer built.Unlock()
	if bin, ok := built.bins[pkg]; ok {
		return bin
	}
	if err, ok := built.errs[pkg]; ok {
		tb.Fatalf("go build %s: %v", pkg, err)
	}
	if built.dir == "" {
		dir, err := os.MkdirTemp("", "ferry-testkit-bin-")
		if err != nil {
			tb.Fatal(err)
		}
		built.dir, built.bins, built.errs = dir, map[string]string{}, map[string]error{}
	}
	// A directory per package, so that two packages of one name do not collide.
	bin := filepath.Join(built.dir, strconv.Itoa(len(built.bins)+len(built.errs)), path.Base(pkg))
	out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput()
	if err != nil {
		built.errs[pkg] = fmt.Errorf("%w\n%s", err, out)
		tb.Fatalf("go build %s: %v", pkg, built.errs[pkg])
	}
	built.bins[pkg] = bin
	return bin
}
