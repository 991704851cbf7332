package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/internal/mmap"
	"github.com/ferrymq/ferry/internal/testkit"
	"github.com/ferrymq/ferry/message"
)

// writtenRecord is a record the damage trials wrote: where it is and what it holds.
type writtenRecord struct {
	phy, size   int64
	topic, body string
	queueID     int32
	queueOffset int64
}

// TestRandomDamageBelowTheCheckpoint is the acceptance test of damaged stores: 100
// trials, each on a copy of one crashed store whose checkpoint covers its whole commit
// log, with one to three random injuries below the checkpoint — zeroed ranges, flipped
// bytes, segments cut short (the last data segment with or without the next segment
// preallocated after it) — and, in some trials, its consume queues or index removed so
// recovery re-dispatches through the damage. Every trial must open the store, serve every
// record whose bytes are intact, and serve nothing that differs from what was written in
// the fields the V1 format lets a reader check (body, by its CRC; topic, queue id, queue
// offset and physical offset, against the consume queue). A consumer reading each queue
// from its first offset must reach its end. The trials are seeded, so a failure repeats.
func TestRandomDamageBelowTheCheckpoint(t *testing.T) {
	base := t.TempDir()
	o := testOptions(mmap.OSFS{}, base)
	s, err := Open(o)
	require.NoError(t, err)
	s.Start()
	msgs := makeMessages(700, 3, 2)
	written := make([]writtenRecord, 0, len(msgs))
	for _, m := range msgs {
		res := put(t, s, m, false)
		written = append(written, writtenRecord{phy: res.PhysicalOffset, size: int64(res.Bytes), topic: m.topic,
			body: m.body, queueID: m.queueID, queueOffset: res.QueueOffset})
	}
	waitDispatched(t, s)
	end := s.cl.MaxOffset()
	require.NoError(t, s.cl.Flush()) // else the checkpoint's flushed offset depends on the flusher's timing
	require.NoError(t, s.writeCheckpoint())
	require.NoError(t, s.closeForTest()) // a crash: the abort file stays, the checkpoint covers everything
	segSize := o.SegmentSize
	nsegs := int((end + segSize - 1) / segSize)
	require.GreaterOrEqual(t, nsegs, 3)
	orig := make([][]byte, nsegs)
	for i := range orig {
		orig[i], err = os.ReadFile(filepath.Join(o.commitLogDir(), specFileName(int64(i)*segSize)))
		require.NoError(t, err)
	}

	const trials = 100
	rng := rand.New(rand.NewPCG(19, 4))
	for trial := range trials {
		dir := filepath.Join(t.TempDir(), "store")
		copyTree(t, base, dir)
		to := o
		to.Dir = dir
		cur := make([][]byte, nsegs) // the commit log as the damaged files read once padded
		for i := range cur {
			cur[i] = bytes.Clone(orig[i])
		}
		what := damageStore(t, rng, to, cur, end)
		if rng.IntN(3) == 0 {
			require.NoError(t, os.RemoveAll(to.consumeQueueDir()))
			what = append(what, "consume queues removed")
		}
		if rng.IntN(6) == 0 {
			require.NoError(t, os.RemoveAll(to.indexDir()))
			what = append(what, "index removed")
		}
		desc := fmt.Sprintf("trial %d: %s", trial, strings.Join(what, "; "))

		s, err := Open(to)
		require.NoError(t, err, "%s: the store starts", desc)
		s.Start()
		// What recovery left stalled is dispatched again in the background (every
		// stallRetry): the check starts once the derived files have caught up.
		testkit.Eventually(t, 10*time.Second, func() bool {
			return s.dispatched.Load() >= s.cl.MaxOffset() && s.stallFloor.Load() == math.MaxInt64
		}, desc+": dispatch caught up")
		checkServed(t, s, desc, written, orig, cur, segSize)
		require.NoError(t, s.Shutdown(context.Background()), desc)
	}
}

// damageStore injures the commit log of the store in o one to three times below end,
// changing the files and cur (the segments' expected bytes) alike, and says what it did.
func damageStore(t *testing.T, rng *rand.Rand, o Options, cur [][]byte, end int64) []string {
	t.Helper()
	segSize := o.SegmentSize
	path := func(i int) string { return filepath.Join(o.commitLogDir(), specFileName(int64(i)*segSize)) }
	patch := func(off int64, b []byte) {
		i, rel := int(off/segSize), off%segSize
		f, err := os.OpenFile(path(i), os.O_RDWR, 0)
		require.NoError(t, err)
		_, err = f.WriteAt(b, rel)
		require.NoError(t, errors.Join(err, f.Close()))
		copy(cur[i][rel:], b)
	}
	var what []string
	for range 1 + rng.IntN(3) {
		switch rng.IntN(3) {
		case 0: // a zeroed range, within one segment
			off := rng.Int64N(end)
			n := min(1+rng.Int64N(1500), segSize-off%segSize, end-off)
			patch(off, make([]byte, n))
			what = append(what, fmt.Sprintf("zeroed [%d, %d)", off, off+n))
		case 1: // a flipped byte
			off := rng.Int64N(end)
			i, rel := int(off/segSize), off%segSize
			patch(off, []byte{cur[i][rel] ^ byte(1+rng.IntN(255))})
			what = append(what, fmt.Sprintf("flipped byte at %d", off))
		default: // a segment cut short
			last := int((end - 1) / segSize)
			i := rng.IntN(last + 1)
			used := min(segSize, end-int64(i)*segSize)
			cut := rng.Int64N(used)
			require.NoError(t, os.Truncate(path(i), cut))
			clear(cur[i][cut:])
			w := fmt.Sprintf("segment %d cut to %d bytes", i, cut)
			if i == last && rng.IntN(2) == 0 {
				next := filepath.Join(o.commitLogDir(), specFileName(int64(last+1)*segSize))
				require.NoError(t, os.WriteFile(next, make([]byte, segSize), 0o644))
				w += ", the next segment preallocated after it"
			}
			what = append(what, w)
		}
	}
	return what
}

// checkServed reads every queue of the damage trials from its first offset to its end
// and checks what it serves against what was written (see
// TestRandomDamageBelowTheCheckpoint).
func checkServed(t *testing.T, s *Store, desc string, written []writtenRecord, orig, cur [][]byte, segSize int64) {
	t.Helper()
	type qkey struct {
		topic string
		qid   int32
	}
	byOffset := map[qkey]map[int64]writtenRecord{}
	for _, w := range written {
		k := qkey{w.topic, w.queueID}
		if byOffset[k] == nil {
			byOffset[k] = map[int64]writtenRecord{}
		}
		byOffset[k][w.queueOffset] = w
	}
	served := map[int64]bool{} // by physical offset
	for k, recs := range byOffset {
		off, maxOff := s.MinOffset(k.topic, k.qid), s.MaxOffset(k.topic, k.qid)
		for off < maxOff {
			r, err := s.GetMessages(k.topic, k.qid, off, 32, 1<<20, nil)
			require.NoError(t, err, desc)
			require.Contains(t, []GetStatus{Found, NoMatchedMessage}, r.Status, "%s: %s/%d at %d", desc, k.topic, k.qid, off)
			require.Greater(t, r.NextBeginOffset, off, "%s: the consumer moves on", desc)
			for i, b := range r.Messages {
				rec, n, err := message.DecodeRecord(b)
				require.NoError(t, err, "%s: a served record decodes", desc)
				require.Equal(t, len(b), n, desc)
				w, ok := recs[r.QueueOffsets[i]]
				require.True(t, ok, "%s: %s/%d served queue offset %d, never written", desc, k.topic, k.qid, r.QueueOffsets[i])
				require.Equal(t, w.body, string(rec.Body), "%s: body of %s/%d@%d", desc, k.topic, k.qid, w.queueOffset)
				require.Equal(t, w.topic, string(rec.Topic), desc)
				require.Equal(t, w.queueID, rec.QueueID, desc)
				require.Equal(t, w.queueOffset, rec.QueueOffset, desc)
				require.Equal(t, w.phy, rec.PhysicalOffset, desc)
				served[w.phy] = true
			}
			off = r.NextBeginOffset
			r.Release()
		}
	}
	lost := 0
	for _, w := range written {
		i, rel := int(w.phy/segSize), w.phy%segSize
		if bytes.Equal(orig[i][rel:rel+w.size], cur[i][rel:rel+w.size]) {
			require.True(t, served[w.phy], "%s: intact record %s/%d@%d (phy %d) is served", desc, w.topic, w.queueID, w.queueOffset, w.phy)
		} else {
			lost++
		}
	}
	t.Logf("%s: %d records damaged, %d served, %d quarantined ranges, %d bad reads", desc, lost, len(served),
		s.Damage().QuarantinedRanges, s.Damage().BadReads)
}

// copyTree copies the regular files under src to dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	require.NoError(t, err)
}
