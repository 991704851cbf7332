package index

import (
	"math"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/ferrymq/ferry/internal/mmap"
	"github.com/stretchr/testify/require"
)

// fuzzKeys are the keys FuzzIndexFile queries; "Aa" and "BB" collide.
var fuzzKeys = []string{"Aa", "BB", "T#k0", "T#k1", "T#k2", "", "polygenelubricants"}

// FuzzIndexFile feeds arbitrary bytes as index files (4 slots, 8 entries: 216 bytes each;
// the input fills the first file and any rest a second one) and checks that loading,
// querying, putting, truncating and flushing never panic, that queries respect maxNum and
// never repeat an offset, and that a flushed index reads the same after a reopen.
func FuzzIndexFile(f *testing.F) {
	const slots, entries = 4, 8
	for _, seed := range fuzzSeeds(f, slots, entries) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		mem := mmap.NewMemFS()
		opts := testOpts(mem, "/idx", slots, entries)
		require.NoError(t, mem.MkdirAll(opts.Dir))
		size := opts.FileSize()
		for i := 0; i < 2 && (i == 0 || len(data) > 0); i++ {
			m, err := mem.OpenMapped(filepath.Join(opts.Dir, fileName(baseTime.Add(time.Duration(i)*time.Second))), size, true)
			require.NoError(t, err)
			data = data[copy(m.Bytes(), data):]
			require.NoError(t, m.Close())
		}
		require.NoError(t, mem.SyncDir(opts.Dir))

		x, err := Open(opts)
		require.NoError(t, err)
		query := func() [][]int64 {
			var out [][]int64
			for _, k := range fuzzKeys {
				for _, n := range []int{1, 3, 100} {
					got, err := x.Query(k, n, math.MinInt64, math.MaxInt64)
					require.NoError(t, err)
					require.LessOrEqual(t, len(got), n)
					require.Len(t, slices.Compact(slices.Sorted(slices.Values(got))), len(got), "no repeats")
					out = append(out, got)
				}
				got, err := x.QueryFunc(k, 2, 0, math.MaxInt64, func(phy int64) bool { return phy%2 == 0 })
				require.NoError(t, err)
				for _, phy := range got {
					require.Zero(t, phy%2)
				}
				out = append(out, got)
			}
			return out
		}
		query()
		files := x.Files()
		last, _ := x.LastPhyOffset()
		if last >= 0 && last < math.MaxInt64-100 {
			for i, k := range fuzzKeys {
				require.NoError(t, x.Put(k, last+int64(i/2), baseTime.UnixMilli()+int64(i)*700))
			}
		}
		query()
		if len(files) > 0 {
			require.NoError(t, x.TruncateAfter(files[len(files)-1].BeginPhyOffset+1))
			query()
		}
		require.NoError(t, x.Flush())
		before := query()
		infos := x.Files()
		require.NoError(t, x.Close())

		x, err = Open(opts)
		require.NoError(t, err)
		defer x.Close()
		require.Equal(t, infos, x.Files())
		require.Equal(t, before, query())
	})
}

// fuzzSeeds builds seed inputs: real index files (one and two files, with chains and
// collisions) and damaged copies.
func fuzzSeeds(t testing.TB, slots, entries int) [][]byte {
	build := func(n int, flush bool) []byte {
		mem := mmap.NewMemFS()
		opts := testOpts(mem, "/idx", slots, entries)
		require.NoError(t, mem.MkdirAll(opts.Dir))
		x, err := Open(opts)
		require.NoError(t, err)
		for i := range n {
			require.NoError(t, x.Put(fuzzKeys[i%len(fuzzKeys)], int64(i)*50, baseTime.UnixMilli()+int64(i)*900))
		}
		if flush {
			require.NoError(t, x.Flush())
		}
		var out []byte
		for _, info := range x.Files() {
			b, err := mem.ReadFile(filepath.Join(opts.Dir, info.Name))
			require.NoError(t, err)
			out = append(out, b...)
		}
		require.NoError(t, x.Close())
		return out
	}
	one := build(5, true)
	two := build(10, true)
	unflushed := build(6, false)
	torn := slices.Clone(one)
	copy(torn[30:], []byte{0xff, 0xff, 0xff, 0xff, 0x7f, 0xff, 0xff, 0xff})
	loop := slices.Clone(one)
	loop[HeaderSize+slots*SlotSize+3*EntrySize+19] = 3 // entry 3 links to itself
	return [][]byte{{}, one, two, unflushed, torn, loop, one[:100]}
}
