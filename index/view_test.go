package index

import (
	"encoding/binary"
	"math"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestViewMatchesIndex reads a flushed index file through a View and finds the header
// Files reports and, along each key's chain, the offsets Query returns.
func TestViewMatchesIndex(t *testing.T) {
	opts := memOpts(t, 8, 64)
	x := openIndex(t, opts)
	for i, k := range fuzzKeys {
		require.NoError(t, x.Put(k, int64(i)*100, baseTime.UnixMilli()+int64(i)*1500))
		require.NoError(t, x.Put(k, int64(i)*100+50, baseTime.UnixMilli()+int64(i)*1500+700))
	}
	require.NoError(t, x.Flush())
	info := x.Files()[0]
	b, err := opts.FS.ReadFile(filepath.Join(opts.Dir, info.Name))
	require.NoError(t, err)

	_, err = NewView(b, 8, 65)
	require.ErrorIs(t, err, ErrCorrupt, "wrong geometry")
	v, err := NewView(b, 8, 64)
	require.NoError(t, err)
	h := v.Header()
	require.Equal(t, FileInfo{Name: info.Name, BeginTimestamp: h.BeginTimestamp, EndTimestamp: h.EndTimestamp,
		BeginPhyOffset: h.BeginPhyOffset, EndPhyOffset: h.EndPhyOffset, HashSlotCount: h.HashSlotCount, IndexCount: h.IndexCount}, info)
	require.Equal(t, int32(2*len(fuzzKeys)+1), v.Count())
	require.True(t, v.HeaderAgrees())
	created, ok := ParseFileName(info.Name)
	require.True(t, ok)
	require.Equal(t, baseTime.UnixMilli(), created.UnixMilli())

	for _, k := range fuzzKeys {
		want, err := x.Query(k, 100, math.MinInt64, math.MaxInt64)
		require.NoError(t, err)
		var got []int64
		v.Chain(KeyHash(k), func(n int32, e Entry) bool {
			require.Equal(t, e, v.Entry(n))
			if e.KeyHash == KeyHash(k) && !slices.Contains(got, e.PhyOffset) {
				got = append(got, e.PhyOffset)
			}
			return true
		})
		require.Equal(t, want, got, k)
	}
	first := v.Entry(1)
	require.Equal(t, KeyHash(fuzzKeys[0]), first.KeyHash)
	require.Equal(t, baseTime.UnixMilli()/1000*1000, first.Time(h.BeginTimestamp)/1000*1000)

	// A header whose count disagrees with the entries: Open would rebuild it.
	bad := slices.Clone(b)
	binary.BigEndian.PutUint32(bad[36:], 3)
	v, err = NewView(bad, 8, 64)
	require.NoError(t, err)
	require.False(t, v.HeaderAgrees())
	require.Equal(t, int32(3), v.Count())
}

// FuzzIndexView reads arbitrary bytes as an index file (4 slots, 8 entries) through a View
// and as a header and an entry: never a panic, chains only visit entries below Count,
// newest first, and the decoders round-trip through the encoders.
func FuzzIndexView(f *testing.F) {
	const slots, entries = 4, 8
	for _, seed := range fuzzSeeds(f, slots, entries) {
		f.Add(seed)
	}
	size := HeaderSize + slots*SlotSize + entries*EntrySize
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := DecodeHeader(data)
		if len(data) < HeaderSize {
			require.ErrorIs(t, err, ErrCorrupt)
		} else {
			require.NoError(t, err)
			back := make([]byte, HeaderSize)
			(&header{h.BeginTimestamp, h.EndTimestamp, h.BeginPhyOffset, h.EndPhyOffset, h.HashSlotCount, h.IndexCount}).encode(back)
			require.Equal(t, data[:HeaderSize], back)
		}
		e, err := DecodeEntry(data)
		if len(data) < EntrySize {
			require.ErrorIs(t, err, ErrCorrupt)
		} else {
			require.NoError(t, err)
			back := make([]byte, EntrySize)
			ie := e.internal()
			ie.encode(back)
			require.Equal(t, data[:EntrySize], back)
		}

		b := make([]byte, size)
		copy(b, data)
		v, err := NewView(b, slots, entries)
		require.NoError(t, err)
		count := v.Count()
		require.GreaterOrEqual(t, count, int32(1))
		require.LessOrEqual(t, count, int32(entries))
		_ = v.HeaderAgrees()
		for _, hash := range []int32{0, 1, 2, 3, 5, math.MaxInt32, -1} {
			last := int32(math.MaxInt32)
			v.Chain(hash, func(n int32, e Entry) bool {
				require.Less(t, n, last)
				require.Less(t, n, count)
				require.Positive(t, n)
				last = n
				return true
			})
		}
		require.Zero(t, v.Slot(-1))
		require.Zero(t, v.Slot(slots))
		require.Equal(t, Entry{}, v.Entry(entries))
	})
}
