package client

import (
	"context"
	"errors"
	"fmt"

	"github.com/ferrymq/ferry/protocol"
)

// Errors of Admin.CancelScheduled.
var (
	// ErrAlreadyDelivered means the scheduled message was delivered to its topic before
	// the cancellation (the broker's FERRY_SCHEDULED_ALREADY_DELIVERED).
	ErrAlreadyDelivered = errors.New("client: scheduled message already delivered")
	// ErrScheduledNotFound means no broker holds a scheduled message with that id.
	ErrScheduledNotFound = errors.New("client: no scheduled message with that id")
)

// CancelResult is the outcome of a successful Admin.CancelScheduled.
type CancelResult struct {
	// Broker is the broker group that held the message; Topic its real topic.
	Broker, Topic string
	// AlreadyCancelled reports that an earlier request had cancelled it.
	AlreadyCancelled bool
}

// CancelScheduled cancels the delayed (delay level) or timer message with id, the msgId
// a send returned (its UNIQ_KEY), so that it is never delivered. topic, the message's
// topic, may be empty: the request then goes to the master of every broker group of the
// cluster rather than to the topic's. A message delivered already is ErrAlreadyDelivered
// (also when topic is set, no parked copy is left and the topic holds the id); one no
// broker knows is ErrScheduledNotFound. The cancellation is a record in the broker's
// commit log, so it survives restarts and a slave's promotion (FERRY_CANCEL_SCHEDULED,
// docs/delivery.md).
func (a *Admin) CancelScheduled(ctx context.Context, topic, id string) (*CancelResult, error) {
	if id == "" {
		return nil, fmt.Errorf("client: cancel scheduled: %w: empty message id", ErrBroker)
	}
	var targets []brokerRef
	if topic != "" {
		r, err := a.TopicRoute(ctx, topic)
		if err != nil {
			return nil, fmt.Errorf("client: cancel scheduled: %w", err)
		}
		for _, b := range r.Brokers {
			if addr := b.MasterAddr(); addr != "" {
				targets = append(targets, brokerRef{name: b.Name, addr: addr})
			}
		}
	} else {
		ci, err := a.ClusterInfo(ctx)
		if err != nil {
			return nil, fmt.Errorf("client: cancel scheduled: %w", err)
		}
		targets = ci.masters("")
	}
	var delivered error
	var errs []error
	for _, b := range targets {
		resp, err := a.c.invoke(ctx, b.addr, protocol.NewRequest(protocol.FerryCancelScheduled,
			&protocol.CancelScheduledRequestHeader{Topic: topic, MsgID: id}))
		var be *BrokerError
		switch {
		case err == nil:
			var rh protocol.CancelScheduledResponseHeader
			if err := rh.DecodeExt(resp.ExtFields); err != nil {
				return nil, fmt.Errorf("client: cancel scheduled: answer from %s: %w", b.addr, err)
			}
			return &CancelResult{Broker: b.name, Topic: rh.Topic,
				AlreadyCancelled: rh.Status == protocol.CancelStatusAlreadyCancelled}, nil
		case errors.As(err, &be) && be.Code == protocol.FerryScheduledAlreadyDelivered:
			delivered = fmt.Errorf("%w: %s: %s", ErrAlreadyDelivered, b.name, be.Remark)
		case errors.As(err, &be) && be.Code == protocol.QueryNotFound:
		default:
			errs = append(errs, fmt.Errorf("client: cancel scheduled on %s: %w", b.name, err))
		}
	}
	switch {
	case delivered != nil:
		return nil, delivered
	case len(errs) > 0:
		return nil, errors.Join(errs...)
	}
	return nil, fmt.Errorf("%w: %s", ErrScheduledNotFound, id)
}
