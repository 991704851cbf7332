package broker_test

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/acl/sign"
	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
	"github.com/ferrymq/ferry/transaction"
)

// multiHalfReq builds the SEND_MESSAGE of a multi-message half message whose items go to
// dests (topic, queue); its header names item 0's topic. count overrides the item count
// property when not empty.
func multiHalfReq(t *testing.T, uniq, count string, dests ...[2]string) (*protocol.SendMessageRequestHeader, []byte) {
	return multiHalfReqProps(t, uniq, count, nil, dests...)
}

// multiHalfReqProps is multiHalfReq with extra properties on the half message.
func multiHalfReqProps(t *testing.T, uniq, count string, extra map[string]string, dests ...[2]string) (*protocol.SendMessageRequestHeader, []byte) {
	t.Helper()
	var body []byte
	for i, d := range dests {
		props, err := message.EncodeProperties(map[string]string{
			message.PropertyRealTopic: d[0], message.PropertyRealQueueID: d[1],
			message.PropertyUniqKey: uniq + "-" + strconv.Itoa(i),
		})
		require.NoError(t, err)
		body, err = protocol.AppendBatchItem(body, protocol.BatchItem{Body: []byte("item"), Properties: props})
		require.NoError(t, err)
	}
	if count == "" {
		count = strconv.Itoa(len(dests))
	}
	props := map[string]string{message.PropertyTransactionPrepared: "true",
		message.PropertyProducerGroup: secretPGroup, message.PropertyUniqKey: uniq,
		transaction.PropertyMultiItems: count}
	for k, v := range extra {
		props[k] = v
	}
	return sendHeader(dests[0][0], props, message.TransactionPreparedType), body
}

// TestMultiHalfItemsChecked: with ACL on, a multi-message half message is refused unless
// the sender may PUB every item's topic (the gate sees only item 0's), every item's queue
// exists and the item count is right; END_TRANSACTION of one needs PUB on every item's
// topic too.
func TestMultiHalfItemsChecked(t *testing.T) {
	e := startProbeEnv(t)
	send := func(h *protocol.SendMessageRequestHeader, body []byte) *remoting.Command {
		return e.call(t, e.atk, probeUser, e.c.BrokerAddr, newReq(protocol.SendMessage, h, body))
	}

	h, body := multiHalfReq(t, "M1", "", [2]string{openTopic, "0"}, [2]string{openTopic, "0"})
	resp := send(h, body)
	require.Equal(t, int16(protocol.Success), resp.Code, resp.Remark)

	h, body = multiHalfReq(t, "M2", "", [2]string{openTopic, "0"}, [2]string{secretTopic, "0"})
	resp = send(h, body)
	require.Equal(t, int16(protocol.NoPermission), resp.Code, "an item to a topic the account may not PUB: %s", resp.Remark)

	h, body = multiHalfReq(t, "M3", "", [2]string{openTopic, "0"}, [2]string{openTopic, "5"})
	resp = send(h, body)
	require.Equal(t, int16(protocol.InvalidParameter), resp.Code, "an item to a queue that does not exist: %s", resp.Remark)

	h, body = multiHalfReq(t, "M4", "3", [2]string{openTopic, "0"}, [2]string{openTopic, "0"})
	resp = send(h, body)
	require.Equal(t, int16(protocol.MessageIllegal), resp.Code, "a wrong item count: %s", resp.Remark)

	// The admin prepares one with an item in the denied topic; the user may not end it,
	// though it may PUB item 0's topic (the half message's REAL_TOPIC).
	h, body = multiHalfReq(t, "M5", "", [2]string{openTopic, "0"}, [2]string{secretTopic, "0"})
	resp = e.adminOK(t, newReq(protocol.SendMessage, h, body))
	var sh protocol.SendMessageResponseHeader
	require.NoError(t, sh.DecodeExt(resp.ExtFields))
	_, phy, err := message.DecodeOffsetMsgID(sh.MsgID)
	require.NoError(t, err)
	end := &protocol.EndTransactionRequestHeader{ProducerGroup: secretPGroup, TranStateTableOffset: sh.QueueOffset,
		CommitLogOffset: phy, CommitOrRollback: protocol.TransactionRollback, MsgID: "M5", TransactionID: "M5"}
	resp = e.call(t, e.atk, probeUser, e.c.BrokerAddr, newReq(protocol.EndTransaction, end, nil))
	require.Equal(t, int16(protocol.NoPermission), resp.Code, resp.Remark)
	e.adminOK(t, newReq(protocol.EndTransaction, end, nil))
}

// TestMultiHalfOffsetsApplied: consumer offsets carried by a multi-message transaction are
// refused when the sender may not SUB their group or the topic is not on the broker, and
// are applied when the transaction commits — not when it rolls back.
func TestMultiHalfOffsetsApplied(t *testing.T) {
	e := startProbeEnv(t)
	withOffsets := func(group, offsets string) map[string]string {
		return map[string]string{transaction.PropertyOffsetGroup: group, transaction.PropertyOffsets: offsets}
	}
	send := func(creds sign.Credentials, cli *remoting.Client, uniq string, extra map[string]string) *remoting.Command {
		h, body := multiHalfReqProps(t, uniq, "", extra, [2]string{openTopic, "0"})
		return e.call(t, cli, creds, e.c.BrokerAddr, newReq(protocol.SendMessage, h, body))
	}
	resp := send(probeUser, e.atk, "O1", withOffsets(secretGroup, "0,5,"+openTopic))
	require.Equal(t, int16(protocol.NoPermission), resp.Code, "offsets of a group the account may not SUB: %s", resp.Remark)
	resp = send(probeAdmin, e.admin, "O2", withOffsets(sharedGroup, "0,5,NoSuchTopic"))
	require.Equal(t, int16(protocol.TopicNotExist), resp.Code, resp.Remark)
	resp = send(probeAdmin, e.admin, "O3", withOffsets(sharedGroup, "0,5,"+openTopic+";7,5,"+openTopic))
	require.Equal(t, int16(protocol.InvalidParameter), resp.Code, resp.Remark)

	query := func() int64 {
		no := false
		resp := e.adminOK(t, newReq(protocol.QueryConsumerOffset, &protocol.QueryConsumerOffsetRequestHeader{
			ConsumerGroup: "cgTxOffsets", Topic: openTopic, QueueID: 0, SetZeroIfNotFound: &no}, nil))
		var oh protocol.OffsetResponseHeader
		require.NoError(t, oh.DecodeExt(resp.ExtFields))
		return oh.Offset
	}
	end := func(resp *remoting.Command, uniq string, how int32) {
		var sh protocol.SendMessageResponseHeader
		require.NoError(t, sh.DecodeExt(resp.ExtFields))
		_, phy, err := message.DecodeOffsetMsgID(sh.MsgID)
		require.NoError(t, err)
		e.adminOK(t, newReq(protocol.EndTransaction, &protocol.EndTransactionRequestHeader{ProducerGroup: secretPGroup,
			TranStateTableOffset: sh.QueueOffset, CommitLogOffset: phy, CommitOrRollback: how, MsgID: uniq,
			TransactionID: uniq}, nil))
	}
	committed := send(probeAdmin, e.admin, "O4", withOffsets("cgTxOffsets", "0,3,"+openTopic))
	require.Equal(t, int16(protocol.Success), committed.Code, committed.Remark)
	rolled := send(probeAdmin, e.admin, "O5", withOffsets("cgTxOffsets", "0,9,"+openTopic))
	require.Equal(t, int16(protocol.Success), rolled.Code, rolled.Remark)
	end(rolled, "O5", protocol.TransactionRollback)
	end(committed, "O4", protocol.TransactionCommit)
	require.Equal(t, int64(3), query(), "the committed transaction's offset, not the rolled-back one's")
}
