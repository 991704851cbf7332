package transaction

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"

	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/store"
)

// Multi-message transactions (a Ferry extension; RocketMQ has single-message ones only)
//
// A producer that wants several messages committed or rolled back together sends ONE
// half message whose body is a batch of them and which carries PropertyMultiItems:
//
//	half message   ordinary prepared SEND_MESSAGE_V2 (TRAN_MSG, PGROUP, UNIQ_KEY = the
//	               transaction id); topic and queue those of item 0; sysflag not
//	               compressed
//	FERRY_TRAN_ITEMS  "<n>", the number of items, 1..MaxItems
//	body           the items in the SEND_BATCH_MESSAGE item layout (protocol/batch.go):
//	               flag, body, properties per item; each item's properties carry
//	               REAL_TOPIC and REAL_QID naming where the item goes
//
// Everything that works on one half message — Prepare, renewals, checks, the discard,
// rollback — works on it unchanged, so the producer is checked once per transaction, not
// once per message. A commit writes the commit intent (whose FERRY_TRAN_INTENT names item
// 0's destination, as for a single message, and whose FERRY_TRAN_INTENT_ITEMS lists every
// destination) and then one committed message per item, in item order:
//
//	committed item  topic REAL_TOPIC, queue REAL_QID (then Options.Rewrite), type COMMIT,
//	                PREPARED TX OFFSET = the quoted commit-log offset, the item's flag,
//	                body and properties (REAL_TOPIC, REAL_QID, TRAN_MSG and bookkeeping
//	                removed) plus FERRY_TRAN_ITEM = "<index>"
//	FERRY_TRAN_INTENT_ITEMS  "<n>;<queue id>,<queue offset>,<topic>;..." — n, then each
//	                distinct destination of the items with its queue's max offset before
//	                the commit began (topics never contain ';')
//
// Crash atomicity: an item is identified by (PREPARED TX OFFSET, FERRY_TRAN_ITEM), so
// whether it is stored can be decided after a restart by reading its destination from
// the intent's offset. Once the intent is stored the commit is decided: whenever the op
// entry is missing — the broker was killed while writing items, or a write failed — the
// verify action (doVerify) re-reads the half message, finds which items are stored and
// writes only the missing ones, then the op entry is written. Repeated kills during that
// repair find more items each time and never write one twice. Before the intent is
// stored nothing is visible and the transaction is simply pending.

// Properties of multi-message transactions. Their names and values are part of the
// on-disk format.
const (
	// PropertyMultiItems marks a multi-message half message: its value is the number of
	// items in its body.
	PropertyMultiItems = "FERRY_TRAN_ITEMS"
	// PropertyItemIndex is set on each committed item of a multi-message transaction: its
	// index in the half message's body.
	PropertyItemIndex = "FERRY_TRAN_ITEM"
	// PropertyIntentItems is set on the commit intent of a multi-message transaction: the
	// destinations of its items (see above).
	PropertyIntentItems = "FERRY_TRAN_INTENT_ITEMS"
)

// MaxItems bounds the messages of one multi-message transaction. It keeps the commit
// intent (which lists each distinct destination) well within the 32 KiB property limit
// and the commit's burst of writes short; the half message as a whole must also fit the
// broker's maximum message size.
const MaxItems = 128

// ErrBadItems means a multi-message half message is malformed: a bad count, batch body,
// item destination, or a compressed body.
var ErrBadItems = errors.New("transaction: bad multi-message half message")

// Item is one message of a multi-message half message.
type Item struct {
	Topic      string
	QueueID    int32
	Flag       int32
	Body       []byte // aliases the half message's body
	Properties []byte // aliases the half message's body; REAL_TOPIC and REAL_QID included
}

// Items decodes the items of a multi-message half message. ok is false (and err nil) for
// an ordinary half message. The brokers uses it to check each item's topic before the
// half message is stored. It never panics.
func Items(rec *message.Record) (items []Item, ok bool, err error) {
	v, ok := message.LookupProperty(rec.Properties, PropertyMultiItems)
	if !ok {
		return nil, false, nil
	}
	n, err := parseNonNegative(v)
	if err != nil || n < 1 || n > MaxItems {
		return nil, true, fmt.Errorf("%w: %s=%q, want 1..%d", ErrBadItems, PropertyMultiItems, v, MaxItems)
	}
	if rec.SysFlag&message.SysFlagCompressed != 0 {
		return nil, true, fmt.Errorf("%w: compressed body", ErrBadItems)
	}
	items = make([]Item, 0, n)
	r := protocol.NewBatchReader(rec.Body)
	for r.Next() {
		it := r.Item()
		if len(items) == int(n) {
			return nil, true, fmt.Errorf("%w: more than %d items", ErrBadItems, n)
		}
		topic, _ := message.LookupProperty(it.Properties, message.PropertyRealTopic)
		if err := protocol.ValidateTopic(string(topic)); err != nil {
			return nil, true, fmt.Errorf("%w: item %d: %w", ErrBadItems, len(items), err)
		}
		if protocol.IsSystemTopic(string(topic)) {
			return nil, true, fmt.Errorf("%w: item %d: system topic %s", ErrBadItems, len(items), topic)
		}
		qv, _ := message.LookupProperty(it.Properties, message.PropertyRealQueueID)
		qid, err := parseQueueID(qv)
		if err != nil {
			return nil, true, fmt.Errorf("%w: item %d: %w", ErrBadItems, len(items), err)
		}
		items = append(items, Item{Topic: string(topic), QueueID: qid, Flag: it.Flag, Body: it.Body,
			Properties: it.Properties})
	}
	if err := r.Err(); err != nil {
		return nil, true, fmt.Errorf("%w: %w", ErrBadItems, err)
	}
	if len(items) != int(n) {
		return nil, true, fmt.Errorf("%w: %d items, %s says %d", ErrBadItems, len(items), PropertyMultiItems, n)
	}
	return items, true, nil
}

// itemRecords builds the committed messages of the items of the half record rec quoted
// at phy (Options.Rewrite applied).
func (s *Service) itemRecords(rec *message.Record, items []Item, phy int64) ([]message.Record, error) {
	strip := bookkeeping(message.PropertyRealTopic, message.PropertyRealQueueID, message.PropertyTransactionPrepared,
		message.PropertyTransactionCheckTimes, PropertyItemIndex, PropertyMultiItems, PropertyOpOutcome)
	msgs := make([]message.Record, len(items))
	for i := range items {
		it := &items[i]
		props := message.AppendPair(stripProperties(it.Properties, strip...), PropertyItemIndex,
			strconv.AppendInt(nil, int64(i), 10))
		msgs[i] = message.Record{
			Topic:            []byte(it.Topic),
			QueueID:          it.QueueID,
			Flag:             it.Flag,
			SysFlag:          message.WithTransactionType(rec.SysFlag, message.TransactionCommitType),
			BornTimestamp:    rec.BornTimestamp,
			BornHost:         rec.BornHost,
			ReconsumeTimes:   rec.ReconsumeTimes,
			PreparedTxOffset: phy,
			Body:             it.Body,
			Properties:       props,
		}
		if s.opts.Rewrite != nil {
			if err := s.opts.Rewrite(&msgs[i]); err != nil {
				return nil, fmt.Errorf("transaction: rewrite committed item %d: %w", i, err)
			}
		}
	}
	return msgs, nil
}

// destination is where committed items go: a queue, read from offset when verifying.
type destination struct {
	topic   string
	queueID int32
	offset  int64
}

// destinations returns the distinct destinations of msgs with their queues' current max
// offsets.
func (s *Service) destinations(msgs []message.Record) []destination {
	var ds []destination
	for i := range msgs {
		m := &msgs[i]
		seen := false
		for _, d := range ds {
			if d.queueID == m.QueueID && d.topic == string(m.Topic) {
				seen = true
				break
			}
		}
		if !seen {
			ds = append(ds, destination{topic: string(m.Topic), queueID: m.QueueID,
				offset: s.opts.Store.MaxOffset(string(m.Topic), m.QueueID)})
		}
	}
	return ds
}

// errCommitInterrupted means a multi-message commit stored its intent but not every item;
// the verify action completes it.
var errCommitInterrupted = errors.New("transaction: multi-message commit interrupted after its intent")

// commitItems is commit for a multi-message half record. After the intent is stored an
// error wraps errCommitInterrupted and in is the stored intent.
//
// A transaction with offsets is committed under offMu; one with conditional offsets is
// checked first and, on a conflict, writes nothing and returns an error wrapping
// ErrOffsetConflict. An interrupted commit claims its offsets until completeItems applies
// them.
func (s *Service) commitItems(rec *message.Record, items []Item, origin, phy int64) (in *commitIntent, err error) {
	msgs, err := s.itemRecords(rec, items, phy)
	if err != nil {
		return nil, err
	}
	group, updates, withOffsets, err := Offsets(rec)
	if withOffsets {
		if err != nil {
			return nil, fmt.Errorf("transaction: half message at %d: %w", phy, err)
		}
		if s.opts.Offsets == nil {
			return nil, fmt.Errorf("transaction: no offset committer for the offsets of group %s", group)
		}
		s.offMu.Lock()
		defer s.offMu.Unlock()
		if err := s.checkFrom(group, updates); err != nil {
			return nil, err
		}
		defer func() {
			if errors.Is(err, errCommitInterrupted) {
				s.claim(origin, group, updates)
			}
		}()
	}
	ds := s.destinations(msgs)
	in = &commitIntent{origin: origin, phy: phy, queueID: ds[0].queueID, queueOffset: ds[0].offset,
		topic: ds[0].topic, items: len(items), dests: ds}
	intent := s.intentRecord(in, []byte(ds[0].topic))
	if _, err := s.put(&intent); err != nil {
		return nil, fmt.Errorf("transaction: commit intent: %w", err)
	}
	if err := s.putItems(msgs, nil); err != nil {
		return in, fmt.Errorf("%w: %w", errCommitInterrupted, err)
	}
	if err := s.commitOffsets(rec, false); err != nil {
		return in, fmt.Errorf("%w: %w", errCommitInterrupted, err)
	}
	return in, nil
}

// putItems stores the items of msgs whose index is not in have, in order, waiting for the
// flush of the last one in sync-flush mode (the op entry written next must never be
// durable without them; the log is flushed in order).
func (s *Service) putItems(msgs []message.Record, have map[int]bool) error {
	last := -1
	for i := range msgs {
		if !have[i] {
			last = i
		}
	}
	for i := range msgs {
		if have[i] {
			continue
		}
		res, err := s.opts.Store.PutMessage(&msgs[i], i == last)
		if err != nil && res.Count == 0 {
			return fmt.Errorf("transaction: commit item %d to %s: %w", i, msgs[i].Topic, err)
		}
		if err != nil || res.Status != store.PutOK {
			s.log.Warn().Err(err).Stringer("status", res.Status).Str("topic", string(msgs[i].Topic)).
				Msg("committed item written but not known to be durable")
		}
	}
	return nil
}

// completeItems finishes the multi-message commit announced by the intent in: it reads
// the half message at in.phy, finds which items are stored and writes the missing ones.
// committed reports whether all items are stored now (or, if the half message is gone,
// whether any was).
//
// Its consumer offsets are claimed (offsets.go) before anything is written, so that a
// conditional commit served meanwhile — also after a restart whose first repair
// failed — counts them; while the half message cannot be read they are unknown and
// conditional commits wait (ErrOffsetsUnsettled).
func (s *Service) completeItems(in *commitIntent) (committed bool, err error) {
	rec, view, err := s.opts.Store.ReadMessage(in.phy)
	if err != nil && !isGone(err) {
		s.offMu.Lock()
		if _, known := s.claims[in.origin]; !known {
			s.blindTo(in.origin)
		}
		s.offMu.Unlock()
		return false, fmt.Errorf("transaction: read multi-message half at %d: %w", in.phy, err)
	}
	var items []Item
	if err == nil {
		defer view.Release()
		if string(rec.Topic) != halfTopic {
			err = fmt.Errorf("record at %d is not a half message", in.phy)
		} else {
			items, _, err = Items(&rec)
		}
	}
	if err == nil {
		if group, updates, ok, oerr := Offsets(&rec); ok && oerr == nil {
			s.offMu.Lock()
			s.claim(in.origin, group, updates)
			s.offMu.Unlock()
		}
	}
	have, ferr := s.findItems(in)
	if ferr != nil {
		return false, ferr
	}
	if err != nil || len(items) == 0 {
		s.log.Error().Err(err).Int64("txn", in.origin).Int("stored", len(have)).
			Msg("half message of an interrupted multi-message commit is unreadable; cannot complete it " +
				"(nor apply the consumer offsets it carries)")
		s.offMu.Lock()
		s.settle(in.origin)
		s.offMu.Unlock()
		return len(have) > 0, nil
	}
	if len(have) < len(items) {
		msgs, err := s.itemRecords(&rec, items, in.phy)
		if err != nil {
			return false, err
		}
		s.log.Warn().Int64("txn", in.origin).Int("items", len(items)).Int("stored", len(have)).
			Msg("completing an interrupted multi-message commit")
		if err := s.putItems(msgs, have); err != nil {
			return false, err
		}
	}
	s.offMu.Lock()
	defer s.offMu.Unlock()
	if err := s.commitOffsets(&rec, true); err != nil {
		return false, err
	}
	s.settle(in.origin)
	return true, nil
}

// findItems returns the indexes of the committed items of the intent in that are stored:
// COMMIT records with PREPARED TX OFFSET in.phy and a FERRY_TRAN_ITEM, in the intent's
// destinations at or after their offsets.
func (s *Service) findItems(in *commitIntent) (map[int]bool, error) {
	have := map[int]bool{}
	for _, d := range in.dests {
		err := s.scanQueue(d.topic, d.queueID, d.offset, func(rec *message.Record) bool {
			if rec.PreparedTxOffset != in.phy ||
				message.TransactionType(rec.SysFlag) != message.TransactionCommitType {
				return false
			}
			if v, ok := rec.Property(PropertyItemIndex); ok {
				if i, err := parseNonNegative(v); err == nil && i < int64(in.items) {
					have[int(i)] = true
				}
			}
			return len(have) == in.items
		})
		if err != nil {
			return nil, err
		}
	}
	return have, nil
}

// scanQueue calls f on each decodable record of topic/queueID from offset to the end of
// the queue, until f returns true.
func (s *Service) scanQueue(topic string, queueID int32, from int64, f func(rec *message.Record) bool) error {
	for {
		r, err := s.opts.Store.GetMessages(topic, queueID, from, s.opts.ReadBatch, 8<<20, nil)
		if err != nil {
			return fmt.Errorf("transaction: read %s/%d at %d: %w", topic, queueID, from, err)
		}
		stop := false
		for _, b := range r.Messages {
			if rec, _, err := message.DecodeRecord(b); err == nil && f(&rec) {
				stop = true
				break
			}
		}
		next, status := r.NextBeginOffset, r.Status
		r.Release()
		if stop || (status != store.Found && status != store.NoMatchedMessage && status != store.OffsetTooSmall) ||
			next <= from {
			return nil
		}
		from = next
	}
}

// appendIntentItems appends the PropertyIntentItems value of in to dst.
func appendIntentItems(dst []byte, in *commitIntent) []byte {
	dst = strconv.AppendInt(dst, int64(in.items), 10)
	for _, d := range in.dests {
		dst = append(dst, ';')
		dst = strconv.AppendInt(dst, int64(d.queueID), 10)
		dst = append(dst, ',')
		dst = strconv.AppendInt(dst, d.offset, 10)
		dst = append(dst, ',')
		dst = append(dst, d.topic...)
	}
	return dst
}

// decodeIntentItems decodes a PropertyIntentItems value into in. It never panics.
func decodeIntentItems(v []byte, in *commitIntent) error {
	parts := bytes.Split(v, []byte{';'})
	n, err := parseNonNegative(parts[0])
	if err != nil || n < 1 || n > MaxItems || len(parts) < 2 || len(parts)-1 > int(n) {
		return fmt.Errorf("%w: %s %q", errBadOpEntry, PropertyIntentItems, v)
	}
	in.items = int(n)
	for _, p := range parts[1:] {
		f := bytes.SplitN(p, []byte{','}, 3)
		if len(f) != 3 || len(f[2]) == 0 {
			return fmt.Errorf("%w: %s %q: bad destination %q", errBadOpEntry, PropertyIntentItems, v, p)
		}
		q, err1 := parseNonNegative(f[0])
		o, err2 := parseNonNegative(f[1])
		if err1 != nil || err2 != nil || q > 1<<31-1 {
			return fmt.Errorf("%w: %s %q: bad destination %q", errBadOpEntry, PropertyIntentItems, v, p)
		}
		in.dests = append(in.dests, destination{topic: string(f[2]), queueID: int32(q), offset: o})
	}
	return nil
}
