package schedule

import (
	"path/filepath"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
)

// A slave's service (never started) takes its master's delay progress and writes it to
// delayOffset.json at once; a running service refuses, its loops own the cursors.
func TestSyncLevelOffsets(t *testing.T) {
	h := newHarness(t, "1s 2s 3s")
	h.openStore()
	o := DefaultOptions()
	o.Dir, o.FS, o.Store, o.Levels = h.dir, h.fs, h.st, h.levels
	o.Logger = zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	svc, err := New(o)
	require.NoError(t, err)
	h.svc = svc
	require.Equal(t, map[int]int64{1: 0, 2: 0, 3: 0}, svc.LevelOffsets())

	require.NoError(t, svc.SyncLevelOffsets(map[int]int64{1: 12, 3: 7, 9: 99, 2: -1}))
	require.Equal(t, map[int]int64{1: 12, 2: 0, 3: 7}, svc.LevelOffsets())
	data, err := h.fs.ReadFile(filepath.Join(h.dir, configDir, delayOffsetFile))
	require.NoError(t, err)
	require.Equal(t, "{\"offsetTable\":{\"1\":12,\"2\":0,\"3\":7}}\n", string(data))

	svc.Start()
	require.Error(t, svc.SyncLevelOffsets(map[int]int64{1: 13}))
	require.Equal(t, int64(12), svc.LevelOffsets()[1])
}

// A slave's service takes its master's timer progress, writes timerProgress.json at once
// and reports it back; malformed ranges and a running service are refused.
func TestSyncTimerProgress(t *testing.T) {
	h := newHarness(t, "1s")
	h.openStore()
	o := DefaultOptions()
	o.Dir, o.FS, o.Store, o.Levels = h.dir, h.fs, h.st, h.levels
	o.Logger = zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	svc, err := New(o)
	require.NoError(t, err)
	h.svc = svc
	w, done := svc.TimerProgress()
	require.Zero(t, w)
	require.Empty(t, done)

	require.NoError(t, svc.SyncTimerProgress(40, [][2]int64{{40, 45}, {50, 52}}))
	w, done = svc.TimerProgress()
	require.Equal(t, int64(45), w, "a range at the watermark raises it")
	require.Equal(t, [][2]int64{{50, 52}}, done)
	data, err := h.fs.ReadFile(filepath.Join(h.dir, configDir, timerProgressFile))
	require.NoError(t, err)
	require.Equal(t, "{\"version\":1,\"watermark\":45,\"delivered\":[[50,52]]}\n", string(data))

	require.Error(t, svc.SyncTimerProgress(10, [][2]int64{{30, 20}}), "an empty range")
	require.Error(t, svc.SyncTimerProgress(-1, nil), "a negative watermark")
	w, _ = svc.TimerProgress()
	require.Equal(t, int64(45), w, "a refused sync changes nothing")

	svc.Start()
	require.Error(t, svc.SyncTimerProgress(60, nil))
}
