package protocol

import "github.com/ferrymq/ferry/remoting"

// Transaction headers: END_TRANSACTION (37) and CHECK_TRANSACTION_STATE (39).

// Keys of the transaction headers.
const (
	txProducerGroup        = "producerGroup"
	txTranStateTableOffset = "tranStateTableOffset"
	txCommitLogOffset      = "commitLogOffset"
	txCommitOrRollback     = "commitOrRollback"
	txFromTransactionCheck = "fromTransactionCheck"
	txMsgID                = "msgId"
	txTransactionID        = "transactionId"
	txOffsetMsgID          = "offsetMsgId"
)

// Values of [EndTransactionRequestHeader].CommitOrRollback: the transaction
// type bits of the message sysFlag (message.Transaction*Type).
const (
	// TransactionUnknown (0) leaves the half message for the next check; a
	// Java broker does not answer it.
	TransactionUnknown int32 = 0x0
	// TransactionCommit (8) commits the half message into its real topic.
	TransactionCommit int32 = 0x8
	// TransactionRollback (12) discards the half message.
	TransactionRollback int32 = 0xC
)

// EndTransactionRequestHeader is the header of END_TRANSACTION (37), sent by
// a transactional producer after its local transaction (and again after each
// CHECK_TRANSACTION_STATE). No body; the remark may carry the client's
// local-transaction error text.
//
// The broker finds the half message at CommitLogOffset, verifies that its
// producer group is ProducerGroup and its half-queue offset is
// TranStateTableOffset (SYSTEM_ERROR otherwise), then commits it into its
// real topic (TransactionCommit), discards it (TransactionRollback) or
// leaves it for the next check (TransactionUnknown). Java producers send it
// oneway; the Go client sends flag 0 and ignores the answer.
//
// Required: producerGroup, tranStateTableOffset, commitLogOffset,
// commitOrRollback and msgId.
type EndTransactionRequestHeader struct {
	ProducerGroup        string // producerGroup (required)
	TranStateTableOffset int64  // tranStateTableOffset (required): half-queue offset
	CommitLogOffset      int64  // commitLogOffset (required): commit-log offset of the half record
	CommitOrRollback     int32  // commitOrRollback (required): TransactionCommit, TransactionRollback or TransactionUnknown
	FromTransactionCheck bool   // fromTransactionCheck: true when answering a check
	MsgID                string // msgId (required): the message's UNIQ_KEY (Go) or offset id
	TransactionID        string // transactionId
	Topic                string // topic (Java 5.x)
	BrokerName           string // bname (Go sends it; empty when answering a check)
}

// EncodeExt implements Header. Like the Go client it always writes
// fromTransactionCheck.
func (h *EndTransactionRequestHeader) EncodeExt(ext *remoting.Ext) {
	setStr(ext, txProducerGroup, h.ProducerGroup)
	setInt64(ext, txTranStateTableOffset, h.TranStateTableOffset)
	setInt64(ext, txCommitLogOffset, h.CommitLogOffset)
	setInt32(ext, txCommitOrRollback, h.CommitOrRollback)
	setBool(ext, txFromTransactionCheck, h.FromTransactionCheck)
	setStr(ext, txMsgID, h.MsgID)
	putStr(ext, txTransactionID, h.TransactionID)
	putStr(ext, extTopic, h.Topic)
	putStr(ext, extBrokerName, h.BrokerName)
}

// DecodeExt implements Header.
func (h *EndTransactionRequestHeader) DecodeExt(ext remoting.Ext) error {
	r := extReader{ext: ext}
	*h = EndTransactionRequestHeader{
		ProducerGroup:        r.str(txProducerGroup, true),
		TranStateTableOffset: r.int64(txTranStateTableOffset, true),
		CommitLogOffset:      r.int64(txCommitLogOffset, true),
		CommitOrRollback:     r.int32(txCommitOrRollback, true),
		FromTransactionCheck: r.boolean(txFromTransactionCheck, false),
		MsgID:                r.str(txMsgID, true),
		TransactionID:        r.str(txTransactionID, false),
		Topic:                r.str(extTopic, false),
		BrokerName:           r.str(extBrokerName, false),
	}
	return r.err
}

// CheckTransactionStateRequestHeader is the header of CHECK_TRANSACTION_STATE
// (39), sent oneway by the broker to a live connection of a half message's
// producer group. The body is the half message record (topic and queue
// replaced by the real ones). The producer runs its check callback and
// answers with an END_TRANSACTION quoting TranStateTableOffset and
// CommitLogOffset back, with fromTransactionCheck=true; it sends no response
// to the check itself.
//
// Required: tranStateTableOffset and commitLogOffset.
type CheckTransactionStateRequestHeader struct {
	TranStateTableOffset int64  // tranStateTableOffset (required): half-queue offset of the current half copy
	CommitLogOffset      int64  // commitLogOffset (required): commit-log offset of the current half copy
	MsgID                string // msgId: the UNIQ_KEY
	TransactionID        string // transactionId: the UNIQ_KEY (or the producer's transaction id)
	OffsetMsgID          string // offsetMsgId: offset message id of the half record
	Topic                string // topic (Java 5.x: the half topic)
	BrokerName           string // bname: the checking broker's name
}

// EncodeExt implements Header.
func (h *CheckTransactionStateRequestHeader) EncodeExt(ext *remoting.Ext) {
	setInt64(ext, txTranStateTableOffset, h.TranStateTableOffset)
	setInt64(ext, txCommitLogOffset, h.CommitLogOffset)
	putStr(ext, txMsgID, h.MsgID)
	putStr(ext, txTransactionID, h.TransactionID)
	putStr(ext, txOffsetMsgID, h.OffsetMsgID)
	putStr(ext, extTopic, h.Topic)
	putStr(ext, extBrokerName, h.BrokerName)
}

// DecodeExt implements Header.
func (h *CheckTransactionStateRequestHeader) DecodeExt(ext remoting.Ext) error {
	r := extReader{ext: ext}
	*h = CheckTransactionStateRequestHeader{
		TranStateTableOffset: r.int64(txTranStateTableOffset, true),
		CommitLogOffset:      r.int64(txCommitLogOffset, true),
		MsgID:                r.str(txMsgID, false),
		TransactionID:        r.str(txTransactionID, false),
		OffsetMsgID:          r.str(txOffsetMsgID, false),
		Topic:                r.str(extTopic, false),
		BrokerName:           r.str(extBrokerName, false),
	}
	return r.err
}
