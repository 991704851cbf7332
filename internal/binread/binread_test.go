package binread

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestReadsFieldsAndRemembersTheFirstOverrun(t *testing.T) {
	var b []byte
	b = binary.BigEndian.AppendUint16(b, 3)
	b = append(b, "abc"...)
	b = binary.BigEndian.AppendUint32(b, 2)
	b = binary.BigEndian.AppendUint64(b, 1<<40)
	b = binary.BigEndian.AppendUint16(b, 7)
	r := New(b)
	require.Equal(t, "abc", r.String16())
	require.Equal(t, uint32(2), r.Uint32())
	require.Equal(t, uint64(1<<40), r.Uint64())
	require.Equal(t, uint16(7), r.Uint16())
	require.NoError(t, r.Err())
	require.Zero(t, r.Len())
	require.Zero(t, r.Uint32(), "past the end")
	require.ErrorIs(t, r.Err(), ErrTruncated)
	first := r.Err()
	r.Fail(errors.New("later"))
	require.Equal(t, first, r.Err(), "the first error stays")
}

func TestCountRefusesMoreEntriesThanFit(t *testing.T) {
	b := binary.BigEndian.AppendUint32(nil, 1000)
	b = append(b, make([]byte, 30)...)
	r := New(b)
	require.Zero(t, r.Count(10))
	require.ErrorIs(t, r.Err(), ErrTruncated)
	r = New(append(binary.BigEndian.AppendUint32(nil, 3), make([]byte, 30)...))
	require.Equal(t, 3, r.Count(10))
	require.NoError(t, r.Err())
}

func FuzzReader(f *testing.F) {
	f.Add([]byte{0, 2, 'h', 'i', 0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		r := New(b)
		for r.Err() == nil && r.Len() > 0 {
			_ = r.String16()
			_ = r.Count(3)
			_ = r.Uint64()
		}
		require.GreaterOrEqual(t, r.Len(), 0)
	})
}
