package groupconf

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/protocol"
)

// A slave's group table becomes its master's (valid groups, the master's version) and is
// written; an identical table is not rewritten.
func TestReplaceAll(t *testing.T) {
	m, fsys := openMem(t)
	_, _, err := m.FindOrCreate("slave-only")
	require.NoError(t, err)

	v := protocol.DataVersion{Timestamp: 1_800_000_000_000, Counter: 4}
	cg := DefaultConfig("other-name")
	cg.RetryMaxTimes = 3
	bad := DefaultConfig("bad")
	bad.RetryQueueNums = -1
	tbl := Table{DataVersion: v, SubscriptionGroupTable: map[string]Config{"cg": cg, "bad": bad}}
	changed, err := m.ReplaceAll(tbl)
	require.NoError(t, err)
	require.True(t, changed)
	require.Equal(t, v, m.DataVersion())
	got, ok := m.Get("cg")
	require.True(t, ok)
	require.Equal(t, "cg", got.GroupName)
	require.Equal(t, int32(3), got.RetryMaxTimes)
	_, ok = m.Get("bad")
	require.False(t, ok)
	_, ok = m.Get("slave-only")
	require.False(t, ok)

	changed, err = m.ReplaceAll(tbl)
	require.NoError(t, err)
	require.False(t, changed)

	reopened := openFS(t, fsys)
	_, ok = reopened.Get("cg")
	require.True(t, ok)
	require.Equal(t, v, reopened.DataVersion())
}
