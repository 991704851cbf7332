package ha

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/rs/zerolog"

	"github.com/ferrymq/ferry/commitlog"
)

// Source is the master's commit log as the HA master reads it (*commitlog.Log).
type Source interface {
	MinOffset() int64
	MaxOffset() int64
	// Read returns a zero-copy view of up to n bytes of one segment from off.
	Read(off int64, n int) (*commitlog.View, error)
}

// Replica is the slave's commit log as the HA slave writes it (*commitlog.Log).
type Replica interface {
	ReplicaOffset() int64
	AppendReplica(off int64, b []byte) error
	// StartReplicaAt makes an empty log start at off (the master's first segment).
	StartReplicaAt(off int64) error
}

// Defaults (RocketMQ 4.x: haSendHeartbeatInterval, haHousekeepingInterval, the 100 ms
// wait of the master's writer, the slave's 5 s reconnect).
const (
	DefaultHeartbeatInterval = 5 * time.Second
	DefaultIdleTimeout       = 20 * time.Second
	DefaultPollInterval      = 100 * time.Millisecond
	DefaultRetryFloor        = 100 * time.Millisecond
	DefaultRetryMax          = 5 * time.Second
	// DefaultSlaveMaxFrame is the largest frame body a slave accepts.
	DefaultSlaveMaxFrame = 4 << 20
)

// MasterOptions configures a Master. Start from DefaultMasterOptions.
type MasterOptions struct {
	// Log is the commit log to stream.
	Log Source
	// Listener accepts slave connections; the Master closes it on Close.
	Listener net.Listener
	// MaxFrame is the largest frame body sent (haTransferBatchSize, 32 KiB).
	MaxFrame int
	// HeartbeatInterval: an empty frame is sent when nothing was sent for this long.
	HeartbeatInterval time.Duration
	// IdleTimeout: a connection is closed when nothing was received for this long.
	IdleTimeout time.Duration
	// PollInterval is how long the writer waits for Notify before it looks for new data.
	PollInterval time.Duration
	Logger       zerolog.Logger
}

// DefaultMasterOptions returns the defaults; set Log and Listener.
func DefaultMasterOptions() MasterOptions {
	return MasterOptions{
		MaxFrame:          DefaultMaxFrame,
		HeartbeatInterval: DefaultHeartbeatInterval,
		IdleTimeout:       DefaultIdleTimeout,
		PollInterval:      DefaultPollInterval,
		Logger:            zerolog.Nop(),
	}
}

// Validate checks the options.
func (o *MasterOptions) Validate() error {
	var errs []error
	if o.Log == nil {
		errs = append(errs, errors.New("ha: options: Log is required"))
	}
	if o.Listener == nil {
		errs = append(errs, errors.New("ha: options: Listener is required"))
	}
	if o.MaxFrame <= 0 || o.MaxFrame > 1<<30 {
		errs = append(errs, fmt.Errorf("MaxFrame %d not in (0, 1 GiB]", o.MaxFrame))
	}
	errs = append(errs, positive("HeartbeatInterval", o.HeartbeatInterval),
		positive("IdleTimeout", o.IdleTimeout), positive("PollInterval", o.PollInterval))
	if o.IdleTimeout > 0 && o.IdleTimeout <= o.HeartbeatInterval {
		errs = append(errs, fmt.Errorf("IdleTimeout %v must exceed HeartbeatInterval %v", o.IdleTimeout, o.HeartbeatInterval))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("ha: master options: %w", err)
	}
	return nil
}

// SlaveOptions configures a Slave. Start from DefaultSlaveOptions.
type SlaveOptions struct {
	// Log is the slave's commit log.
	Log Replica
	// MasterAddr is the master's HA address (host:port).
	MasterAddr string
	// ReportInterval: the offset is reported when nothing was reported for this long
	// (besides after every append).
	ReportInterval time.Duration
	// IdleTimeout: the connection is dropped when nothing was received for this long.
	IdleTimeout time.Duration
	// RetryFloor and RetryMax bound the reconnect backoff (doubling from RetryFloor).
	RetryFloor, RetryMax time.Duration
	// DialTimeout bounds one connection attempt.
	DialTimeout time.Duration
	// MaxFrame is the largest frame body accepted; a larger one is a protocol error.
	MaxFrame int
	Logger   zerolog.Logger
}

// DefaultSlaveOptions returns the defaults; set Log and MasterAddr.
func DefaultSlaveOptions() SlaveOptions {
	return SlaveOptions{
		ReportInterval: DefaultHeartbeatInterval,
		IdleTimeout:    DefaultIdleTimeout,
		RetryFloor:     DefaultRetryFloor,
		RetryMax:       DefaultRetryMax,
		DialTimeout:    3 * time.Second,
		MaxFrame:       DefaultSlaveMaxFrame,
		Logger:         zerolog.Nop(),
	}
}

// Validate checks the options.
func (o *SlaveOptions) Validate() error {
	var errs []error
	if o.Log == nil {
		errs = append(errs, errors.New("ha: options: Log is required"))
	}
	if _, _, err := net.SplitHostPort(o.MasterAddr); err != nil {
		errs = append(errs, fmt.Errorf("MasterAddr %q: %w", o.MasterAddr, err))
	}
	if o.MaxFrame <= 0 || o.MaxFrame > 1<<30 {
		errs = append(errs, fmt.Errorf("MaxFrame %d not in (0, 1 GiB]", o.MaxFrame))
	}
	errs = append(errs, positive("ReportInterval", o.ReportInterval), positive("IdleTimeout", o.IdleTimeout),
		positive("RetryFloor", o.RetryFloor), positive("RetryMax", o.RetryMax), positive("DialTimeout", o.DialTimeout))
	if o.RetryMax < o.RetryFloor {
		errs = append(errs, fmt.Errorf("RetryMax %v below RetryFloor %v", o.RetryMax, o.RetryFloor))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("ha: slave options: %w", err)
	}
	return nil
}

func positive(name string, d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("%s %v must be positive", name, d)
	}
	return nil
}
