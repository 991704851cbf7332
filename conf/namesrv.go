package conf

import "time"

// NameServerConfig is the "namesrv" section: the route server that brokers
// register with and clients ask for topic routes.
//
// Every field's comment gives its default, its key and its environment
// variable (see EnvVarName).
type NameServerConfig struct {
	// Listen is the TCP address the name server listens on (host:port; an
	// empty host listens on every interface, port 0 picks a free port).
	// Default "127.0.0.1:9876". Key namesrv.listen, env FERRY_NAMESRV_LISTEN,
	// flag --namesrv-listen.
	Listen string `mapstructure:"listen" default:"127.0.0.1:9876" check:"listen" option:"Listen" meaning:"address the name server listens on (empty host = every interface, port 0 = any)"`
	// HTTPListen is the address of `ferry namesrv`'s HTTP listener for operators
	// (/healthz, /readyz, /metrics; see docs/operations.md): HTTPS when namesrv.tlsMode is
	// enforcing, HTTPS and plain HTTP when permissive, plain when disabled.
	// Empty turns it off; `ferry standalone` serves broker.httpListen instead.
	// Default "" (off). Key namesrv.httpListen, env FERRY_NAMESRV_HTTP_LISTEN,
	// flag --http-listen (with ferry namesrv).
	HTTPListen string `mapstructure:"httpListen" default:"" check:"listenOrOff" process:"command" meaning:"HTTP address of /healthz, /readyz, /metrics of ferry namesrv (TLS as tlsMode); empty = off"`

	// BrokerExpiry is how long a broker stays in the route table without
	// re-registering (RocketMQ: 120 s). Default 120s. Key namesrv.brokerExpiry,
	// env FERRY_NAMESRV_BROKER_EXPIRY.
	BrokerExpiry time.Duration `mapstructure:"brokerExpiry" default:"2m" check:"positive" option:"BrokerExpiry" meaning:"a broker that has not re-registered for this long leaves the route table"`

	// ScanInterval is how often expired brokers are swept (RocketMQ: 5 s). It
	// must be shorter than BrokerExpiry. Default 5s. Key namesrv.scanInterval,
	// env FERRY_NAMESRV_SCAN_INTERVAL.
	ScanInterval time.Duration `mapstructure:"scanInterval" default:"5s" check:"positive" option:"ScanInterval" meaning:"how often expired brokers are swept; shorter than namesrv.brokerExpiry"`

	// LogLevel overrides log.level for the name server; empty inherits it.
	// Default "". Key namesrv.logLevel, env FERRY_NAMESRV_LOG_LEVEL.
	LogLevel string `mapstructure:"logLevel" default:"" check:"logLevel=inherit" process:"command" meaning:"log level of the name server; empty inherits log.level"`

	// MaxFrameSize is the largest remoting frame accepted, in bytes (RocketMQ
	// rejects frames over 16 MiB). Default 16MiB. Key namesrv.maxFrameSize,
	// env FERRY_NAMESRV_MAX_FRAME_SIZE.
	MaxFrameSize int64 `mapstructure:"maxFrameSize" default:"16MiB" check:"frameSize" option:"MaxFrameSize" meaning:"largest remoting frame accepted"`

	// IdleTimeout closes a connection that has carried no traffic for this
	// long (clients and Netty use 120 s). Default 120s. Key
	// namesrv.idleTimeout, env FERRY_NAMESRV_IDLE_TIMEOUT.
	IdleTimeout time.Duration `mapstructure:"idleTimeout" default:"2m" check:"positive" option:"IdleTimeout" meaning:"a connection silent for this long is closed"`

	// KVConfigPath is the file that keeps the name server's KV configuration
	// (kvConfig.json: order topic configs, drained brokers) across restarts.
	// Empty means <broker.dataDir>/namesrv/kvConfig.json (./data/namesrv/kvConfig.json
	// by default, for `ferry namesrv` as for `ferry standalone`). Default "". Key
	// namesrv.kvConfigPath, env FERRY_NAMESRV_KV_CONFIG_PATH.
	KVConfigPath string `mapstructure:"kvConfigPath" default:"" process:"command" meaning:"KV config file (order configs, drained brokers); empty = <dataDir>/namesrv/kvConfig.json"`

	// ACLEnable checks every request against the accounts in ACLFile
	// (RocketMQ ACL 1.0): broker registrations then need an admin account's
	// signature (broker.accessKey/secretKey). Default false. Key
	// namesrv.aclEnable, env FERRY_NAMESRV_ACL_ENABLE.
	ACLEnable bool `mapstructure:"aclEnable" default:"false" option:"ACL" meaning:"check every request against the ACL accounts file (registrations need an admin account)"`
	// ACLFile is the accounts file, re-read when it changes. Required with
	// ACLEnable. Default "". Key namesrv.aclFile, env FERRY_NAMESRV_ACL_FILE.
	ACLFile string `mapstructure:"aclFile" default:"" option:"ACLFile" meaning:"ACL accounts file (plain_acl.yml shape), re-read when it changes"`

	// TLSMode is what the name server's port accepts: "disabled",
	// "permissive" (TLS and plain) or "enforcing" (TLS only), as RocketMQ's
	// tls.server.mode. Default "disabled". Key namesrv.tlsMode, env
	// FERRY_NAMESRV_TLS_MODE.
	TLSMode string `mapstructure:"tlsMode" default:"disabled" option:"TLS.Mode" meaning:"TLS on the name-server port: disabled, permissive (TLS and plain) or enforcing (TLS only)"`
	// TLSCertFile is the PEM certificate chain presented. Required unless
	// tlsMode is disabled. Default "". Key namesrv.tlsCertFile, env
	// FERRY_NAMESRV_TLS_CERT_FILE.
	TLSCertFile string `mapstructure:"tlsCertFile" default:"" option:"TLS.Config" meaning:"PEM certificate chain the name server presents"`
	// TLSKeyFile is the PEM private key of TLSCertFile. Default "". Key
	// namesrv.tlsKeyFile, env FERRY_NAMESRV_TLS_KEY_FILE.
	TLSKeyFile string `mapstructure:"tlsKeyFile" default:"" option:"TLS.Config" meaning:"PEM private key of namesrv.tlsCertFile"`
	// TLSClientCAFile lists the PEM certificate authorities client
	// certificates are verified against. Default "". Key
	// namesrv.tlsClientCaFile, env FERRY_NAMESRV_TLS_CLIENT_CA_FILE.
	TLSClientCAFile string `mapstructure:"tlsClientCaFile" default:"" option:"TLS.Config" meaning:"PEM CAs client certificates are verified against (empty: not checked)"`
	// TLSRequireClientCert refuses TLS clients without a certificate signed by
	// TLSClientCAFile. Default false. Key namesrv.tlsRequireClientCert, env
	// FERRY_NAMESRV_TLS_REQUIRE_CLIENT_CERT.
	TLSRequireClientCert bool `mapstructure:"tlsRequireClientCert" default:"false" option:"TLS.Config" meaning:"refuse TLS clients without a certificate from namesrv.tlsClientCaFile"`
}

// DefaultNameServerConfig returns the defaults of the name server (the default tags
// of NameServerConfig, see KeyTable).
func DefaultNameServerConfig() NameServerConfig {
	return defaultsOf[NameServerConfig]()
}

// Validate checks every field (the check tags of the key table, then the rules between
// fields). The returned error names the offending key ("namesrv.<field>") and wraps
// ErrInvalidConfig.
func (c NameServerConfig) Validate() error {
	if err := checkKeys(c, "namesrv."); err != nil {
		return err
	}
	if c.ScanInterval >= c.BrokerExpiry {
		return invalid("namesrv.scanInterval", "must be shorter than namesrv.brokerExpiry (%s), got %s",
			c.BrokerExpiry, c.ScanInterval)
	}
	if c.ACLEnable && c.ACLFile == "" {
		return invalid("namesrv.aclFile", "must name the accounts file when namesrv.aclEnable is true")
	}
	return checkTLS("namesrv", c.TLSMode, c.TLSCertFile, c.TLSKeyFile, c.TLSClientCAFile, c.TLSRequireClientCert)
}
