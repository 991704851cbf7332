package transaction

import (
	"context"
	"fmt"
	"strconv"

	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/store"
)

// do executes one action of the machine.
func (s *Service) do(a action) {
	switch a.kind {
	case actRenew:
		s.doRenew(a)
	case actCheck:
		s.doCheck(a)
	case actDiscard:
		s.doDiscard(a)
	case actVerify:
		s.doVerify(a)
	case actWriteOp:
		op := s.opRecord(a.outcome, a.offsets)
		_, err := s.put(&op)
		if err != nil {
			s.log.Error().Err(err).Int64("txn", a.origin).Msg("op entry not written; will retry")
		}
		s.report(func(m *machine) { m.opWritten(a.origin, err == nil) })
	case actPersist:
		s.latest = a.cursors
	case actLog:
		ev := s.log.Info()
		switch a.level {
		case logWarn:
			ev = s.log.Warn()
		case logError:
			ev = s.log.Error()
		}
		ev.Int64("txn", a.origin).Msg(a.msg)
	}
}

// readHalf reads the half message at ref, checking it is what the machine thinks it is.
// gone reports a record that is not (or no longer) there.
func (s *Service) readHalf(ref copyRef) (rec message.Record, view *store.View, gone bool, err error) {
	rec, view, err = s.opts.Store.ReadMessage(ref.phy)
	if err != nil {
		return rec, nil, isGone(err), err
	}
	if string(rec.Topic) != halfTopic || rec.QueueOffset != ref.offset {
		view.Release()
		return message.Record{}, nil, true, fmt.Errorf("transaction: record at %d is not half-queue offset %d",
			ref.phy, ref.offset)
	}
	return rec, view, false, nil
}

// doRenew appends a copy of a half message with new bookkeeping properties.
func (s *Service) doRenew(a action) {
	rec, view, gone, err := s.readHalf(a.copy)
	if err != nil {
		s.log.Error().Err(err).Int64("txn", a.origin).Msg("cannot read half message to re-append it")
		s.report(func(m *machine) { m.renewFailed(a.origin, gone) })
		return
	}
	props, err := setProperties(rec.Properties,
		message.PropertyTransactionCheckTimes, strconv.Itoa(a.label),
		message.PropertyTransactionPreparedQueueOffset, strconv.FormatInt(a.origin, 10),
		PropertyNextCheckTime, strconv.FormatInt(a.nextDue, 10),
		PropertyFirstStoreTime, strconv.FormatInt(a.firstStore, 10))
	if err == nil {
		// The body and sysflag are re-put exactly as stored (a compressed body stays
		// compressed and flagged so), unlike RocketMQ #1375.
		cp := message.Record{
			Topic: []byte(halfTopic), QueueID: queueID, Flag: rec.Flag, SysFlag: rec.SysFlag,
			BornTimestamp: rec.BornTimestamp, BornHost: rec.BornHost, ReconsumeTimes: rec.ReconsumeTimes,
			Body: rec.Body, Properties: props,
		}
		if _, err = s.put(&cp); err == nil {
			view.Release()
			h := parseHalf(&cp)
			s.report(func(m *machine) { m.renewed(a.origin, h) })
			return
		}
	}
	view.Release()
	s.log.Error().Err(err).Int64("txn", a.origin).Msg("cannot re-append half message; will retry")
	s.report(func(m *machine) { m.renewFailed(a.origin, false) })
}

// doCheck sends one check to the producer group.
func (s *Service) doCheck(a action) {
	rec, view, gone, err := s.readHalf(a.copy)
	if err != nil {
		s.log.Error().Err(err).Bool("gone", gone).Int64("txn", a.origin).Msg("cannot read half message to check it")
		s.report(func(m *machine) { m.checkDone(a.origin, false) })
		return
	}
	req, err := checkRequest(&rec, a.label)
	view.Release()
	if err == nil {
		ctx, cancel := context.WithTimeout(s.ctx, s.opts.CheckTimeout)
		err = s.opts.Checker.Check(ctx, a.group, req)
		cancel()
	}
	if err != nil {
		s.log.Warn().Err(err).Int64("txn", a.origin).Str("group", a.group).Str("uniq", a.uniq).
			Msg("transaction check not delivered")
	}
	s.report(func(m *machine) { m.checkDone(a.origin, err == nil) })
}

// checkRequest builds the CHECK_TRANSACTION_STATE of the half record rec.
func checkRequest(rec *message.Record, times int) (CheckRequest, error) {
	uniq, _ := rec.Property(message.PropertyUniqKey)
	txID, ok := rec.Property(message.PropertyTransactionID)
	if !ok || len(txID) == 0 {
		txID = uniq
	}
	realTopic, _ := rec.Property(message.PropertyRealTopic)
	qv, _ := rec.Property(message.PropertyRealQueueID)
	qid, err := parseQueueID(qv)
	if err != nil {
		return CheckRequest{}, err
	}
	body := *rec
	body.Topic, body.QueueID = realTopic, qid
	b, err := body.AppendTo(nil)
	if err != nil {
		return CheckRequest{}, fmt.Errorf("transaction: encode check body: %w", err)
	}
	return CheckRequest{
		TranStateTableOffset: rec.QueueOffset,
		CommitLogOffset:      rec.PhysicalOffset,
		MsgID:                string(uniq),
		TransactionID:        string(txID),
		OffsetMsgID:          rec.OffsetMsgID(),
		Topic:                halfTopic,
		CheckTimes:           times,
		Body:                 b,
	}, nil
}

// doVerify looks for the committed message of a replayed commit intent.
func (s *Service) doVerify(a action) {
	find := s.findCommit
	if a.intent.items > 0 {
		find = s.completeItems
	}
	found, err := find(a.intent)
	if err != nil {
		s.log.Error().Err(err).Int64("txn", a.origin).
			Msg("cannot tell whether an interrupted commit was stored; will retry")
		s.report(func(m *machine) { m.verifyFailed(a.origin) })
		return
	}
	s.report(func(m *machine) { m.verified(a.origin, found) })
}

// findCommit reports whether the committed message announced by the commit intent in is
// stored: a COMMIT record whose PREPARED TX OFFSET is in.phy, in the intent's queue at or
// after its queue offset.
func (s *Service) findCommit(in *commitIntent) (bool, error) {
	for from := in.queueOffset; ; {
		r, err := s.opts.Store.GetMessages(in.topic, in.queueID, from, s.opts.ReadBatch, 8<<20, nil)
		if err != nil {
			return false, fmt.Errorf("transaction: read %s/%d at %d: %w", in.topic, in.queueID, from, err)
		}
		found := false
		for _, b := range r.Messages {
			rec, _, err := message.DecodeRecord(b)
			if err == nil && rec.PreparedTxOffset == in.phy &&
				message.TransactionType(rec.SysFlag) == message.TransactionCommitType {
				found = true
				break
			}
		}
		next, status := r.NextBeginOffset, r.Status
		r.Release()
		switch {
		case found:
			return true, nil
		case status != store.Found && status != store.NoMatchedMessage && status != store.OffsetTooSmall,
			next <= from:
			return false, nil // read to the end of the queue
		}
		from = next
	}
}

// doDiscard moves a transaction that ran out of checks (or time) to the discard topic.
func (s *Service) doDiscard(a action) {
	rec, view, gone, err := s.readHalf(a.copy)
	if err != nil {
		s.log.Error().Err(err).Int64("txn", a.origin).Msg("cannot read half message to discard it")
		if gone {
			s.report(func(m *machine) { m.discardLost(a.origin) })
		} else {
			s.report(func(m *machine) { m.discardDone(a.origin, false, false) })
		}
		return
	}
	d := message.Record{
		Topic: []byte(discardTopic), QueueID: queueID, Flag: rec.Flag, SysFlag: rec.SysFlag,
		BornTimestamp: rec.BornTimestamp, BornHost: rec.BornHost, ReconsumeTimes: rec.ReconsumeTimes,
		Body: rec.Body, Properties: rec.Properties,
	}
	res, err := s.put(&d)
	view.Release()
	if err != nil {
		s.log.Error().Err(err).Int64("txn", a.origin).Msg("cannot write half message to the discard topic; will retry")
		s.report(func(m *machine) { m.discardDone(a.origin, false, false) })
		return
	}
	op := s.opRecord(outcomeDiscard, a.offsets)
	_, opErr := s.put(&op)
	s.log.Warn().Err(opErr).Int64("txn", a.origin).Str("group", a.group).Str("uniq", a.uniq).
		Int("checks", a.label).Str("topic", discardTopic).Int64("queueOffset", res.QueueOffset).
		Int64("commitLogOffset", res.PhysicalOffset).Msg("transaction discarded")
	s.report(func(m *machine) { m.discardDone(a.origin, true, opErr == nil) })
}
