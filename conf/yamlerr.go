package conf

import (
	"fmt"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// SyntaxError is a config file that is not valid YAML, located by file and
// line. It wraps ErrInvalidConfig (test with errors.Is, or errors.As for the
// position).
type SyntaxError struct {
	// File is the config file's path as given.
	File string
	// Line is the 1-based line on which the file stops being valid YAML: the
	// first line such that the file cut after it already fails with the same
	// error as the whole file.
	Line int
	// Problem is the YAML parser's description, e.g. "did not find expected key".
	Problem string
	// Text is the content of Line, without its line break.
	Text string
}

// Error renders the error as "invalid configuration: FILE line N: yaml
// syntax: PROBLEM: "TEXT"".
func (e *SyntaxError) Error() string {
	return fmt.Sprintf("%v: %s line %d: yaml syntax: %s: %q", ErrInvalidConfig, e.File, e.Line, e.Problem, e.Text)
}

// Unwrap returns ErrInvalidConfig.
func (e *SyntaxError) Unwrap() error { return ErrInvalidConfig }

// syntaxError locates the YAML syntax error err of data, read from path.
//
// The parser's own "yaml: line N:" is often wrong (go.yaml.in/yaml/v3
// decode.go, parser.fail): it prefers the mark where the enclosing construct
// started (a plain scalar, a flow sequence, a block mapping) over the mark of
// the problem itself, and it adds 1 to the 0-based mark only for scanner
// errors, so a parser error is reported one line early. A tab indenting line
// 3 after a scalar on line 2 is reported on line 2; "did not find expected
// key" for a bad indent on line 3 is reported on line 2; an error whose marks
// are both on the first line gets no line at all.
//
// The parser is deterministic and reads the file front to back, so the
// problem lies on the first line L such that the file cut after line L fails
// with the very same message (the wrong line number included). N is never
// past L (both marks are at or before the problem), so the search starts at
// N. Cutting inside a construct that the rest of the file closes gives a
// different message, hence no false match; an unclosed construct matches on
// the line where it was opened, which is where the fix belongs. The whole
// file always matches, so the search ends. It parses at most one prefix per
// line, which is cheap for config files.
func syntaxError(path string, data []byte, err error) error {
	full := err.Error()
	problem, reported := splitYAMLError(full)
	lines := strings.SplitAfter(string(data), "\n")
	if len(lines) > 1 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1] // the text after the final line break
	}
	n := len(lines)
	line := n
	for k := min(max(reported, 1), n); k < n; k++ {
		var doc yaml.Node
		if e := yaml.Unmarshal([]byte(strings.Join(lines[:k], "")), &doc); e != nil && e.Error() == full {
			line = k
			break
		}
	}
	return &SyntaxError{
		File:    path,
		Line:    line,
		Problem: problem,
		Text:    strings.TrimRight(lines[line-1], "\r\n"),
	}
}

// splitYAMLError splits "yaml: line N: problem" into the problem and N (0
// when the message has no line).
func splitYAMLError(msg string) (problem string, line int) {
	rest := strings.TrimPrefix(msg, "yaml: ")
	if after, ok := strings.CutPrefix(rest, "line "); ok {
		if num, p, ok := strings.Cut(after, ": "); ok {
			if n, err := strconv.Atoi(num); err == nil {
				return p, n
			}
		}
	}
	return rest, 0
}
