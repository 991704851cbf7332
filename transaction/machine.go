package transaction

import (
	"container/heap"
	"fmt"
	"slices"
	"strings"
)

// machine is the deterministic core of the check-back service: no goroutines, clocks,
// randomness or I/O. The driver (Service) feeds it events — records read from the half and
// op queues, END_TRANSACTION requests, the passing of time, the results of the actions it
// asked for — and executes the actions it emits (ready). All times are Unix milliseconds
// supplied by the caller. A machine is not safe for concurrent use; Service serialises
// calls with its mutex.
//
// Identity: a transaction is named by its origin, the half-queue offset of its half
// message as first stored. Re-appended copies carry TRAN_PREPARED_QUEUE_OFFSET = origin,
// so END_TRANSACTION quoting any copy — or the original — reaches the same transaction.
type machine struct {
	cfg machineConfig
	now int64 // the latest time seen; it never goes backwards

	// Half queue: offsets [halfCursor, halfNext) have been read; slots[i] is halfCursor+i.
	halfCursor, halfNext int64
	slots                []halfSlot
	// Op queue: offsets [opCursor, opNext) have been read; ops[i] is opCursor+i.
	opCursor, opNext int64
	ops              []opSlot
	// persisted is the cursor pair last handed out in a persist action.
	persisted cursors
	// replaying is set from newMachine until replayed: the records read are those stored
	// before a start.
	replaying bool
	// unverified lists the origins of transactions whose replayed commit intent is not
	// verified yet (see txn.intent); entries of verified ones are dropped lazily.
	unverified []int64

	txns   map[int64]*txn // by origin
	due    dueHeap        // pending, idle transactions by next check time
	opWait map[int64]*txn // ended transactions whose op entry must still be written

	// Check rate limit: a token bucket in thousandths of a check.
	tokens, refilled int64

	// recent remembers the outcome of forgotten transactions, oldest first, for late
	// END_TRANSACTION answers.
	recent     map[int64]outcome
	recentFIFO []int64

	out []action
}

// machineConfig holds the machine's tunables in milliseconds.
type machineConfig struct {
	timeout   int64 // first check after this long (or the message's immunity, if longer)
	recheck   int64 // between checks of one transaction
	retry     int64 // before retrying a failed write
	maxChecks int   // delivered checks before the discard
	maxAge    int64 // age (since first stored) at which a transaction is discarded
	maxLag    int64 // a waiting half older than this is re-appended so the cursor moves
	rate      int64 // checks per second
	recent    int   // outcomes remembered after a transaction is forgotten
}

// txnState is where a transaction is in its life.
type txnState uint8

const (
	statePending   txnState = iota // waiting for END_TRANSACTION or a check
	stateResolving                 // an END_TRANSACTION is writing its outcome
	stateEnded                     // ended: see txn.outcome
)

// busyKind is the one background action a transaction may have in flight.
type busyKind uint8

const (
	busyNone    busyKind = iota
	busyRenew            // re-appending the half message before a check
	busyCheck            // the check is with the checker
	busyMove             // re-appending the half message so the half cursor can move
	busyDiscard          // writing to the discard topic and the op entry
	busyWriteOp          // writing the op entry
	busyVerify           // looking for the committed message of a replayed commit intent
)

func (b busyKind) String() string {
	return [...]string{"none", "renew", "check", "move", "discard", "write-op", "verify"}[b]
}

// copyRef locates one stored half message.
type copyRef struct {
	offset, phy, storeMs int64
}

// txn is one transaction.
type txn struct {
	origin     int64
	group      string
	uniq       string
	state      txnState
	outcome    outcome // when ended
	resolving  outcome // what the END_TRANSACTION in progress writes
	busy       busyKind
	live       copyRef // the newest copy: the one checks quote
	label      int     // the check the live copy was made for
	checks     int     // checks delivered (or, after a restart, possibly delivered)
	due        int64   // next check (or discard) time while pending
	firstStore int64   // store time of the original
	maxCopy    int64   // highest half-queue offset of any copy
	opPending  bool    // ended, but its op entry is not yet written
	heapIdx    int     // index in machine.due, -1 when absent
	// intent is the last commit intent replayed for the pending transaction: an
	// END_TRANSACTION the restart interrupted may have stored the committed message. Until
	// it is verified (and the field cleared) the transaction is neither checked nor ended.
	intent *commitIntent
}

// halfSlot is one read half-queue offset.
type halfSlot struct {
	origin  int64
	storeMs int64
	valid   bool
}

// opSlot is one read op-queue offset: the origins it ends, or the origin of a commit
// intent.
type opSlot struct {
	origins []int64
	intent  bool
}

// tokenCost is the price of one check in token units.
const tokenCost = 1000

// newMachine returns a machine whose half and op queues will be read from the given
// cursors.
func newMachine(cfg machineConfig, c cursors) *machine {
	return &machine{
		cfg:        cfg,
		halfCursor: c.half, halfNext: c.half,
		opCursor: c.op, opNext: c.op,
		persisted: c,
		replaying: true,
		txns:      make(map[int64]*txn),
		opWait:    make(map[int64]*txn),
		recent:    make(map[int64]outcome),
	}
}

// ready returns the actions emitted since the last call, oldest first.
func (m *machine) ready() []action {
	out := m.out
	m.out = nil
	return out
}

func (m *machine) emit(a action) { m.out = append(m.out, a) }

func (m *machine) logf(level logLevel, origin int64, format string, args ...any) {
	m.emit(action{kind: actLog, origin: origin, level: level, msg: fmt.Sprintf(format, args...)})
}

// ---- Events: reading the queues ----

// halfRead ingests the half message at h.offset, read in queue order. Offsets below the
// read position are duplicates and ignored; a jump forward marks the gap unusable.
func (m *machine) halfRead(h halfInfo) {
	if h.offset < m.halfNext {
		return
	}
	if h.offset > m.halfNext {
		m.halfSkip(h.offset)
	}
	m.slots = append(m.slots, halfSlot{origin: h.origin, storeMs: h.storeMs, valid: h.bad == ""})
	m.halfNext = h.offset + 1
	if h.bad != "" {
		m.logf(logWarn, h.offset, "skipping half-queue offset %d: %s", h.offset, h.bad)
		return
	}
	m.observe(h)
}

// halfSkip marks offsets [halfNext, to) as read and unusable (deleted or unreadable).
func (m *machine) halfSkip(to int64) {
	if to <= m.halfNext {
		return
	}
	m.logf(logWarn, -1, "half-queue offsets %d..%d are gone; skipping them", m.halfNext, to-1)
	for ; m.halfNext < to; m.halfNext++ {
		m.slots = append(m.slots, halfSlot{origin: -1})
	}
}

// opRead ingests the op entry at offset, read in queue order (e may be nil for an entry
// that does not decode; it is skipped).
func (m *machine) opRead(offset int64, e *opEntry) {
	if offset < m.opNext {
		return
	}
	m.opSkip(offset)
	m.opNext = offset + 1
	if e == nil {
		m.ops = append(m.ops, opSlot{})
		m.logf(logWarn, -1, "skipping op-queue offset %d: not an op entry", offset)
		return
	}
	if e.intent != nil {
		m.ops = append(m.ops, opSlot{origins: e.offsets, intent: true})
		m.intentRead(e.intent)
		return
	}
	m.ops = append(m.ops, opSlot{origins: e.offsets})
	for _, o := range e.offsets {
		m.endByOp(o, e.outcome)
	}
}

// intentRead ingests a commit intent. One written by this run belongs to an
// END_TRANSACTION that reports its own end (endDone or endFailed); only one stored before
// the start (replaying) may stand for a commit whose end was never recorded.
func (m *machine) intentRead(in *commitIntent) {
	t := m.txns[in.origin]
	if !m.replaying || t == nil || t.state == stateEnded {
		return
	}
	if t.intent == nil {
		m.unverified = append(m.unverified, in.origin)
	}
	t.intent = in
	m.update(t)
}

// recall learns the outcomes of an op entry from before the op cursor, read at start so
// late END_TRANSACTIONs for recently ended transactions are answered precisely after a
// restart. Such an entry names only forgotten transactions (see advance).
func (m *machine) recall(e opEntry) {
	if e.intent != nil {
		return
	}
	for _, o := range e.offsets {
		if m.txns[o] == nil {
			m.remember(o, e.outcome)
		}
	}
}

// opSkip marks op offsets [opNext, to) as read and irrelevant.
func (m *machine) opSkip(to int64) {
	for ; m.opNext < to; m.opNext++ {
		m.ops = append(m.ops, opSlot{})
	}
}

// observe learns about a stored half message (from the queue or from an END_TRANSACTION
// that read it) and returns its transaction, creating it when new.
func (m *machine) observe(h halfInfo) *txn {
	t := m.txns[h.origin]
	if t == nil {
		t = &txn{
			origin: h.origin, group: h.group, uniq: h.uniq,
			live: copyRef{h.offset, h.phy, h.storeMs}, label: h.label,
			// A copy's check may or may not have been delivered before a restart: count it,
			// so that no more than maxChecks are ever delivered.
			checks: h.label, due: m.firstDue(h), firstStore: h.firstStore,
			maxCopy: h.offset, heapIdx: -1,
		}
		if t.firstStore == 0 {
			t.firstStore = h.storeMs
		}
		m.txns[h.origin] = t
		m.update(t)
		return t
	}
	t.maxCopy = max(t.maxCopy, h.offset)
	if h.offset > t.live.offset {
		t.live, t.label = copyRef{h.offset, h.phy, h.storeMs}, h.label
		if t.busy == busyNone {
			// Not the copy being written for an action of ours, so a copy from before a
			// restart, met while replaying: it carries the durable state.
			t.checks = max(t.checks, h.label)
			t.due = m.firstDue(h)
			if h.firstStore > 0 {
				t.firstStore = h.firstStore
			}
			m.update(t)
		}
	}
	return t
}

// firstDue is when a transaction first seen through h is due.
func (m *machine) firstDue(h halfInfo) int64 {
	switch {
	case h.nextDue > 0:
		return h.nextDue
	case h.label > 0: // a copy written by a broker that does not record the due time
		return h.storeMs + m.cfg.recheck
	default:
		return h.storeMs + max(m.cfg.timeout, h.immunityMs)
	}
}

// endByOp ends the transaction origin as an op entry says.
func (m *machine) endByOp(origin int64, oc outcome) {
	t := m.txns[origin]
	if t == nil {
		m.remember(origin, oc)
		return
	}
	if t.state != stateEnded {
		if oc == outcomeResolved && t.state == stateResolving {
			oc = t.resolving
		}
		t.state, t.outcome = stateEnded, oc
	}
	t.intent = nil // the op entry after the intent says how it ended
	m.setOpPending(t, false)
	m.update(t)
}

// replayed ends the replay at start: each transaction with an unverified commit intent
// gets its verify action (the driver runs them before it serves END_TRANSACTION).
func (m *machine) replayed() {
	m.replaying = false
	m.verifyIntents()
}

// verifyIntents emits the verify action of every idle transaction with an unverified
// commit intent, and drops the verified ones from the list.
func (m *machine) verifyIntents() {
	keep := m.unverified[:0]
	for _, o := range m.unverified {
		t := m.txns[o]
		switch {
		case t == nil || t.intent == nil:
			continue
		case t.state != statePending: // defensive: nothing ends an unverified transaction
			t.intent = nil
			m.update(t)
			continue
		case t.busy == busyNone:
			t.busy = busyVerify
			m.emit(action{kind: actVerify, origin: o, intent: t.intent})
		}
		keep = append(keep, o)
	}
	m.unverified = keep
}

// ---- Events: END_TRANSACTION ----

// endVerdict is the machine's answer to an END_TRANSACTION.
type endVerdict uint8

const (
	verdictProceed    endVerdict = iota // write the outcome, then call endDone or endFailed
	verdictEnded                        // already ended: see the returned outcome
	verdictForgotten                    // ended long ago; the outcome is no longer known
	verdictInProgress                   // another END_TRANSACTION, or the discard, is running
)

// beginEnd asks whether an END_TRANSACTION with outcome oc for the half message h (read
// and verified by the driver) may proceed. On verdictProceed the transaction is held in
// stateResolving until endDone or endFailed.
func (m *machine) beginEnd(h halfInfo, oc outcome) (endVerdict, outcome) {
	t := m.txns[h.origin]
	if t == nil {
		if oc, ok := m.recent[h.origin]; ok {
			return verdictEnded, oc
		}
		if h.offset < m.halfCursor {
			// Every offset below the cursor is ended or superseded by a known copy.
			return verdictForgotten, outcomeNone
		}
		t = m.observe(h)
	} else {
		m.observe(h)
	}
	switch {
	case t.state == stateEnded:
		return verdictEnded, t.outcome
	case t.state == stateResolving, t.busy == busyDiscard, t.intent != nil:
		return verdictInProgress, outcomeNone
	}
	t.state, t.resolving = stateResolving, oc
	m.update(t)
	return verdictProceed, outcomeNone
}

// endDone reports that the END_TRANSACTION let through by beginEnd stored its outcome
// (the committed message, if any); opWritten says whether its op entry was written too.
func (m *machine) endDone(origin int64, oc outcome, opWritten bool) {
	t := m.txns[origin]
	if t == nil {
		m.remember(origin, oc)
		return
	}
	m.finish(t, oc, !opWritten)
	m.update(t)
}

// finish ends t with outcome oc unless it has ended already; opPending says that its op
// entry still has to be written.
func (m *machine) finish(t *txn, oc outcome, opPending bool) {
	if t.state != stateEnded {
		t.state, t.outcome = stateEnded, oc
		m.setOpPending(t, opPending)
	}
}

// endFailed reports that the END_TRANSACTION let through by beginEnd wrote nothing; the
// transaction is pending again.
func (m *machine) endFailed(origin int64) {
	if t := m.txns[origin]; t != nil && t.state == stateResolving {
		t.state = statePending
		m.update(t)
	}
}

// ---- Events: results of actions ----

// renewed reports that the copy h was appended for the renew action of origin.
func (m *machine) renewed(origin int64, h halfInfo) {
	t := m.txns[origin]
	if t == nil {
		m.logf(logError, origin, "renewed copy %d of unknown transaction %d", h.offset, origin)
		return
	}
	m.observe(h)
	purpose := t.busy
	t.busy = busyNone
	if purpose == busyRenew && t.state == statePending {
		m.startCheck(t)
	}
	m.update(t)
}

// renewFailed reports that a renew action wrote nothing. lost means the half message can
// no longer be read: the transaction is then discarded (there is nothing left to check).
func (m *machine) renewFailed(origin int64, lost bool) {
	t := m.txns[origin]
	if t == nil || (t.busy != busyRenew && t.busy != busyMove) {
		return
	}
	t.busy = busyNone
	if lost {
		m.lose(t)
		return
	}
	t.due = m.now + m.cfg.retry
	m.update(t)
}

// checkDone reports that the check action of origin was handed to the producer group
// (delivered) or could not be (no producer connected, send failed).
func (m *machine) checkDone(origin int64, delivered bool) {
	t := m.txns[origin]
	if t == nil || t.busy != busyCheck {
		return
	}
	t.busy = busyNone
	if delivered {
		t.checks = t.label
	} else {
		m.logf(logWarn, origin, "check %d of transaction %d (group %s) not delivered; retrying later",
			t.label, origin, t.group)
	}
	t.due = m.now + m.cfg.recheck
	m.update(t)
}

// discardDone reports the discard action of origin: ok when the message is in the discard
// topic, opWritten when the op entry is written too.
func (m *machine) discardDone(origin int64, ok, opWritten bool) {
	t := m.txns[origin]
	if t == nil || t.busy != busyDiscard {
		return
	}
	t.busy = busyNone
	if !ok {
		t.due = m.now + m.cfg.retry
		m.update(t)
		return
	}
	m.finish(t, outcomeDiscard, !opWritten)
	m.update(t)
}

// discardLost reports that the discard action found the half message unreadable.
func (m *machine) discardLost(origin int64) {
	if t := m.txns[origin]; t != nil && t.busy == busyDiscard {
		t.busy = busyNone
		m.lose(t)
	}
}

// opWritten reports the write-op action of origin.
func (m *machine) opWritten(origin int64, ok bool) {
	t := m.txns[origin]
	if t == nil || t.busy != busyWriteOp {
		return
	}
	t.busy = busyNone
	if ok {
		m.setOpPending(t, false)
	}
	m.update(t)
}

// commitInterrupted reports that the END_TRANSACTION let through by beginEnd stored the
// commit intent in of a multi-message transaction but not all its items. The commit is
// decided: the transaction stays unended, neither checked nor ended by END_TRANSACTION,
// until the verify action has stored the missing items (verified).
func (m *machine) commitInterrupted(origin int64, in *commitIntent) {
	t := m.txns[origin]
	if t == nil || t.state != stateResolving {
		return
	}
	t.state = statePending
	if t.intent == nil {
		m.unverified = append(m.unverified, origin)
	}
	t.intent = in
	m.update(t)
}

// verified reports the verify action of origin: committed when the committed message of
// its commit intent is stored. The transaction is then committed, and its op entry is
// written next; otherwise it is pending as before.
func (m *machine) verified(origin int64, committed bool) {
	t := m.txns[origin]
	if t == nil || t.busy != busyVerify {
		return
	}
	t.busy, t.intent = busyNone, nil
	if committed && t.state == statePending {
		m.logf(logWarn, origin, "transaction %d (group %s, uniq %s) was committed before the restart "+
			"but its op entry is missing; writing it", origin, t.group, t.uniq)
		m.finish(t, outcomeCommit, true)
	}
	m.update(t)
}

// verifyFailed reports that the verify action of origin could not read the store; it is
// retried at the next tick, the transaction still unverified.
func (m *machine) verifyFailed(origin int64) {
	if t := m.txns[origin]; t != nil && t.busy == busyVerify {
		t.busy = busyNone
		m.update(t)
	}
}

// lose ends t whose half message cannot be read any more.
func (m *machine) lose(t *txn) {
	m.logf(logError, t.origin, "half message of transaction %d (group %s, uniq %s) at offset %d is "+
		"unreadable; giving it up", t.origin, t.group, t.uniq, t.live.offset)
	m.finish(t, outcomeDiscard, true)
	m.update(t)
}

func (m *machine) setOpPending(t *txn, pending bool) {
	t.opPending = pending
	if pending {
		m.opWait[t.origin] = t
	} else {
		delete(m.opWait, t.origin)
	}
}

// remember keeps the outcome of a forgotten transaction for late END_TRANSACTIONs.
func (m *machine) remember(origin int64, oc outcome) {
	if m.cfg.recent <= 0 {
		return
	}
	if _, ok := m.recent[origin]; !ok {
		if len(m.recentFIFO) >= m.cfg.recent {
			delete(m.recent, m.recentFIFO[0])
			m.recentFIFO = m.recentFIFO[1:]
		}
		m.recentFIFO = append(m.recentFIFO, origin)
	}
	m.recent[origin] = oc
}

// update restores the invariants after t changed: t is in the due heap exactly when it is
// pending and idle, and it is forgotten once nothing can refer to it any more.
func (m *machine) update(t *txn) {
	wantHeap := t.state == statePending && t.busy == busyNone && t.intent == nil
	switch {
	case wantHeap && t.heapIdx < 0:
		heap.Push(&m.due, t)
	case wantHeap:
		heap.Fix(&m.due, t.heapIdx)
	case t.heapIdx >= 0:
		heap.Remove(&m.due, t.heapIdx)
	}
	if m.forgettable(t) {
		delete(m.txns, t.origin)
		m.remember(t.origin, t.outcome)
	}
}

// forgettable reports whether t is ended, idle, recorded, and entirely behind the half
// cursor, so no half message at or after the cursor can name it.
func (m *machine) forgettable(t *txn) bool {
	return m.settled(t) && !t.opPending
}

// settled is forgettable without the op entry: what the op queue needs before it moves
// past an entry naming t.
func (m *machine) settled(t *txn) bool {
	return t.state == stateEnded && t.busy == busyNone && t.maxCopy < m.halfCursor
}

// ---- Introspection (tests and Stats) ----

// pending counts transactions not yet ended.
func (m *machine) pending() int {
	n := 0
	for _, t := range m.txns {
		if t.state != stateEnded {
			n++
		}
	}
	return n
}

// dump describes the machine for scripted tests, deterministically.
func (m *machine) dump() string {
	var b strings.Builder
	fmt.Fprintf(&b, "cursors half=%d/%d op=%d/%d tokens=%d\n", m.halfCursor, m.halfNext, m.opCursor,
		m.opNext, m.tokens/tokenCost)
	origins := make([]int64, 0, len(m.txns))
	for o := range m.txns {
		origins = append(origins, o)
	}
	slices.Sort(origins)
	for _, o := range origins {
		t := m.txns[o]
		fmt.Fprintf(&b, "txn %d %s", o, t.describe())
		if t.state == statePending {
			fmt.Fprintf(&b, " due=%d", t.due)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func (t *txn) describe() string {
	s := [...]string{"pending", "resolving", "ended"}[t.state]
	if t.state == stateEnded {
		s += ":" + t.outcome.String()
	}
	s += fmt.Sprintf(" live=%d checks=%d/%d", t.live.offset, t.checks, t.label)
	if t.busy != busyNone {
		s += " busy=" + t.busy.String()
	}
	if t.opPending {
		s += " op-pending"
	}
	if t.intent != nil {
		s += " unverified"
	}
	return s
}

// dueHeap orders pending transactions by due time, then origin (deterministic).
type dueHeap []*txn

func (h dueHeap) Len() int { return len(h) }
func (h dueHeap) Less(i, j int) bool {
	if h[i].due != h[j].due {
		return h[i].due < h[j].due
	}
	return h[i].origin < h[j].origin
}
func (h dueHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].heapIdx, h[j].heapIdx = i, j
}

// Push implements heap.Interface.
func (h *dueHeap) Push(x any) {
	t, _ := x.(*txn)
	t.heapIdx = len(*h)
	*h = append(*h, t)
}

// Pop implements heap.Interface.
func (h *dueHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = nil
	t.heapIdx = -1
	*h = old[:len(old)-1]
	return t
}
