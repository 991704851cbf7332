package transaction

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/internal/mmap"
	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/store"
)

// testItem is one message of a multi-message half message built by multiHalf.
type testItem struct {
	topic string
	queue int32
}

// multiItems is the transaction most tests use: two items in one queue, one in another
// queue of the same topic, one in another topic.
var multiItems = []testItem{{"Orders", 0}, {"Orders", 0}, {"Orders", 1}, {"Audit", 0}}

// multiHalf builds a multi-message half message with UNIQ_KEY uniq; item i has UNIQ_KEY
// uniq-i and body "body-uniq-i". extra are properties of the half message.
func multiHalf(t testing.TB, uniq string, items []testItem, extra ...string) message.Record {
	t.Helper()
	var body []byte
	for i, it := range items {
		props, err := message.EncodeProperties(map[string]string{
			message.PropertyUniqKey: fmt.Sprintf("%s-%d", uniq, i), message.PropertyTags: "T" + strconv.Itoa(i),
			message.PropertyRealTopic: it.topic, message.PropertyRealQueueID: strconv.Itoa(int(it.queue)),
			message.PropertyProducerGroup: testGroup, message.PropertyTransactionPrepared: "true",
		})
		require.NoError(t, err)
		body, err = protocol.AppendBatchItem(body, protocol.BatchItem{Flag: int32(10 + i),
			Body: fmt.Appendf(nil, "body-%s-%d", uniq, i), Properties: props})
		require.NoError(t, err)
	}
	kv := map[string]string{
		message.PropertyUniqKey: uniq, message.PropertyProducerGroup: testGroup,
		message.PropertyTransactionPrepared: "true", PropertyMultiItems: strconv.Itoa(len(items)),
	}
	for i := 0; i+1 < len(extra); i += 2 {
		kv[extra[i]] = extra[i+1]
	}
	props, err := message.EncodeProperties(kv)
	require.NoError(t, err)
	return message.Record{
		Topic: []byte(items[0].topic), QueueID: items[0].queue, SysFlag: message.TransactionPreparedType,
		BornTimestamp: 1, BornHost: bornHost, Body: body, Properties: props,
	}
}

// prepareMulti stores a multi-message half message.
func (e *env) prepareMulti(uniq string, items []testItem, extra ...string) PrepareResult {
	e.t.Helper()
	rec := multiHalf(e.t, uniq, items, extra...)
	res, err := e.svc.Prepare(&rec, false)
	require.NoError(e.t, err)
	return res
}

// committedItems counts, per item UNIQ_KEY, the committed messages of items in their
// queues, checking each one's content.
func committedItems(e *env, items []testItem) map[string]int {
	e.t.Helper()
	seen := map[string]int{}
	done := map[testItem]bool{}
	for _, it := range items {
		if done[it] {
			continue
		}
		done[it] = true
		for _, rec := range e.queue(it.topic, it.queue) {
			u := prop(&rec, message.PropertyUniqKey)
			seen[u]++
			idx := prop(&rec, PropertyItemIndex)
			require.Equal(e.t, "body-"+u, string(rec.Body))
			require.Contains(e.t, u, "-"+idx, "item index of %s", u)
			require.Equal(e.t, message.TransactionCommitType, message.TransactionType(rec.SysFlag))
		}
	}
	return seen
}

// requireItemsOnce checks that each item of the transactions uniqs is committed exactly
// once, and nothing else is in their queues.
func requireItemsOnce(e *env, items []testItem, uniqs ...string) {
	e.t.Helper()
	seen := committedItems(e, items)
	want := map[string]int{}
	for _, u := range uniqs {
		for i := range items {
			want[fmt.Sprintf("%s-%d", u, i)] = 1
		}
	}
	require.Equal(e.t, want, seen)
}

func TestMultiCommitWritesEveryItem(t *testing.T) {
	e := newEnv(t, nil)
	p := e.prepareMulti("M1", multiItems)
	e.round()
	assert.Empty(t, e.queue("Orders", 0), "nothing is visible before the commit")
	assert.Equal(t, EndCommitted, e.end(p, "M1", message.TransactionCommitType))
	assert.Equal(t, EndAlreadyCommitted, e.end(p, "M1", message.TransactionCommitType))
	e.round()
	requireItemsOnce(e, multiItems, "M1")

	orders := e.queue("Orders", 0)
	require.Len(t, orders, 2)
	for i, rec := range orders {
		assert.Equal(t, strconv.Itoa(i), prop(&rec, PropertyItemIndex), "items are written in order")
		assert.Equal(t, int32(10+i), rec.Flag)
		assert.Equal(t, "T"+strconv.Itoa(i), prop(&rec, message.PropertyTags))
		assert.Equal(t, p.Append.PhysicalOffset, rec.PreparedTxOffset)
		assert.Equal(t, bornHost, rec.BornHost)
		for _, k := range []string{message.PropertyRealTopic, message.PropertyRealQueueID,
			message.PropertyTransactionPrepared, PropertyMultiItems} {
			_, ok := rec.Property(k)
			assert.False(t, ok, "%s must be removed", k)
		}
	}
	assert.Equal(t, 0, e.svc.Stats().Pending)

	// The intent lists each distinct destination once, with its offset before the commit.
	ops := e.queue(opTopic, 0)
	require.Len(t, ops, 2)
	intent, err := decodeOpEntry(ops[0].Body, ops[0].Properties)
	require.NoError(t, err)
	require.NotNil(t, intent.intent)
	assert.Equal(t, &commitIntent{origin: p.Append.QueueOffset, phy: p.Append.PhysicalOffset, queueID: 0,
		topic: "Orders", items: 4, dests: []destination{{"Orders", 0, 0}, {"Orders", 1, 0}, {"Audit", 0, 0}}},
		intent.intent)
}

func TestMultiRollbackWritesNothing(t *testing.T) {
	e := newEnv(t, nil)
	p := e.prepareMulti("M1", multiItems)
	assert.Equal(t, EndRolledBack, e.end(p, "M1", message.TransactionRollbackType))
	assert.Equal(t, EndAlreadyRolledBack, e.end(p, "M1", message.TransactionCommitType))
	e.round()
	requireItemsOnce(e, multiItems)
	assert.Equal(t, 0, e.svc.Stats().Pending)
}

func TestMultiCheckedOncePerTransaction(t *testing.T) {
	e := newEnv(t, nil)
	e.checker.mu.answers["M1"] = []int32{message.TransactionCommitType}
	e.prepareMulti("M1", multiItems)
	e.round()
	e.clock.advance(6 * time.Second)
	e.round()
	e.round()
	assert.Equal(t, 1, e.checker.checks("M1"), "one check for the whole transaction")
	e.checker.mu.Lock()
	reqs := e.checker.mu.requests
	e.checker.mu.Unlock()
	require.Len(t, reqs, 1)
	rec, _, err := message.DecodeRecord(reqs[0].Body)
	require.NoError(t, err)
	items, ok, err := Items(&rec)
	require.NoError(t, err)
	require.True(t, ok, "the check carries the whole transaction")
	assert.Len(t, items, len(multiItems))
	requireItemsOnce(e, multiItems, "M1")
	assert.Equal(t, 0, e.svc.Stats().Pending)
}

func TestMultiPrepareRejectsBadItems(t *testing.T) {
	e := newEnv(t, nil)
	good := multiHalf(t, "G", multiItems)
	tooMany := make([]testItem, MaxItems+1)
	for i := range tooMany {
		tooMany[i] = testItem{"Orders", 0}
	}
	cases := map[string]message.Record{
		"count too high":  multiHalf(t, "B", multiItems, PropertyMultiItems, "5"),
		"count too low":   multiHalf(t, "B", multiItems, PropertyMultiItems, "3"),
		"count zero":      multiHalf(t, "B", multiItems, PropertyMultiItems, "0"),
		"not a number":    multiHalf(t, "B", multiItems, PropertyMultiItems, "x"),
		"too many items":  multiHalf(t, "B", tooMany),
		"system topic":    multiHalf(t, "B", []testItem{{"Orders", 0}, {halfTopic, 0}}),
		"bad topic name":  multiHalf(t, "B", []testItem{{"Orders", 0}, {"a;b", 0}}),
		"truncated batch": func() message.Record { r := good; r.Body = r.Body[:len(r.Body)-3]; return r }(),
		"compressed":      func() message.Record { r := good; r.SysFlag |= message.SysFlagCompressed; return r }(),
	}
	for name, rec := range cases {
		_, err := e.svc.Prepare(&rec, false)
		assert.ErrorIs(t, err, ErrBadItems, name)
	}
	_, err := e.svc.Prepare(&good, false)
	require.NoError(t, err)
}

func TestIntentItemsRoundTrip(t *testing.T) {
	in := commitIntent{origin: 7, phy: 4096, queueID: 2, queueOffset: 11, topic: "A", items: 3,
		dests: []destination{{"A", 2, 11}, {"B-c%d|e", 0, 0}}}
	s := &Service{opts: Options{Clock: time.Now}}
	rec := s.intentRecord(&in, []byte("A"))
	e, err := decodeOpEntry(rec.Body, rec.Properties)
	require.NoError(t, err)
	assert.Equal(t, &in, e.intent)
	for _, bad := range []string{"", "0;1,2,A", "3", "3;1,2", "3;1,x,A", "3;1,2,", "1;0,0,A;0,0,B", "200;0,0,A"} {
		props := opProps(t, OutcomeCommitting)
		props, err := message.AppendProperty(props, PropertyCommitIntent, "7,4096,2,11,A")
		require.NoError(t, err)
		props, err = message.AppendProperty(props, PropertyIntentItems, bad)
		require.NoError(t, err)
		_, err = decodeOpEntry([]byte(intentBody), props)
		assert.ErrorIs(t, err, errBadOpEntry, "%q", bad)
	}
}

// flakyStore fails its failAt-th write once, with nothing written (as a full disk
// would); every other write goes through.
type flakyStore struct {
	Store
	mu     sync.Mutex
	writes int
	failAt int
}

var errDiskFull = errors.New("disk full")

func (f *flakyStore) PutMessage(rec *message.Record, wait bool) (store.PutResult, error) {
	f.mu.Lock()
	f.writes++
	fail := f.writes == f.failAt
	f.mu.Unlock()
	if fail {
		return store.PutResult{}, errDiskFull
	}
	return f.Store.PutMessage(rec, wait)
}

func (f *flakyStore) failWrite(n int) {
	f.mu.Lock()
	f.failAt = f.writes + n
	f.mu.Unlock()
}

// TestMultiCommitWriteFailureIsCompleted fails each write of a commit once without a
// restart: the commit is completed in the background — all items once — and a repeated
// END_TRANSACTION changes nothing.
func TestMultiCommitWriteFailureIsCompleted(t *testing.T) {
	// Writes of one commit: intent, 4 items, op entry.
	for failAt := 1; failAt <= 6; failAt++ {
		t.Run(fmt.Sprintf("fail-write-%d", failAt), func(t *testing.T) {
			fsys, clock := mmap.NewMemFS(), newTestClock()
			st := openTestStore(t, fsys, clock)
			t.Cleanup(func() { _ = st.Shutdown(context.Background()) })
			fs := &flakyStore{Store: st}
			checker := newScriptedChecker(t)
			checker.mu.answers["M1"] = []int32{message.TransactionCommitType, message.TransactionCommitType}
			e := &env{t: t, fs: fsys, clock: clock, st: st, checker: checker}
			e.svc = testService(t, fs, fsys, clock, checker, nil)
			p := e.prepareMulti("M1", multiItems)
			fs.failWrite(failAt)
			_, err := e.svc.End(EndRequest{ProducerGroup: testGroup, TranStateTableOffset: p.Append.QueueOffset,
				CommitLogOffset: p.Append.PhysicalOffset, CommitOrRollback: message.TransactionCommitType})
			if failAt <= 5 {
				require.ErrorIs(t, err, errDiskFull)
			} else {
				require.NoError(t, err, "a failed op entry is retried in the background")
			}
			for range 4 {
				e.clock.advance(10 * time.Second)
				e.round()
			}
			requireItemsOnce(e, multiItems, "M1")
			assert.Equal(t, 0, e.svc.Stats().Pending)
			assert.Equal(t, EndAlreadyCommitted, e.end(p, "M1", message.TransactionCommitType))
			requireItemsOnce(e, multiItems, "M1")
		})
	}
}

// TestMultiCommitSurvivesKill kills the broker before every store write of two
// multi-message transactions — one committed by END_TRANSACTION, one by check-back —
// restarts it from what was stored, lets the store recover and the producer answer commit
// to every check. Every item of both must end up stored exactly once: a kill while the
// items are written must neither leave a subset nor let the restart write one twice. A
// kill in the middle of the items is followed by a second kill before each write of the
// repair after the restart.
func TestMultiCommitSurvivesKill(t *testing.T) {
	total, prepared := runMultiKill(t)
	require.Greater(t, total, prepared)
	for killAt := prepared + 1; killAt <= total+1; killAt++ {
		t.Run(fmt.Sprintf("kill-before-write-%d", killAt), func(t *testing.T) { runMultiKill(t, killAt) })
	}
	// Writes after the prepares: E's intent, its 4 items, ... Kill before E's third item,
	// then again before each write the restart makes.
	first := prepared + 4
	repair, _ := runMultiKill(t, first)
	for again := 1; again <= repair+1; again++ {
		t.Run(fmt.Sprintf("kill-before-write-%d-then-%d", first, again), func(t *testing.T) {
			runMultiKill(t, first, again)
		})
	}
}

// runMultiKill runs the scenario through len(kills)+1 lives of the broker: life i is
// killed before its kills[i]-th store write (0: not killed) and restarted from what was
// stored. It returns how many store writes the last life made, and how many of the first
// life's were Prepare's.
func runMultiKill(t *testing.T, kills ...int) (writes, prepared int) {
	fsys, clock := mmap.NewMemFS(), newTestClock()
	checker := newScriptedChecker(t)
	always := make([]int32, 20)
	for i := range always {
		always[i] = message.TransactionCommitType
	}
	checker.mu.answers["E"], checker.mu.answers["C"] = always, always
	e := &env{t: t, fs: fsys, clock: clock, checker: checker}
	cursorPath := "txn/" + cursorFileName
	offsets := newTestOffsets() // durable: survives the kills
	for life := 0; ; life++ {
		killAt := 0
		if life < len(kills) {
			killAt = kills[life]
		}
		e.st = openTestStore(t, fsys, clock)
		ks := &killStore{Store: e.st, killAt: killAt}
		var cursorAtKill []byte
		ks.onKill = func() {
			if ok, _ := fsys.Exists(cursorPath); ok {
				b, err := fsys.ReadFile(cursorPath)
				require.NoError(t, err)
				cursorAtKill = b
			}
		}
		offsets.setAlive(func() bool { return !ks.dead() })
		o := testOptions(ks, fsys, clock, checker)
		o.Offsets = offsets
		svc, err := New(o)
		require.NoError(t, err)
		checker.svc.Store(svc)
		e.svc = svc
		if err := svc.Start(); err != nil {
			require.ErrorIs(t, err, errKilled)
		}
		if life == 0 {
			pe := e.prepareMulti("E", multiItems, PropertyOffsetGroup, "CG", PropertyOffsets, "0,10,In;1,20,In")
			e.prepareMulti("C", multiItems, PropertyOffsetGroup, "CG", PropertyOffsets, "2,30,In")
			prepared = ks.count()
			_, err := svc.End(EndRequest{ProducerGroup: testGroup, TranStateTableOffset: pe.Append.QueueOffset,
				CommitLogOffset: pe.Append.PhysicalOffset, CommitOrRollback: message.TransactionCommitType})
			if killAt == 0 {
				require.NoError(t, err)
			}
		}
		for step := 0; ; step++ {
			e.clock.advance(10 * time.Second)
			e.round()
			if step >= 3 && (killAt > 0 || svc.Stats().Pending == 0) {
				break
			}
			require.Less(t, step, 20, "transactions still pending: %+v", svc.Stats())
		}
		writes = ks.count()
		if killAt == 0 {
			requireItemsOnce(e, multiItems, "E", "C")
			require.Equal(t, map[testOffsetKey]int64{{"CG", "In", 0}: 10, {"CG", "In", 1}: 20, {"CG", "In", 2}: 30},
				offsets.snapshot(), "the offsets of both transactions committed")
			require.NoError(t, svc.Shutdown(context.Background()))
			require.NoError(t, e.st.Shutdown(context.Background()))
			return writes, prepared
		}
		// The kill: nothing after it is stored or persisted. Shutdown's cursor write is
		// undone; the store recovers from a crash (abort file, no checkpoint).
		ctx := context.Background()
		_ = svc.Shutdown(ctx)
		if cursorAtKill != nil {
			require.NoError(t, fsys.WriteFileAtomic(cursorPath, cursorAtKill))
		} else {
			_ = fsys.Remove(cursorPath)
		}
		require.NoError(t, e.st.Shutdown(ctx))
		require.NoError(t, fsys.Remove("store/checkpoint"))
		abort, err := fsys.Create("store/abort")
		require.NoError(t, err)
		require.NoError(t, abort.Close())
	}
}

// dead reports whether the simulated broker has been killed.
func (k *killStore) dead() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.killAt > 0 && k.writes >= k.killAt
}

// testOffsetKey names one committed offset.
type testOffsetKey struct {
	group, topic string
	queue        int32
}

// testOffsets is a durable offset store: what CommitOffsets applied survives a kill; a
// call once the broker is dead fails (the process is gone).
type testOffsets struct {
	mu    sync.Mutex
	m     map[testOffsetKey]int64
	calls int
	alive func() bool
}

func newTestOffsets() *testOffsets { return &testOffsets{m: map[testOffsetKey]int64{}} }

func (o *testOffsets) setAlive(f func() bool) {
	o.mu.Lock()
	o.alive = f
	o.mu.Unlock()
}

func (o *testOffsets) CommitOffsets(group string, updates []OffsetUpdate, forwardOnly bool) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.alive != nil && !o.alive() {
		return errKilled
	}
	o.calls++
	for _, u := range updates {
		k := testOffsetKey{group, u.Topic, u.QueueID}
		if cur, ok := o.m[k]; forwardOnly && ok && cur >= u.Offset {
			continue
		}
		o.m[k] = u.Offset
	}
	return nil
}

func (o *testOffsets) Offset(group, topic string, queueID int32) (int64, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	v, ok := o.m[testOffsetKey{group, topic, queueID}]
	return v, ok
}

// failOnce makes the next CommitOffsets fail (a write error of the offset file).
func (o *testOffsets) failOnce() {
	o.mu.Lock()
	defer o.mu.Unlock()
	alive := o.alive
	o.alive = func() bool {
		o.alive = alive
		return false
	}
}

func (o *testOffsets) snapshot() map[testOffsetKey]int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := map[testOffsetKey]int64{}
	for k, v := range o.m {
		out[k] = v
	}
	return out
}

// TestOffsetsAppliedOnCommitOnly: the offsets a transaction carries are applied when it
// commits — by END_TRANSACTION or by check-back — once, and never when it rolls back.
func TestOffsetsAppliedOnCommitOnly(t *testing.T) {
	offsets := newTestOffsets()
	e := newEnv(t, func(o *Options) { o.Offsets = offsets })
	e.checker.mu.answers["K"] = []int32{message.TransactionCommitType}
	pc := e.prepareMulti("C", multiItems, PropertyOffsetGroup, "CG", PropertyOffsets, "0,10,In;1,20,In")
	pr := e.prepareMulti("R", multiItems, PropertyOffsetGroup, "CG", PropertyOffsets, "0,99,In;3,99,In")
	e.prepareMulti("K", multiItems, PropertyOffsetGroup, "CG2", PropertyOffsets, "5,7,Other")
	assert.Empty(t, offsets.snapshot(), "nothing before the commit")
	assert.Equal(t, EndRolledBack, e.end(pr, "R", message.TransactionRollbackType))
	assert.Empty(t, offsets.snapshot(), "nothing on rollback")
	assert.Equal(t, EndCommitted, e.end(pc, "C", message.TransactionCommitType))
	assert.Equal(t, map[testOffsetKey]int64{{"CG", "In", 0}: 10, {"CG", "In", 1}: 20}, offsets.snapshot())
	assert.Equal(t, EndAlreadyCommitted, e.end(pc, "C", message.TransactionCommitType))
	e.round()
	e.clock.advance(6 * time.Second)
	e.round()
	e.round()
	assert.Equal(t, 1, e.checker.checks("K"))
	assert.Equal(t, map[testOffsetKey]int64{{"CG", "In", 0}: 10, {"CG", "In", 1}: 20, {"CG2", "Other", 5}: 7},
		offsets.snapshot())
	assert.Equal(t, 2, offsets.calls, "once per committed transaction")
	requireItemsOnce(e, multiItems, "C", "K")
}

// prepareCond prepares a multi-message half message of group CG's offsets updates, each
// conditional as from says (PropertyOffsets and PropertyOffsetsFrom values).
func (e *env) prepareCond(uniq, updates, from string) PrepareResult {
	e.t.Helper()
	return e.prepareMulti(uniq, multiItems, PropertyOffsetGroup, "CG", PropertyOffsets, updates,
		PropertyOffsetsFrom, from)
}

// TestConditionalOffsets: a commit with FERRY_TRAN_OFFSETS_FROM commits only while the
// group's offsets are those it names (-1: none); otherwise nothing of it is stored, the
// offsets stay, and the transaction is rolled back for good.
func TestConditionalOffsets(t *testing.T) {
	offsets := newTestOffsets()
	e := newEnv(t, func(o *Options) { o.Offsets = offsets })
	a := e.prepareCond("A", "0,10,In;1,5,In", "0,-1,In")        // queue 0 must have no offset
	b := e.prepareCond("B", "0,10,In", "0,-1,In")               // the same input, read by another instance
	c := e.prepareCond("C", "0,20,In;1,9,In", "0,10,In;1,5,In") // the next input, after A
	assert.Equal(t, EndCommitted, e.end(a, "A", message.TransactionCommitType))
	assert.Equal(t, EndOffsetConflict, e.end(b, "B", message.TransactionCommitType))
	assert.Equal(t, EndAlreadyRolledBack, e.end(b, "B", message.TransactionCommitType), "a conflict is final")
	assert.Equal(t, map[testOffsetKey]int64{{"CG", "In", 0}: 10, {"CG", "In", 1}: 5}, offsets.snapshot())
	assert.Equal(t, EndCommitted, e.end(c, "C", message.TransactionCommitType))
	assert.Equal(t, map[testOffsetKey]int64{{"CG", "In", 0}: 20, {"CG", "In", 1}: 9}, offsets.snapshot())
	requireItemsOnce(e, multiItems, "A", "C") // nothing of B

	// An interrupted commit (its offsets not written) still counts: its offsets are
	// claimed until the verify action applies them.
	d := e.prepareCond("D", "0,30,In", "0,20,In")
	late := e.prepareCond("L", "0,30,In", "0,20,In")
	offsets.failOnce()
	_, err := e.svc.End(EndRequest{ProducerGroup: testGroup, TranStateTableOffset: d.Append.QueueOffset,
		CommitLogOffset: d.Append.PhysicalOffset, CommitOrRollback: message.TransactionCommitType})
	require.ErrorIs(t, err, errCommitInterrupted)
	assert.Equal(t, EndOffsetConflict, e.end(late, "L", message.TransactionCommitType),
		"the interrupted commit's offset is the queue's")
	for i := 0; i < 5 && offsets.snapshot()[testOffsetKey{"CG", "In", 0}] != 30; i++ {
		e.round()
	}
	assert.Equal(t, int64(30), offsets.snapshot()[testOffsetKey{"CG", "In", 0}], "the verify action applied it")
	e2 := e.prepareCond("E", "0,40,In", "0,30,In")
	assert.Equal(t, EndCommitted, e.end(e2, "E", message.TransactionCommitType), "the claim is released")
	requireItemsOnce(e, multiItems, "A", "C", "D", "E")
}

// TestConditionalOffsetsAfterRestart: an interrupted commit whose repair fails at the
// restart still claims its offsets, so a competing commit from the same offset
// conflicts; the repair applies them later.
func TestConditionalOffsetsAfterRestart(t *testing.T) {
	offsets := newTestOffsets()
	e := newEnv(t, func(o *Options) { o.Offsets = offsets })
	a := e.prepareCond("A", "0,10,In", "0,-1,In")
	require.Equal(t, EndCommitted, e.end(a, "A", message.TransactionCommitType))
	d := e.prepareCond("D", "0,20,In", "0,10,In")
	l := e.prepareCond("L", "0,20,In", "0,10,In")
	offsets.setAlive(func() bool { return false }) // the offset file cannot be written
	_, err := e.svc.End(EndRequest{ProducerGroup: testGroup, TranStateTableOffset: d.Append.QueueOffset,
		CommitLogOffset: d.Append.PhysicalOffset, CommitOrRollback: message.TransactionCommitType})
	require.ErrorIs(t, err, errCommitInterrupted)
	e.restart() // the repair of D fails at Start: the offsets still cannot be written
	offsets.setAlive(nil)
	assert.Equal(t, EndOffsetConflict, e.end(l, "L", message.TransactionCommitType),
		"D's claim survives the restart")
	for i := 0; i < 5 && offsets.snapshot()[testOffsetKey{"CG", "In", 0}] != 20; i++ {
		e.round()
	}
	assert.Equal(t, int64(20), offsets.snapshot()[testOffsetKey{"CG", "In", 0}])
	requireItemsOnce(e, multiItems, "A", "D")
}

// TestReplayReappliesOffsets: a slave promoted to master has the commit intents (they
// came with the replicated log) but only the offsets it last copied; the replay at Start
// applies the intents' offsets again, forward only, so a pipeline does not redo inputs
// whose outputs the new master holds.
func TestReplayReappliesOffsets(t *testing.T) {
	offsets := newTestOffsets()
	e := newEnv(t, func(o *Options) { o.Offsets = offsets })
	a := e.prepareCond("A", "0,10,In;1,5,In", "0,-1,In")
	require.Equal(t, EndCommitted, e.end(a, "A", message.TransactionCommitType))
	b := e.prepareCond("B", "0,20,In", "0,10,In")
	require.Equal(t, EndCommitted, e.end(b, "B", message.TransactionCommitType))
	e.round()

	// The promotion: the offsets copied before B, other offsets moved further already,
	// and no transaction cursor file (a slave does not write one).
	copied := newTestOffsets()
	copied.m[testOffsetKey{"CG", "In", 0}] = 10
	copied.m[testOffsetKey{"CG", "In", 1}] = 7
	ctx := context.Background()
	require.NoError(t, e.svc.Shutdown(ctx))
	require.NoError(t, e.st.Shutdown(ctx))
	require.NoError(t, e.fs.Remove(filepath.Join(e.svc.opts.Dir, cursorFileName)))
	e.st = openTestStore(t, e.fs, e.clock)
	t.Cleanup(func() { _ = e.st.Shutdown(context.Background()) })
	e.svc = testService(t, e.st, e.fs, e.clock, e.checker, func(o *Options) { o.Offsets = copied })
	assert.Equal(t, map[testOffsetKey]int64{{"CG", "In", 0}: 20, {"CG", "In", 1}: 7}, copied.snapshot(),
		"B's offset applied again; nothing moved back")
	l := e.prepareCond("L", "0,20,In", "0,10,In")
	assert.Equal(t, EndOffsetConflict, e.end(l, "L", message.TransactionCommitType))
}

func TestOffsetsRefused(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.Offsets = newTestOffsets() })
	for name, extra := range map[string][]string{
		"bad group":     {PropertyOffsetGroup, "a b", PropertyOffsets, "0,1,In"},
		"no group":      {PropertyOffsets, "0,1,In"},
		"no offsets":    {PropertyOffsetGroup, "CG"},
		"bad offset":    {PropertyOffsetGroup, "CG", PropertyOffsets, "0,-1,In"},
		"bad queue":     {PropertyOffsetGroup, "CG", PropertyOffsets, "x,1,In"},
		"bad topic":     {PropertyOffsetGroup, "CG", PropertyOffsets, "0,1,"},
		"missing field": {PropertyOffsetGroup, "CG", PropertyOffsets, "0,1"},
		"from, no update": {PropertyOffsetGroup, "CG", PropertyOffsets, "0,1,In",
			PropertyOffsetsFrom, "1,0,In"},
		"from twice": {PropertyOffsetGroup, "CG", PropertyOffsets, "0,1,In",
			PropertyOffsetsFrom, "0,0,In;0,0,In"},
		"from below -1": {PropertyOffsetGroup, "CG", PropertyOffsets, "0,1,In",
			PropertyOffsetsFrom, "0,-2,In"},
		"from empty": {PropertyOffsetGroup, "CG", PropertyOffsets, "0,1,In", PropertyOffsetsFrom, ""},
	} {
		rec := multiHalf(t, "B", multiItems, extra...)
		_, err := e.svc.Prepare(&rec, false)
		assert.ErrorIs(t, err, ErrBadItems, name)
	}
	// Offsets only ride on multi-message transactions, and need a committer.
	props, err := message.EncodeProperties(map[string]string{message.PropertyUniqKey: "S",
		message.PropertyProducerGroup: testGroup, PropertyOffsetGroup: "CG", PropertyOffsets: "0,1,In"})
	require.NoError(t, err)
	single := message.Record{Topic: []byte("Orders"), SysFlag: message.TransactionPreparedType, Body: []byte("b"),
		Properties: props, BornHost: bornHost}
	_, err = e.svc.Prepare(&single, false)
	assert.ErrorIs(t, err, ErrBadItems)
	e2 := newEnv(t, nil)
	rec := multiHalf(t, "N", multiItems, PropertyOffsetGroup, "CG", PropertyOffsets, "0,1,In")
	_, err = e2.svc.Prepare(&rec, false)
	assert.ErrorIs(t, err, ErrBadItems)
}

// FuzzOffsets: decoding a half message's offsets (and conditional offsets) never panics,
// and what it accepts encodes back to the same updates.
func FuzzOffsets(f *testing.F) {
	f.Add("CG", "0,10,In;1,5,In", "0,-1,In")
	f.Add("CG", "0,10,In", "")
	f.Add("CG", "2,3,A;2,4,B", "2,7,B")
	f.Fuzz(func(t *testing.T, group, offsets, from string) {
		kv := map[string]string{PropertyMultiItems: "1", PropertyOffsetGroup: group, PropertyOffsets: offsets}
		if from != "" {
			kv[PropertyOffsetsFrom] = from
		}
		props, err := message.EncodeProperties(kv)
		if err != nil {
			return
		}
		rec := message.Record{Properties: props}
		g, updates, ok, err := Offsets(&rec)
		if !ok || err != nil {
			return
		}
		again := map[string]string{PropertyMultiItems: "1", PropertyOffsetGroup: g,
			PropertyOffsets: string(AppendOffsets(nil, updates))}
		if f := AppendOffsetsFrom(nil, updates); len(f) > 0 {
			again[PropertyOffsetsFrom] = string(f)
		}
		props2, err := message.EncodeProperties(again)
		require.NoError(t, err)
		rec2 := message.Record{Properties: props2}
		g2, updates2, ok2, err := Offsets(&rec2)
		require.NoError(t, err)
		require.True(t, ok2)
		require.Equal(t, g, g2)
		require.Equal(t, updates, updates2)
	})
}
