//go:build linux

package tools_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/ferrymq/ferry/consumequeue"
	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/store"
)

// written is a message the test stored and expects the dumps to show.
type written struct {
	topic       string
	queueID     int32
	tags, uniq  string
	keys        []string
	body        string
	offset      int64 // physical
	size        int32
	queueOffset int64
}

// Index geometry of the test store, passed to dump index.
const (
	testIndexSlots   = 64
	testIndexEntries = 400
)

// writeStore writes n messages over two topics and two queues each into a real store in
// dir, through the store package, with 64 KiB commit-log segments (so the log rolls over
// and has fillers) and 8-unit consume-queue files. It returns the store, still open.
func writeStore(t *testing.T, dir string, n int) (*store.Store, []written) {
	t.Helper()
	o := store.DefaultOptions()
	o.Dir = dir
	o.SegmentSize = 64 << 10
	o.UnitsPerFile = 8
	o.IndexSlots, o.IndexEntries = testIndexSlots, testIndexEntries
	o.CheckpointInterval = 20 * time.Millisecond
	o.FlushInterval = 10 * time.Millisecond
	o.CleanInterval = time.Hour
	s, err := store.Open(o)
	require.NoError(t, err)
	s.Start()
	t.Cleanup(func() { _ = s.Shutdown(context.Background()) })
	out := make([]written, n)
	for i := range out {
		w := written{
			topic:   []string{"DumpA", "DumpB"}[i%2],
			queueID: int32(i / 2 % 2),
			tags:    []string{"created", "paid", "shipped"}[i%3],
			uniq:    fmt.Sprintf("C0A8000100002A9F%016X", i),
			keys:    []string{fmt.Sprintf("order-%d", i)},
			body:    fmt.Sprintf("body-%03d|%s", i, strings.Repeat("x", 1500+i*13)),
		}
		if i%5 == 0 {
			w.keys = append(w.keys, fmt.Sprintf("batch-%d", i/5))
		}
		props, err := message.EncodeProperties(map[string]string{
			message.PropertyTags: w.tags, message.PropertyKeys: strings.Join(w.keys, " "), message.PropertyUniqKey: w.uniq,
		})
		require.NoError(t, err)
		rec := message.Record{
			Topic: []byte(w.topic), QueueID: w.queueID, Body: []byte(w.body), Properties: props,
			BornTimestamp: time.Now().UnixMilli(), BornHost: netip.MustParseAddrPort("10.0.0.9:40000"),
		}
		res, err := s.PutMessage(&rec, false)
		require.NoError(t, err)
		w.offset, w.size, w.queueOffset = res.PhysicalOffset, res.Bytes, res.QueueOffset
		out[i] = w
	}
	return s, out
}

// dumpJSON runs ferryctl dump with args and -o json, requires exit 0 and decodes stdout.
func dumpJSON(t *testing.T, v any, args ...string) {
	t.Helper()
	out, errOut, code := run(t, "", append(append([]string{"dump"}, args...), "-o", "json")...)
	require.Equal(t, 0, code, "stderr: %s", errOut)
	require.NoError(t, json.Unmarshal([]byte(out), v), out)
}

// clEntry is dump commitlog's JSON for one entry.
type clEntry struct {
	Offset      int64    `json:"offset"`
	Size        int64    `json:"size"`
	Kind        string   `json:"kind"`
	Error       string   `json:"error"`
	Topic       string   `json:"topic"`
	QueueID     int32    `json:"queueId"`
	QueueOffset int64    `json:"queueOffset"`
	MsgID       string   `json:"msgId"`
	OffsetMsgID string   `json:"offsetMsgId"`
	Tags        string   `json:"tags"`
	Keys        []string `json:"keys"`
	StoreTime   string   `json:"storeTime"`
	BodySize    int      `json:"bodySize"`
	Body        string   `json:"body"`
}

func records(entries []clEntry) []clEntry {
	var out []clEntry
	for _, e := range entries {
		if e.Kind == "record" {
			out = append(out, e)
		}
	}
	return out
}

// hashFiles fingerprints every file under dir.
func hashFiles(t *testing.T, dir string) map[string][32]byte {
	t.Helper()
	out := map[string][32]byte{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		out[p] = sha256.Sum256(b)
		return err
	}))
	return out
}

func TestDumpStore(t *testing.T) {
	const n = 60
	dir := t.TempDir()
	s, msgs := writeStore(t, dir, n)

	// A running store's commit log reads offline: no lock is taken.
	var live []clEntry
	dumpJSON(t, &live, "commitlog", "--data-dir", dir, "--body", "none")
	require.Len(t, records(live), n)

	require.NoError(t, s.Shutdown(context.Background()))
	before := hashFiles(t, dir)

	// commitlog: exactly the records written, in order, with fillers between segments.
	var entries []clEntry
	dumpJSON(t, &entries, "commitlog", "--data-dir", dir, "--max-body", "0")
	recs := records(entries)
	require.Len(t, recs, n)
	fillers := 0
	for _, e := range entries {
		require.NotEqual(t, "damaged", e.Kind, e.Error)
		if e.Kind == "filler" {
			fillers++
		}
	}
	require.Positive(t, fillers, "the log rolled over")
	for i, m := range msgs {
		r := recs[i]
		require.Equal(t, m.offset, r.Offset, "record %d", i)
		require.Equal(t, int64(m.size), r.Size)
		require.Equal(t, m.topic, r.Topic)
		require.Equal(t, m.queueID, r.QueueID)
		require.Equal(t, m.queueOffset, r.QueueOffset)
		require.Equal(t, m.uniq, r.MsgID)
		require.NotEmpty(t, r.OffsetMsgID)
		require.Equal(t, m.tags, r.Tags)
		require.Equal(t, m.keys, r.Keys)
		require.Equal(t, len(m.body), r.BodySize)
		require.Equal(t, m.body, r.Body)
		require.NotEmpty(t, r.StoreTime)
	}

	// --from and --count select records; --max-body cuts bodies; --file reads one segment.
	dumpJSON(t, &entries, "commitlog", "--data-dir", dir, "--from", strconv.FormatInt(msgs[10].offset, 10), "--count", "3", "--body", "hex", "--max-body", "4")
	require.Len(t, entries, 3)
	for i, e := range entries {
		require.Equal(t, msgs[10+i].offset, e.Offset)
		require.Equal(t, fmt.Sprintf("%x…", msgs[10+i].body[:4]), e.Body)
	}
	first := filepath.Join(dir, "commitlog", "00000000000000000000")
	dumpJSON(t, &entries, "commitlog", "--file", first, "--body", "none")
	require.Equal(t, "filler", entries[len(entries)-1].Kind)
	require.Less(t, len(records(entries)), n)
	out, errOut, code := run(t, "", "dump", "commitlog", "--data-dir", dir, "--count", "2", "-o", "yaml")
	require.Equal(t, 0, code, errOut)
	var y []map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(out), &y))
	require.Len(t, y, 2)
	require.Equal(t, msgs[1].uniq, y[1]["msgId"])
	out, errOut, code = run(t, "", "dump", "commitlog", "--data-dir", dir, "--count", "2")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "MSG ID")
	require.Contains(t, out, msgs[1].uniq)

	// consumequeue: each queue's units point at its records, in queue-offset order.
	for _, topic := range []string{"DumpA", "DumpB"} {
		for q := int32(0); q < 2; q++ {
			var want []written
			for _, m := range msgs {
				if m.topic == topic && m.queueID == q {
					want = append(want, m)
				}
			}
			var units []struct {
				QueueOffset    int64  `json:"queueOffset"`
				PhysicalOffset int64  `json:"physicalOffset"`
				Size           int32  `json:"size"`
				TagsCode       int64  `json:"tagsCode"`
				Kind           string `json:"kind"`
			}
			dumpJSON(t, &units, "consumequeue", "--data-dir", dir, "-t", topic, "-q", strconv.Itoa(int(q)))
			require.Len(t, units, len(want), "%s/%d spans several 8-unit files", topic, q)
			for i, u := range units {
				require.Equal(t, "message", u.Kind)
				require.Equal(t, want[i].queueOffset, u.QueueOffset)
				require.Equal(t, int64(i), u.QueueOffset)
				require.Equal(t, want[i].offset, u.PhysicalOffset)
				require.Equal(t, want[i].size, u.Size)
				require.Equal(t, message.TagsHash(want[i].tags), u.TagsCode)
			}
			if topic == "DumpA" && q == 0 {
				second := filepath.Join(dir, "consumequeue", topic, "0", fmt.Sprintf("%020d", 8*consumequeue.UnitSize))
				dumpJSON(t, &units, "consumequeue", "--file", second)
				require.Equal(t, int64(8), units[0].QueueOffset)
				require.Equal(t, want[8].offset, units[0].PhysicalOffset)
			}
		}
	}

	// index: a key and a unique key lead to their records.
	type idxFile struct {
		File         string `json:"file"`
		IndexCount   int32  `json:"indexCount"`
		HeaderAgrees bool   `json:"headerAgrees"`
		Entries      []struct {
			Number    int32 `json:"number"`
			KeyHash   int32 `json:"keyHash"`
			PhyOffset int64 `json:"phyOffset"`
			InChain   *bool `json:"inChain"`
			Record    *struct {
				Topic   string `json:"topic"`
				MsgID   string `json:"msgId"`
				Matches bool   `json:"matches"`
			} `json:"record"`
		} `json:"entries"`
	}
	geometry := []string{"--slots", strconv.Itoa(testIndexSlots), "--entries", strconv.Itoa(testIndexEntries)}
	var files []idxFile
	dumpJSON(t, &files, append([]string{"index", "--data-dir", dir}, geometry...)...)
	require.NotEmpty(t, files)
	total := 0
	for _, f := range files {
		require.True(t, f.HeaderAgrees)
		require.Len(t, f.Entries, int(f.IndexCount-1))
		total += len(f.Entries)
	}
	keys := n // one unique key each
	for _, m := range msgs {
		keys += len(m.keys)
	}
	require.Equal(t, keys, total)
	for _, lookup := range []struct{ topic, key string }{{msgs[25].topic, "order-25"}, {msgs[25].topic, msgs[25].uniq}, {msgs[20].topic, "batch-4"}} {
		dumpJSON(t, &files, append([]string{"index", "--data-dir", dir, "-t", lookup.topic, "-k", lookup.key}, geometry...)...)
		found := false
		for _, f := range files {
			for _, e := range f.Entries {
				require.NotNil(t, e.Record)
				if e.Record.Matches {
					require.False(t, found, "one record carries %s", lookup.key)
					found = true
					require.True(t, *e.InChain)
					wantMsg := msgs[25]
					if lookup.key == "batch-4" {
						wantMsg = msgs[20]
					}
					require.Equal(t, wantMsg.offset, e.PhyOffset)
					require.Equal(t, wantMsg.uniq, e.Record.MsgID)
				}
			}
		}
		require.True(t, found, "key %s found", lookup.key)
	}
	_, errOut, code = run(t, "", "dump", "index", "--data-dir", dir)
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "--slots and --entries")

	// checkpoint: valid after a clean shutdown.
	var cp struct {
		Valid            bool   `json:"valid"`
		FerryFields      bool   `json:"ferryFields"`
		FlushedOffset    int64  `json:"flushedOffset"`
		DispatchedOffset int64  `json:"dispatchedOffset"`
		StoredCRC        uint32 `json:"storedCrc"`
		ComputedCRC      uint32 `json:"computedCrc"`
		AbortFile        *bool  `json:"abortFile"`
	}
	dumpJSON(t, &cp, "checkpoint", "--data-dir", dir)
	end := msgs[n-1].offset + int64(msgs[n-1].size)
	require.True(t, cp.Valid)
	require.True(t, cp.FerryFields)
	require.Equal(t, end, cp.FlushedOffset)
	require.Equal(t, end, cp.DispatchedOffset)
	require.Equal(t, cp.StoredCRC, cp.ComputedCRC)
	require.NotNil(t, cp.AbortFile)
	require.False(t, *cp.AbortFile)
	out, errOut, code = run(t, "", "dump", "checkpoint", "--file", filepath.Join(dir, "checkpoint"))
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "dispatchedOffset")

	// --verify on the intact log.
	type report struct {
		Records int64 `json:"records"`
		Fillers int64 `json:"fillers"`
		End     int64 `json:"end"`
		Damaged []struct {
			From, To int64
			Error    string
		} `json:"damaged"`
	}
	var rep report
	dumpJSON(t, &rep, "commitlog", "--data-dir", dir, "--verify")
	require.Equal(t, int64(n), rep.Records)
	require.Equal(t, int64(fillers), rep.Fillers)
	require.Empty(t, rep.Damaged)
	require.Equal(t, before, hashFiles(t, dir), "the dumps wrote nothing")

	// A flipped body byte: --verify names the record's offset and exits 1.
	bad := msgs[37]
	seg := filepath.Join(dir, "commitlog", fmt.Sprintf("%020d", bad.offset/(64<<10)*(64<<10)))
	data, err := os.ReadFile(seg)
	require.NoError(t, err)
	at := bytes.Index(data, []byte(bad.body[:9]))
	require.Positive(t, at)
	data[at+5] ^= 0x20
	require.NoError(t, os.WriteFile(seg, data, 0o644))
	out, errOut, code = run(t, "", "dump", "commitlog", "--data-dir", dir, "--verify", "-o", "json")
	require.Equal(t, 1, code, errOut)
	require.Equal(t, 1, strings.Count(strings.TrimSpace(errOut), "\n")+1, "one line: %q", errOut)
	require.Contains(t, errOut, fmt.Sprintf("offset %d", bad.offset))
	require.Contains(t, errOut, "CRC")
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	require.Len(t, rep.Damaged, 1)
	require.Equal(t, bad.offset, rep.Damaged[0].From)
	require.Equal(t, bad.offset+int64(bad.size), rep.Damaged[0].To, "the next record is found")
	require.Equal(t, int64(n-1), rep.Records)
	_, errOut, code = run(t, "", "dump", "commitlog", "--data-dir", dir, "--verify")
	require.Equal(t, 1, code, errOut)
	// Without --verify the body CRC is not checked: the listing still shows every record.
	dumpJSON(t, &entries, "commitlog", "--data-dir", dir, "--body", "none")
	require.Len(t, records(entries), n)

	// The damaged record quarantined, as recovery would: recognised, not an error.
	binary.BigEndian.PutUint32(data[bad.offset%(64<<10):], uint32(bad.size))
	binary.BigEndian.PutUint32(data[bad.offset%(64<<10)+4:], message.MagicQuarantine)
	require.NoError(t, os.WriteFile(seg, data, 0o644))
	var q struct {
		Records     int64 `json:"records"`
		Quarantined []struct {
			From int64 `json:"from"`
			Size int64 `json:"size"`
		} `json:"quarantined"`
		Damaged []any `json:"damaged"`
	}
	dumpJSON(t, &q, "commitlog", "--data-dir", dir, "--verify")
	require.Equal(t, int64(n-1), q.Records)
	require.Empty(t, q.Damaged)
	require.Len(t, q.Quarantined, 1)
	require.Equal(t, bad.offset, q.Quarantined[0].From)
	require.Equal(t, int64(bad.size), q.Quarantined[0].Size)
}

// TestDumpConsumeQueueKinds reads a hand-made queue file: pre-blank units, messages, a
// hole, a unit that points backwards (invalid), and the zero unit that ends the queue.
func TestDumpConsumeQueueKinds(t *testing.T) {
	units := [][3]int64{ // physical offset, size, tags code
		{0, math.MaxInt32, 0}, {0, math.MaxInt32, 0},
		{100, 200, 7}, {350, 1, 0}, {400, 150, -3}, {10, 100, 0},
		{0, 0, 0}, {900, 100, 0}, // after the end: not read
	}
	b := make([]byte, 10*consumequeue.UnitSize)
	for i, u := range units {
		p := b[i*consumequeue.UnitSize:]
		binary.BigEndian.PutUint64(p, uint64(u[0]))
		binary.BigEndian.PutUint32(p[8:], uint32(u[1]))
		binary.BigEndian.PutUint64(p[12:], uint64(u[2]))
	}
	file := filepath.Join(t.TempDir(), fmt.Sprintf("%020d", 20*consumequeue.UnitSize))
	require.NoError(t, os.WriteFile(file, b, 0o644))
	var got []struct {
		QueueOffset    int64  `json:"queueOffset"`
		PhysicalOffset int64  `json:"physicalOffset"`
		Size           int32  `json:"size"`
		TagsCode       int64  `json:"tagsCode"`
		Kind           string `json:"kind"`
		Problem        string `json:"problem"`
	}
	dumpJSON(t, &got, "consumequeue", "--file", file)
	require.Len(t, got, 6)
	for i, kind := range []string{"preBlank", "preBlank", "message", "hole", "message", "invalid"} {
		require.Equal(t, kind, got[i].Kind, "unit %d", i)
		require.Equal(t, int64(20+i), got[i].QueueOffset)
		require.Equal(t, units[i][0], got[i].PhysicalOffset)
	}
	require.Equal(t, int64(-3), got[4].TagsCode)
	require.Contains(t, got[5].Problem, "recovery ends the queue here")
	dumpJSON(t, &got, "consumequeue", "--file", file, "--from", "23", "--count", "2")
	require.Len(t, got, 2)
	require.Equal(t, "hole", got[0].Kind)
}

func TestDumpBadInput(t *testing.T) {
	oneLine := func(t *testing.T, errOut string) {
		t.Helper()
		require.Equal(t, 1, strings.Count(strings.TrimSpace(errOut), "\n")+1, "one line: %q", errOut)
		require.NotContains(t, errOut, "goroutine", "never a stack trace")
	}
	notStore := t.TempDir()
	for _, sub := range []string{"commitlog", "consumequeue", "index", "checkpoint"} {
		args := []string{"dump", sub, "--data-dir", notStore}
		if sub == "consumequeue" {
			args = append(args, "-t", "T", "-q", "0")
		}
		_, errOut, code := run(t, "", args...)
		require.Equal(t, 1, code, "%s: %s", sub, errOut)
		oneLine(t, errOut)
		require.Contains(t, errOut, "no commitlog directory under "+notStore)
	}
	_, errOut, code := run(t, "", "dump", "commitlog", "--data-dir", filepath.Join(notStore, "nope"))
	require.Equal(t, 1, code, errOut)
	oneLine(t, errOut)
	require.Contains(t, errOut, "no data directory")

	missing := filepath.Join(notStore, "commitlog", "00000000000000000000")
	for _, sub := range []string{"commitlog", "consumequeue", "index", "checkpoint"} {
		_, errOut, code = run(t, "", "dump", sub, "--file", missing)
		require.Equal(t, 1, code, "%s: %s", sub, errOut)
		oneLine(t, errOut)
		require.Contains(t, errOut, "no such file")
	}
	odd := filepath.Join(notStore, "segment")
	require.NoError(t, os.WriteFile(odd, make([]byte, 4096), 0o644))
	_, errOut, code = run(t, "", "dump", "commitlog", "--file", odd)
	require.Equal(t, 1, code, errOut)
	require.Contains(t, errOut, "not a commit-log segment name")

	_, errOut, code = run(t, "", "dump", "commitlog", "--file", odd, "--data-dir", notStore)
	require.Equal(t, 2, code, errOut)
	_, errOut, code = run(t, "", "dump", "commitlog", "--data-dir", notStore, "--body", "rot13")
	require.Equal(t, 2, code, errOut)
	_, errOut, code = run(t, "", "dump", "consumequeue", "--data-dir", notStore)
	require.Equal(t, 2, code, errOut)
	require.Contains(t, errOut, "--topic")
	_, errOut, code = run(t, "", "dump", "index", "--data-dir", notStore, "-k", "k")
	require.Equal(t, 2, code, errOut)
}
