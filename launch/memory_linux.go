package launch

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// physicalMemory is the machine's total RAM in bytes (sysinfo(2)).
func physicalMemory() (uint64, error) {
	var si unix.Sysinfo_t
	if err := unix.Sysinfo(&si); err != nil {
		return 0, fmt.Errorf("%w: sysinfo: %w", errMemoryUnknown, err)
	}
	return uint64(si.Totalram) * uint64(si.Unit), nil
}
