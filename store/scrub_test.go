package store

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/internal/mmap"
)

// TestScrubFindsWhatRecoveryDoesNotLookAt damages a record and a consume-queue unit of a
// running store below its checkpoint; Scrub must report both, and a start with VerifyAll
// (ferry scrub) must quarantine the record so that the next scrub is clean.
func TestScrubFindsWhatRecoveryDoesNotLookAt(t *testing.T) {
	o := testOptions(mmap.OSFS{}, t.TempDir())
	s := openStore(t, o)
	var offs []int64
	for i := range 300 {
		m := testMessage{topic: "T", queueID: int32(i % 2), body: fmt.Sprintf("payload-%04d", i), uniq: fmt.Sprintf("U%d", i)}
		offs = append(offs, put(t, s, m, false).PhysicalOffset)
	}
	waitDispatched(t, s)
	r, err := s.Scrub(context.Background(), 0)
	require.NoError(t, err)
	require.True(t, r.Clean(), "%+v", r)
	require.Equal(t, int64(300), r.Records)
	require.Equal(t, int64(300), r.Units)

	patchLog(t, o, offs[40], func(b []byte) { b[bytes.Index(b, []byte("payload-0040"))+9] ^= 1 })
	// Unit 7 of queue 1 now points at unit 8's record.
	unitFile := filepath.Join(o.consumeQueueDir(), "T", "1", specFileName(0))
	f, err := os.OpenFile(unitFile, os.O_RDWR, 0)
	require.NoError(t, err)
	u8 := make([]byte, 20)
	_, err = f.ReadAt(u8, 8*20)
	require.NoError(t, err)
	_, err = f.WriteAt(u8, 7*20)
	require.NoError(t, err)
	require.NoError(t, f.Close())

	r, err = s.Scrub(context.Background(), 0)
	require.NoError(t, err)
	require.Equal(t, int64(1), r.Damaged)
	require.Equal(t, []int64{offs[40]}, r.DamagedAt)
	require.Equal(t, int64(1), r.BadUnits)
	require.False(t, r.Clean())
	require.NoError(t, s.Shutdown(context.Background()))

	o.VerifyAll = true
	s2 := openStore(t, o)
	require.Equal(t, int64(1), s2.Damage().QuarantinedRanges)
	r, err = s2.Scrub(context.Background(), 0)
	require.NoError(t, err)
	require.Equal(t, int64(1), r.Quarantined)
	require.Zero(t, r.Damaged)
	require.Equal(t, int64(299), r.Records)
	require.True(t, r.Clean(), "the damaged unit broke its queue's order, so the queue was re-derived: %+v", r)
	require.Equal(t, 299, checkQueuesConsistent(t, s2))
	require.Len(t, queueContents(t, s2, "T", 0), 149, "the lost message's offset is a hole")
	require.Zero(t, s2.Damage().BadReads, "no unit points into the quarantined range any more")
}

// TestBackgroundScrubCounts runs the background scrub and reads its counters.
func TestBackgroundScrubCounts(t *testing.T) {
	o := testOptions(mmap.NewMemFS(), "/store")
	o.ScrubInterval = 5 * time.Millisecond
	s := openStore(t, o)
	for i := range 20 {
		put(t, s, testMessage{topic: "T", body: fmt.Sprintf("b%d", i), uniq: fmt.Sprintf("U%d", i)}, false)
	}
	waitDispatched(t, s)
	require.Eventually(t, func() bool { return s.Damage().Scrubs >= 2 }, 10*time.Second, 5*time.Millisecond)
	require.Zero(t, s.Damage().ScrubFindings)
}
