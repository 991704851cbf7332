package groupconf

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/internal/mmap"
)

func TestFindOrCreateUsesConfiguredRetryMaxTimes(t *testing.T) {
	o := DefaultOptions()
	o.Dir, o.FS = "/g", mmap.NewMemFS()
	o.RetryMaxTimes = 3
	m, err := Open(o)
	require.NoError(t, err)
	cfg, created, err := m.FindOrCreate("cg")
	require.NoError(t, err)
	require.True(t, created)
	require.Equal(t, int32(3), cfg.RetryMaxTimes)

	o.RetryMaxTimes = -1
	_, err = Open(o)
	require.ErrorIs(t, err, ErrInvalidOptions)
}
