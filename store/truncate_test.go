package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/commitlog"
	"github.com/ferrymq/ferry/internal/mmap"
	"github.com/ferrymq/ferry/internal/testkit"
	"github.com/ferrymq/ferry/message"
)

// truncMessage is the i-th message of a truncation test: three queues of CrashTopic, a
// KEYS word and a UNIQ_KEY per message, and long tags so that a few hundred messages fill
// several test segments.
func truncMessage(prefix string, i int) testMessage {
	m := crashMessage(fmt.Sprintf("%s%05d", prefix, i), int32(i%3))
	m.tags = strings.Repeat("t", 400)
	return m
}

// putAll stores n messages with prefix and returns their append results.
func putAll(t *testing.T, s *Store, prefix string, n int) []commitlog.AppendResult {
	t.Helper()
	out := make([]commitlog.AppendResult, n)
	for i := range n {
		out[i] = put(t, s, truncMessage(prefix, i), false)
	}
	waitDispatched(t, s)
	return out
}

// requireServes asserts that s holds exactly the messages want (unique keys) in its
// consume queues, that each is found by its KEYS word, and that none of gone is, by queue
// or by key.
func requireServes(t *testing.T, s *Store, want, gone []string) {
	t.Helper()
	present := presentUniqKeys(t, s)
	require.Len(t, present, len(want))
	for _, k := range want {
		require.True(t, present[k], "%s is served", k)
	}
	require.Equal(t, len(want), checkQueuesConsistent(t, s))
	for _, k := range gone {
		require.False(t, present[k], "%s was truncated", k)
		for _, uniq := range []bool{true, false} {
			key := k
			if !uniq {
				key = "key-" + k
			}
			qr, err := s.QueryByKey("CrashTopic", key, uniq, 4, 0, 1<<62)
			require.NoError(t, err)
			require.Empty(t, qr.Records, "a key query finds no truncated %s", key)
			qr.Release()
		}
	}
	for _, k := range want[max(0, len(want)-20):] {
		qr, err := s.QueryByKey("CrashTopic", "key-"+k, false, 4, 0, 1<<62)
		require.NoError(t, err)
		require.Len(t, qr.Records, 1, "key of %s", k)
		qr.Release()
	}
}

// names returns the unique keys of messages prefix[from:to].
func names(prefix string, from, to int) []string {
	out := make([]string, 0, to-from)
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprintf("%s%05d", prefix, i))
	}
	return out
}

// A store truncated at a record boundary in its middle serves only what was before it:
// the commit log ends there, queues hold the earlier messages only, key queries find no
// later one. New messages land at the cut with the queue offsets that follow, and stay
// readable after a clean restart and after a real crash (SIGKILL) of a process writing
// more.
func TestTruncateServesNothingPastTheOffset(t *testing.T) {
	dir := t.TempDir()
	o := crashOptions(dir)
	s, err := Open(o)
	require.NoError(t, err)
	s.Start()
	res := putAll(t, s, "P", 300)
	require.NoError(t, s.Shutdown(context.Background()))

	cut := res[200].PhysicalOffset
	require.NoError(t, Truncate(o, cut))

	s, err = Open(o)
	require.NoError(t, err)
	s.Start()
	require.Equal(t, cut, s.CommitLog().MaxOffset())
	requireServes(t, s, names("P", 0, 200), names("P", 200, 300))
	for q := range int32(3) {
		maxOff := int64(200+2-int(q)) / 3
		require.Equal(t, maxOff, s.MaxOffset("CrashTopic", q), "queue %d", q)
		// A consumer that had pulled past the cut finds nothing there.
		r, err := s.GetMessages("CrashTopic", q, maxOff, 32, 1<<20, nil)
		require.NoError(t, err)
		require.Equal(t, OffsetOverflowOne, r.Status)
		r.Release()
		r, err = s.GetMessages("CrashTopic", q, maxOff+10, 32, 1<<20, nil)
		require.NoError(t, err)
		require.Equal(t, OffsetOverflowBadly, r.Status)
		r.Release()
	}
	// New messages go on from the cut, with the queue offsets after the kept ones.
	more := putAll(t, s, "N", 30)
	require.Equal(t, cut, more[0].PhysicalOffset)
	require.Equal(t, res[200].QueueOffset, more[200%3].QueueOffset, "queue %d continues", 200%3)
	require.NoError(t, s.Shutdown(context.Background()))

	s, err = Open(o)
	require.NoError(t, err)
	requireServes(t, s, append(names("P", 0, 200), names("N", 0, 30)...), names("P", 200, 300))
	require.NoError(t, s.Shutdown(context.Background()))

	// A process appends more and is killed.
	child := testkit.StartChild(t, "crash", dir, "K")
	var acked []string
	for range 50 {
		line := child.Line(t, time.Minute)
		require.True(t, strings.HasPrefix(line, "ACK "), "child said %q", line)
		acked = append(acked, strings.Fields(line)[1])
	}
	child.Kill(t)
	s, err = Open(o)
	require.NoError(t, err)
	present := presentUniqKeys(t, s)
	for _, k := range acked {
		require.True(t, present[k], "acknowledged %s after the truncation kept", k)
	}
	for _, k := range names("P", 200, 300) {
		require.False(t, present[k], "%s stays truncated", k)
	}
	checkQueuesConsistent(t, s)
	require.NoError(t, s.Shutdown(context.Background()))
}

// Truncate refuses, changing nothing, an offset inside a record, beyond the end of the
// log or below its start, and a store that is open.
func TestTruncateRefusals(t *testing.T) {
	dir := t.TempDir()
	o := crashOptions(dir)
	s, err := Open(o)
	require.NoError(t, err)
	s.Start()
	res := putAll(t, s, "P", 40)
	end := s.CommitLog().MaxOffset()

	err = Truncate(o, res[10].PhysicalOffset)
	require.ErrorIs(t, err, ErrInUse, "the store is open")
	require.ErrorIs(t, err, mmap.ErrLocked)
	require.NoError(t, s.Shutdown(context.Background()))

	for _, off := range []int64{res[10].PhysicalOffset + 1, res[10].PhysicalOffset + int64(res[10].Bytes) - 1} {
		require.ErrorIs(t, Truncate(o, off), ErrTruncateNotBoundary, "offset %d", off)
	}
	require.ErrorIs(t, Truncate(o, end+1), ErrTruncateOutOfRange)
	require.ErrorIs(t, Truncate(o, -1), ErrTruncateOutOfRange)
	require.NoError(t, Truncate(o, end), "truncating at the end changes nothing")

	s, err = Open(o)
	require.NoError(t, err)
	require.Equal(t, end, s.CommitLog().MaxOffset())
	requireServes(t, s, names("P", 0, 40), nil)
	require.NoError(t, s.Shutdown(context.Background()))
	exists, err := o.FS.Exists(o.abortPath())
	require.NoError(t, err)
	require.False(t, exists, "refusals leave a cleanly closed store")
}

// A cut spanning segments deletes the later ones; a topic deleted after the cut point
// can be re-created and its new messages (written where the deleted topic's were) are
// served, also after the re-dispatch of a crash restart.
func TestTruncateAcrossSegmentsAndTombstones(t *testing.T) {
	fsys := mmap.NewMemFS()
	o := testOptions(fsys, "/store")
	s := openStore(t, o)
	res := putAll(t, s, "P", 300)
	cut := res[60].PhysicalOffset
	for range 200 {
		put(t, s, testMessage{topic: "Gone", body: strings.Repeat("g", 200), uniq: "g"}, false)
	}
	waitDispatched(t, s)
	require.NoError(t, s.DeleteTopic("Gone"))
	require.Greater(t, len(s.CommitLog().Segments()), 3)
	require.NoError(t, s.Shutdown(context.Background()))

	require.NoError(t, Truncate(o, cut))
	s = openStore(t, o)
	require.Len(t, s.CommitLog().Segments(), int(cut/o.SegmentSize)+1)
	requireServes(t, s, names("P", 0, 60), names("P", 60, 300))
	for i := range 5 {
		put(t, s, testMessage{topic: "Gone", body: fmt.Sprintf("again %d", i), uniq: "again" + strconv.Itoa(i)}, true)
	}
	waitDispatched(t, s)
	require.Len(t, queueContents(t, s, "Gone", 0), 5)
	require.NoError(t, s.CommitLog().Flush())
	crashed := fsys.Crash(nil, 0) // the dispatched units need not be durable: re-dispatch
	co := o
	co.FS = crashed
	rs := openStore(t, co)
	got := queueContents(t, rs, "Gone", 0)
	require.Len(t, got, 5, "the re-created topic's messages are not hidden by the old tombstone")
	require.Equal(t, "again 0", string(got[0].Body))
}

// A power loss before any durable step of Truncate (every sync, directory sync, rename
// and removal, with a random half of the unsynced pages kept) leaves a store that opens
// consistent — a prefix of the log that ends at or after the cut, with consume queues and
// index matching it — and that a second Truncate then cuts exactly.
func TestTruncateCrashAtEveryStep(t *testing.T) {
	mem := mmap.NewMemFS()
	o := testOptions(mem, "/store")
	s := openStore(t, o)
	res := putAll(t, s, "P", 400)
	require.Greater(t, len(s.CommitLog().Segments()), 2)
	require.NoError(t, s.Shutdown(context.Background()))
	cut := res[150].PhysicalOffset
	base := mem.Crash(nil, 0)
	rng := rand.New(rand.NewPCG(4, 21))
	durable := mmap.OpSync | mmap.OpSyncDir | mmap.OpFileSync | mmap.OpRename | mmap.OpRemove | mmap.OpRemoveAll
	steps := 0
	for k := 0; ; k++ {
		disk := base.Crash(nil, 0)
		efs := mmap.NewErrorFS(disk)
		var crashed atomic.Pointer[mmap.MemFS]
		keep := 0.0
		if k%2 == 1 {
			keep = 0.5
		}
		efs.Inject(mmap.Rule{Ops: durable, After: k, Times: 1, Hook: func(mmap.Op, string) error {
			crashed.Store(disk.Crash(rng, keep))
			return nil
		}})
		to := o
		to.FS = efs
		require.NoError(t, Truncate(to, cut))
		after := crashed.Load()
		if after == nil { // k is past Truncate's last durable step
			steps = k
			break
		}
		co := o
		co.FS = after
		rs, err := Open(co)
		require.NoError(t, err, "crash before durable step %d", k)
		end := rs.CommitLog().MaxOffset()
		require.GreaterOrEqual(t, end, cut, "step %d", k)
		kept := 0
		for kept < len(res) && res[kept].PhysicalOffset < end {
			kept++
		}
		if next := res[kept-1].NextOffset(); next != end { // or after a filler
			require.Zero(t, end%o.SegmentSize, "step %d: the log ends after a whole message", k)
			require.Equal(t, next/o.SegmentSize+1, end/o.SegmentSize, "step %d", k)
		}
		requireServes(t, rs, names("P", 0, kept), names("P", kept, 400))
		require.NoError(t, rs.Shutdown(context.Background()))

		require.NoError(t, Truncate(co, cut), "step %d: truncate again", k)
		rs, err = Open(co)
		require.NoError(t, err)
		require.Equal(t, cut, rs.CommitLog().MaxOffset())
		requireServes(t, rs, names("P", 0, 150), names("P", 150, 400))
		require.NoError(t, rs.Shutdown(context.Background()))
	}
	t.Logf("%d durable steps", steps)
	require.Greater(t, steps, 10, "Truncate's recovery and cut make many durable steps")
}

// A deleted-topic tombstone past the end of the log (its tail lost in a crash, or cut by
// a truncation that crashed before it rewrote the queue table) is lowered to the end at
// Open, so a re-created topic's new messages there are served.
func TestTombstonePastTheLogEndIsLowered(t *testing.T) {
	fsys := mmap.NewMemFS()
	o := testOptions(fsys, "/store")
	s := openStore(t, o)
	putAll(t, s, "P", 10)
	end := s.CommitLog().MaxOffset()
	require.NoError(t, s.Shutdown(context.Background()))
	table, err := s.loadQueueTable()
	require.NoError(t, err)
	table.Deleted = map[string]int64{"Gone": end + 10_000}
	require.NoError(t, fsys.WriteFileAtomic(o.queueTablePath(), encodeQueueTable(table)))

	s = openStore(t, o)
	put(t, s, testMessage{topic: "Gone", body: "again", uniq: "again"}, false)
	waitDispatched(t, s)
	got := queueContents(t, s, "Gone", 0)
	require.Len(t, got, 1)
	require.Equal(t, "again", string(got[0].Body))
}

// truncateChild is the child side of TestTruncateKilled (args: the store's directory and
// the child's number): forever, open the store, put 200 messages C<child>-<round>-<i>,
// shut down, print "CUT <round> <offset of message 100>" and truncate there, printing
// "STEP" before every durable step of the truncation (sync, directory sync, rename,
// removal).
func truncateChild(args []string) {
	dir, child := args[0], args[1]
	efs := mmap.NewErrorFS(mmap.OSFS{})
	o := crashOptions(dir)
	o.FS = efs
	durable := mmap.OpSync | mmap.OpSyncDir | mmap.OpFileSync | mmap.OpRename | mmap.OpRemove | mmap.OpRemoveAll
	fail := func(err error) {
		fmt.Println("ERR", err)
		os.Exit(2)
	}
	for round := 0; ; round++ {
		s, err := Open(o)
		if err != nil {
			fail(err)
		}
		s.Start()
		var cut int64
		for i := range 200 {
			m := truncMessage(fmt.Sprintf("C%s-%d-", child, round), i)
			props, _ := message.EncodeProperties(map[string]string{message.PropertyUniqKey: m.uniq, message.PropertyKeys: m.keys})
			rec := message.Record{QueueID: m.queueID, Body: []byte(m.body), Topic: []byte(m.topic), Properties: props,
				BornTimestamp: time.Now().UnixMilli(), BornHost: testHost}
			res, err := s.PutMessage(&rec, false)
			if err != nil {
				fail(err)
			}
			if i == 100 {
				cut = res.PhysicalOffset
			}
		}
		if err := s.Shutdown(context.Background()); err != nil {
			fail(err)
		}
		fmt.Printf("CUT %d %d\n", round, cut)
		remove := efs.Inject(mmap.Rule{Ops: durable, Hook: func(mmap.Op, string) error {
			fmt.Println("STEP")
			return nil
		}})
		if err := Truncate(o, cut); err != nil {
			fail(err)
		}
		remove()
	}
}

// A process that truncates its store is killed (SIGKILL) at a random durable step of a
// truncation: the store opens consistent (queues gap-free and pointing at their records,
// every key found, the log ending at or after the cut), and truncating it again at the
// announced cut ends the log exactly there, without the messages from the cut on.
func TestTruncateKilled(t *testing.T) {
	dir := t.TempDir()
	o := crashOptions(dir)
	rng := rand.New(rand.NewPCG(5, 8))
	rounds := 8
	if testing.Short() {
		rounds = 3
	}
	for n := range rounds {
		child := testkit.StartChild(t, "truncate", dir, strconv.Itoa(n))
		var round int
		cut := int64(-1)
		for steps := 1 + rng.IntN(45); steps > 0; {
			line := child.Line(t, time.Minute)
			switch {
			case line == "STEP":
				steps--
			case strings.HasPrefix(line, "CUT "):
				_, err := fmt.Sscanf(line, "CUT %d %d", &round, &cut)
				require.NoError(t, err, "child said %q", line)
			default:
				require.Fail(t, "unexpected line", "child said %q", line)
			}
		}
		child.Kill(t)
		require.Positive(t, cut)

		s, err := Open(o)
		require.NoError(t, err, "child %d", n)
		require.GreaterOrEqual(t, s.CommitLog().MaxOffset(), cut)
		checkQueuesConsistent(t, s)
		require.NoError(t, s.Shutdown(context.Background()))

		require.NoError(t, Truncate(o, cut), "child %d: truncate again at %d", n, cut)
		s, err = Open(o)
		require.NoError(t, err)
		require.Equal(t, cut, s.CommitLog().MaxOffset())
		present := presentUniqKeys(t, s)
		prefix := fmt.Sprintf("C%d-%d-", n, round)
		kept := names(prefix, 0, 100)
		require.Equal(t, len(present), checkQueuesConsistent(t, s))
		for _, k := range kept {
			require.True(t, present[k], "child %d: %s before the cut", n, k)
		}
		for _, k := range names(prefix, 100, 200) {
			require.False(t, present[k], "child %d: %s after the cut", n, k)
		}
		require.NoError(t, s.Shutdown(context.Background()))
	}
}
