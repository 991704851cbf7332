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
	routes := []struct {
		code protocol.RequestCode
		pool string
		h    remoting.HandlerFunc
	}{
		{protocol.SendMessage, poolSend, b.send.handleSend},
		{protocol.SendMessageV2, poolSend, b.send.handleSend},
		{protocol.SendBatchMessage, poolSend, b.send.handleSend},
		{protocol.ConsumerSendMsgBack, poolSend, b.send.handleSendBack},
		{protocol.SendReplyMessage, poolSend, reply.handleReply},
		{protocol.SendReplyMessageV2, poolSend, reply.handleReply},
		{protocol.PullMessage, poolPull, b.pull.handlePull},
		{protocol.LitePullMessage, poolPull, b.pull.handlePull},
		{protocol.HeartBeat, remoting.DefaultPool, b.client.handleHeartbeat},
		{protocol.CheckClientConfig, remoting.DefaultPool, b.client.handleCheckClientConfig},
		{protocol.UnregisterClient, remoting.DefaultPool, b.client.handleUnregisterClient},
		{protocol.GetConsumerListByGroup, remoting.DefaultPool, b.client.handleConsumerList},
		{protocol.QueryConsumerOffset, remoting.DefaultPool, b.offsetH.handleQueryConsumerOffset},
		{protocol.UpdateConsumerOffset, remoting.DefaultPool, b.offsetH.handleUpdateConsumerOffset},
		{protocol.GetMaxOffset, remoting.DefaultPool, b.offsetH.handleGetMaxOffset},
		{protocol.GetMinOffset, remoting.DefaultPool, b.offsetH.handleGetMinOffset},
		{protocol.GetEarliestMsgStoretime, remoting.DefaultPool, b.offsetH.handleEarliestStoreTime},
		{protocol.SearchOffsetByTimestamp, remoting.DefaultPool, b.offsetH.handleSearchOffset},
		{protocol.QueryMessage, poolQuery, b.query.handleQueryMessage},
		{protocol.ViewMessageByID, poolQuery, b.query.handleViewMessage},
		{protocol.UpdateAndCreateTopic, poolAdmin, b.admin.handleCreateTopic},
		{protocol.DeleteTopicInBroker, poolAdmin, b.admin.handleDeleteTopic},
		{protocol.GetAllSubscriptionGroupConfig, poolAdmin, b.admin.handleAllSubscriptionGroups},
		{protocol.GetAllTopicConfig, poolAdmin, b.meta.handleAllTopicConfig},
		{protocol.GetAllConsumerOffset, poolAdmin, b.meta.handleAllConsumerOffset},
		{protocol.GetAllDelayOffset, poolAdmin, b.meta.handleAllDelayOffset},
		{protocol.LockBatchMQ, remoting.DefaultPool, b.lock.handleLockBatch},
		{protocol.UnlockBatchMQ, remoting.DefaultPool, b.lock.handleUnlockBatch},
		{protocol.EndTransaction, poolTx, b.txh.handleEndTransaction},
		{protocol.GetTopicStatsInfo, poolAdmin, b.stats.handleTopicStats},
		{protocol.GetConsumeStats, poolAdmin, b.stats.handleConsumeStats},
		{protocol.GetConsumerConnectionList, poolAdmin, b.stats.handleConsumerConnections},
		{protocol.GetProducerConnectionList, poolAdmin, b.stats.handleProducerConnections},
		{protocol.UpdateAndCreateSubscriptionGroup, poolAdmin, b.stats.handleUpdateSubscriptionGroup},
		{protocol.DeleteSubscriptionGroup, poolAdmin, b.stats.handleDeleteSubscriptionGroup},
		{protocol.QueryTopicConsumeByWho, poolAdmin, b.stats.handleConsumeByWho},
		{protocol.GetBrokerConfig, poolAdmin, b.stats.handleBrokerConfig},
		{protocol.GetBrokerRuntimeInfo, poolAdmin, b.stats.handleRuntimeInfo},
		{protocol.InvokeBrokerToResetOffset, poolAdmin, calls.handleResetOffset},
		{protocol.ConsumeMessageDirectly, poolAdmin, calls.handleConsumeDirectly},
		{protocol.GetConsumerRunningInfo, poolAdmin, calls.handleRunningInfo},
	}
	for _, r := range routes {
		if b.opts.Role == RoleSlave {
			r.h = b.slaveRefusal(r.code, r.h)
		}
		if gate != nil {
			r.h = gate.Wrap(r.code, r.h)
		}
		if err := b.server.Handle(int16(r.code), r.pool, r.h); err != nil {
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
