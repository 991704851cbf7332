//go:build linux

package tools

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ferrymq/ferry/commitlog"
	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/store"
)

// Kinds of commit-log entries in a dump (the JSON "kind" field).
const (
	kindRecord      = "record"
	kindFiller      = "filler"
	kindQuarantined = "quarantined"
	kindDamaged     = "damaged"
)

// dumpedEntry is one position of the commit log in the output of dump commitlog: a
// record, the blank filler that ends a segment, a range recovery quarantined, or a
// damaged range (stable JSON/YAML field names).
type dumpedEntry struct {
	Offset int64  `json:"offset" yaml:"offset"`
	Size   int64  `json:"size" yaml:"size"`
	Kind   string `json:"kind" yaml:"kind"`
	// Error says what is wrong with a damaged range.
	Error         string `json:"error,omitempty" yaml:"error,omitempty"`
	*dumpedRecord `yaml:",inline"`
}

// dumpedRecord is the record of a dumpedEntry of kind "record"; its field names are
// those of message query/print where they mean the same.
type dumpedRecord struct {
	Topic            string            `json:"topic" yaml:"topic"`
	QueueID          int32             `json:"queueId" yaml:"queueId"`
	QueueOffset      int64             `json:"queueOffset" yaml:"queueOffset"`
	MsgID            string            `json:"msgId" yaml:"msgId"`
	OffsetMsgID      string            `json:"offsetMsgId" yaml:"offsetMsgId"`
	Tags             string            `json:"tags,omitempty" yaml:"tags,omitempty"`
	Keys             []string          `json:"keys,omitempty" yaml:"keys,omitempty"`
	Properties       map[string]string `json:"properties,omitempty" yaml:"properties,omitempty"`
	BornTime         string            `json:"bornTime" yaml:"bornTime"`
	StoreTime        string            `json:"storeTime" yaml:"storeTime"`
	BornHost         string            `json:"bornHost" yaml:"bornHost"`
	StoreHost        string            `json:"storeHost" yaml:"storeHost"`
	SysFlag          int32             `json:"sysFlag" yaml:"sysFlag"`
	Flag             int32             `json:"flag" yaml:"flag"`
	ReconsumeTimes   int32             `json:"reconsumeTimes" yaml:"reconsumeTimes"`
	PreparedTxOffset int64             `json:"preparedTxOffset" yaml:"preparedTxOffset"`
	BodyCRC          uint32            `json:"bodyCrc" yaml:"bodyCrc"`
	BodySize         int               `json:"bodySize" yaml:"bodySize"`
	Body             string            `json:"body,omitempty" yaml:"body,omitempty"`
	BodyEncoding     string            `json:"bodyEncoding,omitempty" yaml:"bodyEncoding,omitempty"`
}

// verifyReport is the output of dump commitlog --verify (stable JSON/YAML field names).
type verifyReport struct {
	Segments    int           `json:"segments" yaml:"segments"`
	From        int64         `json:"from" yaml:"from"`
	End         int64         `json:"end" yaml:"end"`
	Records     int64         `json:"records" yaml:"records"`
	Fillers     int64         `json:"fillers" yaml:"fillers"`
	Quarantined []dumpedRange `json:"quarantined" yaml:"quarantined"`
	Damaged     []dumpedRange `json:"damaged" yaml:"damaged"`
}

// dumpedRange is a quarantined or damaged range of the commit log.
type dumpedRange struct {
	From  int64  `json:"from" yaml:"from"`
	To    int64  `json:"to" yaml:"to"`
	Size  int64  `json:"size" yaml:"size"`
	Error string `json:"error,omitempty" yaml:"error,omitempty"`
}

func newDumpCommitLogCommand(e *env, src *dumpSource) *cobra.Command {
	var (
		from   int64
		count  int64
		verify bool
		body   bodyOptions
	)
	cmd := &cobra.Command{
		Use:   "commitlog [flags]",
		Short: "Print commit-log records, or check them all as recovery does (--verify)",
		Long: "commitlog prints the records of the commit log (every segment under --data-dir, or the\n" +
			"segment --file names; its name is its start offset) from the physical offset --from,\n" +
			"at most --count records (0: all), with the fillers that end segments, the ranges\n" +
			"recovery quarantined and any damaged ranges among them.\n\n" +
			"--verify checks every record as recovery does — magic, sizes, PHYSICALOFFSET equal to\n" +
			"its position, body CRC — and the segment layout, and prints a summary with each\n" +
			"damaged range; it exits 1 when there is one. Without --verify body CRCs are not checked.",
		Args: cobra.NoArgs,
		Example: `  ferryctl dump commitlog --data-dir /var/lib/ferry --count 10
  ferryctl dump commitlog --file /var/lib/ferry/commitlog/00000000000000000000 --from 4096 --body hex
  ferryctl dump commitlog --data-dir /var/lib/ferry --verify -o json`,
		RunE: func(*cobra.Command, []string) (err error) {
			switch body.encoding {
			case "text", "hex", "base64", "none":
			default:
				return usageError("--body must be text, hex, base64 or none, not %q", body.encoding)
			}
			if from < 0 || count < 0 || body.max < 0 {
				return usageError("--from, --count and --max-body must not be negative")
			}
			segs, err := src.commitLogSegments()
			if err != nil {
				return err
			}
			defer guardFaults(&err)()
			w := &clWalker{segs: segs, from: from, count: count, checkCRC: verify}
			if verify {
				return w.verify(e)
			}
			out := newListOut(e, "OFFSET\tSIZE\tTOPIC\tQUEUE\tQUEUE OFFSET\tSTORE TIME\tSYSFLAG\tMSG ID\tTAGS\tKEYS\tBODY", commitLogRow)
			if err := w.walk(func(d dumpedEntry, rec *message.Record) error {
				if rec != nil {
					d.dumpedRecord = recordOf(rec, body)
				}
				return out.add(d)
			}); err != nil {
				return err
			}
			return out.close()
		},
	}
	f := cmd.Flags()
	f.Int64Var(&from, "from", 0, "physical offset to start at (the first record at or after it)")
	f.Int64Var(&count, "count", 0, "print at most this many records (0: all)")
	f.BoolVar(&verify, "verify", false, "check every record (body CRC included) and report damaged ranges; exit 1 if any")
	f.StringVar(&body.encoding, "body", "text", "body as text, hex, base64 or none (text falls back to base64 for binary)")
	f.IntVar(&body.max, "max-body", 64, "show at most this many body bytes (0: all)")
	return cmd
}

func commitLogRow(w io.Writer, d dumpedEntry) {
	if r := d.dumpedRecord; r != nil {
		fmt.Fprintf(w, "%d\t%d\t%s\t%d\t%d\t%s\t%#x\t%s\t%s\t%s\t%s\n", d.Offset, d.Size, r.Topic, r.QueueID,
			r.QueueOffset, r.StoreTime, r.SysFlag, r.MsgID, printable(r.Tags),
			printable(strings.Join(r.Keys, ",")), printable(r.Body))
		return
	}
	fmt.Fprintf(w, "%d\t%d\t<%s>\t\t\t\t\t\t\t\t%s\n", d.Offset, d.Size, d.Kind, d.Error)
}

// recordOf is the dump of a decoded record.
func recordOf(r *message.Record, body bodyOptions) *dumpedRecord {
	d := &dumpedRecord{
		Topic: string(r.Topic), QueueID: r.QueueID, QueueOffset: r.QueueOffset, MsgID: r.MsgID(), OffsetMsgID: r.OffsetMsgID(),
		BornTime: msTime(r.BornTimestamp), StoreTime: msTime(r.StoreTimestamp),
		BornHost: r.BornHost.String(), StoreHost: r.StoreHost.String(),
		SysFlag: r.SysFlag, Flag: r.Flag, ReconsumeTimes: r.ReconsumeTimes, PreparedTxOffset: r.PreparedTxOffset,
		BodyCRC: uint32(r.BodyCRC), BodySize: len(r.Body),
	}
	if len(r.Properties) > 0 {
		d.Properties = message.ParseProperties(r.Properties)
		d.Tags = d.Properties[message.PropertyTags]
		if k := d.Properties[message.PropertyKeys]; k != "" {
			d.Keys = message.SplitKeys(k)
		}
	}
	d.Body, d.BodyEncoding = body.render(r.Body)
	return d
}

// clSegment is one commit-log segment file.
type clSegment struct {
	path  string
	start int64
	size  int64
}

// commitLogSegments lists the segments to read, in offset order.
func (s *dumpSource) commitLogSegments() ([]clSegment, error) {
	if s.file != "" {
		st, err := os.Stat(s.file)
		if err != nil {
			return nil, err
		}
		start, ok := commitlog.ParseSegmentName(filepath.Base(s.file))
		if !ok {
			return nil, fmt.Errorf("%s: not a commit-log segment name (its start offset as 20 digits)", s.file)
		}
		return []clSegment{{s.file, start, st.Size()}}, nil
	}
	root, err := s.root()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(root, store.CommitLogDirName)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var segs []clSegment
	for _, ent := range ents {
		start, ok := commitlog.ParseSegmentName(ent.Name())
		if !ok || !ent.Type().IsRegular() {
			continue
		}
		info, err := ent.Info()
		if err != nil {
			return nil, err
		}
		segs = append(segs, clSegment{filepath.Join(dir, ent.Name()), start, info.Size()})
	}
	slices.SortFunc(segs, func(a, b clSegment) int { return cmp.Compare(a.start, b.start) })
	return segs, nil
}

// clWalker walks commit-log segments from an offset.
type clWalker struct {
	segs     []clSegment
	from     int64
	count    int64 // records; 0 = all
	checkCRC bool  // check body CRCs
}

// walk calls fn for every entry from w.from on, in log order: the records, fillers and
// quarantined ranges of each segment, and damaged ranges — inside a segment (as
// commitlog.ScanSegment finds them), a segment shorter than the others, a missing
// segment, and a segment whose data ends early although a later one holds records.
// rec is the record of a "record" entry, valid during the call.
func (w *clWalker) walk(fn func(d dumpedEntry, rec *message.Record) error) error {
	var segSize int64
	for _, s := range w.segs {
		segSize = max(segSize, s.size)
	}
	var (
		records  int64
		next     = int64(-1) // where the previous segment ends (-1 before the first)
		openFrom = int64(-1) // where an earlier segment's data ended early, -1 if none
		openTo   int64
	)
	// emit passes d on unless it lies before w.from (a record starting before it, or a
	// range ending at or before it); false means stop (an error, or --count reached).
	emit := func(d dumpedEntry, rec *message.Record) (bool, error) {
		if d.Offset+d.Size <= w.from || d.Kind == kindRecord && d.Offset < w.from {
			return true, nil
		}
		if err := fn(d, rec); err != nil {
			return false, err
		}
		if d.Kind == kindRecord {
			records++
		}
		return w.count == 0 || records < w.count, nil
	}
	for i, s := range w.segs {
		if s.start+s.size <= w.from && i < len(w.segs)-1 {
			next = s.start + segSize
			continue
		}
		if next >= 0 && s.start != next {
			lo, hi := min(next, s.start), max(next, s.start)
			msg := fmt.Sprintf("no segment file holds [%d, %d)", lo, hi)
			if s.start < next {
				msg = fmt.Sprintf("segment %s overlaps the previous one by %d bytes", filepath.Base(s.path), hi-lo)
			}
			if ok, err := emit(dumpedEntry{Offset: lo, Size: hi - lo, Kind: kindDamaged, Error: msg}, nil); !ok || err != nil {
				return err
			}
		}
		next = s.start + segSize
		data, unmap, err := mapReadOnly(s.path, false)
		if err != nil {
			return err
		}
		var (
			ferr    error
			stopped bool
		)
		end, _ := commitlog.ScanSegment(data, s.start, w.checkCRC, func(ev commitlog.ScanEvent) bool {
			d := dumpedEntry{Offset: ev.Offset, Size: ev.Size}
			switch {
			case ev.Record != nil:
				d.Kind = kindRecord
				if openFrom >= 0 {
					// An earlier segment's data ended early, yet records follow.
					gap := dumpedEntry{Offset: openFrom, Size: openTo - openFrom, Kind: kindDamaged,
						Error: "zero bytes up to the end of the segment, where a record or the filler should be, and later segments hold records"}
					openFrom = -1
					if ok, err := emit(gap, nil); !ok || err != nil {
						ferr, stopped = err, true
						return false
					}
				}
			case ev.Filler:
				d.Kind = kindFiller
			case ev.Quarantined:
				d.Kind = kindQuarantined
			default:
				// The offset is in the entry: keep only what is wrong.
				d.Kind = kindDamaged
				d.Error = strings.TrimPrefix(ev.Err.Error(), fmt.Sprintf("%v at %d: ", commitlog.ErrCorrupt, ev.Offset))
			}
			ok, err := emit(d, ev.Record)
			ferr, stopped = err, !ok || err != nil
			return !stopped
		})
		unmap()
		if ferr != nil || stopped {
			return ferr
		}
		if s.size < segSize && i < len(w.segs)-1 {
			d := dumpedEntry{Offset: s.start + s.size, Size: segSize - s.size, Kind: kindDamaged,
				Error: fmt.Sprintf("segment %s is %d bytes, the others %d", filepath.Base(s.path), s.size, segSize)}
			if ok, err := emit(d, nil); !ok || err != nil {
				return err
			}
		} else if end < s.start+s.size && openFrom < 0 {
			openFrom, openTo = end, s.start+s.size
		}
	}
	return nil
}

// verify walks the log checking body CRCs and reports what it found; damage is an error.
func (w *clWalker) verify(e *env) error {
	rep := verifyReport{From: w.from, Quarantined: []dumpedRange{}, Damaged: []dumpedRange{}}
	for _, s := range w.segs {
		if s.start+s.size > w.from {
			rep.Segments++
		}
	}
	err := w.walk(func(d dumpedEntry, _ *message.Record) error {
		switch d.Kind {
		case kindRecord:
			rep.Records++
		case kindFiller:
			rep.Fillers++
		case kindQuarantined:
			rep.Quarantined = append(rep.Quarantined, dumpedRange{d.Offset, d.Offset + d.Size, d.Size, ""})
		case kindDamaged:
			rep.Damaged = append(rep.Damaged, dumpedRange{d.Offset, d.Offset + d.Size, d.Size, d.Error})
		}
		rep.End = max(rep.End, d.Offset+d.Size)
		return nil
	})
	if err != nil {
		return err
	}
	if err := e.emit(rep, func(tw io.Writer) {
		if len(rep.Quarantined)+len(rep.Damaged) > 0 {
			fmt.Fprintln(tw, "FROM\tTO\tSIZE\tSTATE\tERROR")
		}
		for _, r := range rep.Quarantined {
			fmt.Fprintf(tw, "%d\t%d\t%d\tquarantined\t\n", r.From, r.To, r.Size)
		}
		for _, r := range rep.Damaged {
			fmt.Fprintf(tw, "%d\t%d\t%d\tdamaged\t%s\n", r.From, r.To, r.Size, r.Error)
		}
		fmt.Fprintf(tw, "%d segments, %d records, %d fillers, %d quarantined and %d damaged ranges, data up to offset %d\n",
			rep.Segments, rep.Records, rep.Fillers, len(rep.Quarantined), len(rep.Damaged), rep.End)
	}); err != nil {
		return err
	}
	if n := len(rep.Damaged); n > 0 {
		var bytes int64
		for _, r := range rep.Damaged {
			bytes += r.Size
		}
		first := rep.Damaged[0]
		return fmt.Errorf("commit log damaged: %d range(s), %d bytes; the first at offset %d (%d bytes): %s",
			n, bytes, first.From, first.Size, first.Error)
	}
	return nil
}
