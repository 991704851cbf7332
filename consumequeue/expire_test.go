package consumequeue

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestExpire(t *testing.T) {
	for _, c := range bothFS(t) {
		t.Run(c.name, func(t *testing.T) {
			s := openStore(t, testOpts(c.fs, c.root, 4))
			q := mustQueue(t, s, "T", 0)
			appendN(t, q, 0, 14) // segments at 0, 4, 8, 12
			dir := filepath.Join(c.root, "T", "0")

			got, err := q.Expire(6)
			require.NoError(t, err)
			require.Equal(t, int64(6), got)
			require.Equal(t, int64(6), q.MinOffset())
			_, err = q.Get(5)
			require.ErrorIs(t, err, ErrOffsetOutOfRange, "an expired unit is not readable")
			units := readAll(t, q)
			require.Len(t, units, 8)
			require.Equal(t, unitFor(6), units[0])
			names, err := c.fs.ReadDir(dir)
			require.NoError(t, err)
			require.Equal(t, []string{segmentName(4), segmentName(8), segmentName(12)}, names,
				"the segment wholly below the minimum is deleted")

			got, err = q.Expire(3)
			require.NoError(t, err)
			require.Equal(t, int64(6), got, "the minimum never moves back")

			got, err = q.Expire(100)
			require.NoError(t, err)
			require.Equal(t, int64(14), got, "clamped to the max offset")
			require.Empty(t, readAll(t, q))
			names, err = c.fs.ReadDir(dir)
			require.NoError(t, err)
			require.Equal(t, []string{segmentName(12)}, names, "the last segment stays")

			require.NoError(t, q.Append(14, unitFor(14)), "appends go on after an expiry")
			require.Equal(t, []Unit{unitFor(14)}, readAll(t, q))
		})
	}
}
