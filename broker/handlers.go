package broker

import (
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
)

// registerHandlers maps every served request code to its handler and worker pool.
func (b *Broker) registerHandlers() error {
	routes := []struct {
		code protocol.RequestCode
		pool string
		h    remoting.HandlerFunc
	}{
		{protocol.SendMessage, poolSend, b.handleSend},
		{protocol.SendMessageV2, poolSend, b.handleSend},
		{protocol.SendBatchMessage, poolSend, b.handleSend},
		{protocol.PullMessage, poolPull, b.handlePull},
		{protocol.LitePullMessage, poolPull, b.handlePull},
		{protocol.HeartBeat, remoting.DefaultPool, b.handleHeartbeat},
		{protocol.UnregisterClient, remoting.DefaultPool, b.handleUnregisterClient},
		{protocol.GetConsumerListByGroup, remoting.DefaultPool, b.handleConsumerList},
		{protocol.QueryConsumerOffset, remoting.DefaultPool, b.handleQueryConsumerOffset},
		{protocol.UpdateConsumerOffset, remoting.DefaultPool, b.handleUpdateConsumerOffset},
		{protocol.GetMaxOffset, remoting.DefaultPool, b.handleGetMaxOffset},
		{protocol.GetMinOffset, remoting.DefaultPool, b.handleGetMinOffset},
		{protocol.GetEarliestMsgStoretime, remoting.DefaultPool, b.handleEarliestStoreTime},
		{protocol.SearchOffsetByTimestamp, remoting.DefaultPool, b.handleSearchOffset},
		{protocol.QueryMessage, poolQuery, b.handleQueryMessage},
		{protocol.ViewMessageByID, poolQuery, b.handleViewMessage},
		{protocol.UpdateAndCreateTopic, poolAdmin, b.handleCreateTopic},
		{protocol.DeleteTopicInBroker, poolAdmin, b.handleDeleteTopic},
		{protocol.GetAllSubscriptionGroupConfig, poolAdmin, b.handleAllSubscriptionGroups},
		{protocol.ConsumerSendMsgBack, poolSend, b.handleSendBack},
		{protocol.LockBatchMQ, remoting.DefaultPool, b.handleLockBatch},
		{protocol.EndTransaction, poolTx, b.handleEndTransaction},
		{protocol.UnlockBatchMQ, remoting.DefaultPool, b.handleUnlockBatch},
	}
	for _, r := range routes {
		if err := b.server.Handle(int16(r.code), r.pool, r.h); err != nil {
			return err
		}
	}
	return nil
}
