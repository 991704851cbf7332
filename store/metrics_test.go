package store

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/internal/mmap"
)

// StoreTimeAt reads the store time of the message at a queue offset; past the end, or in
// an unknown queue, there is none. FlushedOffset reaches the log's end after a flush.
func TestStoreTimeAtAndFlushedOffset(t *testing.T) {
	var now atomic.Int64
	o := testOptions(mmap.NewMemFS(), "store")
	o.Clock = func() time.Time { return time.UnixMilli(now.Load()) }
	s := openStore(t, o)
	for i, at := range []int64{1000, 2000, 3000} {
		now.Store(at)
		put(t, s, testMessage{topic: "T", uniq: "U" + string(rune('0'+i))}, false)
	}
	waitDispatched(t, s)
	for off, want := range []int64{1000, 2000, 3000} {
		ts, ok := s.StoreTimeAt("T", 0, int64(off))
		require.True(t, ok, off)
		require.Equal(t, want, ts, off)
	}
	_, ok := s.StoreTimeAt("T", 0, 3)
	require.False(t, ok, "past the end")
	_, ok = s.StoreTimeAt("T", 1, 0)
	require.False(t, ok, "an unknown queue")
	ts, ok := s.StoreTimeAt("T", 0, -5)
	require.True(t, ok, "below the first offset: the first message")
	require.Equal(t, int64(1000), ts)

	require.NoError(t, s.CommitLog().Flush())
	_, end := s.CommitLogRange()
	require.Equal(t, end, s.FlushedOffset())
}
