package conf

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseDelayLevels(t *testing.T) {
	got, err := ParseDelayLevels(DefaultDelayLevels)
	require.NoError(t, err)
	require.Len(t, got, 18)
	require.Equal(t, time.Second, got[0])
	require.Equal(t, 10*time.Second, got[2]) // level 3: first retry delay
	require.Equal(t, 2*time.Hour, got[17])

	got, err = ParseDelayLevels("  100ms\t2s\n3m 4h 1d ")
	require.NoError(t, err)
	require.Equal(t, []time.Duration{
		100 * time.Millisecond, 2 * time.Second, 3 * time.Minute, 4 * time.Hour, 24 * time.Hour,
	}, got)

	for _, bad := range []string{
		"", "   ", "1", "s", "1x", "0s", "1.5s", "-1s", "1S", "5s 10", "1 s",
		"99999999999999999999s", "9999999999d",
	} {
		_, err := ParseDelayLevels(bad)
		require.Error(t, err, "%q", bad)
	}
}

func TestParseByteSize(t *testing.T) {
	for in, want := range map[string]int64{
		"0":          0,
		"4194304":    4 << 20,
		"512B":       512,
		"64KiB":      64 << 10,
		"64kb":       64 << 10,
		"16MiB":      16 << 20,
		"16 MB":      16 << 20,
		"4m":         4 << 20,
		"1GiB":       1 << 30,
		" 2gb ":      2 << 30,
		"1TiB":       1 << 40,
		"8388607TiB": 8388607 << 40,
	} {
		got, err := ParseByteSize(in)
		require.NoError(t, err, "%q", in)
		require.Equal(t, want, got, "%q", in)
	}
	for _, bad := range []string{"", "MiB", "-1", "1.5GiB", "1XB", "1 2", "8388608TiB", "99999999999999999999"} {
		_, err := ParseByteSize(bad)
		require.Error(t, err, "%q", bad)
	}
}

func TestFormatByteSize(t *testing.T) {
	for n, want := range map[int64]string{
		0: "0B", 1500: "1500B", 64 * KiB: "64KiB", 16 * MiB: "16MiB", GiB: "1GiB", 3 * TiB: "3TiB",
		GiB + 1: "1073741825B",
	} {
		require.Equal(t, want, FormatByteSize(n))
		back, err := ParseByteSize(want)
		require.NoError(t, err)
		require.Equal(t, n, back)
	}
}

func TestParseDeleteWhen(t *testing.T) {
	got, err := ParseDeleteWhen("04")
	require.NoError(t, err)
	require.Equal(t, []int{4}, got)
	got, err = ParseDeleteWhen("04;16; 23;0")
	require.NoError(t, err)
	require.Equal(t, []int{4, 16, 23, 0}, got)
	for _, bad := range []string{"", "24", "-1", "4;", "a", "004"} {
		_, err := ParseDeleteWhen(bad)
		require.Error(t, err, "%q", bad)
	}
}

func TestSplitList(t *testing.T) {
	require.Equal(t, []string{"a:1", "b:2", "c:3"}, splitList(" a:1; b:2 ,c:3;;"))
	require.Empty(t, splitList(" ; "))
}
