//go:build !race

package remoting

// poisonFrames: production builds recycle frames as they are.
const poisonFrames = false
