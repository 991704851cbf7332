package stats

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/internal/testkit"
	"github.com/ferrymq/ferry/protocol"
)

func newStats(t *testing.T, maxKeys int) (*Stats, *testkit.Clock) {
	t.Helper()
	c := testkit.NewClock(time.UnixMilli(1_700_000_000_000))
	o := DefaultOptions()
	o.Clock, o.MaxKeys = c.Now, maxKeys
	s, err := New(o)
	require.NoError(t, err)
	return s, c
}

// tick moves the clock by d a second at a time, sampling after each step.
func tick(s *Stats, c *testkit.Clock, d time.Duration) {
	for range int(d / time.Second) {
		c.Add(time.Second)
		s.Sample()
	}
}

func TestWindows(t *testing.T) {
	s, c := newStats(t, 100)
	// An hour of 10 messages (1 KiB) a second, in 2 requests of 5.
	for range 3600 {
		s.Put("T", 5, 512)
		s.Put("T", 5, 512)
		s.Get("T", "g", 10, 1024)
		tick(s, c, time.Second)
	}
	d, ok := s.Lookup(protocol.StatsTopicPutNums, "T")
	require.True(t, ok)
	require.Equal(t, int64(600), d.StatsMinute.Sum, "the last minute: 60 s of 10/s")
	require.InDelta(t, 10, d.StatsMinute.TPS, 1e-9)
	require.InDelta(t, 5, d.StatsMinute.AvgPT, 1e-9, "5 messages per send request")
	require.Equal(t, int64(36000), d.StatsHour.Sum)
	require.InDelta(t, 10, d.StatsHour.TPS, 1e-9)
	require.Equal(t, int64(36000), d.StatsDay.Sum, "younger than a day: everything since it appeared")

	size, ok := s.Lookup(protocol.StatsTopicPutSize, "T")
	require.True(t, ok)
	require.Equal(t, int64(60*1024), size.StatsMinute.Sum)

	g, ok := s.Lookup(protocol.StatsGroupGetNums, "T@g")
	require.True(t, ok)
	require.Equal(t, int64(600), g.StatsMinute.Sum)
	require.InDelta(t, 10, g.StatsMinute.AvgPT, 1e-9)

	// A quiet minute: the minute window empties, the hour's keeps 59 minutes.
	tick(s, c, time.Minute)
	d, _ = s.Lookup(protocol.StatsTopicPutNums, "T")
	require.Zero(t, d.StatsMinute.Sum)
	require.Zero(t, d.StatsMinute.TPS)
	require.Zero(t, d.StatsMinute.AvgPT)
	require.Equal(t, int64(59*600), d.StatsHour.Sum)

	for _, k := range [][2]string{{protocol.StatsTopicPutNums, "U"}, {protocol.StatsGroupGetNums, "T"},
		{protocol.StatsGroupGetNums, "T@h"}, {"TOPIC_GET_NUMS", "T"}} {
		_, ok := s.Lookup(k[0], k[1])
		require.False(t, ok, "%v", k)
	}
}

func TestYoungKeyAndIdleKeyForgotten(t *testing.T) {
	s, c := newStats(t, 100)
	s.Put("T", 3, 30)
	d, ok := s.Lookup(protocol.StatsTopicPutNums, "T")
	require.True(t, ok)
	require.Equal(t, int64(3), d.StatsMinute.Sum)
	require.InDelta(t, 3, d.StatsMinute.TPS, 1e-9, "a window shorter than a second counts as one")

	tick(s, c, 23*time.Hour)
	_, ok = s.Lookup(protocol.StatsTopicPutNums, "T")
	require.True(t, ok, "idle for less than a day: kept")
	tick(s, c, 2*time.Hour)
	_, ok = s.Lookup(protocol.StatsTopicPutNums, "T")
	require.False(t, ok, "idle for a whole day: forgotten")
	require.Zero(t, s.Keys())
}

func TestMaxKeys(t *testing.T) {
	s, _ := newStats(t, 2)
	s.Put("A", 1, 1)
	s.Get("A", "g", 1, 1)
	s.Put("B", 1, 1)
	s.Get("B", "g", 1, 1)
	require.Equal(t, 2, s.Keys())
	require.Equal(t, int64(2), s.Dropped())
	_, ok := s.Lookup(protocol.StatsTopicPutNums, "B")
	require.False(t, ok)
	s.Put("A", 1, 1)
	d, _ := s.Lookup(protocol.StatsTopicPutNums, "A")
	require.Equal(t, int64(2), d.StatsMinute.Sum, "known keys still count")
}

func TestHotPathDoesNotAllocate(t *testing.T) {
	s, _ := newStats(t, 100)
	s.Put("T", 1, 1)
	s.Get("T", "g", 1, 1)
	topic, group := string([]byte("T")), string([]byte("g")) // not the stored strings
	require.Zero(t, testing.AllocsPerRun(100, func() {
		s.Put(topic, 1, 100)
		s.Get(topic, group, 1, 100)
	}))
}

func TestRunSamplesAndStops(t *testing.T) {
	o := DefaultOptions()
	o.Interval = 10 * time.Millisecond
	s, err := New(o)
	require.NoError(t, err)
	s.Put("T", 1, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	it := (*s.topics.Load())["T"]
	testkit.Eventually(t, 5*time.Second, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return it.minute.n >= 3
	}, "Run samples every interval")
	cancel()
	<-done
}

func TestOptionsValidate(t *testing.T) {
	for _, o := range []Options{{Interval: 0, MaxKeys: 1}, {Interval: time.Hour, MaxKeys: 1}, {Interval: time.Second}} {
		_, err := New(o)
		require.ErrorIs(t, err, ErrInvalidOptions)
	}
}
