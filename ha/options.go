package ha

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/rs/zerolog"

	"github.com/ferrymq/ferry/acl/sign"
	"github.com/ferrymq/ferry/commitlog"
	"github.com/ferrymq/ferry/remoting"
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

// Log is the commit log as a broker hands it to replication, a Master or a Slave by role
// (*commitlog.Log implements it): all of the log that package ha sees.
type Log interface {
	Source
	Replica
}

// Defaults (RocketMQ 4.x: haSendHeartbeatInterval, haHousekeepingInterval, the 100 ms
// wait of the master's writer, the slave's 5 s reconnect).
const (
	DefaultHeartbeatInterval = 5 * time.Second
	DefaultIdleTimeout       = 20 * time.Second
	DefaultPollInterval      = 100 * time.Millisecond
	DefaultRetryFloor        = 25 * time.Millisecond
	DefaultRetryMax          = 5 * time.Second
	// DefaultHandshakeTimeout bounds a new connection's TLS handshake and hello.
	DefaultHandshakeTimeout = 10 * time.Second
	// DefaultMaxClockSkew is how far a hello's timestamp may be from the master's clock.
	DefaultMaxClockSkew = 2 * time.Minute
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
	// TLS, when set and not disabled, is the listener's TLS mode and server config (the
	// broker's tlsMode): permissive serves TLS and plain slaves, told apart by the first
	// byte; enforcing refuses plain ones. nil: plain only.
	TLS *remoting.TLSConfig
	// Auth, when set, requires every slave to prove an account in a hello (frame.go)
	// that Auth accepts; connections without one are closed unanswered. nil: slaves are
	// not authenticated (RocketMQ's behaviour; a hello is read and ignored).
	Auth Authenticator
	// BrokerName, when set, is the broker name a hello must carry.
	BrokerName string
	// HandshakeTimeout bounds, from accept, the TLS handshake and the hello (or, without
	// Auth, the first 4 bytes of the first report).
	HandshakeTimeout time.Duration
	// MaxClockSkew is how far a hello's timestamp may be from the master's clock.
	MaxClockSkew time.Duration
	// Epoch, when positive, puts the master in controller mode: it serves under this
	// master epoch and admits only slaves that identify themselves with an identity hello
	// of the same epoch (frame.go), tracking each one by broker id (Peers, AckedBy).
	// 0: fixed roles, slaves are anonymous (RocketMQ's behaviour).
	Epoch int32
	// OnStaleEpoch, when set, is called when a slave shows a higher epoch than Epoch: this
	// master has been replaced. It runs on the connection's goroutine and must return
	// promptly (it must not wait for Close).
	OnStaleEpoch func(slaveID int64, slaveEpoch int32)
	Logger       zerolog.Logger
}

// DefaultMasterOptions returns the defaults; set Log and Listener.
func DefaultMasterOptions() MasterOptions {
	return MasterOptions{
		MaxFrame:          DefaultMaxFrame,
		HeartbeatInterval: DefaultHeartbeatInterval,
		IdleTimeout:       DefaultIdleTimeout,
		PollInterval:      DefaultPollInterval,
		HandshakeTimeout:  DefaultHandshakeTimeout,
		MaxClockSkew:      DefaultMaxClockSkew,
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
		positive("IdleTimeout", o.IdleTimeout), positive("PollInterval", o.PollInterval),
		positive("HandshakeTimeout", o.HandshakeTimeout), positive("MaxClockSkew", o.MaxClockSkew))
	if o.Epoch < 0 {
		errs = append(errs, fmt.Errorf("negative Epoch %d", o.Epoch))
	}
	if o.TLS != nil {
		if err := o.TLS.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
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
	// RetryFloor and RetryMax bound the reconnect backoff: RetryFloor after a connection
	// that worked, then half as long again per failed attempt up to RetryMax, each wait
	// less up to a quarter of jitter.
	RetryFloor, RetryMax time.Duration
	// DialTimeout bounds one connection attempt.
	DialTimeout time.Duration
	// MaxFrame is the largest frame body accepted; a larger one is a protocol error.
	MaxFrame int
	// Credentials, when AccessKey is set, are proved to the master in a hello (frame.go)
	// at each connection; the master must hold the account (an admin one, with ACL).
	// Empty: no hello (a master with authentication refuses the slave).
	Credentials sign.Credentials
	// BrokerName is the broker name the hello carries (the master checks it is its own).
	BrokerName string
	// TLS, when set, is the client config the slave dials its master with (TLS 1.2+).
	TLS *tls.Config
	// BrokerID and Epoch, when Epoch is positive (controller mode), are sent in an
	// identity hello at each connection (frame.go), with Credentials when set: the
	// slave's broker id assigned by the controller (≥ 1) and the master epoch it serves
	// under. A master in controller mode refuses a slave without them or with another
	// epoch. Epoch 0: fixed roles, no identity.
	BrokerID int64
	Epoch    int32
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
	if (o.Credentials.AccessKey == "") != (o.Credentials.SecretKey == "") {
		errs = append(errs, errors.New("credentials need both an access key and a secret key"))
	}
	if o.RetryMax < o.RetryFloor {
		errs = append(errs, fmt.Errorf("RetryMax %v below RetryFloor %v", o.RetryMax, o.RetryFloor))
	}
	switch {
	case o.Epoch < 0:
		errs = append(errs, fmt.Errorf("negative Epoch %d", o.Epoch))
	case o.Epoch > 0 && o.BrokerID < 1:
		errs = append(errs, fmt.Errorf("an identified slave (Epoch %d) needs a BrokerID ≥ 1, got %d", o.Epoch, o.BrokerID))
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
