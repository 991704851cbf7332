package transaction

import (
	"context"
	"fmt"
	"strconv"

	"github.com/ferrymq/ferry/commitlog"
	"github.com/ferrymq/ferry/message"
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
func (s *Service) readHalf(ref copyRef) (rec message.Record, view *commitlog.View, gone bool, err error) {
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
