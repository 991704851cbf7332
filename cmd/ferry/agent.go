package main

import (
	"net"

	"github.com/rs/zerolog"

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
// (observe.BrokerSource): zeros between two roles.
type agentBroker struct{ a *failover.Agent }

// TopicCount is the current broker's.
func (s agentBroker) TopicCount() int {
	if b := s.a.Broker(); b != nil {
		return b.TopicCount()
	}
	return 0
}

// GroupCount is the current broker's.
func (s agentBroker) GroupCount() int {
	if b := s.a.Broker(); b != nil {
		return b.GroupCount()
	}
	return 0
}

// CommitLogSize is the current broker's.
func (s agentBroker) CommitLogSize() int64 {
	if b := s.a.Broker(); b != nil {
		return b.CommitLogSize()
	}
	return 0
}

// StoreDamage is the current broker's.
func (s agentBroker) StoreDamage() (badReads, quarantinedRanges int64) {
	if b := s.a.Broker(); b != nil {
		return b.StoreDamage()
	}
	return 0, 0
}

// HASlaves is the current broker's; not ok between roles.
func (s agentBroker) HASlaves() (int, bool) {
	if b := s.a.Broker(); b != nil {
		return b.HASlaves()
	}
	return 0, false
}

// EachTopicIn is the current broker's.
func (s agentBroker) EachTopicIn(fn func(topic string, messages int64)) {
	if b := s.a.Broker(); b != nil {
		b.EachTopicIn(fn)
	}
}

// EachGroupOut is the current broker's.
func (s agentBroker) EachGroupOut(fn func(topic, group string, messages int64)) {
	if b := s.a.Broker(); b != nil {
		b.EachGroupOut(fn)
	}
}
