//go:build linux

package tools

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/spf13/cobra"

	"github.com/ferrymq/ferry/index"
	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/store"
)

// dumpedIndexFile is one index file in the output of dump index (stable JSON/YAML field
// names).
type dumpedIndexFile struct {
	File           string `json:"file" yaml:"file"`
	BeginTimestamp int64  `json:"beginTimestamp" yaml:"beginTimestamp"`
	EndTimestamp   int64  `json:"endTimestamp" yaml:"endTimestamp"`
	BeginPhyOffset int64  `json:"beginPhyOffset" yaml:"beginPhyOffset"`
	EndPhyOffset   int64  `json:"endPhyOffset" yaml:"endPhyOffset"`
	HashSlotCount  int32  `json:"hashSlotCount" yaml:"hashSlotCount"`
	IndexCount     int32  `json:"indexCount" yaml:"indexCount"`
	// HeaderAgrees is false when the header does not describe the entries (a broker
	// rebuilds it from them when it opens the file).
	HeaderAgrees bool               `json:"headerAgrees" yaml:"headerAgrees"`
	Entries      []dumpedIndexEntry `json:"entries" yaml:"entries"`
	// More counts the entries not printed (--count).
	More int32 `json:"more,omitempty" yaml:"more,omitempty"`
}

// dumpedIndexEntry is one index entry.
type dumpedIndexEntry struct {
	Number    int32  `json:"number" yaml:"number"`
	KeyHash   int32  `json:"keyHash" yaml:"keyHash"`
	PhyOffset int64  `json:"phyOffset" yaml:"phyOffset"`
	TimeDiff  int32  `json:"timeDiff" yaml:"timeDiff"`
	StoreTime string `json:"storeTime" yaml:"storeTime"`
	PrevIndex int32  `json:"prevIndex" yaml:"prevIndex"`
	// With --key: whether a query reaches the entry from its slot, and the record at
	// PhyOffset (with --data-dir).
	InChain *bool              `json:"inChain,omitempty" yaml:"inChain,omitempty"`
	Record  *dumpedIndexRecord `json:"record,omitempty" yaml:"record,omitempty"`
}

// dumpedIndexRecord is the commit-log record an entry found by --key points at.
type dumpedIndexRecord struct {
	Topic       string   `json:"topic,omitempty" yaml:"topic,omitempty"`
	QueueID     int32    `json:"queueId" yaml:"queueId"`
	QueueOffset int64    `json:"queueOffset" yaml:"queueOffset"`
	MsgID       string   `json:"msgId,omitempty" yaml:"msgId,omitempty"`
	Keys        []string `json:"keys,omitempty" yaml:"keys,omitempty"`
	// Matches is true when the record is in the topic and carries the key (as a KEYS word
	// or its UNIQ_KEY): false is a hash collision or a stale entry.
	Matches bool   `json:"matches" yaml:"matches"`
	Error   string `json:"error,omitempty" yaml:"error,omitempty"`
}

func newDumpIndexCommand(e *env, src *dumpSource) *cobra.Command {
	var (
		topic, key     string
		slots, entries int
		count          int
	)
	cmd := &cobra.Command{
		Use:   "index [-t TOPIC -k KEY] [flags]",
		Short: "Print index file headers and entries, or the entries of one key",
		Long: "index prints each index file (index/ under --data-dir, or --file): its header, whether\n" +
			"the header agrees with the entries, and its entries (at most --count per file).\n\n" +
			"With -t TOPIC -k KEY it prints only the entries whose hash is that of TOPIC#KEY (a\n" +
			"message key or a unique key), whether a query reaches each from its hash slot, and,\n" +
			"with --data-dir, the record each points at and whether that record carries the key.",
		Args: cobra.NoArgs,
		Example: `  ferryctl dump index --data-dir /var/lib/ferry --count 10
  ferryctl dump index --data-dir /var/lib/ferry -t Orders -k order-42 -o json`,
		RunE: func(*cobra.Command, []string) (err error) {
			if (key == "") != (topic == "") {
				return usageError("-k/--key and -t/--topic go together")
			}
			if count < 0 {
				return usageError("--count must not be negative")
			}
			var paths []string
			var log *clReader
			if src.file != "" {
				if _, err := os.Stat(src.file); err != nil {
					return err
				}
				paths = []string{src.file}
			} else {
				root, err := src.root()
				if err != nil {
					return err
				}
				if paths, err = indexFiles(filepath.Join(root, store.IndexDirName)); err != nil {
					return err
				}
				if key != "" {
					segs, err := src.commitLogSegments()
					if err != nil {
						return err
					}
					log = &clReader{segs: segs}
					defer log.close()
				}
			}
			defer guardFaults(&err)()
			var out []dumpedIndexFile
			for _, p := range paths {
				f, err := dumpIndexFile(p, slots, entries, count, topic, key, log)
				if err != nil {
					return err
				}
				out = append(out, f)
			}
			if out == nil {
				out = []dumpedIndexFile{}
			}
			return e.emit(out, func(w io.Writer) { indexTable(w, out, key != "") })
		},
	}
	f := cmd.Flags()
	f.StringVarP(&topic, "topic", "t", "", "topic of --key")
	f.StringVarP(&key, "key", "k", "", "list only the entries of this message key or unique key")
	f.IntVar(&count, "count", 1000, "print at most this many entries per file (0: all; --key prints every match)")
	f.IntVar(&slots, "slots", index.DefaultSlotNum, "hash slots per file (RocketMQ maxHashSlotNum)")
	f.IntVar(&entries, "entries", index.DefaultMaxEntries, "entries per file (RocketMQ maxIndexNum)")
	return cmd
}

// indexFiles lists the index files of dir, oldest first.
func indexFiles(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("no index: %w", err)
	}
	var out []string
	for _, ent := range ents {
		if _, ok := index.ParseFileName(ent.Name()); ok && ent.Type().IsRegular() {
			out = append(out, filepath.Join(dir, ent.Name()))
		}
	}
	slices.Sort(out) // yyyyMMddHHmmssSSS sorts by time
	return out, nil
}

func dumpIndexFile(path string, slots, entries, count int, topic, key string, log *clReader) (dumpedIndexFile, error) {
	data, unmap, err := mapReadOnly(path, true)
	if err != nil {
		return dumpedIndexFile{}, err
	}
	defer unmap()
	v, err := index.NewView(data, slots, entries)
	if err != nil {
		return dumpedIndexFile{}, fmt.Errorf("%s: %w (RocketMQ's maxHashSlotNum and maxIndexNum go in --slots and --entries)", path, err)
	}
	h := v.Header()
	out := dumpedIndexFile{
		File: filepath.Base(path), BeginTimestamp: h.BeginTimestamp, EndTimestamp: h.EndTimestamp,
		BeginPhyOffset: h.BeginPhyOffset, EndPhyOffset: h.EndPhyOffset, HashSlotCount: h.HashSlotCount,
		IndexCount: h.IndexCount, HeaderAgrees: v.HeaderAgrees(), Entries: []dumpedIndexEntry{},
	}
	entryOf := func(n int32, e index.Entry) dumpedIndexEntry {
		return dumpedIndexEntry{Number: n, KeyHash: e.KeyHash, PhyOffset: e.PhyOffset, TimeDiff: e.TimeDiff,
			StoreTime: msTime(e.Time(h.BeginTimestamp)), PrevIndex: e.PrevIndex}
	}
	last := v.Count()
	if key == "" {
		for n := int32(1); n < last; n++ {
			if count > 0 && len(out.Entries) >= count {
				out.More = last - n
				break
			}
			out.Entries = append(out.Entries, entryOf(n, v.Entry(n)))
		}
		return out, nil
	}
	hash := index.KeyHash(index.BuildKey(topic, key))
	inChain := map[int32]bool{}
	v.Chain(hash, func(n int32, _ index.Entry) bool { inChain[n] = true; return true })
	for n := int32(1); n < last; n++ {
		e := v.Entry(n)
		if e.KeyHash != hash {
			continue
		}
		d := entryOf(n, e)
		reached := inChain[n]
		d.InChain = &reached
		if log != nil {
			d.Record = log.keyRecord(e.PhyOffset, topic, key)
		}
		out.Entries = append(out.Entries, d)
	}
	return out, nil
}

func indexTable(w io.Writer, files []dumpedIndexFile, byKey bool) {
	for i, f := range files {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "file %s: %d entries, %d slots used, offsets %d–%d, stored %s – %s, header agrees: %v\n",
			f.File, max(f.IndexCount-1, 0), f.HashSlotCount, f.BeginPhyOffset, f.EndPhyOffset,
			msTime(f.BeginTimestamp), msTime(f.EndTimestamp), f.HeaderAgrees)
		if byKey {
			fmt.Fprintln(w, "NUMBER\tKEY HASH\tPHY OFFSET\tSTORED\tPREV\tIN CHAIN\tRECORD")
		} else {
			fmt.Fprintln(w, "NUMBER\tKEY HASH\tPHY OFFSET\tSTORED\tPREV")
		}
		for _, e := range f.Entries {
			fmt.Fprintf(w, "%d\t%d\t%d\t%s\t%d", e.Number, e.KeyHash, e.PhyOffset, e.StoreTime, e.PrevIndex)
			if byKey {
				rec := "-"
				if r := e.Record; r != nil && r.Error != "" {
					rec = r.Error
				} else if r != nil {
					rec = fmt.Sprintf("%s queue %d offset %d, %s, key matches %v", r.Topic, r.QueueID, r.QueueOffset, r.MsgID, r.Matches)
				}
				fmt.Fprintf(w, "\t%v\t%s", e.InChain != nil && *e.InChain, rec)
			}
			fmt.Fprintln(w)
		}
		if f.More > 0 {
			fmt.Fprintf(w, "… %d more entries (--count)\n", f.More)
		}
	}
}

// clReader reads single records from the commit log, mapping segments as needed.
type clReader struct {
	segs   []clSegment
	mapped map[int64][]byte
	unmaps []func()
}

func (r *clReader) close() {
	for _, u := range r.unmaps {
		u()
	}
}

// keyRecord describes the record at phy and whether it carries topic#key.
func (r *clReader) keyRecord(phy int64, topic, key string) *dumpedIndexRecord {
	rec, err := r.read(phy)
	if err != nil {
		return &dumpedIndexRecord{Error: err.Error()}
	}
	d := &dumpedIndexRecord{Topic: string(rec.Topic), QueueID: rec.QueueID, QueueOffset: rec.QueueOffset, MsgID: rec.MsgID()}
	if k, ok := rec.Property(message.PropertyKeys); ok {
		d.Keys = message.SplitKeys(string(k))
	}
	uniq, _ := rec.Property(message.PropertyUniqKey)
	d.Matches = d.Topic == topic && (string(uniq) == key || slices.Contains(d.Keys, key))
	return d
}

// read decodes the record at phy (body CRC included).
func (r *clReader) read(phy int64) (*message.Record, error) {
	i := slices.IndexFunc(r.segs, func(s clSegment) bool { return s.start <= phy && phy < s.start+s.size })
	if i < 0 {
		return nil, fmt.Errorf("no commit-log segment holds offset %d", phy)
	}
	s := r.segs[i]
	data, ok := r.mapped[s.start]
	if !ok {
		var unmap func()
		var err error
		if data, unmap, err = mapReadOnly(s.path, true); err != nil {
			return nil, err
		}
		if r.mapped == nil {
			r.mapped = map[int64][]byte{}
		}
		r.mapped[s.start] = data
		r.unmaps = append(r.unmaps, unmap)
	}
	if phy-s.start >= int64(len(data)) {
		return nil, fmt.Errorf("offset %d is past the end of segment %s", phy, filepath.Base(s.path))
	}
	rec, _, err := message.DecodeRecord(data[phy-s.start:])
	if err == nil && rec.PhysicalOffset != phy {
		err = fmt.Errorf("the record at offset %d says PHYSICALOFFSET %d", phy, rec.PhysicalOffset)
	}
	if err == nil {
		err = rec.VerifyBodyCRC()
	}
	if err != nil {
		return nil, fmt.Errorf("offset %d: %w", phy, err)
	}
	return &rec, nil
}
