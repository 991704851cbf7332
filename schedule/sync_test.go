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
