//go:build race

package acl

// raceEnabled reports that the race detector is on (sync.Pool then drops items at random,
// so allocation counts are meaningless; make test runs the allocation tests without it).
const raceEnabled = true
