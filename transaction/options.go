package transaction

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"github.com/ferrymq/ferry/internal/mmap"
	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/store"
)

// Store is what the service needs from the message store (*store.Store implements it):
// the queues, and the record at a commit-log offset.
type Store interface {
	store.Queues
	// ReadMessage reads the record at a commit-log offset; see store.Store.ReadMessage.
	ReadMessage(phy int64) (message.Record, *store.View, error)
}

// Checker sends CHECK_TRANSACTION_STATE to one live producer of a group. The broker
// implements it over its client registry. Check must not block for long (the request is
// oneway) and must return an error when the check could not be handed to any producer
// connection: an undelivered check does not count against MaxChecks and is retried after
// RecheckInterval. The producer answers, if at all, with END_TRANSACTION (Service.End).
type Checker interface {
	Check(ctx context.Context, producerGroup string, req CheckRequest) error
}

// CheckRequest is one CHECK_TRANSACTION_STATE (remoting spec §8.3). The offsets are those
// of the copy of the half message the check is about; END_TRANSACTION may quote them (or
// those of any other copy of the same transaction, including the send response's). The
// broker adds its own name (ext bname) when it encodes the header.
type CheckRequest struct {
	// TranStateTableOffset is the copy's half-queue offset (ext tranStateTableOffset).
	TranStateTableOffset int64
	// CommitLogOffset is the copy's commit-log offset (ext commitLogOffset).
	CommitLogOffset int64
	// MsgID is the message's UNIQ_KEY (ext msgId).
	MsgID string
	// TransactionID is __transactionId__, or UNIQ_KEY when absent (ext transactionId).
	TransactionID string
	// OffsetMsgID is the copy's offset message id (ext offsetMsgId).
	OffsetMsgID string
	// Topic is the half topic (ext topic).
	Topic string
	// CheckTimes is the number of this check, 1 for the first (the copy's
	// TRANSACTION_CHECK_TIMES).
	CheckTimes int
	// Body is the copy's record with topic and queue id replaced by REAL_TOPIC and
	// REAL_QID, every property kept (PGROUP, UNIQ_KEY, TRANSACTION_CHECK_TIMES, ...), body
	// and sysflag exactly as stored: the request body.
	Body []byte
}

// EndRequest is one END_TRANSACTION (remoting spec §8.2).
type EndRequest struct {
	// ProducerGroup must equal the half message's PGROUP.
	ProducerGroup string
	// TranStateTableOffset is the half-queue offset the producer quotes.
	TranStateTableOffset int64
	// CommitLogOffset is the commit-log offset the producer quotes.
	CommitLogOffset int64
	// CommitOrRollback is message.TransactionCommitType (8), TransactionRollbackType (12)
	// or TransactionNotType (0, unknown: ignored). Other values are ignored too.
	CommitOrRollback int32
	// FromTransactionCheck is true when the producer answers a check. It changes nothing:
	// Ferry accepts a producer's own END_TRANSACTION at any time (see the package doc).
	FromTransactionCheck bool
	// MsgID (the UNIQ_KEY for the Go client) and TransactionID are informational.
	MsgID         string
	TransactionID string
}

// PrepareResult is what the send response of a half message needs.
type PrepareResult struct {
	// Append is the store's result for the half record (PhysicalOffset gives the offset
	// message id "msgId"; QueueOffset is the half-queue offset "queueOffset").
	Append store.PutResult
	// QueueID is the real queue the producer asked for ("queueId").
	QueueID int32
	// TransactionID is the UNIQ_KEY ("transactionId"), "" if the message has none.
	TransactionID string
}

// Errors returned by the service; test with errors.Is.
var (
	// ErrClosed means the service is shut down (or not started).
	ErrClosed = errors.New("transaction: service closed")
	// ErrNoProducerGroup means a half message lacks the PGROUP property.
	ErrNoProducerGroup = errors.New("transaction: half message has no producer group (PGROUP)")
)

// Options configures a Service. Start from DefaultOptions.
type Options struct {
	// Store holds the half, op and discard topics and the committed messages.
	Store Store
	// FS and Dir hold the cursor file (Dir/transaction_cursor).
	FS  mmap.FS
	Dir string
	// Checker sends check-backs to producers.
	Checker Checker
	// Rewrite, if set, is applied to a committed message before it is stored (the broker
	// routes DELAY / timer messages to the schedule service with it). An error fails the
	// END_TRANSACTION; the transaction stays pending and will be checked.
	Rewrite func(rec *message.Record) error
	// Offsets applies the consumer-offset updates a committed transaction carries (see
	// offsets.go); nil refuses half messages that carry any.
	Offsets OffsetCommitter
	// Logger receives discards, undelivered checks, skipped records and write failures.
	Logger zerolog.Logger
	// Clock returns the current time (time.Now by default).
	Clock func() time.Time

	// TransactionTimeout is how long after it is stored a half message is first checked
	// (6 s, RocketMQ transactionTimeOut), unless its CHECK_IMMUNITY_TIME_IN_SECONDS is
	// longer.
	TransactionTimeout time.Duration
	// CheckInterval is how often the service reads new half and op entries and checks
	// what is due (1 s). RocketMQ scans every 30–60 s because each scan re-reads the half
	// queue from its committed offset; Ferry keeps the state in memory, so a scan reads
	// only what was appended since the last one and pops due transactions from a heap —
	// an idle scan costs two queue-length lookups. The short interval only makes the first
	// check land close to TransactionTimeout; it does not check anything more often (see
	// RecheckInterval).
	CheckInterval time.Duration
	// RecheckInterval is the time between two checks of one transaction, and before a
	// check that could not be delivered is tried again (60 s, RocketMQ 4.x's scan period,
	// which is its effective spacing).
	RecheckInterval time.Duration
	// MaxChecks is how many checks a transaction gets; it is discarded RecheckInterval
	// after the last one if still unanswered (15, RocketMQ transactionCheckMax).
	MaxChecks int
	// MaxAge discards a transaction this long after its half message was stored, however
	// few checks were delivered (72 h, RocketMQ fileReservedTime).
	MaxAge time.Duration
	// ChecksPerSecond limits the checks sent (1000); due checks wait their turn, oldest
	// first.
	ChecksPerSecond int
	// MaxCursorLag bounds how far the half cursor (and a restart's replay) trails the
	// tail: a transaction that has waited this long and is not due yet is re-appended
	// (60 s).
	MaxCursorLag time.Duration
	// CheckTimeout bounds one Checker.Check call (3 s).
	CheckTimeout time.Duration
	// RecentOutcomes is how many ended transactions' outcomes are remembered after they
	// are forgotten, to answer late END_TRANSACTIONs precisely (100,000); older ones are
	// answered EndAlreadyResolved.
	RecentOutcomes int
	// ReadBatch is how many records one queue read returns (256).
	ReadBatch int
}

// DefaultOptions returns RocketMQ's defaults (with the scan interval discussed at
// CheckInterval) on the real file system. Store, Checker and Dir must be set.
func DefaultOptions() Options {
	return Options{
		FS:                 mmap.OSFS{},
		Logger:             zerolog.Nop(),
		Clock:              time.Now,
		TransactionTimeout: 6 * time.Second,
		CheckInterval:      time.Second,
		RecheckInterval:    60 * time.Second,
		MaxChecks:          15,
		MaxAge:             72 * time.Hour,
		ChecksPerSecond:    1000,
		MaxCursorLag:       60 * time.Second,
		CheckTimeout:       3 * time.Second,
		RecentOutcomes:     100_000,
		ReadBatch:          256,
	}
}

// Validate reports every invalid option, joined.
func (o *Options) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("transaction: "+format, args...)) }
	if o.Store == nil {
		bad("Store is required")
	}
	if o.Checker == nil {
		bad("Checker is required")
	}
	if o.FS == nil {
		bad("FS is required")
	}
	if o.Dir == "" {
		bad("Dir is required")
	}
	if o.Clock == nil {
		bad("Clock is required")
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"TransactionTimeout", o.TransactionTimeout}, {"CheckInterval", o.CheckInterval},
		{"RecheckInterval", o.RecheckInterval}, {"MaxAge", o.MaxAge},
		{"MaxCursorLag", o.MaxCursorLag}, {"CheckTimeout", o.CheckTimeout},
	} {
		if d.v < time.Millisecond {
			bad("%s must be at least 1ms, got %s", d.name, d.v)
		}
	}
	if o.MaxChecks < 1 {
		bad("MaxChecks must be at least 1, got %d", o.MaxChecks)
	}
	if o.ChecksPerSecond < 1 {
		bad("ChecksPerSecond must be at least 1, got %d", o.ChecksPerSecond)
	}
	if o.RecentOutcomes < 0 {
		bad("RecentOutcomes must not be negative, got %d", o.RecentOutcomes)
	}
	if o.ReadBatch < 1 {
		bad("ReadBatch must be at least 1, got %d", o.ReadBatch)
	}
	return errors.Join(errs...)
}

// machineConfig converts the options to the machine's milliseconds.
func (o *Options) machineConfig() machineConfig {
	ms := func(d time.Duration) int64 { return d.Milliseconds() }
	return machineConfig{
		timeout: ms(o.TransactionTimeout), recheck: ms(o.RecheckInterval),
		retry: ms(o.TransactionTimeout), maxChecks: o.MaxChecks, maxAge: ms(o.MaxAge),
		maxLag: ms(o.MaxCursorLag), rate: int64(o.ChecksPerSecond), recent: o.RecentOutcomes,
	}
}

// EndResult is the outcome of an END_TRANSACTION.
type EndResult uint8

// End results. Only EndCommitted and EndRolledBack changed anything.
const (
	// EndCommitted: the message was committed to its real topic by this request.
	EndCommitted EndResult = iota + 1
	// EndRolledBack: the transaction was rolled back by this request.
	EndRolledBack
	// EndAlreadyCommitted: an earlier request (or check answer) committed it.
	EndAlreadyCommitted
	// EndAlreadyRolledBack: an earlier request rolled it back.
	EndAlreadyRolledBack
	// EndAlreadyDiscarded: it was given up after MaxChecks or MaxAge and is in
	// TRANS_CHECK_MAX_TIME_TOPIC; a late answer no longer changes it.
	EndAlreadyDiscarded
	// EndAlreadyResolved: it ended long ago (or by a RocketMQ-written op entry); the
	// outcome is no longer known.
	EndAlreadyResolved
	// EndInProgress: another END_TRANSACTION for it (or its discard) is being written.
	EndInProgress
	// EndNotFound: no message exists at the commit-log offset.
	EndNotFound
	// EndIllegalOffsets: the record at the commit-log offset is not a half message with
	// that half-queue offset.
	EndIllegalOffsets
	// EndWrongGroup: the half message belongs to another producer group.
	EndWrongGroup
	// EndIgnored: the state was unknown (0) or not a transaction type; nothing to do.
	EndIgnored
	// EndOffsetConflict: a commit whose conditional offsets (PropertyOffsetsFrom) did not
	// hold; the transaction was rolled back by this request.
	EndOffsetConflict
)

// String returns the result's name.
func (r EndResult) String() string {
	names := [...]string{"", "Committed", "RolledBack", "AlreadyCommitted", "AlreadyRolledBack",
		"AlreadyDiscarded", "AlreadyResolved", "InProgress", "NotFound", "IllegalOffsets",
		"WrongGroup", "Ignored", "OffsetConflict"}
	if int(r) < len(names) && r != 0 {
		return names[r]
	}
	return fmt.Sprintf("EndResult(%d)", uint8(r))
}

// Changed reports whether the request ended the transaction.
func (r EndResult) Changed() bool {
	return r == EndCommitted || r == EndRolledBack || r == EndOffsetConflict
}

// Stats is a snapshot of the service's bookkeeping.
type Stats struct {
	// Pending counts transactions not yet ended.
	Pending int
	// HalfCursor and OpCursor are the current cursors (what the next persist writes).
	HalfCursor, OpCursor int64
}
