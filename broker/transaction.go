package broker

// Transactional messages: half messages from SEND_MESSAGE (sysflag PREPARED / TRAN_MSG),
// END_TRANSACTION (37) and the check-back CHECK_TRANSACTION_STATE (39, broker → producer).
//
// Behaviour: a prepared message is stored as a half message by the transaction service
// (invisible to consumers) and answered like any send, with the half record's offset id,
// the requested real queue, the half-queue offset and the UNIQ_KEY as transaction id.
// END_TRANSACTION commits (the message appears in its real topic, honouring a delay) or
// rolls back; a repeated or late one changes nothing, and one for a message that does not
// exist, with wrong offsets or from another group is answered SYSTEM_ERROR with a remark.
// Checks go oneway to a live connection of the message's producer group.

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
	"github.com/ferrymq/ferry/transaction"
)

// errNoProducer means no live connection of a producer group can take a check.
var errNoProducer = errors.New("broker: no live producer connection for the group")

// prepare stores a half message and builds the send response. The connection it came on
// is remembered per producer group as the fallback target of checks (a Go producer that
// sends before its first heartbeat is otherwise invisible for up to 30 s).
func (b *Broker) prepare(ch remoting.Channel, req *remoting.Command, rec *message.Record, group string, wait bool) (*remoting.Command, error) {
	b.chans.Store(ch.ID(), ch)
	b.txConns.Store(group, ch.ID())
	res, err := b.tx.Prepare(rec, wait)
	if err != nil {
		if errors.Is(err, transaction.ErrNoProducerGroup) {
			return nil, fail(protocol.MessageIllegal, "%v", err)
		}
		return nil, storeError(err)
	}
	resp := respond(req, sendCode(res.Append), "")
	rh := protocol.SendMessageResponseHeader{
		MsgID:         message.OffsetMsgID(b.storeHost, res.Append.PhysicalOffset),
		QueueID:       res.QueueID,
		QueueOffset:   res.Append.QueueOffset,
		TransactionID: res.TransactionID,
		MsgRegion:     "DefaultRegion",
		TraceOn:       true,
	}
	resp.ExtFields = protocol.NewExt(&rh)
	return resp, nil
}

// isPrepared reports whether a send is the first phase of a transaction.
func isPrepared(h *protocol.SendMessageRequestHeader, props []byte) bool {
	if message.TransactionType(h.SysFlag) == message.TransactionPreparedType {
		return true
	}
	v, ok := message.LookupProperty(props, message.PropertyTransactionPrepared)
	return ok && string(v) == "true"
}

// handleEndTransaction serves END_TRANSACTION.
func (b *Broker) handleEndTransaction(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	tso, err1 := strconv.ParseInt(req.Ext("tranStateTableOffset"), 10, 64)
	clo, err2 := strconv.ParseInt(req.Ext("commitLogOffset"), 10, 64)
	cor, err3 := strconv.ParseInt(req.Ext("commitOrRollback"), 10, 32)
	if err1 != nil || err2 != nil || err3 != nil || req.Ext("producerGroup") == "" {
		return nil, fail(protocol.SystemError, "producerGroup, tranStateTableOffset, commitLogOffset and commitOrRollback are required")
	}
	res, err := b.tx.End(transaction.EndRequest{
		ProducerGroup:        req.Ext("producerGroup"),
		TranStateTableOffset: tso,
		CommitLogOffset:      clo,
		CommitOrRollback:     int32(cor),
		FromTransactionCheck: req.Ext("fromTransactionCheck") == "true",
		MsgID:                req.Ext("msgId"),
		TransactionID:        req.Ext("transactionId"),
	})
	if err != nil {
		return nil, storeError(err)
	}
	switch res {
	case transaction.EndNotFound:
		return respond(req, protocol.SystemError, "Find prepared transaction message failed"), nil
	case transaction.EndIllegalOffsets, transaction.EndWrongGroup:
		return respond(req, protocol.SystemError, "transaction "+res.String()), nil
	}
	return respond(req, protocol.Success, res.String()), nil
}

// txChecker sends CHECK_TRANSACTION_STATE for the transaction service.
type txChecker struct{ b *Broker }

// Check implements transaction.Checker: oneway, to a live connection of the group, or else
// to the connection the group's last half message came on.
func (c txChecker) Check(ctx context.Context, group string, req transaction.CheckRequest) error {
	b := c.b
	ids := b.clients.ProducerChannels(group)
	if v, ok := b.txConns.Load(group); ok {
		ids = append(ids, v.(uint64))
	}
	for _, id := range ids {
		v, ok := b.chans.Load(id)
		if !ok {
			continue
		}
		cmd := remoting.NewRequest(int16(protocol.CheckTransactionState), map[string]string{
			"tranStateTableOffset": itoa(req.TranStateTableOffset),
			"commitLogOffset":      itoa(req.CommitLogOffset),
			"msgId":                req.MsgID,
			"transactionId":        req.TransactionID,
			"offsetMsgId":          req.OffsetMsgID,
			"topic":                req.Topic,
			"bname":                b.cfg.BrokerName,
		})
		cmd.Body = req.Body
		if err := v.(remoting.Channel).InvokeOneway(ctx, cmd); err == nil {
			return nil
		}
	}
	return fmt.Errorf("%w %q", errNoProducer, group)
}
