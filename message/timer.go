package message

import (
	"strconv"
	"time"
)

// Timer messages (RocketMQ 5.x): a message carrying one of the timer properties is held
// by the broker until its delivery time, at millisecond precision on a Ferry broker.
// TIMER_DELIVER_MS is an absolute Unix time in ms; TIMER_DELAY_SEC and TIMER_DELAY_MS
// are relative to when the broker stores the message (so they do not depend on the
// producer's clock). A broker reads TIMER_DELAY_SEC first, then TIMER_DELAY_MS, then
// TIMER_DELIVER_MS, and a DELAY level before any of them; the setters below keep exactly
// one of them on a message.

// timerProperties are the properties a timer setter replaces.
var timerProperties = [...]string{PropertyTimerDeliverMs, PropertyTimerDelaySec, PropertyTimerDelayMs, PropertyDelayLevel}

// clearTimer removes every timer property and the delay level.
func (m *Message) clearTimer() {
	for _, k := range timerProperties {
		delete(m.Properties, k)
	}
}

// SetDeliverAt makes the broker deliver the message at t (TIMER_DELIVER_MS, Unix ms),
// replacing any other timer property and the delay level. A zero t removes them all. A
// time in the past is delivered at once; one further ahead than the broker's maximum
// timer delay is refused by the broker.
func (m *Message) SetDeliverAt(t time.Time) {
	m.clearTimer()
	if t.IsZero() {
		return
	}
	m.SetProperty(PropertyTimerDeliverMs, strconv.FormatInt(t.UnixMilli(), 10))
}

// SetDeliverAfter makes the broker deliver the message d after it stores it, replacing
// any other timer property and the delay level: TIMER_DELAY_SEC when d is a whole number
// of seconds, else TIMER_DELAY_MS (RocketMQ 5 reads both). d ≤ 0 removes them all.
// Fractions of a millisecond are dropped.
func (m *Message) SetDeliverAfter(d time.Duration) {
	m.clearTimer()
	switch {
	case d <= 0:
	case d%time.Second == 0:
		m.SetProperty(PropertyTimerDelaySec, strconv.FormatInt(int64(d/time.Second), 10))
	default:
		m.SetProperty(PropertyTimerDelayMs, strconv.FormatInt(d.Milliseconds(), 10))
	}
}

// DeliverAt is the absolute delivery time SetDeliverAt set (TIMER_DELIVER_MS), or the
// zero time when there is none or it is not a number.
func (m *Message) DeliverAt() time.Time {
	ms, err := strconv.ParseInt(m.Property(PropertyTimerDeliverMs), 10, 64)
	if err != nil {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

// DeliverAfter is the relative delay SetDeliverAfter set (TIMER_DELAY_SEC, else
// TIMER_DELAY_MS), or 0 when there is none or it is not a number.
func (m *Message) DeliverAfter() time.Duration {
	if s, err := strconv.ParseInt(m.Property(PropertyTimerDelaySec), 10, 64); err == nil {
		return time.Duration(s) * time.Second
	}
	if ms, err := strconv.ParseInt(m.Property(PropertyTimerDelayMs), 10, 64); err == nil {
		return time.Duration(ms) * time.Millisecond
	}
	return 0
}

// HasTimer reports whether the message carries a delay level or a timer property, so
// the broker holds it back (and it cannot travel in a batch, whose items the broker
// never delays).
func (m *Message) HasTimer() bool {
	for _, k := range timerProperties {
		if _, ok := m.Properties[k]; ok {
			return true
		}
	}
	return false
}
