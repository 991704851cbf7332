package consumequeue

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/ferrymq/ferry/internal/mmap"
	"github.com/stretchr/testify/require"
)

// FuzzQueueFile feeds arbitrary bytes as the segment files of one queue (4 units per file;
// the first byte picks the first segment's index, the rest fills up to three segments) and
// checks that recovery, reads, searches, appends, truncation and deletion never panic, keep
// the queue's invariants, and survive a reopen unchanged.
func FuzzQueueFile(f *testing.F) {
	const units = 4
	seg := func(us ...Unit) []byte {
		b := make([]byte, units*UnitSize)
		for i, u := range us {
			encodeUnit(b[i*UnitSize:], u)
		}
		return b
	}
	cat := func(first byte, parts ...[]byte) []byte {
		out := []byte{first}
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	f.Add([]byte{})
	f.Add(cat(0, seg(unitFor(0), unitFor(1), unitFor(2), unitFor(3)), seg(unitFor(4))))
	f.Add(cat(2, seg(Unit{Size: preBlankSize}, Unit{Size: preBlankSize}, unitFor(10))))
	f.Add(cat(0, seg(unitFor(0), unitFor(1), Unit{Offset: 5, Size: 1}, unitFor(3))))
	f.Add(cat(1, seg(unitFor(4), unitFor(5), unitFor(6), unitFor(7)), seg(), seg(unitFor(12))))
	f.Add(cat(0, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 1}))
	f.Fuzz(func(t *testing.T, data []byte) {
		mem := mmap.NewMemFS()
		opts := testOpts(mem, "/cq", units)
		dir := filepath.Join(opts.Root, "T", "0")
		require.NoError(t, mem.MkdirAll(dir))
		var firstSeg int64
		if len(data) > 0 {
			firstSeg, data = int64(data[0]%8), data[1:]
		}
		for i := int64(0); i < 3 && (i == 0 || len(data) > 0); i++ {
			m, err := mem.OpenMapped(filepath.Join(dir, segmentName((firstSeg+i)*units)), units*UnitSize, true)
			require.NoError(t, err)
			data = data[copy(m.Bytes(), data):]
			require.NoError(t, m.Close())
		}
		require.NoError(t, mem.SyncDir(dir))

		s, err := Open(opts)
		require.NoError(t, err)
		q, err := s.Queue("T", 0, false)
		require.NoError(t, err)
		checkQueue(t, q)

		storeTime := func(phy int64, _ int32) (int64, error) { return phy, nil }
		for _, ts := range []int64{-1, 0, 1000, 5000, 1 << 62} {
			for _, upper := range []bool{false, true} {
				o, err := q.OffsetByTime(ts, storeTime, upper)
				require.NoError(t, err)
				require.GreaterOrEqual(t, o, q.MinOffset())
				require.LessOrEqual(t, o, q.MaxOffset())
			}
		}
		next := Unit{Offset: 0, Size: 10}
		if last, ok := q.LastUnit(); ok {
			next.Offset = last.End()
		}
		if next.Offset >= 0 { // garbage can end at the top of the int64 range
			require.NoError(t, q.Append(q.MaxOffset(), next))
		}
		checkQueue(t, q)
		var cut int64 // the commit log's "min offset" the queue was cleaned to
		if u, err := q.Get(q.MinOffset()); err == nil {
			require.NoError(t, q.TruncateByPhysical(u.Offset+1))
			checkQueue(t, q)
			cut = u.End()
			_, err = q.DeleteBefore(cut)
			require.NoError(t, err)
			checkQueue(t, q)
		}
		before := readAll(t, q)
		minOff, maxOff := q.MinOffset(), q.MaxOffset()
		require.NoError(t, s.Close())

		s, err = Open(opts)
		require.NoError(t, err)
		defer s.Close()
		q, err = s.Queue("T", 0, false)
		require.NoError(t, err)
		require.Equal(t, maxOff, q.MaxOffset())
		require.LessOrEqual(t, q.MinOffset(), minOff)
		_, err = q.DeleteBefore(cut)
		require.NoError(t, err)
		require.Equal(t, fmt.Sprint(before), fmt.Sprint(readAll(t, q)))
	})
}

// checkQueue verifies the invariants a reader relies on.
func checkQueue(t *testing.T, q *Queue) {
	t.Helper()
	require.LessOrEqual(t, q.MinOffset(), q.MaxOffset())
	units := readAll(t, q)
	require.Len(t, units, int(q.MaxOffset()-q.MinOffset()))
	for i, u := range units {
		require.True(t, u.valid() && !u.preBlank(), "unit %d: %+v", i, u)
		if i > 0 {
			require.True(t, u.follows(units[i-1]), "unit %d: %+v after %+v", i, u, units[i-1])
		}
	}
}

// FuzzDecodeUnit decodes arbitrary bytes as a unit: short input is ErrShortUnit, anything
// else round-trips through the encoder, and the classifications agree with each other.
func FuzzDecodeUnit(f *testing.F) {
	enc := func(u Unit) []byte {
		b := make([]byte, UnitSize)
		encodeUnit(b, u)
		return b
	}
	f.Add(enc(unitFor(3)))
	f.Add(enc(Unit{Size: preBlankSize}))
	f.Add(enc(Unit{Offset: 77, Size: holeSize}))
	f.Add(make([]byte, UnitSize))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		u, err := DecodeUnit(b)
		if len(b) < UnitSize {
			require.ErrorIs(t, err, ErrShortUnit)
			require.ErrorIs(t, err, ErrInvalidUnit)
			return
		}
		require.NoError(t, err)
		require.Equal(t, b[:UnitSize], enc(u))
		if u.Zero() || u.Offset < 0 || u.Size <= 0 {
			require.False(t, u.Valid())
		}
		if u.PreBlank() {
			require.True(t, u.Valid())
			require.False(t, u.Hole())
		}
		if u.Hole() {
			require.Equal(t, u.Offset >= 0, u.Valid())
		}
		if u.Follows(u) {
			require.True(t, u.Valid())
		}
	})
}

func TestParseSegmentName(t *testing.T) {
	first, ok := ParseSegmentName(segmentName(300_000))
	require.True(t, ok)
	require.Equal(t, int64(300_000), first)
	for _, bad := range []string{"", "00000000000000000001", "0000000000000000000x", "123"} {
		_, ok := ParseSegmentName(bad)
		require.False(t, ok, bad)
	}
}
