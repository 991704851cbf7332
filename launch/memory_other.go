//go:build !linux

package launch

// physicalMemory is not known on this system.
func physicalMemory() (uint64, error) { return 0, errMemoryUnknown }
