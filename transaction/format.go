package transaction

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"strconv"

	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/protocol"
)

// Ferry's own properties on re-appended half messages ("copies"). They are private
// bookkeeping: Prepare strips them from producers' messages and End strips them from
// committed messages. Their names and decimal values are part of the on-disk format.
const (
	// PropertyNextCheckTime is the Unix-ms time at which the transaction of a copy is due
	// for its next check. Absent on the original half message (its first check is due
	// TransactionTimeout or CHECK_IMMUNITY_TIME_IN_SECONDS after it was stored).
	PropertyNextCheckTime = "FERRY_TRAN_NEXT_CHECK_MS"
	// PropertyFirstStoreTime is the Unix-ms store time of the original half message,
	// carried by every copy so the transaction's age survives re-appends.
	PropertyFirstStoreTime = "FERRY_TRAN_FIRST_STORE_MS"
	// PropertyOpOutcome is set on op entries: OutcomeCommit, OutcomeRollback or
	// OutcomeDiscard; OutcomeCommitting marks a commit intent. Op entries written by
	// RocketMQ lack it; they resolve a transaction without saying how.
	PropertyOpOutcome = "FERRY_TRAN_OUTCOME"
	// PropertyCommitIntent is set on commit intents: where the committed message goes
	// (see "Commit intents" below).
	PropertyCommitIntent = "FERRY_TRAN_INTENT"
)

// Values of PropertyOpOutcome.
const (
	OutcomeCommit   = "COMMIT"
	OutcomeRollback = "ROLLBACK"
	OutcomeDiscard  = "DISCARD"
	// OutcomeCommitting marks a commit intent: a commit has begun. It ends nothing.
	OutcomeCommitting = "COMMITTING"
)

// OpTag is the tag of op entries (RocketMQ's REMOVE_TAG).
const OpTag = "d"

// The queues the service uses: the half topic and the op topic have one queue, id 0.
const (
	halfTopic    = protocol.TransHalfTopic
	opTopic      = protocol.TransOpHalfTopic
	discardTopic = protocol.TransCheckMaxTimeTopic
	queueID      = int32(0)
)

// outcome is how a transaction ended.
type outcome uint8

const (
	outcomeNone     outcome = iota // not ended
	outcomeCommit                  // committed by END_TRANSACTION
	outcomeRollback                // rolled back by END_TRANSACTION
	outcomeDiscard                 // given up after MaxChecks or MaxAge (or the half was lost)
	outcomeResolved                // ended by an op entry that does not say how
)

func (o outcome) String() string {
	switch o {
	case outcomeCommit:
		return "commit"
	case outcomeRollback:
		return "rollback"
	case outcomeDiscard:
		return "discard"
	case outcomeResolved:
		return "resolved"
	default:
		return "none"
	}
}

// propertyValue is the PropertyOpOutcome value of o ("" for none and resolved).
func (o outcome) propertyValue() string {
	switch o {
	case outcomeCommit:
		return OutcomeCommit
	case outcomeRollback:
		return OutcomeRollback
	case outcomeDiscard:
		return OutcomeDiscard
	default:
		return ""
	}
}

// Op entries
//
// An op entry is an ordinary record in RMQ_SYS_TRANS_OP_HALF_TOPIC queue 0 that ends one
// transaction for good:
//
//	topic       RMQ_SYS_TRANS_OP_HALF_TOPIC, queue 0, sysflag 0
//	TAGS        "d"
//	FERRY_TRAN_OUTCOME  COMMIT | ROLLBACK | DISCARD   (absent in RocketMQ-written entries)
//	body        ASCII half-queue offsets, decimal, separated by ','
//	            e.g. "17" or "17,42"
//
// Ferry writes the transaction's origin (the queue offset of the half message as first
// stored) first, then the copy that was resolved when it differs. RocketMQ 4.x writes one
// offset and 5.x a comma-separated list with a trailing comma; both decode here. Every
// listed offset ends the transaction whose origin it is, so RocketMQ-written entries (whose
// renewed copies are transactions of their own) and Ferry's mean the same thing to both
// brokers. Empty items are skipped; anything else that is not a non-negative decimal int64
// makes the entry invalid. This layout is part of the on-disk format. The op queue also
// holds commit intents (FERRY_TRAN_OUTCOME COMMITTING, see below), which end nothing.

// maxOpOffsets bounds the offsets one op entry may list (RocketMQ 5.x flushes its batch at
// 4 KiB of text, fewer than 4096 offsets).
const maxOpOffsets = 4096

// errBadOpEntry reports an op entry that does not decode.
var errBadOpEntry = errors.New("transaction: bad op entry")

// opEntry is a decoded op entry, or a commit intent (intent set, offsets its origin,
// outcome none).
type opEntry struct {
	offsets []int64
	outcome outcome
	intent  *commitIntent
}

// appendOpBody appends the body of an op entry listing offsets to dst.
func appendOpBody(dst []byte, offsets []int64) []byte {
	for i, o := range offsets {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = strconv.AppendInt(dst, o, 10)
	}
	return dst
}

// decodeOpEntry decodes an op entry from its body and raw properties. It never panics.
func decodeOpEntry(body, props []byte) (opEntry, error) {
	var e opEntry
	if tag, _ := message.LookupProperty(props, message.PropertyTags); string(tag) != OpTag {
		return e, fmt.Errorf("%w: tag %q is not %q", errBadOpEntry, tag, OpTag)
	}
	switch v, _ := message.LookupProperty(props, PropertyOpOutcome); string(v) {
	case OutcomeCommitting:
		in, err := decodeIntent(props)
		if err != nil {
			return opEntry{}, err
		}
		return opEntry{offsets: []int64{in.origin}, intent: &in}, nil
	case OutcomeCommit:
		e.outcome = outcomeCommit
	case OutcomeRollback:
		e.outcome = outcomeRollback
	case OutcomeDiscard:
		e.outcome = outcomeDiscard
	default:
		e.outcome = outcomeResolved
	}
	start := 0
	for i := 0; i <= len(body); i++ {
		if i < len(body) && body[i] != ',' {
			continue
		}
		item := body[start:i]
		start = i + 1
		if len(item) == 0 {
			continue
		}
		v, err := parseNonNegative(item)
		if err != nil {
			return opEntry{}, fmt.Errorf("%w: offset %q: %w", errBadOpEntry, item, err)
		}
		if len(e.offsets) == maxOpOffsets {
			return opEntry{}, fmt.Errorf("%w: more than %d offsets", errBadOpEntry, maxOpOffsets)
		}
		e.offsets = append(e.offsets, v)
	}
	if len(e.offsets) == 0 {
		return opEntry{}, fmt.Errorf("%w: no offsets", errBadOpEntry)
	}
	return e, nil
}

// Commit intents
//
// END_TRANSACTION with commit writes three records: a commit intent, the committed
// message, then the op entry. Without the intent, a broker killed between the committed
// message and its op entry would find the transaction pending after the restart, check it
// again and commit it a second time (RocketMQ's window). A commit intent is a record in
// the op queue written just before the committed message:
//
//	topic       RMQ_SYS_TRANS_OP_HALF_TOPIC, queue 0, sysflag 0
//	TAGS        "d"
//	FERRY_TRAN_OUTCOME  COMMITTING
//	FERRY_TRAN_INTENT   "<origin>,<phy>,<queue id>,<queue offset>,<topic>"
//	                    e.g. "17,40960,3,118,Orders"
//	body        "intent"
//	FERRY_TRAN_INTENT_ITEMS  only for a multi-message transaction: every destination
//	                         (see multi.go)
//
// origin names the transaction; phy is the commit-log offset END_TRANSACTION quoted, which
// the committed message carries as its PREPARED TX OFFSET; topic and queue id are where
// the committed message is stored (after Options.Rewrite), and queue offset is that
// queue's max offset before it was stored, so the message, if stored, is at or after it.
// The numbers are non-negative decimal int64 (the queue id an int32); the topic is the
// rest of the value, non-empty. A restart that replays an intent of a transaction no op
// entry ended reads that queue from that offset for a COMMIT record with that PREPARED TX
// OFFSET: found, the transaction is committed and its op entry is written; not found, it
// is pending. The commit log keeps a prefix after a crash, so a stored committed message
// implies its stored intent. The body names no half message: RocketMQ, which reads only
// the body (and parses what is not a number as -1), counts the entry as done and resolves
// nothing, and Ferry before intents skips it as undecodable. (It is not empty: commit-log
// recovery, decoding into a reused message.Record, keeps the previous record's body for
// an empty one, fails its CRC and truncates the log there.) This layout is part of the
// on-disk format.

// intentBody is the body of a commit intent.
const intentBody = "intent"

// commitIntent is a decoded commit intent.
type commitIntent struct {
	origin      int64  // the transaction
	phy         int64  // the committed message's PREPARED TX OFFSET
	queueID     int32  // the committed message's queue ...
	queueOffset int64  // ... at or after this offset
	topic       string // ... of this topic
	// Multi-message transactions only (PropertyIntentItems, see multi.go): the number of
	// items and every destination; 0 and nil for a single message.
	items int
	dests []destination
}

// appendIntentValue appends the PropertyCommitIntent value of in (topic given as bytes,
// in.topic is not read) to dst.
func appendIntentValue(dst []byte, in *commitIntent, topic []byte) []byte {
	dst = strconv.AppendInt(dst, in.origin, 10)
	dst = append(dst, ',')
	dst = strconv.AppendInt(dst, in.phy, 10)
	dst = append(dst, ',')
	dst = strconv.AppendInt(dst, int64(in.queueID), 10)
	dst = append(dst, ',')
	dst = strconv.AppendInt(dst, in.queueOffset, 10)
	dst = append(dst, ',')
	return append(dst, topic...)
}

// decodeIntent decodes the PropertyCommitIntent of a commit intent's properties. It never
// panics.
func decodeIntent(props []byte) (commitIntent, error) {
	v, ok := message.LookupProperty(props, PropertyCommitIntent)
	if !ok {
		return commitIntent{}, fmt.Errorf("%w: commit intent without %s", errBadOpEntry, PropertyCommitIntent)
	}
	var nums [4]int64
	rest := v
	for i := range nums {
		j := bytes.IndexByte(rest, ',')
		if j < 0 {
			return commitIntent{}, fmt.Errorf("%w: commit intent %q: too few fields", errBadOpEntry, v)
		}
		n, err := parseNonNegative(rest[:j])
		if err != nil {
			return commitIntent{}, fmt.Errorf("%w: commit intent %q: %w", errBadOpEntry, v, err)
		}
		nums[i], rest = n, rest[j+1:]
	}
	if nums[2] > 1<<31-1 || len(rest) == 0 {
		return commitIntent{}, fmt.Errorf("%w: commit intent %q: bad queue", errBadOpEntry, v)
	}
	in := commitIntent{origin: nums[0], phy: nums[1], queueID: int32(nums[2]), queueOffset: nums[3],
		topic: string(rest)}
	if iv, ok := message.LookupProperty(props, PropertyIntentItems); ok {
		if err := decodeIntentItems(iv, &in); err != nil {
			return commitIntent{}, err
		}
	}
	return in, nil
}

// parseNonNegative parses a decimal int64 ≥ 0 made of digits only.
func parseNonNegative(b []byte) (int64, error) {
	if len(b) == 0 || len(b) > 19 {
		return 0, strconv.ErrSyntax
	}
	var v int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, strconv.ErrSyntax
		}
		d := int64(c - '0')
		if v > (1<<63-1-d)/10 {
			return 0, strconv.ErrRange
		}
		v = v*10 + d
	}
	return v, nil
}

// Cursor file
//
// The file "transaction_cursor" in Options.Dir holds the two persisted cursors, replaced
// atomically (temp file, fsync, rename, directory fsync):
//
//	 0      4       6        8                 16                24       28
//	+------+-------+--------+-----------------+-----------------+--------+
//	| FTXC | ver=1 | 0 (2B) | half cursor i64 | op cursor i64   | CRC-32 |
//	+------+-------+--------+-----------------+-----------------+--------+
//
// All integers are big-endian; the CRC is IEEE CRC-32 of bytes 0..23. The half cursor is
// the lowest half-queue offset whose transaction may still need work; the op cursor the
// lowest op-queue offset that may still matter. Both are replayed from at start. This
// layout is part of the on-disk format.

const (
	cursorFileName = "transaction_cursor"
	cursorMagic    = "FTXC"
	cursorVersion  = 1
	cursorSize     = 28
)

// errBadCursor reports a cursor file that does not decode.
var errBadCursor = errors.New("transaction: bad cursor file")

// cursors is the persisted progress.
type cursors struct {
	half, op int64
}

// encodeCursors returns the cursor file contents.
func encodeCursors(c cursors) []byte {
	b := make([]byte, cursorSize)
	copy(b, cursorMagic)
	binary.BigEndian.PutUint16(b[4:], cursorVersion)
	binary.BigEndian.PutUint64(b[8:], uint64(c.half))
	binary.BigEndian.PutUint64(b[16:], uint64(c.op))
	binary.BigEndian.PutUint32(b[24:], crc32.ChecksumIEEE(b[:24]))
	return b
}

// decodeCursors decodes the cursor file contents. It never panics.
func decodeCursors(b []byte) (cursors, error) {
	if len(b) != cursorSize {
		return cursors{}, fmt.Errorf("%w: %d bytes, want %d", errBadCursor, len(b), cursorSize)
	}
	if string(b[:4]) != cursorMagic {
		return cursors{}, fmt.Errorf("%w: magic %q", errBadCursor, b[:4])
	}
	if v := binary.BigEndian.Uint16(b[4:]); v != cursorVersion {
		return cursors{}, fmt.Errorf("%w: version %d", errBadCursor, v)
	}
	if got, want := binary.BigEndian.Uint32(b[24:]), crc32.ChecksumIEEE(b[:24]); got != want {
		return cursors{}, fmt.Errorf("%w: crc %08x, want %08x", errBadCursor, got, want)
	}
	c := cursors{half: int64(binary.BigEndian.Uint64(b[8:])), op: int64(binary.BigEndian.Uint64(b[16:]))}
	if c.half < 0 || c.op < 0 {
		return cursors{}, fmt.Errorf("%w: negative cursor %d/%d", errBadCursor, c.half, c.op)
	}
	return c, nil
}

// halfInfo is what the state machine needs to know about one stored half message (the
// original or a copy), parsed from its record.
type halfInfo struct {
	offset     int64 // half-queue offset
	phy        int64 // commit-log offset
	storeMs    int64 // store timestamp
	origin     int64 // half-queue offset of the original: the transaction's identity
	label      int   // TRANSACTION_CHECK_TIMES: the check this copy was made for (0: none yet)
	nextDue    int64 // PropertyNextCheckTime, 0 if absent
	firstStore int64 // PropertyFirstStoreTime, 0 if absent
	immunityMs int64 // CHECK_IMMUNITY_TIME_IN_SECONDS × 1000, 0 if absent
	group      string
	uniq       string
	bad        string // why the record is not a usable half message; "" if it is
}

// parseHalf reads the transaction bookkeeping of a half record. rec.QueueOffset and
// rec.PhysicalOffset must be the stored values. A record that lacks what a half message
// needs (PGROUP, REAL_TOPIC, a valid REAL_QID) gets bad set. Malformed bookkeeping
// properties are ignored rather than trusted. It never panics.
func parseHalf(rec *message.Record) halfInfo {
	h := halfInfo{
		offset:  rec.QueueOffset,
		phy:     rec.PhysicalOffset,
		storeMs: rec.StoreTimestamp,
		origin:  rec.QueueOffset,
	}
	props := rec.Properties
	if g, ok := message.LookupProperty(props, message.PropertyProducerGroup); ok && len(g) > 0 {
		h.group = string(g)
	} else {
		h.bad = "no producer group (PGROUP)"
	}
	if t, ok := message.LookupProperty(props, message.PropertyRealTopic); !ok || len(t) == 0 {
		h.bad = "no real topic (REAL_TOPIC)"
	}
	if q, ok := message.LookupProperty(props, message.PropertyRealQueueID); !ok {
		h.bad = "no real queue (REAL_QID)"
	} else if _, err := parseQueueID(q); err != nil {
		h.bad = fmt.Sprintf("bad real queue (REAL_QID=%q)", q)
	}
	if u, ok := message.LookupProperty(props, message.PropertyUniqKey); ok {
		h.uniq = string(u)
	}
	if v, ok := message.LookupProperty(props, message.PropertyTransactionPreparedQueueOffset); ok {
		if o, err := parseNonNegative(v); err == nil && o < h.offset {
			h.origin = o
		}
	}
	if v, ok := message.LookupProperty(props, message.PropertyTransactionCheckTimes); ok {
		if n, err := parseNonNegative(v); err == nil && n < 1<<20 {
			h.label = int(n)
		}
	}
	if v, ok := message.LookupProperty(props, PropertyNextCheckTime); ok {
		if n, err := parseNonNegative(v); err == nil {
			h.nextDue = n
		}
	}
	if v, ok := message.LookupProperty(props, PropertyFirstStoreTime); ok {
		if n, err := parseNonNegative(v); err == nil {
			h.firstStore = n
		}
	}
	if v, ok := message.LookupProperty(props, message.PropertyCheckImmunityTimeInSeconds); ok {
		if n, err := parseNonNegative(v); err == nil && n < 1<<40 {
			h.immunityMs = n * 1000
		}
	}
	return h
}

// parseQueueID parses a REAL_QID value.
func parseQueueID(b []byte) (int32, error) {
	v, err := strconv.ParseInt(string(b), 10, 32)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("queue id %q: %w", b, strconv.ErrSyntax)
	}
	return int32(v), nil
}

// stripProperties returns a new copy of props without any of keys.
func stripProperties(props []byte, keys ...string) []byte {
	out := append([]byte(nil), props...)
	for _, k := range keys {
		if _, ok := message.LookupProperty(out, k); ok {
			out = message.AppendWithoutProperty(out[:0:0], out, k)
		}
	}
	return out
}

// setProperties returns props with each key/value pair of kv set (kv alternates keys and
// values).
func setProperties(props []byte, kv ...string) ([]byte, error) {
	out := props
	for i := 0; i+1 < len(kv); i += 2 {
		var err error
		if out, err = message.SetProperty(out, kv[i], kv[i+1]); err != nil {
			return nil, err
		}
	}
	return out, nil
}
