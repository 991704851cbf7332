package launch

import (
	"fmt"
	"net"

	"github.com/rs/zerolog"

	"github.com/ferrymq/ferry/conf"
	"github.com/ferrymq/ferry/failover"
	"github.com/ferrymq/ferry/internal/mmap"
)

// AgentOptions maps a broker configuration in controller mode (broker.controllerMode)
// onto the failover agent's options: the broker's own (BrokerOptions), which the agent
// completes with the role the controllers assign, the controllers' addresses
// (broker.controllerAddrs), the heartbeat interval (broker.controllerHeartbeatInterval),
// and ln, the broker port the caller bound. The agent dials the controllers as the broker
// dials its name servers: with TLS when broker.tlsToNamesrv is set, signing with
// broker.accessKey / broker.secretKey when they are set.
func AgentOptions(cfg conf.BrokerConfig, ln net.Listener, fsys mmap.FS, log zerolog.Logger) (failover.Options, error) {
	if !cfg.ControllerMode {
		return failover.Options{}, fmt.Errorf("%w: broker.controllerMode is off: the broker's role is configured", conf.ErrInvalidConfig)
	}
	bo, err := BrokerOptions(cfg, fsys, log)
	if err != nil {
		return failover.Options{}, err
	}
	o := failover.DefaultOptions()
	o.Broker, o.Listener, o.Logger = bo, ln, log
	o.HeartbeatInterval = cfg.ControllerHeartbeatInterval
	o.Controller.Addrs, o.Controller.TLS, o.Controller.Logger = cfg.ControllerAddrs, bo.NamesrvTLS, log
	if bo.Credentials.AccessKey != "" {
		creds := bo.Credentials
		o.Controller.Credentials = &creds
	}
	return o, o.Validate()
}
