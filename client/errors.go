package client

import (
	"errors"
	"fmt"

	"github.com/ferrymq/ferry/protocol"
)

// Sentinel errors; the errors the client returns wrap them (test with errors.Is).
var (
	// ErrClosed means the Client or Producer was closed.
	ErrClosed = errors.New("client: closed")
	// ErrNoRoute means no name server knows a writable route for the topic.
	ErrNoRoute = errors.New("client: no route for topic")
	// ErrBroker means a broker answered with an error code; the error is a *BrokerError.
	ErrBroker = errors.New("client: broker refused the request")
	// ErrNoPermission means a server answered NO_PERMISSION (16): its ACL refused the
	// request (no or wrong credentials, or an account without the topic, group or admin
	// right it needs; the remark says which), or the topic or broker does not allow the
	// operation. The error is a *BrokerError (errors.Is(err, ErrBroker) holds too).
	ErrNoPermission = errors.New("client: no permission")
	// ErrIllegalMessage means a message breaks a limit the broker would enforce (topic
	// name, body size, properties); nothing was sent.
	ErrIllegalMessage = errors.New("client: illegal message")
)

// BrokerError is a broker's (or name server's) refusal: its response code and remark.
type BrokerError struct {
	// Addr is the server that answered.
	Addr string
	// Code is the response code.
	Code protocol.ResponseCode
	// Remark is the server's explanation.
	Remark string
}

// Error implements error.
func (e *BrokerError) Error() string {
	return fmt.Sprintf("client: %s answered %s (%d): %s", e.Addr, e.Code, int16(e.Code), e.Remark)
}

// Unwrap makes errors.Is(err, ErrBroker) hold.
func (e *BrokerError) Unwrap() error { return ErrBroker }

// Is makes errors.Is(err, ErrNoPermission) hold for a NO_PERMISSION answer.
func (e *BrokerError) Is(target error) bool {
	return target == ErrNoPermission && e.Code == protocol.NoPermission
}

// Retriable reports whether another broker (or a later attempt) may succeed where this
// one failed, as RocketMQ's producers decide.
func (e *BrokerError) Retriable() bool {
	switch e.Code {
	case protocol.SystemError, protocol.SystemBusy, protocol.ServiceNotAvailable,
		protocol.TopicNotExist, protocol.FlushDiskTimeout, protocol.FlushSlaveTimeout,
		protocol.SlaveNotAvailable:
		return true
	}
	return false
}
