package broker

// Transactional messages: half messages from SEND_MESSAGE (sysflag PREPARED / TRAN_MSG,
// see sender.prepare), END_TRANSACTION (37) and the check-back CHECK_TRANSACTION_STATE
// (39, broker → producer).
//
// Behaviour: a prepared message is stored as a half message by the transaction service
// (invisible to consumers) and answered like any send, with the half record's offset id,
// the requested real queue, the half-queue offset and the UNIQ_KEY as transaction id.
// END_TRANSACTION commits (the message appears in its real topic, honouring a delay) or
// rolls back; a repeated or late one changes nothing, and one for a message that does not
// exist, with wrong offsets or from another group is answered SYSTEM_ERROR with a remark.
// Checks go oneway to a live connection of the message's producer group.
//
// A multi-message half message (Ferry's extension, package transaction, multi.go) has
// each item's topic and queue checked like a send's (checkTxItems) before it is stored,
// and END_TRANSACTION with ACL on needs PUB on every item's topic. Consumer offsets it
// carries (transaction/offsets.go) must name topics and queues of this broker; with ACL on
// the sender needs SUB on their group and topics; they are applied to the offset store,
// and its file written, when the transaction commits (txOffsets).

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	"github.com/ferrymq/ferry/acl"
	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
	"github.com/ferrymq/ferry/store"
	"github.com/ferrymq/ferry/transaction"
)

// errNoProducer means no live connection of a producer group can take a check.
var errNoProducer = errors.New("broker: no live producer connection for the group")

// txHandler serves END_TRANSACTION.
type txHandler struct {
	tx TxnService
	// records reads the half message, for the ACL check (ACL on only).
	records interface {
		ReadMessage(phy int64) (message.Record, *store.View, error)
	}
}

// handleEndTransaction serves END_TRANSACTION. With ACL on the caller needs PUB on the
// half message's real topic (its REAL_TOPIC; the header's topic is not trusted), else
// any account could commit or roll back another producer's transaction.
func (t *txHandler) handleEndTransaction(ctx context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.EndTransactionRequestHeader
	if err := h.DecodeExt(req.ExtFields); err != nil {
		return nil, fail(protocol.SystemError, "decode header: %v", err)
	}
	if g := acl.GrantFrom(ctx); !g.Unrestricted() {
		rec, view, err := t.records.ReadMessage(h.CommitLogOffset)
		if err != nil {
			return respond(req, protocol.SystemError, "Find prepared transaction message failed"), nil
		}
		err = checkRecordTopics(g, &rec, acl.PermPub)
		items, _, ierr := transaction.Items(&rec)
		group, updates, _, oerr := transaction.Offsets(&rec)
		if err == nil && ierr == nil && oerr == nil {
			err = checkTxResources(g.CheckRecordTopic, g.CheckGroup, items, group, updates)
		}
		view.Release()
		if err != nil {
			return nil, err
		}
	}
	res, err := t.tx.End(transaction.EndRequest{
		ProducerGroup:        h.ProducerGroup,
		TranStateTableOffset: h.TranStateTableOffset,
		CommitLogOffset:      h.CommitLogOffset,
		CommitOrRollback:     h.CommitOrRollback,
		FromTransactionCheck: h.FromTransactionCheck,
		MsgID:                h.MsgID,
		TransactionID:        h.TransactionID,
	})
	if err != nil {
		return nil, storeError(err)
	}
	switch res {
	case transaction.EndNotFound:
		return respond(req, protocol.SystemError, "Find prepared transaction message failed"), nil
	case transaction.EndIllegalOffsets, transaction.EndWrongGroup:
		return respond(req, protocol.SystemError, "transaction "+res.String()), nil
	case transaction.EndOffsetConflict:
		return respond(req, protocol.FerryTransactionOffsetConflict,
			"a conditional consumer offset of the transaction moved; it was rolled back"), nil
	}
	return respond(req, protocol.Success, res.String()), nil
}

// txChecker sends CHECK_TRANSACTION_STATE for the transaction service.
type txChecker struct {
	clients    ClientRegistry
	conns      *conns
	brokerName string
}

// Check implements transaction.Checker: oneway, to a live connection of the group, or else
// to the connection the group's last half message came on.
func (c *txChecker) Check(ctx context.Context, group string, req transaction.CheckRequest) error {
	ids := c.clients.ProducerChannels(group)
	if id, ok := c.conns.txConn(group); ok {
		ids = append(ids, id)
	}
	h := protocol.CheckTransactionStateRequestHeader{
		TranStateTableOffset: req.TranStateTableOffset,
		CommitLogOffset:      req.CommitLogOffset,
		MsgID:                req.MsgID,
		TransactionID:        req.TransactionID,
		OffsetMsgID:          req.OffsetMsgID,
		Topic:                req.Topic,
		BrokerName:           c.brokerName,
	}
	for _, id := range ids {
		ch, ok := c.conns.get(id)
		if !ok {
			continue
		}
		cmd := protocol.NewRequest(protocol.CheckTransactionState, &h)
		cmd.Body = req.Body
		if err := ch.InvokeOneway(ctx, cmd); err == nil {
			return nil
		}
	}
	return fmt.Errorf("%w %q", errNoProducer, group)
}

// checkTxItems checks the items of a multi-message half message (transaction.Items, a
// Ferry extension): each item's topic must be one this broker takes sends for (sendTopic:
// it exists or may be auto-created, and is writable), its queue must exist, and with ACL
// on the caller must have PUB on it — the gate checked only the header's topic (item
// 0's). The consumer offsets it may carry must name existing topics and queues of this
// broker, and with ACL on the caller needs SUB on their group and topics. Anything else is
// refused before the half message is stored. An ordinary half message passes untouched.
func (s *sender) checkTxItems(ch remoting.Channel, req *remoting.Command, rec *message.Record) error {
	items, multi, err := transaction.Items(rec)
	if !multi {
		return nil
	}
	if err != nil {
		return fail(protocol.MessageIllegal, "%v", err)
	}
	for i := range items {
		it := &items[i]
		h := protocol.SendMessageRequestHeader{Topic: it.Topic, QueueID: it.QueueID,
			DefaultTopic: protocol.AutoCreateTopicKey, DefaultTopicQueueNums: defaultTopicQueueNums}
		cfg, err := s.sendTopic(&h)
		if err != nil {
			return err
		}
		if it.QueueID >= max(cfg.ReadQueueNums, cfg.WriteQueueNums) {
			return fail(protocol.InvalidParameter, "transaction item %d: queueId %d out of range for topic %s (%d queues)",
				i, it.QueueID, it.Topic, cfg.WriteQueueNums)
		}
	}
	group, updates, _, err := transaction.Offsets(rec)
	if err != nil {
		return fail(protocol.MessageIllegal, "%v", err)
	}
	for _, u := range updates {
		cfg, ok := s.topics.Get(u.Topic)
		if !ok {
			return fail(protocol.TopicNotExist, "transaction offset: topic %s does not exist on this broker", u.Topic)
		}
		if u.QueueID >= max(cfg.ReadQueueNums, cfg.WriteQueueNums) {
			return fail(protocol.InvalidParameter, "transaction offset: queueId %d out of range for topic %s", u.QueueID, u.Topic)
		}
	}
	if s.acl == nil {
		return nil
	}
	r := acl.Request{Code: req.Code, Version: req.Version, Fields: req.ExtFields, Body: req.Body}
	if ap, err := netip.ParseAddrPort(ch.RemoteAddr()); err == nil {
		r.Addr = ap.Addr()
	}
	caller, err := s.acl.Authorize(r)
	if err == nil {
		err = checkTxResources(caller.CheckTopic, caller.CheckGroup, items, group, updates)
	}
	if err != nil {
		return &remoting.CodeError{Code: int16(protocol.NoPermission), Remark: err.Error()}
	}
	return nil
}

// checkTxResources checks what a multi-message transaction touches: PUB on every item's
// topic and, for the offsets it carries, SUB on their group and topics.
func checkTxResources(topic func(string, acl.Perm) error, grp func(string, acl.Perm) error,
	items []transaction.Item, group string, updates []transaction.OffsetUpdate) error {
	for i := range items {
		if err := topic(items[i].Topic, acl.PermPub); err != nil {
			return err
		}
	}
	if group == "" {
		return nil
	}
	if err := grp(group, acl.PermSub); err != nil {
		return err
	}
	for _, u := range updates {
		if err := topic(u.Topic, acl.PermSub); err != nil {
			return err
		}
	}
	return nil
}

// txOffsets applies the consumer offsets of committed transactions to the broker's
// offset store and writes its file before returning (transaction.OffsetCommitter).
type txOffsets struct{ b *Broker }

// CommitOffsets implements transaction.OffsetCommitter.
func (o txOffsets) CommitOffsets(group string, updates []transaction.OffsetUpdate, forwardOnly bool) error {
	st := o.b.offsets
	if st == nil {
		return errors.New("broker: the offset store is not open")
	}
	for _, u := range updates {
		if cur, ok := st.Query(group, u.Topic, u.QueueID); forwardOnly && ok && cur >= u.Offset {
			continue
		}
		st.Commit(group, u.Topic, u.QueueID, u.Offset)
	}
	return st.Flush()
}

// Offset implements transaction.OffsetCommitter.
func (o txOffsets) Offset(group, topic string, queueID int32) (int64, bool) {
	if o.b.offsets == nil {
		return 0, false
	}
	return o.b.offsets.Query(group, topic, queueID)
}

// defaultTopicQueueNums is the queue count a transaction item's topic is auto-created
// with (when the broker allows it), as the clients ask for a topic sent to first.
const defaultTopicQueueNums = 4
