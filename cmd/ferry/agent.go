package main

import (
	"net"

	"github.com/rs/zerolog"

	"github.com/ferrymq/ferry/broker"
	"github.com/ferrymq/ferry/conf"
	"github.com/ferrymq/ferry/failover"
	"github.com/ferrymq/ferry/internal/mmap"
	"github.com/ferrymq/ferry/launch"
)

// startAgent starts the failover agent of a broker in controller mode
// (broker.controllerMode) on ln, the broker port: it registers with the controllers and
// serves the role they assign, restarting the broker in-process on every role change.
func startAgent(cfg *conf.Config, log zerolog.Logger, ln net.Listener, fsys mmap.FS) (*failover.Agent, error) {
	o, err := launch.AgentOptions(cfg.Broker, ln, fsys, log.With().Str("server", "broker").Logger())
	if err != nil {
		return nil, err
	}
	a, err := failover.New(o)
	if err != nil {
		return nil, err
	}
	if err := a.Start(); err != nil {
		return nil, err
	}
	log.Info().Strs("controllers", cfg.Broker.ControllerAddrs).
		Msg("broker in controller mode: registering with the controllers (not ready yet)")
	return a, nil
}

// agentBroker is the broker an agent runs now, as the metrics collector reads it
// (observe.BrokerSource): no metrics between two roles. A role change starts a new
// Broker, whose counters start from zero (a counter reset to Prometheus).
type agentBroker struct{ a *failover.Agent }

// Metrics is the current broker's, or the zero Metrics, which the collector skips.
func (s agentBroker) Metrics() broker.Metrics {
	if b := s.a.Broker(); b != nil {
		return b.Metrics()
	}
	return broker.Metrics{}
}
