package message

import (
	"bytes"
	"compress/zlib"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCompressRoundTrip(t *testing.T) {
	body := bytes.Repeat([]byte("ferry message body "), 1000)
	for _, level := range []int{zlib.DefaultCompression, zlib.NoCompression, zlib.BestSpeed, DefaultCompressLevel, zlib.BestCompression, zlib.HuffmanOnly} {
		c, err := Compress(body, level)
		require.NoError(t, err)
		got, err := Decompress(c, 0)
		require.NoError(t, err)
		require.Equal(t, body, got)
	}
	c, err := Compress(nil, DefaultCompressLevel)
	require.NoError(t, err)
	got, err := Decompress(c, 10)
	require.NoError(t, err)
	require.Empty(t, got)
}

func TestCompressErrors(t *testing.T) {
	_, err := Compress([]byte("x"), 42)
	require.ErrorIs(t, err, ErrCompress)

	_, err = Decompress([]byte("not zlib at all"), 0)
	require.ErrorIs(t, err, ErrBadCompressed)
	_, err = Decompress(nil, 0)
	require.ErrorIs(t, err, ErrBadCompressed)

	c, err := Compress(bytes.Repeat([]byte("abc"), 1000), DefaultCompressLevel)
	require.NoError(t, err)
	_, err = Decompress(c[:len(c)-6], 0)
	require.ErrorIs(t, err, ErrBadCompressed, "truncated stream")
	bad := bytes.Clone(c)
	bad[len(bad)-1] ^= 1
	_, err = Decompress(bad, 0)
	require.ErrorIs(t, err, ErrBadCompressed, "checksum")
}

func TestDecompressBound(t *testing.T) {
	bomb, err := Compress(make([]byte, 1<<20), zlib.BestCompression)
	require.NoError(t, err)
	require.Less(t, len(bomb), 2048)
	_, err = Decompress(bomb, 1000)
	require.ErrorIs(t, err, ErrDecompressedTooLarge)
	_, err = Decompress(bomb, 1<<20-1)
	require.ErrorIs(t, err, ErrDecompressedTooLarge)
	got, err := Decompress(bomb, 1<<20)
	require.NoError(t, err, "exactly the bound is allowed")
	require.Len(t, got, 1<<20)

	big, err := Compress(make([]byte, DefaultMaxBodySize+1), zlib.BestSpeed)
	require.NoError(t, err)
	_, err = Decompress(big, 0)
	require.ErrorIs(t, err, ErrDecompressedTooLarge, "default bound")
}
