package index

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ferrymq/ferry/internal/mmap"
	"github.com/stretchr/testify/require"
)

// baseTime is the store time of the first test message.
var baseTime = time.Date(2024, 3, 9, 10, 20, 30, 456_000_000, time.Local)

// fakeClock is a settable clock.
type fakeClock struct {
	mu struct {
		sync.Mutex
		t time.Time
	}
}

func newFakeClock() *fakeClock {
	c := &fakeClock{}
	c.mu.t = baseTime
	return c
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.t
}

func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	c.mu.t = t
	c.mu.Unlock()
}

// testOpts returns small-file options on fsys.
func testOpts(fsys mmap.FS, dir string, slots, entries int) Options {
	o := DefaultOptions()
	o.FS, o.Dir, o.SlotNum, o.MaxEntries = fsys, dir, slots, entries
	o.Clock = newFakeClock().Now
	return o
}

// memOpts returns small-file options on a fresh MemFS.
func memOpts(t testing.TB, slots, entries int) Options {
	mem := mmap.NewMemFS()
	require.NoError(t, mem.MkdirAll("/store/index"))
	return testOpts(mem, "/store/index", slots, entries)
}

// openIndex opens an index and closes it at the end of the test.
func openIndex(t testing.TB, opts Options) *Index {
	t.Helper()
	x, err := Open(opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = x.Close() })
	return x
}

// msg is a dispatched record in a test: its keys, offset and store time.
type msg struct {
	keys []string
	phy  int64
	ts   int64
}

// genMsgs makes n records with 1–3 keys each from a pool of nKeys keys, 100 bytes apart and
// about 400 ms apart.
func genMsgs(n, nKeys int, seed int) []msg {
	out := make([]msg, n)
	for i := range out {
		k := (i*7 + seed) % nKeys
		keys := []string{fmt.Sprintf("T#k%d", k)}
		if i%3 == 0 {
			keys = append(keys, fmt.Sprintf("T#k%d", (k+5)%nKeys))
		}
		if i%5 == 0 {
			keys = append(keys, fmt.Sprintf("T#uniq-%d", i))
		}
		out[i] = msg{keys: keys, phy: int64(i) * 100, ts: baseTime.UnixMilli() + int64(i)*400}
	}
	return out
}

// putMsgs indexes the records whose offset is ≥ from.
func putMsgs(t testing.TB, x *Index, msgs []msg, from int64) {
	t.Helper()
	for _, m := range msgs {
		if m.phy < from {
			continue
		}
		for _, k := range m.keys {
			require.NoError(t, x.Put(k, m.phy, m.ts))
		}
	}
}

// allKeys lists the distinct keys of msgs.
func allKeys(msgs []msg) []string {
	var keys []string
	for _, m := range msgs {
		for _, k := range m.keys {
			if !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
	}
	slices.Sort(keys)
	return keys
}

// want is what a query over all time must return for key: offsets of records carrying
// the key or a key with the same hash, newest first.
func want(msgs []msg, key string, below int64) []int64 {
	var out []int64
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i]
		if m.phy >= below {
			continue
		}
		for _, k := range m.keys {
			if KeyHash(k) == KeyHash(key) {
				out = append(out, m.phy)
				break
			}
		}
	}
	return out
}

// queryAll queries every key over all time.
func queryAll(t testing.TB, x *Index, keys []string) map[string][]int64 {
	t.Helper()
	out := make(map[string][]int64, len(keys))
	for _, k := range keys {
		got, err := x.Query(k, 1<<20, 0, 1<<62)
		require.NoError(t, err)
		out[k] = got
	}
	return out
}
