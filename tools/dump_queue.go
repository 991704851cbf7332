//go:build linux

package tools

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/ferrymq/ferry/consumequeue"
	"github.com/ferrymq/ferry/store"
)

// Kinds of consume-queue units in a dump (the JSON "kind" field).
const (
	unitMessage  = "message"
	unitHole     = "hole"
	unitPreBlank = "preBlank"
	unitInvalid  = "invalid"
	unitMissing  = "missing" // a row for a range of units no file holds
)

// dumpedUnit is one consume-queue unit in the output of dump consumequeue (stable
// JSON/YAML field names).
type dumpedUnit struct {
	QueueOffset    int64  `json:"queueOffset" yaml:"queueOffset"`
	PhysicalOffset int64  `json:"physicalOffset" yaml:"physicalOffset"`
	Size           int32  `json:"size" yaml:"size"`
	TagsCode       int64  `json:"tagsCode" yaml:"tagsCode"`
	Kind           string `json:"kind" yaml:"kind"`
	Problem        string `json:"problem,omitempty" yaml:"problem,omitempty"`
}

func newDumpConsumeQueueCommand(e *env, src *dumpSource) *cobra.Command {
	var (
		topic       string
		queue       int
		from, count int64
	)
	cmd := &cobra.Command{
		Use:   "consumequeue -t TOPIC -q QUEUE | --file PATH",
		Short: "Print the units of one consume queue",
		Long: "consumequeue prints the 20-byte units of one queue (consumequeue/TOPIC/QUEUE/ under\n" +
			"--data-dir, or the segment file --file names) from queue offset --from up to the first\n" +
			"all-zero unit, which ends the queue: each unit's queue offset, the physical offset and\n" +
			"size of its record, and its tags code. Kinds: message; hole (a message lost to\n" +
			"quarantined commit-log damage); preBlank (padding before a queue's first unit);\n" +
			"invalid (recovery would end the queue there); missing (no segment file holds them).",
		Args: cobra.NoArgs,
		Example: `  ferryctl dump consumequeue --data-dir /var/lib/ferry -t Orders -q 0
  ferryctl dump consumequeue --file /var/lib/ferry/consumequeue/Orders/0/00000000000000000000 -o json`,
		RunE: func(*cobra.Command, []string) (err error) {
			if from < 0 || count < 0 {
				return usageError("--from and --count must not be negative")
			}
			var files []cqFile
			if src.file != "" {
				if files, err = cqFileOf(src.file); err != nil {
					return err
				}
			} else {
				if topic == "" || queue < 0 {
					return usageError("-t/--topic and -q/--queue are required with --data-dir")
				}
				root, err := src.root()
				if err != nil {
					return err
				}
				if files, err = cqFiles(filepath.Join(root, store.ConsumeQueueDirName, topic, strconv.Itoa(queue))); err != nil {
					return err
				}
			}
			defer guardFaults(&err)()
			out := newListOut(e, "QUEUE OFFSET\tPHYSICAL OFFSET\tSIZE\tTAGS CODE\tKIND\tPROBLEM", func(w io.Writer, u dumpedUnit) {
				fmt.Fprintf(w, "%d\t%d\t%d\t%d\t%s\t%s\n", u.QueueOffset, u.PhysicalOffset, u.Size, u.TagsCode, u.Kind, u.Problem)
			})
			if err := walkQueue(files, from, count, out.add); err != nil {
				return err
			}
			return out.close()
		},
	}
	f := cmd.Flags()
	f.StringVarP(&topic, "topic", "t", "", "topic")
	f.IntVarP(&queue, "queue", "q", -1, "queue id")
	f.Int64Var(&from, "from", 0, "first queue offset to print")
	f.Int64Var(&count, "count", 0, "print at most this many units (0: all)")
	return cmd
}

// cqFile is one consume-queue segment file.
type cqFile struct {
	path  string
	first int64 // queue offset of its first unit
	units int64
}

func cqFileOf(path string) ([]cqFile, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	first, ok := consumequeue.ParseSegmentName(filepath.Base(path))
	if !ok {
		return nil, fmt.Errorf("%s: not a consume-queue segment name (the byte offset of its first unit as 20 digits)", path)
	}
	return []cqFile{{path, first, st.Size() / consumequeue.UnitSize}}, nil
}

// cqFiles lists the segment files of a queue directory, in offset order.
func cqFiles(dir string) ([]cqFile, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("no such consume queue: %w", err)
	}
	var files []cqFile
	for _, ent := range ents {
		first, ok := consumequeue.ParseSegmentName(ent.Name())
		if !ok || !ent.Type().IsRegular() {
			continue
		}
		info, err := ent.Info()
		if err != nil {
			return nil, err
		}
		files = append(files, cqFile{filepath.Join(dir, ent.Name()), first, info.Size() / consumequeue.UnitSize})
	}
	slices.SortFunc(files, func(a, b cqFile) int { return cmp.Compare(a.first, b.first) })
	return files, nil
}

// walkQueue calls fn for each unit of the queue from queue offset from, at most count
// (0: all), up to the first all-zero unit.
func walkQueue(files []cqFile, from, count int64, fn func(dumpedUnit) error) error {
	var (
		n        int64
		prev     consumequeue.Unit
		hasPrev  bool
		expected = int64(-1)
	)
	// put passes u on; false means stop.
	put := func(u dumpedUnit) (bool, error) {
		if u.QueueOffset < from {
			return true, nil
		}
		if err := fn(u); err != nil {
			return false, err
		}
		n++
		return count == 0 || n < count, nil
	}
	for _, f := range files {
		if f.first+f.units <= from {
			expected = f.first + f.units
			continue
		}
		if expected >= 0 && f.first > expected {
			lo := max(expected, from)
			if lo < f.first {
				d := dumpedUnit{QueueOffset: lo, Kind: unitMissing,
					Problem: fmt.Sprintf("no segment file holds queue offsets [%d, %d)", lo, f.first)}
				if ok, err := put(d); !ok || err != nil {
					return err
				}
			}
			hasPrev = false
		}
		expected = f.first + f.units
		data, unmap, err := mapReadOnly(f.path, true)
		if err != nil {
			return err
		}
		stop, err := func() (bool, error) {
			defer unmap()
			for i := max(from-f.first-1, 0); i < f.units; i++ { // from the unit before from: its predecessor
				u, err := consumequeue.DecodeUnit(data[i*consumequeue.UnitSize:])
				if err != nil {
					return true, err
				}
				if u.Zero() {
					return true, nil // the end of the queue
				}
				d := dumpedUnit{QueueOffset: f.first + i, PhysicalOffset: u.Offset, Size: u.Size, TagsCode: u.TagsCode, Kind: unitMessage}
				switch {
				case !u.Valid():
					d.Kind, d.Problem = unitInvalid, "negative physical offset or size not positive: recovery ends the queue here"
				case hasPrev && !u.Follows(prev):
					d.Kind, d.Problem = unitInvalid, "its record does not follow the previous unit's: recovery ends the queue here"
				case u.PreBlank():
					d.Kind = unitPreBlank
				case u.Hole():
					d.Kind = unitHole
				}
				prev, hasPrev = u, true
				if ok, err := put(d); !ok || err != nil {
					return true, err
				}
			}
			return false, nil
		}()
		if stop || err != nil {
			return err
		}
	}
	return nil
}
