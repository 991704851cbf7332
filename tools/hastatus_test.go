package tools

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/controller"
)

// ha status shows a group whose master restarted and is waiting to be elected again.
func TestHAStatusShowsARestartedMaster(t *testing.T) {
	v := controller.GroupView{Name: "broker-a", Master: 1, MasterEpoch: 3, SyncStateSet: []int64{1, 2},
		SyncStateSetEpoch: 4, MasterRestarted: true,
		Members: []controller.MemberView{{ID: 1, Addr: "127.0.0.1:10911"}, {ID: 2, Addr: "127.0.0.1:10921"}}}
	s := haStatusOf(v)
	require.True(t, s.MasterRestarted)
	var text, js bytes.Buffer
	e := &env{out: &text}
	require.NoError(t, e.emitHAStatus(v))
	require.Contains(t, text.String(), "master restarted")
	e = &env{out: &js, output: "json"}
	require.NoError(t, e.emitHAStatus(v))
	require.Contains(t, js.String(), `"masterRestarted": true`)

	v.MasterRestarted = false
	text.Reset()
	e = &env{out: &text}
	require.NoError(t, e.emitHAStatus(v))
	require.NotContains(t, text.String(), "restarted")
}
