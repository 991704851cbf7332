package commitlog

import (
	"encoding/binary"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/internal/mmap"
	"github.com/ferrymq/ferry/message"
)

// hwPath is the high-water file the tests of this file give a log in /log.
const hwPath = "/log.hwm"

// hwOptions are testOptions with a high-water file.
func hwOptions(fs mmap.FS) Options {
	o := testOptions(fs, "/log")
	o.HighWaterPath = hwPath
	return o
}

// durableMark decodes the high-water file of fs (-1 when it is missing or invalid).
func durableMark(t *testing.T, fs *mmap.MemFS) int64 {
	t.Helper()
	b, err := fs.ReadFile(hwPath)
	if err != nil {
		return -1
	}
	mark, err := decodeHighWater(b)
	if err != nil {
		return -1
	}
	return mark
}

// requireNothingBeyondMark checks the invariant the mark stands for on fs (a crash image,
// or a closed log's files): every byte of every segment at or after the mark is zero.
func requireNothingBeyondMark(t *testing.T, fs *mmap.MemFS, segSize int64) int64 {
	t.Helper()
	mark := durableMark(t, fs)
	require.GreaterOrEqual(t, mark, int64(0), "the high-water file is valid")
	names, err := fs.ReadDir("/log")
	require.NoError(t, err)
	for _, name := range names {
		start, ok := parseSegmentName(name)
		require.True(t, ok, name)
		if start+segSize <= mark {
			continue
		}
		b, err := fs.ReadFile(filepath.Join("/log", name))
		require.NoError(t, err)
		from := max(mark-start, 0)
		for i := from; i < int64(len(b)); i++ {
			require.Zero(t, b[i], "segment %s: byte %d is beyond the durable mark %d", name, start+i, mark)
		}
	}
	return mark
}

// Power losses at random moments, with random shares of the unsynced pages written
// back, never leave a durable byte at or after the durable mark — so recovery, zeroing
// only up to it, still leaves nothing but zeros after the end — in every flush mode and
// write path; every acknowledged record survives as in TestCrashSyncFlush.
func TestHighWaterCrash(t *testing.T) {
	for _, mode := range []string{"async", "sync staged", "sync mapped"} {
		t.Run(mode, func(t *testing.T) {
			o := hwOptions(nil)
			o.SegmentSize = 16 << 10 // a 4 KiB lead: the mark is raised every few appends
			o.FlushMode = FlushSync
			o.MappedSyncAppends = mode == "sync mapped"
			if mode == "async" {
				o.FlushMode = FlushAsync
				o.FlushInterval = time.Millisecond
				o.FlushThoroughInterval = 3 * time.Millisecond
			}
			raised := 0
			for i := range 60 {
				rng := rand.New(rand.NewPCG(uint64(i), 23))
				crashed, acks, flushed, orig := crashRun(t, o, rng, rng.Int64N(300), rng.Float64())
				mark := requireNothingBeyondMark(t, crashed, o.SegmentSize)
				if mark > highWaterLead(o.SegmentSize) {
					raised++
				}
				if o.FlushMode == FlushAsync {
					acks = nil
				}
				verifyCrash(t, o, crashed, orig, acks, flushed)
				l, end := recoverFS(t, o, crashed) // again: the tail is zero to the segment's end
				require.Equal(t, end+highWaterLead(o.SegmentSize), l.HighWater(), "recovery sets the mark after the end")
				require.NoError(t, l.Close())
				require.Equal(t, end+highWaterLead(o.SegmentSize), durableMark(t, crashed))
			}
			require.Greater(t, raised, 30, "most runs wrote beyond the first mark")
		})
	}
}

// A replica's log raises its mark before it writes replicated bytes, in any chunking.
func TestHighWaterReplica(t *testing.T) {
	master := openLog(t, testOptions(mmap.NewMemFS(), "/log"))
	fillMaster(t, master, 120)
	end := master.MaxOffset()
	fs := mmap.NewMemFS()
	replica := openLog(t, hwOptions(fs))
	rng := rand.New(rand.NewPCG(3, 4))
	for off := int64(0); off < end; {
		to := min(end, off+rng.Int64N(40<<10))
		copyRaw(t, master, replica, off, to, rng)
		requireNothingBeyondMark(t, fs.Crash(rng, rng.Float64()), testSegSize)
		off = to
	}
	require.Equal(t, end, replica.MaxOffset())
	require.Greater(t, replica.HighWater(), end)
}

// plant writes non-zero bytes at off of the segment starting at start, durably.
func plant(t *testing.T, fs mmap.FS, start, off int64) {
	t.Helper()
	mutateFile(t, fs, segPath("/log", start), testSegSize, func(b []byte) {
		copy(b[off-start:], "planted")
	})
}

// planted reports whether the bytes plant wrote at off are still there.
func planted(t *testing.T, fs *mmap.MemFS, start, off int64) bool {
	t.Helper()
	b, err := fs.ReadFile(segPath("/log", start))
	require.NoError(t, err)
	return string(b[off-start:off-start+7]) == "planted"
}

// Recovery zeroes a torn tail up to the durable mark and no further: bytes planted
// beyond the mark (which no writer of the log could have put there) are left alone,
// which is what makes a crash restart independent of the segment size. When the mark is
// unknown — no file, a damaged or wrongly sized one, or one whose mark lies below the
// recovered end (another log's) — the whole rest of the segment is zeroed as before.
func TestHighWaterBoundsRecovery(t *testing.T) {
	o := hwOptions(nil)
	base, _, end := buildLog(t, o, testSegSize/4, 5)
	lead := highWaterLead(testSegSize)
	mark := durableMark(t, base)
	require.GreaterOrEqual(t, mark, end, "the mark covers what was written")
	require.Less(t, mark, int64(testSegSize-64), "the test needs room after the mark")

	torn := func(fs *mmap.MemFS) int64 { // garbage in the last record: a torn tail there
		var last int64
		b, err := fs.ReadFile(segPath("/log", 0))
		require.NoError(t, err)
		for p := int64(0); p < end; {
			last = p
			p += int64(binary.BigEndian.Uint32(b[p:]))
		}
		mutateFile(t, fs, segPath("/log", 0), testSegSize, func(b []byte) { b[last+message.PosMagic] ^= 0xff })
		return last
	}
	for _, tc := range []struct {
		name  string
		prep  func(fs *mmap.MemFS)
		zeros bool // the planted bytes are zeroed
	}{
		{"known mark", func(*mmap.MemFS) {}, false},
		{"no file", func(fs *mmap.MemFS) { require.NoError(t, fs.Remove(hwPath)) }, true},
		{"damaged file", func(fs *mmap.MemFS) {
			mutateFile(t, fs, hwPath, highWaterSize, func(b []byte) { b[hwMarkAt] ^= 1 })
		}, true},
		{"short file", func(fs *mmap.MemFS) {
			require.NoError(t, fs.WriteFileAtomic(hwPath, []byte(highWaterMagic)))
		}, true},
		{"another log's mark", func(fs *mmap.MemFS) {
			mutateFile(t, fs, hwPath, highWaterSize, func(b []byte) { encodeHighWater(b, 100) })
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := cloneFS(base)
			o := o
			o.FS = fs
			cut := torn(fs)
			plant(t, fs, 0, mark-8) // below the mark: stale bytes recovery must zero
			plant(t, fs, 0, mark)   // at the mark: never written by the log
			plant(t, fs, 0, testSegSize-16)
			tc.prep(fs)
			l, err := Open(o)
			require.NoError(t, err)
			got, err := l.Recover(0, true)
			require.NoError(t, err)
			require.Equal(t, cut, got)
			require.Equal(t, cut+lead, l.HighWater())
			require.NoError(t, l.Close())
			require.False(t, planted(t, fs, 0, mark-8), "stale bytes below the mark are zeroed")
			require.Equal(t, !tc.zeros, planted(t, fs, 0, mark))
			require.Equal(t, !tc.zeros, planted(t, fs, 0, testSegSize-16))
			require.Equal(t, cut+lead, durableMark(t, fs.Crash(nil, 0)), "the new mark is durable")
		})
	}
}

// Truncate zeroes from the cut to the mark (which covers everything the log wrote, in
// later segments too), deletes the later segments, and lowers the mark durably to the
// cut plus the lead; the next recovery and appends go on from there.
func TestTruncateZeroesUpToTheHighWaterMark(t *testing.T) {
	o := hwOptions(nil)
	fs, recs, end := buildLog(t, o, 2*testSegSize+testSegSize/4, 9)
	o.FS = fs
	lead := highWaterLead(testSegSize)
	last := end / testSegSize * testSegSize
	require.GreaterOrEqual(t, durableMark(t, fs), end)
	require.Less(t, end+lead, last+testSegSize-64)
	mark := end + lead // after openLog's recovery
	for _, cut := range []int64{recs[len(recs)-3].PhysicalOffset, recs[2].PhysicalOffset} {
		f := cloneFS(fs)
		o := o
		o.FS = f
		plant(t, f, last, mark)
		l := openLog(t, o)
		require.NoError(t, l.Truncate(cut))
		require.Equal(t, cut+lead, l.HighWater())
		require.NoError(t, l.Close())
		seg := cut / testSegSize * testSegSize
		b, err := f.ReadFile(segPath("/log", seg))
		require.NoError(t, err)
		require.True(t, isZero(b[cut-seg:min(mark-seg, testSegSize)]), "zero from the cut to the mark")
		if seg == last {
			require.True(t, planted(t, f, last, mark), "nothing beyond the mark is touched")
		} else {
			require.True(t, isZero(b[cut-seg:]), "the mark lies in a later segment: the whole rest is zeroed")
			ok, err := f.Exists(segPath("/log", last))
			require.NoError(t, err)
			require.False(t, ok, "later segments are deleted")
		}
		crashed := f.Crash(nil, 0)
		require.Equal(t, cut+lead, durableMark(t, crashed))
		o.FS = crashed
		l2, err := Open(o)
		require.NoError(t, err)
		got, err := l2.Recover(0, true)
		require.NoError(t, err)
		require.Equal(t, cut, got)
		require.Len(t, readAll(t, l2), slices.IndexFunc(recs, func(r message.Record) bool { return r.PhysicalOffset == cut }))
		res, err := l2.Append([]message.Record{newRecord("Topic", 0, 10, 1)}, false)
		require.NoError(t, err)
		require.Equal(t, cut, res.PhysicalOffset)
		require.NoError(t, l2.Close())
	}
}

// When the mark cannot be made durable, an append that needs it raised fails and writes
// nothing (no offset, no queue offset taken); once syncing works again it goes through.
func TestHighWaterSyncFailure(t *testing.T) {
	efs := mmap.NewErrorFS(mmap.NewMemFS())
	l := openLog(t, hwOptions(efs))
	lead := highWaterLead(testSegSize)
	require.Equal(t, lead, l.HighWater())
	stop := efs.Inject(mmap.Rule{Ops: mmap.OpSync, Path: mmap.PathIs(hwPath), Err: syscall.EIO})
	var err error
	n := 0
	for ; err == nil; n++ {
		_, err = l.Append([]message.Record{newRecord("T", 0, 500, n)}, false)
		require.Less(t, n, 1000)
	}
	require.ErrorIs(t, err, syscall.EIO)
	end := l.MaxOffset()
	require.LessOrEqual(t, end, lead, "nothing written beyond the mark")
	require.Equal(t, int64(n-1), l.QueueOffset("T", 0), "the failed append took no queue offset")
	require.Equal(t, lead, l.HighWater())
	stop()
	res, err := l.Append([]message.Record{newRecord("T", 0, 500, n)}, false)
	require.NoError(t, err)
	require.Equal(t, end, res.PhysicalOffset)
	require.Equal(t, int64(n-1), res.QueueOffset)
	require.Greater(t, l.HighWater(), res.NextOffset())
}

// The high-water file must not sit among the segments.
func TestHighWaterOptionsValidate(t *testing.T) {
	o := testOptions(mmap.NewMemFS(), "/data/commitlog")
	o.HighWaterPath = "/data/commitlog/hwm"
	require.ErrorContains(t, o.Validate(), "must not be inside Dir")
	o.HighWaterPath = "/data/commitlog.hwm"
	require.NoError(t, o.Validate())
}

// FuzzDecodeHighWater: decoding never panics, and what decodes re-encodes to the same
// record with a mark that is not negative.
func FuzzDecodeHighWater(f *testing.F) {
	good := make([]byte, highWaterSize)
	encodeHighWater(good, 123<<20)
	f.Add(good)
	f.Add(good[:hwRecordSize])
	f.Add(good[:hwRecordSize-1])
	f.Add(make([]byte, highWaterSize))
	neg := make([]byte, hwRecordSize)
	encodeHighWater(neg, -5)
	f.Add(neg)
	f.Fuzz(func(t *testing.T, b []byte) {
		mark, err := decodeHighWater(b)
		if err != nil {
			require.ErrorIs(t, err, errHighWaterCorrupt)
			return
		}
		require.GreaterOrEqual(t, mark, int64(0))
		again := make([]byte, hwRecordSize)
		encodeHighWater(again, mark)
		require.Equal(t, b[:hwRecordSize], again)
	})
}
