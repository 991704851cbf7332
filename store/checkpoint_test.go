package store

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDecodeCheckpointFields(t *testing.T) {
	c := checkpoint{PhysicMsgTimestamp: 11, LogicsMsgTimestamp: 12, IndexMsgTimestamp: 13, FlushedOffset: 4096, DispatchedOffset: 2048}
	got, err := DecodeCheckpoint(encodeCheckpoint(c))
	require.NoError(t, err)
	require.Equal(t, CheckpointFields{
		PhysicMsgTimestamp: 11, LogicsMsgTimestamp: 12, IndexMsgTimestamp: 13,
		MasterFlushedOffset: 4096, ConfirmPhyOffset: 4096, HasRocketMQ5: true,
		HasFerryFields: true, FlushedOffset: 4096, DispatchedOffset: 2048,
		StoredCRC: got.ComputedCRC, ComputedCRC: got.ComputedCRC, Valid: true,
	}, got)

	bad := encodeCheckpoint(c)
	bad[55]++
	got, err = DecodeCheckpoint(bad)
	require.NoError(t, err, "a bad CRC is reported, not an error")
	require.False(t, got.Valid)
	require.True(t, got.HasFerryFields)
	require.NotEqual(t, got.StoredCRC, got.ComputedCRC)
	require.Contains(t, got.Problem, "crc mismatch")
	require.Equal(t, int64(4097), got.FlushedOffset, "the stored value, valid or not")

	rocket := make([]byte, 24)
	binary.BigEndian.PutUint64(rocket, 99)
	got, err = DecodeCheckpoint(rocket)
	require.NoError(t, err)
	require.Equal(t, CheckpointFields{PhysicMsgTimestamp: 99}, got)

	_, err = DecodeCheckpoint(rocket[:23])
	require.ErrorIs(t, err, errBadCheckpoint)
}

// FuzzDecodeCheckpointFields checks that DecodeCheckpoint never panics and agrees with the
// decoder recovery uses.
func FuzzDecodeCheckpointFields(f *testing.F) {
	f.Add(encodeCheckpoint(checkpoint{FlushedOffset: 10, DispatchedOffset: 5}))
	f.Add(make([]byte, 4096))
	f.Add(make([]byte, 40))
	f.Add([]byte{1, 2})
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := DecodeCheckpoint(b)
		want, wantErr := decodeCheckpoint(b)
		if len(b) < 24 {
			require.ErrorIs(t, err, errBadCheckpoint)
			require.ErrorIs(t, wantErr, errBadCheckpoint)
			return
		}
		require.NoError(t, err)
		require.Equal(t, want.Valid, got.Valid)
		require.Equal(t, wantErr != nil, got.Problem != "")
		require.Equal(t, want.PhysicMsgTimestamp, got.PhysicMsgTimestamp)
		if want.Valid {
			require.Equal(t, want.FlushedOffset, got.FlushedOffset)
			require.Equal(t, want.DispatchedOffset, got.DispatchedOffset)
			require.Equal(t, got.StoredCRC, got.ComputedCRC)
		}
		if got.Valid || got.Problem != "" {
			require.True(t, got.HasFerryFields)
		}
	})
}
