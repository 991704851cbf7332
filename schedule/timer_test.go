package schedule

import (
	"errors"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/message"
)

// The test runs in a synctest bubble: the store, the service and the clock are on fake
// time, so "nothing is delivered for a while" is checked after every timer that could have
// delivered it fired and the loops went back to sleep (settle), not after a real sleep.
func TestTimerSevenDaysAhead(t *testing.T) {
	synctest.Test(t, testTimerSevenDaysAhead)
}

func testTimerSevenDaysAhead(t *testing.T) {
	clock := &fakeClock{}
	h := newHarness(t, "1s")
	h.openStore()
	useClock := func(o *Options) { o.Clock = clock.Now; o.FlushInterval = 20 * time.Millisecond }
	h.startService(useClock)

	week := 7 * 24 * time.Hour
	first := &testMsg{uniq: "week-minus-1s", topic: "RealA", queueID: 1, props: map[string]string{
		message.PropertyTimerDeliverMs: strconv.FormatInt(clock.Now().Add(week-time.Second).UnixMilli(), 10)}}
	second := &testMsg{uniq: "week", topic: "RealB", queueID: 0, props: map[string]string{
		message.PropertyTimerDelaySec: strconv.Itoa(int(week / time.Second))}}
	h.send(first)
	h.send(second)
	require.True(t, first.parked)
	require.True(t, second.parked)

	// One second more than the maximum is refused as MESSAGE_ILLEGAL.
	raw, err := message.EncodeProperties(map[string]string{
		message.PropertyTimerDelaySec: strconv.Itoa(int(week/time.Second) + 1)})
	require.NoError(t, err)
	rec := message.Record{Topic: []byte("RealA"), Properties: raw}
	_, rewritten, err := h.svc.Rewrite(&rec, nil)
	require.False(t, rewritten)
	require.ErrorIs(t, err, ErrTimerTooFar)
	require.ErrorIs(t, err, ErrMessageIllegal)
	var te *TimerError
	require.ErrorAs(t, err, &te)
	require.Equal(t, message.PropertyTimerDelaySec, te.Property)
	require.Equal(t, "RealA", string(rec.Topic))

	// Pending, not delivered, and persisted.
	require.Eventually(t, func() bool { return h.svc.Stats().TimerPending == 2 }, 2*time.Second, 5*time.Millisecond)
	settle(200 * time.Millisecond)
	require.Zero(t, h.realCount())
	require.Eventually(t, func() bool {
		data, err := h.fs.ReadFile(filepath.Join(h.dir, configDir, timerProgressFile))
		if err != nil {
			return false
		}
		w, done, err := decodeTimerProgress(data)
		return err == nil && w == 0 && len(done) == 0
	}, 2*time.Second, 5*time.Millisecond)

	// A restart (service and store) keeps them pending.
	h.stopService()
	h.stopStore()
	h.openStore()
	h.startService(useClock)
	require.Eventually(t, func() bool { return h.svc.Stats().TimerPending == 2 }, 2*time.Second, 5*time.Millisecond)

	// Six days later nothing is due; a week minus half a second later the first is.
	clock.Advance(6 * 24 * time.Hour)
	h.svc.Wake()
	settle(100 * time.Millisecond)
	require.Zero(t, h.realCount())
	clock.Advance(24*time.Hour - 500*time.Millisecond)
	h.svc.Wake()
	h.waitReal(1, 2*time.Second)
	settle(100 * time.Millisecond)
	require.Equal(t, int64(1), h.realCount())
	got := h.readReal()
	require.Equal(t, "week-minus-1s", got[0].props[message.PropertyUniqKey])

	// Without a Wake the loop's own (capped) timer notices the step.
	clock.Advance(time.Second)
	h.waitReal(2, 3*time.Second)
	checkDeliveredOnce(t, h, []*testMsg{first, second})
	h.stopService()
	data, err := h.fs.ReadFile(filepath.Join(h.dir, configDir, timerProgressFile))
	require.NoError(t, err)
	w, done, err := decodeTimerProgress(data)
	require.NoError(t, err)
	require.Equal(t, int64(2), w)
	require.Empty(t, done)
}

// checkDeliveredOnce asserts exactly-once delivery (the store clock is not the service
// clock here, so delivery times are not compared).
func checkDeliveredOnce(t *testing.T, h *harness, msgs []*testMsg) {
	t.Helper()
	seen := map[string]int{}
	for _, g := range h.readReal() {
		seen[g.props[message.PropertyUniqKey]]++
	}
	for _, m := range msgs {
		require.Equal(t, 1, seen[m.uniq], m.uniq)
	}
}

func TestTimerOutOfOrderWatermark(t *testing.T) {
	// A far message holds the watermark back; later deliveries go into ranges, and the
	// watermark jumps once it is delivered.
	clock := &fakeClock{}
	h := newHarness(t, "1s")
	h.openStore()
	h.startService(func(o *Options) { o.Clock = clock.Now })
	far := &testMsg{uniq: "far", topic: "RealA", queueID: 0,
		props: map[string]string{message.PropertyTimerDelaySec: "3600"}}
	h.send(far)
	var near []*testMsg
	for i := range 20 {
		m := &testMsg{uniq: "near" + strconv.Itoa(i), topic: "RealA", queueID: 0,
			props: map[string]string{message.PropertyTimerDelayMs: strconv.Itoa(1 + i)}}
		near = append(near, m)
		h.send(m)
	}
	h.waitReal(20, 3*time.Second)
	h.stopService()
	data, err := h.fs.ReadFile(filepath.Join(h.dir, configDir, timerProgressFile))
	require.NoError(t, err)
	w, done, err := decodeTimerProgress(data)
	require.NoError(t, err)
	require.Equal(t, int64(0), w)
	require.Equal(t, []offsetRange{{1, 21}}, done)

	h.startService(func(o *Options) { o.Clock = clock.Now })
	require.Eventually(t, func() bool { return h.svc.Stats().TimerPending == 1 }, 2*time.Second, 5*time.Millisecond)
	clock.Advance(time.Hour)
	h.svc.Wake()
	h.waitReal(21, 2*time.Second)
	checkDeliveredOnce(t, h, append(near, far))
	require.Eventually(t, func() bool { return h.svc.Stats().TimerWatermark == 21 }, time.Second, 5*time.Millisecond)
}

func TestAddOffset(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for round := range 20 {
		n := 1 + rng.IntN(120)
		order := rng.Perm(n)
		var (
			w    int64
			done []offsetRange
			ref  = map[int64]bool{}
		)
		for i, o := range order {
			w, done = addOffset(w, done, int64(o))
			if i%3 == 0 { // duplicates are harmless
				w, done = addOffset(w, done, int64(o))
			}
			ref[int64(o)] = true
			// The watermark is the first missing offset; ranges are sorted, disjoint,
			// non-adjacent, above it, and hold exactly the rest.
			var want int64
			for ref[want] {
				want++
			}
			require.Equal(t, want, w, "round %d", round)
			count := int64(0)
			prev := w
			for _, r := range done {
				require.Greater(t, r.Start, prev, "round %d: %v", round, done)
				require.Less(t, r.Start, r.End)
				for x := r.Start; x < r.End; x++ {
					require.True(t, ref[x])
				}
				count += r.End - r.Start
				prev = r.End
			}
			require.Equal(t, int64(len(ref))-w, count)
		}
		require.Equal(t, int64(n), w)
		require.Empty(t, done)
	}
}

func TestTimerErrorsAreTyped(t *testing.T) {
	h := newHarness(t, "1s")
	h.openStore()
	h.startService(nil)
	raw, err := message.EncodeProperties(map[string]string{message.PropertyTimerDeliverMs: "soon"})
	require.NoError(t, err)
	rec := message.Record{Topic: []byte("RealA"), Properties: raw}
	_, _, err = h.svc.Rewrite(&rec, nil)
	require.ErrorIs(t, err, ErrBadTimerProperty)
	require.ErrorIs(t, err, ErrMessageIllegal)
	require.False(t, errors.Is(err, ErrTimerTooFar))
	require.Contains(t, err.Error(), "soon")
	require.Equal(t, "RealA", string(rec.Topic))
}
