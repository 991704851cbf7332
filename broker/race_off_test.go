//go:build !race

package broker

// raceEnabled reports that the race detector is on.
const raceEnabled = false
