package schedule

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/protocol"
)

// Errors returned by Rewrite. Every one matches ErrMessageIllegal, which the broker answers
// with MESSAGE_ILLEGAL; test with errors.Is, or errors.As with *TimerError for details.
var (
	// ErrMessageIllegal means the message cannot be scheduled as requested.
	ErrMessageIllegal = errors.New("schedule: message illegal")
	// ErrTimerTooFar means a timer delivery time lies beyond Options.MaxTimerDelay.
	ErrTimerTooFar = errors.New("schedule: timer delivery time too far in the future")
	// ErrBadTimerProperty means a timer property is not an integer.
	ErrBadTimerProperty = errors.New("schedule: timer property is not an integer")
	// ErrBadRealTopic means the topic cannot be saved in the REAL_TOPIC property (it
	// holds a property separator).
	ErrBadRealTopic = errors.New("schedule: topic cannot be stored as a property")
)

// TimerError describes a rejected timer message. It matches ErrMessageIllegal and Kind.
type TimerError struct {
	// Kind is ErrTimerTooFar or ErrBadTimerProperty.
	Kind error
	// Property is the timer property that was rejected.
	Property string
	// Value is its value.
	Value string
	// DeliverMs is the computed delivery time (Unix ms), 0 when Value is not a number.
	DeliverMs int64
	// NowMs is the time Rewrite compared it with.
	NowMs int64
	// MaxDelay is Options.MaxTimerDelay.
	MaxDelay time.Duration
}

// Error describes the rejection.
func (e *TimerError) Error() string {
	if errors.Is(e.Kind, ErrTimerTooFar) {
		return fmt.Sprintf("%v: %s=%s delivers in %v, more than the maximum %v", e.Kind,
			e.Property, e.Value, time.Duration(e.DeliverMs-e.NowMs)*time.Millisecond, e.MaxDelay)
	}
	return fmt.Sprintf("%v: %s=%q", e.Kind, e.Property, e.Value)
}

// Unwrap returns ErrMessageIllegal and Kind.
func (e *TimerError) Unwrap() []error { return []error{ErrMessageIllegal, e.Kind} }

// Rewrite is the broker's send-path hook for delayed messages. It changes rec in place
// and returns whether it did:
//
//   - Records that are not of transaction type NOT or COMMIT, and batch records, are
//     never touched.
//   - DELAY level > 0: the level is clamped to the highest level (DELAY is then rewritten
//     to it), REAL_TOPIC and REAL_QID are set to the record's topic and queue, the topic
//     becomes protocol.ScheduleTopic and the queue level−1. DELAY is kept.
//   - Otherwise TIMER_DELAY_SEC, TIMER_DELAY_MS (both relative to the Clock) or
//     TIMER_DELIVER_MS (absolute Unix ms), in that order of precedence, give a delivery
//     time at ms precision. One in the past or now leaves the record untouched, so it is
//     stored directly (delivered at once); one more than MaxTimerDelay ahead fails with a
//     *TimerError matching ErrTimerTooFar; otherwise REAL_TOPIC and REAL_QID are set,
//     TIMER_OUT_MS is set to the delivery time and the record moves to
//     protocol.TimerTopic queue 0.
//
// The new properties are built in buf (reused from its start; it must not overlap
// rec.Properties), stored in rec.Properties and returned, so a caller can keep buf and
// pass props[:0] next time; when buf is large enough Rewrite does not allocate. When
// nothing changes, props is rec.Properties. An error leaves rec unchanged.
func (s *Service) Rewrite(rec *message.Record, buf []byte) (props []byte, rewritten bool, err error) {
	sp := message.ScanProperties(rec.Properties)
	return s.RewriteScanned(rec, &sp, buf)
}

// RewriteScanned is Rewrite for a caller that has already scanned rec.Properties (the
// broker's send path scans a message's properties once for every decision it makes).
func (s *Service) RewriteScanned(rec *message.Record, sp *message.SendProps, buf []byte) (props []byte, rewritten bool, err error) {
	if tt := message.TransactionType(rec.SysFlag); tt != message.TransactionNotType &&
		tt != message.TransactionCommitType {
		return rec.Properties, false, nil
	}
	if rec.SysFlag&(message.SysFlagNeedUnwrap|message.SysFlagInnerBatch) != 0 {
		return rec.Properties, false, nil
	}
	if sp.DelayLevel != nil {
		if level, ok := parseInt(sp.DelayLevel); ok && level > 0 {
			return s.rewriteLevel(rec, buf, level)
		}
	}
	return s.rewriteTimer(rec, sp, buf)
}

// rewriteLevel parks rec in the schedule queue of level.
func (s *Service) rewriteLevel(rec *message.Record, buf []byte, level int64) ([]byte, bool, error) {
	if hasSeparator(rec.Topic) {
		return rec.Properties, false, fmt.Errorf("%w: %w: %q", ErrMessageIllegal, ErrBadRealTopic, rec.Topic)
	}
	drop := dropReal
	if level > int64(len(s.levels)) {
		level = int64(len(s.levels))
		drop |= dropDelay
	}
	p := appendPropsWithout(buf[:0], rec.Properties, drop)
	if drop&dropDelay != 0 {
		p = message.AppendIntPair(p, message.PropertyDelayLevel, level)
	}
	p = message.AppendPair(p, message.PropertyRealTopic, rec.Topic)
	p = message.AppendIntPair(p, message.PropertyRealQueueID, int64(rec.QueueID))
	rec.Properties = p
	rec.Topic = s.scheduleTopic
	rec.QueueID = int32(level - 1)
	return p, true, nil
}

// rewriteTimer parks rec in the timer queue if it carries a future timer property.
func (s *Service) rewriteTimer(rec *message.Record, sp *message.SendProps, buf []byte) ([]byte, bool, error) {
	nowMs := s.opts.Clock().UnixMilli()
	maxMs := s.opts.MaxTimerDelay.Milliseconds()
	var (
		prop string
		raw  []byte
	)
	switch {
	case sp.TimerDelaySec != nil:
		prop, raw = message.PropertyTimerDelaySec, sp.TimerDelaySec
	case sp.TimerDelayMs != nil:
		prop, raw = message.PropertyTimerDelayMs, sp.TimerDelayMs
	case sp.TimerDeliverMs != nil:
		prop, raw = message.PropertyTimerDeliverMs, sp.TimerDeliverMs
	default:
		return rec.Properties, false, nil
	}
	n, valid := parseInt(raw)
	if !valid {
		return rec.Properties, false, &TimerError{Kind: ErrBadTimerProperty, Property: prop,
			Value: string(raw), NowMs: nowMs, MaxDelay: s.opts.MaxTimerDelay}
	}
	var deliver int64
	switch prop {
	case message.PropertyTimerDelaySec:
		if n > maxMs/1000+1 {
			n = maxMs/1000 + 1 // beyond the limit anyway; avoids overflow below
		}
		deliver = nowMs + max(n, -1)*1000
	case message.PropertyTimerDelayMs:
		deliver = nowMs + min(max(n, -1), maxMs+1)
	default:
		deliver = n
	}
	if deliver <= nowMs {
		return rec.Properties, false, nil
	}
	if deliver-nowMs > maxMs {
		return rec.Properties, false, &TimerError{Kind: ErrTimerTooFar, Property: prop,
			Value: string(raw), DeliverMs: deliver, NowMs: nowMs, MaxDelay: s.opts.MaxTimerDelay}
	}
	if hasSeparator(rec.Topic) {
		return rec.Properties, false, fmt.Errorf("%w: %w: %q", ErrMessageIllegal, ErrBadRealTopic, rec.Topic)
	}
	p := appendPropsWithout(buf[:0], rec.Properties, dropReal|dropTimerOut)
	p = message.AppendIntPair(p, message.PropertyTimerOutMs, deliver)
	p = message.AppendPair(p, message.PropertyRealTopic, rec.Topic)
	p = message.AppendIntPair(p, message.PropertyRealQueueID, int64(rec.QueueID))
	rec.Properties = p
	rec.Topic = s.timerTopic
	rec.QueueID = 0
	return p, true, nil
}

// TagsCoder returns the function to install as the store's Options.TagsCode: the
// consume-queue tags code of a schedule-topic record is its delivery time (store
// timestamp + the delay of its level, queue id + 1) and that of a timer-topic record is
// TIMER_OUT_MS (its store timestamp if that is missing or malformed), both in Unix ms;
// other records keep their TAGS hash. Delivery loops decide from these codes alone.
// The store calls it during recovery, before a Service exists, hence a function of the
// levels rather than a method.
func TagsCoder(levels []time.Duration) func(rec *message.Record) (int64, bool) {
	delays := make([]int64, len(levels))
	for i, d := range levels {
		delays[i] = d.Milliseconds()
	}
	return func(rec *message.Record) (int64, bool) {
		return tagsCode(delays, rec)
	}
}

// TagsCode is TagsCoder(Options.Levels) applied to rec.
func (s *Service) TagsCode(rec *message.Record) (int64, bool) {
	return tagsCode(s.delays, rec)
}

// tagsCode computes the delivery time of a parked record; see TagsCoder.
func tagsCode(delays []int64, rec *message.Record) (int64, bool) {
	switch string(rec.Topic) {
	case protocol.ScheduleTopic:
		return rec.StoreTimestamp + levelDelay(delays, rec.QueueID), true
	case protocol.TimerTopic:
		if v, ok := message.LookupProperty(rec.Properties, message.PropertyTimerOutMs); ok {
			if ms, ok := parseInt(v); ok {
				return ms, true
			}
		}
		return rec.StoreTimestamp, true
	}
	return 0, false
}

// levelDelay is the delay in ms of the schedule queue qid; queues beyond the configured
// levels (the level list shrank) use the highest level.
func levelDelay(delays []int64, qid int32) int64 {
	switch {
	case qid < 0 || len(delays) == 0:
		return 0
	case int(qid) >= len(delays):
		return delays[len(delays)-1]
	}
	return delays[qid]
}

// dropSet selects well-known properties to leave out when copying properties.
type dropSet uint8

const (
	// dropDelay leaves out DELAY.
	dropDelay dropSet = 1 << iota
	// dropReal leaves out REAL_TOPIC and REAL_QID.
	dropReal
	// dropTimerOut leaves out TIMER_OUT_MS.
	dropTimerOut
	// dropTimerIn leaves out TIMER_DELIVER_MS, TIMER_DELAY_SEC and TIMER_DELAY_MS.
	dropTimerIn
)

// has reports whether key is in the set.
func (d dropSet) has(key []byte) bool {
	switch string(key) {
	case message.PropertyDelayLevel:
		return d&dropDelay != 0
	case message.PropertyRealTopic, message.PropertyRealQueueID:
		return d&dropReal != 0
	case message.PropertyTimerOutMs:
		return d&dropTimerOut != 0
	case message.PropertyTimerDeliverMs, message.PropertyTimerDelaySec, message.PropertyTimerDelayMs:
		return d&dropTimerIn != 0
	}
	return false
}

// appendPropsWithout appends the pairs of props whose key is not in drop to dst.
func appendPropsWithout(dst, props []byte, drop dropSet) []byte {
	for k, v := range message.PropertyPairs(props) {
		if !drop.has(k) {
			dst = append(dst, k...)
			dst = append(dst, message.NameValueSeparator)
			dst = append(dst, v...)
			dst = append(dst, message.PropertySeparator)
		}
	}
	return dst
}

// hasSeparator reports whether b holds a property separator.
func hasSeparator(b []byte) bool {
	for _, c := range b {
		if c == message.NameValueSeparator || c == message.PropertySeparator {
			return true
		}
	}
	return false
}

// parseInt parses an optionally signed decimal int64 without allocating (leading and
// trailing spaces are tolerated, as Java's parsers of these properties trim).
func parseInt(b []byte) (int64, bool) {
	for len(b) > 0 && b[0] == ' ' {
		b = b[1:]
	}
	for len(b) > 0 && b[len(b)-1] == ' ' {
		b = b[:len(b)-1]
	}
	neg := false
	if len(b) > 0 && (b[0] == '-' || b[0] == '+') {
		neg = b[0] == '-'
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 19 {
		return 0, false
	}
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	if neg {
		if n > math.MaxInt64+1 {
			return 0, false
		}
		return -int64(n), true // n = 2^63 wraps to math.MinInt64, as wanted
	}
	if n > math.MaxInt64 {
		return 0, false
	}
	return int64(n), true
}
