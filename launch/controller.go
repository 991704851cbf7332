package launch

import (
	"fmt"

	"github.com/rs/zerolog"

	"github.com/ferrymq/ferry/conf"
	"github.com/ferrymq/ferry/controller"
)

// ModeController is the server mode of `ferry controller` (conf.ServerController).
const ModeController = conf.ServerController

// convertedControllerKeys is convertedBrokerKeys for the controller.
func convertedControllerKeys() map[string]bool {
	return map[string]bool{
		"controller.aclEnable": true, "controller.aclFile": true,
		"controller.tlsMode": true, "controller.tlsCertFile": true, "controller.tlsKeyFile": true,
		"controller.tlsClientCaFile": true, "controller.tlsRequireClientCert": true,
	}
}

// ControllerOptions maps a validated controller configuration onto
// controller.ServerOptions, logging to log; it fails when the TLS certificate or key
// cannot be loaded. The Raft listener is bound by the caller (ServerOptions.Raft.Listener)
// or by the server.
func ControllerOptions(cfg conf.ControllerConfig, log zerolog.Logger) (controller.ServerOptions, error) {
	o := controller.DefaultServerOptions()
	if err := cfg.Validate(); err != nil {
		return o, err
	}
	all := conf.Config{Controller: cfg}
	if err := copyKeys(&all, "controller", &o, convertedControllerKeys()); err != nil {
		return o, err
	}
	if cfg.ACLEnable {
		o.ACLFile = cfg.ACLFile
	}
	var err error
	if o.TLS, err = serverTLS(cfg.TLSMode, cfg.TLSCertFile, cfg.TLSKeyFile, cfg.TLSClientCAFile, cfg.TLSRequireClientCert); err != nil {
		return o, fmt.Errorf("launch: controller: %w", err)
	}
	// The check interval follows the heartbeat timeout (a sixth of it, at most 500 ms).
	o.CheckInterval = min(o.CheckInterval, o.BrokerHeartbeatTimeout/6)
	o.Logger, o.Raft.Logger = log, log
	return o, o.Validate()
}
