package failover

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/rs/zerolog"

	"github.com/ferrymq/ferry/broker"
	"github.com/ferrymq/ferry/controller"
)

// ErrBadOptions is wrapped by every error of Options.Validate.
var ErrBadOptions = errors.New("failover: bad options")

// Options configure an Agent.
type Options struct {
	// Broker is the broker as configured (package launch maps the configuration onto
	// it). For each broker it starts, the agent sets the fields the controller decides:
	// ControllerMode, Role, BrokerID, AssignedID, MasterEpoch, HAMasterAddr, SyncStateSet,
	// Epochs and OnFenced. Broker.Store.Dir is where the agent keeps the assigned broker
	// id (file controllerBrokerId) and the broker its epoch file.
	Broker broker.Options
	// Listener is the broker's port, bound by the caller (so that a port in use fails at
	// once): the first broker serves it, and every later one (after a role change) a new
	// listener on the same address. The agent closes it.
	Listener net.Listener
	// Controller configures the client of the controllers (broker.controllerAddrs; the
	// broker's TLS and credentials).
	Controller controller.ClientOptions
	// HeartbeatInterval is how often the agent reports to the controllers and learns the
	// group's state (broker.controllerHeartbeatInterval, default 1 s).
	HeartbeatInterval time.Duration
	// ShutdownTimeout bounds the graceful shutdown of a broker whose role changes (and of
	// the last one at Shutdown when its context has no deadline). Default 10 s.
	ShutdownTimeout time.Duration
	// RelistenTimeout bounds the wait for the broker's port to be free again after a
	// role change (another socket may hold it for a moment). Default 10 s.
	RelistenTimeout time.Duration
	// RetryInterval is how soon a failed step is tried again: registering, or starting
	// the assigned role (a slave whose master is not serving its new epoch yet). Default
	// 200 ms.
	RetryInterval time.Duration
	// MaxStartFailures is how many times in a row starting the assigned role may fail
	// (the broker does not open, the port stays taken) before the agent gives up (Failed
	// is closed: the process should exit so that its supervisor restarts it, and the
	// controllers elect another master). Waiting for a master that is not serving yet is
	// not a failure. Default 5.
	MaxStartFailures int
	// Logger receives the agent's log lines (the brokers log to Broker.Logger).
	Logger zerolog.Logger
}

// DefaultOptions returns the defaults; Broker, Listener and Controller.Addrs must be set.
func DefaultOptions() Options {
	return Options{
		Broker:            broker.DefaultOptions(),
		Controller:        controller.DefaultClientOptions(),
		HeartbeatInterval: time.Second,
		ShutdownTimeout:   10 * time.Second,
		RelistenTimeout:   10 * time.Second,
		RetryInterval:     200 * time.Millisecond,
		MaxStartFailures:  5,
		Logger:            zerolog.Nop(),
	}
}

// Validate reports the first problem, wrapping ErrBadOptions.
func (o *Options) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrBadOptions, fmt.Sprintf(format, args...))
	}
	switch {
	case o.Listener == nil:
		return bad("Listener is nil")
	case o.Broker.BrokerName == "" || o.Broker.ClusterName == "":
		return bad("the broker needs BrokerName and ClusterName")
	case o.Broker.Store.Dir == "" || o.Broker.Store.FS == nil:
		return bad("the broker needs Store.Dir and Store.FS")
	case o.HeartbeatInterval <= 0 || o.ShutdownTimeout <= 0 || o.RelistenTimeout <= 0 || o.RetryInterval <= 0:
		return bad("HeartbeatInterval %v, ShutdownTimeout %v, RelistenTimeout %v and RetryInterval %v must be positive",
			o.HeartbeatInterval, o.ShutdownTimeout, o.RelistenTimeout, o.RetryInterval)
	case o.MaxStartFailures < 1:
		return bad("MaxStartFailures %d must be at least 1", o.MaxStartFailures)
	}
	if _, _, err := net.SplitHostPort(o.Broker.AdvertisedAddr); err != nil {
		return bad("Broker.AdvertisedAddr %q: %v", o.Broker.AdvertisedAddr, err)
	}
	if err := o.Controller.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrBadOptions, err)
	}
	return nil
}
