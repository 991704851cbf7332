package schedule

import (
	"errors"
	"net/netip"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/protocol"
)

// TestCancel cancels parked messages through Service.Cancel with the broker's record (a
// cancel record stored in the cancel topic): cancelled ones are skipped when due,
// delivered ones say so, a failed record cancels nothing, and a restarted service reads
// the cancellations back from the store. It runs on fake time (synctest).
func TestCancel(t *testing.T) {
	synctest.Test(t, testCancel)
}

func testCancel(t *testing.T) {
	clock := &fakeClock{}
	h := newHarness(t, "1s")
	h.openStore()
	useClock := func(o *Options) { o.Clock = clock.Now; o.FlushInterval = 20 * time.Millisecond }
	h.startService(useClock)

	in10s := map[string]string{message.PropertyTimerDelaySec: "10"}
	timerA := &testMsg{uniq: "timer-a", topic: "RealA", props: in10s}
	timerB := &testMsg{uniq: "timer-b", topic: "RealA", props: in10s}
	level := &testMsg{uniq: "level", topic: "RealB", props: map[string]string{message.PropertyDelayLevel: "1"}}
	for _, m := range []*testMsg{timerA, timerB, level} {
		h.send(m)
		require.True(t, m.parked)
	}
	require.Eventually(t, func() bool {
		return h.svc.Stats().TimerPending == 2 && h.st.MaxOffset(protocol.ScheduleTopic, 0) == 1
	}, 2*time.Second, 5*time.Millisecond, "the parked messages are loaded")
	parkedA := Parked{ID: "timer-a", Topic: protocol.TimerTopic, QueueOffset: 0}
	parkedB := Parked{ID: "timer-b", Topic: protocol.TimerTopic, QueueOffset: 1}
	parkedLevel := Parked{ID: "level", Topic: protocol.ScheduleTopic, QueueID: 0, QueueOffset: 0}

	records := 0
	record := func(id string) func() error {
		return func() error {
			records++
			rec, err := CancelRecord(id, clock.Now(), netip.MustParseAddrPort("10.0.0.1:10911"))
			if err != nil {
				return err
			}
			_, err = h.st.PutMessage(&rec, true)
			return err
		}
	}
	got, err := h.svc.Cancel(parkedA, record("timer-a"))
	require.NoError(t, err)
	require.Equal(t, Cancelled, got)
	got, err = h.svc.Cancel(parkedA, record("timer-a"))
	require.NoError(t, err)
	require.Equal(t, AlreadyCancelled, got)
	require.Equal(t, 1, records, "a second cancel stores nothing")

	boom := errors.New("disk on fire")
	_, err = h.svc.Cancel(parkedLevel, func() error { return boom })
	require.ErrorIs(t, err, boom, "a record that cannot be stored cancels nothing")
	_, err = h.svc.Cancel(Parked{ID: "x", Topic: "RealA"}, record("x"))
	require.ErrorIs(t, err, ErrNotParked)

	// Everything falls due: the level message and timer B are delivered, timer A is not.
	clock.Advance(11 * time.Second)
	h.svc.Wake()
	h.waitCaughtUp(5 * time.Second)
	require.Eventually(t, func() bool { return h.realCount() == 2 }, 2*time.Second, 5*time.Millisecond)
	var delivered []string
	for _, s := range h.readReal() {
		delivered = append(delivered, s.props[message.PropertyUniqKey])
	}
	require.ElementsMatch(t, []string{"timer-b", "level"}, delivered)
	require.Equal(t, uint64(1), h.svc.Stats().Cancelled)

	got, err = h.svc.Cancel(parkedB, record("timer-b"))
	require.NoError(t, err)
	require.Equal(t, AlreadyDelivered, got)
	got, err = h.svc.Cancel(parkedLevel, record("level"))
	require.NoError(t, err)
	require.Equal(t, AlreadyDelivered, got)
	require.Equal(t, 1, records)

	// A restarted service (and store) knows the cancellation from the cancel topic.
	h.stopService()
	h.stopStore()
	h.openStore()
	h.startService(useClock)
	got, err = h.svc.Cancel(parkedA, record("timer-a"))
	require.NoError(t, err)
	require.Equal(t, AlreadyCancelled, got)
	require.Equal(t, 1, records)

	// A timer message parked after the restart and cancelled before it is due.
	timerC := &testMsg{uniq: "timer-c", topic: "RealB", queueID: 1, props: map[string]string{
		message.PropertyTimerDeliverMs: strconv.FormatInt(clock.Now().Add(time.Second).UnixMilli(), 10)}}
	h.send(timerC)
	require.Eventually(t, func() bool { return h.svc.Stats().TimerPending == 1 }, 2*time.Second, 5*time.Millisecond)
	got, err = h.svc.Cancel(Parked{ID: "timer-c", Topic: protocol.TimerTopic, QueueOffset: 2}, record("timer-c"))
	require.NoError(t, err)
	require.Equal(t, Cancelled, got)
	clock.Advance(2 * time.Second)
	h.svc.Wake()
	h.waitCaughtUp(5 * time.Second)
	settle(100 * time.Millisecond)
	require.Len(t, h.readReal(), 2, "still only timer-b and level")
	require.Equal(t, uint64(1), h.svc.Stats().Cancelled, "counted since this service started")
}
