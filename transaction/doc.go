// Package transaction implements RocketMQ-4.x-compatible transactional messages: half
// messages, END_TRANSACTION and the check-back service (storage spec §8, remoting spec
// §8.1–§8.3).
//
// # Protocol
//
//	producer                         broker (Service)                        store
//	   |  SEND (sysflag PREPARED,        |                                      |
//	   |  TRAN_MSG, PGROUP, UNIQ_KEY)    |                                      |
//	   |-------------------------------->| Prepare: topic := half topic, q 0,   |
//	   |                                 | REAL_TOPIC/REAL_QID, type NOT ------>| half @ (q0, phy0)
//	   |<-- msgId(phy0), queueOffset q0 -|                                      |
//	   |  local transaction ...          |                                      |
//	   |  END_TRANSACTION (q0, phy0,     |                                      |
//	   |  8 commit / 12 rollback / 0)    |                                      |
//	   |-------------------------------->| End: read phy0, verify half, PGROUP, |
//	   |                                 | q0; commit: intent (COMMITTING) ---->| op topic
//	   |                                 | real msg (type COMMIT) ------------->| real topic
//	   |                                 | op entry "q0" (tag d) -------------->| op topic
//	   |                                 |                                      |
//	   |      ... no answer (0, lost, producer crashed) ...                     |
//	   |                                 | scan: due (6 s after store, or the   |
//	   |                                 | immunity); re-append a copy -------->| half @ (q1, phy1)
//	   |<-- CHECK_TRANSACTION_STATE -----| (q1, phy1, record with real topic)   |
//	   |  END_TRANSACTION (q1, phy1,     |                                      |
//	   |  fromTransactionCheck) -------->| End: copy q1 names transaction q0 -->| intent, real msg,
//	   |                                 |                                      | op "q0,q1"
//	   |                                 |                                      |
//	   |      ... unknown 15 times ...   | discard: copy ---------------------->| TRANS_CHECK_MAX_TIME_TOPIC
//	   |                                 | + op entry (DISCARD) + log           |
//
// # Transactions and copies
//
// A transaction is named by its origin: the half-queue offset of its half message as
// first stored. Like RocketMQ, Ferry re-appends ("renews") the half message before each
// check, so that the check carries fresh offsets, the check count is durable (the copy's
// TRANSACTION_CHECK_TIMES) and the half cursor can move past it. Unlike RocketMQ, every
// copy also carries TRAN_PREPARED_QUEUE_OFFSET = origin, FERRY_TRAN_NEXT_CHECK_MS (when
// the next check is due) and FERRY_TRAN_FIRST_STORE_MS (the original store time), so
// END_TRANSACTION quoting any copy — the send response's offsets or any check's — reaches
// the same transaction, and only the first one changes anything. RocketMQ loses that link,
// so a producer's late commit of the original and its answer to the check can commit twice.
//
// A transaction is pending (waiting for END_TRANSACTION or a check), resolving (an
// END_TRANSACTION is writing its outcome) or ended (committed, rolled back, discarded, or
// resolved by an op entry that does not say how). While pending it may have one action in
// flight: renew, check, move, discard, write-op or (after a restart) verify.
//
// # Guarantees
//
//   - A half message is first checked TransactionTimeout (6 s) after it was stored, or
//     CHECK_IMMUNITY_TIME_IN_SECONDS if that is longer; then every RecheckInterval.
//   - A check is emitted only for a pending transaction, so never after its outcome was
//     stored. (A check decided before a concurrent END_TRANSACTION may still be on the
//     wire; its answer is then a harmless duplicate.)
//   - At most MaxChecks checks are delivered; an undelivered check (no producer connected)
//     does not count and is retried. After the last check the transaction gets
//     RecheckInterval to answer, then it is discarded: copied to TRANS_CHECK_MAX_TIME_TOPIC,
//     recorded by an op entry and logged — never dropped silently. MaxAge (72 h) discards
//     transactions nobody can be asked about. A discard is final; a later
//     END_TRANSACTION is answered EndAlreadyDiscarded.
//   - Checks are rate limited (ChecksPerSecond, bursts of one second's worth), oldest due
//     first.
//   - END_TRANSACTION for a missing record is EndNotFound; for a record that is not the
//     half message at the quoted offsets EndIllegalOffsets; for another producer group
//     EndWrongGroup; for an ended transaction an Already* result, with nothing changed.
//   - The half cursor moves past every ended or superseded half message and waits only
//     for pending ones, which are re-appended at the tail when checked or after
//     MaxCursorLag; the op cursor moves past every op entry whose transactions are behind
//     the half cursor. Neither can stall behind a resolved or discarded message.
//
// # Durable state and restart
//
// The durable state is the half queue, the op queue and the cursor file (see format.go for
// the op-entry and cursor layouts). Start rebuilds the machine by replaying the half queue
// from the half cursor and then the op queue from the op cursor; copies carry their check
// count and due time, so checks and immunity survive a restart. Invariant: every ended
// transaction with a copy at or after the half cursor has its op entry at or after the op
// cursor. After a restart a copy's check counts as delivered, so at most MaxChecks are ever
// delivered (one may be lost). The cursors written each round are those of the previous
// round, giving the records that moved them a round to be flushed.
//
// A commit is three writes: a commit intent (an op-queue record that ends nothing), the
// committed message, the op entry. A broker killed between the last two leaves a pending
// transaction whose message is stored; without more, the check after the restart would
// commit it again. So the op cursor never passes the intent of an END_TRANSACTION still
// writing, and Start verifies every replayed intent whose transaction no op entry ended:
// it reads the committed message's queue from the offset the intent recorded for a COMMIT
// record quoting the intent's commit-log offset. Found, the transaction is committed and
// its op entry written; not found, it stays pending. An unverified transaction is neither
// checked nor ended (END_TRANSACTION is answered EndInProgress); a failed read is retried
// every round.
//
// # Several messages in one transaction
//
// A Ferry extension: a half message carrying FERRY_TRAN_ITEMS holds several messages
// (items), each with its own topic and queue, in its body; it is prepared, renewed,
// checked and ended like any half message, so a check asks once per transaction. Commit
// writes an intent listing the items' destinations, then the items, then the op entry;
// once the intent is stored the commit is decided, and an interrupted one (a kill, a
// failed write) is completed by writing only the missing items, found by their PREPARED TX
// OFFSET and FERRY_TRAN_ITEM index. All items of one transaction go to one broker: there
// is no commit across brokers. See multi.go. Such a half message may also carry consumer
// offsets of one group (offsets.go), applied through Options.Offsets after the items and
// before the op entry, and again (forward only) when an interrupted commit is completed.
//
// # Design
//
// The bookkeeping is a deterministic state machine (machine.go, tick.go): no goroutines,
// clocks, randomness or I/O; it consumes events (half and op entries read in queue order,
// END_TRANSACTION, time, results of its actions) and emits actions (renew, check,
// discard, write-op, verify, persist, log). Service is the thin driver: one scan goroutine reads
// the queues, ticks the machine every CheckInterval and executes the actions; End and
// Prepare run on the caller's goroutine. Scripted tests in testdata/*.txt drive the
// machine command by command.
//
// # Differences from RocketMQ, deliberately
//
//   - END_TRANSACTION after CHECK_IMMUNITY_TIME_IN_SECONDS is accepted (RocketMQ answers
//     ILLEGAL_OPERATION and waits for the check); the transaction identity makes it safe.
//   - The scan runs every second and keeps its state in memory (see CheckInterval); checks
//     of one transaction are RecheckInterval apart regardless.
//   - Re-appended copies keep the stored body and sysflag as they are (RocketMQ #1375), the
//     check count is not used up by undelivered checks (#8311), cursors advance on every
//     path (#9500, #1568, #1522), and a check is either sent or retried — there is no
//     bounded check pool to reject it (#1519).
//   - A commit interrupted by a crash between the committed message and its op entry is
//     not committed again after the restart (RocketMQ checks such a transaction again and
//     commits it twice): the commit intent lets Start find the message.
//   - A DELAY level or timer property never reaches the store's delay handling while the
//     message is a half message (Prepare writes straight to the half topic, so REAL_TOPIC
//     cannot be overwritten, #1540); it is honoured at commit through Options.Rewrite.
package transaction
