//go:build !unix

package remoting

import "testing"

// usage is the process's CPU time (ns) and OS context switches so far.
type usage struct{ cpu, switches int64 }

// readUsage returns the zero usage: this platform does not tell it.
func readUsage(*testing.B) usage { return usage{} }
