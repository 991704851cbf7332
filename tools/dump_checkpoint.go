//go:build linux

package tools

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/ferrymq/ferry/store"
)

// dumpedCheckpoint is the output of dump checkpoint (stable JSON/YAML field names).
type dumpedCheckpoint struct {
	File string `json:"file" yaml:"file"`
	// RocketMQ 4.x fields: store times (Unix ms).
	PhysicMsgTimestamp int64 `json:"physicMsgTimestamp" yaml:"physicMsgTimestamp"`
	LogicsMsgTimestamp int64 `json:"logicsMsgTimestamp" yaml:"logicsMsgTimestamp"`
	IndexMsgTimestamp  int64 `json:"indexMsgTimestamp" yaml:"indexMsgTimestamp"`
	// RocketMQ 5.x fields, absent from a 24-byte file.
	MasterFlushedOffset *int64 `json:"masterFlushedOffset,omitempty" yaml:"masterFlushedOffset,omitempty"`
	ConfirmPhyOffset    *int64 `json:"confirmPhyOffset,omitempty" yaml:"confirmPhyOffset,omitempty"`
	// Ferry's fields, as stored, present when FerryFields is true.
	FerryFields      bool   `json:"ferryFields" yaml:"ferryFields"`
	FlushedOffset    int64  `json:"flushedOffset" yaml:"flushedOffset"`
	DispatchedOffset int64  `json:"dispatchedOffset" yaml:"dispatchedOffset"`
	StoredCRC        uint32 `json:"storedCrc" yaml:"storedCrc"`
	ComputedCRC      uint32 `json:"computedCrc" yaml:"computedCrc"`
	// Valid is true when recovery trusts Ferry's offsets; Problem says why not.
	Valid   bool   `json:"valid" yaml:"valid"`
	Problem string `json:"problem,omitempty" yaml:"problem,omitempty"`
	// AbortFile reports (with --data-dir) the abort file: the store is open, or did not
	// stop cleanly.
	AbortFile *bool `json:"abortFile,omitempty" yaml:"abortFile,omitempty"`
}

func newDumpCheckpointCommand(e *env, src *dumpSource) *cobra.Command {
	return &cobra.Command{
		Use:   "checkpoint [flags]",
		Short: "Print the checkpoint's fields, RocketMQ's and Ferry's, valid or not",
		Long: "checkpoint prints every field of the checkpoint file: RocketMQ's timestamps and 5.x\n" +
			"offsets, Ferry's flushed and dispatched offsets with their CRC, whether recovery would\n" +
			"trust them (valid) and why not, and, with --data-dir, whether the abort file exists\n" +
			"(the store is running, or did not stop cleanly).",
		Args: cobra.NoArgs,
		Example: `  ferryctl dump checkpoint --data-dir /var/lib/ferry
  ferryctl dump checkpoint --file /backup/store/checkpoint -o json`,
		RunE: func(*cobra.Command, []string) error {
			path := src.file
			var abort *bool
			if path == "" {
				root, err := src.root()
				if err != nil {
					return err
				}
				path = filepath.Join(root, store.CheckpointFileName)
				_, err = os.Stat(filepath.Join(root, store.AbortFileName))
				exists := err == nil
				abort = &exists
			}
			b, err := os.ReadFile(path) // 4 KiB, replaced atomically: never torn
			if err != nil {
				return err
			}
			c, err := store.DecodeCheckpoint(b)
			if err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			out := dumpedCheckpoint{
				File: path, PhysicMsgTimestamp: c.PhysicMsgTimestamp, LogicsMsgTimestamp: c.LogicsMsgTimestamp,
				IndexMsgTimestamp: c.IndexMsgTimestamp, FerryFields: c.HasFerryFields, FlushedOffset: c.FlushedOffset,
				DispatchedOffset: c.DispatchedOffset, StoredCRC: c.StoredCRC, ComputedCRC: c.ComputedCRC,
				Valid: c.Valid, Problem: c.Problem, AbortFile: abort,
			}
			if c.HasRocketMQ5 {
				out.MasterFlushedOffset, out.ConfirmPhyOffset = &c.MasterFlushedOffset, &c.ConfirmPhyOffset
			}
			return e.emit(out, func(w io.Writer) { checkpointTable(w, out) })
		},
	}
}

func checkpointTable(w io.Writer, c dumpedCheckpoint) {
	fmt.Fprintln(w, "FIELD\tVALUE")
	fmt.Fprintf(w, "file\t%s\n", c.File)
	fmt.Fprintf(w, "physicMsgTimestamp\t%s\n", msField(c.PhysicMsgTimestamp))
	fmt.Fprintf(w, "logicsMsgTimestamp\t%s\n", msField(c.LogicsMsgTimestamp))
	fmt.Fprintf(w, "indexMsgTimestamp\t%s\n", msField(c.IndexMsgTimestamp))
	if c.MasterFlushedOffset != nil {
		fmt.Fprintf(w, "masterFlushedOffset\t%d\n", *c.MasterFlushedOffset)
		fmt.Fprintf(w, "confirmPhyOffset\t%d\n", *c.ConfirmPhyOffset)
	}
	if !c.FerryFields {
		fmt.Fprintf(w, "ferry fields\tabsent (a RocketMQ checkpoint: recovery scans the commit log)\n")
	} else {
		fmt.Fprintf(w, "flushedOffset\t%d\n", c.FlushedOffset)
		fmt.Fprintf(w, "dispatchedOffset\t%d\n", c.DispatchedOffset)
		fmt.Fprintf(w, "crc\tstored %#08x, computed %#08x\n", c.StoredCRC, c.ComputedCRC)
		valid := "yes"
		if !c.Valid {
			valid = "no: " + c.Problem
		}
		fmt.Fprintf(w, "valid\t%s\n", valid)
	}
	if c.AbortFile != nil {
		state := "absent (the store stopped cleanly)"
		if *c.AbortFile {
			state = "present (the store is running, or did not stop cleanly)"
		}
		fmt.Fprintf(w, "abort file\t%s\n", state)
	}
}

// msField shows a Unix-millisecond field with its time.
func msField(ms int64) string {
	if ms == 0 {
		return "0"
	}
	return fmt.Sprintf("%d (%s)", ms, msTime(ms))
}
