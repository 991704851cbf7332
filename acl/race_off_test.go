//go:build !race

package acl

// raceEnabled reports that the race detector is on.
const raceEnabled = false
