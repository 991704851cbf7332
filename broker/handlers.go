package broker

import (
	"context"

	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
	"github.com/ferrymq/ferry/store"
)

// registerHandlers maps every served request code to its handler and worker pool.
func (b *Broker) registerHandlers() error {
	// reuse marks the handlers that keep nothing of their request (they copy what they
	// store: topic and group names into the tables, properties into the log), so the
	// server recycles the request's frame once it has answered. write marks the writes: a
	// slave refuses them with that code (see slaveRefusal); served (0): a slave serves it too.
	//
	// Inline routes (remoting.RouteOptions.Inline) run on the goroutine that reads the
	// connection instead of a worker of their pool, which spares a small send a goroutine
	// hand-off and lets the answers to one read leave in one write; such a handler must
	// never wait. So:
	//   - the send family (SEND_MESSAGE, SEND_MESSAGE_V2, SEND_BATCH_MESSAGE) runs inline
	//     when a send cannot wait (sendsInline): the commit log flushes in the background
	//     and replication never holds the answer. Otherwise (SYNC_FLUSH, SYNC_MASTER, a
	//     controller-mode master with AllAckInSyncStateSet) it stays on poolSend. What an
	//     inline send may still do on the reader is bounded work: the append under the
	//     log's lock (rolling to a new segment included), a half message's bookkeeping, and
	//     once per new topic the topic table's file write.
	//   - a slave's refusals (slaveRefusal) run inline: they only answer.
	//   - everything else runs on its pool.
	routes := []struct {
		code  protocol.RequestCode
		pool  string
		h     remoting.HandlerFunc
		reuse bool
		write protocol.ResponseCode
	}{
		{protocol.SendMessage, poolSend, b.send.handleSend, true, refuseSend},
		{protocol.SendMessageV2, poolSend, b.send.handleSend, true, refuseSend},
		{protocol.SendBatchMessage, poolSend, b.send.handleSend, true, refuseSend},
		{protocol.ConsumerSendMsgBack, poolSend, b.send.handleSendBack, false, refuseSend},
		{protocol.SendReplyMessage, poolSend, b.reply.handleReply, false, refuseSend},
		{protocol.SendReplyMessageV2, poolSend, b.reply.handleReply, false, refuseSend},
		{protocol.PullMessage, poolPull, b.pull.handlePull, false, served},
		{protocol.LitePullMessage, poolPull, b.pull.handlePull, false, served},
		{protocol.HeartBeat, remoting.DefaultPool, b.client.handleHeartbeat, false, served},
		{protocol.CheckClientConfig, remoting.DefaultPool, b.client.handleCheckClientConfig, false, served},
		{protocol.UnregisterClient, remoting.DefaultPool, b.client.handleUnregisterClient, false, served},
		{protocol.GetConsumerListByGroup, remoting.DefaultPool, b.client.handleConsumerList, false, served},
		{protocol.QueryConsumerOffset, remoting.DefaultPool, b.offsetH.handleQueryConsumerOffset, false, served},
		{protocol.UpdateConsumerOffset, remoting.DefaultPool, b.offsetH.handleUpdateConsumerOffset, false, served},
		{protocol.GetMaxOffset, remoting.DefaultPool, b.offsetH.handleGetMaxOffset, false, served},
		{protocol.GetMinOffset, remoting.DefaultPool, b.offsetH.handleGetMinOffset, false, served},
		{protocol.GetEarliestMsgStoretime, remoting.DefaultPool, b.offsetH.handleEarliestStoreTime, false, served},
		{protocol.SearchOffsetByTimestamp, remoting.DefaultPool, b.offsetH.handleSearchOffset, false, served},
		{protocol.QueryMessage, poolQuery, b.query.handleQueryMessage, false, served},
		{protocol.ViewMessageByID, poolQuery, b.query.handleViewMessage, false, served},
		{protocol.UpdateAndCreateTopic, poolAdmin, b.admin.handleCreateTopic, false, served},
		{protocol.DeleteTopicInBroker, poolAdmin, b.admin.handleDeleteTopic, false, served},
		{protocol.UpdateAndCreateSubscriptionGroup, poolAdmin, b.admin.handleUpdateSubscriptionGroup, false, served},
		{protocol.GetAllSubscriptionGroupConfig, poolAdmin, b.admin.handleAllSubscriptionGroups, false, served},
		{protocol.DeleteSubscriptionGroup, poolAdmin, b.admin.handleDeleteSubscriptionGroup, false, served},
		{protocol.GetAllTopicConfig, poolAdmin, b.meta.handleAllTopicConfig, false, served},
		{protocol.GetAllConsumerOffset, poolAdmin, b.meta.handleAllConsumerOffset, false, served},
		{protocol.GetAllDelayOffset, poolAdmin, b.meta.handleAllDelayOffset, false, served},
		{protocol.LockBatchMQ, remoting.DefaultPool, b.lock.handleLockBatch, false, served},
		{protocol.UnlockBatchMQ, remoting.DefaultPool, b.lock.handleUnlockBatch, false, served},
		{protocol.EndTransaction, poolTx, b.txh.handleEndTransaction, false, refuseTx},
		{protocol.GetTopicStatsInfo, poolAdmin, b.stats.handleTopicStats, false, served},
		{protocol.GetConsumeStats, poolAdmin, b.stats.handleConsumeStats, false, served},
		{protocol.GetConsumerConnectionList, poolAdmin, b.stats.handleConsumerConnections, false, served},
		{protocol.GetProducerConnectionList, poolAdmin, b.stats.handleProducerConnections, false, served},
		{protocol.QueryTopicConsumeByWho, poolAdmin, b.stats.handleConsumeByWho, false, served},
		{protocol.GetBrokerConfig, poolAdmin, b.stats.handleBrokerConfig, false, served},
		{protocol.GetBrokerRuntimeInfo, poolAdmin, b.stats.handleRuntimeInfo, false, served},
		{protocol.ViewBrokerStatsData, poolAdmin, b.stats.handleViewStats, false, served},
		{protocol.InvokeBrokerToResetOffset, poolAdmin, b.calls.handleResetOffset, false, served},
		{protocol.ConsumeMessageDirectly, poolAdmin, b.calls.handleConsumeDirectly, false, served},
		{protocol.GetConsumerRunningInfo, poolAdmin, b.calls.handleRunningInfo, false, served},
		{protocol.GetBrokerEpochCache, poolAdmin, b.epochs.handleEpochCache, false, served},
		{protocol.FerryCancelScheduled, poolAdmin, b.cancels.handleCancel, false, refuseSend},
	}
	sendsInline := b.sendsInline()
	for _, r := range routes {
		inline := sendsInline && isSendFamily(r.code)
		if b.opts.Role == RoleSlave && r.write != served {
			r.h, inline = b.slaveRefusal(r.write), true
		}
		if b.gate != nil {
			if r.code == protocol.PullMessage || r.code == protocol.LitePullMessage || r.code == protocol.QueryMessage {
				r.h = retryCopiesFiltered(r.h)
			}
			r.h = b.gate.Wrap(r.code, r.h)
		}
		o := remoting.RouteOptions{Pool: r.pool, ReuseFrames: r.reuse, Inline: inline}
		if inline {
			o.Pool = ""
		}
		if err := b.server.HandleRoute(int16(r.code), r.h, o); err != nil {
			return err
		}
	}
	return nil
}

// isSendFamily reports the codes handleSend serves.
func isSendFamily(code protocol.RequestCode) bool {
	return code == protocol.SendMessage || code == protocol.SendMessageV2 || code == protocol.SendBatchMessage
}

// sendsInline reports whether a send never waits, so that the send family may run inline
// (see registerHandlers): the commit log flushes asynchronously (with SYNC_FLUSH a send
// waits for the group commit), and replication.afterPut returns at once — it waits on a
// SYNC_MASTER for a slave's acknowledgement (whether or not in controller mode), and on a
// controller-mode master with AllAckInSyncStateSet for every SyncStateSet member. A
// controller-mode role change builds a new Broker, so the answer holds for the routes'
// lifetime.
func (b *Broker) sendsInline() bool {
	o := &b.opts
	waitsForSet := o.ControllerMode && o.AllAckInSyncStateSet
	return o.Store.FlushMode != store.FlushSync && o.Role != RoleSyncMaster && !waitsForSet
}

// The write column of the routes: how a slave answers a request. Writes are refused as
// RocketMQ refuses them on a slave: sends, send-backs and replies SERVICE_NOT_AVAILABLE
// (spec storage-and-broker.md §2.1), END_TRANSACTION SLAVE_NOT_AVAILABLE (§8.3).
const (
	served     = protocol.Success // not a write (or one a slave accepts, as offsets and metadata): served
	refuseSend = protocol.ServiceNotAvailable
	refuseTx   = protocol.SlaveNotAvailable
)

// slaveRefusal is the handler a slave serves a write with: it answers code.
func (b *Broker) slaveRefusal(code protocol.ResponseCode) remoting.HandlerFunc {
	remark := "service not available now: broker " + b.opts.BrokerName + " at " + b.opts.AdvertisedAddr +
		" is a SLAVE and serves reads only; messages are put to its master"
	return func(context.Context, remoting.Channel, *remoting.Command) (*remoting.Command, error) {
		return nil, fail(code, "%s", remark)
	}
}
