package logging

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func jsonLines(t *testing.T, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(buf)
	for sc.Scan() {
		var m map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &m), "line %q", sc.Text())
		out = append(out, m)
	}
	require.NoError(t, sc.Err())
	return out
}

func TestDefaultOptionsValidate(t *testing.T) {
	require.NoError(t, DefaultOptions().Validate())
	require.NoError(t, Options{}.Validate())
}

func TestLevelFiltering(t *testing.T) {
	for _, tc := range []struct {
		level string
		want  []string
	}{
		{"trace", []string{"trace", "debug", "info", "warn", "error"}},
		{"debug", []string{"debug", "info", "warn", "error"}},
		{"", []string{"info", "warn", "error"}},
		{"INFO", []string{"info", "warn", "error"}},
		{"warn", []string{"warn", "error"}},
		{"warning", []string{"warn", "error"}},
		{"error", []string{"error"}},
	} {
		t.Run(tc.level, func(t *testing.T) {
			var buf bytes.Buffer
			l, err := New(Options{Level: tc.level, Format: FormatJSON, Output: &buf})
			require.NoError(t, err)
			l.Trace().Msg("m")
			l.Debug().Msg("m")
			l.Info().Msg("m")
			l.Warn().Msg("m")
			l.Error().Msg("m")
			var got []string
			for _, m := range jsonLines(t, &buf) {
				got = append(got, m["level"].(string))
			}
			require.Equal(t, tc.want, got)
		})
	}
}

func TestJSONOutputParses(t *testing.T) {
	var buf bytes.Buffer
	l, err := New(Options{Level: "info", Format: FormatJSON, Output: &buf})
	require.NoError(t, err)
	before := time.Now().Add(-time.Second)
	l.Info().Str("topic", "T").Int64("offset", 42).Msg("stored")

	lines := jsonLines(t, &buf)
	require.Len(t, lines, 1)
	m := lines[0]
	require.Equal(t, "info", m["level"])
	require.Equal(t, "stored", m["message"])
	require.Equal(t, "T", m["topic"])
	require.EqualValues(t, 42, m["offset"])
	ts, err := time.Parse(TimeLayout, m["time"].(string))
	require.NoError(t, err)
	require.True(t, ts.After(before), "timestamp %v", ts)
}

func TestAutoIsJSONForNonTerminal(t *testing.T) {
	var buf bytes.Buffer
	l, err := New(Options{Format: FormatAuto, Output: &buf})
	require.NoError(t, err)
	l.Info().Msg("hello")
	require.Len(t, jsonLines(t, &buf), 1)

	// A regular file is not a terminal either.
	f, err := os.Create(filepath.Join(t.TempDir(), "log"))
	require.NoError(t, err)
	defer func() { require.NoError(t, f.Close()) }()
	require.False(t, isTerminal(f))
	l, err = New(Options{Output: f})
	require.NoError(t, err)
	l.Info().Msg("hello")
	data, err := os.ReadFile(f.Name())
	require.NoError(t, err)
	require.True(t, json.Valid(bytes.TrimSpace(data)), "got %q", data)
}

func TestConsoleFormat(t *testing.T) {
	var buf bytes.Buffer
	l, err := New(Options{Level: "debug", Format: "Console", Output: &buf})
	require.NoError(t, err)
	l.Debug().Str("queue", "q1").Msg("parked pull")
	out := buf.String()
	require.False(t, json.Valid([]byte(strings.TrimSpace(out))), "console output must not be JSON: %q", out)
	require.Contains(t, out, "DBG")
	require.Contains(t, out, "parked pull")
	require.Contains(t, out, "queue=q1")
	require.NotContains(t, out, "\x1b[", "no colours when not a terminal")
	// The time prefix uses the console layout.
	_, err = time.Parse(consoleTimeLayout, out[:len(consoleTimeLayout)])
	require.NoError(t, err, "got %q", out)
}

func TestInvalidOptions(t *testing.T) {
	for _, o := range []Options{
		{Level: "verbose"},
		{Level: "fatal"},
		{Format: "xml"},
	} {
		_, err := New(o)
		require.Error(t, err)
		require.True(t, errors.Is(err, ErrInvalidOptions), "%v", err)
		require.Error(t, o.Validate())
	}
	_, err := ParseLevel("nope")
	require.ErrorIs(t, err, ErrInvalidOptions)
	require.Contains(t, err.Error(), `"nope"`)
}

func TestComponent(t *testing.T) {
	var buf bytes.Buffer
	root, err := New(Options{Level: "warn", Format: FormatJSON, Output: &buf})
	require.NoError(t, err)

	inherit, err := Component(root, "namesrv", "")
	require.NoError(t, err)
	inherit.Info().Msg("dropped")
	inherit.Warn().Msg("kept")

	verbose, err := Component(root, "broker", "debug")
	require.NoError(t, err)
	verbose.Debug().Msg("kept too")

	lines := jsonLines(t, &buf)
	require.Len(t, lines, 2)
	require.Equal(t, "namesrv", lines[0]["component"])
	require.Equal(t, "broker", lines[1]["component"])
	require.Equal(t, "debug", lines[1]["level"])

	_, err = Component(root, "x", "loud")
	require.ErrorIs(t, err, ErrInvalidOptions)
}

func TestNop(t *testing.T) {
	l := Nop()
	l.Error().Msg("nothing happens")
	require.Equal(t, "disabled", l.GetLevel().String())
}

func TestSamplerLetsOneLineThroughPerInterval(t *testing.T) {
	var s Sampler
	base := time.Now().UnixNano()
	ok, n := s.allowAt(base)
	require.True(t, ok, "the first line goes through")
	require.Zero(t, n)
	for i := range 5 {
		ok, _ = s.allowAt(base + int64(i)*int64(100*time.Millisecond))
		require.False(t, ok, "line %d within the second is held back", i)
	}
	ok, n = s.allowAt(base + int64(time.Second))
	require.True(t, ok, "a line a second later goes through")
	require.EqualValues(t, 5, n, "with the count of the held-back lines")
	ok, n = s.allowAt(base + int64(2*time.Second))
	require.True(t, ok)
	require.Zero(t, n, "the count starts again")

	short := Sampler{Interval: time.Millisecond}
	ok, _ = short.allowAt(base)
	require.True(t, ok)
	ok, _ = short.allowAt(base + int64(time.Millisecond))
	require.True(t, ok, "Interval sets the spacing")
}
