package broker

import (
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
)

// registerHandlers maps every served request code to its handler and worker pool.
func (b *Broker) registerHandlers() error {
	calls := b.newClientCalls()
	routes := []struct {
		code protocol.RequestCode
		pool string
		h    remoting.HandlerFunc
	}{
		{protocol.SendMessage, poolSend, b.send.handleSend},
		{protocol.SendMessageV2, poolSend, b.send.handleSend},
		{protocol.SendBatchMessage, poolSend, b.send.handleSend},
		{protocol.ConsumerSendMsgBack, poolSend, b.send.handleSendBack},
		{protocol.PullMessage, poolPull, b.pull.handlePull},
		{protocol.LitePullMessage, poolPull, b.pull.handlePull},
		{protocol.HeartBeat, remoting.DefaultPool, b.client.handleHeartbeat},
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
		if err := b.server.Handle(int16(r.code), r.pool, r.h); err != nil {
			return err
		}
	}
	return nil
}
