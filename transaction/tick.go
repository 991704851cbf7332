package transaction

import (
	"fmt"
	"slices"
	"time"
)

// actionKind says what an action asks the driver to do.
type actionKind uint8

const (
	// actRenew: append a copy of the half message at copy, labelled label and carrying
	// nextDue and firstStore, then report renewed (or renewFailed). move marks a renew that
	// only lets the half cursor advance; otherwise a check follows.
	actRenew actionKind = iota
	// actCheck: send CHECK_TRANSACTION_STATE for the half message at copy to group, then
	// report checkDone.
	actCheck
	// actDiscard: copy the half message at copy to TRANS_CHECK_MAX_TIME_TOPIC, write an op
	// entry (outcome discard, offsets), log it, then report discardDone or discardLost.
	actDiscard
	// actWriteOp: write an op entry for origin (outcome, offsets), then report opWritten.
	actWriteOp
	// actVerify: look for the committed message of a replayed commit intent, then report
	// verified (or verifyFailed).
	actVerify
	// actPersist: durably record cursors.
	actPersist
	// actLog: log msg at level.
	actLog
)

// logLevel is the severity of a log action.
type logLevel uint8

const (
	logInfo logLevel = iota
	logWarn
	logError
)

func (l logLevel) String() string { return [...]string{"info", "warn", "error"}[l] }

// action is one thing the machine asks the driver to do.
type action struct {
	kind       actionKind
	origin     int64
	copy       copyRef
	move       bool
	label      int
	nextDue    int64
	firstStore int64
	group      string
	uniq       string
	outcome    outcome
	offsets    []int64
	cursors    cursors
	intent     *commitIntent
	level      logLevel
	msg        string
}

// String describes the action in one line (the scripted tests compare these).
func (a action) String() string {
	switch a.kind {
	case actRenew:
		s := fmt.Sprintf("renew txn=%d from=%d label=%d next=%d", a.origin, a.copy.offset, a.label, a.nextDue)
		if a.move {
			s += " move"
		}
		return s
	case actCheck:
		return fmt.Sprintf("check txn=%d half=%d phy=%d group=%s uniq=%s times=%d", a.origin, a.copy.offset,
			a.copy.phy, a.group, a.uniq, a.label)
	case actDiscard:
		return fmt.Sprintf("discard txn=%d half=%d checks=%d", a.origin, a.copy.offset, a.label)
	case actWriteOp:
		return fmt.Sprintf("write-op txn=%d outcome=%s offsets=%v", a.origin, a.outcome, a.offsets)
	case actVerify:
		return fmt.Sprintf("verify txn=%d phy=%d queue=%s/%d from=%d", a.origin, a.intent.phy, a.intent.topic,
			a.intent.queueID, a.intent.queueOffset)
	case actPersist:
		return fmt.Sprintf("persist half=%d op=%d", a.cursors.half, a.cursors.op)
	default:
		return fmt.Sprintf("log %s: %s", a.level, a.msg)
	}
}

// opOffsets lists what an op entry for t resolving the copy at quoted names: the origin,
// then the copy when it is not the origin.
func opOffsets(origin, quoted int64) []int64 {
	if quoted == origin || quoted < 0 {
		return []int64{origin}
	}
	return []int64{origin, quoted}
}

// tick advances the machine's time to now (a smaller now is ignored: time never goes
// backwards) and emits what is due: discards, checks (within the rate limit), renews that
// let the half cursor move past long-waiting transactions, op-entry and verify retries and
// the new cursors.
func (m *machine) tick(now int64) {
	m.now = max(m.now, now)
	m.refill()
	m.checkDue()
	m.moveLagging()
	m.retryOps()
	if len(m.unverified) > 0 {
		m.verifyIntents()
	}
	m.advance()
}

// refill adds check tokens for the time since the last refill; the bucket holds one
// second's worth.
func (m *machine) refill() {
	capacity := m.cfg.rate * tokenCost
	if elapsed := m.now - m.refilled; m.refilled == 0 || elapsed >= tokenCost {
		m.tokens = capacity
	} else if elapsed > 0 {
		m.tokens = min(capacity, m.tokens+elapsed*m.cfg.rate)
	}
	m.refilled = m.now
}

// checkDue starts the discard or the next check of every due transaction, oldest first,
// while check tokens last.
func (m *machine) checkDue() {
	for len(m.due) > 0 {
		t := m.due[0]
		if t.due > m.now {
			return
		}
		if reason := m.discardReason(t); reason != "" {
			t.busy = busyDiscard
			m.update(t)
			m.logf(logWarn, t.origin, "discarding transaction %d (group %s, uniq %s) to %s: %s",
				t.origin, t.group, t.uniq, discardTopic, reason)
			m.emit(action{kind: actDiscard, origin: t.origin, copy: t.live, label: t.checks,
				group: t.group, uniq: t.uniq, outcome: outcomeDiscard, offsets: opOffsets(t.origin, t.live.offset)})
			continue
		}
		if m.tokens < tokenCost {
			return
		}
		m.tokens -= tokenCost
		if t.label == t.checks+1 {
			// The live copy was made for this check, which was not delivered: reuse it.
			m.startCheck(t)
		} else {
			t.busy = busyRenew
			m.emit(action{kind: actRenew, origin: t.origin, copy: t.live, label: t.checks + 1,
				nextDue: m.now + m.cfg.recheck, firstStore: t.firstStore, group: t.group, uniq: t.uniq})
		}
		m.update(t)
	}
}

// discardReason says why t must be given up, or "" if it may still be checked.
func (m *machine) discardReason(t *txn) string {
	switch {
	case t.checks >= m.cfg.maxChecks:
		return fmt.Sprintf("no answer after %d checks", t.checks)
	case m.now-t.firstStore >= m.cfg.maxAge:
		return fmt.Sprintf("older than %s after %d checks", time.Duration(m.cfg.maxAge)*time.Millisecond, t.checks)
	}
	return ""
}

// startCheck emits the check of t's live copy; the caller calls update.
func (m *machine) startCheck(t *txn) {
	t.busy = busyCheck
	m.emit(action{kind: actCheck, origin: t.origin, copy: t.live, label: t.label, group: t.group, uniq: t.uniq})
}

// moveLagging re-appends the live copies of idle pending transactions that have held the
// half cursor back for maxLag and are not due yet (a long CHECK_IMMUNITY_TIME_IN_SECONDS,
// or a wait between checks), so that the cursor — and what a restart replays — stays
// within maxLag of the tail. The copy keeps its label and due time.
func (m *machine) moveLagging() {
	for i, s := range m.slots {
		if s.storeMs+m.cfg.maxLag > m.now {
			return
		}
		t := m.txns[s.origin]
		if !s.valid || t == nil || t.live.offset != m.halfCursor+int64(i) ||
			t.state != statePending || t.busy != busyNone || t.intent != nil || t.due <= m.now {
			continue
		}
		t.busy = busyMove
		m.update(t)
		m.emit(action{kind: actRenew, origin: t.origin, copy: t.live, move: true, label: t.label,
			nextDue: t.due, firstStore: t.firstStore, group: t.group, uniq: t.uniq})
	}
}

// retryOps asks again for the op entries that could not be written.
func (m *machine) retryOps() {
	if len(m.opWait) == 0 {
		return
	}
	origins := make([]int64, 0, len(m.opWait))
	for o := range m.opWait {
		origins = append(origins, o)
	}
	slices.Sort(origins)
	for _, o := range origins {
		t := m.opWait[o]
		if t.busy != busyNone || t.state != stateEnded {
			continue
		}
		t.busy = busyWriteOp
		m.emit(action{kind: actWriteOp, origin: o, outcome: t.outcome, offsets: opOffsets(o, t.live.offset)})
	}
}

// advance moves the half cursor over every half message that needs no more work — ended,
// superseded by a newer copy, or unusable — and the op cursor over every op entry whose
// transactions are settled behind the half cursor. Neither can stall behind an ended
// transaction: only a pending one (or one with an action in flight) holds the half cursor,
// and moveLagging bounds how long. A persist action follows any change.
func (m *machine) advance() {
	for len(m.slots) > 0 && m.halfDone(m.slots[0], m.halfCursor) {
		s := m.slots[0]
		m.slots = m.slots[1:]
		m.halfCursor++
		if t := m.txns[s.origin]; s.valid && t != nil {
			m.update(t)
		}
	}
	for len(m.ops) > 0 && m.opDone(m.ops[0]) {
		m.ops = m.ops[1:]
		m.opCursor++
	}
	if c := (cursors{half: m.halfCursor, op: m.opCursor}); c != m.persisted {
		m.persisted = c
		m.emit(action{kind: actPersist, cursors: c})
	}
}

// halfDone reports whether the half slot s at offset needs no more work.
func (m *machine) halfDone(s halfSlot, offset int64) bool {
	if !s.valid {
		return true
	}
	t := m.txns[s.origin]
	return t == nil || t.state == stateEnded || t.live.offset != offset
}

// opDone reports whether every transaction named by o is settled or forgotten. A commit
// intent is also done once its transaction is pending again and verified (the commit it
// announced failed): only an intent whose commit may be stored without its op entry must
// be replayed after a restart.
func (m *machine) opDone(o opSlot) bool {
	for _, origin := range o.origins {
		t := m.txns[origin]
		if t == nil || m.settled(t) {
			continue
		}
		if o.intent && t.state == statePending && t.intent == nil {
			continue
		}
		return false
	}
	return true
}
