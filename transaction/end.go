package transaction

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"

	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/store"
)

// bookkeeping returns the properties that steer the check-back service, plus extra. A
// producer cannot set them (Prepare strips them) and committed messages do not carry them.
func bookkeeping(extra ...string) []string {
	return append([]string{
		message.PropertyTransactionPreparedQueueOffset,
		PropertyNextCheckTime,
		PropertyFirstStoreTime,
	}, extra...)
}

// Prepare stores a prepared transactional message as a half message: in
// RMQ_SYS_TRANS_HALF_TOPIC queue 0, with REAL_TOPIC / REAL_QID set to rec's topic and
// queue, __transactionId__ set to its UNIQ_KEY, the transaction bits of its sysflag
// cleared to NOT (so the half queue indexes it) and any bookkeeping properties a producer
// might have sent removed. A DELAY level or timer property is kept and honoured when the
// message is committed (see Options.Rewrite). rec itself is not modified. wait is passed
// to the store (sync flush). The result and error are the store's, so the broker can map
// flush statuses to the send response.
func (s *Service) Prepare(rec *message.Record, wait bool) (PrepareResult, error) {
	sp := message.ScanProperties(rec.Properties)
	return s.PrepareScanned(rec, &sp, wait)
}

// PrepareScanned is Prepare for a caller that has already scanned rec.Properties (the
// broker's send path scans once for every decision). When the producer sent none of the
// properties Prepare replaces or strips (the usual case), the half message's properties
// are the original ones with REAL_TOPIC, REAL_QID and __transactionId__ appended, built
// in one pass.
func (s *Service) PrepareScanned(rec *message.Record, sp *message.SendProps, wait bool) (PrepareResult, error) {
	s.mu.Lock()
	closed := s.mu.closed
	s.mu.Unlock()
	if closed {
		return PrepareResult{}, ErrClosed
	}
	if len(sp.ProducerGroup) == 0 {
		return PrepareResult{}, ErrNoProducerGroup
	}
	if t := string(rec.Topic); t == halfTopic || t == opTopic || t == discardTopic {
		return PrepareResult{}, fmt.Errorf("transaction: cannot prepare a message for system topic %s", t)
	}
	if _, multi, err := Items(rec); multi && err != nil {
		return PrepareResult{}, err
	}
	if _, _, ok, err := Offsets(rec); ok && (err != nil || s.opts.Offsets == nil) {
		if err == nil {
			err = fmt.Errorf("%w: this broker takes no offsets in transactions", ErrBadItems)
		}
		return PrepareResult{}, err
	}
	uniq := sp.UniqKey
	var props []byte
	if sp.Bookkeeping == 0 && !bytes.ContainsAny(rec.Topic, "\x01\x02") {
		props = make([]byte, 0, len(rec.Properties)+len(rec.Topic)+len(uniq)+64)
		props = append(props, rec.Properties...)
		props = message.AppendPair(props, message.PropertyRealTopic, rec.Topic)
		props = message.AppendIntPair(props, message.PropertyRealQueueID, int64(rec.QueueID))
		if len(uniq) > 0 {
			props = message.AppendPair(props, message.PropertyTransactionID, uniq)
		}
	} else {
		props = stripProperties(rec.Properties,
			bookkeeping(message.PropertyTransactionCheckTimes, PropertyOpOutcome)...)
		kv := []string{
			message.PropertyRealTopic, string(rec.Topic),
			message.PropertyRealQueueID, strconv.Itoa(int(rec.QueueID)),
		}
		if len(uniq) > 0 {
			kv = append(kv, message.PropertyTransactionID, string(uniq))
		}
		var err error
		if props, err = setProperties(props, kv...); err != nil {
			return PrepareResult{}, fmt.Errorf("transaction: half message properties: %w", err)
		}
	}
	half := *rec
	half.Topic = []byte(halfTopic)
	half.QueueID = queueID
	half.SysFlag = message.WithTransactionType(rec.SysFlag, message.TransactionNotType)
	half.Properties = props
	res, err := s.opts.Store.PutMessage(&half, wait)
	return PrepareResult{Append: res, QueueID: rec.QueueID, TransactionID: string(uniq)}, err
}

// End applies an END_TRANSACTION. It reads the half message at req.CommitLogOffset and
// verifies that it is a half message at req.TranStateTableOffset of req.ProducerGroup. A
// commit stores a commit intent, the message in its real topic and queue (type COMMIT,
// PREPARED TX OFFSET = the quoted commit-log offset, bookkeeping properties removed,
// Options.Rewrite applied) and then an op entry; a rollback stores only the op entry;
// unknown (0) does nothing.
// Any copy's offsets — those of the send response or of any check — name the same
// transaction, and only the first END_TRANSACTION to reach it changes anything: later
// ones get an Already* result. An error means the outcome could not be stored; the
// transaction stays pending and will be checked.
func (s *Service) End(req EndRequest) (EndResult, error) {
	var oc outcome
	switch req.CommitOrRollback {
	case message.TransactionCommitType:
		oc = outcomeCommit
	case message.TransactionRollbackType:
		oc = outcomeRollback
	default:
		return EndIgnored, nil
	}
	if !s.running() {
		return 0, ErrClosed
	}
	rec, view, err := s.opts.Store.ReadMessage(req.CommitLogOffset)
	if err != nil {
		if isGone(err) {
			return EndNotFound, nil
		}
		return 0, fmt.Errorf("transaction: read half message at %d: %w", req.CommitLogOffset, err)
	}
	defer view.Release()
	if string(rec.Topic) != halfTopic || rec.QueueOffset != req.TranStateTableOffset ||
		rec.PhysicalOffset != req.CommitLogOffset {
		return EndIllegalOffsets, nil
	}
	h := parseHalf(&rec)
	if h.bad != "" {
		return EndIllegalOffsets, nil
	}
	if h.group != req.ProducerGroup {
		return EndWrongGroup, nil
	}
	s.mu.Lock()
	if s.mu.closed {
		s.mu.Unlock()
		return 0, ErrClosed
	}
	verdict, was := s.mu.m.beginEnd(h, oc)
	s.mu.Unlock()
	switch verdict {
	case verdictEnded:
		return alreadyResult(was), nil
	case verdictForgotten:
		return EndAlreadyResolved, nil
	case verdictInProgress:
		return EndInProgress, nil
	}
	conflict := false
	if oc == outcomeCommit {
		in, err := s.commit(&rec, h.origin, req.CommitLogOffset)
		if errors.Is(err, ErrOffsetConflict) {
			// It can never commit: roll it back.
			s.log.Warn().Err(err).Int64("txn", h.origin).Str("group", h.group).
				Msg("conditional commit refused; rolling the transaction back")
			oc, conflict, err = outcomeRollback, true, nil
		}
		if errors.Is(err, errCommitInterrupted) {
			// Some items may be stored: the commit is decided, and the verify action
			// completes it.
			s.log.Error().Err(err).Int64("txn", h.origin).Msg("multi-message commit interrupted; completing it in the background")
			s.report(func(m *machine) { m.commitInterrupted(h.origin, in) })
			return 0, err
		}
		if err != nil {
			s.report(func(m *machine) { m.endFailed(h.origin) })
			return 0, err
		}
	}
	op := s.opRecord(oc, opOffsets(h.origin, h.offset))
	_, opErr := s.put(&op)
	if opErr != nil {
		s.log.Error().Err(opErr).Int64("txn", h.origin).Msg("op entry not written; retrying in the background")
	}
	s.report(func(m *machine) { m.endDone(h.origin, oc, opErr == nil) })
	switch {
	case conflict:
		return EndOffsetConflict, nil
	case oc == outcomeCommit:
		return EndCommitted, nil
	}
	return EndRolledBack, nil
}

// alreadyResult maps the outcome of an ended transaction to the answer to a late
// END_TRANSACTION.
func alreadyResult(oc outcome) EndResult {
	switch oc {
	case outcomeCommit:
		return EndAlreadyCommitted
	case outcomeRollback:
		return EndAlreadyRolledBack
	case outcomeDiscard:
		return EndAlreadyDiscarded
	default:
		return EndAlreadyResolved
	}
}

// commit stores the real message of the half record rec of transaction origin, quoted at
// phy, after its commit intent (see format.go): should the broker die before the op entry
// is stored, a restart finds the message through the intent instead of committing it
// again.
//
// A multi-message half record is committed by commitItems; after its intent is stored, an
// error wraps errCommitInterrupted and in is that intent.
func (s *Service) commit(rec *message.Record, origin, phy int64) (in *commitIntent, err error) {
	if items, multi, err := Items(rec); multi {
		if err != nil {
			return nil, fmt.Errorf("transaction: half message at %d: %w", phy, err)
		}
		return s.commitItems(rec, items, origin, phy)
	}
	return nil, s.commitOne(rec, origin, phy)
}

// commitOne is commit for an ordinary (single-message) half record.
func (s *Service) commitOne(rec *message.Record, origin, phy int64) error {
	topic, _ := rec.Property(message.PropertyRealTopic)
	qv, _ := rec.Property(message.PropertyRealQueueID)
	qid, err := parseQueueID(qv)
	if err != nil {
		return fmt.Errorf("transaction: half message at %d: %w", phy, err)
	}
	msg := message.Record{
		Topic:            topic,
		QueueID:          qid,
		Flag:             rec.Flag,
		SysFlag:          message.WithTransactionType(rec.SysFlag, message.TransactionCommitType),
		BornTimestamp:    rec.BornTimestamp,
		BornHost:         rec.BornHost,
		ReconsumeTimes:   rec.ReconsumeTimes,
		PreparedTxOffset: phy,
		Body:             rec.Body,
		Properties: stripProperties(rec.Properties, bookkeeping(
			message.PropertyRealTopic, message.PropertyRealQueueID, message.PropertyTransactionPrepared)...),
	}
	if s.opts.Rewrite != nil {
		if err := s.opts.Rewrite(&msg); err != nil {
			return fmt.Errorf("transaction: rewrite committed message: %w", err)
		}
	}
	in := commitIntent{origin: origin, phy: phy, queueID: msg.QueueID,
		queueOffset: s.opts.Store.MaxOffset(string(msg.Topic), msg.QueueID)}
	intent := s.intentRecord(&in, msg.Topic)
	if _, err := s.put(&intent); err != nil {
		return fmt.Errorf("transaction: commit intent: %w", err)
	}
	// Wait for the flush in sync-flush mode: the op entry written next must never be
	// durable without the message it stands for (the intent before it is durable with it).
	res, err := s.opts.Store.PutMessage(&msg, true)
	if err != nil && res.Count == 0 {
		return fmt.Errorf("transaction: commit to %s: %w", msg.Topic, err)
	}
	if err != nil || res.Status != store.PutOK {
		s.log.Warn().Err(err).Stringer("status", res.Status).Str("topic", string(msg.Topic)).
			Msg("committed message written but not known to be durable")
	}
	return nil
}

// intentRecord builds the commit intent of in for a message to topic (see the format in
// format.go), its body and properties in one allocation.
func (s *Service) intentRecord(in *commitIntent, topic []byte) message.Record {
	const fixed = len(intentBody) + len(message.PropertyTags) + len(OpTag) + len(PropertyOpOutcome) +
		len(OutcomeCommitting) + len(PropertyCommitIntent) + 6 + 4*20 + 4
	buf := make([]byte, 0, fixed+len(topic))
	buf = append(buf, intentBody...)
	body, props := buf[:len(intentBody):len(intentBody)], buf[len(intentBody):]
	props = message.AppendPair(props, message.PropertyTags, []byte(OpTag))
	props = message.AppendPair(props, PropertyOpOutcome, []byte(OutcomeCommitting))
	props = append(props, PropertyCommitIntent...)
	props = append(props, message.NameValueSeparator)
	props = appendIntentValue(props, in, topic)
	props = append(props, message.PropertySeparator)
	if in.items > 0 {
		props = append(props, PropertyIntentItems...)
		props = append(props, message.NameValueSeparator)
		props = appendIntentItems(props, in)
		props = append(props, message.PropertySeparator)
	}
	return message.Record{
		Topic:         []byte(opTopic),
		QueueID:       queueID,
		BornTimestamp: s.opts.Clock().UnixMilli(),
		Body:          body,
		Properties:    props,
	}
}

// opRecord builds an op entry (see the format in format.go).
func (s *Service) opRecord(oc outcome, offsets []int64) message.Record {
	props, _ := message.AppendProperty(nil, message.PropertyTags, OpTag)
	if v := oc.propertyValue(); v != "" {
		props, _ = message.AppendProperty(props, PropertyOpOutcome, v)
	}
	return message.Record{
		Topic:         []byte(opTopic),
		QueueID:       queueID,
		BornTimestamp: s.opts.Clock().UnixMilli(),
		Body:          appendOpBody(nil, offsets),
		Properties:    props,
	}
}
