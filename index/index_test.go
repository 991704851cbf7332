package index

import (
	"encoding/binary"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/ferrymq/ferry/internal/mmap"
	"github.com/ferrymq/ferry/message"
	"github.com/stretchr/testify/require"
)

func TestKeyHash(t *testing.T) {
	require.Equal(t, int32(2112), KeyHash("Aa"))
	require.Equal(t, KeyHash("Aa"), KeyHash("BB"), "the classic Java collision")
	require.Equal(t, int32(math.MinInt32), message.JavaHash("polygenelubricants"))
	require.Equal(t, int32(0), KeyHash("polygenelubricants"), "Math.abs(Integer.MIN_VALUE) quirk")
	neg := "TopicTest#key-negative-hash-0"
	for message.JavaHash(neg) >= 0 {
		neg += "x"
	}
	require.Equal(t, -message.JavaHash(neg), KeyHash(neg))
	require.Equal(t, "TopicTest#k1", BuildKey("TopicTest", "k1"))
}

func TestFileNames(t *testing.T) {
	ts := time.Date(2023, 1, 2, 3, 4, 5, 678_900_000, time.Local)
	require.Equal(t, "20230102030405678", fileName(ts))
	got, ok := parseFileName("20230102030405678")
	require.True(t, ok)
	require.True(t, got.Equal(ts.Truncate(time.Millisecond)))
	for _, bad := range []string{"2023010203040567", "2023010203040567x", "20231302030405678", "x.tmp"} {
		_, ok := parseFileName(bad)
		require.False(t, ok, bad)
	}
}

func TestRawFormat(t *testing.T) {
	const slots, entries = 7, 10
	opts := memOpts(t, slots, entries)
	x := openIndex(t, opts)
	b0 := baseTime.UnixMilli()
	require.NoError(t, x.Put("Aa", 1000, b0))       // hash 2112, slot 5
	require.NoError(t, x.Put("BB", 1000, b0))       // same hash and offset: a duplicate
	require.NoError(t, x.Put("BB", 1100, b0+999))   // same slot, chained
	require.NoError(t, x.Put("T#k", 1200, b0+2500)) // another slot
	require.NoError(t, x.Flush())

	names, err := opts.FS.ReadDir(opts.Dir)
	require.NoError(t, err)
	require.Equal(t, []string{fileName(baseTime)}, names)
	raw, err := opts.FS.ReadFile(filepath.Join(opts.Dir, names[0]))
	require.NoError(t, err)
	require.Len(t, raw, 40+slots*4+entries*20)
	require.Equal(t, opts.FileSize(), int64(len(raw)))

	be64 := func(off int) int64 { return int64(binary.BigEndian.Uint64(raw[off:])) }
	be32 := func(off int) int32 { return int32(binary.BigEndian.Uint32(raw[off:])) }
	require.Equal(t, b0, be64(0), "beginTimestamp")
	require.Equal(t, b0+2500, be64(8), "endTimestamp")
	require.Equal(t, int64(1000), be64(16), "beginPhyOffset")
	require.Equal(t, int64(1200), be64(24), "endPhyOffset")
	require.Equal(t, int32(2), be32(32), "hashSlotCount")
	require.Equal(t, int32(4), be32(36), "indexCount")

	slotAA := 2112 % slots
	slotK := int(KeyHash("T#k")) % slots
	require.NotEqual(t, slotAA, slotK)
	for s := range slots {
		v := be32(40 + s*4)
		switch s {
		case slotAA:
			require.Equal(t, int32(2), v, "newest entry of the Aa/BB slot")
		case slotK:
			require.Equal(t, int32(3), v)
		default:
			require.Zero(t, v)
		}
	}
	entry := func(n int) (int32, int64, int32, int32) {
		off := 40 + slots*4 + n*20
		return be32(off), be64(off + 4), be32(off + 12), be32(off + 16)
	}
	h, phy, diff, prev := entry(0)
	require.Equal(t, []any{int32(0), int64(0), int32(0), int32(0)}, []any{h, phy, diff, prev}, "entry 0 unused")
	h, phy, diff, prev = entry(1)
	require.Equal(t, []any{int32(2112), int64(1000), int32(0), int32(0)}, []any{h, phy, diff, prev})
	h, phy, diff, prev = entry(2)
	require.Equal(t, []any{int32(2112), int64(1100), int32(0), int32(1)}, []any{h, phy, diff, prev})
	h, phy, diff, prev = entry(3)
	require.Equal(t, []any{KeyHash("T#k"), int64(1200), int32(2), int32(0)}, []any{h, phy, diff, prev})
	require.Equal(t, make([]byte, (entries-4)*20), raw[40+slots*4+4*20:])
}

func TestPutQuery(t *testing.T) {
	for _, fsys := range []string{"os", "mem"} {
		t.Run(fsys, func(t *testing.T) {
			opts := memOpts(t, 101, 1000)
			if fsys == "os" {
				opts.FS, opts.Dir = mmap.OSFS{}, filepath.Join(t.TempDir(), "index")
			}
			x := openIndex(t, opts)
			msgs := genMsgs(200, 13, 0)
			putMsgs(t, x, msgs, 0)
			keys := allKeys(msgs)
			for k, got := range queryAll(t, x, keys) {
				require.Equal(t, want(msgs, k, math.MaxInt64), got, k)
			}
			got, err := x.Query("T#missing", 10, 0, math.MaxInt64)
			require.NoError(t, err)
			require.Empty(t, got)

			// maxNum keeps the newest.
			all := want(msgs, "T#k3", math.MaxInt64)
			got, err = x.Query("T#k3", 4, 0, math.MaxInt64)
			require.NoError(t, err)
			require.Equal(t, all[:4], got)
			got, err = x.Query("T#k3", 0, 0, math.MaxInt64)
			require.NoError(t, err)
			require.Empty(t, got)

			// Time window: records 40..99 (stored 16 s .. 39.6 s after the first).
			b0 := baseTime.UnixMilli()
			got, err = x.Query("T#k3", 1000, b0+16_000, b0+39_600)
			require.NoError(t, err)
			var inWindow []int64
			for _, m := range msgs {
				if m.ts >= b0+16_000 && m.ts <= b0+39_600 && want([]msg{m}, "T#k3", math.MaxInt64) != nil {
					inWindow = append([]int64{m.phy}, inWindow...)
				}
			}
			require.NotEmpty(t, inWindow)
			// One-second resolution: the window may also return records of its edge seconds.
			require.Subset(t, got, inWindow)
			for _, phy := range got {
				ts := msgs[phy/100].ts
				require.True(t, ts >= b0+15_000 && ts < b0+40_600, "record %d at +%d ms", phy, ts-b0)
			}
			got, err = x.Query("T#k3", 10, b0+10_000_000, b0+20_000_000)
			require.NoError(t, err)
			require.Empty(t, got, "window after everything")
			got, err = x.Query("T#k3", 10, b0-20_000, b0-10_000)
			require.NoError(t, err)
			require.Empty(t, got, "window before everything")
			got, err = x.Query("T#k3", 10, b0+5000, b0)
			require.NoError(t, err)
			require.Empty(t, got, "empty window")

			// Re-dispatch is ignored: same results, same count.
			before := x.Files()
			putMsgs(t, x, msgs[150:], 0)
			require.Equal(t, before, x.Files())
			require.Equal(t, all, func() []int64 {
				got, err := x.Query("T#k3", 1000, 0, math.MaxInt64)
				require.NoError(t, err)
				return got
			}())
			require.ErrorIs(t, x.Put("k", -1, b0), ErrInvalid)

			last, ok := x.LastPhyOffset()
			require.True(t, ok)
			require.Equal(t, int64(19_900), last)

			require.NoError(t, x.Close())
			x2 := openIndex(t, opts)
			for k, got := range queryAll(t, x2, keys) {
				require.Equal(t, want(msgs, k, math.MaxInt64), got, k)
			}
			require.NoError(t, x2.Close())
			_, err = x2.Query("T#k3", 1, 0, 1)
			require.ErrorIs(t, err, ErrClosed)
			require.ErrorIs(t, x2.Put("T#k3", 1<<40, b0), ErrClosed)
		})
	}
}

func TestRollover(t *testing.T) {
	opts := memOpts(t, 5, 8) // 7 entries per file
	x := openIndex(t, opts)  // the clock never moves: names must still increase
	msgs := genMsgs(40, 6, 1)
	putMsgs(t, x, msgs, 0)
	files := x.Files()
	require.Greater(t, len(files), 5)
	for i, f := range files {
		if i > 0 {
			require.Greater(t, f.Name, files[i-1].Name)
			require.GreaterOrEqual(t, f.BeginPhyOffset, files[i-1].EndPhyOffset)
			require.GreaterOrEqual(t, f.BeginTimestamp, files[i-1].EndTimestamp)
		}
		if i < len(files)-1 {
			require.Equal(t, int32(8), f.IndexCount)
		}
	}
	keys := allKeys(msgs)
	for k, got := range queryAll(t, x, keys) {
		require.Equal(t, want(msgs, k, math.MaxInt64), got, k)
	}
	// A window inside one file's time range only touches files overlapping it.
	b0 := baseTime.UnixMilli()
	got, err := x.Query("T#k1", 100, b0+8000, b0+9999)
	require.NoError(t, err)
	for _, phy := range got {
		require.InDelta(t, b0+9000, msgs[phy/100].ts, 2000)
	}
	require.NoError(t, x.Flush())
	require.NoError(t, x.Close())

	x = openIndex(t, opts)
	require.Equal(t, files, x.Files())
	for k, got := range queryAll(t, x, keys) {
		require.Equal(t, want(msgs, k, math.MaxInt64), got, k)
	}
	n, err := x.DeleteBefore(files[2].EndPhyOffset + 1)
	require.NoError(t, err)
	require.Equal(t, 3, n)
	require.Equal(t, files[3:], x.Files())
	n, err = x.DeleteBefore(math.MaxInt64)
	require.NoError(t, err)
	require.Equal(t, len(files)-4, n, "never the newest")
	names, err := opts.FS.ReadDir(opts.Dir)
	require.NoError(t, err)
	require.Equal(t, []string{files[len(files)-1].Name}, names)
}

func TestCollisionsAndQueryFunc(t *testing.T) {
	opts := memOpts(t, 1, 100) // one slot: every key shares one chain
	x := openIndex(t, opts)
	b0 := baseTime.UnixMilli()
	require.NoError(t, x.Put("Aa", 100, b0))
	require.NoError(t, x.Put("other", 200, b0))
	require.NoError(t, x.Put("BB", 300, b0))
	require.NoError(t, x.Put("Aa", 400, b0))
	require.NoError(t, x.Put("Aa", 400, b0), "duplicate ignored")

	got, err := x.Query("Aa", 10, 0, math.MaxInt64)
	require.NoError(t, err)
	require.Equal(t, []int64{400, 300, 100}, got, "BB collides with Aa")
	got, err = x.Query("other", 10, 0, math.MaxInt64)
	require.NoError(t, err)
	require.Equal(t, []int64{200}, got)

	isAa := map[int64]bool{100: true, 400: true} // records whose keys are really "Aa"
	var seen []int64
	got, err = x.QueryFunc("Aa", 2, 0, math.MaxInt64, func(phy int64) bool {
		seen = append(seen, phy)
		return isAa[phy]
	})
	require.NoError(t, err)
	require.Equal(t, []int64{400, 100}, got, "the collision does not use up maxNum")
	require.Equal(t, []int64{400, 300, 100}, seen)
	require.Equal(t, int32(1), x.Files()[0].HashSlotCount)
}

func TestTruncateAfterRestores(t *testing.T) {
	msgs := genMsgs(120, 9, 2)
	keys := allKeys(msgs)
	for _, cut := range []int64{0, 50, 100, 2300, 4000, 4100, 7777, 11_900, 12_000, 1 << 40} {
		opts := memOpts(t, 3, 16) // 15 entries per file
		x := openIndex(t, opts)
		putMsgs(t, x, msgs, 0)
		full := queryAll(t, x, keys)
		if cut%2 == 0 {
			require.NoError(t, x.Flush())
		}
		require.NoError(t, x.TruncateAfter(cut))
		for _, k := range keys {
			got, err := x.Query(k, 1<<20, 0, math.MaxInt64)
			require.NoError(t, err)
			require.Equal(t, want(msgs, k, cut), got, "cut %d key %s", cut, k)
		}
		if last, ok := x.LastPhyOffset(); ok {
			require.Less(t, last, cut)
		}
		// The truncation is durable on its own.
		require.NoError(t, x.Close())
		x = openIndex(t, opts)
		for _, k := range keys {
			got, err := x.Query(k, 1<<20, 0, math.MaxInt64)
			require.NoError(t, err)
			require.Equal(t, want(msgs, k, cut), got, "cut %d key %s after reopen", cut, k)
		}
		putMsgs(t, x, msgs, cut)
		require.Equal(t, full, queryAll(t, x, keys), "cut %d", cut)
		require.NoError(t, x.Close())
	}
}

func TestRedispatchAcrossRoll(t *testing.T) {
	opts := memOpts(t, 3, 3) // two entries per file
	x := openIndex(t, opts)
	b0 := baseTime.UnixMilli()
	keys := []string{"T#a", "T#b", "T#c"} // one record, its keys split over two files
	for _, k := range keys {
		require.NoError(t, x.Put(k, 500, b0))
	}
	before := x.Files()
	require.Len(t, before, 2)
	for _, k := range keys {
		require.NoError(t, x.Put(k, 500, b0))
	}
	require.Equal(t, before, x.Files(), "nothing indexed twice")
}
