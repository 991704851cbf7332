package main

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/client"
	"github.com/ferrymq/ferry/internal/mmap"
	"github.com/ferrymq/ferry/internal/testkit"
)

// TestNameServerKVConfigUnderDataDir: `ferry namesrv` keeps the KV config in
// <broker.dataDir>/namesrv/kvConfig.json by default, a restart on the same data
// directory answers what was stored, and a corrupt file stops the start with an error
// naming it.
func TestNameServerKVConfigUnderDataDir(t *testing.T) {
	dir := t.TempDir()
	cfg := serveConfig(t, dir)
	path := filepath.Join(dir, "namesrv", "kvConfig.json")

	// start serves the name server until the returned stop is called.
	start := func() (stop func() error) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- serve(ctx, "namesrv", cfg, zerolog.Nop(), mmap.OSFS{}) }()
		testkit.Eventually(t, 10*time.Second, func() bool {
			c, err := net.DialTimeout("tcp", cfg.NameServer.Listen, 100*time.Millisecond)
			if err == nil {
				_ = c.Close()
			}
			return err == nil
		}, "the name server listens")
		return func() error { cancel(); return <-done }
	}
	admin := func(fn func(a *client.Admin)) {
		c, err := client.New(client.WithNameServers(cfg.NameServer.Listen))
		require.NoError(t, err)
		defer func() { _ = c.Close() }()
		fn(c.Admin())
	}
	ctx := context.Background()

	stop := start()
	admin(func(a *client.Admin) {
		require.NoError(t, a.PutKVConfig(ctx, "ORDER_TOPIC_CONFIG", "Orders", "broker-a:4"))
		_, err := a.DrainBroker(ctx, "broker-a")
		require.NoError(t, err)
	})
	require.NoError(t, stop())
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.JSONEq(t, `{"configTable":{"ORDER_TOPIC_CONFIG":{"Orders":"broker-a:4"},
		"FERRY_DRAINED_BROKERS":{"broker-a":`+string(mustJSONValue(t, data, "FERRY_DRAINED_BROKERS", "broker-a"))+`}}}`, string(data))

	stop = start()
	admin(func(a *client.Admin) {
		v, err := a.KVConfig(ctx, "ORDER_TOPIC_CONFIG", "Orders")
		require.NoError(t, err)
		require.Equal(t, "broker-a:4", v)
		drained, err := a.KVList(ctx, "FERRY_DRAINED_BROKERS")
		require.NoError(t, err)
		require.Contains(t, drained, "broker-a")
	})
	require.NoError(t, stop())

	require.NoError(t, os.WriteFile(path, []byte("{not json"), 0o644))
	err = serve(context.Background(), "namesrv", cfg, zerolog.Nop(), mmap.OSFS{})
	require.Error(t, err)
	require.ErrorContains(t, err, path)
	require.ErrorContains(t, err, "corrupt")
}

// mustJSONValue returns the JSON of configTable[ns][key] in a kvConfig.json.
func mustJSONValue(t *testing.T, data []byte, ns, key string) []byte {
	t.Helper()
	var f struct {
		ConfigTable map[string]map[string]json.RawMessage `json:"configTable"`
	}
	require.NoError(t, json.Unmarshal(data, &f))
	v, ok := f.ConfigTable[ns][key]
	require.True(t, ok, "%s/%s in %s", ns, key, data)
	return v
}
