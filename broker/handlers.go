package broker

import (
	"context"

	"github.com/ferrymq/ferry/acl"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
)

// registerHandlers maps every served request code to its handler and worker pool.
func (b *Broker) registerHandlers() error {
	calls := b.newClientCalls()
	reply := &replier{send: b.send, clients: b.clients, conns: b.conns, store: b.opts.StoreReplyMessageEnable,
		timeout: replyPushTimeout, log: b.log}
	var gate *acl.Gate
	if b.opts.ACL != nil {
		gate = acl.NewGate(b.opts.ACL, b.log)
	}
	// reuse marks the handlers that keep nothing of their request (they copy what they
	// store: topic and group names into the tables, properties into the log), so the
	// server recycles the request's frame once it has answered.
	routes := []struct {
		code  protocol.RequestCode
		pool  string
		h     remoting.HandlerFunc
		reuse bool
	}{
		{protocol.SendMessage, poolSend, b.send.handleSend, true},
		{protocol.SendMessageV2, poolSend, b.send.handleSend, true},
		{protocol.SendBatchMessage, poolSend, b.send.handleSend, true},
		{protocol.ConsumerSendMsgBack, poolSend, b.send.handleSendBack, false},
		{protocol.SendReplyMessage, poolSend, reply.handleReply, false},
		{protocol.SendReplyMessageV2, poolSend, reply.handleReply, false},
		{protocol.PullMessage, poolPull, b.pull.handlePull, false},
		{protocol.LitePullMessage, poolPull, b.pull.handlePull, false},
		{protocol.HeartBeat, remoting.DefaultPool, b.client.handleHeartbeat, false},
		{protocol.CheckClientConfig, remoting.DefaultPool, b.client.handleCheckClientConfig, false},
		{protocol.UnregisterClient, remoting.DefaultPool, b.client.handleUnregisterClient, false},
		{protocol.GetConsumerListByGroup, remoting.DefaultPool, b.client.handleConsumerList, false},
		{protocol.QueryConsumerOffset, remoting.DefaultPool, b.offsetH.handleQueryConsumerOffset, false},
		{protocol.UpdateConsumerOffset, remoting.DefaultPool, b.offsetH.handleUpdateConsumerOffset, false},
		{protocol.GetMaxOffset, remoting.DefaultPool, b.offsetH.handleGetMaxOffset, false},
		{protocol.GetMinOffset, remoting.DefaultPool, b.offsetH.handleGetMinOffset, false},
		{protocol.GetEarliestMsgStoretime, remoting.DefaultPool, b.offsetH.handleEarliestStoreTime, false},
		{protocol.SearchOffsetByTimestamp, remoting.DefaultPool, b.offsetH.handleSearchOffset, false},
		{protocol.QueryMessage, poolQuery, b.query.handleQueryMessage, false},
		{protocol.ViewMessageByID, poolQuery, b.query.handleViewMessage, false},
		{protocol.UpdateAndCreateTopic, poolAdmin, b.admin.handleCreateTopic, false},
		{protocol.DeleteTopicInBroker, poolAdmin, b.admin.handleDeleteTopic, false},
		{protocol.GetAllSubscriptionGroupConfig, poolAdmin, b.admin.handleAllSubscriptionGroups, false},
		{protocol.GetAllTopicConfig, poolAdmin, b.meta.handleAllTopicConfig, false},
		{protocol.GetAllConsumerOffset, poolAdmin, b.meta.handleAllConsumerOffset, false},
		{protocol.GetAllDelayOffset, poolAdmin, b.meta.handleAllDelayOffset, false},
		{protocol.LockBatchMQ, remoting.DefaultPool, b.lock.handleLockBatch, false},
		{protocol.UnlockBatchMQ, remoting.DefaultPool, b.lock.handleUnlockBatch, false},
		{protocol.EndTransaction, poolTx, b.txh.handleEndTransaction, false},
		{protocol.GetTopicStatsInfo, poolAdmin, b.stats.handleTopicStats, false},
		{protocol.GetConsumeStats, poolAdmin, b.stats.handleConsumeStats, false},
		{protocol.GetConsumerConnectionList, poolAdmin, b.stats.handleConsumerConnections, false},
		{protocol.GetProducerConnectionList, poolAdmin, b.stats.handleProducerConnections, false},
		{protocol.UpdateAndCreateSubscriptionGroup, poolAdmin, b.stats.handleUpdateSubscriptionGroup, false},
		{protocol.DeleteSubscriptionGroup, poolAdmin, b.stats.handleDeleteSubscriptionGroup, false},
		{protocol.QueryTopicConsumeByWho, poolAdmin, b.stats.handleConsumeByWho, false},
		{protocol.GetBrokerConfig, poolAdmin, b.stats.handleBrokerConfig, false},
		{protocol.GetBrokerRuntimeInfo, poolAdmin, b.stats.handleRuntimeInfo, false},
		{protocol.InvokeBrokerToResetOffset, poolAdmin, calls.handleResetOffset, false},
		{protocol.ConsumeMessageDirectly, poolAdmin, calls.handleConsumeDirectly, false},
		{protocol.GetConsumerRunningInfo, poolAdmin, calls.handleRunningInfo, false},
	}
	for _, r := range routes {
		if b.opts.Role == RoleSlave {
			r.h = b.slaveRefusal(r.code, r.h)
		}
		if gate != nil {
			if r.code == protocol.PullMessage || r.code == protocol.LitePullMessage || r.code == protocol.QueryMessage {
				r.h = retryCopiesFiltered(r.h)
			}
			r.h = gate.Wrap(r.code, r.h)
		}
		handle := b.server.Handle
		if r.reuse {
			handle = b.server.HandleReusingFrames
		}
		if err := handle(int16(r.code), r.pool, r.h); err != nil {
			return err
		}
	}
	return nil
}

// slaveRefusal returns the handler a slave serves code with: writes are refused as
// RocketMQ refuses them on a slave (sends and send-backs SERVICE_NOT_AVAILABLE, spec
// storage-and-broker.md §2.1; END_TRANSACTION SLAVE_NOT_AVAILABLE, §8.3), everything
// else is h.
func (b *Broker) slaveRefusal(code protocol.RequestCode, h remoting.HandlerFunc) remoting.HandlerFunc {
	var rc protocol.ResponseCode
	switch code {
	case protocol.SendMessage, protocol.SendMessageV2, protocol.SendBatchMessage, protocol.ConsumerSendMsgBack,
		protocol.SendReplyMessage, protocol.SendReplyMessageV2:
		rc = protocol.ServiceNotAvailable
	case protocol.EndTransaction:
		rc = protocol.SlaveNotAvailable
	default:
		return h
	}
	remark := "service not available now: broker " + b.opts.BrokerName + " at " + b.opts.AdvertisedAddr +
		" is a SLAVE and serves reads only; messages are put to its master"
	return func(context.Context, remoting.Channel, *remoting.Command) (*remoting.Command, error) {
		return nil, fail(rc, "%s", remark)
	}
}
