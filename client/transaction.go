package client

// Transactional producer: half messages, END_TRANSACTION and the check-back listener
// (remoting spec §8.1–§8.3, docs/transactions.md).
//
// SendInTransaction sends the half message on its own synchronous SEND_MESSAGE_V2
// (sysflag PREPARED, TRAN_MSG=true, PGROUP=group; never batched), runs the local
// transaction only when the broker answered SUCCESS, and ends the transaction with
// END_TRANSACTION quoting the half record's offsets. Commit and rollback are sent as a
// call, not oneway as the Java producer does: the caller then knows that the outcome was
// stored (a committed message is in its topic when SendInTransaction returns) or why not,
// at the cost of one round trip; RocketMQ 4.x brokers answer both. Unknown is sent oneway,
// because RocketMQ brokers do not answer it.
//
// Check-back: the broker sends CHECK_TRANSACTION_STATE (oneway) on a connection the
// group's heartbeat registered. The client's handler (registered on both remoting clients,
// since a broker may hold a JSON and a msgpack connection of the client) decodes it, finds
// the transaction producer of the record's PGROUP and queues it; a few workers per
// producer call the TransactionChecker and answer on the connection the check came on.
// The reader goroutine never waits for a checker. Heartbeats carry the group (the
// producer registers it like any producer) and go to every broker of the routes the
// producer has used, so after a reconnect the next heartbeat registers the new connection
// and checks flow again.
//
// Goroutines: checkWorkers per producer, started by NewTransactionProducer, stopped by
// Close or by the Client's Close.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
)

const (
	// checkWorkers is how many checks of one producer run at once.
	checkWorkers = 4
	// checkQueueSize bounds the checks waiting for a worker (RocketMQ's 2000); a check
	// beyond it is dropped, and the broker asks again later.
	checkQueueSize = 2000
)

// Transaction errors; the errors of SendInTransaction wrap them.
var (
	// ErrTransactionNotEnded means the local transaction ran but its outcome
	// (TransactionResult.State) did not reach the broker, or the broker refused it; the
	// broker will ask the group's TransactionChecker.
	ErrTransactionNotEnded = errors.New("client: END_TRANSACTION not delivered; the broker will check back")
	// ErrLocalTransactionPanicked means the local transaction panicked; the transaction
	// was left unknown, to the check-back.
	ErrLocalTransactionPanicked = errors.New("client: local transaction panicked")
	// ErrTransactionEndedOtherwise means a commit reached a Ferry broker after the
	// transaction had been rolled back or discarded there (a check-back was answered
	// first, or it was checked too often): nothing of it is visible.
	ErrTransactionEndedOtherwise = errors.New("client: the transaction was rolled back or discarded before the commit arrived")
)

// TransactionState is the outcome of a local transaction, as a local transaction or a
// TransactionChecker reports it. The zero value is TransactionUnknown.
type TransactionState int

// Transaction states.
const (
	// TransactionUnknown leaves the message pending: the broker asks the group's
	// TransactionChecker later.
	TransactionUnknown TransactionState = iota
	// TransactionCommit makes the message visible to consumers.
	TransactionCommit
	// TransactionRollback discards the message.
	TransactionRollback
)

// String returns "commit", "rollback" or "unknown".
func (s TransactionState) String() string {
	switch s {
	case TransactionCommit:
		return "commit"
	case TransactionRollback:
		return "rollback"
	}
	return "unknown"
}

// wire is the END_TRANSACTION commitOrRollback value; anything but commit and rollback
// is unknown.
func (s TransactionState) wire() int32 {
	switch s {
	case TransactionCommit:
		return protocol.TransactionCommit
	case TransactionRollback:
		return protocol.TransactionRollback
	}
	return protocol.TransactionUnknown
}

// TransactionChecker answers the broker's check-backs: for a half message whose outcome
// the broker does not know (the local transaction returned TransactionUnknown or
// panicked, END_TRANSACTION was lost, or the producer process died), it reports whether
// the local transaction committed. It is called on one of the producer's check workers,
// concurrently with other checks; ctx ends when the producer closes. It should be quick
// and may return TransactionUnknown to be asked again later.
type TransactionChecker interface {
	Check(ctx context.Context, msg *MessageExt) TransactionState
}

// TransactionCheckerFunc adapts a function to TransactionChecker.
type TransactionCheckerFunc func(ctx context.Context, msg *MessageExt) TransactionState

// Check implements TransactionChecker.
func (f TransactionCheckerFunc) Check(ctx context.Context, msg *MessageExt) TransactionState {
	return f(ctx, msg)
}

// LocalTransaction is the local part of a transaction, run by SendInTransaction once the
// half message is stored. msg is the message as sent (with TRAN_MSG, PGROUP and UNIQ_KEY
// set); res says where the half message was stored (res.MsgID is the transaction id).
// A panic counts as TransactionUnknown.
type LocalTransaction func(ctx context.Context, msg *message.Message, res SendResult) TransactionState

// TransactionResult is what SendInTransaction did.
type TransactionResult struct {
	// SendResult is the half message's: its MsgID (UNIQ_KEY), the half record's
	// OffsetMsgID, the real topic and queue, and QueueOffset in the broker's half queue
	// (not in the real queue).
	SendResult
	// TransactionID is the broker's id of the transaction (the UNIQ_KEY).
	TransactionID string
	// State is the outcome sent in END_TRANSACTION: the local transaction's, or
	// TransactionRollback when the broker stored the half message without SEND_OK.
	State TransactionState
}

// TransactionProducer sends transactional messages of one producer group and answers the
// broker's check-backs for that group (see TransactionChecker). A Client holds at most
// one per group. It is safe for concurrent use; Close it when done.
type TransactionProducer struct {
	c       *Client
	p       *Producer // prepare, queue choice, requests; registers the group for heartbeats
	group   string
	checker TransactionChecker

	checks  chan checkTask
	ctx     context.Context // handed to the checker; cancelled by Close
	cancel  context.CancelFunc
	stop    chan struct{}
	workers sync.WaitGroup
	sends   sync.WaitGroup // SendInTransaction calls in flight

	mu struct {
		sync.Mutex
		closed  bool
		brokers []string // master addresses of the routes used; heartbeats go there
	}
}

// txnRegistry maps producer groups to the Client's transaction producers.
type txnRegistry struct {
	sync.Mutex
	producers map[string]*TransactionProducer
}

// checkTask is one CHECK_TRANSACTION_STATE waiting for a worker.
type checkTask struct {
	ch  remoting.Channel
	h   protocol.CheckTransactionStateRequestHeader
	msg *MessageExt
}

// NewTransactionProducer returns a transactional producer of group on c; checker answers
// the broker's check-backs for the group. opts are the Producer's: WithSelector,
// WithRetries (only refusals that stored nothing are retried), WithMaxBodySize and
// WithCompressOver apply; batching options do not (half messages go one per request).
// It contacts nobody: the first send, or Register, tells the brokers about the group.
func (c *Client) NewTransactionProducer(group string, checker TransactionChecker, opts ...ProducerOption) (*TransactionProducer, error) {
	group = c.nsWrap(group) // namespace.go
	if checker == nil {
		return nil, fmt.Errorf("%w: nil TransactionChecker", ErrInvalidOptions)
	}
	if c.closed.Load() {
		return nil, ErrClosed
	}
	c.txn.Lock()
	defer c.txn.Unlock()
	if _, ok := c.txn.producers[group]; ok {
		return nil, fmt.Errorf("%w: the client already has a transaction producer of group %q", ErrInvalidOptions, group)
	}
	p, err := c.NewProducer(group, opts...)
	if err != nil {
		return nil, err
	}
	tp := &TransactionProducer{c: c, p: p, group: group, checker: checker,
		checks: make(chan checkTask, checkQueueSize), stop: make(chan struct{})}
	tp.ctx, tp.cancel = context.WithCancel(context.Background())
	if c.txn.producers == nil {
		c.txn.producers = make(map[string]*TransactionProducer)
	}
	c.txn.producers[group] = tp
	for range checkWorkers {
		tp.workers.Go(tp.checkWorker)
	}
	return tp, nil
}

// Group is the producer group.
func (tp *TransactionProducer) Group() string { return tp.group }

// Register looks the topics up and registers the group with each of their brokers at
// once (a heartbeat), and keeps heartbeating them. A broker checks back only producers it
// knows; a new producer that must resolve transactions left by one that died calls it
// before (or instead of) its first send.
func (tp *TransactionProducer) Register(ctx context.Context, topics ...string) error {
	if !tp.enter() {
		return ErrClosed
	}
	defer tp.sends.Done()
	var errs []error
	for _, topic := range topics {
		r, err := tp.c.route(ctx, tp.c.nsWrap(topic))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		errs = append(errs, tp.useBrokers(ctx, r.brokers, true))
	}
	return errors.Join(errs...)
}

// Close waits for the SendInTransaction calls in flight and for the checks being
// answered (their ctx is cancelled), stops the check workers and unregisters the group
// from the client; checks still queued are dropped (the broker asks again). Later calls
// fail with ErrClosed. It is idempotent.
func (tp *TransactionProducer) Close() error {
	tp.mu.Lock()
	if tp.mu.closed {
		tp.mu.Unlock()
		return nil
	}
	tp.mu.closed = true
	tp.mu.Unlock()
	tp.sends.Wait()
	tp.c.txn.Lock()
	if tp.c.txn.producers[tp.group] == tp {
		delete(tp.c.txn.producers, tp.group)
	}
	tp.c.txn.Unlock()
	tp.cancel()
	close(tp.stop)
	tp.workers.Wait()
	return tp.p.Close()
}

// enter counts a call in flight unless the producer is closed.
func (tp *TransactionProducer) enter() bool {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	if tp.mu.closed {
		return false
	}
	tp.sends.Add(1)
	return true
}

// SendInTransaction sends msg as a half message (invisible to consumers), runs local if
// the broker stored it with SEND_OK, and ends the transaction with local's outcome:
// TransactionCommit makes the message consumable — it is stored in its topic when
// SendInTransaction returns without error — TransactionRollback discards it, TransactionUnknown (or a panic) leaves
// it to the group's TransactionChecker; any other value counts as unknown. msg is not
// modified; a Ferry broker honours its delay level or delivery time at commit (RocketMQ
// brokers do not support them on transactional messages). ctx bounds the half send and
// is handed to local; END_TRANSACTION is sent even when ctx has ended meanwhile (bounded
// by the client's request timeout).
//
// Errors: a message that breaks the broker's limits (ErrIllegalMessage) or a failed half
// send returns before local runs; a half message stored without SEND_OK (flush or slave
// timeout) is rolled back, local does not run, and the *BrokerError is returned with
// State TransactionRollback. After local ran, the error wraps ErrLocalTransactionPanicked
// and/or ErrTransactionNotEnded, and the result is complete.
func (tp *TransactionProducer) SendInTransaction(ctx context.Context, msg *message.Message, local LocalTransaction) (TransactionResult, error) {
	if msg == nil {
		return TransactionResult{}, fmt.Errorf("%w: nil message", ErrIllegalMessage)
	}
	if local == nil {
		return TransactionResult{}, fmt.Errorf("%w: nil local transaction", ErrInvalidOptions)
	}
	half := tp.halfMessage(msg)
	out, err := tp.p.prepare(half)
	if err != nil {
		return TransactionResult{}, err
	}
	out.sysFlag = message.WithTransactionType(out.sysFlag, message.TransactionPreparedType)
	if !tp.enter() {
		return TransactionResult{}, ErrClosed
	}
	defer tp.sends.Done()

	res, q, err := tp.sendHalf(ctx, half, out)
	if err != nil {
		if res.OffsetMsgID == "" {
			return TransactionResult{}, err
		}
		// Stored, but not as SEND_OK: RocketMQ's producers roll back without running the
		// local transaction.
		res.State = TransactionRollback
		if eerr := tp.end(ctx, q, res, ""); eerr != nil {
			err = errors.Join(err, eerr)
		}
		return res, err
	}
	var remark string
	res.State, remark = tp.runLocal(ctx, half, res.SendResult, local)
	var errs []error
	if remark != "" {
		errs = append(errs, fmt.Errorf("%w: %s", ErrLocalTransactionPanicked, remark))
	}
	if eerr := tp.end(ctx, q, res, remark); eerr != nil {
		errs = append(errs, eerr)
	}
	return res, errors.Join(errs...)
}

// halfMessage copies msg with the half-message properties and a UNIQ_KEY.
func (tp *TransactionProducer) halfMessage(msg *message.Message) *message.Message {
	half := &message.Message{Topic: tp.c.nsWrap(msg.Topic), Flag: msg.Flag, Body: msg.Body, Properties: maps.Clone(msg.Properties)}
	half.SetProperty(message.PropertyTransactionPrepared, "true")
	half.SetProperty(message.PropertyProducerGroup, tp.group)
	if half.UniqKey() == "" {
		half.SetUniqKey(tp.c.ids.Next())
	}
	return half
}

// sendHalf sends the half message synchronously. Only refusals that stored nothing
// (retriable codes other than the flush and slave timeouts) are tried again, on another
// broker: a retry after a lost answer could store a second half message — a second
// transaction. A result with an OffsetMsgID and an error means stored without SEND_OK.
func (tp *TransactionProducer) sendHalf(ctx context.Context, half *message.Message, out *outgoing) (TransactionResult, queue, error) {
	var avoid string
	for attempt := 0; ; attempt++ {
		r, err := tp.c.route(ctx, half.Topic)
		if err != nil {
			return TransactionResult{}, queue{}, err
		}
		_ = tp.useBrokers(ctx, r.brokers, false)
		key := laneKey{topic: half.Topic, queue: -1}
		if sel := tp.p.opts.selector; sel != nil {
			qs := r.messageQueues()
			i := sel.Select(half, qs)
			if i < 0 || i >= len(qs) {
				return TransactionResult{}, queue{}, fmt.Errorf("%w: the selector picked queue %d of %d", ErrIllegalMessage, i, len(qs))
			}
			key.queue = int32(i)
		}
		q := tp.p.pickQueue(r, key, avoid)
		resp, err := tp.c.invoke(ctx, q.addr, tp.p.singleRequest(q, out))
		var be *BrokerError
		switch {
		case err == nil:
			res, derr := halfResult(r.topic, q, out, resp)
			return res, q, derr
		case errors.As(err, &be) && storedNotOK(be.Code):
			res, derr := halfResult(r.topic, q, out, resp)
			if derr != nil {
				return TransactionResult{}, q, errors.Join(err, derr)
			}
			return res, q, err
		case errors.As(err, &be) && be.Retriable() && attempt < tp.p.opts.retries && ctx.Err() == nil:
			avoid = q.broker
			tp.c.forgetRoute(r.topic)
		case !errors.As(err, &be) && !errors.Is(err, ErrClosed):
			tp.c.refreshAfterFailure(r.topic, r) // no answer: the broker may be gone (a failover)
			return TransactionResult{}, q, err
		default:
			return TransactionResult{}, q, err
		}
	}
}

// storedNotOK reports whether a send answered with code stored the message without
// SEND_OK (FLUSH_DISK_TIMEOUT, FLUSH_SLAVE_TIMEOUT, SLAVE_NOT_AVAILABLE).
func storedNotOK(code protocol.ResponseCode) bool {
	return code == protocol.FlushDiskTimeout || code == protocol.FlushSlaveTimeout || code == protocol.SlaveNotAvailable
}

// halfResult decodes a half send's response.
func halfResult(topic string, q queue, out *outgoing, resp *remoting.Command) (TransactionResult, error) {
	var h protocol.SendMessageResponseHeader
	if err := h.DecodeExt(resp.ExtFields); err != nil {
		return TransactionResult{}, fmt.Errorf("client: send response from %s: %w", q.addr, err)
	}
	res := TransactionResult{SendResult: SendResult{MsgID: out.uniq, OffsetMsgID: h.MsgID, Topic: topic,
		BrokerName: q.broker, QueueID: h.QueueID, QueueOffset: h.QueueOffset}, TransactionID: h.TransactionID}
	if res.TransactionID == "" {
		res.TransactionID = out.uniq
	}
	return res, nil
}

// runLocal runs the local transaction; a panic is TransactionUnknown with its text as
// the remark.
func (tp *TransactionProducer) runLocal(ctx context.Context, half *message.Message, res SendResult, local LocalTransaction) (state TransactionState, remark string) {
	defer func() {
		if r := recover(); r != nil {
			state, remark = TransactionUnknown, fmt.Sprint(r)
			tp.c.log.Warn().Str("group", tp.group).Str("msgID", res.MsgID).Str("panic", remark).
				Msg("local transaction panicked; leaving it to the check-back")
		}
	}()
	switch st := local(ctx, half, res); st {
	case TransactionCommit, TransactionRollback:
		return st, ""
	}
	return TransactionUnknown, ""
}

// end sends END_TRANSACTION for a half message sent to q: a call for commit and
// rollback, oneway for unknown.
func (tp *TransactionProducer) end(ctx context.Context, q queue, res TransactionResult, remark string) error {
	_, phy, err := message.DecodeOffsetMsgID(res.OffsetMsgID)
	if err != nil {
		return fmt.Errorf("%w: offset message id from %s: %w", ErrTransactionNotEnded, q.addr, err)
	}
	req := protocol.NewRequest(protocol.EndTransaction, &protocol.EndTransactionRequestHeader{
		ProducerGroup: tp.group, TranStateTableOffset: res.QueueOffset, CommitLogOffset: phy,
		CommitOrRollback: res.State.wire(), MsgID: res.MsgID, TransactionID: res.TransactionID,
		BrokerName: q.broker,
	})
	req.Remark = remark
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), tp.c.opts.RequestTimeout)
	defer cancel()
	if res.State.wire() == protocol.TransactionUnknown {
		if err := tp.c.invokeOneway(ctx, q.addr, req); err != nil {
			return fmt.Errorf("%w: %w", ErrTransactionNotEnded, err)
		}
		return nil
	}
	resp, err := tp.c.invoke(ctx, q.addr, req)
	if err != nil {
		var be *BrokerError
		if errors.As(err, &be) && be.Code == protocol.FerryTransactionOffsetConflict {
			return fmt.Errorf("%w: %w", ErrOffsetConflict, err)
		}
		return fmt.Errorf("%w: %w", ErrTransactionNotEnded, err)
	}
	if res.State == TransactionCommit {
		switch {
		case endedOtherwise(resp.Remark):
			return fmt.Errorf("%w: %s answered %q", ErrTransactionEndedOtherwise, q.addr, resp.Remark)
		case resp.Remark == "InProgress": // another END (a check-back answer) is being written
			return fmt.Errorf("%w: %s answered %q", ErrTransactionNotEnded, q.addr, resp.Remark)
		}
	}
	return nil
}

// endedOtherwise reports whether a Ferry broker's remark on a successful END_TRANSACTION
// commit says that the transaction had been rolled back or discarded before (by a
// check-back answer, or after too many checks); RocketMQ brokers do not say.
func endedOtherwise(remark string) bool {
	return remark == "AlreadyRolledBack" || remark == "AlreadyDiscarded"
}

// useBrokers adds addrs to the brokers the producer heartbeats, and sends a heartbeat
// at once to those new to it (to all of them when all is set), so a broker knows the
// group before its first half message and can check it back.
func (tp *TransactionProducer) useBrokers(ctx context.Context, addrs []string, all bool) error {
	tp.mu.Lock()
	var fresh []string
	for _, a := range addrs {
		if !slices.Contains(tp.mu.brokers, a) {
			tp.mu.brokers = append(tp.mu.brokers, a)
			fresh = append(fresh, a)
		}
	}
	tp.mu.Unlock()
	if all {
		fresh = addrs
	}
	var errs []error
	for _, a := range fresh {
		if err := tp.c.heartbeat(ctx, a); err != nil {
			tp.c.log.Debug().Err(err).Str("broker", a).Msg("transaction producer heartbeat failed")
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// transactionBrokers appends to out the brokers the transaction producers have used
// (heartbeat targets).
func (c *Client) transactionBrokers(out []string) []string {
	c.txn.Lock()
	defer c.txn.Unlock()
	for _, tp := range c.txn.producers {
		tp.mu.Lock()
		for _, a := range tp.mu.brokers {
			if !slices.Contains(out, a) {
				out = append(out, a)
			}
		}
		tp.mu.Unlock()
	}
	return out
}

// handleTransactionChecks registers the CHECK_TRANSACTION_STATE handler on rc.
func (c *Client) handleTransactionChecks(rc *signingClient) {
	rc.Handle(int16(protocol.CheckTransactionState), remoting.HandlerFunc(c.onCheckTransactionState))
}

// onCheckTransactionState queues a broker's check for the transaction producer of the
// half message's group. The check is oneway: nothing is answered to it directly.
func (c *Client) onCheckTransactionState(_ context.Context, ch remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var h protocol.CheckTransactionStateRequestHeader
	if err := h.DecodeExt(req.ExtFields); err != nil {
		c.log.Warn().Err(err).Str("broker", ch.RemoteAddr()).Msg("bad CHECK_TRANSACTION_STATE header")
		return nil, nil
	}
	var rec message.Record
	if _, err := rec.Decode(req.Body); err != nil {
		c.log.Warn().Err(err).Str("broker", ch.RemoteAddr()).Msg("bad CHECK_TRANSACTION_STATE body")
		return nil, nil
	}
	// The checker sees the real topic and queue and the current half copy's offsets; a
	// body that does not inflate is shown as stored.
	msg, _ := messageOf(&rec, h.BrokerName)
	group := msg.Property(message.PropertyProducerGroup)
	c.txn.Lock()
	tp := c.txn.producers[group]
	c.txn.Unlock()
	if tp == nil {
		c.log.Debug().Str("group", group).Str("msgID", msg.MsgID).Msg("check for a group without transaction producer; ignored")
		return nil, nil
	}
	tp.queueCheck(checkTask{ch: ch, h: h, msg: msg})
	return nil, nil
}

// queueCheck hands a check to the workers, or drops it when the producer is closed or
// its queue is full.
func (tp *TransactionProducer) queueCheck(t checkTask) {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	if tp.mu.closed {
		return
	}
	select {
	case tp.checks <- t:
	default:
		tp.c.log.Warn().Str("group", tp.group).Str("msgID", t.msg.MsgID).Msg("check queue full; dropping a check")
	}
}

// checkWorker answers queued checks until the producer or the client closes.
func (tp *TransactionProducer) checkWorker() {
	for {
		select {
		case <-tp.stop:
			return
		case <-tp.c.stop:
			return
		case t := <-tp.checks:
			tp.answer(t)
		}
	}
}

// answer asks the checker and sends its outcome, with fromTransactionCheck, on the
// connection the check came on.
func (tp *TransactionProducer) answer(t checkTask) {
	state, remark := tp.runCheck(t.msg)
	txID := t.msg.Property(message.PropertyTransactionID)
	if txID == "" {
		txID = t.h.TransactionID
	}
	if txID == "" {
		txID = t.msg.MsgID
	}
	req := protocol.NewRequest(protocol.EndTransaction, &protocol.EndTransactionRequestHeader{
		ProducerGroup: tp.group, TranStateTableOffset: t.h.TranStateTableOffset,
		CommitLogOffset: t.h.CommitLogOffset, CommitOrRollback: state.wire(),
		FromTransactionCheck: true, MsgID: t.msg.MsgID, TransactionID: txID,
	})
	req.Remark = remark
	ctx, cancel := context.WithTimeout(context.Background(), tp.c.opts.RequestTimeout)
	defer cancel()
	log := tp.c.log.With().Str("group", tp.group).Str("msgID", t.msg.MsgID).Str("broker", t.ch.RemoteAddr()).Logger()
	if state.wire() == protocol.TransactionUnknown {
		if err := t.ch.InvokeOneway(ctx, req); err != nil {
			log.Debug().Err(err).Msg("answering a check failed")
		}
		return
	}
	resp, err := t.ch.Invoke(ctx, req)
	switch {
	case err != nil:
		log.Warn().Err(err).Msg("answering a check failed; the broker will ask again")
	case resp.Code != int16(protocol.Success):
		log.Warn().Int16("code", resp.Code).Str("remark", resp.Remark).Msg("broker refused the answer to a check")
	}
}

// runCheck calls the checker; a panic is TransactionUnknown.
func (tp *TransactionProducer) runCheck(msg *MessageExt) (state TransactionState, remark string) {
	defer func() {
		if r := recover(); r != nil {
			state, remark = TransactionUnknown, fmt.Sprint(r)
			tp.c.log.Warn().Str("group", tp.group).Str("msgID", msg.MsgID).Str("panic", remark).Msg("transaction checker panicked")
		}
	}()
	return tp.checker.Check(tp.ctx, msg), ""
}
