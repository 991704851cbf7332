package conf

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"
)

// envMap returns a LookupEnv over m, so tests never read the real environment.
func envMap(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

func writeFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "ferry.yaml")
	require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
	return p
}

func newFlags(t *testing.T, args ...string) *pflag.FlagSet {
	t.Helper()
	fs := pflag.NewFlagSet("ferry", pflag.ContinueOnError)
	BindFlags(fs)
	require.NoError(t, fs.Parse(args))
	return fs
}

func TestLoadDefaults(t *testing.T) {
	cfg, err := Load(LoadOptions{LookupEnv: envMap(nil)})
	require.NoError(t, err)
	require.Equal(t, DefaultConfig(), *cfg)

	// Registered but unset flags do not change anything.
	cfg, err = Load(LoadOptions{LookupEnv: envMap(nil), Flags: newFlags(t)})
	require.NoError(t, err)
	require.Equal(t, DefaultConfig(), *cfg)

	// An empty file, and a file with empty sections, are fine too.
	for _, content := range []string{"", "# nothing\n", "namesrv:\nbroker:\nlog:\n"} {
		cfg, err = Load(LoadOptions{ConfigFile: writeFile(t, content), LookupEnv: envMap(nil)})
		require.NoError(t, err, "%q", content)
		require.Equal(t, DefaultConfig(), *cfg)
	}
}

func TestLoadPrecedence(t *testing.T) {
	file := writeFile(t, `
broker:
  listen: 127.0.0.1:1001
  dataDir: /file/data
  flushInterval: 700ms
log:
  level: warn
`)
	env := map[string]string{
		"FERRY_BROKER_LISTEN":   "127.0.0.1:1002",
		"FERRY_BROKER_DATA_DIR": "/env/data",
	}

	// defaults < file
	cfg, err := Load(LoadOptions{ConfigFile: file, LookupEnv: envMap(nil)})
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:1001", cfg.Broker.Listen)
	require.Equal(t, "/file/data", cfg.Broker.DataDir)
	require.Equal(t, 700*time.Millisecond, cfg.Broker.FlushInterval)
	require.Equal(t, "warn", cfg.Log.Level)
	require.Equal(t, 500*time.Millisecond, DefaultBrokerConfig().FlushInterval)

	// file < env
	cfg, err = Load(LoadOptions{ConfigFile: file, LookupEnv: envMap(env)})
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:1002", cfg.Broker.Listen)
	require.Equal(t, "/env/data", cfg.Broker.DataDir)
	require.Equal(t, 700*time.Millisecond, cfg.Broker.FlushInterval, "file value kept where env is silent")

	// env < flags that were set; unset flags leave env and file alone.
	fs := newFlags(t, "--broker-listen", "127.0.0.1:1003", "--log-level=debug")
	cfg, err = Load(LoadOptions{ConfigFile: file, LookupEnv: envMap(env), Flags: fs})
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:1003", cfg.Broker.Listen)
	require.Equal(t, "debug", cfg.Log.Level)
	require.Equal(t, "/env/data", cfg.Broker.DataDir)
	require.Equal(t, "127.0.0.1:9876", cfg.NameServer.Listen)
}

func TestLoadAllFlags(t *testing.T) {
	fs := newFlags(t,
		"--data-dir", "/flag/data",
		"--namesrv-listen", "127.0.0.1:2001",
		"--broker-listen", "127.0.0.1:2002",
		"--namesrv-addr", "10.0.0.1:9876;10.0.0.2:9876",
		"--namesrv-addr", "10.0.0.3:9876,10.0.0.4:9876",
		"--log-level", "error",
	)
	cfg, err := Load(LoadOptions{LookupEnv: envMap(map[string]string{"FERRY_BROKER_NAMESRV_ADDRS": "1.1.1.1:1"}), Flags: fs})
	require.NoError(t, err)
	require.Equal(t, "/flag/data", cfg.Broker.DataDir)
	require.Equal(t, "127.0.0.1:2001", cfg.NameServer.Listen)
	require.Equal(t, "127.0.0.1:2002", cfg.Broker.Listen)
	require.Equal(t, []string{"10.0.0.1:9876", "10.0.0.2:9876", "10.0.0.3:9876", "10.0.0.4:9876"}, cfg.Broker.NamesrvAddrs)
	require.Equal(t, "error", cfg.Log.Level)

	keys := map[string]bool{}
	for _, k := range Keys() {
		keys[k] = true
	}
	for name, key := range FlagKeys() {
		require.True(t, keys[key], "flag --%s maps to unknown key %s", name, key)
		require.NotNil(t, fs.Lookup(name))
	}
}

// --http-listen sets the HTTP listener of the server the command runs: the name
// server's for ferry namesrv, the broker's otherwise (standalone serves one, the broker's).
func TestHTTPListenFlagFollowsTheServer(t *testing.T) {
	for server, want := range map[string][2]string{
		ServerNamesrv: {"", "127.0.0.1:9881"},
		"broker":      {"127.0.0.1:9881", ""},
		"standalone":  {"127.0.0.1:9881", ""},
	} {
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		BindFlags(fs)
		require.NoError(t, fs.Parse([]string{"--http-listen", "127.0.0.1:9881"}))
		cfg, err := Load(LoadOptions{LookupEnv: envMap(nil), Flags: fs, Server: server})
		require.NoError(t, err, server)
		require.Equal(t, want[0], cfg.Broker.HTTPListen, server)
		require.Equal(t, want[1], cfg.NameServer.HTTPListen, server)
	}
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	BindFlags(fs)
	require.NoError(t, fs.Parse([]string{"--http-listen", "no-port"}))
	_, err := Load(LoadOptions{LookupEnv: envMap(nil), Flags: fs})
	require.ErrorIs(t, err, ErrInvalidConfig)
	require.ErrorContains(t, err, "broker.httpListen")
}

func TestLoadEnvTypes(t *testing.T) {
	// The file gives typed YAML values; the environment's strings must still win.
	file := writeFile(t, `
broker:
  brokerId: 0
  namesrvAddrs: [10.9.9.9:9876]
  workers: {send: 4}
  autoCreateTopic: true
  commitLogSegmentSize: 1073741824
`)
	env := envMap(map[string]string{
		"FERRY_BROKER_BROKER_ROLE":                        "SLAVE",
		"FERRY_BROKER_BROKER_ID":                          "2",
		"FERRY_BROKER_HA_MASTER_ADDR":                     "10.0.0.1:10912",
		"FERRY_BROKER_NAMESRV_ADDRS":                      "10.0.0.1:9876; 10.0.0.2:9876",
		"FERRY_BROKER_WORKERS_SEND":                       "32",
		"FERRY_BROKER_AUTO_CREATE_TOPIC":                  "false",
		"FERRY_BROKER_COMMIT_LOG_SEGMENT_SIZE":            "256MiB",
		"FERRY_BROKER_MAX_MESSAGE_SIZE":                   "1048576",
		"FERRY_BROKER_TRANSACTION_CHECK_INTERVAL":         "2s",
		"FERRY_BROKER_FLUSH_DISK_TYPE":                    "SYNC_FLUSH",
		"FERRY_NAMESRV_MAX_FRAME_SIZE":                    "8MiB",
		"FERRY_LOG_FORMAT":                                "json",
		"FERRY_BROKER_DELAY_LEVELS":                       "1s 2s",
		"FERRY_BROKER_CONSUME_QUEUE_UNITS_PER_FILE":       "1000",
		"FERRY_BROKER_SLAVE_READ_ENABLE":                  "true",
		"FERRY_BROKER_ACCESS_MESSAGE_IN_MEMORY_MAX_RATIO": "30",
		"FERRY_BROKER_HA_SLAVE_TIMEOUT":                   "1500ms",
	})
	cfg, err := Load(LoadOptions{ConfigFile: file, LookupEnv: env})
	require.NoError(t, err)
	b := cfg.Broker
	require.Equal(t, Slave, b.Role)
	require.Equal(t, 2, b.BrokerID)
	require.Equal(t, []string{"10.0.0.1:9876", "10.0.0.2:9876"}, b.NamesrvAddrs)
	require.Equal(t, 32, b.Workers.Send)
	require.Equal(t, 16, b.Workers.Pull)
	require.False(t, b.AutoCreateTopic)
	require.Equal(t, 256*MiB, b.CommitLogSegmentSize)
	require.Equal(t, MiB, b.MaxMessageSize)
	require.Equal(t, 2*time.Second, b.TransactionCheckInterval)
	require.Equal(t, SyncFlush, b.FlushDiskType)
	require.Equal(t, 8*MiB, cfg.NameServer.MaxFrameSize)
	require.Equal(t, "json", cfg.Log.Format)
	require.Equal(t, "1s 2s", b.DelayLevels)
	require.Equal(t, 1000, b.ConsumeQueueUnitsPerFile)
	require.True(t, b.SlaveReadEnable)
	require.Equal(t, 30, b.AccessMessageInMemoryMaxRatio)
	require.Equal(t, 1500*time.Millisecond, b.HASlaveTimeout)
}

func TestLoadRealEnvironment(t *testing.T) {
	t.Setenv("FERRY_LOG_LEVEL", "trace")
	t.Setenv("FERRY_CONFIG", writeFile(t, "broker:\n  brokerName: from-env-file\n"))
	cfg, err := Load(LoadOptions{})
	require.NoError(t, err)
	require.Equal(t, "trace", cfg.Log.Level)
	require.Equal(t, "from-env-file", cfg.Broker.BrokerName)
}

func TestLoadConfigPathSources(t *testing.T) {
	a := writeFile(t, "broker:\n  brokerName: a\n")
	b := writeFile(t, "broker:\n  brokerName: b\n")
	c := writeFile(t, "broker:\n  brokerName: c\n")
	env := envMap(map[string]string{ConfigFileEnv: c})

	cfg, err := Load(LoadOptions{LookupEnv: env})
	require.NoError(t, err)
	require.Equal(t, "c", cfg.Broker.BrokerName)

	cfg, err = Load(LoadOptions{LookupEnv: env, Flags: newFlags(t, "--config", b)})
	require.NoError(t, err)
	require.Equal(t, "b", cfg.Broker.BrokerName)

	cfg, err = Load(LoadOptions{ConfigFile: a, LookupEnv: env, Flags: newFlags(t, "--config", b)})
	require.NoError(t, err)
	require.Equal(t, "a", cfg.Broker.BrokerName)

	_, err = Load(LoadOptions{ConfigFile: filepath.Join(t.TempDir(), "missing.yaml"), LookupEnv: envMap(nil)})
	require.Error(t, err)
	require.True(t, errors.Is(err, fs.ErrNotExist), "%v", err)
	require.False(t, errors.Is(err, ErrInvalidConfig))
}

func TestLoadRejectsBadFiles(t *testing.T) {
	for _, tc := range []struct {
		name, yaml, key, msg string
	}{
		{"unknown leaf", "broker:\n  listen: 127.0.0.1:1\n  flushDiskTyp: SYNC_FLUSH\n",
			"broker.flushDiskTyp", "line 3: unknown key (did you mean broker.flushDiskType?)"},
		{"unknown section", "brokr:\n  listen: x\n", "brokr", "unknown key (did you mean broker?)"},
		{"unknown top", "port: 1\n", "port", "line 1: unknown key"},
		{"unknown nested", "broker:\n  workers:\n    sned: 1\n", "broker.workers.sned", "did you mean broker.workers.send?"},
		{"far off", "broker:\n  somethingElse: 1\n", "broker.somethingElse", "unknown key"},
		{"duplicate", "broker:\n  listen: a\n  Listen: b\n", "broker.Listen", "duplicate key"},
		{"scalar section", "broker: 5\n", "broker", "must be a mapping"},
		{"list top", "- a\n", "(top level)", "must be a mapping"},
		{"syntax", "broker: [\n", "", "yaml"},
		{"bad duration", "broker:\n  flushInterval: 5x\n", "broker.flushInterval", `unknown unit "x"`},
		{"bare duration", "namesrv:\n  scanInterval: 5\n", "namesrv.scanInterval", "unit"},
		{"bad size", "broker:\n  maxMessageSize: 4XB\n", "broker.maxMessageSize", "unknown unit"},
		{"bad int", "broker:\n  workers:\n    pull: many\n", "broker.workers.pull", ""},
		{"bad bool", "broker:\n  autoCreateTopic: maybe\n", "broker.autoCreateTopic", ""},
		{"validate", "broker:\n  flushDiskType: X\n", "broker.flushDiskType", `must be ASYNC_FLUSH or SYNC_FLUSH, got "X"`},
		{"validate slave", "broker:\n  brokerRole: SLAVE\n  brokerId: 0\n", "broker.brokerId", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(LoadOptions{ConfigFile: writeFile(t, tc.yaml), LookupEnv: envMap(nil)})
			require.Error(t, err)
			require.True(t, errors.Is(err, ErrInvalidConfig), "%v", err)
			if tc.key != "" {
				require.Contains(t, err.Error(), tc.key+":")
			}
			require.Contains(t, err.Error(), tc.msg)
		})
	}
}

func TestLoadReportsEveryBadKey(t *testing.T) {
	file := writeFile(t, "broker:\n  flushInterval: 5x\n  maxMessageSize: 3XB\n")
	_, err := Load(LoadOptions{ConfigFile: file, LookupEnv: envMap(nil)})
	require.ErrorIs(t, err, ErrInvalidConfig)
	require.Contains(t, err.Error(), "broker.flushInterval:")
	require.Contains(t, err.Error(), "broker.maxMessageSize:")
}

func TestLoadRejectsBadEnv(t *testing.T) {
	for name, tc := range map[string]struct{ env, val, key string }{
		"duration": {"FERRY_BROKER_SYNC_FLUSH_TIMEOUT", "soon", "broker.syncFlushTimeout"},
		"int":      {"FERRY_BROKER_WORKERS_SEND", "lots", "broker.workers.send"},
		"size":     {"FERRY_BROKER_MAX_MESSAGE_SIZE", "4 lots", "broker.maxMessageSize"},
		"empty":    {"FERRY_BROKER_DATA_DIR", "", "broker.dataDir"},
		"role":     {"FERRY_BROKER_BROKER_ROLE", "async_master", "broker.brokerRole"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Load(LoadOptions{LookupEnv: envMap(map[string]string{tc.env: tc.val})})
			require.Error(t, err)
			require.True(t, errors.Is(err, ErrInvalidConfig), "%v", err)
			require.Contains(t, err.Error(), tc.key+":")
		})
	}
}

func TestLoadCaseInsensitiveKeys(t *testing.T) {
	file := writeFile(t, "Broker:\n  DataDir: /x\n  WORKERS:\n    Send: 3\n")
	cfg, err := Load(LoadOptions{ConfigFile: file, LookupEnv: envMap(map[string]string{"FERRY_BROKER_WORKERS_PULL": "5"})})
	require.NoError(t, err)
	require.Equal(t, "/x", cfg.Broker.DataDir)
	require.Equal(t, 3, cfg.Broker.Workers.Send)
	require.Equal(t, 5, cfg.Broker.Workers.Pull)
}

func TestEnvVarName(t *testing.T) {
	for key, want := range map[string]string{
		"broker.listen":              "FERRY_BROKER_LISTEN",
		"broker.flushDiskType":       "FERRY_BROKER_FLUSH_DISK_TYPE",
		"broker.brokerId":            "FERRY_BROKER_BROKER_ID",
		"broker.namesrvAddrs":        "FERRY_BROKER_NAMESRV_ADDRS",
		"broker.haMasterAddr":        "FERRY_BROKER_HA_MASTER_ADDR",
		"broker.workers.transaction": "FERRY_BROKER_WORKERS_TRANSACTION",
		"namesrv.brokerExpiry":       "FERRY_NAMESRV_BROKER_EXPIRY",
		"log.level":                  "FERRY_LOG_LEVEL",
	} {
		require.Equal(t, want, EnvVarName(key))
	}

	// The mapping is one to one, and every key's documentation names its
	// environment variable.
	seen := map[string]string{}
	for _, k := range Keys() {
		name := EnvVarName(k)
		require.NotContains(t, seen, name, "%s and %s share %s", seen[name], k, name)
		require.NotEqual(t, ConfigFileEnv, name)
		seen[name] = k
	}
	require.Len(t, seen, len(Keys()))
	src := readSources(t)
	for _, k := range Keys() {
		require.Contains(t, src, "env "+EnvVarName(k), "doc comment of %s does not name its env var", k)
		require.Contains(t, src, "Key "+k, "doc comment does not name key %s", k)
	}
}

func readSources(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	for _, f := range []string{"conf.go", "namesrv.go", "broker.go", "console.go", "controller.go"} {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		// Join wrapped comment lines so "env\n\t// FERRY_X" still matches.
		b.WriteString(strings.Join(strings.Fields(strings.ReplaceAll(string(data), "//", " ")), " "))
	}
	return b.String()
}
