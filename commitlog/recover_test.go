package commitlog

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/internal/mmap"
	"github.com/ferrymq/ferry/message"
)

// buildLog appends records of varied sizes to a fresh MemFS log until it holds at least
// minBytes, closes it and returns the FS, the appended records and the end offset.
func buildLog(t *testing.T, o Options, minBytes int64, seed uint64) (*mmap.MemFS, []message.Record, int64) {
	t.Helper()
	fs := mmap.NewMemFS()
	o.FS = fs
	l := openLog(t, o)
	rng := rand.New(rand.NewPCG(seed, 7))
	var recs []message.Record
	for i := 0; l.MaxOffset() < minBytes; i++ {
		batch := []message.Record{newRecord("Topic", int32(i%2), rng.IntN(2000), i)}
		if i%7 == 3 {
			batch = append(batch, newRecord("Topic", batch[0].QueueID, rng.IntN(100), i+1))
		}
		_, err := l.Append(batch, false)
		require.NoError(t, err)
		recs = append(recs, batch...)
	}
	end := l.MaxOffset()
	require.NoError(t, l.Close())
	return fs, recs, end
}

// recoverFS opens a log on fs, recovers it from 0 and checks the result is a valid prefix:
// every record below the end validates (CRC included), the bytes after it in its segment
// are zero, and no segment follows it.
func recoverFS(t *testing.T, o Options, fs mmap.FS) (*Log, int64) {
	t.Helper()
	o.FS = fs
	l, err := Open(o)
	require.NoError(t, err)
	end, err := l.Recover(0, true)
	require.NoError(t, err)
	require.Equal(t, end, l.MaxOffset())
	var rec message.Record
	list := l.segs.Load()
	for pos := int64(0); pos < end; {
		seg := list.find(pos, o.SegmentSize)
		if n := message.QuarantineSize(seg.data[pos-seg.start:]); n > 0 {
			pos += int64(n)
			continue
		}
		n, blank, err := checkRecord(seg.data[pos-seg.start:], pos, true, &rec)
		require.NoError(t, err)
		if blank {
			pos = seg.end
		} else {
			pos += n
		}
		require.LessOrEqual(t, pos, end)
	}
	if len(list.segs) == 0 {
		require.Zero(t, end)
		return l, end
	}
	if last := list.segs[len(list.segs)-1]; end < last.end {
		require.Equal(t, last, list.find(end, o.SegmentSize), "no segment after the end")
		require.True(t, isZero(last.data[end-last.start:]), "tail zeroed")
	}
	return l, end
}

func isZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// TestTornTailEveryByte cuts the last record at every byte (zeroing everything after the
// cut) and checks Recover ends exactly before it, with every earlier record intact.
func TestTornTailEveryByte(t *testing.T) {
	for _, newSegment := range []bool{false, true} {
		name := "mid-segment"
		if newSegment {
			name = "first-in-segment"
		}
		t.Run(name, func(t *testing.T) {
			o := testOptions(nil, "/log")
			fs := mmap.NewMemFS()
			o.FS = fs
			l := openLog(t, o)
			var recs []message.Record
			for i := range 5 {
				r := []message.Record{newRecord("T", 0, 100*i, i)}
				_, err := l.Append(r, false)
				require.NoError(t, err)
				recs = append(recs, r...)
			}
			last := newRecord("T", 0, 180, 99)
			if newSegment { // leave less than the last record needs
				pad := newRecord("T", 0, 0, 0)
				pad.Body = make([]byte, testSegSize-l.MaxOffset()-int64(pad.Size())-int64(last.Size()))
				recs = append(recs, pad)
				_, err := l.Append(recs[len(recs)-1:], false)
				require.NoError(t, err)
			}
			lastRecs := []message.Record{last}
			res, err := l.Append(lastRecs, false)
			require.NoError(t, err)
			require.Equal(t, newSegment, res.PhysicalOffset == testSegSize)
			require.NoError(t, l.Close())
			base := cloneFS(fs)

			p, size := res.PhysicalOffset, int(res.Bytes)
			segStart := p / testSegSize * testSegSize
			for cut := range size {
				f := cloneFS(base)
				mutateFile(t, f, segPath("/log", segStart), testSegSize, func(b []byte) {
					clear(b[p-segStart+int64(cut):])
				})
				l2, end := recoverFS(t, o, f)
				require.Equal(t, p, end, "cut at %d", cut)
				got := readAll(t, l2)
				require.Len(t, got, len(recs))
				for i := range recs {
					requireSameRecord(t, recs[i], got[i])
				}
				require.NoError(t, l2.Close())
			}
			// Uncut, everything is there.
			l2, end := recoverFS(t, o, cloneFS(base))
			require.Equal(t, p+int64(size), end)
			require.NoError(t, l2.Close())
		})
	}
}

// TestRecoverRandomDamage applies 1,000 random bit flips, truncations and garbage writes
// to the last 64 KiB of a log: Recover must end at a valid prefix that keeps every record
// before the first damaged byte, and never panic.
func TestRecoverRandomDamage(t *testing.T) {
	o := testOptions(nil, "/log")
	base, recs, end0 := buildLog(t, o, 3*testSegSize+1000, 1)
	// Every offset a valid prefix can end at: record ends and segment ends (fillers).
	var ends []int64
	for _, r := range recs {
		ends = append(ends, r.PhysicalOffset+int64(r.Size()))
	}
	for s := int64(testSegSize); s < end0; s += testSegSize {
		ends = append(ends, s)
	}
	slices.Sort(ends)

	rng := rand.New(rand.NewPCG(42, 42))
	const region = 64 << 10
	iterations := 1000
	if testing.Short() {
		iterations = 200
	}
	for i := range iterations {
		f := cloneFS(base)
		first := end0 // first damaged byte
		damage := func(pos int64, fn func(b []byte, rel int64)) {
			first = min(first, pos)
			start := pos / testSegSize * testSegSize
			mutateFile(t, f, segPath("/log", start), testSegSize, func(b []byte) { fn(b, pos-start) })
		}
		switch kind := rng.IntN(3); kind {
		case 0: // bit flips
			for range 1 + rng.IntN(8) {
				damage(end0-1-rng.Int64N(region), func(b []byte, rel int64) { b[rel] ^= 1 << rng.IntN(8) })
			}
		case 1: // truncation: zero to the segment end
			damage(end0-1-rng.Int64N(region), func(b []byte, rel int64) { clear(b[rel:]) })
		case 2: // garbage
			damage(end0-1-rng.Int64N(region), func(b []byte, rel int64) {
				n := min(int64(1+rng.IntN(300)), int64(len(b))-rel)
				for j := range n {
					b[rel+j] = byte(rng.Uint32())
				}
			})
		}
		l, end := recoverFS(t, o, f)
		// The longest valid prefix entirely before the damage survives.
		k, _ := slices.BinarySearch(ends, first+1)
		require.GreaterOrEqual(t, end, ends[k-1], "iteration %d: damage at %d", i, first)
		require.LessOrEqual(t, end, end0)
		require.NoError(t, l.Close())
	}
}

// TestRecoverFromCheckpoint starts the scan at a record boundary inside a segment.
func TestRecoverFromCheckpoint(t *testing.T) {
	o := testOptions(nil, "/log")
	fs, recs, end0 := buildLog(t, o, 2*testSegSize, 3)
	o.FS = fs
	l, err := Open(o)
	require.NoError(t, err)
	defer l.Close()
	_, err = l.Recover(end0+testSegSize, true)
	require.ErrorIs(t, err, ErrOutOfRange)
	end, err := l.Recover(recs[len(recs)/2].PhysicalOffset, true)
	require.NoError(t, err)
	require.Equal(t, end0, end)
	require.Equal(t, recs[len(recs)-1].StoreTimestamp, l.FlushedStoreTimestamp())
}

// TestMidLogDamageIsQuarantined damages records far from the end of the log in the ways a
// disk does — a flipped body byte, a garbled TOTALSIZE, a zeroed page below the durable
// offset — and checks that only the damaged records are lost: the log keeps its end, the
// damaged range is reported and handed to Keep, and reading skips it.
func TestMidLogDamageIsQuarantined(t *testing.T) {
	o := testOptions(nil, "/log")
	base, recs, end0 := buildLog(t, o, 3*testSegSize, 11)
	// A record well inside the first segments with a body and a successor in its segment.
	i := len(recs) / 5
	for len(recs[i].Body) < 10 || recs[i+1].PhysicalOffset/testSegSize != recs[i].PhysicalOffset/testSegSize {
		i++
	}
	victim := recs[i]
	size := recs[i+1].PhysicalOffset - victim.PhysicalOffset
	bodyAt := func(b []byte, rel int64) int64 { // where the victim's body starts in b
		j := bytes.Index(b[rel:rel+size], victim.Body)
		require.Positive(t, j)
		return rel + int64(j)
	}
	cases := []struct {
		name    string
		damage  func(b []byte, rel int64)
		durable int64
	}{
		{"flipped body byte", func(b []byte, rel int64) { b[bodyAt(b, rel)+3] ^= 0x40 }, 0},
		{"garbled TOTALSIZE", func(b []byte, rel int64) { b[rel+1] ^= 0x7f }, 0},
		{"zeroed record below the durable offset", func(b []byte, rel int64) { clear(b[rel : rel+size]) }, end0},
		{"flipped byte with a durable offset", func(b []byte, rel int64) { b[bodyAt(b, rel)] ^= 1 }, victim.PhysicalOffset + 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := cloneFS(base)
			start := victim.PhysicalOffset / testSegSize * testSegSize
			mutateFile(t, f, segPath("/log", start), testSegSize, func(b []byte) { tc.damage(b, victim.PhysicalOffset-start) })
			o.FS = f
			l, err := Open(o)
			require.NoError(t, err)
			defer func() { require.NoError(t, l.Close()) }()
			var kept []int64
			end, err := l.RecoverWith(RecoverOptions{From: 0, Durable: tc.durable, GuessDurable: tc.durable == 0, VerifyCRC: true,
				Keep: func(from int64, b []byte) error { kept = append(kept, from); return nil }})
			require.NoError(t, err)
			require.Equal(t, end0, end, "the log keeps its end")
			d := l.Quarantined()
			require.Len(t, d, 1)
			require.Equal(t, victim.PhysicalOffset, d[0].From)
			require.Equal(t, victim.PhysicalOffset+size, d[0].To, "exactly the damaged record")
			require.Equal(t, []int64{victim.PhysicalOffset}, kept)
			got := readAll(t, l)
			require.Len(t, got, len(recs)-1)
			for _, r := range got {
				require.NotEqual(t, victim.PhysicalOffset, r.PhysicalOffset)
			}
		})
	}
}

// TestQuarantineSurvivesRestart checks that a quarantined range is skipped by later
// recoveries without being reported again, and that appends go on after it.
func TestQuarantineSurvivesRestart(t *testing.T) {
	o := testOptions(nil, "/log")
	base, recs, end0 := buildLog(t, o, 2*testSegSize, 12)
	victim := recs[3]
	mutateFile(t, base, segPath("/log", 0), testSegSize, func(b []byte) { b[victim.PhysicalOffset+1] ^= 0x7f })
	o.FS = base
	l, err := Open(o)
	require.NoError(t, err)
	_, err = l.Recover(0, true)
	require.NoError(t, err)
	require.Len(t, l.Quarantined(), 1)
	require.NoError(t, l.Close())

	l, err = Open(o)
	require.NoError(t, err)
	end, err := l.Recover(0, true)
	require.NoError(t, err)
	require.Equal(t, end0, end)
	require.Empty(t, l.Quarantined(), "reported once, when found")
	_, err = l.Append([]message.Record{newRecord("Topic", 0, 10, 99)}, false)
	require.NoError(t, err)
	require.Len(t, readAll(t, l), len(recs))
	require.NoError(t, l.Close())
}

// TestDamageAfterTheDurableOffsetIsATornTail checks the other side: a bad record at or
// after the durable offset ends the log even when valid records follow, so a crash leaves
// a prefix of what was appended.
func TestDamageAfterTheDurableOffsetIsATornTail(t *testing.T) {
	o := testOptions(nil, "/log")
	base, recs, _ := buildLog(t, o, 2*testSegSize, 13)
	victim := recs[5]
	mutateFile(t, base, segPath("/log", 0), testSegSize, func(b []byte) { b[victim.PhysicalOffset+1] ^= 0x7f })
	o.FS = base
	l, err := Open(o)
	require.NoError(t, err)
	defer func() { require.NoError(t, l.Close()) }()
	end, err := l.RecoverWith(RecoverOptions{From: 0, Durable: victim.PhysicalOffset, VerifyCRC: true})
	require.NoError(t, err)
	require.Equal(t, victim.PhysicalOffset, end)
	require.Empty(t, l.Quarantined())
}

// Validate checks a range recovery did not scan and quarantines its damage — a zeroed
// range and a flipped body byte — keeping every other record readable by an Iterator
// from the start, and refuses to run after an Append.
func TestValidateQuarantinesBelowTheRecoveryStart(t *testing.T) {
	dir := t.TempDir()
	o := testOptions(mmap.OSFS{}, dir)
	l := openLog(t, o)
	var offs []int64
	for i := 0; l.MaxOffset() < 2*testSegSize+testSegSize/2; i++ {
		res, err := l.Append([]message.Record{newRecord("T", 0, 300, i)}, false)
		require.NoError(t, err)
		offs = append(offs, res.PhysicalOffset)
	}
	end := l.MaxOffset()
	require.NoError(t, l.Close())
	seg0 := filepath.Join(dir, segmentName(0))
	b, err := os.ReadFile(seg0)
	require.NoError(t, err)
	clear(b[offs[10]+20 : offs[12]+5]) // records 10, 11 and 12
	b[offs[30]+200] ^= 0x08            // record 30's body
	require.NoError(t, os.WriteFile(seg0, b, 0o644))

	l2, err := Open(o)
	require.NoError(t, err)
	defer func() { require.NoError(t, l2.Close()) }()
	from := int64(2 * testSegSize)
	got, err := l2.RecoverWith(RecoverOptions{From: from, Durable: end, VerifyCRC: true})
	require.NoError(t, err)
	require.Equal(t, end, got)
	var kept []int64
	found, err := l2.Validate(offs[5], from, func(at int64, _ []byte) error { kept = append(kept, at); return nil })
	require.NoError(t, err)
	require.Len(t, found, 2)
	require.Equal(t, offs[10], found[0].From)
	require.Equal(t, offs[13], found[0].To)
	require.Equal(t, offs[30], found[1].From)
	require.Equal(t, offs[31], found[1].To)
	require.Equal(t, []int64{offs[10], offs[30]}, kept)
	require.Len(t, l2.Quarantined(), 2)

	it := l2.NewIterator(0)
	defer it.Close()
	var read []int64
	for it.Next() {
		read = append(read, it.Offset())
	}
	require.NoError(t, it.Err())
	var want []int64
	for i, off := range offs {
		if (i < 10 || i > 12) && i != 30 {
			want = append(want, off)
		}
	}
	require.Equal(t, want, read, "every other record is read")

	_, err = l2.Append([]message.Record{newRecord("T", 0, 300, 999)}, false)
	require.NoError(t, err)
	_, err = l2.Validate(0, from, nil)
	require.ErrorIs(t, err, ErrAlreadyAppended)
}
