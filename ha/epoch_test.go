package ha

import (
	"bytes"
	"encoding/binary"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/internal/mmap"
)

type ep = EpochEntry

func TestConsistentPoint(t *testing.T) {
	h12 := []ep{{1, 0}, {2, 500}}
	h123 := []ep{{1, 0}, {2, 500}, {3, 800}}
	for _, tc := range []struct {
		name      string
		local     []ep
		localEnd  int64
		master    []ep
		masterEnd int64
		want      int64
		why       string
	}{
		{name: "identical histories", local: h123, localEnd: 1200, master: h123, masterEnd: 1200, want: 1200},
		{name: "slave behind", local: h123, localEnd: 900, master: h123, masterEnd: 1200, want: 900,
			why: "nothing to cut: the slave replicates on from its end"},
		{name: "slave behind by epochs", local: h12, localEnd: 700, master: h123, masterEnd: 1200, want: 700},
		{name: "slave ahead within the same epoch", local: h12, localEnd: 1000, master: h12, masterEnd: 800, want: 800,
			why: "an old master that wrote past what the new master had, before any new epoch"},
		{name: "divergent epochs", local: h12, localEnd: 1000, master: h123, masterEnd: 1200, want: 800,
			why: "the old master of epoch 2 wrote on to 1000; the new master started epoch 3 at 800"},
		{name: "divergent epochs on both sides", local: []ep{{1, 0}, {2, 500}, {4, 900}}, localEnd: 1000,
			master: []ep{{1, 0}, {2, 500}, {3, 700}}, masterEnd: 1100, want: 700,
			why: "an unclean history: epoch 4 is unknown to the master, epoch 2 ends at 700 there"},
		{name: "same epoch, other start", local: []ep{{1, 0}, {2, 600}}, localEnd: 1000, master: h123, masterEnd: 1200,
			want: 500, why: "epoch 2 is not common; epoch 1 is, and ends at 500 on the master"},
		{name: "master's empty epoch", local: h12, localEnd: 700, master: []ep{{1, 0}, {2, 500}, {3, 500}}, masterEnd: 900,
			want: 500, why: "epoch 3 started where epoch 2 did: epoch 2 wrote nothing on the master"},
		{name: "local log shorter than its history", local: h123, localEnd: 600, master: []ep{{1, 0}, {2, 500}, {4, 700}},
			masterEnd: 900, want: 600, why: "epoch 2 ends at the local end, before epoch 3's recorded start"},
		{name: "newest local epoch is the master's", local: []ep{{1, 0}, {3, 800}}, localEnd: 1000, master: h123,
			masterEnd: 1200, want: 1000},
		{name: "nothing common", local: []ep{{1, 0}}, localEnd: 300, master: []ep{{2, 0}}, masterEnd: 900, want: 0},
		{name: "first epoch differs in start", local: []ep{{1, 100}}, localEnd: 300, master: []ep{{1, 0}}, masterEnd: 900, want: 0},
		{name: "empty histories", localEnd: 300, masterEnd: 900, want: 0},
		{name: "empty local history", localEnd: 300, master: h12, masterEnd: 900, want: 0},
		{name: "empty master history", local: h12, localEnd: 900, masterEnd: 900, want: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ConsistentPoint(tc.local, tc.localEnd, tc.master, tc.masterEnd)
			require.Equal(t, tc.want, got, tc.why)
			require.LessOrEqual(t, got, min(tc.localEnd, tc.masterEnd), "never past either log")
			require.Equal(t, got, ConsistentPoint(tc.local, got, tc.master, tc.masterEnd),
				"the same point once the local log is cut there (epoch file not cut yet)")
			if len(tc.local) > 0 && len(tc.master) > 0 {
				require.Equal(t, tc.want, ConsistentPoint(tc.master, tc.masterEnd, tc.local, tc.localEnd), "symmetric")
			}
		})
	}
}

func TestEpochFileLifecycle(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	f, err := OpenEpochFile(mmap.OSFS{}, dir)
	require.NoError(t, err)
	require.Empty(t, f.Entries())
	_, ok := f.Last()
	require.False(t, ok)

	require.NoError(t, f.Append(ep{1, 0}))
	require.NoError(t, f.Append(ep{2, 4096}))
	require.NoError(t, f.Append(ep{2, 4096}), "the last entry again changes nothing")
	require.NoError(t, f.Append(ep{3, 4096}), "an epoch that wrote nothing")
	require.ErrorIs(t, f.Append(ep{3, 9000}), ErrEpochOrder, "epoch must grow")
	require.ErrorIs(t, f.Append(ep{2, 9000}), ErrEpochOrder)
	require.ErrorIs(t, f.Append(ep{5, 100}), ErrEpochOrder, "offset must not shrink")
	require.ErrorIs(t, f.Append(ep{0, 9000}), ErrEpochOrder)
	want := []ep{{1, 0}, {2, 4096}, {3, 4096}}
	require.Equal(t, want, f.Entries())
	last, ok := f.Last()
	require.True(t, ok)
	require.Equal(t, ep{3, 4096}, last)

	again, err := OpenEpochFile(mmap.OSFS{}, dir)
	require.NoError(t, err)
	require.Equal(t, want, again.Entries(), "persisted")

	require.NoError(t, f.TruncateFrom(4096))
	require.Equal(t, []ep{{1, 0}}, f.Entries(), "entries starting at or after the offset are dropped")
	require.NoError(t, f.TruncateFrom(1<<40), "nothing to drop")
	require.ErrorIs(t, f.Replace([]ep{{2, 10}, {1, 20}}), ErrEpochOrder)
	require.Equal(t, []ep{{1, 0}}, f.Entries(), "a refused Replace changes nothing")
	require.NoError(t, f.Replace([]ep{{1, 0}, {4, 100}, {6, 900}}))
	again, err = OpenEpochFile(mmap.OSFS{}, dir)
	require.NoError(t, err)
	require.Equal(t, []ep{{1, 0}, {4, 100}, {6, 900}}, again.Entries())
	entries := f.Entries()
	entries[0].Epoch = 99
	require.Equal(t, ep{1, 0}, f.Entries()[0], "Entries is a copy")
	require.NoError(t, f.TruncateFrom(0))
	require.Empty(t, f.Entries())
}

// A damaged file (a flipped byte, a file cut short, trailing bytes, another file's
// contents, entries out of order under a valid CRC) is refused with ErrEpochFileCorrupt.
func TestEpochFileCorruptIsAnError(t *testing.T) {
	good := encodeEpochs([]ep{{1, 0}, {2, 4096}})
	reordered := encodeEpochs([]ep{{2, 0}, {1, 4096}})
	flipped := bytes.Clone(good)
	flipped[14] ^= 1
	for name, b := range map[string][]byte{
		"flipped byte": flipped,
		"cut short":    good[:len(good)-3],
		"trailing":     append(bytes.Clone(good), 0),
		"empty":        {},
		"other file":   []byte("FERRYQT1 not an epoch file at all"),
		"out of order": reordered,
	} {
		t.Run(name, func(t *testing.T) {
			fsys := mmap.NewMemFS()
			require.NoError(t, fsys.MkdirAll("/s"))
			require.NoError(t, fsys.WriteFileAtomic("/s/"+EpochFileName, b))
			_, err := OpenEpochFile(fsys, "/s")
			require.ErrorIs(t, err, ErrEpochFileCorrupt)
		})
	}
}

// A write that fails leaves the history as it was, in memory and on disk.
func TestEpochFileFailedWriteChangesNothing(t *testing.T) {
	efs := mmap.NewErrorFS(mmap.NewMemFS())
	f, err := OpenEpochFile(efs, "/s")
	require.NoError(t, err)
	require.NoError(t, f.Append(ep{1, 0}))
	remove := efs.Inject(mmap.Rule{Ops: mmap.OpRename})
	require.ErrorIs(t, f.Append(ep{2, 10}), mmap.ErrInjected)
	require.ErrorIs(t, f.TruncateFrom(0), mmap.ErrInjected)
	require.ErrorIs(t, f.Replace([]ep{{7, 0}}), mmap.ErrInjected)
	remove()
	require.Equal(t, []ep{{1, 0}}, f.Entries())
	again, err := OpenEpochFile(efs, "/s")
	require.NoError(t, err)
	require.Equal(t, []ep{{1, 0}}, again.Entries())
}

// TestEpochFileFollowsAReplacedFile: when only the directory sync after the rename
// fails, the history is what the file now holds (and the error is returned).
func TestEpochFileFollowsAReplacedFile(t *testing.T) {
	efs := mmap.NewErrorFS(mmap.NewMemFS())
	f, err := OpenEpochFile(efs, "/s")
	require.NoError(t, err)
	require.NoError(t, f.Append(ep{1, 0}))
	efs.Inject(mmap.Rule{Ops: mmap.OpSyncDir, Times: 1})
	require.ErrorIs(t, f.Append(ep{2, 10}), mmap.ErrRenameNotDurable)
	require.Equal(t, []ep{{1, 0}, {2, 10}}, f.Entries())
	again, err := OpenEpochFile(efs, "/s")
	require.NoError(t, err)
	require.Equal(t, f.Entries(), again.Entries())
}

// A power loss before any step of an Append leaves the old history or the new one, never
// a damaged file; once Append returns, the new one survives.
func TestEpochFileCrashAtEveryStep(t *testing.T) {
	old := []ep{{1, 0}, {2, 100}}
	for k := 0; ; k++ {
		mem := mmap.NewMemFS()
		efs := mmap.NewErrorFS(mem)
		f, err := OpenEpochFile(efs, "/s")
		require.NoError(t, err)
		require.NoError(t, f.Replace(old))
		var crashed atomic.Pointer[mmap.MemFS]
		efs.Inject(mmap.Rule{Ops: mmap.OpReplaceSteps, After: k, Times: 1, Hook: func(mmap.Op, string) error {
			crashed.Store(mem.Crash(nil, 0))
			return nil
		}})
		require.NoError(t, f.Append(ep{3, 200}))
		after := crashed.Load()
		if after == nil {
			require.Greater(t, k, 4, "create, write, sync, close, rename and directory sync each crashed before")
			after = mem.Crash(nil, 0)
			g, err := OpenEpochFile(after, "/s")
			require.NoError(t, err)
			require.Equal(t, []ep{{1, 0}, {2, 100}, {3, 200}}, g.Entries(), "durable once Append returned")
			return
		}
		g, err := OpenEpochFile(after, "/s")
		require.NoError(t, err, "crash before step %d", k)
		got := g.Entries()
		if len(got) == len(old) {
			require.Equal(t, old, got)
		} else {
			require.Equal(t, []ep{{1, 0}, {2, 100}, {3, 200}}, got)
		}
	}
}

func TestEpochFileLayout(t *testing.T) {
	b := encodeEpochs([]ep{{7, 0x0102030405060708}})
	require.Equal(t, "FERRYEP1", string(b[:8]))
	require.Equal(t, uint32(1), binary.BigEndian.Uint32(b[8:]))
	require.Equal(t, uint32(7), binary.BigEndian.Uint32(b[12:]))
	require.Equal(t, uint64(0x0102030405060708), binary.BigEndian.Uint64(b[16:]))
	require.Len(t, b, 12+12+4)
	got, err := decodeEpochs(b)
	require.NoError(t, err)
	require.Equal(t, []ep{{7, 0x0102030405060708}}, got)
}

func FuzzDecodeEpochs(f *testing.F) {
	f.Add(encodeEpochs(nil))
	f.Add(encodeEpochs([]ep{{1, 0}}))
	f.Add(encodeEpochs([]ep{{1, 0}, {2, 4096}, {3, 4096}, {9, 1 << 40}}))
	f.Add(encodeEpochs([]ep{{2, 0}, {1, 5}}))
	f.Add([]byte("FERRYEP1\xff\xff\xff\xff"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		entries, err := decodeEpochs(b)
		if err != nil {
			require.ErrorIs(t, err, ErrEpochFileCorrupt)
			return
		}
		require.NoError(t, checkEpochs(entries))
		require.Equal(t, b, encodeEpochs(entries), "a decoded file re-encodes to itself")
		// Two logs with this history and the same end agree up to that end.
		want := int64(0)
		if len(entries) > 0 {
			want = 1 << 62
		}
		require.Equal(t, want, ConsistentPoint(entries, 1<<62, entries, 1<<62))
	})
}
