package consumequeue

import (
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/internal/mmap"
)

// lastData, which reads only the data ranges of a sparse file, finds the same last
// non-zero byte as a scan of every byte, on real files and in MemFS, whatever pages are
// allocated and written and wherever the scan starts.
func TestLastDataMatchesAFullScan(t *testing.T) {
	const size = 1 << 20
	for _, c := range []struct {
		name string
		fs   mmap.FS
		dir  string
	}{{"os", mmap.OSFS{}, t.TempDir()}, {"mem", mmap.NewMemFS(), "/q"}} {
		t.Run(c.name, func(t *testing.T) {
			require.NoError(t, c.fs.MkdirAll(c.dir))
			rng := rand.New(rand.NewPCG(8, 9))
			for trial := range 40 {
				m, err := c.fs.OpenMappedSparse(filepath.Join(c.dir, segmentName(int64(trial))), size, true)
				require.NoError(t, err)
				s := &segment{m: m, b: m.Bytes()}
				for range rng.IntN(6) {
					page := rng.Int64N(size / mmap.AllocPage)
					require.NoError(t, m.Allocate(page*mmap.AllocPage, mmap.AllocPage))
					if rng.IntN(3) > 0 { // some allocated pages stay zero
						off := page*mmap.AllocPage + rng.Int64N(mmap.AllocPage)
						s.b[off] = byte(1 + rng.IntN(255))
						require.NoError(t, m.Sync(off, 1))
					}
				}
				for _, from := range []int64{0, rng.Int64N(size), size - 1, size} {
					require.Equal(t, lastNonZero(s.b[from:]), s.lastData(from), "trial %d from %d", trial, from)
				}
				require.NoError(t, m.Close())
			}
		})
	}
}
