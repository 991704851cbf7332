package topicconf

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/protocol"
)

// A slave's table becomes its master's (valid topics, the master's version) and is
// written; built-in topics the master lacks are kept; an identical table is not
// rewritten; a slave-local change with the master's version is still replaced.
func TestReplaceAll(t *testing.T) {
	m, fsys, _ := openMem(t)
	changes := 0
	m.opts.OnChange = func() { changes++ }
	_, err := m.CreateOrUpdate(topic("SlaveOnly", 1, 1, 6))
	require.NoError(t, err)
	changes = 0

	v := protocol.DataVersion{Timestamp: 1_800_000_000_000, Counter: 9}
	w := protocol.TopicConfigSerializeWrapper{DataVersion: v, TopicConfigTable: map[string]protocol.TopicConfig{
		"A":   topic("ignored-name", 3, 3, 6),
		"Bad": topic("Bad", 0, 0, 6),
	}}
	changed, err := m.ReplaceAll(w)
	require.NoError(t, err)
	require.True(t, changed)
	require.Equal(t, 1, changes)
	require.Equal(t, v, m.DataVersion())
	a, ok := m.Get("A")
	require.True(t, ok)
	require.Equal(t, "A", a.TopicName)
	require.Equal(t, protocol.SingleTag, a.TopicFilterType)
	_, ok = m.Get("Bad")
	require.False(t, ok)
	_, ok = m.Get("SlaveOnly")
	require.False(t, ok)
	_, ok = m.Get(protocol.ScheduleTopic)
	require.True(t, ok, "built-in topics stay")

	changed, err = m.ReplaceAll(w)
	require.NoError(t, err)
	require.False(t, changed)
	require.Equal(t, 1, changes)

	reopened, _ := openFS(t, fsys)
	require.Equal(t, v, reopened.DataVersion())
	_, ok = reopened.Get("A")
	require.True(t, ok, "written before it is served")

	// A local table that happens to carry the master's version is replaced all the same.
	_, err = m.CreateOrUpdate(topic("SlaveOnly", 1, 1, 6))
	require.NoError(t, err)
	cur := m.cur.Load()
	m.cur.Store(&table{topics: cur.topics, version: v})
	changed, err = m.ReplaceAll(w)
	require.NoError(t, err)
	require.True(t, changed)
	_, ok = m.Get("SlaveOnly")
	require.False(t, ok)
}
