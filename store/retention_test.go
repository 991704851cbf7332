package store

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/internal/mmap"
)

// testClock is a settable store clock.
type testClock struct{ ms atomic.Int64 }

func (c *testClock) now() time.Time          { return time.UnixMilli(c.ms.Load()) }
func (c *testClock) advance(d time.Duration) { c.ms.Add(d.Milliseconds()) }

// retentionStore opens a store in dir whose topic "Ret" has the given limits.
func retentionStore(t *testing.T, dir string, clock *testClock, maxAge time.Duration, maxBytes int64) *Store {
	o := testOptions(mmap.OSFS{}, dir)
	o.Clock = clock.now
	o.Retention = func(topic string) (time.Duration, int64) {
		if topic == "Ret" {
			return maxAge, maxBytes
		}
		return 0, 0
	}
	return openStore(t, o)
}

// putRet stores n messages to Ret/0 (and one to Other/0 each) and returns their sizes.
func putRet(t *testing.T, s *Store, from, n int) []int64 {
	var sizes []int64
	for i := from; i < from+n; i++ {
		res := put(t, s, testMessage{topic: "Ret", body: fmt.Sprintf("message %03d", i), uniq: fmt.Sprintf("R%031d", i)}, false)
		sizes = append(sizes, int64(res.Bytes))
		put(t, s, testMessage{topic: "Other", body: "other", uniq: fmt.Sprintf("O%031d", i)}, false)
	}
	waitDispatched(t, s)
	return sizes
}

func TestRetentionByTime(t *testing.T) {
	dir := t.TempDir()
	clock := &testClock{}
	clock.ms.Store(1_700_000_000_000)
	s := retentionStore(t, dir, clock, time.Hour, 0)
	putRet(t, s, 0, 5) // stored at t0
	clock.advance(30 * time.Minute)
	putRet(t, s, 5, 3) // stored at t0+30m

	require.Zero(t, s.retainOnce(), "nothing is an hour old yet")
	require.Zero(t, s.MinOffset("Ret", 0))

	clock.advance(30 * time.Minute) // the first five are exactly an hour old
	require.Equal(t, int64(5), s.retainOnce())
	require.Equal(t, int64(5), s.MinOffset("Ret", 0))
	require.Zero(t, s.MinOffset("Other", 0), "a topic without limits keeps everything")
	require.Equal(t, RetentionStats{Expired: 5, Queues: 1}, s.RetentionStats())

	r, err := s.PullMessages("Ret", 0, 2, 32, 1<<20, nil)
	require.NoError(t, err)
	require.Equal(t, OffsetTooSmall, r.Status, "a consumer behind retention is told to move")
	require.Equal(t, int64(5), r.NextBeginOffset)
	r.Release()
	got := queueContents(t, s, "Ret", 0)
	require.Len(t, got, 3)
	require.Equal(t, "message 005", string(got[0].Body))
	require.Equal(t, int64(0), s.CommitLog().MinOffset(), "the commit log keeps its records")

	// A restart does not bring the expired messages back, whatever the clock says.
	require.NoError(t, s.Shutdown(context.Background()))
	clock.ms.Store(1_700_000_000_000)
	s = retentionStore(t, dir, clock, time.Hour, 0)
	require.Equal(t, int64(5), s.MinOffset("Ret", 0))
	require.Len(t, queueContents(t, s, "Ret", 0), 3)

	clock.advance(2 * time.Hour)
	require.Equal(t, int64(3), s.retainOnce())
	require.Equal(t, s.MaxOffset("Ret", 0), s.MinOffset("Ret", 0), "everything expired")
	putRet(t, s, 8, 1)
	require.Len(t, queueContents(t, s, "Ret", 0), 1, "new messages are readable after a full expiry")
}

func TestRetentionBySize(t *testing.T) {
	dir := t.TempDir()
	clock := &testClock{}
	clock.ms.Store(1_700_000_000_000)
	// Every record has the same size, so a limit of three records keeps exactly three.
	s := retentionStore(t, dir, clock, 0, 1)
	probe := putRet(t, s, 0, 1)[0]
	require.NoError(t, s.Shutdown(context.Background()))

	s = retentionStore(t, dir, clock, 0, 3*probe)
	require.Zero(t, s.retainOnce(), "one message is below the limit")
	sizes := append([]int64{probe}, putRet(t, s, 1, 9)...)
	require.Equal(t, int64(7), s.retainOnce())
	require.Equal(t, int64(7), s.MinOffset("Ret", 0))
	var kept int64
	for _, n := range sizes[7:] {
		kept += n
	}
	require.LessOrEqual(t, kept, 3*probe)

	putRet(t, s, 10, 2) // counted incrementally: two more push two out
	require.Equal(t, int64(2), s.retainOnce())
	require.Equal(t, int64(9), s.MinOffset("Ret", 0))
	got := queueContents(t, s, "Ret", 0)
	require.Len(t, got, 3)
	require.Equal(t, "message 009", string(got[0].Body))

	r, err := s.PullMessages("Ret", 0, 0, 32, 1<<20, nil)
	require.NoError(t, err)
	require.Equal(t, OffsetTooSmall, r.Status)
	require.Equal(t, int64(9), r.NextBeginOffset)
	r.Release()

	require.NoError(t, s.Shutdown(context.Background()))
	s = retentionStore(t, dir, clock, 0, 3*probe)
	require.Equal(t, int64(9), s.MinOffset("Ret", 0), "the size minimum survives a restart")
	require.Zero(t, s.retainOnce(), "and the count restarts without dropping more")
	require.Equal(t, int64(9), s.MinOffset("Ret", 0))
}

func TestRetentionTimeAndSize(t *testing.T) {
	clock := &testClock{}
	clock.ms.Store(1_700_000_000_000)
	s := retentionStore(t, t.TempDir(), clock, time.Hour, 1<<20)
	putRet(t, s, 0, 4)
	require.Zero(t, s.retainOnce()) // counts the four
	clock.advance(time.Hour)
	putRet(t, s, 4, 2)
	require.Equal(t, int64(4), s.retainOnce(), "time drops the first four; the count follows")
	require.Equal(t, int64(4), s.MinOffset("Ret", 0))
	st := s.ret.sizes[queueKey{"Ret", 0}]
	require.Equal(t, int64(4), st.from)
	require.Equal(t, int64(6), st.to)
}

func TestRetentionFileCorrupt(t *testing.T) {
	dir := t.TempDir()
	o := testOptions(mmap.OSFS{}, dir)
	s := openStore(t, o)
	require.NoError(t, s.Shutdown(context.Background()))
	require.NoError(t, o.FS.WriteFileAtomic(o.retentionPath(), []byte("{")))
	_, err := Open(o)
	require.ErrorIs(t, err, ErrRetentionFile)
	require.NoError(t, o.FS.WriteFileAtomic(o.retentionPath(), []byte(`{"version":2,"queues":{}}`)))
	_, err = Open(o)
	require.ErrorIs(t, err, ErrRetentionFile, "a newer format is not guessed at")
}
