package testkit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// RunScripts runs the scripted tests of a deterministic state machine (the style of
// etcd-io/raft's testdata): each file matching glob is a subtest, and a list of blocks
//
//	command key=value ...
//	----
//	expected output
//
// separated by blank lines; blank and '#' lines between blocks are kept as they are.
// newRun is called once per file and returns the function that executes one command
// line and returns its output. With rewrite the expected output is replaced by what the
// commands print (written back only when the subtest passed; review the diff);
// otherwise a difference fails the subtest, naming the file and line.
func RunScripts(t *testing.T, glob string, rewrite bool, newRun func(t *testing.T) func(line string) string) {
	t.Helper()
	files, err := filepath.Glob(glob)
	if err != nil || len(files) == 0 {
		t.Fatalf("scripts %s: none found (%v)", glob, err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), filepath.Ext(f)), func(t *testing.T) {
			runScript(t, f, rewrite, newRun(t))
		})
	}
}

func runScript(t *testing.T, path string, rewrite bool, run func(string) string) {
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(raw), "\n")
	var out strings.Builder
	if rewrite {
		defer func() {
			if t.Failed() {
				t.Logf("output so far:\n%s", out.String())
				return
			}
			if err := os.WriteFile(path, []byte(strings.TrimRight(out.String(), "\n")+"\n"), 0o644); err != nil {
				t.Error(err)
			}
		}()
	}
	for i := 0; i < len(lines); {
		line := lines[i]
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			out.WriteString(line + "\n")
			i++
			continue
		}
		if i+1 >= len(lines) || lines[i+1] != "----" {
			t.Fatalf("%s:%d: command must be followed by ----", path, i+2)
		}
		j := i + 2
		for j < len(lines) && lines[j] != "" {
			j++
		}
		want := strings.Join(lines[i+2:j], "\n")
		got := strings.TrimRight(run(line), "\n")
		out.WriteString(line + "\n----\n" + got + "\n")
		if !rewrite && got != want {
			t.Fatalf("%s:%d: %s\nwant:\n%s\ngot:\n%s", path, i+1, line, want, got)
		}
		i = j
	}
}
