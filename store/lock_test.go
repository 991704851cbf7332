package store

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/internal/mmap"
)

// A second Open of a store that is open is refused before it touches anything: it would
// take the live store for a crashed one and recover (truncate, delete) under it. Once the
// first one is shut down, or its process gone, the store opens again.
func TestSecondOpenOfALiveStoreIsRefused(t *testing.T) {
	dir := t.TempDir()
	o := testOptions(mmap.OSFS{}, dir)
	first := openStore(t, o)
	res := put(t, first, testMessage{topic: "T", body: "kept"}, false)

	_, err := Open(o)
	require.ErrorIs(t, err, mmap.ErrLocked)
	require.ErrorContains(t, err, "in use")
	exists, err := o.FS.Exists(o.abortPath())
	require.NoError(t, err)
	require.True(t, exists, "the live store's abort file is untouched")

	require.NoError(t, first.Shutdown(context.Background()))
	second := openStore(t, o)
	rec, v, err := second.ReadMessage(res.PhysicalOffset)
	require.NoError(t, err, "the message is still there")
	require.Equal(t, "kept", string(rec.Body))
	v.Release()
}

func TestFailedOpenReleasesTheLock(t *testing.T) {
	fsys := mmap.NewErrorFS(mmap.NewMemFS())
	o := testOptions(fsys, "/s")
	remove := fsys.Inject(mmap.Rule{Ops: mmap.OpOpenMapped})
	_, err := Open(o)
	require.ErrorIs(t, err, mmap.ErrInjected)
	remove()
	s := openStore(t, o)
	require.NotNil(t, s, "the failed Open did not keep the store locked")
}
