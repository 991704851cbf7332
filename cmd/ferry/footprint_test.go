package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/conf"
	"github.com/ferrymq/ferry/internal/testkit"
	"github.com/ferrymq/ferry/launch"
)

// A port in use stops `ferry standalone` and `ferry broker` with an error naming the
// setting, before the store is opened: the data directory is not even created.
func TestBusyPortFailsBeforeTheStore(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer func() { _ = busy.Close() }()
	for _, tc := range []struct {
		name, key string
		args      []string
	}{
		{"standalone/broker port", "broker.listen", []string{"standalone", "--http-listen", "", "--namesrv-listen", testkit.FreeAddr(t), "--broker-listen", busy.Addr().String()}},
		{"standalone/namesrv port", "namesrv.listen", []string{"standalone", "--http-listen", "", "--namesrv-listen", busy.Addr().String(), "--broker-listen", testkit.FreeAddr(t)}},
		{"broker", "broker.listen", []string{"broker", "--broker-listen", busy.Addr().String()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := filepath.Join(t.TempDir(), "data")
			var out, errb bytes.Buffer
			code := run(context.Background(), append(tc.args, "--data-dir", data), &out, &errb)
			require.Equal(t, 1, code)
			require.Contains(t, errb.String(), "cannot listen on "+tc.key+" "+busy.Addr().String())
			require.Contains(t, errb.String(), "address already in use")
			_, err := os.Stat(data)
			require.True(t, os.IsNotExist(err), "the data directory is left alone: %v", err)
		})
	}
}

// The other port bound before the failure is released.
func TestBusyPortReleasesTheOtherPort(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer func() { _ = busy.Close() }()
	ns := testkit.FreeAddr(t)
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"standalone", "--data-dir", t.TempDir(), "--http-listen", "",
		"--namesrv-listen", ns, "--broker-listen", busy.Addr().String()}, &out, &errb)
	require.Equal(t, 1, code, errb.String())
	ln, err := net.Listen("tcp", ns)
	require.NoError(t, err, "the name-server port is free again")
	require.NoError(t, ln.Close())
}

// configValue returns the effective value `ferry config` prints for key.
func configValue(t *testing.T, key string, args ...string) string {
	t.Helper()
	var out, errb bytes.Buffer
	require.Equal(t, 0, run(context.Background(), append(append([]string{"config"}, args...), "--json"), &out, &errb), errb.String())
	var settings []conf.Setting
	require.NoError(t, json.Unmarshal(out.Bytes(), &settings))
	for _, s := range settings {
		if s.Key == key {
			return s.Value
		}
	}
	t.Fatalf("no %s in ferry config %v", key, args)
	return ""
}

// `ferry standalone` without a config file uses the segment size conf/standalone.yaml
// sets; a broker keeps RocketMQ's; an explicit size wins; an existing store keeps its own.
func TestStandaloneSegmentSizeDefaults(t *testing.T) {
	const key = "broker.commitLogSegmentSize"
	sample, err := conf.Load(conf.LoadOptions{ConfigFile: "../../conf/standalone.yaml", LookupEnv: func(string) (string, bool) { return "", false }})
	require.NoError(t, err)
	data := t.TempDir()
	require.Equal(t, conf.FormatByteSize(sample.Broker.CommitLogSegmentSize), configValue(t, key, "standalone", "--data-dir", data))
	require.Equal(t, "1GiB", configValue(t, key, "broker", "--data-dir", data))
	require.Equal(t, "1GiB", configValue(t, key, "standalone", "--data-dir", data, "--config", "../../conf/broker.yaml"))
	t.Setenv("FERRY_BROKER_COMMIT_LOG_SEGMENT_SIZE", "32MiB")
	require.Equal(t, "32MiB", configValue(t, key, "standalone", "--data-dir", data))
	require.NoError(t, os.Unsetenv("FERRY_BROKER_COMMIT_LOG_SEGMENT_SIZE")) // t.Setenv restores it at cleanup

	seg := filepath.Join(data, "commitlog", "00000000000000000000")
	require.NoError(t, os.MkdirAll(filepath.Dir(seg), 0o755))
	require.NoError(t, os.WriteFile(seg, nil, 0o644))
	require.NoError(t, os.Truncate(seg, 1<<30))
	require.Equal(t, "1GiB", configValue(t, key, "standalone", "--data-dir", data), "the existing store's size")
}

// An idle `ferry standalone` on an empty directory holds one laptop-sized commit-log
// segment and no spare (docs/operations.md, Footprint).
func TestStandaloneEmptyStoreHoldsOneSmallSegment(t *testing.T) {
	t.Setenv("FERRY_BROKER_HA_LISTEN", "127.0.0.1:0") // see haOnAnyPort
	data := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	var errb testkit.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"standalone", "--data-dir", data, "--http-listen", "", "--namesrv-listen", testkit.FreeAddr(t),
			"--broker-listen", testkit.FreeAddr(t), "--log-level", "info"}, &bytes.Buffer{}, &errb)
	}()
	require.Eventually(t, func() bool { return strings.Contains(errb.String(), "ferry is ready") },
		30*time.Second, 10*time.Millisecond, "ferry is ready")
	names, err := os.ReadDir(filepath.Join(data, "commitlog"))
	require.NoError(t, err)
	require.Len(t, names, 1)
	info, err := names[0].Info()
	require.NoError(t, err)
	require.Equal(t, launch.StandaloneSegmentSize, info.Size())
	cancel()
	require.Equal(t, 0, <-done, errb.String())
}
