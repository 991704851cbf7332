package transaction

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/protocol"
)

// Offsets inside a transaction (a Ferry extension, like Kafka's sendOffsetsToTransaction)
//
// A multi-message half message may also carry consumer-offset updates of one group, which
// are applied exactly when the transaction commits — never on rollback or discard:
//
//	FERRY_TRAN_OFFSET_GROUP  the consumer group
//	FERRY_TRAN_OFFSETS       "<queue id>,<offset>,<topic>;..." — the next offset the group
//	                         consumes from each queue (topics never contain ';')
//	FERRY_TRAN_OFFSETS_FROM  optional, "<queue id>,<offset>,<topic>;..." — makes the commit
//	                         conditional: each listed queue (one of FERRY_TRAN_OFFSETS's)
//	                         must have exactly that committed offset when the commit is
//	                         decided, -1 meaning "the group has no offset for the queue"
//
// A conditional commit is a compare-and-set of the offsets, atomic with the commit: the
// check, the intent, the items and the offsets are written under one lock (offMu), and an
// offset that a decided but interrupted commit will still set (claims) counts as the
// queue's offset. When a listed offset differs, nothing is written and the transaction is
// rolled back (EndOffsetConflict): it can never commit, since another transaction already
// moved the group past — or away from — the input it consumed. This is what makes a
// consume-transform-produce loop exactly once even when an instance is restarted while
// its predecessor's transaction is still being ended: of two transactions that read the
// same input from the same offset, at most one commits. After a restart, the repair of
// each replayed intent runs before any END_TRANSACTION is served and claims the intent's
// offsets first, so they count even if the repair fails and is retried later; while an
// intent's half message cannot be read its offsets are unknown, and conditional commits
// fail with ErrOffsetsUnsettled (the transaction stays pending) until it can be.
// A commit stores the intent and the items, then calls Options.Offsets (the broker sets
// the offsets and writes its offset file durably), then the op entry: an ended commit
// always has its offsets durable. A kill or failure before the op entry leaves the commit
// to be completed (completeItems), which applies the offsets again — forward only, so
// that a repair never moves back an offset a consumer advanced since. In async-flush mode
// a power loss can lose committed items whose offsets were written; sync flush waits for
// the items first.

// Properties of offsets inside a transaction. Their names and values are part of the
// on-disk format.
const (
	// PropertyOffsetGroup names the consumer group whose offsets a transaction commits.
	PropertyOffsetGroup = "FERRY_TRAN_OFFSET_GROUP"
	// PropertyOffsets lists the offsets a transaction commits (see above).
	PropertyOffsets = "FERRY_TRAN_OFFSETS"
	// PropertyOffsetsFrom lists the offsets a conditional commit requires (see above).
	PropertyOffsetsFrom = "FERRY_TRAN_OFFSETS_FROM"
)

// NoOffset is the From of a conditional OffsetUpdate whose group must have no offset for
// the queue yet.
const NoOffset = -1

// ErrOffsetConflict means a conditional commit found a group's offset other than the
// transaction's From: the transaction was rolled back.
var ErrOffsetConflict = errors.New("transaction: consumer offset moved; the conditional commit was rolled back")

// MaxOffsets bounds the offset updates of one transaction.
const MaxOffsets = 256

// OffsetUpdate is one consumer-offset update carried by a transaction: the next offset the
// group consumes from a queue.
type OffsetUpdate struct {
	Topic   string
	QueueID int32
	Offset  int64
	// Conditional makes the commit require the group's offset of the queue to be From
	// (NoOffset: none) when it is decided.
	Conditional bool
	From        int64
}

// OffsetCommitter applies the offset updates of committed transactions (the broker's
// consumer-offset store). Commit must make them durable before it returns nil. With
// forwardOnly (a repair after a crash or failure) an update that would move an offset
// back is skipped. Offset returns a group's committed offset of a queue (ok false when it
// has none), for conditional commits.
type OffsetCommitter interface {
	CommitOffsets(group string, updates []OffsetUpdate, forwardOnly bool) error
	Offset(group, topic string, queueID int32) (offset int64, ok bool)
}

// Offsets decodes the offset updates of a half message: ok is false (and err nil) when it
// carries none. It never panics.
func Offsets(rec *message.Record) (group string, updates []OffsetUpdate, ok bool, err error) {
	g, hasGroup := message.LookupProperty(rec.Properties, PropertyOffsetGroup)
	v, hasOffsets := message.LookupProperty(rec.Properties, PropertyOffsets)
	if !hasGroup && !hasOffsets {
		return "", nil, false, nil
	}
	if err := protocol.ValidateGroup(string(g)); err != nil {
		return "", nil, true, fmt.Errorf("%w: offset group: %w", ErrBadItems, err)
	}
	if _, multi := message.LookupProperty(rec.Properties, PropertyMultiItems); !multi {
		return "", nil, true, fmt.Errorf("%w: offsets without %s", ErrBadItems, PropertyMultiItems)
	}
	parts := bytes.Split(v, []byte{';'})
	if len(v) == 0 || len(parts) > MaxOffsets {
		return "", nil, true, fmt.Errorf("%w: %d offsets, want 1..%d", ErrBadItems, len(parts), MaxOffsets)
	}
	updates = make([]OffsetUpdate, 0, len(parts))
	for _, p := range parts {
		f := bytes.SplitN(p, []byte{','}, 3)
		if len(f) != 3 {
			return "", nil, true, fmt.Errorf("%w: offset %q", ErrBadItems, p)
		}
		q, err1 := parseNonNegative(f[0])
		o, err2 := parseNonNegative(f[1])
		if err1 != nil || err2 != nil || q > 1<<31-1 {
			return "", nil, true, fmt.Errorf("%w: offset %q", ErrBadItems, p)
		}
		if err := protocol.ValidateTopic(string(f[2])); err != nil {
			return "", nil, true, fmt.Errorf("%w: offset %q: %w", ErrBadItems, p, err)
		}
		updates = append(updates, OffsetUpdate{Topic: string(f[2]), QueueID: int32(q), Offset: o})
	}
	if from, ok := message.LookupProperty(rec.Properties, PropertyOffsetsFrom); ok {
		if err := decodeFrom(from, updates); err != nil {
			return "", nil, true, err
		}
	}
	return string(g), updates, true, nil
}

// decodeFrom sets the From of the updates that the PropertyOffsetsFrom value v lists.
func decodeFrom(v []byte, updates []OffsetUpdate) error {
	parts := bytes.Split(v, []byte{';'})
	if len(v) == 0 || len(parts) > len(updates) {
		return fmt.Errorf("%w: %d conditional offsets for %d updates", ErrBadItems, len(parts), len(updates))
	}
	for _, p := range parts {
		f := bytes.SplitN(p, []byte{','}, 3)
		if len(f) != 3 {
			return fmt.Errorf("%w: conditional offset %q", ErrBadItems, p)
		}
		q, err1 := parseNonNegative(f[0])
		from, err2 := parseNonNegative(bytes.TrimPrefix(f[1], []byte{'-'}))
		if neg := bytes.HasPrefix(f[1], []byte{'-'}); neg {
			from = -from
		}
		if err1 != nil || err2 != nil || q > 1<<31-1 || from < NoOffset {
			return fmt.Errorf("%w: conditional offset %q", ErrBadItems, p)
		}
		i := slices.IndexFunc(updates, func(u OffsetUpdate) bool {
			return u.QueueID == int32(q) && u.Topic == string(f[2])
		})
		if i < 0 || updates[i].Conditional {
			return fmt.Errorf("%w: conditional offset %q names no update, or one twice", ErrBadItems, p)
		}
		updates[i].Conditional, updates[i].From = true, from
	}
	return nil
}

// AppendOffsets appends the PropertyOffsets value of updates to dst.
func AppendOffsets(dst []byte, updates []OffsetUpdate) []byte {
	for i, u := range updates {
		if i > 0 {
			dst = append(dst, ';')
		}
		dst = strconv.AppendInt(dst, int64(u.QueueID), 10)
		dst = append(dst, ',')
		dst = strconv.AppendInt(dst, u.Offset, 10)
		dst = append(dst, ',')
		dst = append(dst, u.Topic...)
	}
	return dst
}

// AppendOffsetsFrom appends the PropertyOffsetsFrom value of the conditional updates of
// updates to dst (nothing when none is conditional).
func AppendOffsetsFrom(dst []byte, updates []OffsetUpdate) []byte {
	first := true
	for _, u := range updates {
		if !u.Conditional {
			continue
		}
		if !first {
			dst = append(dst, ';')
		}
		first = false
		dst = strconv.AppendInt(dst, int64(u.QueueID), 10)
		dst = append(dst, ',')
		dst = strconv.AppendInt(dst, u.From, 10)
		dst = append(dst, ',')
		dst = append(dst, u.Topic...)
	}
	return dst
}

// offsetClaim is what an interrupted commit (decided, offsets not yet applied) will set.
type offsetClaim struct {
	group   string
	updates []OffsetUpdate
}

// ErrOffsetsUnsettled means a conditional commit cannot be checked now: an interrupted
// commit's half message could not be read, so the offsets it will set are unknown. The
// END_TRANSACTION fails (the transaction stays pending) and may be retried.
var ErrOffsetsUnsettled = errors.New("transaction: an interrupted commit's offsets are not known yet")

// checkFrom returns an error wrapping ErrOffsetConflict when a conditional update of
// updates does not find its From: the highest offset an interrupted commit claims for the
// queue or else its committed offset; ErrOffsetsUnsettled while an interrupted commit's
// offsets are unknown. The caller holds offMu.
func (s *Service) checkFrom(group string, updates []OffsetUpdate) error {
	for _, u := range updates {
		if !u.Conditional {
			continue
		}
		if len(s.blind) > 0 {
			return fmt.Errorf("%w (%d interrupted commits)", ErrOffsetsUnsettled, len(s.blind))
		}
		cur, ok := s.claimed(group, u.Topic, u.QueueID)
		if !ok {
			cur, ok = s.opts.Offsets.Offset(group, u.Topic, u.QueueID)
		}
		if !ok {
			cur = NoOffset
		}
		if cur != u.From {
			return fmt.Errorf("%w: group %s, %s queue %d is at %d, the transaction expects %d",
				ErrOffsetConflict, group, u.Topic, u.QueueID, cur, u.From)
		}
	}
	return nil
}

// claimed returns the highest offset the claims set for a queue. The caller holds offMu.
func (s *Service) claimed(group, topic string, queueID int32) (offset int64, ok bool) {
	for _, c := range s.claims {
		if c.group != group {
			continue
		}
		for _, u := range c.updates {
			if u.QueueID == queueID && u.Topic == topic && (!ok || u.Offset > offset) {
				offset, ok = u.Offset, true
			}
		}
	}
	return offset, ok
}

// claim records the offsets of the interrupted commit of transaction origin, so that
// conditional commits see them until they are applied. The caller holds offMu.
func (s *Service) claim(origin int64, group string, updates []OffsetUpdate) {
	if s.claims == nil {
		s.claims = map[int64]offsetClaim{}
	}
	s.claims[origin] = offsetClaim{group: group, updates: updates}
	delete(s.blind, origin)
}

// settle drops what is kept of the interrupted commit of transaction origin: its offsets
// are applied (or can never be). The caller holds offMu.
func (s *Service) settle(origin int64) {
	delete(s.claims, origin)
	delete(s.blind, origin)
}

// blindTo marks the interrupted commit of transaction origin as one whose offsets are
// unknown (its half message is unreadable for now). The caller holds offMu.
func (s *Service) blindTo(origin int64) {
	if s.blind == nil {
		s.blind = map[int64]bool{}
	}
	s.blind[origin] = true
}

// reapplyOffsets applies again, forward only, the consumer offsets of every multi-message
// commit whose intent the replay at Start read — one write per group. An intent means the
// commit was decided, so its offsets belong in the offset store; after a restart they are
// there already (and nothing moves), but a slave promoted to master has only the offsets
// it last copied from its master, while the intents (and, through the repair, the
// committed messages) came with the replicated log. Without this, a pipeline would
// transform again, after a failover, inputs whose outputs the new master holds. A half
// message that is gone or unreadable is skipped with a log line.
func (s *Service) reapplyOffsets() {
	phys := s.replayed
	s.replayed = nil
	if len(phys) == 0 || s.opts.Offsets == nil {
		return
	}
	byGroup := map[string]map[offsetKey]int64{}
	for _, phy := range phys {
		rec, view, err := s.opts.Store.ReadMessage(phy)
		if err != nil {
			if !isGone(err) {
				s.log.Warn().Err(err).Int64("half", phy).Msg("cannot read a replayed commit's half message; its offsets are not re-applied")
			}
			continue
		}
		group, updates, ok, err := Offsets(&rec)
		view.Release()
		if !ok || err != nil {
			continue
		}
		g := byGroup[group]
		if g == nil {
			g = map[offsetKey]int64{}
			byGroup[group] = g
		}
		for _, u := range updates {
			k := offsetKey{group, u.Topic, u.QueueID}
			if cur, seen := g[k]; !seen || u.Offset > cur {
				g[k] = u.Offset
			}
		}
	}
	s.offMu.Lock()
	defer s.offMu.Unlock()
	for group, g := range byGroup {
		updates := make([]OffsetUpdate, 0, len(g))
		for k, off := range g {
			updates = append(updates, OffsetUpdate{Topic: k.topic, QueueID: k.queueID, Offset: off})
		}
		if err := s.opts.Offsets.CommitOffsets(group, updates, true); err != nil {
			s.log.Error().Err(err).Str("group", group).Msg("re-applying the offsets of replayed commits failed")
		}
	}
}

// offsetKey names one consumer offset.
type offsetKey struct {
	group, topic string
	queueID      int32
}

// commitOffsets applies the offset updates of the half record rec, if any.
func (s *Service) commitOffsets(rec *message.Record, forwardOnly bool) error {
	group, updates, ok, err := Offsets(rec)
	if !ok {
		return nil
	}
	if err != nil {
		return err
	}
	if s.opts.Offsets == nil {
		return fmt.Errorf("transaction: no offset committer for the offsets of group %s", group)
	}
	if err := s.opts.Offsets.CommitOffsets(group, updates, forwardOnly); err != nil {
		return fmt.Errorf("transaction: commit offsets of group %s: %w", group, err)
	}
	return nil
}
