package dbtx

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/ferrymq/ferry/client"
	"github.com/ferrymq/ferry/message"
)

// Outbox errors; the errors of Send and Local wrap them.
var (
	// ErrCommitUnknown means the database's answer to COMMIT was an error: the business
	// change may or may not be stored. Send leaves such a transaction unknown, for the
	// check-back to settle from the table.
	ErrCommitUnknown = errors.New("dbtx: database commit outcome unknown")
	// ErrTooSlow means the database transaction was not ready to commit within half of
	// OutboxOptions.RollbackAfter; it was rolled back, since the checker may already
	// have rolled the message back.
	ErrTooSlow = errors.New("dbtx: database transaction took too long; rolled back")
)

// TxFunc is a business change, run in the database transaction tx. ctx ends when the
// change must be abandoned (Send's deadline, or the caller's ctx).
type TxFunc func(ctx context.Context, tx *sql.Tx) error

// OutboxOptions configure an Outbox.
type OutboxOptions struct {
	// Table is the outbox table's name, a plain identifier. Default "ferry_outbox".
	Table string
	// Dialect is the database's SQL flavour. Default SQLite.
	Dialect Dialect
	// RollbackAfter is how old a message (from its born time, the producer's clock) must
	// be for the checker to roll it back when its id is not in the table. Send gives its
	// database transaction half of it, from the start of Send: a transaction not ready
	// to commit by then is rolled back, so it cannot commit after the checker answered
	// rollback (unless the clocks of the producing and the checking hosts differ by more
	// than the other half). At least a second; default one minute.
	RollbackAfter time.Duration
	// Now is the clock; default time.Now. For tests.
	Now func() time.Time
}

// withDefaults fills the zero fields.
func (o OutboxOptions) withDefaults() OutboxOptions {
	if o.Table == "" {
		o.Table = "ferry_outbox"
	}
	if o.RollbackAfter == 0 {
		o.RollbackAfter = time.Minute
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// Validate reports invalid options (after the defaults are applied).
func (o OutboxOptions) Validate() error {
	o = o.withDefaults()
	if err := validateTable(o.Table); err != nil {
		return err
	}
	if err := o.Dialect.validate(); err != nil {
		return err
	}
	if o.RollbackAfter < time.Second {
		return fmt.Errorf("%w: RollbackAfter %s, want at least 1s", ErrInvalidOptions, o.RollbackAfter)
	}
	return nil
}

// Outbox records the ids of transactional messages whose business change committed, in
// the business's database; see the package documentation. It is safe for concurrent use.
//
// Table layout (one row per committed transaction):
//
//	msg_id         VARCHAR(128) PRIMARY KEY  the message's UNIQ_KEY (SendResult.MsgID)
//	producer_group VARCHAR(255) NOT NULL     the TransactionProducer's group
//	created_at     BIGINT NOT NULL           Unix milliseconds when the row was inserted; indexed
type Outbox struct {
	db   *sql.DB
	opts OutboxOptions

	insert, lookup, purge string
}

// NewOutbox returns the outbox of db, creating its table and index when missing.
func NewOutbox(ctx context.Context, db *sql.DB, opts OutboxOptions) (*Outbox, error) {
	if db == nil {
		return nil, fmt.Errorf("%w: nil database", ErrInvalidOptions)
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	d, t := opts.Dialect, opts.Table
	if err := d.ensureTable(ctx, db, "outbox", t, "msg_id VARCHAR(128) NOT NULL PRIMARY KEY, "+
		"producer_group VARCHAR(255) NOT NULL, created_at BIGINT NOT NULL"); err != nil {
		return nil, err
	}
	return &Outbox{db: db, opts: opts,
		insert: d.bind("INSERT INTO " + t + " (msg_id, producer_group, created_at) VALUES (?, ?, ?)"),
		lookup: d.bind("SELECT 1 FROM " + t + " WHERE msg_id = ?"),
		purge:  d.bind("DELETE FROM " + t + " WHERE created_at < ?"),
	}, nil
}

// Table is the outbox table's name.
func (o *Outbox) Table() string { return o.opts.Table }

// Send sends msg in a transaction of tp whose local transaction is fn and the outbox row
// of the message's id, in one database transaction (see Local). The message is
// committed when that database transaction committed, rolled back when fn failed or the
// database refused the row, and left to the check-back — tp's group's checker, which
// should be this outbox's Checker — when the database's answer to COMMIT was an error.
//
// The error wraps fn's error (the result's State is then TransactionRollback), or
// ErrTooSlow, or ErrCommitUnknown, or the errors of tp.SendInTransaction
// (client.ErrTransactionNotEnded when the outcome did not reach the broker: the checker
// settles it from the table).
//
// msg should carry no UNIQ_KEY, or a new one: SendInTransaction gives each send a fresh
// id, and the checker would take the row of an earlier send with the same id for this
// one's. (Resending a message after an error is safe without an id: the earlier send is
// settled by the check-back, the new one is another transaction.)
func (o *Outbox) Send(ctx context.Context, tp *client.TransactionProducer, msg *message.Message, fn TxFunc) (client.TransactionResult, error) {
	if tp == nil || fn == nil {
		return client.TransactionResult{}, fmt.Errorf("%w: nil producer or function", ErrInvalidOptions)
	}
	start := o.opts.Now()
	var lerr error
	res, err := tp.SendInTransaction(ctx, msg, func(ctx context.Context, _ *message.Message, sr client.SendResult) client.TransactionState {
		lerr = o.local(ctx, start, tp.Group(), sr.MsgID, fn)
		return StateOf(lerr)
	})
	return res, errors.Join(lerr, err)
}

// Local runs fn and inserts the outbox row of msgID (with group, the producer group) in
// one database transaction, and commits it; it returns nil when the commit succeeded.
// It is the database half of Send, for callers that run SendInTransaction themselves:
// call it from the local transaction with res.MsgID and return StateOf(err). The
// database transaction must be ready to commit within half of RollbackAfter from the
// call, or it is rolled back with ErrTooSlow.
func (o *Outbox) Local(ctx context.Context, group, msgID string, fn TxFunc) error {
	return o.local(ctx, o.opts.Now(), group, msgID, fn)
}

// StateOf is the transaction state that the outcome of Local calls for: commit for nil,
// unknown for ErrCommitUnknown (the checker will read the table), rollback otherwise.
func StateOf(err error) client.TransactionState {
	switch {
	case err == nil:
		return client.TransactionCommit
	case errors.Is(err, ErrCommitUnknown):
		return client.TransactionUnknown
	}
	return client.TransactionRollback
}

// local is Local with the budget counted from start.
func (o *Outbox) local(ctx context.Context, start time.Time, group, msgID string, fn TxFunc) error {
	if msgID == "" || len(msgID) > maxKeyLen {
		return fmt.Errorf("%w: message id %q: want 1 to %d bytes", ErrInvalidOptions, msgID, maxKeyLen)
	}
	deadline := start.Add(o.opts.RollbackAfter / 2)
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	tx, err := o.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("dbtx: begin: %w", err)
	}
	if err := fn(ctx, tx); err != nil {
		return errors.Join(err, rollback(tx))
	}
	if _, err := tx.ExecContext(ctx, o.insert, msgID, group, o.opts.Now().UnixMilli()); err != nil {
		return errors.Join(fmt.Errorf("dbtx: insert %s into %s: %w", msgID, o.opts.Table, err), rollback(tx))
	}
	if !o.opts.Now().Before(deadline) {
		return errors.Join(fmt.Errorf("%w (%s budget)", ErrTooSlow, o.opts.RollbackAfter/2), rollback(tx))
	}
	if err := ctx.Err(); err != nil {
		return errors.Join(fmt.Errorf("dbtx: %w", err), rollback(tx))
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("%w: %w", ErrCommitUnknown, err)
	}
	return nil
}

// rollback rolls tx back; a transaction already ended (ctx expired) is not an error.
func rollback(tx *sql.Tx) error {
	if err := tx.Rollback(); err != nil && !errors.Is(err, sql.ErrTxDone) {
		return fmt.Errorf("dbtx: rollback: %w", err)
	}
	return nil
}

// Checker answers the broker's check-backs from the outbox table: commit when the
// message's id is there, rollback when it is not and the message was born more than
// RollbackAfter ago, unknown otherwise (and when the database cannot be read: the broker
// asks again). Give it to NewTransactionProducer for the group Send uses.
func (o *Outbox) Checker() client.TransactionChecker {
	return client.TransactionCheckerFunc(o.check)
}

// check is the checker.
func (o *Outbox) check(ctx context.Context, msg *client.MessageExt) client.TransactionState {
	id := msg.UniqKey()
	if id == "" {
		id = msg.MsgID
	}
	var one int
	switch err := o.db.QueryRowContext(ctx, o.lookup, id).Scan(&one); {
	case err == nil:
		return client.TransactionCommit
	case !errors.Is(err, sql.ErrNoRows):
		return client.TransactionUnknown
	}
	if !msg.BornTime.IsZero() && o.opts.Now().Sub(msg.BornTime) > o.opts.RollbackAfter {
		return client.TransactionRollback
	}
	return client.TransactionUnknown
}

// Purge deletes the rows inserted more than olderThan ago and returns how many. A row
// must outlive every check-back of its message: purged earlier, an unended transaction
// that committed would be rolled back by the checker. With Ferry's defaults the broker
// checks a half message for TransactionTimeout + TransactionCheckMax ×
// TransactionCheckInterval (6 s + 15 × 30 s); keep rows for hours, not minutes.
func (o *Outbox) Purge(ctx context.Context, olderThan time.Duration) (int64, error) {
	return purge(ctx, o.db, o.purge, o.opts.Now, olderThan, o.opts.Table)
}

// purge runs a purge statement whose only argument is the cut-off time.
func purge(ctx context.Context, db *sql.DB, stmt string, now func() time.Time, olderThan time.Duration, table string, args ...any) (int64, error) {
	if olderThan <= 0 {
		return 0, fmt.Errorf("%w: purge age %s, want > 0", ErrInvalidOptions, olderThan)
	}
	res, err := db.ExecContext(ctx, stmt, append([]any{now().Add(-olderThan).UnixMilli()}, args...)...)
	if err != nil {
		return 0, fmt.Errorf("dbtx: purge %s: %w", table, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("dbtx: purge %s: %w", table, err)
	}
	return n, nil
}
