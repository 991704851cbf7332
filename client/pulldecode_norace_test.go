//go:build !race

package client

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Turning a pull body into messages costs each message only its properties map (two
// allocations: the map and its one group) and each pull the messages' array, the slice of
// pointers to them and the string their properties and offset ids share (pulldecode.go):
// the push and the pull consumers decode alike.
// (Not built with the race detector, which allocates on its own.)
func TestPullDecodeAllocs(t *testing.T) {
	const n = 32
	body, sub, q := decodeFixture(t, n)
	push := testing.AllocsPerRun(100, func() {
		if msgs, err := q.decode(body); err != nil || len(msgs) != n {
			t.Fatal(err, len(msgs))
		}
	})
	pull := testing.AllocsPerRun(100, func() {
		if msgs, err := decodeMessages(body, "b", sub, &q.pc.c.log); err != nil || len(msgs) != n {
			t.Fatal(err, len(msgs))
		}
	})
	require.LessOrEqual(t, push, 2.0*n+3, "push consumer: allocations per pull of %d messages", n)
	require.LessOrEqual(t, pull, 2.0*n+3, "pull consumer: allocations per pull of %d messages", n)
}
