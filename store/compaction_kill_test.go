package store

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/internal/testkit"
	"github.com/ferrymq/ferry/message"
)

// compactKillOptions are the options of the store the compaction kill test's child
// writes: Cmp compacted by KEYS, 64 KiB segments deleted as soon as they are not the
// active one, so rounds, copies and deletions run all the time.
func compactKillOptions(dir string) Options {
	o := crashOptions(dir)
	o.SegmentSize = 64 << 10
	o.FileReservedTime = time.Millisecond
	o.DeleteWhen = []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23}
	o.CleanInterval = 2 * time.Millisecond
	o.CompactionReadsPerRound = 16
	o.Compaction = func(topic string) (CompactionPolicy, bool) { return CompactionPolicy{}, topic == "Cmp" }
	return o
}

// compactChild is the child side of the compaction kill test (args: the store's
// directory and the round): sync-flushed sends of 12 keys to Cmp/0 and filler to Other,
// printing "ACK key offset" for every durable Cmp message.
func compactChild(args []string) {
	dir, round := args[0], args[1]
	o := compactKillOptions(dir)
	o.CheckpointInterval = 20 * time.Millisecond
	s := openChildStore(o)
	out := bufio.NewWriter(os.Stdout)
	filler := make([]byte, 2000)
	for n := 0; ; n++ {
		key := fmt.Sprintf("k%d", n%12)
		props, _ := message.EncodeProperties(map[string]string{message.PropertyKeys: key})
		rec := message.Record{Body: fmt.Appendf(nil, "%s-r%s-%d", key, round, n), Topic: []byte("Cmp"), Properties: props,
			BornHost: testHost}
		res, err := s.PutMessage(&rec, true)
		if err != nil || !res.Durable {
			fmt.Fprintln(out, "ERR", err)
			out.Flush()
			os.Exit(3)
		}
		fmt.Fprintf(out, "ACK %s %d %s\n", key, res.QueueOffset, rec.Body)
		out.Flush()
		other := message.Record{Body: filler, Topic: []byte("Other"), BornHost: testHost}
		if _, err := s.PutMessage(&other, false); err != nil {
			fmt.Fprintln(out, "ERR", err)
			out.Flush()
			os.Exit(3)
		}
	}
}

// A child process writes a compacted topic while rounds, copies and segment deletions
// run every few milliseconds, and is killed with SIGKILL at random moments: after each
// kill the reopened store serves, for every key, its latest acknowledged message or a
// later one of the key, with the body that was sent at that offset.
func TestCompactionKill9(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(4, 2))
	latest := map[string]int64{} // key -> its latest acknowledged offset
	bodyAt := map[int64]string{} // offset -> body acknowledged there
	rounds := 12
	if testing.Short() {
		rounds = 4
	}
	ack := func(line string) bool {
		f := strings.Fields(line)
		if len(f) != 4 || f[0] != "ACK" {
			return false
		}
		off, err := strconv.ParseInt(f[2], 10, 64)
		require.NoError(t, err)
		latest[f[1]] = max(latest[f[1]], off)
		bodyAt[off] = f[3]
		return true
	}
	copied := false
	for round := range rounds {
		child := testkit.StartChild(t, "compact", dir, strconv.Itoa(round))
		for range 100 + rng.IntN(600) {
			line := child.Line(t, time.Minute)
			require.True(t, ack(line), "child said %q", line)
		}
		child.Kill(t)
		for _, line := range child.Rest() {
			ack(line)
		}

		o := compactKillOptions(dir)
		o.CleanInterval = time.Hour // the parent only reads
		s, err := Open(o)
		require.NoError(t, err, "round %d", round)
		pulled := map[string]int64{}
		for off := s.MinOffset("Cmp", 0); off < s.MaxOffset("Cmp", 0); {
			r, err := s.PullMessages("Cmp", 0, off, 64, 8<<20, nil)
			require.NoError(t, err)
			for i, b := range r.Messages {
				rec, _, err := message.DecodeRecord(b)
				require.NoError(t, err)
				o := r.QueueOffsets[i]
				if want, ok := bodyAt[o]; ok {
					require.Equal(t, want, string(rec.Body), "round %d: offset %d", round, o)
				}
				k := string(compactionKey(&rec, ""))
				pulled[k] = max(pulled[k], o+1)
			}
			require.Greater(t, r.NextBeginOffset, off)
			off = r.NextBeginOffset
			r.Release()
		}
		for k, off := range latest {
			require.Greater(t, pulled[k], off, "round %d: key %s: its latest acknowledged message (offset %d) is lost", round, k, off)
		}
		copied = copied || s.CompactionStats().Relocated > 0
		require.NoError(t, s.Shutdown(context.Background()))
	}
	require.True(t, copied, "the kills came while copies were being made")
}
