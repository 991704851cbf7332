package consumequeue

import (
	"errors"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/internal/mmap"
)

// faultQueue opens a store with 10-unit segments on an ErrorFS over a MemFS and returns
// the MemFS (for crashes), the ErrorFS (for faults) and queue T/0.
func faultQueue(t *testing.T) (*mmap.MemFS, *mmap.ErrorFS, *Queue) {
	t.Helper()
	mem := mmap.NewMemFS()
	require.NoError(t, mem.MkdirAll("/store/consumequeue"))
	efs := mmap.NewErrorFS(mem)
	s := openStore(t, testOpts(efs, "/store/consumequeue", 10))
	return mem, efs, mustQueue(t, s, "T", 0)
}

// crashedUnits reopens the store on what a crash of mem leaves and returns the units of
// queue T/0 (none when the queue did not survive).
func crashedUnits(t *testing.T, mem *mmap.MemFS) []Unit {
	t.Helper()
	s := openStore(t, testOpts(mem.Crash(nil, 0), "/store/consumequeue", 10))
	q, err := s.Queue("T", 0, false)
	if errors.Is(err, ErrQueueNotFound) {
		return nil
	}
	require.NoError(t, err)
	return readAll(t, q)
}

// units returns unitFor(i) for i in [from, to).
func units(from, to int64) []Unit {
	var out []Unit
	for i := from; i < to; i++ {
		out = append(out, unitFor(i))
	}
	return out
}

// A segment that cannot be created, or whose directory entry cannot be made durable,
// fails the append with the file system's error and changes nothing: the units before it
// stay readable and, once flushed, survive a crash; the same offset is taken once the
// fault is gone (a half-created file is not reused), and everything flushed after that
// survives too.
func TestAppendFailsWhenSegmentCannotBeCreated(t *testing.T) {
	cases := []struct {
		name string
		op   mmap.Op
		at   int64 // units before the failing append: 0 creates the queue's directories
	}{
		{"mkdir", mmap.OpMkdirAll, 0},
		{"link queue directory", mmap.OpSyncDir, 0},
		{"create first", mmap.OpOpenMapped, 0},
		{"create next", mmap.OpOpenMapped, 10},
		{"link next", mmap.OpSyncDir, 10},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mem, efs, q := faultQueue(t)
			appendN(t, q, 0, tc.at)
			require.NoError(t, q.Flush())

			stop := efs.Inject(mmap.Rule{Ops: tc.op, Err: syscall.EIO})
			err := q.Append(tc.at, unitFor(tc.at))
			require.ErrorIs(t, err, syscall.EIO)
			require.ErrorIs(t, err, mmap.ErrInjected)
			require.Equal(t, tc.at, q.MaxOffset(), "the failed unit takes no offset")
			require.Equal(t, units(0, tc.at), readAll(t, q))
			require.Equal(t, units(0, tc.at), crashedUnits(t, mem), "nothing flushed is lost")
			require.ErrorIs(t, q.Append(tc.at+1, unitFor(tc.at+1)), ErrGap)
			require.Positive(t, efs.Calls(tc.op, nil))

			stop()
			appendN(t, q, tc.at, tc.at+15)
			require.NoError(t, q.Flush())
			require.Equal(t, units(0, tc.at+15), readAll(t, q))
			require.Equal(t, units(0, tc.at+15), crashedUnits(t, mem))
		})
	}
}

// A failed flush is reported and remembered: the units it could not sync are synced by
// the next flush, and until then a crash loses only units that were never flushed.
func TestFlushFailureIsRetried(t *testing.T) {
	mem, efs, q := faultQueue(t)
	appendN(t, q, 0, 15)
	require.NoError(t, q.Flush())
	appendN(t, q, 15, 25) // the rest of segment 1 and half of segment 2

	// Segment 1 syncs, segment 2 fails.
	stop := efs.Inject(mmap.Rule{Ops: mmap.OpSync, After: 1, Err: syscall.EIO})
	err := q.Flush()
	require.ErrorIs(t, err, syscall.EIO)
	require.Equal(t, units(0, 25), readAll(t, q), "readers see every unit")
	got := crashedUnits(t, mem)
	require.GreaterOrEqual(t, len(got), 15, "flushed units survive")
	require.Equal(t, units(0, int64(len(got))), got, "a prefix, without holes")

	stop()
	require.NoError(t, q.Flush())
	require.Equal(t, units(0, 25), crashedUnits(t, mem), "the retry synced what the failed flush missed")
}

// SetMinOffset creates the segment holding the new start with durable pre-blank units; if
// that fails, the append at the new start creates it again and the start survives.
func TestSetMinOffsetPreBlankSyncFails(t *testing.T) {
	mem, efs, q := faultQueue(t)
	stop := efs.Inject(mmap.Rule{Ops: mmap.OpSync, Times: 1, Err: syscall.EIO})
	require.ErrorIs(t, q.SetMinOffset(23), syscall.EIO)
	stop()
	require.Equal(t, int64(23), q.MinOffset())
	require.NoError(t, q.Append(23, unitFor(23)))
	require.NoError(t, q.Flush())
	require.Equal(t, units(23, 24), crashedUnits(t, mem))
}
