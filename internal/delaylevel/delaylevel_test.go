package delaylevel

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParse(t *testing.T) {
	got, err := Parse("  250ms\t3s 2m 1h 2d ")
	require.NoError(t, err)
	require.Equal(t, []time.Duration{250 * time.Millisecond, 3 * time.Second, 2 * time.Minute, time.Hour, 48 * time.Hour}, got)
	for _, bad := range []string{"", "   ", "1x", "0s", "-1s", "s", "1.5s", "1", "10S", "366d",
		"99999999999999999999999s", "5s 10", strings.Repeat("1s ", MaxLevels+1)} {
		_, err := Parse(bad)
		require.Error(t, err, "%q", bad)
	}
}
