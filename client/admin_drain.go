package client

import (
	"context"
	"errors"
	"fmt"

	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
)

// NameServerCount is one name server's answer to a drain or undrain: how many topics
// of the broker group it changed.
type NameServerCount struct {
	// NameServer is the name server's address.
	NameServer string
	// Topics is wipeTopicCount or addTopicCount: the topics hosting the broker group
	// on that name server.
	Topics int
}

// DrainBroker takes write permission away from broker group brokerName on every name
// server (WIPE_WRITE_PERM_OF_BROKER): routes then give its queues as read-only, so
// producers send to the other groups while consumers keep reading it. It returns each
// name server's count, in the order of Options.NameServers, and the errors of the
// name servers that failed (joined) alongside the counts of the others.
func (a *Admin) DrainBroker(ctx context.Context, brokerName string) ([]NameServerCount, error) {
	return a.writePerm(ctx, protocol.WipeWritePermOfBroker, brokerName)
}

// UndrainBroker gives write permission back to broker group brokerName on every name
// server (ADD_WRITE_PERM_OF_BROKER); results as DrainBroker.
func (a *Admin) UndrainBroker(ctx context.Context, brokerName string) ([]NameServerCount, error) {
	return a.writePerm(ctx, protocol.AddWritePermOfBroker, brokerName)
}

// writePerm sends a drain (205) or undrain (327) of brokerName to every name server.
func (a *Admin) writePerm(ctx context.Context, code protocol.RequestCode, brokerName string) ([]NameServerCount, error) {
	if brokerName == "" {
		return nil, fmt.Errorf("%w: empty broker name", ErrInvalidArgument)
	}
	what := "drain"
	if code == protocol.AddWritePermOfBroker {
		what = "undrain"
	}
	var (
		out  []NameServerCount
		errs []error
	)
	for _, ns := range a.c.opts.NameServers {
		resp, err := a.c.invoke(ctx, ns, protocol.NewRequest(code, &protocol.BrokerWritePermRequestHeader{BrokerName: brokerName}))
		if err == nil {
			var n int32
			n, err = writePermCount(code, resp)
			if err == nil {
				out = append(out, NameServerCount{NameServer: ns, Topics: int(n)})
				continue
			}
		}
		errs = append(errs, fmt.Errorf("client: %s %s on name server %s: %w", what, brokerName, ns, err))
	}
	return out, errors.Join(errs...)
}

// writePermCount decodes the topic count of a drain or undrain answer.
func writePermCount(code protocol.RequestCode, resp *remoting.Command) (int32, error) {
	if code == protocol.WipeWritePermOfBroker {
		var h protocol.WipeWritePermOfBrokerResponseHeader
		err := h.DecodeExt(resp.ExtFields)
		return h.WipeTopicCount, err
	}
	var h protocol.AddWritePermOfBrokerResponseHeader
	err := h.DecodeExt(resp.ExtFields)
	return h.AddTopicCount, err
}
