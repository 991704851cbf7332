package transaction

import (
	"bytes"
	"fmt"
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
//
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
)

// MaxOffsets bounds the offset updates of one transaction.
const MaxOffsets = 256

// OffsetUpdate is one consumer-offset update carried by a transaction: the next offset the
// group consumes from a queue.
type OffsetUpdate struct {
	Topic   string
	QueueID int32
	Offset  int64
}

// OffsetCommitter applies the offset updates of committed transactions (the broker's
// consumer-offset store). Commit must make them durable before it returns nil. With
// forwardOnly (a repair after a crash or failure) an update that would move an offset
// back is skipped.
type OffsetCommitter interface {
	CommitOffsets(group string, updates []OffsetUpdate, forwardOnly bool) error
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
	return string(g), updates, true, nil
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
