// Package launch maps Ferry's configuration (package conf) onto the servers' typed
// Options, so that the broker and name server know nothing of configuration files and
// the command-line programs and test harnesses build servers the same way.
package launch

import (
	"crypto/tls"
	"fmt"
	"path/filepath"

	"github.com/rs/zerolog"

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
// In controller mode (broker.controllerMode) it copies the controller-mode settings and
// leaves the role, the ids, the master epoch and the SyncStateSet keeper to the failover
// agent, which reads broker.controllerAddrs and broker.controllerHeartbeatInterval from
// the configuration itself.
func BrokerOptions(cfg conf.BrokerConfig, fsys mmap.FS, log zerolog.Logger) (broker.Options, error) {
	if err := cfg.Validate(); err != nil {
		return broker.Options{}, err
	}
	o := broker.DefaultOptions()
	o.Store.FS, o.Store.Logger, o.Logger = fsys, log, log
	// Every key with an Options field (conf.KeyTable) that needs no conversion.
	all := conf.Config{Broker: cfg}
	if err := copyKeys(&all, "broker", &o, convertedBrokerKeys()); err != nil {
		return o, err
	}
	o.ConfigProperties = brokerProperties

	// The converted keys (convertedBrokerKeys()).
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
	o.HASlaveTimeout = cfg.EffectiveHASlaveTimeout()
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
	levels, err := cfg.DelayLevelDurations()
	if err != nil {
		return o, fmt.Errorf("launch: %w", err)
	}
	o.DelayLevels = levels

	so := &o.Store
	so.FlushMode = store.FlushAsync
	if cfg.FlushDiskType == conf.SyncFlush {
		so.FlushMode = store.FlushSync
	}
	hours, err := conf.ParseDeleteWhen(cfg.DeleteWhen)
	if err != nil {
		return o, fmt.Errorf("launch: %w", err)
	}
	so.DeleteWhen = hours
	so.DiskMaxUsedRatio = float64(cfg.DiskMaxUsedRatio) / 100
	so.DiskForceCleanRatio = float64(cfg.DiskForceCleanRatio) / 100
	so.DiskFullRatio = float64(cfg.DiskFullRatio) / 100
	if ram, err := physicalMemory(); err == nil {
		so.InMemoryMaxBytes = inMemoryMaxBytes(cfg.AccessMessageInMemoryMaxRatio, ram)
	} else {
		// No limit: every pull counts as in memory, so none suggests a slave for lagging.
		log.Warn().Err(err).Msg("broker.accessMessageInMemoryMaxRatio has no effect")
	}
	if o.ControllerMode {
		// The failover agent completes the options at run time (Role, BrokerID,
		// AssignedID, MasterEpoch, HAMasterAddr, SyncStateSet, Epochs, OnFenced) and
		// broker.New checks them; the rest is checked now, as a fixed-role master's.
		probe := o
		probe.ControllerMode, probe.AllAckInSyncStateSet, probe.MinInSyncReplicas = false, false, 1
		return o, probe.Validate()
	}
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

// NameServerKVConfigPath is the file of the name server's KV configuration:
// namesrv.kvConfigPath, or namesrv/kvConfig.json under broker.dataDir when that is empty.
func NameServerKVConfigPath(cfg *conf.Config) string {
	if cfg.NameServer.KVConfigPath != "" {
		return cfg.NameServer.KVConfigPath
	}
	return filepath.Join(cfg.Broker.DataDir, "namesrv", "kvConfig.json")
}

// NameServerOptions maps a name-server configuration onto nameserver.Options; it fails
// when the TLS certificate or key cannot be loaded.
func NameServerOptions(cfg conf.NameServerConfig, log zerolog.Logger) (nameserver.Options, error) {
	o := nameserver.DefaultOptions()
	all := conf.Config{NameServer: cfg}
	if err := copyKeys(&all, "namesrv", &o, convertedNameServerKeys()); err != nil {
		return o, err
	}
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
