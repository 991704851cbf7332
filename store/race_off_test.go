//go:build !race

package store

// raceEnabled reports that the race detector is on.
const raceEnabled = false
