package commitlog

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/message"
)

// scanned is what ScanSegment reported, with records copied out of the callback.
type scanned struct {
	events []ScanEvent
	recs   []message.Record
	end    int64
}

func scanSegmentAll(t testing.TB, data []byte, start int64, verifyCRC bool) scanned {
	t.Helper()
	var s scanned
	before := bytes.Clone(data)
	end, stopped := ScanSegment(data, start, verifyCRC, func(ev ScanEvent) bool {
		if ev.Record != nil {
			r := *ev.Record
			r.Body, r.Topic, r.Properties = bytes.Clone(r.Body), bytes.Clone(r.Topic), bytes.Clone(r.Properties)
			s.recs = append(s.recs, r)
			ev.Record = &s.recs[len(s.recs)-1]
		}
		s.events = append(s.events, ev)
		return true
	})
	require.False(t, stopped)
	require.Equal(t, before, data, "ScanSegment never writes")
	s.end = end
	checkScanEvents(t, s.events, start, int64(len(data)), end)
	return s
}

// checkScanEvents checks that events tile [start, end) in order and that end lies in the
// segment.
func checkScanEvents(t testing.TB, events []ScanEvent, start, size, end int64) {
	t.Helper()
	pos := start
	for i, ev := range events {
		require.Equal(t, pos, ev.Offset, "event %d starts where the previous one ended", i)
		require.Positive(t, ev.Size, "event %d", i)
		kinds := 0
		for _, b := range []bool{ev.Record != nil, ev.Filler, ev.Quarantined, ev.Err != nil} {
			if b {
				kinds++
			}
		}
		require.Equal(t, 1, kinds, "event %d is exactly one kind: %+v", i, ev)
		if ev.Record != nil {
			require.Equal(t, ev.Offset, ev.Record.PhysicalOffset)
			require.Equal(t, ev.Size, int64(ev.Record.StoreSize))
		}
		if ev.Filler {
			require.Equal(t, start+size, ev.Offset+ev.Size, "a filler ends the segment")
		}
		pos += ev.Size
	}
	require.Equal(t, pos, end, "the scan ends after the last event")
	require.LessOrEqual(t, end, start+size)
}

// TestScanSegmentMatchesLog reads the segment files of a log offline and finds exactly the
// records appended, a filler at the end of every full segment, and the log's end.
func TestScanSegmentMatchesLog(t *testing.T) {
	o := testOptions(nil, "/log")
	fs, recs, end := buildLog(t, o, 3*testSegSize+100, 1)
	var got []message.Record
	for start := int64(0); start < end; start += testSegSize {
		data, err := fs.ReadFile(segPath("/log", start))
		require.NoError(t, err)
		s := scanSegmentAll(t, data, start, true)
		got = append(got, s.recs...)
		if start+testSegSize < end {
			require.True(t, s.events[len(s.events)-1].Filler, "full segment %d ends with a filler", start)
			require.Equal(t, start+testSegSize, s.end)
		} else {
			require.Equal(t, end, s.end, "the scan of the last segment ends at the log's end")
		}
	}
	require.Len(t, got, len(recs))
	for i := range recs {
		require.Equal(t, string(recs[i].Body), string(got[i].Body), "record %d", i)
		require.Equal(t, recs[i].QueueID, got[i].QueueID)
	}
}

// TestScanSegmentDamage finds a flipped body byte (only with verifyCRC), a zeroed record
// followed by valid ones, and a quarantined range, and goes on after each.
func TestScanSegmentDamage(t *testing.T) {
	o := testOptions(nil, "/log")
	fs, _, _ := buildLog(t, o, testSegSize/2, 2)
	data, err := fs.ReadFile(segPath("/log", 0))
	require.NoError(t, err)
	clean := scanSegmentAll(t, data, 0, true)
	require.Greater(t, len(clean.recs), 6)
	third, fifth := clean.events[2], clean.events[4]

	// A flipped byte in the third record's body.
	bad := bytes.Clone(data)
	bodyAt := third.Size - int64(len(third.Record.Properties)) - 2 - int64(len(third.Record.Topic)) - 1 - int64(len(third.Record.Body))
	require.Equal(t, third.Record.Body[0], bad[third.Offset+bodyAt])
	bad[third.Offset+bodyAt] ^= 0xFF
	s := scanSegmentAll(t, bad, 0, true)
	require.Len(t, s.recs, len(clean.recs)-1)
	require.Error(t, s.events[2].Err)
	require.ErrorIs(t, s.events[2].Err, ErrCorrupt)
	require.ErrorIs(t, s.events[2].Err, message.ErrCRC)
	require.Equal(t, third.Offset, s.events[2].Offset)
	require.Equal(t, third.Size, s.events[2].Size, "valid data resumes at the next record")
	require.Equal(t, clean.end, s.end)
	require.Len(t, scanSegmentAll(t, bad, 0, false).recs, len(clean.recs), "without verifyCRC the body is not checked")

	// The fifth record zeroed: zero bytes with records after them are damage, not the end.
	bad = bytes.Clone(data)
	clear(bad[fifth.Offset : fifth.Offset+fifth.Size])
	s = scanSegmentAll(t, bad, 0, true)
	require.Len(t, s.recs, len(clean.recs)-1)
	require.ErrorIs(t, s.events[4].Err, ErrCorrupt)
	require.Contains(t, s.events[4].Err.Error(), "zero bytes")
	require.Equal(t, clean.end, s.end)

	// The same range quarantined: reported as such, no error.
	binary.BigEndian.PutUint32(bad[fifth.Offset:], uint32(fifth.Size))
	binary.BigEndian.PutUint32(bad[fifth.Offset+4:], message.MagicQuarantine)
	s = scanSegmentAll(t, bad, 0, true)
	require.True(t, s.events[4].Quarantined)
	require.Equal(t, fifth.Size, s.events[4].Size)
	for _, ev := range s.events {
		require.NoError(t, ev.Err)
	}

	// Garbage after the last record with nothing valid behind it: damage to the segment end.
	bad = bytes.Clone(data)
	bad[clean.end+3] = 7
	s = scanSegmentAll(t, bad, 0, true)
	last := s.events[len(s.events)-1]
	require.Error(t, last.Err)
	require.Equal(t, clean.end, last.Offset)
	require.Equal(t, int64(len(bad)), s.end)

	// A start offset that does not match the records' PHYSICALOFFSET: all damage.
	s = scanSegmentAll(t, data, testSegSize, true)
	require.Empty(t, s.recs)

	// fn stops the scan.
	n := 0
	stopAt, stopped := ScanSegment(data, 0, true, func(ScanEvent) bool { n++; return n < 3 })
	require.True(t, stopped)
	require.Equal(t, clean.events[2].Offset, stopAt)
}

// FuzzScanSegment feeds arbitrary bytes as a segment file: ScanSegment never panics,
// never writes, and reports events that tile the scanned range, each record valid at its
// own offset.
func FuzzScanSegment(f *testing.F) {
	seg := make([]byte, 4096)
	pos := 0
	for i := range 5 {
		r := newRecord("T", int32(i%2), 40*i, i)
		r.PhysicalOffset = int64(pos)
		n, err := r.EncodeTo(seg[pos:])
		if err != nil {
			f.Fatal(err)
		}
		pos += n
	}
	f.Add(seg, uint16(0))
	f.Add(seg[:pos+10], uint16(0))
	filled := bytes.Clone(seg)
	if _, err := message.EncodeBlank(filled[pos:], len(filled)-pos); err != nil {
		f.Fatal(err)
	}
	f.Add(filled, uint16(0))
	quarantined := bytes.Clone(seg)
	message.EncodeQuarantine(quarantined[100:], 50)
	f.Add(quarantined, uint16(1))
	f.Add([]byte{}, uint16(3))
	f.Add(make([]byte, 7), uint16(0))
	f.Fuzz(func(t *testing.T, data []byte, startPages uint16) {
		start := int64(startPages) * PageSize
		for _, verify := range []bool{false, true} {
			s := scanSegmentAll(t, data, start, verify)
			for _, r := range s.recs {
				if verify {
					require.NoError(t, r.VerifyBodyCRC())
				}
			}
		}
	})
}
