package conf

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

func loadSample(t *testing.T, name string) *Config {
	t.Helper()
	cfg, err := Load(LoadOptions{ConfigFile: name, LookupEnv: envMap(nil)})
	require.NoError(t, err, name)
	return cfg
}

func TestSamplesLoad(t *testing.T) {
	files, err := filepath.Glob("*.yaml")
	require.NoError(t, err)
	sort.Strings(files)
	require.Subset(t, files, []string{"namesrv.yaml", "broker.yaml", "standalone.yaml", "broker-sync.yaml"})
	for _, f := range files {
		t.Run(f, func(t *testing.T) {
			require.NoError(t, loadSample(t, f).Validate())
		})
	}
}

func TestSampleBrokerIsDefaults(t *testing.T) {
	cfg := loadSample(t, "broker.yaml")
	require.Equal(t, DefaultConfig(), *cfg)

	// broker.yaml lists every broker and log key.
	data, err := os.ReadFile("broker.yaml")
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, yaml.Unmarshal(data, &m))
	present := map[string]bool{}
	var flatten func(prefix string, m map[string]any)
	flatten = func(prefix string, m map[string]any) {
		for k, v := range m {
			if sub, ok := v.(map[string]any); ok {
				flatten(prefix+k+".", sub)
				continue
			}
			present[prefix+k] = true
		}
	}
	flatten("", m)
	for _, k := range Keys() {
		if strings.HasPrefix(k, "broker.") || strings.HasPrefix(k, "log.") {
			require.True(t, present[k], "broker.yaml lacks %s", k)
		}
	}
}

func TestSampleNameServerIsDefaults(t *testing.T) {
	cfg := loadSample(t, "namesrv.yaml")
	require.Equal(t, DefaultConfig(), *cfg)
}

func TestSampleProfiles(t *testing.T) {
	sync := loadSample(t, "broker-sync.yaml").Broker
	require.Equal(t, SyncMaster, sync.Role)
	require.Equal(t, SyncFlush, sync.FlushDiskType)

	slave := loadSample(t, "broker-slave.yaml").Broker
	require.Equal(t, Slave, slave.Role)
	require.Equal(t, sync.BrokerName, slave.BrokerName)
	require.Equal(t, sync.EffectiveHAListen(), slave.HAMasterAddr)

	st := loadSample(t, "standalone.yaml")
	require.Contains(t, st.Broker.NamesrvAddrs, st.NameServer.Listen)
}

// Segment sizes: a laptop-sized commit log in the standalone sample (the same as
// `ferry standalone` without a file, checked in cmd/ferry), RocketMQ's 1 GiB in the
// production samples.
func TestSampleSegmentSizes(t *testing.T) {
	require.Equal(t, 64*MiB, loadSample(t, "standalone.yaml").Broker.CommitLogSegmentSize)
	for _, f := range []string{"broker.yaml", "broker-sync.yaml", "broker-slave.yaml"} {
		require.Equal(t, 1*GiB, loadSample(t, f).Broker.CommitLogSegmentSize, f)
	}
}

// clientSendTimeout is the official clients' default send timeout (Go and Java: 3 s).
const clientSendTimeout = 3 * time.Second

// Every master sample that is or may be run as a SYNC_MASTER (the deploy/local masters
// get their role from cluster.sh) answers a send whose slave does not acknowledge
// before the clients' default send timeout, with room to spare: a client that times out
// first resends a message that is stored, and it is stored twice.
func TestSampleSyncMastersAnswerBeforeClientTimeout(t *testing.T) {
	var files []string
	for _, pattern := range []string{"*.yaml", "../deploy/conf/*.yaml", "../deploy/local/*.yaml"} {
		m, err := filepath.Glob(pattern)
		require.NoError(t, err)
		files = append(files, m...)
	}
	checked := 0
	for _, f := range files {
		b := loadSample(t, f).Broker
		local := strings.HasPrefix(f, "../deploy/local/") && b.BrokerID == 0 && strings.HasPrefix(filepath.Base(f), "broker")
		if b.Role != SyncMaster && !local {
			continue
		}
		checked++
		require.LessOrEqual(t, b.EffectiveHASlaveTimeout(), clientSendTimeout-time.Second,
			"%s: haSlaveTimeout must leave the client's %s send timeout a second for the network and the flush", f, clientSendTimeout)
	}
	require.GreaterOrEqual(t, checked, 5, "broker-sync.yaml and the four deploy masters")
}
