package conf

import (
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// Every key the config structs accept has exactly one one-line meaning, and the table
// has no entry for a key that does not exist.
func TestKeyMeaningsCoverEveryKey(t *testing.T) {
	meanings := keyMeanings()
	keys := Keys()
	for _, k := range keys {
		m, ok := meanings[k]
		require.True(t, ok, "key %s has no meaning in keyMeanings", k)
		require.NotEmpty(t, strings.TrimSpace(m), k)
		require.NotContains(t, m, "\n", k)
		require.LessOrEqual(t, len(m), 90, "meaning of %s is longer than one short line", k)
	}
	var extra []string
	for k := range meanings {
		if !contains(keys, k) {
			extra = append(extra, k)
		}
	}
	sort.Strings(extra)
	require.Empty(t, extra, "keyMeanings has entries for keys Config does not have")
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

func settingOf(t *testing.T, settings []Setting, key string) Setting {
	t.Helper()
	for _, s := range settings {
		if s.Key == key {
			return s
		}
	}
	t.Fatalf("no setting %s", key)
	return Setting{}
}

// Each value is attributed to the layer that won, a file value to its line.
func TestExplainSources(t *testing.T) {
	file := writeFile(t, `# preamble comment

broker:
  flushInterval: 700ms
  listen: 127.0.0.1:1001
  dataDir: /file/data
  advertisedAddr:
  workers:
    send: 3
log:
  level: warn
`)
	env := envMap(map[string]string{
		"FERRY_BROKER_LISTEN":         "127.0.0.1:1002", // over the file
		"FERRY_BROKER_MAX_FRAME_SIZE": "32MiB",
		"FERRY_BROKER_DATA_DIR":       "/env/data", // under the flag
	})
	cfg, settings, err := Explain(LoadOptions{ConfigFile: file, LookupEnv: env, Flags: newFlags(t, "--data-dir", "/flag/data")})
	require.NoError(t, err)
	require.Len(t, settings, len(Keys()))
	for i, k := range Keys() {
		require.Equal(t, k, settings[i].Key, "settings are in Keys order")
	}
	want, err := Load(LoadOptions{ConfigFile: file, LookupEnv: env, Flags: newFlags(t, "--data-dir", "/flag/data")})
	require.NoError(t, err)
	require.Equal(t, want, cfg, "Explain loads what Load loads")

	for _, tc := range []struct {
		key, value, def, source string
	}{
		{"broker.flushInterval", "700ms", "500ms", "file " + file + ":4"},
		{"broker.workers.send", "3", "16", "file " + file + ":9"},
		{"log.level", "warn", "info", "file " + file + ":11"},
		{"broker.listen", "127.0.0.1:1002", "127.0.0.1:10911", "env FERRY_BROKER_LISTEN"},
		{"broker.maxFrameSize", "32MiB", "16MiB", "env FERRY_BROKER_MAX_FRAME_SIZE"},
		{"broker.dataDir", "/flag/data", "./data", "flag --data-dir"},
		{"broker.advertisedAddr", "", "", "default"}, // left empty in the file: Load ignores it
		{"broker.fileReservedTime", "72h", "72h", "default"},
		{"namesrv.brokerExpiry", "2m", "2m", "default"},
		{"broker.namesrvAddrs", "127.0.0.1:9876", "127.0.0.1:9876", "default"},
	} {
		s := settingOf(t, settings, tc.key)
		require.Equal(t, tc.value, s.Value, tc.key)
		require.Equal(t, tc.def, s.Default, tc.key)
		require.Equal(t, tc.source, s.Source.String(), tc.key)
		require.Equal(t, EnvVarName(tc.key), s.Env, tc.key)
		require.Equal(t, keyMeanings()[tc.key], s.Meaning, tc.key)
	}
	require.Equal(t, Source{Kind: SourceFile, File: file, Line: 4}, settingOf(t, settings, "broker.flushInterval").Source)
	require.Equal(t, "--data-dir", settingOf(t, settings, "broker.dataDir").Flag)
	require.Equal(t, "--namesrv-addr", settingOf(t, settings, "broker.namesrvAddrs").Flag)
	require.Empty(t, settingOf(t, settings, "broker.flushInterval").Flag)
}

// A value as Explain prints it reads back to the same value, for every key.
func TestExplainValuesRoundTrip(t *testing.T) {
	file := writeFile(t, `
namesrv:
  brokerExpiry: 90m
  maxFrameSize: 1500000
broker:
  namesrvAddrs: "a:9876;b:9876"
  flushInterval: 1m30s
  maxMessageSize: 1MiB
  fileReservedTime: 1h0m5s
  advertisedAddr: 10.0.0.1:10911
  autoCreateTopic: false
  delayLevels: "1s 2s"
`)
	cfg, settings, err := Explain(LoadOptions{ConfigFile: file, LookupEnv: envMap(nil)})
	require.NoError(t, err)
	require.Equal(t, "a:9876,b:9876", settingOf(t, settings, "broker.namesrvAddrs").Value)
	require.Equal(t, "1h30m", settingOf(t, settings, "namesrv.brokerExpiry").Value)
	require.Equal(t, "1500000B", settingOf(t, settings, "namesrv.maxFrameSize").Value)
	env := map[string]string{}
	for _, s := range settings {
		env[EnvVarName(s.Key)] = s.Value
	}
	again, err := Load(LoadOptions{LookupEnv: envMap(env)})
	require.NoError(t, err)
	require.Equal(t, cfg, again)
}

func TestExplainFailsLikeLoad(t *testing.T) {
	file := writeFile(t, "broker:\n  flushDiskType: X\n")
	cfg, settings, err := Explain(LoadOptions{ConfigFile: file, LookupEnv: envMap(nil)})
	require.ErrorIs(t, err, ErrInvalidConfig)
	require.Contains(t, err.Error(), "broker.flushDiskType:")
	require.Nil(t, cfg)
	require.Nil(t, settings)
}

func TestFormatDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0:                                     "0s",
		500 * time.Millisecond:                "500ms",
		2 * time.Minute:                       "2m",
		90 * time.Second:                      "1m30s",
		72 * time.Hour:                        "72h",
		time.Hour + 30*time.Minute:            "1h30m",
		time.Hour + 5*time.Second:             "1h0m5s",
		10*time.Minute + 500*time.Millisecond: "10m0.5s",
	} {
		require.Equal(t, want, formatDuration(d))
		back, err := time.ParseDuration(want)
		require.NoError(t, err)
		require.Equal(t, d, back)
	}
}

// A YAML syntax error names the file and the line the mistake is on, not the line the
// YAML library reports (see syntaxError).
func TestSyntaxErrorReportsTheRightLine(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		line       int // 1-based
		text       string
	}{
		// yaml.v3 says line 2: it reports where the plain scalar on line 2 began.
		{"tab indent", "broker:\n  listen: 127.0.0.1:1\n\tdataDir: /x\n", 3, "\tdataDir: /x"},
		// yaml.v3 says line 2: a parser error's 0-based mark, printed as is.
		{"bad indent", "# Ferry\n#\nbroker:\n  listen: a\n dataDir: /x\nlog:\n  level: info\n", 5, " dataDir: /x"},
		// yaml.v3 says line 4: where the flow sequence began, 0-based.
		{"unclosed flow", "broker:\n  listen: a\n  dataDir: /x\n  workers:\n    send: [1, 2\n    pull: 3\nlog:\n  level: info\n",
			5, "    send: [1, 2"},
		// yaml.v3 is right on these; cutting the file inside the flow sequence on lines
		// 2-3 fails differently, so the search does not stop there.
		{"mapping in value", "broker:\n  a: [1,\n    2]\n  b: 1\n  c: x: y\n  d: 2\n", 5, "  c: x: y"},
		{"bad token", "broker:\n  a: 1\n  b: 2\n  listen: @x\n", 4, "  listen: @x"},
		{"unclosed quote", "broker:\n  listen: \"abc\n  dataDir: /x\nlog:\n  level: info\n", 2, "  listen: \"abc"},
		// yaml.v3 says line 2 (a 0-based mark again).
		{"sequence in mapping", "log:\n  level: info\n- b\n", 3, "- b"},
		{"first line", "broker: [\n", 1, "broker: ["},
		{"no final newline", "log:\n  level: info\n  format: 'x", 3, "  format: 'x"},
		// yaml.v3 says line 2, as for "tab indent".
		{"crlf", "log:\r\n  level: info\r\n\tformat: json\r\n", 3, "\tformat: json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "ferry.yaml")
			require.NoError(t, os.WriteFile(path, []byte(tc.yaml), 0o600))
			_, err := Load(LoadOptions{ConfigFile: path, LookupEnv: envMap(nil)})
			require.ErrorIs(t, err, ErrInvalidConfig)
			raw := yaml.Unmarshal([]byte(tc.yaml), new(yaml.Node))
			t.Logf("yaml.v3: %v; ours: %v", raw, err)
			var se *SyntaxError
			require.True(t, errors.As(err, &se), "%v", err)
			require.Equal(t, tc.line, se.Line, "%v", err)
			require.Equal(t, path, se.File)
			require.Equal(t, tc.text, se.Text)
			require.NotEmpty(t, se.Problem)
			require.NotContains(t, se.Problem, "line ", "the library's line is dropped")
			require.Contains(t, err.Error(), path+" line "+strconv.Itoa(tc.line)+": yaml syntax: ")
		})
	}
}
