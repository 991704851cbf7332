//go:build race

package interop

// raceDetector reports whether the tests run with the race detector.
const raceDetector = true
