package broker

import (
	"context"
	"fmt"

	"github.com/ferrymq/ferry/acl/sign"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
)

// epochCacheHandler serves GET_BROKER_EPOCH_CACHE (1007): the broker's epoch history
// (Options.Epochs) and its commit log's end, as a protocol.BrokerEpochCache body. A
// slave in controller mode (its failover agent) compares it with its own history to find
// where the two logs agree before it replicates. Every broker serves it, admin accounts
// only with ACL on; without an epoch history the list is empty.
type epochCacheHandler struct {
	opts *Options
	log  logEnd
}

// handleEpochCache serves GET_BROKER_EPOCH_CACHE.
func (h *epochCacheHandler) handleEpochCache(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	o := h.opts
	c := protocol.BrokerEpochCache{ClusterName: o.ClusterName, BrokerName: o.BrokerName, BrokerID: o.selfID(),
		MaxOffset: h.log.MaxOffset()}
	if o.Epochs != nil {
		entries := o.Epochs.Entries()
		for i, e := range entries {
			end := c.MaxOffset
			if i+1 < len(entries) {
				end = entries[i+1].StartOffset
			}
			c.EpochList = append(c.EpochList, protocol.EpochEntry{Epoch: e.Epoch, StartOffset: e.StartOffset, EndOffset: end})
		}
	}
	body, err := protocol.EncodeBrokerEpochCache(&c)
	if err != nil {
		return nil, fail(protocol.SystemError, "the epoch history does not match the commit log: %v", err)
	}
	resp := respond(req, protocol.Success, "")
	resp.Body = body
	return resp, nil
}

// FetchEpochCache asks the broker at addr for its epoch history (GET_BROKER_EPOCH_CACHE),
// signing the request with creds when they are set (an admin account, for a broker with
// ACL on). The failover agent of a slave calls it on its master.
func FetchEpochCache(ctx context.Context, rc *remoting.Client, addr string, creds sign.Credentials) (*protocol.BrokerEpochCache, error) {
	resp, err := rc.Invoke(ctx, addr, signed(creds, protocol.NewRequest(protocol.GetBrokerEpochCache, nil)))
	if err != nil {
		return nil, fmt.Errorf("broker: epoch cache of %s: %w", addr, err)
	}
	if resp.Code != int16(protocol.Success) {
		return nil, fmt.Errorf("broker: epoch cache of %s: code %d: %s", addr, resp.Code, resp.Remark)
	}
	c, err := protocol.DecodeBrokerEpochCache(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("broker: epoch cache of %s: %w", addr, err)
	}
	return c, nil
}
