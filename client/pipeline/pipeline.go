// Package pipeline runs exactly-once consume-transform-produce loops on Ferry brokers:
// it consumes a topic, hands each message to a Transform, and sends the outputs together
// with the input's consumer offset in one transaction (client.SendTxMessages), so that
// each input's outputs appear exactly once, whatever kills the process or cuts its
// connections, and however many instances of the pipeline run in the group — as long as
// the broker group is not failed over to a slave, and, for a host crash, the broker
// flushes synchronously (see docs/delivery.md).
//
// How it holds:
//
//   - An input queue's offset is committed only inside the transaction that carries its
//     outputs, and conditionally (client.TxOffset.Conditional): the broker commits the
//     transaction only if the group's offset is still the one the pipeline read its
//     inputs from. Of two transactions built from the same input — a killed instance's
//     whose END_TRANSACTION arrives late and its successor's — at most one commits; the
//     other is rolled back by the broker (client.ErrOffsetConflict) and the pipeline
//     continues from the committed offset.
//   - The transaction producer's check-back answers "unknown" for a transaction this
//     instance is still ending and rollback for any other: a transaction whose end did
//     not arrive is redone from its inputs by whichever instance owns the queue.
//   - After any failure to commit, nothing more of the queue is processed until it is
//     read again from the broker's committed offset, so nothing is skipped.
//
// Limits: outputs must go to topics hosted by the input queue's broker group (one
// transaction is committed by one group; client.ErrNoCommonBroker otherwise, retried
// like any failed transaction, and logged); chunked input messages stop Run
// (ErrChunkedInput); one
// transaction carries at most client.MaxTransactionMessages outputs, so a single input
// may produce at most that many; the Transform must be deterministic for "exactly once"
// to mean "equal to a fault-free run" (it may run more than once per input — only one
// run's outputs become visible); inputs that produce no output are committed with the next
// transaction of their queue; a queue's offset must not be committed by anything else
// (a plain consumer of the same group, a reset) while the pipeline runs, or its
// transactions conflict until it re-reads the offset. Only Ferry brokers support it.
package pipeline

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/ferrymq/ferry/client"
	"github.com/ferrymq/ferry/message"
)

// Transform turns one input message into the messages to send for it. It must not keep
// in or the returned messages after it returns. An error stops Run (nothing of the
// transaction the input would have joined is committed).
type Transform func(ctx context.Context, in *client.MessageExt) ([]*message.Message, error)

// Options configure a Pipeline.
type Options struct {
	// Group is the consumer group of the input; its offsets are committed only by the
	// pipeline's transactions. Required.
	Group string
	// ProducerGroup is the transactional producer group (default: Group).
	ProducerGroup string
	// Input is the topic consumed. Required.
	Input string
	// Transform is applied to each input. Required.
	Transform Transform
	// MaxInputs is the most inputs of one queue one transaction covers (default 32,
	// 1..1024). Larger transactions cost fewer round trips; each is also bounded by
	// client.MaxTransactionMessages outputs.
	MaxInputs int
	// PollTimeout is how long one poll waits for input (default 1 s).
	PollTimeout time.Duration
	// RetryBackoff is the pause before a queue is read again after a failed
	// transaction (default 200 ms).
	RetryBackoff time.Duration
	// ConsumerOptions are passed to the lite-pull consumer (the pipeline starts a group
	// without offsets at the first offset unless they say otherwise, and adds
	// WithManualCommit and WithPollBatch).
	ConsumerOptions []client.LitePullOption
	// ProducerOptions are passed to the transaction producer (e.g. WithSelector).
	ProducerOptions []client.ProducerOption
	// Logger receives conflicts and retries.
	Logger zerolog.Logger
}

// ErrInvalidOptions reports Options that Validate refuses.
var ErrInvalidOptions = errors.New("pipeline: invalid options")

// ErrTransform wraps the error of a Transform, which stops Run.
var ErrTransform = errors.New("pipeline: transform failed")

// ErrChunkedInput stops Run when an input is a chunked message (client.MessageExt.Chunked):
// messages stored between its chunks may have been committed before it, so its place in
// the queue is no longer a safe offset to commit.
var ErrChunkedInput = errors.New("pipeline: chunked input messages are not supported")

// Validate reports every invalid setting, joined; zero values of the optional fields are
// valid (defaults are applied by New).
func (o *Options) Validate() error {
	var errs []error
	if o.Group == "" {
		errs = append(errs, fmt.Errorf("%w: no group", ErrInvalidOptions))
	}
	if o.Input == "" {
		errs = append(errs, fmt.Errorf("%w: no input topic", ErrInvalidOptions))
	}
	if o.Transform == nil {
		errs = append(errs, fmt.Errorf("%w: no transform", ErrInvalidOptions))
	}
	if o.MaxInputs < 0 || o.MaxInputs > 1024 {
		errs = append(errs, fmt.Errorf("%w: MaxInputs %d (1..1024)", ErrInvalidOptions, o.MaxInputs))
	}
	if o.PollTimeout < 0 || o.RetryBackoff < 0 {
		errs = append(errs, fmt.Errorf("%w: negative duration", ErrInvalidOptions))
	}
	return errors.Join(errs...)
}

// withDefaults returns o with the defaults of unset fields.
func (o Options) withDefaults() Options {
	if o.ProducerGroup == "" {
		o.ProducerGroup = o.Group
	}
	if o.MaxInputs == 0 {
		o.MaxInputs = 32
	}
	if o.PollTimeout == 0 {
		o.PollTimeout = time.Second
	}
	if o.RetryBackoff == 0 {
		o.RetryBackoff = 200 * time.Millisecond
	}
	return o
}

// Stats count what a Pipeline did since New.
type Stats struct {
	// Inputs counts the inputs whose transaction committed (or that produced nothing and
	// were committed with a later one).
	Inputs int64
	// Outputs counts the messages of committed transactions.
	Outputs int64
	// Transactions counts committed transactions.
	Transactions int64
	// Conflicts counts transactions the broker refused because the offset had moved.
	Conflicts int64
	// Failures counts transactions whose outcome is unknown or that failed otherwise
	// (their queue is read again from the committed offset).
	Failures int64
}

// Pipeline is one instance of a consume-transform-produce loop. Several instances (in
// one or several processes) with the same Group share the input's queues.
type Pipeline struct {
	opts Options
	lc   *client.LitePullConsumer
	tp   *client.TransactionProducer
	pos  map[client.MessageQueue]int64 // the committed offset each owned queue is read from
	// stale holds the queues whose consumer position may be past inputs not committed (a
	// failed transaction), with where their uncommitted inputs began: nothing of such a
	// queue is processed until a Seek to its committed offset succeeded.
	stale map[client.MessageQueue]int64
	// ending holds the ids of the transactions this instance has sent and not yet ended:
	// a check-back about one of them is answered "unknown" (its END_TRANSACTION is on its
	// way), any other is rolled back.
	ending sync.Map
	stats  struct {
		inputs, outputs, txns, conflicts, failures atomic.Int64
	}
	running atomic.Bool
}

// New returns a pipeline on cl. It contacts nobody until Run.
func New(cl *client.Client, opts Options) (*Pipeline, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	lopts := append([]client.LitePullOption{client.WithConsumeFrom(client.ConsumeFromFirstOffset)},
		opts.ConsumerOptions...)
	lopts = append(lopts, client.WithManualCommit(), client.WithPollBatch(opts.MaxInputs))
	lc, err := cl.NewLitePullConsumer(opts.Group, lopts...)
	if err != nil {
		return nil, fmt.Errorf("pipeline: consumer: %w", err)
	}
	if err := lc.Subscribe(opts.Input, "*"); err != nil {
		return nil, fmt.Errorf("pipeline: subscribe: %w", err)
	}
	p := &Pipeline{opts: opts, lc: lc, pos: map[client.MessageQueue]int64{}, stale: map[client.MessageQueue]int64{}}
	// A transaction whose end never arrived is redone from its inputs: roll it back,
	// unless this instance is still ending it.
	check := client.TransactionCheckerFunc(func(_ context.Context, m *client.MessageExt) client.TransactionState {
		if _, ending := p.ending.Load(m.MsgID); ending {
			return client.TransactionUnknown
		}
		return client.TransactionRollback
	})
	if p.tp, err = cl.NewTransactionProducer(opts.ProducerGroup, check, opts.ProducerOptions...); err != nil {
		return nil, fmt.Errorf("pipeline: producer: %w", err)
	}
	return p, nil
}

// Stats returns the counters.
func (p *Pipeline) Stats() Stats {
	return Stats{Inputs: p.stats.inputs.Load(), Outputs: p.stats.outputs.Load(),
		Transactions: p.stats.txns.Load(), Conflicts: p.stats.conflicts.Load(), Failures: p.stats.failures.Load()}
}

// Run consumes and transforms until ctx ends (then it returns nil) or a Transform fails
// (an error wrapping ErrTransform). It closes the pipeline's consumer and producer before
// it returns; a Pipeline runs once.
func (p *Pipeline) Run(ctx context.Context) (err error) {
	if !p.running.CompareAndSwap(false, true) {
		return fmt.Errorf("%w: Run called twice", ErrInvalidOptions)
	}
	defer func() {
		err = errors.Join(err, p.lc.Close(), p.tp.Close())
	}()
	if err := p.lc.Start(ctx); err != nil {
		return fmt.Errorf("pipeline: start consumer: %w", err)
	}
	for ctx.Err() == nil {
		msgs := p.lc.Poll(ctx, p.opts.PollTimeout)
		if err := p.process(ctx, msgs); err != nil {
			return err
		}
	}
	return nil
}

// process commits the polled msgs, queue by queue, each queue's in order.
func (p *Pipeline) process(ctx context.Context, msgs []*client.MessageExt) error {
	var order []client.MessageQueue
	byQueue := map[client.MessageQueue][]*client.MessageExt{}
	for _, m := range msgs {
		if _, ok := byQueue[m.Queue]; !ok {
			order = append(order, m.Queue)
		}
		byQueue[m.Queue] = append(byQueue[m.Queue], m)
	}
	for _, q := range order {
		if err := p.processQueue(ctx, q, byQueue[q]); err != nil {
			return err
		}
	}
	return nil
}

// processQueue transforms msgs (one queue's, in order) and commits them in transactions
// of at most MaxTransactionMessages outputs. On a conflict or failure the queue is read
// again from its committed offset and the rest of msgs is dropped.
func (p *Pipeline) processQueue(ctx context.Context, q client.MessageQueue, msgs []*client.MessageExt) error {
	if start, stale := p.stale[q]; stale {
		p.reseek(ctx, q, start) // msgs were read from where the consumer was: drop them
		return nil
	}
	from, ok := p.pos[q]
	if !ok {
		c, err := p.lc.Committed(ctx, q)
		if err != nil {
			p.opts.Logger.Warn().Err(err).Str("queue", q.String()).Msg("committed offset unknown; reading the queue again")
			p.retry(ctx, q, msgs[0].QueueOffset)
			return nil
		}
		from = c
		p.pos[q] = c
	}
	var outs []*message.Message
	next, pending := from, 0     // the offset after the inputs taken; inputs not committed yet
	start := msgs[0].QueueOffset // where the uncommitted inputs begin, should from be NoOffset
	flush := func() bool {
		if len(outs) == 0 {
			return true // nothing to send: the inputs ride on the next transaction
		}
		ok := p.commit(ctx, q, outs, from, next, pending, start)
		if ok {
			from, outs, pending, start = next, nil, 0, next
		}
		return ok
	}
	for _, m := range msgs {
		if m.Chunked() {
			return fmt.Errorf("%w: %s at %s:%d", ErrChunkedInput, m.MsgID, q, m.QueueOffset)
		}
		if from != client.NoOffset && m.QueueOffset < from {
			continue // read before the offset moved past it
		}
		got, err := p.opts.Transform(ctx, m)
		if err != nil {
			return fmt.Errorf("%w: %s at %s:%d: %w", ErrTransform, m.MsgID, q, m.QueueOffset, err)
		}
		if len(got) > client.MaxTransactionMessages {
			return fmt.Errorf("%w: %s produced %d messages, at most %d", ErrTransform, m.MsgID, len(got),
				client.MaxTransactionMessages)
		}
		if len(outs)+len(got) > client.MaxTransactionMessages && !flush() {
			return nil
		}
		outs = append(outs, got...)
		next, pending = m.QueueOffset+1, pending+1
	}
	flush()
	return nil
}

// commit sends outs with q's offset moving from from to next (pending inputs, the first
// at start) in one transaction and reports whether it committed; otherwise the queue is
// read again.
func (p *Pipeline) commit(ctx context.Context, q client.MessageQueue, outs []*message.Message, from, next int64,
	pending int, start int64) bool {
	tx := client.TxMessages{Msgs: outs, Group: p.opts.Group, Offsets: []client.TxOffset{
		{Queue: q, Offset: next, Conditional: true, From: from}}}
	var id string
	commit := func(_ context.Context, _ []*message.Message, res client.MessagesTransactionResult) client.TransactionState {
		id = res.MsgID
		p.ending.Store(id, true)
		return client.TransactionCommit
	}
	_, err := p.tp.SendTxMessages(ctx, tx, commit)
	if id != "" {
		p.ending.Delete(id)
	}
	switch {
	case err == nil:
		p.pos[q] = next
		p.stats.txns.Add(1)
		p.stats.inputs.Add(int64(pending))
		p.stats.outputs.Add(int64(len(outs)))
		return true
	case errors.Is(err, client.ErrOffsetConflict):
		p.stats.conflicts.Add(1)
		p.opts.Logger.Info().Str("queue", q.String()).Int64("from", from).
			Msg("the offset moved (another instance, or a late commit of this one's predecessor); reading the queue again")
	default:
		p.stats.failures.Add(1)
		p.opts.Logger.Warn().Err(err).Str("queue", q.String()).Int64("from", from).
			Msg("transaction not committed; reading the queue again")
	}
	p.retry(ctx, q, start)
	return false
}

// retry forgets q's position, marks it stale, waits RetryBackoff and seeks q to its
// committed offset, or to start (where the inputs not committed begin) when the group
// has none. Until a seek succeeds, q's messages are dropped unprocessed (processQueue).
func (p *Pipeline) retry(ctx context.Context, q client.MessageQueue, start int64) {
	delete(p.pos, q)
	p.stale[q] = start
	t := time.NewTimer(p.opts.RetryBackoff)
	select {
	case <-ctx.Done():
	case <-t.C:
	}
	t.Stop()
	p.reseek(ctx, q, start)
}

// reseek seeks the stale queue q to its committed offset (start when there is none) and,
// on success, makes it fresh again.
func (p *Pipeline) reseek(ctx context.Context, q client.MessageQueue, start int64) {
	c, err := p.lc.Committed(ctx, q)
	if err == nil {
		at := c
		if c == client.NoOffset {
			at = start
		}
		err = p.lc.Seek(q, at)
	}
	if err != nil {
		p.opts.Logger.Debug().Err(err).Str("queue", q.String()).Msg("seek after a failed transaction; trying again")
		return
	}
	delete(p.stale, q)
	p.pos[q] = c
}
