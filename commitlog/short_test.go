package commitlog

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/internal/mmap"
	"github.com/ferrymq/ferry/message"
)

// A last segment cut short (a copy interrupted, a file system that lost its tail) is a
// torn tail, not a broken layout: the log opens, keeps every whole record before the cut
// and appends after it.
func TestShortLastSegmentIsATornTail(t *testing.T) {
	t.Run("last file", func(t *testing.T) { testShortLastSegment(t, false) })
	// A crash leaves the next segment preallocated (full size, zeros) after the short one.
	t.Run("preallocated successor", func(t *testing.T) { testShortLastSegment(t, true) })
}

func testShortLastSegment(t *testing.T, successor bool) {
	dir := t.TempDir()
	o := testOptions(mmap.OSFS{}, dir)
	o.PrefaultSegments = false
	l := openLog(t, o)
	var recs []int64 // physical offsets
	for i := 0; l.MaxOffset() < testSegSize+testSegSize/2; i++ {
		rec := newRecord("T", 0, 300, i)
		res, err := l.Append([]message.Record{rec}, false)
		require.NoError(t, err)
		recs = append(recs, res.PhysicalOffset)
	}
	end := l.MaxOffset()
	require.NoError(t, l.Close())

	// Cut the last segment in the middle of a record.
	last := filepath.Join(dir, segmentName(testSegSize))
	cut := end - testSegSize - 150
	require.NoError(t, os.Truncate(last, cut))
	next := filepath.Join(dir, segmentName(2*testSegSize))
	if successor {
		require.NoError(t, os.WriteFile(next, make([]byte, testSegSize), 0o644))
	}

	l2, err := Open(o)
	require.NoError(t, err, "a short last segment does not stop the log from opening")
	defer func() { require.NoError(t, l2.Close()) }()
	recovered, err := l2.Recover(l2.MinOffset(), true)
	require.NoError(t, err)
	require.Less(t, recovered, end, "the cut record is gone")
	require.GreaterOrEqual(t, recovered, testSegSize+cut-400, "every whole record before the cut is kept")
	kept := 0
	for _, phy := range recs {
		if phy >= recovered {
			break
		}
		_, v, err := l2.ReadRecord(phy)
		require.NoError(t, err, "record at %d", phy)
		v.Release()
		kept++
	}
	require.Positive(t, kept)
	fi, err := os.Stat(last)
	require.NoError(t, err)
	require.Equal(t, int64(testSegSize), fi.Size(), "padded back to the segment size")
	if successor {
		require.Len(t, l2.Segments(), 2, "the empty successor is dropped with the torn tail")
	}
	_, err = l2.Append([]message.Record{newRecord("T", 0, 300, 999)}, false)
	require.NoError(t, err, "appends continue after the recovered end")
}
