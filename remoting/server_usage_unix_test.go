//go:build unix

package remoting

import (
	"syscall"
	"testing"
)

// usage is the process's CPU time (ns) and OS context switches so far.
type usage struct{ cpu, switches int64 }

// readUsage returns the process's usage so far.
func readUsage(b *testing.B) usage {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return usage{
		cpu:      ru.Utime.Nano() + ru.Stime.Nano(),
		switches: int64(ru.Nvcsw + ru.Nivcsw), //nolint:unconvert // int32 on some platforms
	}
}
