package controller

import (
	"errors"

	"github.com/ferrymq/ferry/acl"
	"github.com/ferrymq/ferry/protocol"
)

// Errors of the server's requests beyond the state machine's.
var (
	// ErrBrokerNotAlive: an alter-SyncStateSet request adds a broker whose heartbeat the
	// leader has not seen within brokerHeartbeatTimeout.
	ErrBrokerNotAlive = errors.New("controller: broker not alive")
	// ErrBadRequest: a request with a missing or malformed field or body.
	ErrBadRequest = errors.New("controller: bad request")
)

// wireError is one refusal as it travels: the response code (RocketMQ 5's controller
// codes where one fits) and the name the ext field "error" carries, which tells apart
// refusals sharing a code.
type wireError struct {
	err  error
	name string
	code protocol.ResponseCode
}

// wireErrors lists every refusal the server answers with; the client maps a response
// back to its sentinel by name, else by code (the first row of the code).
var wireErrors = []wireError{
	{ErrStaleEpoch, "stale-master-epoch", protocol.ControllerFencedMasterEpoch},
	{ErrStaleSyncStateSet, "stale-sync-state-set-epoch", protocol.ControllerFencedSyncStateSetEpoch},
	{ErrNotMaster, "not-master", protocol.ControllerInvalidMaster},
	{ErrMasterNotInSet, "master-not-in-set", protocol.ControllerInvalidReplicas},
	{ErrNoCandidate, "no-candidate", protocol.ControllerMasterNotAvailable},
	{ErrBadRequest, "bad-request", protocol.ControllerInvalidRequest},
	{ErrBadCommand, "bad-command", protocol.ControllerInvalidRequest},
	{ErrBrokerNotAlive, "broker-not-alive", protocol.ControllerBrokerNotAlive},
	{ErrNotLeader, "not-leader", protocol.ControllerNotLeader},
	{ErrUnknownGroup, "unknown-group", protocol.ControllerBrokerMetadataNotExist},
	{ErrUnknownBroker, "unknown-broker", protocol.ControllerBrokerNeedToBeRegistered},
	{ErrMasterAlive, "master-alive", protocol.ControllerMasterStillExist},
	{ErrNotEligible, "not-eligible", protocol.ControllerElectMasterFailed},
	{ErrNoChange, "no-change", protocol.ControllerAlterSyncStateSetFailed},
	{ErrAddressInUse, "address-in-use", protocol.ControllerBrokerIDInvalid},
}

// wireErrorOf returns the row of the sentinel err wraps; ok is false for any other error.
func wireErrorOf(err error) (wireError, bool) {
	for _, w := range wireErrors {
		if errors.Is(err, w.err) {
			return w, true
		}
	}
	return wireError{}, false
}

// RemoteError is a refusal a controller answered: Error is the controller's text (the
// remark), and it matches the controller's sentinel with errors.Is (ErrStaleEpoch,
// ErrNotLeader, ..., acl.ErrNoPermission for NO_PERMISSION).
type RemoteError struct {
	// Code is the response code.
	Code protocol.ResponseCode
	// Remark is the controller's description.
	Remark string
	// Addr is the controller that answered.
	Addr string

	sentinel error
}

// Error returns the remark and the answering controller.
func (e *RemoteError) Error() string {
	if e.Remark == "" {
		return "controller " + e.Addr + ": " + e.Code.String()
	}
	return e.Remark + " (controller " + e.Addr + ")"
}

// Unwrap returns the sentinel the refusal stands for (nil when none is known).
func (e *RemoteError) Unwrap() error { return e.sentinel }

// remoteError builds the error of a refusal with code, the ext field "error" name, the
// remark and the answering address.
func remoteError(code int16, name, remark, addr string) *RemoteError {
	e := &RemoteError{Code: protocol.ResponseCode(code), Remark: remark, Addr: addr}
	if code == int16(protocol.NoPermission) {
		e.sentinel = acl.ErrNoPermission
		return e
	}
	for _, w := range wireErrors {
		if name != "" && w.name == name {
			e.sentinel = w.err
			return e
		}
	}
	for _, w := range wireErrors {
		if int16(w.code) == code {
			e.sentinel = w.err
			return e
		}
	}
	return e
}
