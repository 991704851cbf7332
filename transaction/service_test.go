package transaction

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/ferrymq/ferry/internal/mmap"
	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/store"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const testGroup = "PG"

var (
	bornHost  = netip.MustParseAddrPort("10.0.0.7:40000")
	storeHost = netip.MustParseAddrPort("10.0.0.1:10911")
)

// testClock is an injected clock the test moves by hand.
type testClock struct{ ms atomic.Int64 }

func newTestClock() *testClock {
	c := &testClock{}
	c.ms.Store(1_700_000_000_000)
	return c
}

func (c *testClock) now() time.Time          { return time.UnixMilli(c.ms.Load()) }
func (c *testClock) advance(d time.Duration) { c.ms.Add(d.Milliseconds()) }

// openTestStore opens and starts a small store on fsys.
func openTestStore(t testing.TB, fsys mmap.FS, clock *testClock) *store.Store {
	t.Helper()
	o := store.DefaultOptions()
	o.Dir, o.FS, o.StoreHost = "store", fsys, storeHost
	o.SegmentSize = 4 << 20
	o.UnitsPerFile = 4096
	o.IndexEnabled = false
	o.CheckpointInterval = 20 * time.Millisecond
	o.FlushInterval = 10 * time.Millisecond
	o.DiskCheckInterval = 50 * time.Millisecond
	o.CleanInterval = time.Hour
	o.Clock = clock.now
	st, err := store.Open(o)
	require.NoError(t, err)
	st.Start()
	return st
}

// scriptedChecker answers checks from a per-transaction script by calling End from inside
// Check, as a producer answering on the same connection would, and records every check.
type scriptedChecker struct {
	t   testing.TB
	svc atomic.Pointer[Service]

	mu struct {
		sync.Mutex
		answers   map[string][]int32 // UNIQ_KEY → answers, one per check (0: unknown)
		checks    map[string]int     // delivered checks
		resolved  map[string]string  // what End said changed it (by this checker or the test)
		requests  []CheckRequest
		down      bool
		late      []string // checks that arrived after the test saw the transaction end
		endErrors []error
	}
}

func newScriptedChecker(t testing.TB) *scriptedChecker {
	c := &scriptedChecker{t: t}
	c.mu.answers, c.mu.checks, c.mu.resolved = map[string][]int32{}, map[string]int{}, map[string]string{}
	return c
}

var errNoProducer = errors.New("no producer of the group is connected")

func (c *scriptedChecker) Check(_ context.Context, group string, req CheckRequest) error {
	rec, _, err := message.DecodeRecord(req.Body)
	if err != nil {
		return fmt.Errorf("check body: %w", err)
	}
	uniq, _ := rec.Property(message.PropertyUniqKey)
	pg, _ := rec.Property(message.PropertyProducerGroup)
	c.mu.Lock()
	if c.mu.down {
		c.mu.Unlock()
		return errNoProducer
	}
	u := string(uniq)
	c.mu.checks[u]++
	c.mu.requests = append(c.mu.requests, req)
	if _, ok := c.mu.resolved[u]; ok {
		c.mu.late = append(c.mu.late, u)
	}
	var answer int32
	if a := c.mu.answers[u]; len(a) > 0 {
		answer, c.mu.answers[u] = a[0], a[1:]
	}
	c.mu.Unlock()
	// What the Go client checks before answering.
	if string(pg) != group || string(uniq) != req.MsgID || string(rec.Topic) == halfTopic {
		c.t.Errorf("bad check for %s: group %q/%q, msgId %q, topic %q", u, pg, group, req.MsgID, rec.Topic)
	}
	if answer != 0 {
		res, err := c.svc.Load().End(EndRequest{ProducerGroup: group, TranStateTableOffset: req.TranStateTableOffset,
			CommitLogOffset: req.CommitLogOffset, CommitOrRollback: answer, FromTransactionCheck: true, MsgID: u})
		c.noteEnd(u, res, err)
	}
	return nil
}

// noteEnd records an END_TRANSACTION result.
func (c *scriptedChecker) noteEnd(uniq string, res EndResult, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		c.mu.endErrors = append(c.mu.endErrors, err)
	}
	if res.Changed() {
		c.mu.resolved[uniq] = res.String()
	}
}

func (c *scriptedChecker) setDown(down bool) {
	c.mu.Lock()
	c.mu.down = down
	c.mu.Unlock()
}

func (c *scriptedChecker) checks(uniq string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.checks[uniq]
}

// testService builds, starts and registers (for cleanup) a service on st.
func testService(t testing.TB, st Store, fsys mmap.FS, clock *testClock, c Checker, edit func(*Options)) *Service {
	t.Helper()
	o := testOptions(st, fsys, clock, c)
	if edit != nil {
		edit(&o)
	}
	s, err := New(o)
	require.NoError(t, err)
	if sc, ok := c.(*scriptedChecker); ok {
		sc.svc.Store(s)
	}
	require.NoError(t, s.Start())
	t.Cleanup(func() { _ = s.Shutdown(context.Background()) })
	return s
}

// testOptions are the options of testService.
func testOptions(st Store, fsys mmap.FS, clock *testClock, c Checker) Options {
	o := DefaultOptions()
	o.Store, o.FS, o.Dir, o.Checker, o.Clock = st, fsys, "txn", c, clock.now
	o.CheckInterval = time.Hour // rounds are run by scanNow
	o.RecheckInterval = 10 * time.Second
	o.MaxChecks = 5
	o.ChecksPerSecond = 100_000
	return o
}

// env is one service on one store on a MemFS.
type env struct {
	t       *testing.T
	fs      *mmap.MemFS
	clock   *testClock
	st      *store.Store
	checker *scriptedChecker
	svc     *Service
	edit    func(*Options)
}

func newEnv(t *testing.T, edit func(*Options)) *env {
	e := &env{t: t, fs: mmap.NewMemFS(), clock: newTestClock(), checker: newScriptedChecker(t), edit: edit}
	e.st = openTestStore(t, e.fs, e.clock)
	t.Cleanup(func() { _ = e.st.Shutdown(context.Background()) })
	e.svc = testService(t, e.st, e.fs, e.clock, e.checker, edit)
	return e
}

// restart shuts the service and the store down and opens both again on the same files.
func (e *env) restart() {
	ctx := context.Background()
	require.NoError(e.t, e.svc.Shutdown(ctx))
	require.NoError(e.t, e.st.Shutdown(ctx))
	e.st = openTestStore(e.t, e.fs, e.clock)
	e.t.Cleanup(func() { _ = e.st.Shutdown(context.Background()) })
	e.svc = testService(e.t, e.st, e.fs, e.clock, e.checker, e.edit)
}

// round waits until the store has dispatched everything, then runs one scan round.
func (e *env) round() {
	e.dispatched()
	e.svc.scanNow()
}

// dispatched waits until every record is in the consume queues.
func (e *env) dispatched() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(e.t, e.st.WaitDispatched(ctx, e.st.CommitLog().MaxOffset()))
}

// prepare sends a half message for topic/queue with UNIQ_KEY uniq.
func (e *env) prepare(topic string, qid int32, uniq string, extra ...string) PrepareResult {
	e.t.Helper()
	props := map[string]string{
		message.PropertyUniqKey: uniq, message.PropertyProducerGroup: testGroup,
		message.PropertyTransactionPrepared: "true", message.PropertyTags: "TagA",
	}
	for i := 0; i+1 < len(extra); i += 2 {
		props[extra[i]] = extra[i+1]
	}
	raw, err := message.EncodeProperties(props)
	require.NoError(e.t, err)
	rec := message.Record{
		Topic: []byte(topic), QueueID: qid, Flag: 3, SysFlag: message.TransactionPreparedType,
		BornTimestamp: e.clock.ms.Load(), BornHost: bornHost, Body: []byte("body-" + uniq), Properties: raw,
	}
	res, err := e.svc.Prepare(&rec, false)
	require.NoError(e.t, err)
	require.Equal(e.t, topic, string(rec.Topic), "Prepare must not modify its argument")
	return res
}

// end sends END_TRANSACTION quoting the send response p.
func (e *env) end(p PrepareResult, uniq string, state int32) EndResult {
	e.t.Helper()
	res, err := e.svc.End(EndRequest{ProducerGroup: testGroup, TranStateTableOffset: p.Append.QueueOffset,
		CommitLogOffset: p.Append.PhysicalOffset, CommitOrRollback: state, MsgID: uniq, TransactionID: uniq})
	require.NoError(e.t, err)
	e.checker.noteEnd(uniq, res, nil)
	return res
}

// queue reads a whole queue of the store as decoded records (copied).
func (e *env) queue(topic string, qid int32) []message.Record {
	e.dispatched()
	var out []message.Record
	for off := e.st.MinOffset(topic, qid); off < e.st.MaxOffset(topic, qid); {
		r, err := e.st.GetMessages(topic, qid, off, 64, 8<<20, nil)
		require.NoError(e.t, err)
		for _, b := range r.Messages {
			rec, _, err := message.DecodeRecord(b)
			require.NoError(e.t, err)
			rec.Body = append([]byte(nil), rec.Body...)
			rec.Topic = append([]byte(nil), rec.Topic...)
			rec.Properties = append([]byte(nil), rec.Properties...)
			out = append(out, rec)
		}
		off = r.NextBeginOffset
		r.Release()
	}
	return out
}

func prop(rec *message.Record, key string) string {
	v, _ := rec.Property(key)
	return string(v)
}

func TestPrepareStoresHalfMessage(t *testing.T) {
	e := newEnv(t, nil)
	p := e.prepare("Orders", 2, "U1", message.PropertyTransactionPreparedQueueOffset, "0",
		PropertyNextCheckTime, "1", message.PropertyTransactionCheckTimes, "9", message.PropertyDelayLevel, "3")
	assert.Equal(t, int32(2), p.QueueID)
	assert.Equal(t, "U1", p.TransactionID)
	rec, v, err := e.st.ReadMessage(p.Append.PhysicalOffset)
	require.NoError(t, err)
	defer v.Release()
	assert.Equal(t, halfTopic, string(rec.Topic))
	assert.Equal(t, int32(0), rec.QueueID)
	assert.Equal(t, p.Append.QueueOffset, rec.QueueOffset)
	assert.Equal(t, message.TransactionNotType, message.TransactionType(rec.SysFlag))
	assert.Equal(t, "Orders", prop(&rec, message.PropertyRealTopic))
	assert.Equal(t, "2", prop(&rec, message.PropertyRealQueueID))
	assert.Equal(t, "U1", prop(&rec, message.PropertyTransactionID))
	assert.Equal(t, "3", prop(&rec, message.PropertyDelayLevel), "kept for the commit")
	for _, k := range []string{message.PropertyTransactionPreparedQueueOffset, PropertyNextCheckTime,
		message.PropertyTransactionCheckTimes} {
		_, ok := rec.Property(k)
		assert.False(t, ok, "%s must be stripped", k)
	}

	noGroup := message.Record{Topic: []byte("Orders"), Body: []byte("x")}
	_, err = e.svc.Prepare(&noGroup, false)
	require.ErrorIs(t, err, ErrNoProducerGroup)
}

func TestEndValidation(t *testing.T) {
	e := newEnv(t, nil)
	p := e.prepare("Orders", 0, "U1")
	plain := message.Record{Topic: []byte("Orders"), Body: []byte("plain")}
	pr, err := e.st.PutMessage(&plain, false)
	require.NoError(t, err)

	req := func(edit func(*EndRequest)) EndResult {
		r := EndRequest{ProducerGroup: testGroup, TranStateTableOffset: p.Append.QueueOffset,
			CommitLogOffset: p.Append.PhysicalOffset, CommitOrRollback: message.TransactionCommitType}
		edit(&r)
		res, err := e.svc.End(r)
		require.NoError(t, err)
		return res
	}
	assert.Equal(t, EndNotFound, req(func(r *EndRequest) { r.CommitLogOffset = 1 << 40 }))
	assert.Equal(t, EndIllegalOffsets, req(func(r *EndRequest) { r.CommitLogOffset = pr.PhysicalOffset }))
	assert.Equal(t, EndIllegalOffsets, req(func(r *EndRequest) { r.TranStateTableOffset++ }))
	assert.Equal(t, EndWrongGroup, req(func(r *EndRequest) { r.ProducerGroup = "other" }))
	assert.Equal(t, EndIgnored, req(func(r *EndRequest) { r.CommitOrRollback = message.TransactionNotType }))
	assert.Equal(t, EndIgnored, req(func(r *EndRequest) { r.CommitOrRollback = 3 }))
	assert.Equal(t, EndRolledBack, req(func(r *EndRequest) { r.CommitOrRollback = message.TransactionRollbackType }))
	assert.Equal(t, EndAlreadyRolledBack, req(func(*EndRequest) {}))
	e.round()
	assert.Len(t, e.queue("Orders", 0), 1, "only the plain message: nothing committed")
	assert.Equal(t, "AlreadyRolledBack", EndAlreadyRolledBack.String())

	require.NoError(t, e.svc.Shutdown(context.Background()))
	_, err = e.svc.End(EndRequest{CommitOrRollback: message.TransactionCommitType})
	require.ErrorIs(t, err, ErrClosed)
}

func TestCommitWritesRealMessage(t *testing.T) {
	var rewrites atomic.Int32
	e := newEnv(t, func(o *Options) {
		o.Rewrite = func(rec *message.Record) error {
			if _, ok := rec.Property(message.PropertyDelayLevel); ok {
				rewrites.Add(1)
				props, err := message.SetProperty(rec.Properties, message.PropertyRealTopic, string(rec.Topic))
				rec.Topic, rec.Properties = []byte("SCHEDULE_TOPIC_XXXX"), props
				return err
			}
			return nil
		}
	})
	p := e.prepare("Orders", 1, "U1")
	pd := e.prepare("Orders", 1, "U2", message.PropertyDelayLevel, "2")
	assert.Equal(t, EndCommitted, e.end(p, "U1", message.TransactionCommitType))
	assert.Equal(t, EndCommitted, e.end(pd, "U2", message.TransactionCommitType))
	e.round()

	got := e.queue("Orders", 1)
	require.Len(t, got, 1)
	rec := got[0]
	assert.Equal(t, message.TransactionCommitType, message.TransactionType(rec.SysFlag))
	assert.Equal(t, p.Append.PhysicalOffset, rec.PreparedTxOffset)
	assert.Equal(t, "body-U1", string(rec.Body))
	assert.Equal(t, int32(3), rec.Flag)
	assert.Equal(t, bornHost, rec.BornHost)
	assert.Equal(t, "U1", prop(&rec, message.PropertyUniqKey))
	assert.Equal(t, testGroup, prop(&rec, message.PropertyProducerGroup))
	for _, k := range []string{message.PropertyRealTopic, message.PropertyRealQueueID,
		message.PropertyTransactionPrepared, message.PropertyTransactionPreparedQueueOffset} {
		_, ok := rec.Property(k)
		assert.False(t, ok, "%s must be removed", k)
	}
	assert.Equal(t, int32(1), rewrites.Load())
	require.Len(t, e.queue("SCHEDULE_TOPIC_XXXX", 1), 1, "the delayed commit went where Rewrite sent it")

	// Each commit: its intent, then (after the message) its op entry.
	ops := e.queue(opTopic, 0)
	require.Len(t, ops, 4)
	intent, err := decodeOpEntry(ops[0].Body, ops[0].Properties)
	require.NoError(t, err)
	assert.Equal(t, opEntry{offsets: []int64{p.Append.QueueOffset}, intent: &commitIntent{
		origin: p.Append.QueueOffset, phy: p.Append.PhysicalOffset, queueID: 1, topic: "Orders"}}, intent)
	_, err = decodeOpEntry(ops[0].Body, opProps(t, ""))
	require.ErrorIs(t, err, errBadOpEntry, "RocketMQ reads the body: it must name no half message")
	op, err := decodeOpEntry(ops[1].Body, ops[1].Properties)
	require.NoError(t, err)
	assert.Equal(t, opEntry{offsets: []int64{p.Append.QueueOffset}, outcome: outcomeCommit}, op)
	delayed, err := decodeOpEntry(ops[2].Body, ops[2].Properties)
	require.NoError(t, err)
	assert.Equal(t, &commitIntent{origin: pd.Append.QueueOffset, phy: pd.Append.PhysicalOffset, queueID: 1,
		topic: "SCHEDULE_TOPIC_XXXX"}, delayed.intent, "the intent names where Rewrite sent the message")
}

func TestRewriteErrorLeavesTransactionPending(t *testing.T) {
	fail := atomic.Bool{}
	fail.Store(true)
	e := newEnv(t, func(o *Options) {
		o.Rewrite = func(*message.Record) error {
			if fail.Load() {
				return errors.New("schedule service unavailable")
			}
			return nil
		}
	})
	p := e.prepare("Orders", 0, "U1")
	_, err := e.svc.End(EndRequest{ProducerGroup: testGroup, TranStateTableOffset: p.Append.QueueOffset,
		CommitLogOffset: p.Append.PhysicalOffset, CommitOrRollback: message.TransactionCommitType})
	require.Error(t, err)
	e.round()
	assert.Equal(t, 1, e.svc.Stats().Pending)
	fail.Store(false)
	e.checker.mu.Lock()
	e.checker.mu.answers["U1"] = []int32{message.TransactionCommitType}
	e.checker.mu.Unlock()
	e.clock.advance(6 * time.Second)
	e.round()
	assert.Equal(t, 1, e.checker.checks("U1"))
	assert.Len(t, e.queue("Orders", 0), 1)
	assert.Equal(t, 0, e.svc.Stats().Pending)
}

func TestCheckCarriesCopyOffsets(t *testing.T) {
	e := newEnv(t, nil)
	p := e.prepare("Orders", 0, "U1")
	e.round()
	e.clock.advance(5999 * time.Millisecond)
	e.round()
	assert.Equal(t, 0, e.checker.checks("U1"), "not before the transaction timeout")
	e.clock.advance(time.Millisecond)
	e.round()
	require.Equal(t, 1, e.checker.checks("U1"))

	e.checker.mu.Lock()
	req := e.checker.mu.requests[0]
	e.checker.mu.Unlock()
	assert.NotEqual(t, p.Append.PhysicalOffset, req.CommitLogOffset, "the check quotes the re-appended copy")
	assert.Equal(t, 1, req.CheckTimes)
	assert.Equal(t, "U1", req.MsgID)
	assert.Equal(t, "U1", req.TransactionID)
	assert.Equal(t, halfTopic, req.Topic)
	assert.Equal(t, message.OffsetMsgID(storeHost, req.CommitLogOffset), req.OffsetMsgID)
	body, _, err := message.DecodeRecord(req.Body)
	require.NoError(t, err)
	assert.Equal(t, "Orders", string(body.Topic))
	assert.Equal(t, req.TranStateTableOffset, body.QueueOffset)
	assert.Equal(t, req.CommitLogOffset, body.PhysicalOffset)
	assert.Equal(t, "1", prop(&body, message.PropertyTransactionCheckTimes))
	assert.Equal(t, strconv.FormatInt(p.Append.QueueOffset, 10),
		prop(&body, message.PropertyTransactionPreparedQueueOffset))

	// The producer answers the check and, late, its own END with the original offsets:
	// one commit.
	res, err := e.svc.End(EndRequest{ProducerGroup: testGroup, TranStateTableOffset: req.TranStateTableOffset,
		CommitLogOffset: req.CommitLogOffset, CommitOrRollback: message.TransactionCommitType, FromTransactionCheck: true})
	require.NoError(t, err)
	assert.Equal(t, EndCommitted, res)
	assert.Equal(t, EndAlreadyCommitted, e.end(p, "U1", message.TransactionCommitType))
	e.round()
	got := e.queue("Orders", 0)
	require.Len(t, got, 1)
	assert.Equal(t, req.CommitLogOffset, got[0].PreparedTxOffset)
}

func TestCursorFilePersisted(t *testing.T) {
	e := newEnv(t, nil)
	for i := range 10 {
		u := fmt.Sprintf("U%d", i)
		e.end(e.prepare("Orders", 0, u), u, message.TransactionRollbackType)
	}
	for range 3 {
		e.round()
	}
	st := e.svc.Stats()
	assert.Equal(t, Stats{Pending: 0, HalfCursor: 10, OpCursor: 10}, st)
	b, err := e.fs.ReadFile("txn/" + cursorFileName)
	require.NoError(t, err)
	c, err := decodeCursors(b)
	require.NoError(t, err)
	assert.Equal(t, cursors{half: 10, op: 10}, c)

	// A corrupt cursor file costs a full replay, nothing else.
	require.NoError(t, e.svc.Shutdown(context.Background()))
	require.NoError(t, e.fs.WriteFileAtomic("txn/"+cursorFileName, []byte("garbage")))
	e.restart()
	assert.Equal(t, 0, e.svc.Stats().Pending)
	e.round()
	assert.Equal(t, Stats{Pending: 0, HalfCursor: 10, OpCursor: 10}, e.svc.Stats())
}

func TestUndeliveredChecksDoNotCount(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.MaxChecks = 2 })
	e.prepare("Orders", 0, "U1")
	e.checker.setDown(true)
	for range 10 {
		e.clock.advance(10 * time.Second)
		e.round()
	}
	assert.Equal(t, 0, e.checker.checks("U1"))
	assert.Equal(t, 1, e.svc.Stats().Pending)
	e.checker.setDown(false)
	for range 5 {
		e.clock.advance(10 * time.Second)
		e.round()
	}
	assert.Equal(t, 2, e.checker.checks("U1"), "exactly MaxChecks delivered")
	assert.Equal(t, 0, e.svc.Stats().Pending)
	discarded := e.queue(discardTopic, 0)
	require.Len(t, discarded, 1)
	assert.Equal(t, "U1", prop(&discarded[0], message.PropertyUniqKey))
	assert.Equal(t, "Orders", prop(&discarded[0], message.PropertyRealTopic))
}

func TestOptionsValidate(t *testing.T) {
	o := DefaultOptions()
	err := o.Validate()
	require.Error(t, err)
	for _, s := range []string{"Store", "Checker", "Dir"} {
		assert.ErrorContains(t, err, s)
	}
	o.MaxChecks, o.ChecksPerSecond, o.CheckInterval = 0, 0, 0
	err = o.Validate()
	for _, s := range []string{"MaxChecks", "ChecksPerSecond", "CheckInterval"} {
		assert.ErrorContains(t, err, s)
	}
	_, err = New(o)
	require.Error(t, err)
}

var _ Store = (*store.Store)(nil)

func TestRenewKeepsStoredBytes(t *testing.T) {
	// A compressed body is re-appended compressed and flagged so (RocketMQ #1375).
	e := newEnv(t, nil)
	body, err := message.Compress([]byte("a body worth compressing, compressing, compressing"), 5)
	require.NoError(t, err)
	props, err := message.EncodeProperties(map[string]string{message.PropertyUniqKey: "Z1",
		message.PropertyProducerGroup: testGroup})
	require.NoError(t, err)
	rec := message.Record{Topic: []byte("Orders"), SysFlag: message.TransactionPreparedType | message.SysFlagCompressed,
		BornHost: bornHost, Body: body, Properties: props}
	_, err = e.svc.Prepare(&rec, false)
	require.NoError(t, err)
	e.clock.advance(6 * time.Second)
	e.round()
	require.Equal(t, 1, e.checker.checks("Z1"))
	e.checker.mu.Lock()
	req := e.checker.mu.requests[0]
	e.checker.mu.Unlock()
	cp, v, err := e.st.ReadMessage(req.CommitLogOffset)
	require.NoError(t, err)
	defer v.Release()
	assert.Equal(t, body, cp.Body)
	assert.True(t, message.IsCompressed(cp.SysFlag))
	sent, _, err := message.DecodeRecord(req.Body)
	require.NoError(t, err)
	assert.Equal(t, body, sent.Body)
	assert.True(t, message.IsCompressed(sent.SysFlag))
}

func TestScanLoopRunsOnItsOwn(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.CheckInterval = 2 * time.Millisecond })
	e.checker.mu.Lock()
	e.checker.mu.answers["U1"] = []int32{message.TransactionRollbackType}
	e.checker.mu.Unlock()
	e.prepare("Orders", 0, "U1")
	e.clock.advance(6 * time.Second)
	require.Eventually(t, func() bool { return e.svc.Stats().Pending == 0 && e.checker.checks("U1") == 1 },
		10*time.Second, time.Millisecond)
}

func TestShutdown(t *testing.T) {
	e := newEnv(t, nil)
	require.Error(t, e.svc.Start(), "Start twice")
	require.NoError(t, e.svc.Shutdown(context.Background()))
	require.NoError(t, e.svc.Shutdown(context.Background()), "idempotent")
	_, err := e.svc.Prepare(&message.Record{Topic: []byte("T")}, false)
	require.ErrorIs(t, err, ErrClosed)

	// A service that never started shuts down too.
	o := DefaultOptions()
	o.Store, o.FS, o.Dir, o.Checker = e.st, e.fs, "other", e.checker
	s, err := New(o)
	require.NoError(t, err)
	require.NoError(t, s.Shutdown(context.Background()))
	require.ErrorIs(t, s.Start(), ErrClosed)
}
