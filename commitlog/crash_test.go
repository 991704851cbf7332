package commitlog

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/internal/mmap"
	"github.com/ferrymq/ferry/message"
)

// ack is an append that returned.
type ack struct {
	off  int64
	size int64
	seed int
}

// crashRun runs appenders against a MemFS log, pulls the plug once at least target
// appends were acknowledged, and returns the crashed FS, the acknowledgements made before
// the crash (durable ones only in sync mode), the flushed offset at the crash and the
// original FS (with the full log, closed).
func crashRun(t *testing.T, o Options, rng *rand.Rand, target int64, keep float64) (*mmap.MemFS, []ack, int64, *mmap.MemFS) {
	t.Helper()
	fs := mmap.NewMemFS()
	o.FS = fs
	l, err := Open(o)
	require.NoError(t, err)

	var (
		ackMu   sync.Mutex
		acks    []ack
		nacks   atomic.Int64
		stop    atomic.Bool
		wg      sync.WaitGroup
		failure atomic.Pointer[error]
		reached = make(chan struct{}) // closed once target appends are acknowledged, or one failed
		once    sync.Once
	)
	signal := func() { once.Do(func() { close(reached) }) }
	if target <= 0 {
		signal()
	}
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				seed := w*1_000_000 + i
				rec := []message.Record{newRecord(fmt.Sprintf("T%d", w%2), int32(w), 40+(i*37+w*11)%500, seed)}
				res, err := l.Append(rec, o.FlushMode == FlushSync)
				if err != nil {
					failure.Store(&err)
					signal()
					return
				}
				if o.FlushMode == FlushAsync || res.Durable {
					ackMu.Lock()
					acks = append(acks, ack{res.PhysicalOffset, int64(res.Bytes), seed})
					ackMu.Unlock()
					if nacks.Add(1) >= target {
						signal()
					}
				}
			}
		}()
	}
	select {
	case <-reached:
	case <-time.After(time.Minute):
		stop.Store(true)
		wg.Wait()
		t.Fatalf("only %d of %d appends acknowledged", nacks.Load(), target)
	}
	if keep > 0 { // Crash reads the live bytes: freeze the writers (the flusher only Syncs)
		l.mu.Lock()
	}
	flushed := l.FlushedOffset()
	ackMu.Lock()
	before := slices.Clone(acks)
	ackMu.Unlock()
	crashed := fs.Crash(rng, keep)
	if keep > 0 {
		l.mu.Unlock()
	}
	stop.Store(true)
	wg.Wait()
	if p := failure.Load(); p != nil {
		t.Fatalf("append failed: %v", *p)
	}
	require.NoError(t, l.Close())
	return crashed, before, flushed, fs
}

// verifyCrash recovers the crashed FS and checks: the log is what was appended, except in
// ranges recovery quarantined — pages the crash lost between pages it kept, all of them
// beyond the flushed offset — and ends no earlier than the flushed offset; every
// acknowledged record is intact; queue offsets only skip the records of quarantined
// ranges.
func verifyCrash(t *testing.T, o Options, crashed, orig *mmap.MemFS, acks []ack, flushed int64) {
	t.Helper()
	l, end := recoverFS(t, o, crashed)
	defer func() { require.NoError(t, l.Close()) }()
	require.GreaterOrEqual(t, end, flushed, "flushed bytes survive")
	damage := l.Quarantined()
	inDamage := func(off int64) bool {
		for _, d := range damage {
			if off >= d.From && off < d.To {
				return true
			}
		}
		return false
	}
	for _, d := range damage {
		require.GreaterOrEqual(t, d.From, flushed, "only unflushed bytes can be lost")
	}
	for _, a := range acks {
		require.LessOrEqual(t, a.off+a.size, end, "acknowledged record at %d lost", a.off)
		require.False(t, inDamage(a.off), "acknowledged record at %d quarantined", a.off)
	}
	for s := int64(0); s < end; s += o.SegmentSize {
		want, err := orig.ReadFile(segPath(o.Dir, s))
		require.NoError(t, err)
		got, err := crashed.ReadFile(segPath(o.Dir, s))
		require.NoError(t, err)
		n := min(o.SegmentSize, end-s)
		for _, d := range damage { // the quarantined bytes are the crash's, not the appender's
			if lo, hi := max(d.From, s), min(d.To, s+n); lo < hi {
				copy(want[lo-s:hi-s], got[lo-s:hi-s])
			}
		}
		require.Equal(t, want[:n], got[:n], "segment %d differs from what was appended", s)
	}
	next := map[int32]int64{}
	for _, r := range readAll(t, l) {
		if len(damage) == 0 {
			require.Equal(t, next[r.QueueID], r.QueueOffset)
		} else {
			require.GreaterOrEqual(t, r.QueueOffset, next[r.QueueID])
		}
		next[r.QueueID] = r.QueueOffset + 1
	}
}

func TestCrashSyncFlush(t *testing.T) {
	o := testOptions(nil, "/log")
	o.SegmentSize = 16 << 10
	o.FlushMode = FlushSync
	for i := range 200 {
		o.MappedSyncAppends = i%4 == 3 // both FlushSync write paths
		rng := rand.New(rand.NewPCG(uint64(i), 1))
		keep := 0.0
		if i%2 == 1 {
			keep = rng.Float64()
		}
		crashed, acks, flushed, orig := crashRun(t, o, rng, rng.Int64N(150), keep)
		verifyCrash(t, o, crashed, orig, acks, flushed)
	}
}

func TestCrashAsyncFlush(t *testing.T) {
	o := testOptions(nil, "/log")
	o.SegmentSize = 16 << 10
	o.FlushMode = FlushAsync
	o.FlushInterval = time.Millisecond
	o.FlushThoroughInterval = 3 * time.Millisecond
	for i := range 200 {
		rng := rand.New(rand.NewPCG(uint64(i), 2))
		o.FlushLeastPages = rng.IntN(3)
		crashed, _, flushed, orig := crashRun(t, o, rng, rng.Int64N(300), rng.Float64())
		verifyCrash(t, o, crashed, orig, nil, flushed)
	}
}

func TestNoSpace(t *testing.T) {
	fs := mmap.NewMemFS()
	fs.SetCapacity(3 * testSegSize)
	o := testOptions(fs, "/log")
	l := openLog(t, o)
	var recs []message.Record
	var err error
	for i := 0; err == nil; i++ {
		r := []message.Record{newRecord("T", 0, 1000, i)}
		if _, err = l.Append(r, false); err == nil {
			recs = append(recs, r...)
		}
		require.Less(t, i, 1000)
	}
	require.ErrorIs(t, err, mmap.ErrNoSpace)
	require.NotErrorIs(t, err, ErrFlushFailed)
	end := l.MaxOffset()
	require.Equal(t, int64(3*testSegSize), end, "the filler of the full segment is in the log")
	_, err = l.Append([]message.Record{newRecord("T", 0, 10, 0)}, false)
	require.ErrorIs(t, err, mmap.ErrNoSpace, "retried, still full")
	require.Equal(t, end, l.MaxOffset())
	require.Equal(t, int64(len(recs)), l.QueueOffset("T", 0), "failed appends take no queue offset")
	got := readAll(t, l)
	require.Len(t, got, len(recs))
	for i := range recs {
		requireSameRecord(t, recs[i], got[i])
	}
	require.NoError(t, l.Flush())

	fs.SetCapacity(0)
	r := []message.Record{newRecord("T", 0, 1000, 5000)}
	res, err := l.Append(r, false)
	require.NoError(t, err)
	require.Equal(t, end, res.PhysicalOffset)
	require.Equal(t, int64(len(recs)), res.QueueOffset)
	recs = append(recs, r...)
	require.NoError(t, l.Close())

	l2, got2 := recoverFS(t, o, fs)
	defer l2.Close()
	require.Equal(t, res.NextOffset(), got2)
	require.Len(t, readAll(t, l2), len(recs))
}

// failOn makes every call of ops on fs fail with EIO until the returned function is
// called.
func failOn(fs *mmap.ErrorFS, ops mmap.Op) (stop func()) {
	return fs.Inject(mmap.Rule{Ops: ops, Err: syscall.EIO})
}

func TestSyncFlushTimeoutAndFailure(t *testing.T) {
	fs := mmap.NewErrorFS(mmap.NewMemFS())
	o := testOptions(fs, "/log")
	o.FlushMode = FlushSync
	o.SyncFlushTimeout = 200 * time.Millisecond
	l := openLog(t, o)

	res, err := l.Append([]message.Record{newRecord("T", 0, 10, 1)}, true)
	require.NoError(t, err)
	require.Equal(t, PutOK, res.Status)
	require.True(t, res.Durable)
	require.Equal(t, res.NextOffset(), l.FlushedOffset())
	require.NoError(t, l.FlushError())

	openGate := closeGate(t, fs)
	res, err = l.Append([]message.Record{newRecord("T", 0, 10, 2)}, true)
	require.NoError(t, err)
	require.Equal(t, FlushDiskTimeout, res.Status)
	require.False(t, res.Durable)
	_, v, err := l.ReadRecord(res.PhysicalOffset)
	require.NoError(t, err, "written even though not durable")
	v.Release()
	res, err = l.Append([]message.Record{newRecord("T", 0, 10, 3)}, false)
	require.NoError(t, err)
	require.Equal(t, PutOK, res.Status, "wait=false does not wait")
	require.False(t, res.Durable)
	openGate()
	require.Eventually(t, func() bool { return l.FlushedOffset() == l.MaxOffset() }, 2*time.Second, time.Millisecond)

	stopFailing := failOn(fs, mmap.OpSync)
	res, err = l.Append([]message.Record{newRecord("T", 0, 10, 4)}, true)
	require.ErrorIs(t, err, ErrFlushFailed)
	require.ErrorIs(t, err, syscall.EIO)
	require.Equal(t, FlushDiskFailed, res.Status)
	require.False(t, res.Durable)
	require.Equal(t, int64(3), res.QueueOffset, "the result is filled: the record was written")
	stopFailing()
	_, err = l.Append([]message.Record{newRecord("T", 0, 10, 5)}, true)
	require.ErrorIs(t, err, ErrFlushFailed, "sticky")
	require.ErrorIs(t, l.Flush(), ErrFlushFailed)
	require.ErrorIs(t, l.FlushError(), ErrFlushFailed)
	require.ErrorIs(t, l.Close(), ErrFlushFailed)
}

// The flusher runs on synctest's fake clock, so "nothing is flushed" is checked after the
// flush ticks in the sleep did run (synctest.Wait), not after a real sleep.
func TestAsyncFlusher(t *testing.T) {
	synctest.Test(t, testAsyncFlusher)
}

func testAsyncFlusher(t *testing.T) {
	o := testOptions(mmap.NewMemFS(), "/log")
	o.FlushInterval = 2 * time.Millisecond
	o.FlushThoroughInterval = time.Hour
	o.FlushLeastPages = 4
	l := openLog(t, o)
	res, err := l.Append([]message.Record{newRecord("T", 0, 100, 1)}, true)
	require.NoError(t, err)
	require.Equal(t, PutOK, res.Status)
	// Fewer than 4 dirty pages and no thorough flush due: fifteen ticks flush nothing.
	time.Sleep(30 * time.Millisecond)
	synctest.Wait()
	require.Zero(t, l.FlushedOffset())
	// Many pages: the next periodic flush.
	for i := range 20 {
		_, err := l.Append([]message.Record{newRecord("T", 0, 1000, i)}, false)
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool { return l.FlushedOffset() == l.MaxOffset() }, 2*time.Second, time.Millisecond)

	// The thorough flush writes even a single small record.
	o = testOptions(mmap.NewMemFS(), "/log")
	o.FlushInterval = 2 * time.Millisecond
	o.FlushThoroughInterval = 20 * time.Millisecond
	l2 := openLog(t, o)
	res, err = l2.Append([]message.Record{newRecord("T", 0, 100, 1)}, false)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return l2.FlushedOffset() == res.NextOffset() }, 2*time.Second, time.Millisecond)
	require.Equal(t, res.StoreTimestamp, l2.FlushedStoreTimestamp())
}

func TestAppendRejectsTornLookingRecords(t *testing.T) {
	l := openLog(t, testOptions(mmap.NewMemFS(), "/log"))
	r := newRecord("T", 0, 10, 1)
	r.Properties = []byte("KEYS\x01a")
	_, err := l.Append([]message.Record{r}, false)
	require.ErrorIs(t, err, ErrBadBatch)
	r = newRecord("T\x00", 0, 10, 1)
	_, err = l.Append([]message.Record{r}, false)
	require.ErrorIs(t, err, ErrBadBatch)
	r = newRecord("T", 0, 10, 1)
	r.Properties = nil
	_, err = l.Append([]message.Record{r}, false)
	require.NoError(t, err)
	require.False(t, errors.Is(err, ErrBadBatch))
}
