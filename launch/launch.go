// Package launch maps Ferry's configuration (package conf) onto the servers' typed
// Options, so that the broker and name server know nothing of configuration files and
// the command-line programs and test harnesses build servers the same way.
package launch

import (
	"crypto/tls"
	"fmt"

	"github.com/rs/zerolog"

	"github.com/ferrymq/ferry/acl/sign"
	"github.com/ferrymq/ferry/broker"
	"github.com/ferrymq/ferry/conf"
	"github.com/ferrymq/ferry/internal/mmap"
	"github.com/ferrymq/ferry/nameserver"
	"github.com/ferrymq/ferry/remoting"
	"github.com/ferrymq/ferry/store"
)

// BrokerOptions maps a validated broker configuration onto broker.Options, with the
// store on fsys and logs to log. It resolves what depends on the machine or on other
// keys: the in-memory limit of pulls (accessMessageInMemoryMaxRatio of physical memory,
// read from the operating system once, here) and haSlaveTimeout 0 (syncFlushTimeout).
func BrokerOptions(cfg conf.BrokerConfig, fsys mmap.FS, log zerolog.Logger) (broker.Options, error) {
	if err := cfg.Validate(); err != nil {
		return broker.Options{}, err
	}
	o := broker.DefaultOptions()
	o.BrokerName, o.ClusterName, o.BrokerID = cfg.BrokerName, cfg.ClusterName, int64(cfg.BrokerID)
	switch cfg.Role {
	case conf.AsyncMaster:
		o.Role = broker.RoleAsyncMaster
	case conf.SyncMaster:
		o.Role = broker.RoleSyncMaster
	case conf.Slave:
		o.Role = broker.RoleSlave
	default: // Validate refuses it
		return o, fmt.Errorf("%w: broker.brokerRole: %q", conf.ErrInvalidConfig, cfg.Role)
	}
	o.AdvertisedAddr = cfg.EffectiveAdvertisedAddr()
	if o.Role != broker.RoleSlave {
		// The broker registers the bound HA address (this one, or the port it got for
		// port 0, with the advertised host when it listens on all interfaces).
		o.HAListen = cfg.EffectiveHAListen()
	}
	o.HAMasterAddr = cfg.HAMasterAddr
	o.HASlaveTimeout, o.HASlaveFallbehindMax = cfg.EffectiveHASlaveTimeout(), cfg.HASlaveFallbehindMax
	o.SlaveSyncInterval = cfg.SlaveSyncInterval
	o.NamesrvAddrs, o.RegisterInterval = cfg.NamesrvAddrs, cfg.RegisterInterval
	o.MaxFrameSize, o.IdleTimeout = int(cfg.MaxFrameSize), cfg.IdleTimeout
	o.MaxRequestBytes = cfg.MaxRequestBytes
	w := cfg.Workers
	o.Workers = broker.Workers{Send: w.Send, Pull: w.Pull, Query: w.Query, Admin: w.Admin, Transaction: w.Transaction}
	o.AutoCreateTopic, o.DefaultTopicQueueNums = cfg.AutoCreateTopic, cfg.DefaultTopicQueueNums
	o.MaxReconsumeTimes = cfg.MaxReconsumeTimes
	o.LongPollingEnable, o.ShortPollingTimeout = cfg.LongPollingEnable, cfg.ShortPollingTimeout
	o.SlaveReadEnable, o.AccessMessageInMemoryMaxRatio = cfg.SlaveReadEnable, cfg.AccessMessageInMemoryMaxRatio
	o.EnablePropertyFilter, o.StoreReplyMessageEnable = cfg.EnablePropertyFilter, cfg.StoreReplyMessageEnable
	o.TraceTopicEnable, o.MsgTraceTopicName = cfg.TraceTopicEnable, cfg.MsgTraceTopicName
	o.Credentials = sign.Credentials{AccessKey: cfg.AccessKey, SecretKey: cfg.SecretKey}
	if cfg.ACLEnable {
		o.ACLFile = cfg.ACLFile
	}
	tlsConf, err := serverTLS(cfg.TLSMode, cfg.TLSCertFile, cfg.TLSKeyFile, cfg.TLSClientCAFile, cfg.TLSRequireClientCert)
	if err != nil {
		return o, fmt.Errorf("launch: broker: %w", err)
	}
	o.TLS = tlsConf
	if cfg.TLSToNamesrv {
		// As RocketMQ's clients: encrypted, the name server's certificate not verified.
		o.NamesrvTLS = &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: true} //nolint:gosec // documented (docs/security.md)
	}
	o.TransactionTimeout, o.TransactionCheckInterval = cfg.TransactionTimeout, cfg.TransactionCheckInterval
	o.TransactionCheckMax = cfg.TransactionCheckMax
	levels, err := cfg.DelayLevelDurations()
	if err != nil {
		return o, fmt.Errorf("launch: %w", err)
	}
	o.DelayLevels = levels
	o.Logger = log

	so := store.DefaultOptions()
	so.Dir, so.FS, so.Logger = cfg.DataDir, fsys, log
	so.SegmentSize = cfg.CommitLogSegmentSize
	so.FlushMode = store.FlushAsync
	if cfg.FlushDiskType == conf.SyncFlush {
		so.FlushMode = store.FlushSync
	}
	so.FlushInterval, so.FlushLeastPages = cfg.FlushInterval, cfg.FlushLeastPages
	so.FlushThoroughInterval, so.SyncFlushTimeout = cfg.FlushThoroughInterval, cfg.SyncFlushTimeout
	so.UnitsPerFile = cfg.ConsumeQueueUnitsPerFile
	so.MaxMessageSize = int(cfg.MaxMessageSize)
	so.FileReservedTime = cfg.FileReservedTime
	hours, err := conf.ParseDeleteWhen(cfg.DeleteWhen)
	if err != nil {
		return o, fmt.Errorf("launch: %w", err)
	}
	so.DeleteWhen = hours
	so.DiskMaxUsedRatio = float64(cfg.DiskMaxUsedRatio) / 100
	so.DiskForceCleanRatio = float64(cfg.DiskForceCleanRatio) / 100
	so.DiskFullRatio = float64(cfg.DiskFullRatio) / 100
	so.ScrubInterval, so.ScrubBytesPerSec = cfg.ScrubInterval, cfg.ScrubBytesPerSec
	if ram, err := physicalMemory(); err == nil {
		so.InMemoryMaxBytes = inMemoryMaxBytes(cfg.AccessMessageInMemoryMaxRatio, ram)
	} else {
		// No limit: every pull counts as in memory, so none suggests a slave for lagging.
		log.Warn().Err(err).Msg("broker.accessMessageInMemoryMaxRatio has no effect")
	}
	o.Store = so
	return o, o.Validate()
}

// serverTLS loads a server's TLS setting; nil when the mode is disabled.
func serverTLS(mode, cert, key, clientCA string, requireClientCert bool) (*remoting.TLSConfig, error) {
	m, err := remoting.ParseTLSMode(mode)
	if err != nil {
		return nil, err
	}
	if m == remoting.TLSDisabled {
		return nil, nil
	}
	tc, err := remoting.LoadServerTLS(cert, key, clientCA, requireClientCert)
	if err != nil {
		return nil, err
	}
	return &remoting.TLSConfig{Mode: m, Config: tc}, nil
}

// NameServerOptions maps a name-server configuration onto nameserver.Options; it fails
// when the TLS certificate or key cannot be loaded.
func NameServerOptions(cfg conf.NameServerConfig, log zerolog.Logger) (nameserver.Options, error) {
	o := nameserver.DefaultOptions()
	o.Listen, o.BrokerExpiry, o.ScanInterval = cfg.Listen, cfg.BrokerExpiry, cfg.ScanInterval
	o.MaxFrameSize, o.IdleTimeout = int(cfg.MaxFrameSize), cfg.IdleTimeout
	if cfg.ACLEnable {
		o.ACLFile = cfg.ACLFile
	}
	var err error
	if o.TLS, err = serverTLS(cfg.TLSMode, cfg.TLSCertFile, cfg.TLSKeyFile, cfg.TLSClientCAFile, cfg.TLSRequireClientCert); err != nil {
		return o, fmt.Errorf("launch: namesrv: %w", err)
	}
	o.Logger = log
	return o, nil
}
