package failover

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/internal/mmap"
)

func TestIdentityRoundTripAndRefusals(t *testing.T) {
	dir := t.TempDir()
	fsys := mmap.OSFS{}
	id, err := loadIdentity(fsys, dir, "broker-a")
	require.NoError(t, err)
	require.Zero(t, id, "no file yet: no id")

	require.NoError(t, storeIdentity(fsys, dir, "broker-a", 3))
	id, err = loadIdentity(fsys, dir, "broker-a")
	require.NoError(t, err)
	require.Equal(t, int64(3), id)

	_, err = loadIdentity(fsys, dir, "broker-b")
	require.ErrorIs(t, err, ErrBadIdentity, "another group's id")

	path := filepath.Join(dir, identityName)
	b, err := fsys.ReadFile(path)
	require.NoError(t, err)
	b[7] ^= 1
	require.NoError(t, fsys.WriteFileAtomic(path, b))
	_, err = loadIdentity(fsys, dir, "broker-a")
	require.ErrorIs(t, err, ErrBadIdentity, "a flipped bit")
}

func TestDecodeIdentityRefusesBadFields(t *testing.T) {
	good := encodeIdentity(identity{id: 7, group: "g"})
	v, err := decodeIdentity(good)
	require.NoError(t, err)
	require.Equal(t, identity{id: 7, group: "g"}, v)
	for name, b := range map[string][]byte{
		"empty":     nil,
		"magic":     append([]byte("XBID"), good[4:]...),
		"version":   append(append([]byte("FBID"), 2), good[5:]...),
		"short":     good[:len(good)-1],
		"long":      append(append([]byte(nil), good...), 0),
		"id zero":   encodeIdentity(identity{id: 0, group: "g"}),
		"id < zero": encodeIdentity(identity{id: -4, group: "g"}),
	} {
		_, err := decodeIdentity(b)
		require.ErrorIs(t, err, ErrBadIdentity, name)
	}
}

func FuzzDecodeIdentity(f *testing.F) {
	f.Add(encodeIdentity(identity{id: 1, group: "broker-a"}))
	f.Add(encodeIdentity(identity{id: 1 << 40, group: ""}))
	f.Add([]byte("FBID"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := decodeIdentity(b)
		if err != nil {
			require.ErrorIs(t, err, ErrBadIdentity)
			return
		}
		require.Positive(t, v.id)
		require.Equal(t, b, encodeIdentity(v), "a decoded file re-encodes to itself")
	})
}
