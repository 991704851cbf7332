package dbtx

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/ferrymq/ferry/client"
	"github.com/ferrymq/ferry/protocol"
)

// InboxOptions configure an Inbox.
type InboxOptions struct {
	// Group is the consumer group whose messages the inbox records (required): each
	// group consumes a message once.
	Group string
	// Table is the inbox table's name, a plain identifier. Default "ferry_inbox".
	Table string
	// Dialect is the database's SQL flavour. Default SQLite.
	Dialect Dialect
	// Key returns the deduplication key of a message, 1 to 128 bytes. Default:
	// its message id (UNIQ_KEY), which the producer sets once and keeps across its
	// retries, and which redeliveries (retry topic, offset reset, rebalance) keep.
	Key func(*client.MessageExt) string
	// Now is the clock; default time.Now. For tests.
	Now func() time.Time
}

// withDefaults fills the zero fields.
func (o InboxOptions) withDefaults() InboxOptions {
	if o.Table == "" {
		o.Table = "ferry_inbox"
	}
	if o.Key == nil {
		o.Key = func(m *client.MessageExt) string { return m.MsgID }
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// Validate reports invalid options (after the defaults are applied).
func (o InboxOptions) Validate() error {
	o = o.withDefaults()
	if err := protocol.ValidateGroup(o.Group); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	if err := validateTable(o.Table); err != nil {
		return err
	}
	return o.Dialect.validate()
}

// Inbox records the messages a consumer group has applied, in the business's database;
// see the package documentation. It is safe for concurrent use.
//
// Table layout (one row per applied message and group):
//
//	consumer_group VARCHAR(255) NOT NULL  } primary key
//	msg_id         VARCHAR(128) NOT NULL  } (InboxOptions.Key of the message)
//	created_at     BIGINT NOT NULL        Unix milliseconds when the row was inserted; indexed
type Inbox struct {
	db   *sql.DB
	opts InboxOptions

	claim, purge string
}

// NewInbox returns the inbox of db for opts.Group, creating its table and index when
// missing. Several groups may share one table.
func NewInbox(ctx context.Context, db *sql.DB, opts InboxOptions) (*Inbox, error) {
	if db == nil {
		return nil, fmt.Errorf("%w: nil database", ErrInvalidOptions)
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	d, t := opts.Dialect, opts.Table
	if err := d.ensureTable(ctx, db, "inbox", t, "consumer_group VARCHAR(255) NOT NULL, msg_id VARCHAR(128) NOT NULL, "+
		"created_at BIGINT NOT NULL, PRIMARY KEY (consumer_group, msg_id)"); err != nil {
		return nil, err
	}
	return &Inbox{db: db, opts: opts,
		claim: d.insertIfAbsent(t, "consumer_group", "msg_id", "created_at"),
		purge: d.bind("DELETE FROM " + t + " WHERE created_at < ? AND consumer_group = ?"),
	}, nil
}

// Table is the inbox table's name.
func (in *Inbox) Table() string { return in.opts.Table }

// Handle applies msg once: in one database transaction it inserts the message's row —
// unless it is there already, in which case it does nothing and returns skipped — then
// runs fn, and commits. When fn fails the transaction is rolled back (no row: a
// redelivery runs fn again) and its error is returned, wrapped. A concurrent Handle of
// the same message waits on the row's key until this one ends, then is skipped if this
// one committed. A failed COMMIT leaves it unknown whether msg was applied; the
// redelivery tells (skipped when it was).
func (in *Inbox) Handle(ctx context.Context, msg *client.MessageExt, fn TxFunc) (skipped bool, err error) {
	if msg == nil || fn == nil {
		return false, fmt.Errorf("%w: nil message or function", ErrInvalidOptions)
	}
	key := in.opts.Key(msg)
	if key == "" || len(key) > maxKeyLen {
		return false, fmt.Errorf("%w: message %s: key %q: want 1 to %d bytes", ErrInvalidOptions, msg.OffsetMsgID, key, maxKeyLen)
	}
	tx, err := in.db.BeginTx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("dbtx: begin: %w", err)
	}
	res, err := tx.ExecContext(ctx, in.claim, in.opts.Group, key, in.opts.Now().UnixMilli())
	var n int64
	if err == nil {
		n, err = res.RowsAffected()
	}
	if err != nil {
		return false, errors.Join(fmt.Errorf("dbtx: claim %s in %s: %w", key, in.opts.Table, err), rollback(tx))
	}
	if n == 0 {
		return true, rollback(tx)
	}
	if err := fn(ctx, tx); err != nil {
		return false, errors.Join(err, rollback(tx))
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("%w: %w", ErrCommitUnknown, err)
	}
	return false, nil
}

// MessageTxFunc is a consumer's business change for one message, run in the database
// transaction tx.
type MessageTxFunc func(ctx context.Context, tx *sql.Tx, msg *client.MessageExt) error

// ConsumeFunc returns a push-consumer handler that applies each message of a batch with
// Handle and fn. A failure stops the batch and returns ConsumeRetryLater: the batch is
// delivered again, and its messages applied before the failure are then skipped.
// onError, when not nil, is told of each failure.
func (in *Inbox) ConsumeFunc(fn MessageTxFunc, onError func(*client.MessageExt, error)) client.ConsumeFunc {
	return func(ctx context.Context, msgs []*client.MessageExt) client.ConsumeResult {
		for _, m := range msgs {
			if _, err := in.Handle(ctx, m, func(ctx context.Context, tx *sql.Tx) error { return fn(ctx, tx, m) }); err != nil {
				if onError != nil {
					onError(m, err)
				}
				return client.ConsumeRetryLater
			}
		}
		return client.ConsumeSuccess
	}
}

// Purge deletes the group's rows inserted more than olderThan ago and returns how many.
// A message redelivered after its row is purged is applied again: keep rows longer than
// the broker keeps messages (its fileReservedTime, 72 hours by default) when offsets may
// be reset to the oldest, and at least longer than the retry schedule (almost 5 hours
// over 16 retries with RocketMQ's delay levels).
func (in *Inbox) Purge(ctx context.Context, olderThan time.Duration) (int64, error) {
	return purge(ctx, in.db, in.purge, in.opts.Now, olderThan, in.opts.Table, in.opts.Group)
}
