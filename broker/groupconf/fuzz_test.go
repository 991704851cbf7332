package groupconf

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/internal/mmap"
)

// FuzzLoadSubscriptionGroups checks that loading any subscriptionGroup.json
// never panics, that loaded entries are valid with an int32 counter, and
// that the table survives a write and a reload unchanged.
func FuzzLoadSubscriptionGroups(f *testing.F) {
	for _, name := range []string{"rocketmq4-subscriptionGroup.json", "rocketmq5-subscriptionGroup.json"} {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		require.NoError(f, err)
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fsys := mmap.NewMemFS()
		require.NoError(t, fsys.MkdirAll("/store/config"))
		require.NoError(t, fsys.WriteFileAtomic(groupsPath, data))
		o, _ := testOptions(fsys, "/store")
		m, err := Open(o)
		if err != nil {
			require.ErrorIs(t, err, ErrCorrupt)
			return
		}
		require.LessOrEqual(t, m.DataVersion().Counter, int64(math.MaxInt32))
		for name, cfg := range m.All().SubscriptionGroupTable {
			require.Equal(t, name, cfg.GroupName)
			require.NoError(t, cfg.Validate())
		}
		_, _, err = m.FindOrCreate("FuzzWriteProbe")
		require.NoError(t, err)
		m2, err := Open(o)
		require.NoError(t, err)
		require.Equal(t, m.All(), m2.All())
	})
}
