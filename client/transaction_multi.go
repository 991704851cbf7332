package client

// Multi-message transactions, a Ferry extension (docs/transactions.md, "Several messages
// in one transaction"): SendMessagesInTransaction sends ONE half message whose body is a
// batch of the messages (the SEND_BATCH_MESSAGE item layout), each item carrying its own
// topic and queue as REAL_TOPIC / REAL_QID, the half message carrying FERRY_TRAN_ITEMS =
// the count. The broker commits or rolls back the whole half message, writing one
// ordinary message per item on commit; prepare, END_TRANSACTION and check-back are
// exactly those of a single message, so a check asks once per transaction. Only a Ferry
// broker understands it: a RocketMQ broker would commit the batch as one message with a
// binary body.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/protocol"
)

// MaxTransactionMessages bounds the messages of one SendMessagesInTransaction (the
// broker's limit).
const MaxTransactionMessages = 128

// Properties of multi-message transactions (the broker's names; see package transaction).
const (
	// PropertyTransactionItems is set on the half message of a multi-message transaction
	// (the msg a TransactionChecker gets): the number of messages in it.
	PropertyTransactionItems = "FERRY_TRAN_ITEMS"
	// PropertyTransactionItem is set by the broker on each committed message of a
	// multi-message transaction: its index in the transaction.
	PropertyTransactionItem = "FERRY_TRAN_ITEM"
)

// MaxTransactionOffsets bounds the consumer offsets one transaction commits (the broker's
// limit).
const MaxTransactionOffsets = 256

// Properties of offsets inside a transaction (the broker's names; see package transaction).
const (
	propertyOffsetGroup = "FERRY_TRAN_OFFSET_GROUP"
	propertyOffsets     = "FERRY_TRAN_OFFSETS"
	propertyOffsetsFrom = "FERRY_TRAN_OFFSETS_FROM"
)

// TxOffset is a consumer offset a transaction commits: the next offset its group consumes
// from Queue (a consumed message's QueueOffset + 1), as UPDATE_CONSUMER_OFFSET would set it.
//
// A conditional TxOffset is a compare-and-set: the broker commits the transaction only if
// the group's committed offset of Queue is From at that moment (NoOffset: the group has
// none), else it rolls the whole transaction back and SendTxMessages fails with
// ErrOffsetConflict. Two transactions that consumed the same input from the same offset
// can then never both commit — not even when one comes from a process that was killed
// and restarted, whose END_TRANSACTION or check-back answer arrives late. package
// pipeline builds exactly-once consume-transform-produce on it.
type TxOffset struct {
	Queue  MessageQueue
	Offset int64
	// Conditional makes the commit require the group's offset of Queue to be From.
	Conditional bool
	From        int64
}

// NoOffset is the From of a conditional TxOffset whose group must have no committed
// offset for the queue yet.
const NoOffset = -1

// ErrOffsetConflict means the broker refused to commit a transaction because a
// conditional TxOffset did not find its From: the transaction was rolled back, nothing of
// it is visible, and the group's offsets are as another transaction (or a consumer) left
// them. Read the committed offset again and go on from there.
var ErrOffsetConflict = errors.New("client: the consumer offset moved; the transaction was rolled back")

// TxMessages is what SendTxMessages sends as one transaction: messages and, optionally,
// consumer offsets of one group (Kafka's sendOffsetsToTransaction), applied exactly when
// the transaction commits.
type TxMessages struct {
	// Msgs are the messages, at least one.
	Msgs []*message.Message
	// Group is the consumer group whose Offsets the transaction commits; required with
	// Offsets.
	Group string
	// Offsets are the group's offsets to commit, at most MaxTransactionOffsets, all in
	// queues of one broker group — the one the transaction then goes to.
	Offsets []TxOffset
}

// ErrNoCommonBroker means the messages of one SendMessagesInTransaction have no broker
// group in common: a transaction is committed by one broker group, which must host a
// writable queue of every message's topic.
var ErrNoCommonBroker = errors.New("client: the transaction's topics have no broker group in common")

// LocalMessagesTransaction is the local part of a multi-message transaction, run by
// SendMessagesInTransaction once the half message is stored. msgs are the messages as
// sent (TRAN_MSG, PGROUP and UNIQ_KEY set); res says where they go. A panic counts as
// TransactionUnknown.
type LocalMessagesTransaction func(ctx context.Context, msgs []*message.Message, res MessagesTransactionResult) TransactionState

// MessagesTransactionResult is what SendMessagesInTransaction did.
type MessagesTransactionResult struct {
	// TransactionResult is the half message's: MsgID and TransactionID are the
	// transaction's id, QueueOffset is in the broker's half queue, and State is the
	// outcome sent in END_TRANSACTION.
	TransactionResult
	// Messages has one entry per message, in order: its MsgID (UNIQ_KEY, the id consumers
	// see), Topic, BrokerName and QueueID. OffsetMsgID and QueueOffset are unknown (empty
	// and 0): the broker assigns them at commit.
	Messages []SendResult
}

// SendMessagesInTransaction sends msgs as one transaction: they become consumable
// together on commit, or not at all on rollback. All messages' topics must have a
// writable queue on one broker group (else ErrNoCommonBroker, before anything is sent);
// their queues are chosen on that group (by WithSelector, shown that group's queues of
// the message's topic, else round robin). At most MaxTransactionMessages messages; the
// half message (their bodies and properties plus 22 bytes each) must fit the producer's
// and the broker's maximum message size, and bodies are not compressed. The local
// transaction, END_TRANSACTION, errors and check-back work as for SendInTransaction; the
// TransactionChecker is asked once for the whole transaction, with the half message
// (PropertyTransactionItems set; TransactionMessages returns the messages). Only Ferry
// brokers support it. msgs are not modified.
func (tp *TransactionProducer) SendMessagesInTransaction(ctx context.Context, msgs []*message.Message,
	local LocalMessagesTransaction) (MessagesTransactionResult, error) {
	return tp.SendTxMessages(ctx, TxMessages{Msgs: msgs}, local)
}

// SendTxMessages is SendMessagesInTransaction with consumer offsets: tx.Offsets of
// tx.Group are committed on the broker exactly when the transaction commits — never on
// rollback — and, like the messages, survive a crash of the broker in the middle of the
// commit. This is consume-transform-produce: consume input messages, send the outputs
// with the input offsets in one transaction, so each input's outputs appear exactly once
// as long as the group's offsets are committed only this way (the consumer must not also
// commit them). The transaction goes to the broker group of the offsets' queues, which
// must host every message's topic too (else ErrNoCommonBroker).
func (tp *TransactionProducer) SendTxMessages(ctx context.Context, tx TxMessages,
	local LocalMessagesTransaction) (MessagesTransactionResult, error) {
	msgs := tx.Msgs
	if local == nil {
		return MessagesTransactionResult{}, fmt.Errorf("%w: nil local transaction", ErrInvalidOptions)
	}
	if len(msgs) == 0 || len(msgs) > MaxTransactionMessages {
		return MessagesTransactionResult{}, fmt.Errorf("%w: %d messages in a transaction, want 1..%d",
			ErrIllegalMessage, len(msgs), MaxTransactionMessages)
	}
	items := make([]*message.Message, len(msgs))
	for i, m := range msgs {
		if m == nil {
			return MessagesTransactionResult{}, fmt.Errorf("%w: nil message %d", ErrIllegalMessage, i)
		}
		items[i] = tp.halfMessage(m)
		if err := protocol.ValidateTopic(items[i].Topic); err != nil {
			return MessagesTransactionResult{}, fmt.Errorf("%w: message %d: %w", ErrIllegalMessage, i, err)
		}
		if err := items[i].Validate(tp.p.opts.maxBodySize); err != nil {
			return MessagesTransactionResult{}, fmt.Errorf("%w: message %d: %w", ErrIllegalMessage, i, err)
		}
	}
	offsets, broker, err := tp.txOffsets(&tx)
	if err != nil {
		return MessagesTransactionResult{}, err
	}
	if !tp.enter() {
		return MessagesTransactionResult{}, ErrClosed
	}
	defer tp.sends.Done()

	res, q, err := tp.sendMultiHalf(ctx, items, offsets, broker)
	if err != nil {
		if res.OffsetMsgID == "" {
			return MessagesTransactionResult{}, err
		}
		res.State = TransactionRollback
		if eerr := tp.end(ctx, q, res.TransactionResult, ""); eerr != nil {
			err = errors.Join(err, eerr)
		}
		return res, err
	}
	var remark string
	res.State, remark = tp.runLocalMessages(ctx, items, res, local)
	var errs []error
	if remark != "" {
		errs = append(errs, fmt.Errorf("%w: %s", ErrLocalTransactionPanicked, remark))
	}
	if eerr := tp.end(ctx, q, res.TransactionResult, remark); eerr != nil {
		if errors.Is(eerr, ErrOffsetConflict) || errors.Is(eerr, ErrTransactionEndedOtherwise) {
			res.State = TransactionRollback
		}
		errs = append(errs, eerr)
	}
	return res, errors.Join(errs...)
}

// sendMultiHalf plans the queues of items on one broker group, encodes the half message
// and sends it, retrying only refusals that stored nothing (on another group when there
// is one), like sendHalf.
func (tp *TransactionProducer) sendMultiHalf(ctx context.Context, items []*message.Message, offsets map[string]string,
	broker string) (MessagesTransactionResult, queue, error) {
	var avoid string
	for attempt := 0; ; attempt++ {
		qs, brokers, err := tp.planQueues(ctx, items, avoid, broker)
		if err != nil {
			return MessagesTransactionResult{}, queue{}, err
		}
		_ = tp.useBrokers(ctx, brokers, false)
		out, err := tp.multiOutgoing(items, qs, offsets)
		if err != nil {
			return MessagesTransactionResult{}, queue{}, err
		}
		q := qs[0]
		resp, err := tp.c.invoke(ctx, q.addr, tp.p.singleRequest(q, out))
		result := func() (MessagesTransactionResult, error) {
			hr, derr := halfResult(items[0].Topic, q, out, resp)
			r := MessagesTransactionResult{TransactionResult: hr, Messages: make([]SendResult, len(items))}
			for i, it := range items {
				r.Messages[i] = SendResult{MsgID: it.UniqKey(), Topic: it.Topic, BrokerName: qs[i].broker,
					QueueID: qs[i].id}
			}
			return r, derr
		}
		var be *BrokerError
		switch {
		case err == nil:
			res, derr := result()
			return res, q, derr
		case errors.As(err, &be) && storedNotOK(be.Code):
			res, derr := result()
			if derr != nil {
				return MessagesTransactionResult{}, q, errors.Join(err, derr)
			}
			return res, q, err
		case errors.As(err, &be) && be.Retriable() && attempt < tp.p.opts.retries && ctx.Err() == nil:
			avoid = q.broker
			for _, it := range items {
				tp.c.forgetRoute(it.Topic)
			}
		case !errors.As(err, &be) && !errors.Is(err, ErrClosed):
			if r, rerr := tp.c.route(ctx, items[0].Topic); rerr == nil {
				tp.c.refreshAfterFailure(items[0].Topic, r) // no answer: the broker may be gone
			}
			return MessagesTransactionResult{}, q, err
		default:
			return MessagesTransactionResult{}, q, err
		}
	}
}

// planQueues chooses one broker group hosting a writable queue of every item's topic —
// want if set, else not avoid if another will do, and one the fault tracker does not
// avoid if possible — and a queue of it for each item. It returns the queues and the
// master addresses of the routes.
func (tp *TransactionProducer) planQueues(ctx context.Context, items []*message.Message, avoid, want string) ([]queue, []string, error) {
	routes := map[string]*topicRoute{}
	var brokers []string
	var common []string // broker names with a queue of every topic so far, in the first route's order
	for i, it := range items {
		if routes[it.Topic] != nil {
			continue
		}
		r, err := tp.c.route(ctx, it.Topic)
		if err != nil {
			return nil, nil, err
		}
		routes[it.Topic] = r
		for _, a := range r.brokers {
			if !slices.Contains(brokers, a) {
				brokers = append(brokers, a)
			}
		}
		var names []string
		for _, q := range r.queues {
			if !slices.Contains(names, q.broker) {
				names = append(names, q.broker)
			}
		}
		if i == 0 {
			common = names
		} else {
			common = slices.DeleteFunc(common, func(b string) bool { return !slices.Contains(names, b) })
		}
	}
	if want != "" {
		if !slices.Contains(common, want) {
			common = nil
		} else {
			common = []string{want}
		}
	}
	if len(common) == 0 {
		topics := make([]string, 0, len(routes))
		for t := range routes {
			topics = append(topics, tp.c.nsStrip(t))
		}
		slices.Sort(topics)
		if want != "" {
			return nil, nil, fmt.Errorf("%w: %v and the offsets' broker %s", ErrNoCommonBroker, topics, want)
		}
		return nil, nil, fmt.Errorf("%w: %v", ErrNoCommonBroker, topics)
	}
	broker := common[0]
	start := int(tp.p.rr.Add(1))
	for _, pass := range []func(b string) bool{
		func(b string) bool { return b != avoid && tp.p.fault.available(b) },
		func(b string) bool { return b != avoid },
	} {
		if i := slices.IndexFunc(rotate(common, start), pass); i >= 0 {
			broker = rotate(common, start)[i]
			break
		}
	}
	qs := make([]queue, len(items))
	for i, it := range items {
		var mine []queue
		for _, q := range routes[it.Topic].queues {
			if q.broker == broker {
				mine = append(mine, q)
			}
		}
		j := (start + i) % len(mine)
		if sel := tp.p.opts.selector; sel != nil {
			mq := make([]MessageQueue, len(mine))
			for k, q := range mine {
				mq[k] = MessageQueue{Topic: it.Topic, BrokerName: q.broker, QueueID: q.id}
			}
			if j = sel.Select(it, mq); j < 0 || j >= len(mine) {
				return nil, nil, fmt.Errorf("%w: the selector picked queue %d of %d for message %d", ErrIllegalMessage,
					j, len(mine), i)
			}
		}
		qs[i] = mine[j]
	}
	return qs, brokers, nil
}

// rotate returns s rotated left by n (a new slice).
func rotate(s []string, n int) []string {
	n %= len(s)
	return append(slices.Clone(s[n:]), s[:n]...)
}

// multiOutgoing encodes the half message of items going to qs: its body is the batch of
// items, each with REAL_TOPIC and REAL_QID; its topic and queue are item 0's.
func (tp *TransactionProducer) multiOutgoing(items []*message.Message, qs []queue, extra map[string]string) (*outgoing, error) {
	var body []byte
	for i, it := range items {
		props, err := it.AppendProperties(nil)
		if err == nil {
			props, err = message.AppendProperty(props, message.PropertyRealTopic, it.Topic)
		}
		if err == nil {
			props, err = message.AppendProperty(props, message.PropertyRealQueueID, strconv.Itoa(int(qs[i].id)))
		}
		if err == nil && len(props) > protocol.MaxBatchPropertiesLength {
			err = fmt.Errorf("properties of %d bytes", len(props))
		}
		if err == nil {
			body, err = protocol.AppendBatchItem(body, protocol.BatchItem{Flag: it.Flag, Body: it.Body, Properties: props})
		}
		if err != nil {
			return nil, fmt.Errorf("%w: message %d: %w", ErrIllegalMessage, i, err)
		}
	}
	limit := tp.p.opts.maxBodySize
	if limit <= 0 {
		limit = message.DefaultMaxBodySize
	}
	if len(body) > limit {
		return nil, fmt.Errorf("%w: the transaction's half message is %d bytes, max %d", ErrIllegalMessage, len(body), limit)
	}
	uniq := tp.c.ids.Next()
	kv := map[string]string{
		message.PropertyUniqKey: uniq, message.PropertyTransactionPrepared: "true",
		message.PropertyProducerGroup: tp.group, PropertyTransactionItems: strconv.Itoa(len(items)),
	}
	maps.Copy(kv, extra)
	props, err := message.EncodeProperties(kv)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrIllegalMessage, err)
	}
	return &outgoing{topic: items[0].Topic, body: body, props: props, uniq: uniq,
		sysFlag: message.WithTransactionType(0, message.TransactionPreparedType)}, nil
}

// txOffsets checks tx's offsets and returns the half message's properties carrying them
// and the broker group they are on ("" without offsets).
func (tp *TransactionProducer) txOffsets(tx *TxMessages) (map[string]string, string, error) {
	if len(tx.Offsets) == 0 {
		if tx.Group != "" {
			return nil, "", fmt.Errorf("%w: a consumer group without offsets", ErrIllegalMessage)
		}
		return nil, "", nil
	}
	group := tp.c.nsWrap(tx.Group)
	if err := protocol.ValidateGroup(group); err != nil {
		return nil, "", fmt.Errorf("%w: offsets' group: %w", ErrIllegalMessage, err)
	}
	if len(tx.Offsets) > MaxTransactionOffsets {
		return nil, "", fmt.Errorf("%w: %d offsets, max %d", ErrIllegalMessage, len(tx.Offsets), MaxTransactionOffsets)
	}
	broker := tx.Offsets[0].Queue.BrokerName
	var b, from []byte
	for i, o := range tx.Offsets {
		o.Queue = tp.c.nsQueue(o.Queue)
		switch {
		case o.Queue.BrokerName != broker || broker == "":
			return nil, "", fmt.Errorf("%w: offsets on broker groups %q and %q", ErrNoCommonBroker, broker, o.Queue.BrokerName)
		case o.Offset < 0 || o.Queue.QueueID < 0 || (o.Conditional && o.From < NoOffset):
			return nil, "", fmt.Errorf("%w: offset %d (from %d) of queue %d", ErrIllegalMessage, o.Offset, o.From,
				o.Queue.QueueID)
		}
		if err := protocol.ValidateTopic(o.Queue.Topic); err != nil {
			return nil, "", fmt.Errorf("%w: offset %d: %w", ErrIllegalMessage, i, err)
		}
		for _, p := range tx.Offsets[:i] {
			if tp.c.nsQueue(p.Queue) == o.Queue {
				return nil, "", fmt.Errorf("%w: queue %s:%d twice in the offsets", ErrIllegalMessage, o.Queue.Topic,
					o.Queue.QueueID)
			}
		}
		if i > 0 {
			b = append(b, ';')
		}
		b = fmt.Appendf(b, "%d,%d,%s", o.Queue.QueueID, o.Offset, o.Queue.Topic)
		if o.Conditional {
			if len(from) > 0 {
				from = append(from, ';')
			}
			from = fmt.Appendf(from, "%d,%d,%s", o.Queue.QueueID, o.From, o.Queue.Topic)
		}
	}
	props := map[string]string{propertyOffsetGroup: group, propertyOffsets: string(b)}
	if len(from) > 0 {
		props[propertyOffsetsFrom] = string(from)
	}
	return props, broker, nil
}

// runLocalMessages runs a multi-message local transaction; a panic is
// TransactionUnknown with its text as the remark.
func (tp *TransactionProducer) runLocalMessages(ctx context.Context, msgs []*message.Message, res MessagesTransactionResult,
	local LocalMessagesTransaction) (state TransactionState, remark string) {
	defer func() {
		if r := recover(); r != nil {
			state, remark = TransactionUnknown, fmt.Sprint(r)
			tp.c.log.Warn().Str("group", tp.group).Str("msgID", res.MsgID).Str("panic", remark).
				Msg("local transaction panicked; leaving it to the check-back")
		}
	}()
	switch st := local(ctx, msgs, res); st {
	case TransactionCommit, TransactionRollback:
		return st, ""
	}
	return TransactionUnknown, ""
}

// TransactionMessages returns the messages of a multi-message transaction from the msg a
// TransactionChecker got (nil and no error for a single-message transaction): each with
// its topic (outside the client's namespace), flag, body and properties as sent, and
// REAL_QID naming its queue.
func (tp *TransactionProducer) TransactionMessages(msg *MessageExt) ([]*message.Message, error) {
	if msg.Property(PropertyTransactionItems) == "" {
		return nil, nil
	}
	var out []*message.Message
	r := protocol.NewBatchReader(msg.Body)
	for r.Next() {
		it := r.Item()
		props := message.ParseProperties(it.Properties)
		m := &message.Message{Topic: tp.c.nsStrip(props[message.PropertyRealTopic]), Flag: it.Flag,
			Body: slices.Clone(it.Body), Properties: props}
		delete(props, message.PropertyRealTopic)
		out = append(out, m)
	}
	if err := r.Err(); err != nil {
		return nil, fmt.Errorf("client: transaction %s: %w", msg.MsgID, err)
	}
	return out, nil
}
