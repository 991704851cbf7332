package launch

import (
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/acl/sign"
	"github.com/ferrymq/ferry/broker"
	"github.com/ferrymq/ferry/conf"
	"github.com/ferrymq/ferry/internal/mmap"
	"github.com/ferrymq/ferry/observe"
	"github.com/ferrymq/ferry/store"
)

// Every broker setting the configuration accepts must reach the broker's options: a
// setting that is accepted but does nothing is a bug.
func TestBrokerOptionsCarryEverySetting(t *testing.T) {
	cfg := conf.DefaultBrokerConfig()
	cfg.DataDir = t.TempDir()
	cfg.BrokerName, cfg.ClusterName = "b1", "c1"
	cfg.AdvertisedAddr = "127.0.0.1:20911"
	cfg.NamesrvAddrs = []string{"127.0.0.1:1", "127.0.0.1:2"}
	cfg.RegisterInterval = 7 * time.Second
	cfg.MaxFrameSize, cfg.IdleTimeout = 2<<20, 9*time.Second
	cfg.MaxRequestBytes = 5 << 20
	cfg.Workers = conf.WorkerPools{Send: 3, Pull: 4, Query: 5, Admin: 6, Transaction: 7}
	cfg.FlushDiskType = conf.SyncFlush
	cfg.FlushInterval, cfg.FlushLeastPages = 11*time.Millisecond, 2
	cfg.SyncFlushTimeout = 3 * time.Second
	cfg.CommitLogSegmentSize = 32 << 20
	cfg.ConsumeQueueUnitsPerFile = 1000
	cfg.MaxMessageSize = 1 << 20
	cfg.FileReservedTime = 5 * time.Hour
	cfg.DeleteWhen = "03"
	cfg.DiskMaxUsedRatio, cfg.DiskForceCleanRatio, cfg.DiskFullRatio = 70, 80, 90
	cfg.ScrubInterval, cfg.ScrubBytesPerSec = 6*time.Hour, 5<<20
	cfg.SlaveSyncInterval = 7 * time.Second
	cfg.AutoCreateTopic, cfg.DefaultTopicQueueNums = false, 3
	cfg.LongPollingEnable, cfg.ShortPollingTimeout = false, 2*time.Second
	cfg.SlaveReadEnable, cfg.AccessMessageInMemoryMaxRatio = true, 25
	cfg.HASlaveTimeout, cfg.HASlaveFallbehindMax = 1700*time.Millisecond, 9<<20
	cfg.HAMasterAddr, cfg.Role, cfg.BrokerID = "127.0.0.1:30912", conf.Slave, 2
	cfg.DelayLevels = "1s 2s"
	cfg.MaxReconsumeTimes = 4
	cfg.TransactionTimeout, cfg.TransactionCheckInterval, cfg.TransactionCheckMax = 8*time.Second, 9*time.Second, 3
	cfg.EnablePropertyFilter, cfg.StoreReplyMessageEnable = false, false
	cfg.TraceTopicEnable, cfg.MsgTraceTopicName = false, "MyTrace"
	cfg.ACLEnable, cfg.ACLFile = true, "/etc/ferry/plain_acl.yml"
	cfg.AccessKey, cfg.SecretKey = "brokerKey1", "brokerSecret1"

	o, err := BrokerOptions(cfg, mmap.OSFS{}, zerolog.Nop())
	require.NoError(t, err)
	require.False(t, o.EnablePropertyFilter)
	require.False(t, o.StoreReplyMessageEnable)
	require.False(t, o.TraceTopicEnable)
	require.Equal(t, "MyTrace", o.MsgTraceTopicName)
	require.Equal(t, "/etc/ferry/plain_acl.yml", o.ACLFile)
	require.Equal(t, sign.Credentials{AccessKey: "brokerKey1", SecretKey: "brokerSecret1"}, o.Credentials)
	require.Equal(t, "b1", o.BrokerName)
	require.Equal(t, "c1", o.ClusterName)
	require.Equal(t, "127.0.0.1:20911", o.AdvertisedAddr)
	require.Equal(t, cfg.NamesrvAddrs, o.NamesrvAddrs)
	require.Equal(t, 7*time.Second, o.RegisterInterval)
	require.Equal(t, 2<<20, o.MaxFrameSize)
	require.Equal(t, int64(5<<20), o.MaxRequestBytes)
	require.Equal(t, 9*time.Second, o.IdleTimeout)
	require.Equal(t, 3, o.Workers.Send)
	require.Equal(t, 7, o.Workers.Transaction)
	require.Equal(t, store.FlushSync, o.Store.FlushMode)
	require.Equal(t, 11*time.Millisecond, o.Store.FlushInterval)
	require.Equal(t, 2, o.Store.FlushLeastPages)
	require.Equal(t, 3*time.Second, o.Store.SyncFlushTimeout)
	require.Equal(t, int64(32<<20), o.Store.SegmentSize)
	require.Equal(t, 1000, o.Store.UnitsPerFile)
	require.Equal(t, 1<<20, o.Store.MaxMessageSize)
	require.Equal(t, 5*time.Hour, o.Store.FileReservedTime)
	require.Equal(t, cfg.DataDir, o.Store.Dir)
	require.InDelta(t, 0.9, o.Store.DiskFullRatio, 1e-9)
	require.Equal(t, 6*time.Hour, o.Store.ScrubInterval)
	require.Equal(t, 7*time.Second, o.SlaveSyncInterval)
	require.Equal(t, int64(5<<20), o.Store.ScrubBytesPerSec)
	require.False(t, o.AutoCreateTopic)
	require.Equal(t, 3, o.DefaultTopicQueueNums)
	require.False(t, o.LongPollingEnable)
	require.Equal(t, 2*time.Second, o.ShortPollingTimeout)
	require.Equal(t, []time.Duration{time.Second, 2 * time.Second}, o.DelayLevels)
	require.Equal(t, 4, o.MaxReconsumeTimes)
	require.Equal(t, 8*time.Second, o.TransactionTimeout)
	require.Equal(t, 9*time.Second, o.TransactionCheckInterval)
	require.Equal(t, 3, o.TransactionCheckMax)
	require.True(t, o.SlaveReadEnable)
	require.Equal(t, 25, o.AccessMessageInMemoryMaxRatio)
	ram, err := physicalMemory()
	require.NoError(t, err)
	require.Equal(t, inMemoryMaxBytes(25, ram), o.Store.InMemoryMaxBytes)
	require.Equal(t, 1700*time.Millisecond, o.HASlaveTimeout)
	require.Equal(t, int64(9<<20), o.HASlaveFallbehindMax)
	require.Equal(t, "127.0.0.1:30912", o.HAMasterAddr)
	require.Equal(t, broker.RoleSlave, o.Role)
	require.Equal(t, int64(2), o.BrokerID)
}

// accessMessageInMemoryMaxRatio becomes a byte limit once, at launch: that share of the
// machine's physical memory (the default 40 % of it).
func TestInMemoryLimitIsAShareOfPhysicalMemory(t *testing.T) {
	ram, err := physicalMemory()
	require.NoError(t, err)
	require.Greater(t, ram, uint64(16<<20), "a machine running tests has more than 16 MiB")
	cfg := conf.DefaultBrokerConfig()
	cfg.DataDir = t.TempDir()
	o, err := BrokerOptions(cfg, mmap.OSFS{}, zerolog.Nop())
	require.NoError(t, err)
	require.Equal(t, 40, o.AccessMessageInMemoryMaxRatio)
	require.False(t, o.SlaveReadEnable)
	require.InDelta(t, float64(ram)*0.4, float64(o.Store.InMemoryMaxBytes), float64(ram)/1000)

	require.Equal(t, int64(4<<30), inMemoryMaxBytes(40, 10<<30))
	require.Equal(t, int64(10<<30), inMemoryMaxBytes(100, 10<<30))
	require.Equal(t, int64(1<<62), inMemoryMaxBytes(100, 1<<62))
	require.Equal(t, int64(math.MaxInt64), inMemoryMaxBytes(100, math.MaxUint64))
	require.Equal(t, int64(3), inMemoryMaxBytes(30, 10))
}

// haSlaveTimeout 0 (the default) is syncFlushTimeout: a SYNC_MASTER send waits for its
// slave as long as for its fsync; a set value is kept.
func TestHASlaveTimeoutDefaultsToSyncFlushTimeout(t *testing.T) {
	cfg := conf.DefaultBrokerConfig()
	cfg.DataDir = t.TempDir()
	cfg.Role = conf.SyncMaster
	require.Zero(t, cfg.HASlaveTimeout)
	o, err := BrokerOptions(cfg, mmap.OSFS{}, zerolog.Nop())
	require.NoError(t, err)
	require.Equal(t, 5*time.Second, o.HASlaveTimeout)

	cfg.SyncFlushTimeout = 1200 * time.Millisecond
	o, err = BrokerOptions(cfg, mmap.OSFS{}, zerolog.Nop())
	require.NoError(t, err)
	require.Equal(t, 1200*time.Millisecond, o.HASlaveTimeout)
	require.Equal(t, 1200*time.Millisecond, o.Store.SyncFlushTimeout)

	cfg.HASlaveTimeout = 300 * time.Millisecond
	o, err = BrokerOptions(cfg, mmap.OSFS{}, zerolog.Nop())
	require.NoError(t, err)
	require.Equal(t, 300*time.Millisecond, o.HASlaveTimeout)

	cfg.HASlaveTimeout = -time.Second
	_, err = BrokerOptions(cfg, mmap.OSFS{}, zerolog.Nop())
	require.ErrorContains(t, err, "broker.haSlaveTimeout")
}

func TestBrokerOptionsRefuseInvalidConfig(t *testing.T) {
	cfg := conf.DefaultBrokerConfig()
	cfg.DataDir = t.TempDir()
	cfg.MaxReconsumeTimes = -1
	_, err := BrokerOptions(cfg, mmap.OSFS{}, zerolog.Nop())
	require.ErrorContains(t, err, "broker.maxReconsumeTimes")
}

func TestBrokerOptionsRoles(t *testing.T) {
	for _, tc := range []struct {
		role     conf.BrokerRole
		id       int
		master   string
		want     broker.Role
		haListen string
	}{
		{conf.AsyncMaster, 0, "", broker.RoleAsyncMaster, "127.0.0.1:10912"},
		{conf.SyncMaster, 0, "", broker.RoleSyncMaster, "127.0.0.1:10912"},
		{conf.Slave, 1, "127.0.0.1:10912", broker.RoleSlave, ""},
		{conf.Slave, 2, "", broker.RoleSlave, ""}, // learns the master from the name server
	} {
		cfg := conf.DefaultBrokerConfig()
		cfg.DataDir = t.TempDir()
		cfg.Role, cfg.BrokerID, cfg.HAMasterAddr = tc.role, tc.id, tc.master
		cfg.HASlaveTimeout = 1500 * time.Millisecond
		o, err := BrokerOptions(cfg, mmap.OSFS{}, zerolog.Nop())
		require.NoError(t, err, "%s", tc.role)
		require.Equal(t, tc.want, o.Role)
		require.Equal(t, int64(tc.id), o.BrokerID)
		require.Equal(t, tc.master, o.HAMasterAddr)
		require.Equal(t, tc.haListen, o.HAListen)
		require.Equal(t, 1500*time.Millisecond, o.HASlaveTimeout)
		require.Equal(t, cfg.HASlaveFallbehindMax, o.HASlaveFallbehindMax)
	}
}

// diskForceCleanRatio 100 is documented as turning forced cleaning off; it must be
// accepted with the default diskFullRatio (90), which is below it.
func TestForceCleanRatio100IsAccepted(t *testing.T) {
	cfg := conf.DefaultBrokerConfig()
	cfg.DataDir = t.TempDir()
	cfg.DiskForceCleanRatio = 100
	o, err := BrokerOptions(cfg, mmap.OSFS{}, zerolog.Nop())
	require.NoError(t, err)
	require.InDelta(t, 1.0, o.Store.DiskForceCleanRatio, 1e-9)
	require.InDelta(t, 0.9, o.Store.DiskFullRatio, 1e-9)
}

// `ferry standalone` gets laptop-sized commit-log segments unless the size is configured
// or a store already exists (whose size is then kept, so it still opens).
func TestStandaloneDefaults(t *testing.T) {
	const key = "broker.commitLogSegmentSize"
	unset := func(k string) bool { return k == KeyHTTPListen } // this test is about the size
	newCfg := func() *conf.Config {
		cfg := conf.DefaultConfig()
		cfg.Broker.DataDir = t.TempDir()
		return &cfg
	}

	cfg := newCfg()
	changed, err := StandaloneDefaults(cfg, unset, mmap.OSFS{})
	require.NoError(t, err)
	require.Equal(t, []string{key}, changed)
	require.Equal(t, StandaloneSegmentSize, cfg.Broker.CommitLogSegmentSize)

	cfg = newCfg()
	changed, err = StandaloneDefaults(cfg, func(k string) bool { return k == key || k == KeyHTTPListen }, mmap.OSFS{})
	require.NoError(t, err)
	require.Empty(t, changed, "an explicit size is kept")
	require.Equal(t, conf.GiB, cfg.Broker.CommitLogSegmentSize)

	cfg = newCfg()
	dir := filepath.Join(cfg.Broker.DataDir, "commitlog")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "README"), nil, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "00000000000000000000"), nil, 0o644))
	require.NoError(t, os.Truncate(filepath.Join(dir, "00000000000000000000"), conf.GiB))
	changed, err = StandaloneDefaults(cfg, unset, mmap.OSFS{})
	require.NoError(t, err)
	require.Empty(t, changed, "an existing store keeps its size")
	require.Equal(t, conf.GiB, cfg.Broker.CommitLogSegmentSize)

	cfg = newCfg()
	cfg.Broker.MaxMessageSize, cfg.Broker.MaxFrameSize = 100*conf.MiB, 101*conf.MiB
	require.NoError(t, cfg.Validate())
	changed, err = StandaloneDefaults(cfg, unset, mmap.OSFS{})
	require.NoError(t, err)
	require.Empty(t, changed, "segments too small for the largest message are not chosen")
	require.NoError(t, cfg.Validate())
}

// `ferry standalone` serves /healthz and /readyz on StandaloneHTTPListen unless
// broker.httpListen is set (even to "", off); a broker or name server alone has none.
func TestStandaloneHTTPListen(t *testing.T) {
	cfg := conf.DefaultConfig()
	cfg.Broker.DataDir = t.TempDir()
	require.Empty(t, HTTPListen("broker", &cfg), "off by default")
	require.Empty(t, HTTPListen(ModeNamesrv, &cfg), "off by default")
	changed, err := StandaloneDefaults(&cfg, func(string) bool { return false }, mmap.OSFS{})
	require.NoError(t, err)
	require.Contains(t, changed, KeyHTTPListen)
	require.Equal(t, StandaloneHTTPListen, HTTPListen("standalone", &cfg))

	cfg = conf.DefaultConfig()
	cfg.Broker.DataDir = t.TempDir()
	changed, err = StandaloneDefaults(&cfg, func(k string) bool { return k == KeyHTTPListen }, mmap.OSFS{})
	require.NoError(t, err)
	require.NotContains(t, changed, KeyHTTPListen)
	require.Empty(t, HTTPListen("standalone", &cfg), "an explicit empty value turns it off")

	cfg.NameServer.HTTPListen = "127.0.0.1:9881"
	require.Equal(t, "127.0.0.1:9881", HTTPListen(ModeNamesrv, &cfg))
}

// The HTTP listener takes the TLS mode of the server it serves.
func TestObserveOptionsTLS(t *testing.T) {
	cfg := conf.DefaultConfig()
	probes := observe.NewProbes(nil)
	o, err := ObserveOptions("broker", &cfg, probes, zerolog.Nop())
	require.NoError(t, err)
	require.Nil(t, o.TLS, "disabled")
	cfg.Broker.TLSMode = "enforcing" // without a certificate: the error names the listener
	_, err = ObserveOptions("broker", &cfg, probes, zerolog.Nop())
	require.ErrorContains(t, err, "HTTP listener")
	o, err = ObserveOptions(ModeNamesrv, &cfg, probes, zerolog.Nop())
	require.NoError(t, err, "the name server's mode is its own")
	require.Nil(t, o.TLS)
}

// The name server takes its ACL file only when aclEnable is on.
func TestNameServerOptionsACL(t *testing.T) {
	cfg := conf.DefaultNameServerConfig()
	cfg.ACLFile = "/etc/ferry/plain_acl.yml"
	o, err := NameServerOptions(cfg, zerolog.Nop())
	require.NoError(t, err)
	require.Empty(t, o.ACLFile, "aclEnable off")
	cfg.ACLEnable = true
	o, err = NameServerOptions(cfg, zerolog.Nop())
	require.NoError(t, err)
	require.Equal(t, "/etc/ferry/plain_acl.yml", o.ACLFile)
}

// Controller mode: the SyncStateSet settings reach broker.Options and the options are
// accepted though the role, ids and epoch are still to come (the failover agent sets
// them); completed by the agent, broker.Options accepts them.
func TestBrokerOptionsControllerMode(t *testing.T) {
	cfg := conf.DefaultBrokerConfig()
	cfg.DataDir = t.TempDir()
	cfg.ControllerMode, cfg.ControllerAddrs = true, []string{"127.0.0.1:9878"}
	cfg.AllAckInSyncStateSet, cfg.MinInSyncReplicas, cfg.HAMaxTimeSlaveNotCatchup = true, 2, 4*time.Second
	o, err := BrokerOptions(cfg, mmap.OSFS{}, zerolog.Nop())
	require.NoError(t, err)
	require.True(t, o.ControllerMode)
	require.True(t, o.AllAckInSyncStateSet)
	require.Equal(t, 2, o.MinInSyncReplicas)
	require.Equal(t, 4*time.Second, o.HAMaxTimeSlaveNotCatchup)
	require.ErrorIs(t, o.Validate(), broker.ErrInvalidOptions, "no epoch, id or keeper yet")
	props := brokerProperties(&o)
	require.Equal(t, "true", props["enableControllerMode"])
	require.Equal(t, "2", props["minInSyncReplicas"])
	require.Equal(t, "4000", props["haMaxTimeSlaveNotCatchup"])

	o.Role, o.BrokerID, o.MasterEpoch, o.HAMasterAddr = broker.RoleSlave, 3, 2, "127.0.0.1:10912"
	require.NoError(t, o.Validate(), "the agent's slave")
}
