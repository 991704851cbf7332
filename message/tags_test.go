package message

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Expected values are Java's String.hashCode, computed by hand over UTF-16
// code units (h = 31*h + c, int32 wrap-around).
func TestJavaHash(t *testing.T) {
	cases := []struct {
		s    string
		want int32
	}{
		{"", 0},
		{"a", 97},
		{"hello", 99162322},
		{"TagA", 2598919},
		{"polygenelubricants", -2147483648}, // famous Integer.MIN_VALUE hash
		{"The quick brown fox jumps over the lazy dog", -609428141},
		{"中文", 646394}, // 31*0x4E2D + 0x6587
		{"标签-é", 823746803},
		{"😀", 1772899}, // U+1F600 = D83D DE00: 31*0xD83D + 0xDE00
		{"a😀b", 57849694},
		{"𝄞 clef", 1424431552}, // U+1D11E outside the BMP
	}
	for _, tc := range cases {
		require.Equal(t, tc.want, JavaHash(tc.s), tc.s)
		require.Equal(t, tc.want, JavaHashBytes([]byte(tc.s)), tc.s)
		require.Equal(t, int64(tc.want), TagsHash(tc.s), tc.s)
		require.Equal(t, int64(tc.want), TagsHashBytes([]byte(tc.s)), tc.s)
	}
	// Sign extension: a negative hash stays negative as int64.
	require.Equal(t, int64(-2147483648), TagsHash("polygenelubricants"))
	// Invalid UTF-8 hashes as U+FFFD per bad byte.
	require.Equal(t, JavaHash("\uFFFD\uFFFD"), JavaHash("\xff\xfe"))
}

func TestTagsHashDoesNotAllocate(t *testing.T) {
	b := []byte("标签TagA😀")
	require.Zero(t, testing.AllocsPerRun(100, func() {
		_ = TagsHashBytes(b)
		_ = TagsHash("TagA")
	}))
}
