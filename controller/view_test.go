package controller

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func sampleView() GroupView {
	return GroupView{Name: "broker-a", Master: 2, MasterEpoch: 3, SyncStateSet: []int64{1, 2}, SyncStateSetEpoch: 5,
		Members: []MemberView{
			{ID: 1, Addr: "10.0.0.1:10911", HAAddr: "10.0.0.1:10912", Alive: true, Epoch: 3, MaxOffset: 4000},
			{ID: 2, Addr: "10.0.0.2:10911", HAAddr: "10.0.0.2:10912", Alive: true, Epoch: 3, MaxOffset: 4096},
		}}
}

// The JSON layout documented in view.go, field for field.
func TestGroupViewLayout(t *testing.T) {
	b, err := json.Marshal(sampleView())
	require.NoError(t, err)
	require.JSONEq(t, `{"name":"broker-a","master":2,"masterEpoch":3,"syncStateSet":[1,2],"syncStateSetEpoch":5,
		"members":[{"id":1,"addr":"10.0.0.1:10911","haAddr":"10.0.0.1:10912","alive":true,"epoch":3,"maxOffset":4000},
		{"id":2,"addr":"10.0.0.2:10911","haAddr":"10.0.0.2:10912","alive":true,"epoch":3,"maxOffset":4096}]}`, string(b))
	v, err := decodeGroupView(b)
	require.NoError(t, err)
	require.Equal(t, sampleView(), v)
	// Unknown fields are ignored; broken orders are refused.
	_, err = decodeGroupView([]byte(`{"name":"g","future":1}`))
	require.NoError(t, err)
	for _, bad := range []string{`{"syncStateSet":[2,1]}`, `{"syncStateSet":[1,1]}`,
		`{"members":[{"id":2},{"id":1}]}`, `{"members":[{"id":1},{"id":1}]}`, `[]`, `{"master":"x"}`, ``} {
		_, err := decodeGroupView([]byte(bad))
		require.ErrorIs(t, err, ErrBadRequest, bad)
	}
	_, err = decodeStatus([]byte(`{"groups":[{"syncStateSet":[3,2]}]}`))
	require.ErrorIs(t, err, ErrBadRequest)
	for _, bad := range []string{`{}`, `{"syncStateSet":[]}`, `{"syncStateSet":"1"}`} {
		_, err := decodeAlterBody([]byte(bad))
		require.ErrorIs(t, err, ErrBadRequest, bad)
	}
}

func FuzzDecodeGroupView(f *testing.F) {
	b, _ := json.Marshal(sampleView())
	f.Add(b)
	f.Add([]byte(`{"name":"g","members":[]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := decodeGroupView(b)
		if err != nil {
			require.ErrorIs(t, err, ErrBadRequest)
			return
		}
		again, err := json.Marshal(v)
		require.NoError(t, err)
		v2, err := decodeGroupView(again)
		require.NoError(t, err)
		require.Equal(t, v, v2)
		for _, m := range v.Members {
			got, ok := v.Member(m.ID)
			require.True(t, ok)
			require.Equal(t, m, got)
		}
	})
}

func FuzzDecodeStatus(f *testing.F) {
	b, _ := json.Marshal(Status{NodeID: "n0", State: "Leader", Leader: "n0", Term: 2, AppliedIndex: 9, CommitIndex: 9,
		Nodes: []NodeView{{ID: "n0", RaftAddr: "127.0.0.1:9877", Voter: true}}, Groups: []GroupView{sampleView()}})
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := decodeStatus(b)
		if err != nil {
			require.ErrorIs(t, err, ErrBadRequest)
			return
		}
		again, err := json.Marshal(s)
		require.NoError(t, err)
		s2, err := decodeStatus(again)
		require.NoError(t, err)
		require.Equal(t, s, s2)
	})
}

func FuzzDecodeAlterBody(f *testing.F) {
	f.Add([]byte(`{"syncStateSet":[1,2,3]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		set, err := decodeAlterBody(b)
		if err != nil {
			require.ErrorIs(t, err, ErrBadRequest)
			return
		}
		require.NotEmpty(t, set)
		// The machine takes any such set without panicking.
		m := NewMachine()
		m.Apply(Command{Kind: KindAlterSyncStateSet, Group: "g", SyncStateSet: set})
	})
}
