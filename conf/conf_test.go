package conf

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestDefaultsValidate(t *testing.T) {
	require.NoError(t, DefaultNameServerConfig().Validate())
	require.NoError(t, DefaultBrokerConfig().Validate())
	require.NoError(t, DefaultLogConfig().Validate())
	require.NoError(t, DefaultConfig().Validate())
}

func TestDefaultValues(t *testing.T) {
	n := DefaultNameServerConfig()
	require.Equal(t, "127.0.0.1:9876", n.Listen)
	require.Equal(t, 120*time.Second, n.BrokerExpiry)
	require.Equal(t, 5*time.Second, n.ScanInterval)
	require.Equal(t, int64(16<<20), n.MaxFrameSize)

	b := DefaultBrokerConfig()
	require.Equal(t, AsyncMaster, b.Role)
	require.Equal(t, AsyncFlush, b.FlushDiskType)
	require.Equal(t, int64(1<<30), b.CommitLogSegmentSize)
	require.Equal(t, int64(4<<20), b.MaxMessageSize)
	require.Equal(t, 300000, b.ConsumeQueueUnitsPerFile)
	require.Equal(t, 8, b.DefaultTopicQueueNums)
	require.Equal(t, []string{"127.0.0.1:9876"}, b.NamesrvAddrs)
	levels, err := b.DelayLevelDurations()
	require.NoError(t, err)
	require.Len(t, levels, 18)
	require.Equal(t, "127.0.0.1:10911", b.EffectiveAdvertisedAddr())
	require.Equal(t, "127.0.0.1:10912", b.EffectiveHAListen())
	require.False(t, b.SlaveReadEnable)
	require.Equal(t, 40, b.AccessMessageInMemoryMaxRatio)
	// haSlaveTimeout 0: a SYNC_MASTER send waits for its slave within syncFlushTimeout.
	require.Zero(t, b.HASlaveTimeout)
	require.Equal(t, 5*time.Second, b.EffectiveHASlaveTimeout())
	b.SyncFlushTimeout = 2 * time.Second
	require.Equal(t, 2*time.Second, b.EffectiveHASlaveTimeout())
	b.HASlaveTimeout = 700 * time.Millisecond
	require.Equal(t, 700*time.Millisecond, b.EffectiveHASlaveTimeout())

	c := DefaultConfig()
	require.Equal(t, "info", c.BrokerLogLevel())
	c.Broker.LogLevel = "debug"
	require.Equal(t, "debug", c.BrokerLogLevel())
	require.Equal(t, "info", c.NameServerLogLevel())
}

func TestEffectiveAddrs(t *testing.T) {
	b := DefaultBrokerConfig()
	b.Listen = "127.0.0.1:0"
	require.Equal(t, "127.0.0.1:0", b.EffectiveHAListen())
	b.Listen = "[::1]:20911"
	require.Equal(t, "[::1]:20912", b.EffectiveHAListen())
	b.HAListen = "10.0.0.1:3000"
	require.Equal(t, "10.0.0.1:3000", b.EffectiveHAListen())
	b.AdvertisedAddr = "broker.example:10911"
	require.Equal(t, "broker.example:10911", b.EffectiveAdvertisedAddr())
	require.True(t, SyncMaster.IsMaster())
	require.False(t, Slave.IsMaster())
}

// requireInvalid checks that err wraps ErrInvalidConfig and names key.
func requireInvalid(t *testing.T, err error, key string) {
	t.Helper()
	require.Error(t, err)
	require.True(t, errors.Is(err, ErrInvalidConfig), "not ErrInvalidConfig: %v", err)
	require.Contains(t, err.Error(), key+":", "error does not name %s: %v", key, err)
}

func TestNameServerValidate(t *testing.T) {
	for _, tc := range []struct {
		key    string
		mutate func(*NameServerConfig)
	}{
		{"namesrv.listen", func(c *NameServerConfig) { c.Listen = "localhost" }},
		{"namesrv.listen", func(c *NameServerConfig) { c.Listen = "1.2.3.4:99999" }},
		{"namesrv.listen", func(c *NameServerConfig) { c.Listen = "" }},
		{"namesrv.brokerExpiry", func(c *NameServerConfig) { c.BrokerExpiry = 0 }},
		{"namesrv.scanInterval", func(c *NameServerConfig) { c.ScanInterval = -time.Second }},
		{"namesrv.scanInterval", func(c *NameServerConfig) { c.ScanInterval = c.BrokerExpiry }},
		{"namesrv.logLevel", func(c *NameServerConfig) { c.LogLevel = "loud" }},
		{"namesrv.maxFrameSize", func(c *NameServerConfig) { c.MaxFrameSize = 100 }},
		{"namesrv.maxFrameSize", func(c *NameServerConfig) { c.MaxFrameSize = 4 * GiB }},
		{"namesrv.idleTimeout", func(c *NameServerConfig) { c.IdleTimeout = 0 }},
	} {
		t.Run(tc.key, func(t *testing.T) {
			c := DefaultNameServerConfig()
			tc.mutate(&c)
			requireInvalid(t, c.Validate(), tc.key)
		})
	}
}

func TestLogValidate(t *testing.T) {
	c := DefaultLogConfig()
	c.Level = "verbose"
	requireInvalid(t, c.Validate(), "log.level")
	c = DefaultLogConfig()
	c.Level = ""
	requireInvalid(t, c.Validate(), "log.level")
	c = DefaultLogConfig()
	c.Format = "xml"
	requireInvalid(t, c.Validate(), "log.format")
	c = DefaultLogConfig()
	c.Level = "WARN"
	require.NoError(t, c.Validate())
}

func TestBrokerValidate(t *testing.T) {
	slave := func(c *BrokerConfig) {
		c.Role, c.BrokerID, c.HAMasterAddr = Slave, 1, "10.0.0.1:10912"
	}
	for _, tc := range []struct {
		name   string
		key    string
		mutate func(*BrokerConfig)
		msg    string
	}{
		{"empty name", "broker.brokerName", func(c *BrokerConfig) { c.BrokerName = "" }, ""},
		{"bad name", "broker.brokerName", func(c *BrokerConfig) { c.BrokerName = "a b" }, ""},
		{"long name", "broker.brokerName", func(c *BrokerConfig) { c.BrokerName = strings.Repeat("a", 128) }, ""},
		{"cluster", "broker.clusterName", func(c *BrokerConfig) { c.ClusterName = "" }, ""},
		{"role", "broker.brokerRole", func(c *BrokerConfig) { c.Role = "MASTER" }, `got "MASTER"`},
		{"master id", "broker.brokerId", func(c *BrokerConfig) { c.BrokerID = 1 }, ""},
		{"slave id", "broker.brokerId", func(c *BrokerConfig) { slave(c); c.BrokerID = 0 }, ""},
		{"listen", "broker.listen", func(c *BrokerConfig) { c.Listen = "10911" }, ""},
		{"advertised", "broker.advertisedAddr", func(c *BrokerConfig) { c.AdvertisedAddr = "host" }, ""},
		{"advertised port 0", "broker.advertisedAddr", func(c *BrokerConfig) { c.AdvertisedAddr = "h:0" }, ""},
		{"advertised any", "broker.advertisedAddr", func(c *BrokerConfig) { c.AdvertisedAddr = "0.0.0.0:10911" }, ""},
		{"advertised needed", "broker.advertisedAddr", func(c *BrokerConfig) { c.Listen = ":10911" }, ""},
		{"advertised needed v6", "broker.advertisedAddr", func(c *BrokerConfig) { c.Listen = "[::]:10911" }, ""},
		{"namesrv empty", "broker.namesrvAddrs", func(c *BrokerConfig) { c.NamesrvAddrs = nil }, ""},
		{"namesrv bad", "broker.namesrvAddrs", func(c *BrokerConfig) { c.NamesrvAddrs = []string{"a:1", "b"} }, ""},
		{"register", "broker.registerInterval", func(c *BrokerConfig) { c.RegisterInterval = 0 }, ""},
		{"frame", "broker.maxFrameSize", func(c *BrokerConfig) { c.MaxFrameSize = 0 }, ""},
		{"frame vs msg", "broker.maxFrameSize", func(c *BrokerConfig) { c.MaxFrameSize = 4 * MiB }, ""},
		{"idle", "broker.idleTimeout", func(c *BrokerConfig) { c.IdleTimeout = 0 }, ""},
		{"send workers", "broker.workers.send", func(c *BrokerConfig) { c.Workers.Send = 0 }, ""},
		{"pull workers", "broker.workers.pull", func(c *BrokerConfig) { c.Workers.Pull = -1 }, ""},
		{"query workers", "broker.workers.query", func(c *BrokerConfig) { c.Workers.Query = 0 }, ""},
		{"admin workers", "broker.workers.admin", func(c *BrokerConfig) { c.Workers.Admin = 5000 }, ""},
		{"txn workers", "broker.workers.transaction", func(c *BrokerConfig) { c.Workers.Transaction = 0 }, ""},
		{"data dir", "broker.dataDir", func(c *BrokerConfig) { c.DataDir = "" }, ""},
		{"flush type", "broker.flushDiskType", func(c *BrokerConfig) { c.FlushDiskType = "X" },
			`must be ASYNC_FLUSH or SYNC_FLUSH, got "X"`},
		{"flush interval", "broker.flushInterval", func(c *BrokerConfig) { c.FlushInterval = 0 }, ""},
		{"least pages", "broker.flushLeastPages", func(c *BrokerConfig) { c.FlushLeastPages = -1 }, ""},
		{"thorough", "broker.flushThoroughInterval", func(c *BrokerConfig) { c.FlushThoroughInterval = 0 }, ""},
		{"sync timeout", "broker.syncFlushTimeout", func(c *BrokerConfig) { c.SyncFlushTimeout = 0 }, ""},
		{"max msg", "broker.maxMessageSize", func(c *BrokerConfig) { c.MaxMessageSize = 0 }, ""},
		{"segment", "broker.commitLogSegmentSize", func(c *BrokerConfig) { c.CommitLogSegmentSize = 4 * MiB }, ""},
		{"cq units", "broker.consumeQueueUnitsPerFile", func(c *BrokerConfig) { c.ConsumeQueueUnitsPerFile = 0 }, ""},
		{"reserved", "broker.fileReservedTime", func(c *BrokerConfig) { c.FileReservedTime = 0 }, ""},
		{"delete when", "broker.deleteWhen", func(c *BrokerConfig) { c.DeleteWhen = "25" }, ""},
		{"delete when empty", "broker.deleteWhen", func(c *BrokerConfig) { c.DeleteWhen = "" }, ""},
		{"max used", "broker.diskMaxUsedRatio", func(c *BrokerConfig) { c.DiskMaxUsedRatio = 0 }, ""},
		{"force clean", "broker.diskForceCleanRatio", func(c *BrokerConfig) { c.DiskForceCleanRatio = 101 }, ""},
		{"full", "broker.diskFullRatio", func(c *BrokerConfig) { c.DiskFullRatio = -5 }, ""},
		{"force < used", "broker.diskForceCleanRatio", func(c *BrokerConfig) { c.DiskForceCleanRatio = 70 }, ""},
		{"full < used", "broker.diskFullRatio", func(c *BrokerConfig) { c.DiskFullRatio = 70 }, ""},
		{"queue nums", "broker.defaultTopicQueueNums", func(c *BrokerConfig) { c.DefaultTopicQueueNums = 0 }, ""},
		{"short poll", "broker.shortPollingTimeout", func(c *BrokerConfig) { c.ShortPollingTimeout = 0 }, ""},
		{"delay levels", "broker.delayLevels", func(c *BrokerConfig) { c.DelayLevels = "1s 5x" }, `"5x"`},
		{"delay empty", "broker.delayLevels", func(c *BrokerConfig) { c.DelayLevels = " " }, ""},
		{"reconsume", "broker.maxReconsumeTimes", func(c *BrokerConfig) { c.MaxReconsumeTimes = -1 }, ""},
		{"txn timeout", "broker.transactionTimeout", func(c *BrokerConfig) { c.TransactionTimeout = 0 }, ""},
		{"txn interval", "broker.transactionCheckInterval", func(c *BrokerConfig) { c.TransactionCheckInterval = 0 }, ""},
		{"txn max", "broker.transactionCheckMax", func(c *BrokerConfig) { c.TransactionCheckMax = 0 }, ""},
		{"ha listen", "broker.haListen", func(c *BrokerConfig) { c.HAListen = "nope" }, ""},
		{"ha listen same", "broker.haListen", func(c *BrokerConfig) { c.HAListen = c.Listen }, ""},
		{"ha listen derived", "broker.haListen", func(c *BrokerConfig) { c.Listen = "127.0.0.1:65535" }, ""},
		{"slave id 0", "broker.brokerId", func(c *BrokerConfig) { slave(c); c.BrokerID = 0 }, "SLAVE"},
		{"slave bad master", "broker.haMasterAddr", func(c *BrokerConfig) { slave(c); c.HAMasterAddr = ":10912" }, ""},
		{"master with master", "broker.haMasterAddr", func(c *BrokerConfig) { c.HAMasterAddr = "10.0.0.1:10912" }, ""},
		{"ha timeout", "broker.haSlaveTimeout", func(c *BrokerConfig) { c.HASlaveTimeout = -time.Second }, "0 means"},
		{"in-memory ratio 0", "broker.accessMessageInMemoryMaxRatio", func(c *BrokerConfig) { c.AccessMessageInMemoryMaxRatio = 0 }, ""},
		{"in-memory ratio 101", "broker.accessMessageInMemoryMaxRatio", func(c *BrokerConfig) { c.AccessMessageInMemoryMaxRatio = 101 }, ""},
		{"fallbehind", "broker.haSlaveFallbehindMax", func(c *BrokerConfig) { c.HASlaveFallbehindMax = 0 }, ""},
		{"log level", "broker.logLevel", func(c *BrokerConfig) { c.LogLevel = "x" }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultBrokerConfig()
			tc.mutate(&c)
			err := c.Validate()
			requireInvalid(t, err, tc.key)
			require.Contains(t, err.Error(), tc.msg)
		})
	}
}

func TestBrokerValidateAccepts(t *testing.T) {
	for name, mutate := range map[string]func(*BrokerConfig){
		"slave":          func(c *BrokerConfig) { c.Role, c.BrokerID, c.HAMasterAddr = Slave, 2, "master:10912" },
		"sync both":      func(c *BrokerConfig) { c.Role, c.FlushDiskType = SyncMaster, SyncFlush },
		"listen any":     func(c *BrokerConfig) { c.Listen, c.AdvertisedAddr = ":10911", "10.1.2.3:10911" },
		"ephemeral port": func(c *BrokerConfig) { c.Listen = "127.0.0.1:0"; c.HAListen = "127.0.0.1:0" },
		"small store": func(c *BrokerConfig) {
			c.MaxMessageSize, c.CommitLogSegmentSize, c.ConsumeQueueUnitsPerFile = 64*KiB, 1*MiB, 1000
		},
		"no force clean":  func(c *BrokerConfig) { c.DiskForceCleanRatio = 100 },
		"many hours":      func(c *BrokerConfig) { c.DeleteWhen = "04;16;0" },
		"zero reconsumes": func(c *BrokerConfig) { c.MaxReconsumeTimes = 0 },
		"slave reads":     func(c *BrokerConfig) { c.SlaveReadEnable, c.AccessMessageInMemoryMaxRatio = true, 100 },
		"ha timeout set":  func(c *BrokerConfig) { c.Role, c.HASlaveTimeout = SyncMaster, time.Second },
	} {
		t.Run(name, func(t *testing.T) {
			c := DefaultBrokerConfig()
			mutate(&c)
			require.NoError(t, c.Validate())
		})
	}
}

func TestConfigCrossValidate(t *testing.T) {
	c := DefaultConfig()
	c.Broker.RegisterInterval = c.NameServer.BrokerExpiry
	requireInvalid(t, c.Validate(), "broker.registerInterval")

	for key, mutate := range map[string]func(*Config){
		"namesrv.listen": func(c *Config) { c.NameServer.Listen = "x" },
		"broker.listen":  func(c *Config) { c.Broker.Listen = "x" },
		"log.format":     func(c *Config) { c.Log.Format = "x" },
	} {
		c := DefaultConfig()
		mutate(&c)
		requireInvalid(t, c.Validate(), key)
	}
}
