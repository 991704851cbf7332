package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/conf"
)

// configRows runs `ferry <args>` and returns the table's header and its rows by key.
func configRows(t *testing.T, args ...string) (header string, rows map[string]string) {
	t.Helper()
	var out, errb bytes.Buffer
	require.Equal(t, 0, run(context.Background(), args, &out, &errb), errb.String())
	lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	rows = map[string]string{}
	for _, l := range lines[1:] {
		rows[strings.Fields(l)[0]] = l
	}
	return lines[0], rows
}

func writeConfig(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "broker.yaml")
	require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
	return p
}

// `ferry config` shows each setting's effective value, where it came from, its default
// and its meaning, in aligned columns, for the sections the mode reads.
func TestRunConfigShowsValueSourceDefaultAndMeaning(t *testing.T) {
	file := writeConfig(t, "broker:\n  brokerName: broker-b\n  flushInterval: 700ms\n")
	t.Setenv("FERRY_BROKER_WORKERS_SEND", "3")
	header, rows := configRows(t, "config", "--config", file, "--data-dir", "/flag/data", "broker")

	require.Equal(t, []string{"KEY", "VALUE", "SOURCE", "DEFAULT", "MEANING"}, strings.Fields(header))
	for key, want := range map[string][]string{
		"broker.brokerName":    {"broker-b", "file", file + ":2", "broker-a"},
		"broker.flushInterval": {"700ms", "file", file + ":3", "500ms"},
		"broker.workers.send":  {"3", "env", "FERRY_BROKER_WORKERS_SEND", "16"},
		"broker.dataDir":       {"/flag/data", "flag", "--data-dir", "./data"},
		"broker.listen":        {"127.0.0.1:10911", "default", "127.0.0.1:10911"},
		"broker.haListen":      {`""`, "default", `""`},
		"log.level":            {"info", "default", "info"},
	} {
		row, ok := rows[key]
		require.True(t, ok, "no row for %s", key)
		fields := strings.Fields(row)
		require.Equal(t, want, fields[1:1+len(want)], row)
	}
	require.Contains(t, rows["broker.flushInterval"], "ASYNC_FLUSH: period of the flusher")
	require.Len(t, rows, len(keysWithPrefix("broker.", "log.", "console.")), "broker mode shows the broker, log and console sections")
	require.NotContains(t, rows, "namesrv.listen")

	// Columns line up: every cell starts where its header does, except on the row of a
	// value too long for its column (the delay levels), which pushes its own row right.
	var cols []int
	for _, h := range []string{"VALUE", "SOURCE", "DEFAULT", "MEANING"} {
		cols = append(cols, strings.Index(header, h))
	}
	require.LessOrEqual(t, cols[1]-cols[0], valueWidth+2, "one long value does not widen the column:\n%s", header)
	for key, row := range rows {
		if key == "broker.delayLevels" {
			require.Greater(t, strings.Index(row, "default"), cols[1], row)
			continue
		}
		for _, c := range cols {
			require.Equal(t, "  ", row[c-2:c], "%s: a cell ends right before column %d:\n%s", key, c, row)
			require.NotEqual(t, byte(' '), row[c], "%s: no cell starts at column %d:\n%s", key, c, row)
		}
	}
}

func keysWithPrefix(prefixes ...string) []string {
	var out []string
	for _, k := range conf.Keys() {
		for _, p := range prefixes {
			if strings.HasPrefix(k, p) {
				out = append(out, k)
			}
		}
	}
	return out
}

func TestRunConfigModes(t *testing.T) {
	for mode, prefixes := range map[string][]string{
		"namesrv":    {"namesrv.", "log."},
		"broker":     {"broker.", "log.", "console."},
		"standalone": {""},
		"controller": {"controller.", "log."},
	} {
		_, rows := configRows(t, "config", mode)
		var keys []string
		for k := range rows {
			keys = append(keys, k)
		}
		require.ElementsMatch(t, keysWithPrefix(prefixes...), keys, mode)
	}
	_, rows := configRows(t, "config")
	require.Len(t, rows, len(conf.Keys()), "no mode shows every key")

	for args, want := range map[string]string{
		"config nope":           `config takes namesrv, broker, standalone or controller, not "nope"`,
		"config broker namesrv": `unexpected argument "namesrv"`,
		"broker --json":         "unknown flag: --json",
	} {
		var out, errb bytes.Buffer
		require.Equal(t, 2, run(context.Background(), strings.Fields(args), &out, &errb), args)
		require.Contains(t, errb.String(), want, args)
		require.Empty(t, out.String(), args)
	}
}

func TestRunConfigJSON(t *testing.T) {
	file := writeConfig(t, "log:\n  format: json\n")
	var out, errb bytes.Buffer
	require.Equal(t, 0, run(context.Background(), []string{"config", "namesrv", "--json", "--config", file}, &out, &errb), errb.String())
	var got []conf.Setting
	require.NoError(t, json.Unmarshal(out.Bytes(), &got), out.String())
	require.Len(t, got, len(keysWithPrefix("namesrv.", "log.")))
	var format conf.Setting
	for _, s := range got {
		require.NotEmpty(t, s.Meaning, s.Key)
		if s.Key == "log.format" {
			format = s
		}
	}
	require.Equal(t, conf.Setting{
		Key: "log.format", Value: "json", Default: "auto",
		Source:  conf.Source{Kind: conf.SourceFile, File: file, Line: 2},
		Env:     "FERRY_LOG_FORMAT",
		Meaning: format.Meaning,
	}, format)
}

// A broken file is reported with its name and the line of the mistake.
func TestRunConfigReportsYAMLSyntaxErrorLine(t *testing.T) {
	file := writeConfig(t, "broker:\n  listen: 127.0.0.1:1\n\tdataDir: /x\n")
	var out, errb bytes.Buffer
	require.Equal(t, 1, run(context.Background(), []string{"config", "--config", file}, &out, &errb))
	require.Contains(t, errb.String(), file+" line 3: yaml syntax: found a tab character")
	require.Empty(t, out.String())
}
