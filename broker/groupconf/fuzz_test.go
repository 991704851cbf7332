package groupconf

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/broker/internal/metafile/metafiletest"
)

// FuzzLoadSubscriptionGroups checks that loading any subscriptionGroup.json
// never panics, that loaded entries are valid with an int32 counter, and
// that the table survives a write and a reload unchanged.
func FuzzLoadSubscriptionGroups(f *testing.F) {
	metafiletest.Seed(f, "rocketmq4-subscriptionGroup.json", "rocketmq5-subscriptionGroup.json")
	f.Fuzz(func(t *testing.T, data []byte) {
		// Never nil, so that an empty input is written as an empty file.
		o, _ := testOptions(metafiletest.Files(t, groupsPath, append([]byte{}, data...), nil), "/store")
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
