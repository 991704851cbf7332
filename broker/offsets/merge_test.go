package offsets

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/internal/mmap"
)

// Merge puts the master's offsets over the slave's: its keys win, the slave's other keys
// stay, unusable entries are ignored, and only real changes count.
func TestMerge(t *testing.T) {
	s := openStore(t, testOptions(mmap.NewMemFS(), "/store"))
	s.Commit("g", "T", 0, 5)
	s.Commit("g", "T", 2, 11) // committed on the slave only
	n := s.Merge(map[Key]int64{
		{Group: "g", Topic: "T", QueueID: 0}:  7,
		{Group: "g", Topic: "T", QueueID: 1}:  3,
		{Group: "g", Topic: "T", QueueID: -1}: 1,
		{Group: "g", Topic: "T", QueueID: 3}:  -1,
		{Group: "", Topic: "T", QueueID: 0}:   1,
	})
	require.Equal(t, 2, n)
	require.Equal(t, map[Key]int64{
		{Group: "g", Topic: "T", QueueID: 0}: 7,
		{Group: "g", Topic: "T", QueueID: 1}: 3,
		{Group: "g", Topic: "T", QueueID: 2}: 11,
	}, s.Snapshot())
	require.Zero(t, s.Merge(map[Key]int64{{Group: "g", Topic: "T", QueueID: 0}: 7}))
}
