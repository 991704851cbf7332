package consumequeue

import (
	"encoding/binary"
	"errors"
	"math"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestUnitFileFormat(t *testing.T) {
	for _, c := range bothFS(t) {
		t.Run(c.name, func(t *testing.T) {
			s := openStore(t, testOpts(c.fs, c.root, 4))
			q := mustQueue(t, s, "TopicTest", 3)
			units := []Unit{
				{Offset: 0, Size: 187, TagsCode: 0},
				{Offset: 187, Size: 200, TagsCode: -1},
				{Offset: 1 << 40, Size: math.MaxInt32 - 1, TagsCode: math.MinInt64},
				{Offset: 1<<40 + math.MaxInt32, Size: 1, TagsCode: 0x0102030405060708},
				{Offset: 1 << 41, Size: 91, TagsCode: 42},
			}
			for i, u := range units {
				require.NoError(t, q.Append(int64(i), u))
			}
			require.NoError(t, q.Flush())

			dir := filepath.Join(c.root, "TopicTest", "3")
			names, err := c.fs.ReadDir(dir)
			require.NoError(t, err)
			require.Equal(t, []string{"00000000000000000000", "00000000000000000080"}, names)
			var raw []byte
			for _, n := range names {
				b, err := c.fs.ReadFile(filepath.Join(dir, n))
				require.NoError(t, err)
				require.Len(t, b, 4*UnitSize)
				raw = append(raw, b...)
			}
			for i, u := range units {
				b := raw[i*20:]
				require.Equal(t, u.Offset, int64(binary.BigEndian.Uint64(b[0:8])), "unit %d offset", i)
				require.Equal(t, u.Size, int32(binary.BigEndian.Uint32(b[8:12])), "unit %d size", i)
				require.Equal(t, u.TagsCode, int64(binary.BigEndian.Uint64(b[12:20])), "unit %d tags", i)
			}
			require.Equal(t, make([]byte, 3*UnitSize), raw[5*UnitSize:], "the rest is zero")
		})
	}
}

func TestSegmentNames(t *testing.T) {
	require.Equal(t, "00000000000000000000", segmentName(0))
	require.Equal(t, "00000000000006000000", segmentName(300_000))
	base, ok := parseSegmentName("00000000000012000000", 6_000_000)
	require.True(t, ok)
	require.Equal(t, int64(600_000), base)
	for _, bad := range []string{"0000000000001200000", "0000000000001200000x", "00000000000012000020"} {
		_, ok := parseSegmentName(bad, 6_000_000)
		require.False(t, ok, bad)
	}
}

func TestAppendReadAcrossFiles(t *testing.T) {
	for _, c := range bothFS(t) {
		t.Run(c.name, func(t *testing.T) {
			opts := testOpts(c.fs, c.root, 4)
			s := openStore(t, opts)
			q := mustQueue(t, s, "T", 0)
			require.Equal(t, int64(0), q.MaxOffset())
			n, err := q.Read(0, make([]Unit, 4))
			require.NoError(t, err)
			require.Zero(t, n)
			_, ok := q.LastUnit()
			require.False(t, ok)

			appendN(t, q, 0, 11)
			require.Equal(t, int64(11), q.MaxOffset())
			for i := int64(0); i < 11; i++ {
				u, err := q.Get(i)
				require.NoError(t, err)
				require.Equal(t, unitFor(i), u)
			}
			_, err = q.Get(11)
			require.ErrorIs(t, err, ErrOffsetOutOfRange)
			buf := make([]Unit, 7)
			n, err = q.Read(2, buf)
			require.NoError(t, err)
			require.Equal(t, 7, n)
			for i := range n {
				require.Equal(t, unitFor(int64(2+i)), buf[i])
			}
			n, err = q.Read(9, buf)
			require.NoError(t, err)
			require.Equal(t, 2, n)
			n, err = q.Read(40, buf)
			require.NoError(t, err)
			require.Zero(t, n)
			last, ok := q.LastUnit()
			require.True(t, ok)
			require.Equal(t, unitFor(10), last)
			require.NoError(t, s.Close())

			s2 := openStore(t, opts)
			q2, err := s2.Queue("T", 0, false)
			require.NoError(t, err)
			require.Equal(t, int64(0), q2.MinOffset())
			require.Equal(t, int64(11), q2.MaxOffset())
			got := readAll(t, q2)
			require.Len(t, got, 11)
			for i, u := range got {
				require.Equal(t, unitFor(int64(i)), u)
			}
			appendN(t, q2, 11, 13)
			require.Equal(t, int64(13), q2.MaxOffset())
		})
	}
}

func TestAppendRules(t *testing.T) {
	for _, c := range bothFS(t) {
		t.Run(c.name, func(t *testing.T) {
			s := openStore(t, testOpts(c.fs, c.root, 4))
			q := mustQueue(t, s, "T", 1)
			appendN(t, q, 0, 6)

			require.ErrorIs(t, q.Append(7, unitFor(7)), ErrGap)
			require.ErrorIs(t, q.Append(3, unitFor(4)), ErrMismatch)
			// Idempotent re-dispatch of everything already stored.
			appendN(t, q, 0, 6)
			require.Equal(t, int64(6), q.MaxOffset())

			require.ErrorIs(t, q.Append(6, Unit{Offset: -1, Size: 10}), ErrInvalidUnit)
			require.ErrorIs(t, q.Append(6, Unit{Offset: 10_000, Size: 0}), ErrInvalidUnit)
			require.ErrorIs(t, q.Append(6, Unit{Size: math.MaxInt32}), ErrInvalidUnit, "pre-blank")
			// Overlapping the previous record or going backwards in the commit log.
			require.ErrorIs(t, q.Append(6, Unit{Offset: 5050, Size: 10}), ErrMismatch)
			require.ErrorIs(t, q.Append(6, Unit{Offset: 100, Size: 10}), ErrMismatch)
			require.NoError(t, q.Append(6, Unit{Offset: 5100, Size: 10}), "right after the previous record")
			require.Equal(t, int64(7), q.MaxOffset())
		})
	}
}

func TestReadDoesNotAllocate(t *testing.T) {
	c := bothFS(t)[1]
	s := openStore(t, testOpts(c.fs, c.root, 16))
	q := mustQueue(t, s, "T", 0)
	appendN(t, q, 0, 100)
	buf := make([]Unit, 32)
	allocs := testing.AllocsPerRun(200, func() {
		n, err := q.Read(10, buf)
		if err != nil || n != 32 {
			panic("bad read")
		}
		if _, err := q.Read(0, buf[:0]); err != nil {
			panic(err)
		}
		if _, err := q.Get(99); err != nil {
			panic(err)
		}
		if q2, err := s.Queue("T", 0, false); err != nil || q2 != q {
			panic("lookup")
		}
	})
	require.Zero(t, allocs)
}

func TestOffsetByTime(t *testing.T) {
	c := bothFS(t)[1]
	s := openStore(t, testOpts(c.fs, c.root, 4))
	q := mustQueue(t, s, "T", 0)
	// Store times by unit: 100, 200, 200, 200, 300, 400, 500.
	times := []int64{100, 200, 200, 200, 300, 400, 500}
	timeOf := func(phy int64, size int32) (int64, error) {
		require.Equal(t, int32(100), size)
		return times[phy/1000], nil
	}
	empty, err := q.OffsetByTime(150, timeOf, false)
	require.NoError(t, err)
	require.Zero(t, empty)
	appendN(t, q, 0, int64(len(times)))

	for _, tc := range []struct {
		ts           int64
		lower, upper int64
	}{
		{50, 0, 0},  // all newer → min for both
		{100, 0, 0}, // exact first
		{150, 1, 0}, // between
		{200, 1, 3}, // several equal times: first / last
		{250, 4, 3}, // between
		{500, 6, 6}, // exact last
		{900, 7, 6}, // all older: lower → max, upper → the last entry
		{-1, 0, 0},  // before everything
		{400, 5, 5}, // exact in the middle
		{401, 6, 5}, // just after
		{199, 1, 0}, // just before a run
		{300, 4, 4}, // single
		{301, 5, 4}, // after single
		{499, 6, 5}, // before last
		{100_000, 7, 6},
	} {
		lo, err := q.OffsetByTime(tc.ts, timeOf, false)
		require.NoError(t, err)
		require.Equal(t, tc.lower, lo, "lower %d", tc.ts)
		up, err := q.OffsetByTime(tc.ts, timeOf, true)
		require.NoError(t, err)
		require.Equal(t, tc.upper, up, "upper %d", tc.ts)
	}

	boom := errors.New("record gone")
	_, err = q.OffsetByTime(200, func(int64, int32) (int64, error) { return 0, boom }, false)
	require.ErrorIs(t, err, boom)

	// Units removed from the start count as older.
	_, err = q.DeleteBefore(2000)
	require.NoError(t, err)
	require.Equal(t, int64(2), q.MinOffset())
	lo, err := q.OffsetByTime(50, timeOf, false)
	require.NoError(t, err)
	require.Equal(t, int64(2), lo)
}

func TestTruncateByPhysical(t *testing.T) {
	for _, c := range bothFS(t) {
		t.Run(c.name, func(t *testing.T) {
			opts := testOpts(c.fs, c.root, 4)
			s := openStore(t, opts)
			q := mustQueue(t, s, "T", 0)
			appendN(t, q, 0, 14)
			require.NoError(t, q.Flush())
			dir := filepath.Join(c.root, "T", "0")

			require.NoError(t, q.TruncateByPhysical(20_000), "nothing at or after")
			require.Equal(t, int64(14), q.MaxOffset())

			// Cut inside the second segment, by an offset between two records.
			require.NoError(t, q.TruncateByPhysical(5050))
			require.Equal(t, int64(6), q.MaxOffset())
			names, err := c.fs.ReadDir(dir)
			require.NoError(t, err)
			require.Len(t, names, 2)
			raw, err := c.fs.ReadFile(filepath.Join(dir, names[1]))
			require.NoError(t, err)
			require.Equal(t, make([]byte, 2*UnitSize), raw[2*UnitSize:], "removed units are zeroed")
			last, ok := q.LastUnit()
			require.True(t, ok)
			require.Equal(t, unitFor(5), last)
			appendN(t, q, 6, 9) // re-dispatch

			// Cut exactly at a segment start: that segment goes.
			require.NoError(t, q.TruncateByPhysical(4000))
			require.Equal(t, int64(4), q.MaxOffset())
			names, err = c.fs.ReadDir(dir)
			require.NoError(t, err)
			require.Equal(t, []string{"00000000000000000000"}, names)

			// Everything: the first segment stays (it holds the queue's start).
			require.NoError(t, q.TruncateByPhysical(0))
			require.Equal(t, int64(0), q.MaxOffset())
			_, ok = q.LastUnit()
			require.False(t, ok)
			appendN(t, q, 0, 5)
			require.NoError(t, s.Close())

			s2 := openStore(t, opts)
			q2, err := s2.Queue("T", 0, false)
			require.NoError(t, err)
			require.Equal(t, int64(5), q2.MaxOffset())
			require.Len(t, readAll(t, q2), 5)
		})
	}
}

func TestOffsetByPhysical(t *testing.T) {
	for _, c := range bothFS(t) {
		t.Run(c.name, func(t *testing.T) {
			s := openStore(t, testOpts(c.fs, c.root, 4))
			q := mustQueue(t, s, "T", 0)
			require.Zero(t, q.OffsetByPhysical(0), "empty queue")
			appendN(t, q, 0, 14) // unit i points at 1000·i
			for phy, want := range map[int64]int64{-1: 0, 0: 0, 1: 1, 999: 1, 1000: 1, 5050: 6, 13_000: 13, 13_001: 14, 1 << 40: 14} {
				require.Equal(t, want, q.OffsetByPhysical(phy), "phy %d", phy)
			}
			_, err := q.DeleteBefore(6000)
			require.NoError(t, err)
			require.Equal(t, int64(6), q.OffsetByPhysical(0), "never below the minimum")
		})
	}
}
