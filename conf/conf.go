// Package conf holds Ferry's typed server configuration — the name server,
// the broker and logging — with documented defaults, validation, and the one
// loader that reads a YAML file, FERRY_* environment variables and command
// line flags.
//
// Only this package (and cmd/) imports viper; every other package receives
// plain typed Options built from these structs.
//
// # Keys
//
// A key is the dotted YAML path of a setting, with top-level sections matching the
// modes of the ferry command (namesrv, broker, standalone, controller):
//
//	namesrv:          # NameServerConfig
//	  listen: 127.0.0.1:9876
//	broker:           # BrokerConfig
//	  brokerName: broker-a
//	  workers:
//	    send: 16
//	controller:       # ControllerConfig
//	  nodeId: n0
//	log:              # LogConfig
//	  level: info
//
// Each leaf field of Config is one key, and its struct tags are the key's row in
// the key table (see KeyTable): default, meaning, check, the Options field it
// sets and its RocketMQ property.
//
// Keys are matched case-insensitively (as viper does), but the documented
// spelling is camelCase. A key the loader does not know is an error, so a typo
// never silently falls back to a default.
//
// # Value syntax
//
// Durations use Go syntax ("500ms", "1m30s", "72h"). Byte sizes accept a
// plain integer number of bytes or a number with a unit: B, KB/KiB, MB/MiB,
// GB/GiB, TB/TiB, all meaning powers of 1024 ("16MiB", "1GiB"). Lists accept a
// YAML sequence or a string separated by ',' or ';' ("a:9876;b:9876", as
// RocketMQ's namesrvAddr). Enumerations are upper-case strings (ASYNC_MASTER).
//
// # Precedence
//
// Load starts from the defaults and applies, each overriding the one before:
// the YAML file, FERRY_* environment variables, and flags that were explicitly
// set on the command line. See EnvVarName for the environment mapping and
// BindFlags for the flags.
package conf

import (
	"errors"
	"fmt"
	"strings"

	"github.com/ferrymq/ferry/internal/logging"
)

// ErrInvalidConfig is wrapped (via %w) by every error that reports a bad
// configuration value, an unknown key or an unparsable file. Test with
// errors.Is.
var ErrInvalidConfig = errors.New("invalid configuration")

// invalid builds an error naming key that wraps ErrInvalidConfig, e.g.
// "invalid configuration: broker.flushDiskType: must be ASYNC_FLUSH or
// SYNC_FLUSH, got "X"".
func invalid(key, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrInvalidConfig, key, fmt.Sprintf(format, args...))
}

// Config is the whole configuration of the ferry command. The namesrv mode
// uses NameServer and Log, the broker mode Broker and Log, the standalone
// mode (name server and broker in one process) those three, and the controller
// mode Controller and Log.
type Config struct {
	// NameServer is the "namesrv" section.
	NameServer NameServerConfig `mapstructure:"namesrv"`
	// Broker is the "broker" section.
	Broker BrokerConfig `mapstructure:"broker"`
	// Controller is the "controller" section.
	Controller ControllerConfig `mapstructure:"controller"`
	// Log is the "log" section.
	Log LogConfig `mapstructure:"log"`
	// Console is the "console" section (the web console of ferry broker and standalone).
	Console ConsoleConfig `mapstructure:"console"`
}

// DefaultConfig returns the documented defaults of every section. They
// validate, and they describe a working standalone setup on 127.0.0.1: the
// broker's default name server address is the name server's default listen
// address.
func DefaultConfig() Config {
	return Config{
		NameServer: DefaultNameServerConfig(),
		Broker:     DefaultBrokerConfig(),
		Controller: DefaultControllerConfig(),
		Log:        DefaultLogConfig(),
		Console:    DefaultConsoleConfig(),
	}
}

// Validate checks every section and the rules that span sections. The
// returned error names the offending key and wraps ErrInvalidConfig.
func (c Config) Validate() error {
	if err := c.NameServer.Validate(); err != nil {
		return err
	}
	if err := c.Broker.Validate(); err != nil {
		return err
	}
	if err := c.Controller.Validate(); err != nil {
		return err
	}
	if err := c.Log.Validate(); err != nil {
		return err
	}
	if err := c.Console.Validate(); err != nil {
		return err
	}
	if c.Console.ACLAccounts && c.Broker.ACLFile == "" {
		return invalid("console.aclAccounts", "needs broker.aclFile, the accounts file to read")
	}
	// A broker that re-registers less often than the name server expires it
	// would flap in and out of the route table.
	if c.Broker.RegisterInterval >= c.NameServer.BrokerExpiry {
		return invalid("broker.registerInterval", "must be shorter than namesrv.brokerExpiry (%s), got %s",
			c.NameServer.BrokerExpiry, c.Broker.RegisterInterval)
	}
	return nil
}

// NameServerLogLevel is the effective log level of the name server:
// namesrv.logLevel, or log.level when that is empty.
func (c Config) NameServerLogLevel() string {
	return firstNonEmpty(c.NameServer.LogLevel, c.Log.Level)
}

// BrokerLogLevel is the effective log level of the broker: broker.logLevel,
// or log.level when that is empty.
func (c Config) BrokerLogLevel() string {
	return firstNonEmpty(c.Broker.LogLevel, c.Log.Level)
}

// LogConfig is the "log" section: process-wide logging. It maps one to one
// onto internal/logging.Options (Output is chosen by the command).
type LogConfig struct {
	// Level is the minimum level logged: trace, debug, info, warn or error.
	// Components may override it (namesrv.logLevel, broker.logLevel).
	// Default "info". Key log.level, env FERRY_LOG_LEVEL, flag --log-level.
	Level string `mapstructure:"level" default:"info" check:"logLevel" process:"command" meaning:"trace, debug, info, warn or error"`
	// Format is "auto" (console on a terminal, JSON otherwise), "console" or
	// "json", case-insensitive. Default "auto". Key log.format, env FERRY_LOG_FORMAT.
	Format string `mapstructure:"format" default:"auto" check:"oneOfFold=auto|console|json" process:"command" meaning:"auto (console on a terminal, JSON otherwise), console or json"`
}

// DefaultLogConfig returns the default tags of LogConfig: Level "info" and Format
// "auto".
func DefaultLogConfig() LogConfig {
	return defaultsOf[LogConfig]()
}

// Validate checks the level and format names (the check tags of the key table).
func (c LogConfig) Validate() error {
	return checkKeys(c, "log.")
}

// checkLogLevel accepts the level names of internal/logging (duplicated here
// because conf imports no other Ferry package). allowEmpty is for the
// per-component overrides, where empty means "inherit log.level".
func checkLogLevel(key, level string, allowEmpty bool) error {
	if level == "" && allowEmpty {
		return nil
	}
	if _, err := logging.ParseLevel(level); err != nil {
		return invalid(key, "must be %s, got %q", strings.Join(logging.LevelNames[:], ", "), level)
	}
	return nil
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
