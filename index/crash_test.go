package index

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ferrymq/ferry/internal/mmap"
	"github.com/stretchr/testify/require"
)

// checkComplete verifies every key's query against the model.
func checkComplete(t *testing.T, x *Index, msgs []msg, what string) {
	t.Helper()
	for _, k := range allKeys(msgs) {
		got, err := x.Query(k, 1<<20, 0, math.MaxInt64)
		require.NoError(t, err)
		require.Equal(t, want(msgs, k, math.MaxInt64), got, "%s: key %s", what, k)
	}
}

// TestCrashCompleteness Puts records with flushes (and checkpoints) at random points, pulls
// the plug at a random key, keeping a random share of the unsynced pages, then recovers as
// the store does: TruncateAfter(checkpoint) and re-dispatch. Every query must be complete.
// A second crash right after the truncation must recover the same way.
func TestCrashCompleteness(t *testing.T) {
	for seed := range 40 {
		rng := rand.New(rand.NewPCG(uint64(seed), 7))
		mem := mmap.NewMemFS()
		require.NoError(t, mem.MkdirAll("/idx"))
		opts := testOpts(mem, "/idx", 7, 12+rng.IntN(20))
		msgs := genMsgs(150, 11, seed)
		x, err := Open(opts)
		require.NoError(t, err)

		type put struct {
			key      string
			phy, ts  int64
			dispatch int64 // dispatch position once this key is in
		}
		var puts []put
		for _, m := range msgs {
			for i, k := range m.keys {
				p := put{k, m.phy, m.ts, m.phy}
				if i == len(m.keys)-1 {
					p.dispatch = m.phy + 100
				}
				puts = append(puts, p)
			}
		}
		checkpoint := int64(0)
		for _, p := range puts[:rng.IntN(len(puts)+1)] {
			require.NoError(t, x.Put(p.key, p.phy, p.ts))
			if rng.IntN(10) == 0 {
				require.NoError(t, x.Flush())
				checkpoint = p.dispatch
			}
		}
		crashed := mem.Crash(rng, rng.Float64())
		require.NoError(t, x.Close())

		for round := range 2 {
			opts.FS = crashed
			x, err = Open(opts)
			require.NoError(t, err, "seed %d round %d", seed, round)
			require.NoError(t, x.TruncateAfter(checkpoint), "seed %d", seed)
			if round == 0 {
				// Crash again before anything is re-dispatched and flushed.
				putMsgs(t, x, msgs[:len(msgs)/2], checkpoint)
				crashed = crashed.Crash(rng, rng.Float64())
				require.NoError(t, x.Close())
				continue
			}
			putMsgs(t, x, msgs, checkpoint)
			checkComplete(t, x, msgs, "seed "+string(rune('a'+seed%26)))
			require.NoError(t, x.Close())
		}
	}
}

// TestCrashDuringFlush crashes while a flusher runs concurrently with Puts, so the
// durable state may stop between a flush's entries, slots and header.
func TestCrashDuringFlush(t *testing.T) {
	for seed := range 8 {
		mem := mmap.NewMemFS()
		require.NoError(t, mem.MkdirAll("/idx"))
		opts := testOpts(mem, "/idx", 5, 40)
		msgs := genMsgs(400, 17, seed)
		x, err := Open(opts)
		require.NoError(t, err)

		var dispatched, checkpoint atomic.Int64
		var stop atomic.Bool
		var wg sync.WaitGroup
		wg.Go(func() {
			for !stop.Load() {
				d := dispatched.Load()
				if err := x.Flush(); err != nil {
					t.Error(err)
					return
				}
				checkpoint.Store(d)
			}
		})
		var crashed *mmap.MemFS
		var cp int64
		for i, m := range msgs {
			for _, k := range m.keys {
				require.NoError(t, x.Put(k, m.phy, m.ts))
			}
			dispatched.Store(m.phy + 100)
			if i == 150+seed*25 {
				cp = checkpoint.Load() // read before the crash: never newer than what is durable
				crashed = mem.Crash(nil, 0)
			}
		}
		stop.Store(true)
		wg.Wait()
		require.NoError(t, x.Close())

		opts.FS = crashed
		x, err = Open(opts)
		require.NoError(t, err)
		require.NoError(t, x.TruncateAfter(cp))
		putMsgs(t, x, msgs, cp)
		checkComplete(t, x, msgs, "after crash during flush")
		require.NoError(t, x.Close())
	}
}

// TestRepairSlotsAheadOfHeader builds by hand the state a crash between a flush's slot and
// header writes leaves: a slot head pointing at an entry the header does not count.
func TestRepairSlotsAheadOfHeader(t *testing.T) {
	opts := memOpts(t, 1, 10)
	mem := opts.FS.(*mmap.MemFS)
	x, err := Open(opts)
	require.NoError(t, err)
	b0 := baseTime.UnixMilli()
	require.NoError(t, x.Put("a", 100, b0))
	require.NoError(t, x.Put("b", 200, b0))
	require.NoError(t, x.Flush())
	require.NoError(t, x.Put("c", 300, b0))
	require.NoError(t, x.Put("a", 400, b0))

	x.flushMu.Lock()
	x.mu.Lock()
	f := x.mu.files[0]
	old := f.disk
	require.NoError(t, f.persist(f.synced, f.h.count, f.takeDirty(), old)) // header left behind
	x.mu.Unlock()
	x.flushMu.Unlock()
	crashed := mem.Crash(nil, 0)
	require.NoError(t, x.Close())

	opts.FS = crashed
	x = openIndex(t, opts)
	got, err := x.Query("a", 10, 0, math.MaxInt64)
	require.NoError(t, err)
	require.Equal(t, []int64{100}, got)
	require.Equal(t, int32(3), x.Files()[0].IndexCount)
	// The repaired slot head is on disk already.
	raw, err := crashed.ReadFile(filepath.Join(opts.Dir, x.Files()[0].Name))
	require.NoError(t, err)
	require.Equal(t, uint32(2), binary.BigEndian.Uint32(raw[HeaderSize:]))
	require.NoError(t, x.TruncateAfter(300))
	require.NoError(t, x.Put("c", 300, b0))
	require.NoError(t, x.Put("a", 400, b0))
	got, err = x.Query("a", 10, 0, math.MaxInt64)
	require.NoError(t, err)
	require.Equal(t, []int64{400, 100}, got)
}

// TestTornHeader damages the header of a flushed file in several ways; the header is
// rebuilt from the entries and queries stay complete.
func TestTornHeader(t *testing.T) {
	msgs := genMsgs(30, 5, 3)
	for name, damage := range map[string]func(b []byte){
		"zero":         func(b []byte) { clear(b[:HeaderSize]) },
		"huge count":   func(b []byte) { binary.BigEndian.PutUint32(b[36:], math.MaxInt32) },
		"count beyond": func(b []byte) { binary.BigEndian.PutUint32(b[36:], 90) },
		"old end":      func(b []byte) { binary.BigEndian.PutUint64(b[24:], 700) },
		"garbage": func(b []byte) {
			for i := range HeaderSize {
				b[i] = byte(i*37 + 11)
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			opts := memOpts(t, 3, 200)
			x, err := Open(opts)
			require.NoError(t, err)
			putMsgs(t, x, msgs, 0)
			require.NoError(t, x.Close())
			path := filepath.Join(opts.Dir, fileName(baseTime))
			m, err := opts.FS.OpenMapped(path, opts.FileSize(), false)
			require.NoError(t, err)
			damage(m.Bytes())
			require.NoError(t, m.Sync(0, HeaderSize))
			require.NoError(t, m.Close())

			x = openIndex(t, opts)
			checkComplete(t, x, msgs, name)
			info := x.Files()[0]
			require.Equal(t, int64(0), info.BeginPhyOffset)
			require.Equal(t, int64(2900), info.EndPhyOffset)
			putMsgs(t, x, genMsgs(40, 5, 3)[30:], 0)
			checkComplete(t, x, genMsgs(40, 5, 3), name)
		})
	}
}
