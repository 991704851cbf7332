package commitlog

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/internal/mmap"
	"github.com/ferrymq/ferry/message"
)

// truncatedLog builds a log of several segments and returns its FS, records and end.
func truncatedLog(t *testing.T) (Options, *mmap.MemFS, []message.Record, int64) {
	t.Helper()
	o := testOptions(nil, "/log")
	fs, _, end := buildLog(t, o, 3*testSegSize+testSegSize/2, 21)
	o.FS = fs
	l, err := Open(o)
	require.NoError(t, err)
	_, err = l.Recover(0, true)
	require.NoError(t, err)
	recs := readAll(t, l) // as stored: sizes and offsets filled in
	require.NoError(t, l.Close())
	o.FS = cloneFS(fs)
	return o, o.FS.(*mmap.MemFS), recs, end
}

// Truncate at every kind of boundary (a record in the first segment, the first record of
// a later segment, a filler, a record in the last segment): the log ends there at once
// and after a reopen, holds exactly the records before it, no segment after it, zeros
// after it, and takes the next append at the cut.
func TestTruncateAtBoundaries(t *testing.T) {
	o, base, recs, end := truncatedLog(t)
	var fillerAt int64 = -1
	for i := 1; i < len(recs); i++ {
		prevEnd := recs[i-1].PhysicalOffset + int64(recs[i-1].StoreSize)
		if prevEnd != recs[i].PhysicalOffset {
			fillerAt = prevEnd
			break
		}
	}
	require.Positive(t, fillerAt, "the log holds a filler")
	cuts := map[string]int64{
		"first segment":   recs[3].PhysicalOffset,
		"segment start":   testSegSize,
		"filler":          fillerAt,
		"last segment":    recs[len(recs)-2].PhysicalOffset,
		"start of log":    0,
		"end of log":      end,
		"segment start 3": 3 * testSegSize,
	}
	for name, cut := range cuts {
		t.Run(name, func(t *testing.T) {
			fs := cloneFS(base)
			o := o
			o.FS = fs
			l := openLog(t, o)
			require.NoError(t, l.Truncate(cut))
			require.Equal(t, cut, l.MaxOffset())
			require.LessOrEqual(t, l.FlushedOffset(), cut)
			var want []message.Record
			for _, r := range recs {
				if r.PhysicalOffset < cut {
					want = append(want, r)
				}
			}
			require.Len(t, readAll(t, l), len(want))
			require.NoError(t, l.Close())

			l2, got := recoverFS(t, o, cloneFS(fs))
			require.Equal(t, cut, got, "the cut is durable")
			all := readAll(t, l2)
			require.Len(t, all, len(want))
			for i := range want {
				requireSameRecord(t, want[i], all[i])
			}
			require.Len(t, l2.Segments(), int(cut/testSegSize)+1, "no segment after the cut")
			l2.SetQueueOffset("Topic", 0, 1000)
			res, err := l2.Append([]message.Record{newRecord("Topic", 0, 10, 99)}, false)
			require.NoError(t, err)
			require.Equal(t, cut, res.PhysicalOffset)
			require.Equal(t, int64(1000), res.QueueOffset)
			require.NoError(t, l2.Close())
		})
	}
}

// Offsets inside a record, beyond the end or before the start are refused and change
// nothing; so is a Truncate after an Append.
func TestTruncateRefusals(t *testing.T) {
	o, _, recs, end := truncatedLog(t)
	l := openLog(t, o)
	for _, off := range []int64{recs[5].PhysicalOffset + 1, recs[5].PhysicalOffset + 4, testSegSize + 3} {
		require.ErrorIs(t, l.Truncate(off), ErrNotBoundary, "offset %d", off)
	}
	require.ErrorIs(t, l.Truncate(end+1), ErrOutOfRange)
	require.ErrorIs(t, l.Truncate(-1), ErrOutOfRange)
	require.Equal(t, end, l.MaxOffset())
	require.Len(t, readAll(t, l), len(recs))
	_, err := l.Append([]message.Record{newRecord("Topic", 0, 10, 1)}, false)
	require.NoError(t, err)
	require.ErrorIs(t, l.Truncate(recs[1].PhysicalOffset), ErrAlreadyAppended)
	require.NoError(t, l.Close())
	require.ErrorIs(t, l.Truncate(0), ErrClosed)

	raw, err := Open(o) // not recovered
	require.NoError(t, err)
	require.ErrorIs(t, raw.Truncate(0), ErrNotRecovered)
	require.NoError(t, raw.Close())
}

// A quarantined range is a boundary at its start and at its end, never inside; records
// after it can be cut at.
func TestTruncateAroundQuarantine(t *testing.T) {
	o, fs, recs, _ := truncatedLog(t)
	bad := recs[4]
	seg := bad.PhysicalOffset / testSegSize * testSegSize
	mutateFile(t, fs, segPath(o.Dir, seg), testSegSize, func(b []byte) {
		b[bad.PhysicalOffset-seg+40] ^= 0xff // a queue-offset byte: caught only by resync's PHYSICALOFFSET check
		b[bad.PhysicalOffset-seg+4] ^= 0xff  // the magic
	})
	l, err := Open(o)
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	_, err = l.RecoverWith(RecoverOptions{From: 0, VerifyCRC: true, Durable: 1 << 40})
	require.NoError(t, err)
	require.Len(t, l.Quarantined(), 1)
	d := l.Quarantined()[0]
	require.ErrorIs(t, l.Truncate(d.From+8), ErrNotBoundary)
	require.NoError(t, l.Truncate(recs[6].PhysicalOffset))
	require.Equal(t, recs[6].PhysicalOffset, l.MaxOffset())
	require.NoError(t, l.Truncate(d.To))
	require.NoError(t, l.Truncate(d.From))
	require.Equal(t, d.From, l.MaxOffset())
}
