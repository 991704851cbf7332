package store

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/commitlog"
	"github.com/ferrymq/ferry/consumequeue"
	"github.com/ferrymq/ferry/internal/mmap"
	"github.com/ferrymq/ferry/internal/testkit"
	"github.com/ferrymq/ferry/message"
)

// presentUniqKeys scans every consume queue and returns the unique keys found, checking
// on the way that each queue is gap-free and ordered.
func presentUniqKeys(t testing.TB, s *Store) map[string]bool {
	t.Helper()
	seen := map[string]bool{}
	for _, tq := range s.queueList() {
		want := s.MinOffset(tq.topic, tq.queueID)
		for off := want; off < s.MaxOffset(tq.topic, tq.queueID); {
			r, err := s.GetMessages(tq.topic, tq.queueID, off, 256, 8<<20, nil)
			require.NoError(t, err)
			require.Equal(t, Found, r.Status)
			for i, b := range r.Messages {
				require.Equal(t, want, r.QueueOffsets[i], "no hole in %s/%d", tq.topic, tq.queueID)
				want++
				rec, _, err := message.DecodeRecord(b)
				require.NoError(t, err)
				uniq, _ := message.LookupProperty(rec.Properties, message.PropertyUniqKey)
				require.Equal(t, "body of "+string(uniq), string(rec.Body))
				seen[string(uniq)] = true
			}
			off = r.NextBeginOffset
			r.Release()
		}
	}
	return seen
}

type topicQueue struct {
	topic   string
	queueID int32
}

// queueList lists the consume queues.
func (s *Store) queueList() []topicQueue {
	var out []topicQueue
	s.cqs.Range(func(topic string, queueID int32, _ *consumequeue.Queue) bool {
		out = append(out, topicQueue{topic, queueID})
		return true
	})
	return out
}

func crashMessage(uniq string, queueID int32) testMessage {
	return testMessage{topic: "CrashTopic", queueID: queueID, body: "body of " + uniq, keys: "key-" + uniq, uniq: uniq}
}

// Sync flush: every append acknowledged as durable survives a power loss at any moment,
// and consume queues come back without holes.
func TestPowerLossSyncFlushLosesNothingAcknowledged(t *testing.T) {
	fsys := mmap.NewMemFS()
	o := testOptions(fsys, "/store")
	o.FlushMode = commitlog.FlushSync
	s := openStore(t, o)

	var mu sync.Mutex
	var acked []string
	var count atomic.Int64
	tokens := make(chan struct{}, 64) // the main loop paces the appenders
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				case <-tokens:
				}
				uniq := fmt.Sprintf("W%d-%07d", w, n)
				rec := crashMessage(uniq, int32(w)).record(t)
				res, err := s.PutMessage(&rec, true)
				if err != nil || !res.Durable {
					t.Errorf("append %s: %v %v", uniq, err, res.Status)
					return
				}
				mu.Lock()
				acked = append(acked, uniq)
				mu.Unlock()
				count.Add(1)
			}
		}()
	}
	rng := rand.New(rand.NewPCG(7, 11))
	crashes := 200
	if testing.Short() {
		crashes = 40
	}
	for i := range crashes {
		// Let a few appends complete, and leave a few more in flight at the crash.
		done := 1 + rng.IntN(10)
		target := count.Load() + int64(done)
		for range done + rng.IntN(10) {
			tokens <- struct{}{}
		}
		require.Eventually(t, func() bool { return count.Load() >= target }, 10*time.Second, 100*time.Microsecond)
		mu.Lock()
		durable := append([]string(nil), acked...)
		mu.Unlock()
		crashed := fsys.Crash(nil, 0)

		co := o
		co.FS = crashed
		rs, err := Open(co)
		require.NoError(t, err, "crash %d", i)
		present := presentUniqKeys(t, rs)
		for _, k := range durable {
			require.True(t, present[k], "crash %d: acknowledged %s lost", i, k)
		}
		if i%50 == 0 {
			checkQueuesConsistent(t, rs)
		}
		require.NoError(t, rs.Shutdown(context.Background()))
	}
	close(stop)
	wg.Wait()
}

// Async flush: what survives a power loss (including any subset of unsynced pages the
// kernel may have written back) is a prefix of what was appended.
func TestPowerLossAsyncFlushKeepsAPrefix(t *testing.T) {
	fsys := mmap.NewMemFS()
	o := testOptions(fsys, "/store")
	o.FlushInterval = 5 * time.Millisecond
	s := openStore(t, o)
	rng := rand.New(rand.NewPCG(3, 5))
	n := 0
	for i := range 60 {
		for range 1 + rng.IntN(60) {
			put(t, s, crashMessage(fmt.Sprintf("A%07d", n), 0), false)
			n++
		}
		waitDispatched(t, s) // quiesce: Crash with unsynced pages reads current bytes
		crashed := fsys.Crash(rng, rng.Float64())
		co := o
		co.FS = crashed
		rs, err := Open(co)
		require.NoError(t, err, "crash %d", i)
		got := queueContents(t, rs, "CrashTopic", 0)
		require.LessOrEqual(t, len(got), n)
		for j, rec := range got {
			require.Equal(t, fmt.Sprintf("body of A%07d", j), string(rec.Body), "crash %d: prefix broken at %d", i, j)
		}
		checkQueuesConsistent(t, rs)
		require.NoError(t, rs.Shutdown(context.Background()))
	}
}

// A torn last record, cut at every byte: recovery ends exactly at the previous record, and
// every consume-queue and index entry points at a valid record.
func TestTornTailAtEveryByte(t *testing.T) {
	fsys := mmap.NewMemFS()
	o := testOptions(fsys, "/store")
	s := openStore(t, o)
	var all []commitlog.AppendResult
	for i := range 20 {
		all = append(all, put(t, s, crashMessage(fmt.Sprintf("T%03d", i), 0), false))
	}
	last := all[len(all)-1]
	waitDispatched(t, s)
	require.NoError(t, s.Shutdown(context.Background()))
	base := fsys.Crash(nil, 0)
	seg := o.commitLogDir() + "/" + specFileName(last.PhysicalOffset/o.SegmentSize*o.SegmentSize)
	rel := last.PhysicalOffset % o.SegmentSize
	for cut := int64(0); cut < int64(last.Bytes); cut++ {
		c := base.Crash(nil, 0)
		m, err := c.OpenMapped(seg, o.SegmentSize, false)
		require.NoError(t, err)
		clear(m.Bytes()[rel+cut : rel+int64(last.Bytes)])
		require.NoError(t, m.Sync(0, o.SegmentSize))
		require.NoError(t, m.Close())
		// The crash came before the torn record was flushed: the last checkpoint covers at
		// most the records before it (or, alternately, there is none at all).
		require.NoError(t, c.WriteFileAtomic(o.abortPath(), nil))
		if cut%2 == 0 {
			require.NoError(t, c.Remove(o.checkpointPath()))
		} else {
			cp := checkpoint{Valid: true, FlushedOffset: last.PhysicalOffset, DispatchedOffset: all[14].PhysicalOffset}
			require.NoError(t, c.WriteFileAtomic(o.checkpointPath(), encodeCheckpoint(cp)))
		}
		co := o
		co.FS = c
		rs, err := Open(co)
		require.NoError(t, err)
		require.Equal(t, last.PhysicalOffset, rs.CommitLog().MaxOffset(), "cut at %d", cut)
		got := queueContents(t, rs, "CrashTopic", 0)
		require.Len(t, got, 19)
		require.Equal(t, 19, checkQueuesConsistent(t, rs))
		require.NoError(t, rs.Shutdown(context.Background()))
	}
}

// crashOptions are the options of the store in dir that the real-crash test's child
// appends to and the test reopens.
func crashOptions(dir string) Options {
	o := DefaultOptions()
	o.Dir = dir
	o.SegmentSize = 1 << 20
	o.UnitsPerFile = 1000
	o.IndexSlots = 1024
	o.IndexEntries = 4096
	return o
}

// openChildStore opens and starts a crash test child's store with sync flush; a failure
// is an "ERR" line and exit status 2.
func openChildStore(o Options) *Store {
	o.FlushMode = commitlog.FlushSync
	s, err := Open(o)
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(2)
	}
	s.Start()
	return s
}

// crashChild is the child side of the real-crash test (args: the store's directory and
// the round): append with sync flush forever, printing every durable acknowledgement.
func crashChild(args []string) {
	dir, round := args[0], args[1]
	o := crashOptions(dir)
	o.CheckpointInterval = 50 * time.Millisecond
	s := openChildStore(o)
	out := bufio.NewWriter(os.Stdout)
	for n := 0; ; n++ {
		uniq := fmt.Sprintf("R%s-%06d", round, n)
		m := crashMessage(uniq, int32(n%3))
		props, _ := message.EncodeProperties(map[string]string{message.PropertyUniqKey: uniq, message.PropertyKeys: m.keys})
		rec := message.Record{QueueID: m.queueID, Body: []byte(m.body), Topic: []byte(m.topic), Properties: props,
			BornTimestamp: time.Now().UnixMilli(), BornHost: testHost}
		res, err := s.PutMessage(&rec, true)
		if err != nil || !res.Durable {
			fmt.Fprintln(out, "ERR", err)
			out.Flush()
			os.Exit(3)
		}
		fmt.Fprintf(out, "ACK %s %d %d\n", uniq, m.queueID, res.QueueOffset)
		out.Flush()
	}
}

// A child process appends with sync flush and is killed with SIGKILL at random moments;
// after each kill the store reopens with every acknowledged message, gap-free queues and a
// complete index.
func TestRealCrashKill9(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(1, 9))
	var acked []string
	rounds := 20
	if testing.Short() {
		rounds = 5
	}
	for round := range rounds {
		child := testkit.StartChild(t, "crash", dir, strconv.Itoa(round))
		want := 20 + rng.IntN(400)
		for range want {
			line := child.Line(t, time.Minute)
			require.True(t, strings.HasPrefix(line, "ACK "), "child said %q", line)
			acked = append(acked, strings.Fields(line)[1])
		}
		child.Kill(t)
		// Lines the child printed before dying are acknowledgements too.
		for _, line := range child.Rest() {
			if f := strings.Fields(line); len(f) == 4 && f[0] == "ACK" {
				acked = append(acked, f[1])
			}
		}

		s, err := Open(crashOptions(dir))
		require.NoError(t, err, "round %d", round)
		present := presentUniqKeys(t, s)
		for _, k := range acked {
			require.True(t, present[k], "round %d: acknowledged %s lost", round, k)
		}
		for _, k := range acked[max(0, len(acked)-30):] {
			qr, err := s.QueryByKey("CrashTopic", "key-"+k, false, 4, 0, 1<<62)
			require.NoError(t, err)
			require.Len(t, qr.Records, 1, "round %d: key of %s", round, k)
			qr.Release()
		}
		require.NoError(t, s.Shutdown(context.Background()))
	}
}
