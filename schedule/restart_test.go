package schedule

import (
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/internal/mmap"
	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/protocol"
)

// coveredByProgress reads the progress files on fsys and returns how many parked messages
// they count as delivered: the level cursors plus the timer watermark and ranges.
func coveredByProgress(t *testing.T, h *harness, fsys *mmap.MemFS) int64 {
	t.Helper()
	var covered int64
	if data, err := fsys.ReadFile(filepath.Join(h.dir, configDir, delayOffsetFile)); err == nil {
		table, err := decodeDelayOffsets(data)
		require.NoError(t, err)
		for level, off := range table {
			covered += off - h.st.MinOffset(protocol.ScheduleTopic, int32(level-1))
		}
	}
	if data, err := fsys.ReadFile(filepath.Join(h.dir, configDir, timerProgressFile)); err == nil {
		w, done, err := decodeTimerProgress(data)
		require.NoError(t, err)
		covered += w - h.st.MinOffset(protocol.TimerTopic, 0)
		for _, r := range done {
			covered += r.End - r.Start
		}
	}
	return covered
}

// deliveredCount counts the parked messages (those with REAL_TOPIC) in the real queues.
func deliveredCount(h *harness) int64 {
	var n int64
	for _, g := range h.readReal() {
		if _, ok := g.props[message.PropertyRealTopic]; ok {
			n++
		}
	}
	return n
}

func TestRestart(t *testing.T) {
	for _, crash := range []bool{false, true} {
		name := map[bool]string{false: "clean", true: "crash"}[crash]
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, levelString(18, "100ms"))
			h.syncFlush = true // acknowledged sends survive the crash
			h.openStore()
			const flushEvery = 200 * time.Millisecond
			withFlush := func(o *Options) { o.FlushInterval = flushEvery }
			h.startService(withFlush)

			rng := rand.New(rand.NewPCG(7, uint64(len(name))))
			msgs := makeMixedMessages(rng, 1200, 400, time.Now())
			h.sendSpread(msgs, 200, 10*time.Millisecond)
			// Stop in the middle of the deliveries.
			require.Eventually(t, func() bool { return h.svc.Stats().Delivered >= 600 },
				10*time.Second, 5*time.Millisecond)

			fsys := h.fs
			if crash {
				fsys = h.fs.Crash(nil, 0) // power loss now; the old processes keep running
			}
			deliveredBefore := h.svc.Stats().Delivered
			h.stopService()
			h.stopStore()

			h.fs = fsys
			h.openStore()
			durable := deliveredCount(h)
			covered := coveredByProgress(t, h, fsys)
			uncovered := durable - covered
			require.GreaterOrEqual(t, uncovered, int64(0), "progress claims deliveries the store lost")

			h.startService(withFlush)
			h.waitAll(msgs, 20*time.Second)
			h.waitCaughtUp(10 * time.Second) // after it, no further duplicate can show up
			dups, late := checkDelivery(t, msgs, h.readReal())
			t.Logf("%s restart: %d delivered before, %d of them in the store, %d covered by progress; "+
				"%d duplicates; lateness p99 %v", name, deliveredBefore, durable, covered, dups, percentile(late, 99))
			require.LessOrEqual(t, int64(dups), uncovered)
			if !crash {
				require.Zero(t, dups, "a clean shutdown persists everything")
			}
			require.Less(t, percentile(late, 99), latenessBound)
		})
	}
}

func TestRestartClampsOutOfRangeProgress(t *testing.T) {
	h := newHarness(t, "10ms 20ms 30ms")
	h.openStore()
	h.startService(nil)
	for i := range 5 {
		h.send(&testMsg{uniq: "c" + string(rune('a'+i)), topic: "RealA", queueID: 0,
			props: map[string]string{message.PropertyDelayLevel: "2"}})
	}
	h.waitReal(5, 5*time.Second)
	h.stopService()

	// Level 2 holds 5 messages; a file from another store claims 900, level 1 −4, level 3
	// (empty queue) 17, and level 40 does not exist.
	dir := filepath.Join(h.dir, configDir)
	require.NoError(t, h.fs.WriteFileAtomic(filepath.Join(dir, delayOffsetFile),
		[]byte(`{"offsetTable":{1:-4,2:900,3:17,40:3},"dataVersion":{"counter":1}}`)))
	require.NoError(t, h.fs.WriteFileAtomic(filepath.Join(dir, timerProgressFile),
		[]byte(`{"version":1,"watermark":55,"delivered":[[60,70]]}`)))
	h.startService(nil)
	st := h.svc.Stats()
	require.Equal(t, []int64{0, 5, 0}, st.LevelOffsets)
	require.Zero(t, st.TimerWatermark)

	// A corrupt file stops New instead of replaying everything.
	h.stopService()
	require.NoError(t, h.fs.WriteFileAtomic(filepath.Join(dir, delayOffsetFile), []byte(`{"offsetTable":`)))
	o := DefaultOptions()
	o.Dir, o.FS, o.Store, o.Levels = h.dir, h.fs, h.st, h.levels
	_, err := New(o)
	require.Error(t, err)
}
