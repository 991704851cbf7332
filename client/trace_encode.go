package client

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Message-trace records: RocketMQ's text layout (RIP-6; Java's TraceDataEncoder, the Go
// client's internal/trace.go), which every RocketMQ client, console and dashboard reads.
// A trace message's body is records laid end to end, each one ended by 0x02 (FIELD_SPLITOR);
// the fields of a record are separated by 0x01 (CONTENT_SPLITOR). Numbers are decimal,
// booleans "true" or "false", times milliseconds since the Unix epoch. These layouts are
// part of the format: the position of a field is its name.
//
//	Pub            Pub | time | region | group | topic | msgId | tags | keys | storeHost |
//	               bodyLength | costMs | msgType | offsetMsgId | success | clientHost
//	SubBefore      SubBefore | time | region | group | requestId | msgId | retryTimes | keys |
//	               clientHost
//	SubAfter       SubAfter | requestId | msgId | costMs | success | keys | contextCode |
//	               time | group
//	EndTransaction EndTransaction | time | region | group | topic | msgId | tags | keys |
//	               storeHost | msgType | transactionId | transactionState | fromCheck
//
// The encoder writes these fields exactly, as the official Go client does (Java's encoder
// writes Pub without clientHost, SubBefore without clientHost and, before 5.x, SubAfter
// without group). The decoder takes the shorter forms older clients write, as Java's
// decoder does: Pub from 12 fields (13: success; 14: offsetMsgId and success), SubBefore
// from 8, SubAfter from 6 (contextCode, time and group when present), EndTransaction
// from 13; fields past the known ones are ignored, records of other types skipped. Keys
// and tags "null" (what clients write for none) decode as empty, and the encoder writes
// the keys of Sub records as "null" when there are none, as the clients do.
//
// The trace message's KEYS property carries the message ids of its records and their
// keys, so that a message's records are found by its id (QUERY_MESSAGE on the trace
// topic).

// The separators of a trace body.
const (
	traceFieldSep  = '\x01' // between the fields of a record (CONTENT_SPLITOR)
	traceRecordSep = '\x02' // after each record (FIELD_SPLITOR)
)

// TraceType is the kind of a trace record.
type TraceType string

// Trace record types.
const (
	// TracePub: a producer sent the message (or failed to).
	TracePub TraceType = "Pub"
	// TraceSubBefore: a consumer hands the message to its handler.
	TraceSubBefore TraceType = "SubBefore"
	// TraceSubAfter: the handler returned.
	TraceSubAfter TraceType = "SubAfter"
	// TraceEndTransaction: a transactional producer ended the message's transaction
	// (decoded only; Ferry's client does not write it).
	TraceEndTransaction TraceType = "EndTransaction"
)

// Message types of Pub records (Java's MessageType ordinals).
const (
	TraceMsgNormal      = 0
	TraceMsgTransHalf   = 1
	TraceMsgTransCommit = 2
	TraceMsgDelay       = 3
)

const (
	traceRegionDefault  = "DefaultRegion" // what clients write when the broker names none
	traceNull           = "null"          // what clients write for missing keys
	traceConsumeSuccess = 0               // SubAfter contextCode: ConsumeReturnType SUCCESS
	traceConsumeFailed  = 4               // FAILED
)

// TraceRecord is one decoded trace record; which fields a type carries is in the layout
// above (the others are zero).
type TraceRecord struct {
	Type TraceType
	// Timestamp is when the record was made, in ms since the epoch (0: not recorded, as
	// in SubAfter records of older clients).
	Timestamp int64
	RegionID  string
	// Group is the producer or consumer group.
	Group string
	// RequestID ties a SubBefore record to its SubAfter.
	RequestID string
	Topic     string
	// MsgID is the message's client id (UNIQ_KEY).
	MsgID string
	// OffsetMsgID is the broker's id of the stored record (Pub).
	OffsetMsgID string
	Tags        string
	// Keys are the message's keys, space-separated.
	Keys string
	// StoreHost is the broker (host:port) the message was sent to.
	StoreHost string
	// ClientHost is the producer's or consumer's IP address.
	ClientHost string
	BodyLength int
	// CostMs is how long the send or the handler took, in ms.
	CostMs int64
	// MsgType is the Pub message type (TraceMsgNormal, TraceMsgDelay, ...).
	MsgType int
	// Success: the send was stored, or the handler consumed the message.
	Success bool
	// RetryTimes is how many times the message was consumed before (SubBefore).
	RetryTimes int
	// ContextCode is the consume outcome (SubAfter; RocketMQ's ConsumeReturnType: 0
	// success, 1 timeout, 2 exception, 3 null, 4 failed).
	ContextCode int
	// TransactionID, TransactionState and FromCheck describe EndTransaction records.
	TransactionID    string
	TransactionState string
	FromCheck        bool
}

// ErrBadTrace is wrapped by the errors of DecodeTraceRecords.
var ErrBadTrace = errors.New("client: malformed trace record")

// traceWriter appends fields of one record.
type traceWriter struct {
	b     []byte
	first bool
}

func (w *traceWriter) str(s string) {
	if !w.first {
		w.b = append(w.b, traceFieldSep)
	}
	w.first = false
	for i := 0; i < len(s); i++ { // separators in a value would shift the fields: dropped
		if c := s[i]; c != traceFieldSep && c != traceRecordSep {
			w.b = append(w.b, c)
		}
	}
}

func (w *traceWriter) int(n int64) { w.str(strconv.FormatInt(n, 10)) }

func (w *traceWriter) bool(v bool) { w.str(strconv.FormatBool(v)) }

// nullIfEmpty is what clients write for missing keys in Sub records.
func nullIfEmpty(s string) string {
	if s == "" {
		return traceNull
	}
	return s
}

// AppendTraceRecord appends r in its type's layout, ended by the record separator, to
// dst. Separator bytes inside values are dropped. A type without a layout appends
// nothing.
func AppendTraceRecord(dst []byte, r *TraceRecord) []byte {
	w := traceWriter{b: dst, first: true}
	switch r.Type {
	case TracePub:
		w.str(string(r.Type))
		w.int(r.Timestamp)
		w.str(r.RegionID)
		w.str(r.Group)
		w.str(r.Topic)
		w.str(r.MsgID)
		w.str(r.Tags)
		w.str(r.Keys)
		w.str(r.StoreHost)
		w.int(int64(r.BodyLength))
		w.int(r.CostMs)
		w.int(int64(r.MsgType))
		w.str(r.OffsetMsgID)
		w.bool(r.Success)
		w.str(r.ClientHost)
	case TraceSubBefore:
		w.str(string(r.Type))
		w.int(r.Timestamp)
		w.str(r.RegionID)
		w.str(r.Group)
		w.str(r.RequestID)
		w.str(r.MsgID)
		w.int(int64(r.RetryTimes))
		w.str(nullIfEmpty(r.Keys))
		w.str(r.ClientHost)
	case TraceSubAfter:
		w.str(string(r.Type))
		w.str(r.RequestID)
		w.str(r.MsgID)
		w.int(r.CostMs)
		w.bool(r.Success)
		w.str(nullIfEmpty(r.Keys))
		w.int(int64(r.ContextCode))
		w.int(r.Timestamp)
		w.str(r.Group)
	case TraceEndTransaction:
		w.str(string(r.Type))
		w.int(r.Timestamp)
		w.str(r.RegionID)
		w.str(r.Group)
		w.str(r.Topic)
		w.str(r.MsgID)
		w.str(r.Tags)
		w.str(r.Keys)
		w.str(r.StoreHost)
		w.int(int64(r.MsgType))
		w.str(r.TransactionID)
		w.str(r.TransactionState)
		w.bool(r.FromCheck)
	default:
		return dst
	}
	return append(w.b, traceRecordSep)
}

// DecodeTraceRecords decodes a trace message's body. Records of unknown types and empty
// ones are skipped; a record with too few fields or a bad number is left out and
// reported in the error (wrapping ErrBadTrace), which comes with the records that did
// decode.
func DecodeTraceRecords(body []byte) ([]TraceRecord, error) {
	var out []TraceRecord
	var errs []error
	n := 0
	for rec := range strings.SplitSeq(string(body), string(traceRecordSep)) {
		n++
		if rec == "" {
			continue
		}
		r, ok, err := decodeTraceRecord(strings.Split(rec, string(traceFieldSep)))
		switch {
		case err != nil:
			if len(errs) < 8 {
				errs = append(errs, fmt.Errorf("%w: record %d: %w", ErrBadTrace, n, err))
			}
		case ok:
			out = append(out, r)
		}
	}
	return out, errors.Join(errs...)
}

// traceFields reads fields of one record, keeping the first number error.
type traceFields struct {
	f   []string
	err error
}

func (p *traceFields) str(i int) string {
	if i < len(p.f) {
		return p.f[i]
	}
	return ""
}

// word is str with "null" as empty.
func (p *traceFields) word(i int) string {
	if s := p.str(i); s != traceNull {
		return s
	}
	return ""
}

func (p *traceFields) num(i, bits int, name string) int64 {
	if i >= len(p.f) {
		return 0
	}
	n, err := strconv.ParseInt(p.f[i], 10, bits)
	if err != nil && p.err == nil {
		p.err = fmt.Errorf("field %d (%s) %q is not a number", i, name, p.f[i])
	}
	return n
}

func (p *traceFields) bool(i int) bool { return strings.EqualFold(p.str(i), "true") }

// minTraceFields is how many fields a record of type t needs at least (0: a type
// without a layout).
func minTraceFields(t TraceType) int {
	switch t {
	case TracePub:
		return 12
	case TraceSubBefore:
		return 8
	case TraceSubAfter:
		return 6
	case TraceEndTransaction:
		return 13
	}
	return 0
}

// decodeTraceRecord decodes the fields of one record; ok is false for unknown types.
func decodeTraceRecord(f []string) (TraceRecord, bool, error) {
	r := TraceRecord{Type: TraceType(f[0])}
	need := minTraceFields(r.Type)
	if need == 0 {
		return r, false, nil
	}
	if len(f) < need {
		return r, false, fmt.Errorf("%s has %d fields, want at least %d", r.Type, len(f), need)
	}
	p := traceFields{f: f}
	switch r.Type {
	case TracePub:
		r.Timestamp = p.num(1, 64, "time")
		r.RegionID, r.Group, r.Topic, r.MsgID = p.str(2), p.str(3), p.str(4), p.str(5)
		r.Tags, r.Keys, r.StoreHost = p.word(6), p.word(7), p.str(8)
		r.BodyLength = int(p.num(9, 32, "bodyLength"))
		r.CostMs = p.num(10, 64, "costMs")
		r.MsgType = int(p.num(11, 32, "msgType"))
		switch {
		case len(f) == 13:
			r.Success = p.bool(12)
		case len(f) >= 14:
			r.OffsetMsgID, r.Success, r.ClientHost = p.str(12), p.bool(13), p.str(14)
		}
	case TraceSubBefore:
		r.Timestamp = p.num(1, 64, "time")
		r.RegionID, r.Group, r.RequestID, r.MsgID = p.str(2), p.str(3), p.str(4), p.str(5)
		r.RetryTimes = int(p.num(6, 32, "retryTimes"))
		r.Keys, r.ClientHost = p.word(7), p.str(8)
	case TraceSubAfter:
		r.RequestID, r.MsgID = p.str(1), p.str(2)
		r.CostMs = p.num(3, 64, "costMs")
		r.Success, r.Keys = p.bool(4), p.word(5)
		r.ContextCode = int(p.num(6, 32, "contextCode"))
		r.Timestamp = p.num(7, 64, "time")
		r.Group = p.str(8)
	case TraceEndTransaction:
		r.Timestamp = p.num(1, 64, "time")
		r.RegionID, r.Group, r.Topic, r.MsgID = p.str(2), p.str(3), p.str(4), p.str(5)
		r.Tags, r.Keys, r.StoreHost = p.word(6), p.word(7), p.str(8)
		r.MsgType = int(p.num(9, 32, "msgType"))
		r.TransactionID, r.TransactionState, r.FromCheck = p.str(10), p.str(11), p.bool(12)
	}
	if p.err != nil {
		return TraceRecord{}, false, fmt.Errorf("%s: %w", r.Type, p.err)
	}
	return r, true, nil
}
