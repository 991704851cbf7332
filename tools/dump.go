//go:build linux

package tools

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"
	"golang.org/x/sys/unix"

	"github.com/ferrymq/ferry/store"
)

// The dump commands read a store's files offline: they map each file read-only
// (PROT_READ, so a stray write would fault rather than change a byte), never open the
// store through its packages (whose Open recovers and writes) and never take the data
// directory's lock, so they are safe on the files of a running broker. What they print
// is what is on disk at the moment each page is read; a running broker may be writing
// the newest bytes meanwhile.

// dumpSource is where a dump command reads: the store root, or one file.
type dumpSource struct {
	dataDir string
	file    string
	cmd     *cobra.Command
}

func newDumpCommand(e *env) *cobra.Command {
	src := &dumpSource{}
	cmd := &cobra.Command{
		Use:   "dump",
		Short: "Read store files offline: commit log, consume queues, index, checkpoint",
		Long: "dump reads the files of a Ferry (or RocketMQ 4.x) store directly, read-only, without\n" +
			"opening the store (no recovery, no lock), so it is safe on a running broker's files.\n" +
			"Give the store root with --data-dir (default ./data) or one file with --file.",
		Example: `  ferryctl dump commitlog --data-dir /var/lib/ferry --from 0 --count 20
  ferryctl dump commitlog --data-dir /var/lib/ferry --verify
  ferryctl dump consumequeue --data-dir /var/lib/ferry -t Orders -q 0
  ferryctl dump index --data-dir /var/lib/ferry -t Orders -k order-42
  ferryctl dump checkpoint --data-dir /var/lib/ferry -o json`,
	}
	pf := cmd.PersistentFlags()
	pf.StringVar(&src.dataDir, "data-dir", "./data", "the store root (holding commitlog/, consumequeue/, index/, checkpoint)")
	pf.StringVar(&src.file, "file", "", "read this one file instead of the store under --data-dir")
	cmd.PersistentPreRunE = func(c *cobra.Command, args []string) error {
		if err := c.Root().PersistentPreRunE(c, args); err != nil {
			return err
		}
		src.cmd = c
		if src.file != "" && c.Flags().Changed("data-dir") {
			return usageError("give --data-dir or --file, not both")
		}
		return nil
	}
	cmd.AddCommand(newDumpCommitLogCommand(e, src), newDumpConsumeQueueCommand(e, src),
		newDumpIndexCommand(e, src), newDumpCheckpointCommand(e, src))
	return cmd
}

// root checks that the data directory is a store root and returns it.
func (s *dumpSource) root() (string, error) {
	st, err := os.Stat(s.dataDir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("no data directory %s (give the store root with --data-dir, or one file with --file)", s.dataDir)
	case err != nil:
		return "", err
	case !st.IsDir():
		return "", fmt.Errorf("%s is not a directory (give the store root with --data-dir, or one file with --file)", s.dataDir)
	}
	st, err = os.Stat(filepath.Join(s.dataDir, store.CommitLogDirName))
	if err != nil || !st.IsDir() {
		return "", fmt.Errorf("no %s directory under %s: not a store root (--data-dir names the directory holding commitlog/, consumequeue/ and index/)",
			store.CommitLogDirName, s.dataDir)
	}
	return s.dataDir, nil
}

// mapReadOnly maps the file at path read-only. random advises the kernel against
// read-ahead, for the sparse files (consume queues, index) a broker allocates as it
// writes: reading them in large folios behind its back could make it allocate blocks for
// holes. The returned function unmaps.
func mapReadOnly(path string, random bool) ([]byte, func(), error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer func() { _ = f.Close() }()
	st, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if st.IsDir() {
		return nil, nil, fmt.Errorf("%s is a directory, not a file", path)
	}
	if st.Size() == 0 {
		return nil, func() {}, nil
	}
	b, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, nil, fmt.Errorf("map %s: %w", path, err)
	}
	advice := unix.MADV_SEQUENTIAL
	if random {
		advice = unix.MADV_RANDOM
	}
	_ = unix.Madvise(b, advice) // advice only
	return b, func() { _ = unix.Munmap(b) }, nil
}

// guardFaults turns a memory fault while reading a mapped file (the file was truncated
// under the reader) into an error. Use as: defer guardFaults(&err)().
func guardFaults(err *error) func() {
	old := debug.SetPanicOnFault(true)
	return func() {
		debug.SetPanicOnFault(old)
		if r := recover(); r != nil {
			if _, ok := r.(interface{ Addr() uintptr }); !ok {
				panic(r)
			}
			*err = fmt.Errorf("a mapped file changed size while it was read (%v); run the dump again", r)
		}
	}
}

// listOut prints a list item by item, so a dump of a large file need not hold its rows in
// memory: the same JSON and YAML documents e.emit prints for a slice, or table rows.
type listOut[T any] struct {
	e   *env
	tw  *tabwriter.Writer
	row func(io.Writer, T)
	n   int
}

func newListOut[T any](e *env, header string, row func(io.Writer, T)) *listOut[T] {
	l := &listOut[T]{e: e, row: row}
	if e.output == "table" {
		l.tw = tabwriter.NewWriter(e.out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(l.tw, header)
	}
	return l
}

func (l *listOut[T]) add(v T) error {
	defer func() { l.n++ }()
	switch l.e.output {
	case "json":
		b, err := json.MarshalIndent(v, "  ", "  ")
		if err != nil {
			return fmt.Errorf("write json: %w", err)
		}
		sep := ",\n  "
		if l.n == 0 {
			sep = "[\n  "
		}
		_, err = io.WriteString(l.e.out, sep+string(b))
		return err
	case "yaml":
		b, err := yaml.Marshal([]T{v})
		if err != nil {
			return fmt.Errorf("write yaml: %w", err)
		}
		_, err = l.e.out.Write(b)
		return err
	default:
		l.row(l.tw, v)
		return nil
	}
}

func (l *listOut[T]) close() error {
	var err error
	switch {
	case l.e.output == "table":
		return l.tw.Flush()
	case l.n == 0:
		_, err = io.WriteString(l.e.out, "[]\n")
	case l.e.output == "json":
		_, err = io.WriteString(l.e.out, "\n]\n")
	}
	return err
}

// msTime formats a Unix-millisecond time as message query does (RFC 3339, UTC); "" for 0.
func msTime(ms int64) string {
	if ms == 0 {
		return ""
	}
	return time.UnixMilli(ms).UTC().Format(time.RFC3339Nano)
}

// printable replaces control characters, for table cells.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return '.'
		}
		return r
	}, s)
}
