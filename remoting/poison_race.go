//go:build race

package remoting

// poisonFrames: race-detector builds (the test runs) overwrite recycled frames.
const poisonFrames = true
