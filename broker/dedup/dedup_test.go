package dedup

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/internal/testkit"
)

func newTable(t *testing.T, maxKeys int) (*Table, *testkit.Clock) {
	c := testkit.NewClock(time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC))
	tb, err := New(Options{MaxKeys: maxKeys, Now: c.Now})
	require.NoError(t, err)
	return tb, c
}

func TestClaimCompleteDuplicate(t *testing.T) {
	tb, c := newTable(t, 100)
	ctx := context.Background()
	_, dup, tk, err := tb.Claim(ctx, "T", []byte("k1"), time.Minute)
	require.NoError(t, err)
	require.False(t, dup)
	first := Answer{Code: 0, PhyOffset: 4096, QueueID: 2, QueueOffset: 7}
	tk.Complete(first)

	ans, dup, tk2, err := tb.Claim(ctx, "T", []byte("k1"), time.Minute)
	require.NoError(t, err)
	require.True(t, dup)
	require.Equal(t, Ticket{}, tk2)
	require.Equal(t, first, ans)

	// The same key on another topic is another message.
	_, dup, tk3, err := tb.Claim(ctx, "U", []byte("k1"), time.Minute)
	require.NoError(t, err)
	require.False(t, dup)
	tk3.Complete(Answer{MsgID: "ID2"})

	// Past the window the key is new again.
	c.Add(time.Minute)
	_, dup, tk4, err := tb.Claim(ctx, "T", []byte("k1"), time.Minute)
	require.NoError(t, err)
	require.False(t, dup)
	tk4.Abort()
	require.Equal(t, uint64(1), tb.Stats().Duplicates)
}

func TestZeroTicketOwnsNothing(t *testing.T) {
	var z Ticket
	z.Complete(Answer{MsgID: "x"})
	z.Abort()
}

func TestAbortForgetsTheKey(t *testing.T) {
	tb, _ := newTable(t, 100)
	ctx := context.Background()
	_, _, tk, err := tb.Claim(ctx, "T", []byte("k"), time.Minute)
	require.NoError(t, err)
	tk.Abort()
	tk.Complete(Answer{MsgID: "late"}) // no effect after Abort
	_, dup, tk, err := tb.Claim(ctx, "T", []byte("k"), time.Minute)
	require.NoError(t, err)
	require.False(t, dup, "an aborted send stored nothing: its retry is new")
	tk.Complete(Answer{MsgID: "stored"})
	ans, dup, _, err := tb.Claim(ctx, "T", []byte("k"), time.Minute)
	require.NoError(t, err)
	require.True(t, dup)
	require.Equal(t, "stored", ans.MsgID)
}

// TestConcurrentClaimsStoreOnce races many sends of the same keys: each key is owned by
// exactly one of them, and every other one gets that owner's answer.
func TestConcurrentClaimsStoreOnce(t *testing.T) {
	tb, _ := newTable(t, 10_000)
	const keys, senders = 50, 8
	var stored [keys]atomic.Int32
	answers := make([][senders]string, keys)
	var wg sync.WaitGroup
	for s := range senders {
		wg.Go(func() {
			for k := range keys {
				key := strconv.Itoa(k)
				ans, dup, tk, err := tb.Claim(context.Background(), "T", []byte(key), time.Hour)
				if err != nil {
					t.Error(err)
					return
				}
				if !dup {
					stored[k].Add(1)
					ans = Answer{MsgID: key + "/" + strconv.Itoa(s)}
					tk.Complete(ans)
				}
				answers[k][s] = ans.MsgID
			}
		})
	}
	wg.Wait()
	for k := range keys {
		require.Equal(t, int32(1), stored[k].Load(), "key %d stored once", k)
		for s := range senders {
			require.Equal(t, answers[k][0], answers[k][s], "key %d: every sender got the owner's answer", k)
		}
	}
}

func TestClaimWaitsForAPendingSend(t *testing.T) {
	tb, _ := newTable(t, 100)
	_, _, owner, err := tb.Claim(context.Background(), "T", []byte("k"), time.Minute)
	require.NoError(t, err)

	// A waiter gives up with its context.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, _, err = tb.Claim(ctx, "T", []byte("k"), time.Minute)
	require.ErrorIs(t, err, context.Canceled)

	got := make(chan Answer, 1)
	go func() {
		ans, dup, _, err := tb.Claim(context.Background(), "T", []byte("k"), time.Minute)
		if err == nil && dup {
			got <- ans
		}
		close(got)
	}()
	owner.Complete(Answer{MsgID: "first"})
	require.Equal(t, "first", (<-got).MsgID)
}

func TestMaxKeysDropsTheOldest(t *testing.T) {
	tb, _ := newTable(t, 3)
	ctx := context.Background()
	for i := range 5 {
		_, _, tk, err := tb.Claim(ctx, "T", []byte(strconv.Itoa(i)), time.Hour)
		require.NoError(t, err)
		tk.Complete(Answer{MsgID: strconv.Itoa(i)})
	}
	st := tb.Stats()
	require.Equal(t, 3, st.Keys)
	require.Equal(t, uint64(2), st.Evicted)
	_, dup, tk, err := tb.Claim(ctx, "T", []byte("0"), time.Hour)
	require.NoError(t, err)
	require.False(t, dup, "the oldest key was dropped")
	tk.Abort()
	_, dup, _, err = tb.Claim(ctx, "T", []byte("4"), time.Hour)
	require.NoError(t, err)
	require.True(t, dup, "the newest key is kept")
}

func TestReserve(t *testing.T) {
	tb, c := newTable(t, 10)
	tb.Reserve(1 << 30) // capped at MaxKeys
	for i := range 12 {
		tb.Remember("T", []byte(strconv.Itoa(i)), time.Hour, c.Now(), Answer{QueueOffset: int64(i)})
	}
	st := tb.Stats()
	require.Equal(t, 10, st.Keys, "the bound holds in a reserved table")
	require.Equal(t, uint64(2), st.Evicted)
	ans, dup, _, err := tb.Claim(context.Background(), "T", []byte("11"), time.Hour)
	require.NoError(t, err)
	require.True(t, dup)
	require.Equal(t, int64(11), ans.QueueOffset)
	tb.Reserve(100) // not empty: no change
	require.Equal(t, 10, tb.Stats().Keys)
}

func TestExpiredKeysAreDropped(t *testing.T) {
	tb, c := newTable(t, 1000)
	ctx := context.Background()
	for i := range 100 {
		_, _, tk, err := tb.Claim(ctx, "T", []byte(strconv.Itoa(i)), time.Second)
		require.NoError(t, err)
		tk.Complete(Answer{})
	}
	c.Add(2 * time.Second)
	_, _, tk, err := tb.Claim(ctx, "T", []byte("new"), time.Second)
	require.NoError(t, err)
	tk.Complete(Answer{})
	st := tb.Stats()
	require.Equal(t, 1, st.Keys, "keys past their window are gone")
	require.Zero(t, st.Evicted, "expiry is not eviction")
}

func TestRemember(t *testing.T) {
	tb, c := newTable(t, 100)
	tb.Remember("T", []byte("old"), time.Minute, c.Now().Add(-2*time.Minute), Answer{MsgID: "gone"})
	tb.Remember("T", []byte("k"), time.Minute, c.Now().Add(-30*time.Second), Answer{MsgID: "kept", QueueOffset: 3})
	tb.Remember("T", []byte("k"), time.Minute, c.Now(), Answer{MsgID: "second"})
	require.Equal(t, 1, tb.Stats().Keys)
	ans, dup, _, err := tb.Claim(context.Background(), "T", []byte("k"), time.Minute)
	require.NoError(t, err)
	require.True(t, dup)
	require.Equal(t, Answer{MsgID: "kept", QueueOffset: 3}, ans)
	c.Add(31 * time.Second)
	_, dup, _, err = tb.Claim(context.Background(), "T", []byte("k"), time.Minute)
	require.NoError(t, err)
	require.False(t, dup, "the window counts from the stored time")
}

func TestOptionsValidate(t *testing.T) {
	require.NoError(t, DefaultOptions().Validate())
	_, err := New(Options{})
	require.ErrorIs(t, err, ErrInvalidOptions)
}

func BenchmarkClaimComplete(b *testing.B) {
	tb, err := New(DefaultOptions())
	require.NoError(b, err)
	keys := make([]string, 1<<16)
	for i := range keys {
		keys[i] = strconv.FormatInt(int64(i)*7919, 16) + "0123456789ABCDEF0123456789"
	}
	ctx := context.Background()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		_, dup, tk, err := tb.Claim(ctx, "bench", []byte(keys[i&(len(keys)-1)]+strconv.Itoa(i>>16)), time.Minute)
		if err != nil || dup {
			b.Fatal(err, dup)
		}
		tk.Complete(Answer{MsgID: "x", QueueOffset: int64(i)})
		i++
	}
}

// A claim in progress is never dropped to make room: its retry must still find it.
func TestMaxKeysKeepsPendingClaims(t *testing.T) {
	tb, _ := newTable(t, 2)
	ctx := context.Background()
	_, _, pending, err := tb.Claim(ctx, "T", []byte("slow"), time.Hour)
	require.NoError(t, err)
	for i := range 4 {
		_, _, tk, err := tb.Claim(ctx, "T", []byte(strconv.Itoa(i)), time.Hour)
		require.NoError(t, err)
		tk.Complete(Answer{})
	}
	pending.Complete(Answer{QueueOffset: 42})
	ans, dup, _, err := tb.Claim(ctx, "T", []byte("slow"), time.Hour)
	require.NoError(t, err)
	require.True(t, dup, "the claim in progress was kept")
	require.Equal(t, int64(42), ans.QueueOffset)
}

// Aborted claims behind a head that is not due yet do not pile up in the FIFO.
func TestAbortedClaimsDoNotPileUp(t *testing.T) {
	tb, _ := newTable(t, 100)
	ctx := context.Background()
	_, _, head, err := tb.Claim(ctx, "T", []byte("head"), time.Hour)
	require.NoError(t, err)
	head.Complete(Answer{})
	for i := range 50_000 { // a full disk: every send fails
		_, _, tk, err := tb.Claim(ctx, "T", []byte(strconv.Itoa(i)), time.Hour)
		require.NoError(t, err)
		tk.Abort()
	}
	tb.mu.Lock()
	n := len(tb.fifo) - tb.head
	tb.mu.Unlock()
	require.Less(t, n, 3000, "the FIFO holds live entries and a bounded number of dead ones")
	require.Equal(t, 1, tb.Stats().Keys)
}
