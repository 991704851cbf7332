package commitlog

import (
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/internal/mmap"
	"github.com/ferrymq/ferry/message"
)

// closeGate makes Sync block until the returned function opens the gate again; cleanup
// opens it too, so a failing test never leaves the flusher (and Close) blocked.
func closeGate(t *testing.T, fs *mmap.ErrorFS) (open func()) {
	gate := make(chan struct{})
	remove := fs.Inject(mmap.Rule{Ops: mmap.OpSync, Hook: func(mmap.Op, string) error {
		<-gate
		return nil
	}})
	var once sync.Once
	open = func() {
		once.Do(func() {
			remove()
			close(gate)
		})
	}
	t.Cleanup(open)
	return open
}

// stagedPos returns the writer's position (staged bytes included).
func stagedPos(l *Log) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.pos
}

// A FlushSync record that waits is invisible until the flusher writes the stage out, and
// then becomes readable and durable together with the records staged after it.
func TestSyncStageInvisibleUntilDrained(t *testing.T) {
	fs := mmap.NewErrorFS(mmap.NewMemFS())
	o := testOptions(fs, "/log")
	o.FlushMode = FlushSync
	l := openLog(t, o)

	openGate := closeGate(t, fs)
	first := make(chan AppendResult, 1)
	go func() {
		res, _ := l.Append([]message.Record{newRecord("T", 0, 100, 1)}, true)
		first <- res
	}()
	// The flusher wrote the first record out and is now blocked in Sync.
	require.Eventually(t, func() bool { return l.MaxOffset() > 0 }, 2*time.Second, time.Millisecond)
	end1 := l.MaxOffset()

	second := make(chan AppendResult, 1)
	go func() {
		res, _ := l.Append([]message.Record{newRecord("T", 0, 200, 2)}, true)
		second <- res
	}()
	require.Eventually(t, func() bool { return stagedPos(l) > end1 }, 2*time.Second, time.Millisecond)
	require.Equal(t, end1, l.MaxOffset(), "a staged record is not readable")
	_, _, err := l.ReadRecord(end1)
	require.ErrorIs(t, err, ErrOutOfRange)

	openGate()
	r1, r2 := <-first, <-second
	require.True(t, r1.Durable)
	require.True(t, r2.Durable)
	require.Equal(t, end1, r2.PhysicalOffset)
	require.Equal(t, r2.NextOffset(), l.MaxOffset())
	require.Equal(t, r2.NextOffset(), l.FlushedOffset())
	got := readAll(t, l)
	require.Len(t, got, 2)
	require.Equal(t, int64(1), got[1].QueueOffset)
}

// A FlushSync append that does not wait is readable when Append returns, and so is a
// batch too large for the stage, written after what was staged before it.
func TestSyncStageNoWaitAndLargeBatch(t *testing.T) {
	fs := mmap.NewErrorFS(mmap.NewMemFS())
	o := testOptions(fs, "/log")
	o.FlushMode = FlushSync
	o.SegmentSize = 4 << 20
	l := openLog(t, o)

	res, err := l.Append([]message.Record{newRecord("T", 0, 100, 1)}, false)
	require.NoError(t, err)
	require.Equal(t, res.NextOffset(), l.MaxOffset(), "readable on return")
	// Let the flush it kicked finish, so the gate stops the next one.
	require.Eventually(t, func() bool { return l.FlushedOffset() == res.NextOffset() }, 2*time.Second, time.Millisecond)

	openGate := closeGate(t, fs)
	staged := make(chan AppendResult, 2)
	appendWaiting := func(seed int) {
		go func() {
			r, _ := l.Append([]message.Record{newRecord("T", 0, 300, seed)}, true)
			staged <- r
		}()
	}
	appendWaiting(10) // written out; the flusher then blocks in Sync
	require.Eventually(t, func() bool { return l.MaxOffset() > res.NextOffset() }, 2*time.Second, time.Millisecond)
	appendWaiting(11) // stays staged
	require.Eventually(t, func() bool { return stagedPos(l) > l.MaxOffset() }, 2*time.Second, time.Millisecond)

	var batch []message.Record
	for i := 0; int64(len(batch))*(16<<10) <= stageLimit; i++ {
		batch = append(batch, newRecord("T", 0, 16<<10, 100+i))
	}
	big, err := l.Append(batch, false)
	require.NoError(t, err)
	require.Greater(t, int64(big.Bytes), int64(stageLimit))
	require.Equal(t, big.NextOffset(), l.MaxOffset(), "the stage went out first, then the batch")
	openGate()
	<-staged
	<-staged
	got := readAll(t, l)
	require.Len(t, got, 3+len(batch))
	for i, r := range got {
		require.Equal(t, int64(i), r.QueueOffset)
	}
	require.NoError(t, l.Flush())
	require.Equal(t, l.MaxOffset(), l.FlushedOffset())
}

// A failed write-out of the stage is sticky like a failed Sync: the waiting appender gets
// ErrFlushFailed with its result, later appends are refused, nothing readable changes.
func TestSyncStageWriteFailure(t *testing.T) {
	fs := mmap.NewErrorFS(mmap.NewMemFS())
	o := testOptions(fs, "/log")
	o.FlushMode = FlushSync
	l := openLog(t, o)
	ok, err := l.Append([]message.Record{newRecord("T", 0, 100, 1)}, true)
	require.NoError(t, err)

	stopFailing := failOn(fs, mmap.OpWriteAt)
	res, err := l.Append([]message.Record{newRecord("T", 0, 100, 2)}, true)
	require.ErrorIs(t, err, ErrFlushFailed)
	require.ErrorIs(t, err, syscall.EIO)
	require.Equal(t, FlushDiskFailed, res.Status)
	require.Equal(t, int64(1), res.QueueOffset, "the result is filled: the record was appended")
	require.Equal(t, ok.NextOffset(), l.MaxOffset(), "never written out, never readable")

	stopFailing()
	for _, wait := range []bool{true, false} {
		_, err = l.Append([]message.Record{newRecord("T", 0, 100, 3)}, wait)
		require.ErrorIs(t, err, ErrFlushFailed, fmt.Sprintf("sticky (wait=%t)", wait))
	}
	require.Len(t, readAll(t, l), 1)
	require.ErrorIs(t, l.Close(), ErrFlushFailed)
}

// FlushAsync appends on real files, large ones through the stage and pwrite and small
// ones through the mapping, mixed: each is readable through the mapping as soon as
// Append returns, nothing stays staged, and everything reads back after a reopen, across
// a segment boundary.
func TestAsyncAppendsWriteThroughTheStage(t *testing.T) {
	o := testOptions(mmap.OSFS{}, t.TempDir())
	o.SegmentSize = 1 << 20
	l := openLog(t, o)
	var want []message.Record
	for i := 0; l.MaxOffset() < o.SegmentSize+o.SegmentSize/2; i++ {
		recs := []message.Record{newRecord("T", int32(i%3), 100+(i*997)%9000, i)}
		res, err := l.Append(recs, true)
		require.NoError(t, err)
		require.Equal(t, res.NextOffset(), l.MaxOffset(), "readable when Append returns")
		got, _, err := l.ReadRecord(res.PhysicalOffset)
		require.NoError(t, err)
		requireSameRecord(t, recs[0], got)
		l.mu.Lock()
		require.Empty(t, l.mu.stage)
		l.mu.Unlock()
		want = append(want, recs...)
	}
	end := l.MaxOffset()
	require.NoError(t, l.Close())
	l2, got := recoverFS(t, o, o.FS)
	defer func() { require.NoError(t, l2.Close()) }()
	require.Equal(t, end, got)
	all := readAll(t, l2)
	require.Len(t, all, len(want))
	for i := range want {
		requireSameRecord(t, want[i], all[i])
	}
}
