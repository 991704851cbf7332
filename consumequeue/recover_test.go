package consumequeue

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/ferrymq/ferry/internal/mmap"
	"github.com/stretchr/testify/require"
)

// patchFile rewrites bytes of a closed store's file.
func patchFile(t *testing.T, fsys mmap.FS, path string, size int64, patch func(b []byte)) {
	t.Helper()
	m, err := fsys.OpenMapped(path, size, false)
	require.NoError(t, err)
	patch(m.Bytes())
	require.NoError(t, m.Sync(0, size))
	require.NoError(t, m.Close())
}

func TestRecoverTornTail(t *testing.T) {
	for _, c := range bothFS(t) {
		t.Run(c.name, func(t *testing.T) {
			opts := testOpts(c.fs, c.root, 4)
			dir := filepath.Join(c.root, "T", "0")
			seg1 := filepath.Join(dir, segmentName(4))
			reopen := func() *Queue {
				s := openStore(t, opts)
				q, err := s.Queue("T", 0, false)
				require.NoError(t, err)
				t.Cleanup(func() { require.NoError(t, s.Close()) })
				return q
			}
			s := openStore(t, opts)
			q := mustQueue(t, s, "T", 0)
			appendN(t, q, 0, 7)
			require.NoError(t, s.Close())

			// A torn unit (size lost) in the middle of segment 1 and stale units after it.
			patchFile(t, c.fs, seg1, 80, func(b []byte) {
				encodeUnit(b[3*UnitSize:], unitFor(7))
				for i := 8; i < 12; i++ {
					b[UnitSize+i] = 0 // unit 5: size and part of tags
				}
			})
			q = reopen()
			require.Equal(t, int64(5), q.MaxOffset())
			raw, err := c.fs.ReadFile(seg1)
			require.NoError(t, err)
			require.Equal(t, make([]byte, 3*UnitSize), raw[UnitSize:], "tail cleared")
			appendN(t, q, 5, 9)
			require.NoError(t, q.Close())

			// A unit pointing backwards in the commit log ends the queue too.
			patchFile(t, c.fs, seg1, 80, func(b []byte) {
				encodeUnit(b[2*UnitSize:], Unit{Offset: 10, Size: 5})
			})
			q = reopen()
			require.Equal(t, int64(6), q.MaxOffset())
			last, ok := q.LastUnit()
			require.True(t, ok)
			require.Equal(t, unitFor(5), last)
			appendN(t, q, 6, 8)
			require.NoError(t, q.Close())

			// An empty newest segment after a full one is dropped.
			m, err := c.fs.OpenMapped(filepath.Join(dir, segmentName(8)), 80, true)
			require.NoError(t, err)
			require.NoError(t, m.Close())
			q = reopen()
			require.Equal(t, int64(8), q.MaxOffset())
			names, err := c.fs.ReadDir(dir)
			require.NoError(t, err)
			require.Len(t, names, 2)
			require.NoError(t, q.Close())

			// A wrongly sized newest file (crash while creating it) is removed.
			require.NoError(t, c.fs.WriteFileAtomic(filepath.Join(dir, segmentName(8)), []byte("partial")))
			q = reopen()
			require.Equal(t, int64(8), q.MaxOffset())
			names, err = c.fs.ReadDir(dir)
			require.NoError(t, err)
			require.Len(t, names, 2)
			require.NoError(t, q.Close())

			// An empty newest segment and a segment entirely zero in the middle.
			patchFile(t, c.fs, seg1, 80, func(b []byte) { clear(b) })
			q = reopen()
			require.Equal(t, int64(4), q.MaxOffset())
			names, err = c.fs.ReadDir(dir)
			require.NoError(t, err)
			require.Equal(t, []string{segmentName(0)}, names)
			appendN(t, q, 4, 6)
		})
	}
}

func TestRecoverDropsWhatFollowsAMissingSegment(t *testing.T) {
	c := bothFS(t)[1]
	opts := testOpts(c.fs, c.root, 4)
	s := openStore(t, opts)
	q := mustQueue(t, s, "T", 0)
	appendN(t, q, 0, 14) // segments at 0, 4, 8, 12
	require.False(t, q.Dropped())
	require.NoError(t, s.Close())
	dir := filepath.Join(c.root, "T", "0")
	require.NoError(t, c.fs.Remove(filepath.Join(dir, segmentName(4))))

	s = openStore(t, opts)
	q = mustQueue(t, s, "T", 0)
	require.True(t, q.Dropped(), "the queue lost units its files held")
	require.Equal(t, int64(4), q.MaxOffset(), "the queue ends where the gap starts")
	names, err := c.fs.ReadDir(dir)
	require.NoError(t, err)
	require.Equal(t, []string{segmentName(0)}, names)
	appendN(t, q, 4, 6)
	require.NoError(t, s.Close())

	s = openStore(t, opts)
	require.False(t, mustQueue(t, s, "T", 0).Dropped(), "a clean reopen drops nothing")
	require.NoError(t, s.Close())
}

func TestRecoverRejectsFilesOfAnotherUnitCount(t *testing.T) {
	c := bothFS(t)[1]
	opts := testOpts(c.fs, c.root, 4)
	dir := filepath.Join(c.root, "T", "0")
	require.NoError(t, c.fs.MkdirAll(dir))
	for _, name := range []string{segmentName(0), segmentName(8)} {
		m, err := c.fs.OpenMapped(filepath.Join(dir, name), 80, true)
		require.NoError(t, err)
		require.NoError(t, m.Close())
	}
	opts.UnitsPerFile = 3
	_, err := Open(opts)
	require.ErrorIs(t, err, ErrCorrupt, "names that are no multiple of the file size")
}

func TestDeleteBefore(t *testing.T) {
	for _, c := range bothFS(t) {
		t.Run(c.name, func(t *testing.T) {
			opts := testOpts(c.fs, c.root, 4)
			s := openStore(t, opts)
			q := mustQueue(t, s, "T", 0)
			appendN(t, q, 0, 14) // segments at 0, 4, 8, 12; unit i at phy 1000·i

			n, err := q.DeleteBefore(0)
			require.NoError(t, err)
			require.Zero(t, n)
			n, err = q.DeleteBefore(5500) // units 0..5 are below
			require.NoError(t, err)
			require.Equal(t, 1, n)
			require.Equal(t, int64(6), q.MinOffset())
			_, err = q.Read(5, make([]Unit, 1))
			require.ErrorIs(t, err, ErrOffsetOutOfRange)
			_, err = q.Get(5)
			require.ErrorIs(t, err, ErrOffsetOutOfRange)
			u, err := q.Get(6)
			require.NoError(t, err)
			require.Equal(t, unitFor(6), u)

			// Everything below: the last segment stays, the queue is logically empty.
			n, err = q.DeleteBefore(1 << 40)
			require.NoError(t, err)
			require.Equal(t, 2, n)
			require.Equal(t, int64(14), q.MinOffset())
			require.Equal(t, int64(14), q.MaxOffset())
			last, ok := q.LastUnit()
			require.True(t, ok)
			require.Equal(t, unitFor(13), last)
			names, err := c.fs.ReadDir(filepath.Join(c.root, "T", "0"))
			require.NoError(t, err)
			require.Equal(t, []string{segmentName(12)}, names)
			appendN(t, q, 14, 17)
			require.NoError(t, s.Close())

			// After a restart the min is the first segment's start until the store corrects
			// it against the commit log again.
			s2 := openStore(t, opts)
			q2, err := s2.Queue("T", 0, false)
			require.NoError(t, err)
			require.Equal(t, int64(12), q2.MinOffset())
			require.Equal(t, int64(17), q2.MaxOffset())
			_, err = s2.DeleteBefore(14_000)
			require.NoError(t, err)
			require.Equal(t, int64(14), q2.MinOffset())
		})
	}
}

func TestSetMinOffset(t *testing.T) {
	for _, c := range bothFS(t) {
		t.Run(c.name, func(t *testing.T) {
			opts := testOpts(c.fs, c.root, 4)
			s := openStore(t, opts)
			q := mustQueue(t, s, "T", 2)
			require.NoError(t, q.SetMinOffset(10))
			require.Equal(t, int64(10), q.MinOffset())
			require.Equal(t, int64(10), q.MaxOffset())
			_, ok := q.LastUnit()
			require.False(t, ok, "pre-blank units are not units")
			require.ErrorIs(t, q.SetMinOffset(9), ErrNotEmpty)
			require.ErrorIs(t, q.Append(9, unitFor(9)), nil, "below min: ignored")
			require.ErrorIs(t, q.Append(11, unitFor(11)), ErrGap)
			appendN(t, q, 10, 13)
			require.ErrorIs(t, q.SetMinOffset(20), ErrNotEmpty)

			path := filepath.Join(c.root, "T", "2", segmentName(8))
			raw, err := c.fs.ReadFile(path)
			require.NoError(t, err)
			blank := make([]byte, UnitSize)
			encodeUnit(blank, Unit{Size: math.MaxInt32})
			require.Equal(t, blank, raw[:UnitSize])
			require.Equal(t, blank, raw[UnitSize:2*UnitSize])
			require.NoError(t, s.Close())

			s2 := openStore(t, opts)
			q2, err := s2.Queue("T", 2, false)
			require.NoError(t, err)
			require.Equal(t, int64(10), q2.MinOffset())
			require.Equal(t, int64(13), q2.MaxOffset())
			require.Equal(t, []Unit{unitFor(10), unitFor(11), unitFor(12)}, readAll(t, q2))

			// A logically empty queue may jump ahead.
			_, err = q2.DeleteBefore(1 << 40)
			require.NoError(t, err)
			require.NoError(t, q2.SetMinOffset(21))
			appendN(t, q2, 21, 22)
			names, err := c.fs.ReadDir(filepath.Join(c.root, "T", "2"))
			require.NoError(t, err)
			require.Equal(t, []string{segmentName(20)}, names)
		})
	}
}

// TestCrashRecovery appends to many queues with flushes at random points, pulls the plug
// and checks that truncating to the checkpoint and re-dispatching restores every queue.
func TestCrashRecovery(t *testing.T) {
	for seed := range uint64(12) {
		rng := rand.New(rand.NewPCG(seed, 99))
		mem := mmap.NewMemFS()
		opts := testOpts(mem, "/cq", 5)
		s, err := Open(opts)
		require.NoError(t, err)

		const queues, total = 3, 120
		type msg struct {
			q  int32
			qo int64
			u  Unit
		}
		var msgs []msg
		next := map[int32]int64{}
		phy := int64(0)
		for range total {
			id := int32(rng.IntN(queues))
			size := int32(50 + rng.IntN(100))
			msgs = append(msgs, msg{id, next[id], Unit{Offset: phy, Size: size, TagsCode: rng.Int64()}})
			next[id]++
			phy += int64(size)
		}
		dispatch := func(s *Store, from int64) {
			for _, m := range msgs {
				if m.u.Offset < from {
					continue
				}
				q := mustQueue(t, s, "T", m.q)
				require.NoError(t, q.Append(m.qo, m.u))
			}
		}
		checkpoint := int64(0)
		crashAt := rng.IntN(total)
		for i, m := range msgs[:crashAt] {
			q := mustQueue(t, s, "T", m.q)
			require.NoError(t, q.Append(m.qo, m.u))
			if rng.IntN(10) == 0 {
				require.NoError(t, s.Flush())
				checkpoint = msgs[i].u.End()
			}
		}
		crashed := mem.Crash(rng, rng.Float64())
		require.NoError(t, s.Close())

		opts.FS = crashed
		s2, err := Open(opts)
		require.NoError(t, err, "seed %d", seed)
		require.NoError(t, s2.TruncateByPhysical(checkpoint))
		dispatch(s2, checkpoint)
		for id := range int32(queues) {
			var want []Unit
			for _, m := range msgs {
				if m.q == id {
					want = append(want, m.u)
				}
			}
			q, err := s2.Queue("T", id, true)
			require.NoError(t, err)
			require.Equal(t, want, readAll(t, q), "seed %d queue %d", seed, id)
		}
		require.NoError(t, s2.Close())
	}
}
