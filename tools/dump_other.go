//go:build !linux

package tools

import (
	"errors"

	"github.com/spf13/cobra"
)

// newDumpCommand is the dump command on systems other than Linux, where the store
// packages (and so their file decoders) do not build.
func newDumpCommand(*env) *cobra.Command {
	return &cobra.Command{
		Use:   "dump",
		Short: "Read store files offline (Linux only)",
		RunE: func(*cobra.Command, []string) error {
			return errors.New("dump reads store files with the store's own decoders, which build on Linux only")
		},
	}
}
