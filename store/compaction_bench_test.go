package store

import (
	"fmt"
	"testing"
	"time"

	"github.com/ferrymq/ferry/message"
)

// compactionBenchStore is a store with 100,000 1 KiB messages in BenchTopic/0 over keys
// distinct messages' keys ("key-<i mod keys>"), the topic compacted by KEYS.
func compactionBenchStore(b *testing.B, keys int) *Store {
	o := benchOptions(b)
	o.Compaction = func(topic string) (CompactionPolicy, bool) {
		return CompactionPolicy{DeleteRetention: time.Hour}, topic == "BenchTopic"
	}
	o.CompactionReadsPerRound = 1 << 30
	s := openStore(b, o)
	for i := range 100_000 {
		props, err := message.EncodeProperties(map[string]string{message.PropertyKeys: fmt.Sprintf("key-%d", i%keys)})
		if err != nil {
			b.Fatal(err)
		}
		rec := message.Record{Body: make([]byte, 1024), Topic: []byte("BenchTopic"), Properties: props, BornHost: testHost}
		if _, err := s.PutMessage(&rec, false); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.CommitLog().Flush(); err != nil {
		b.Fatal(err)
	}
	waitDispatched(b, s)
	return s
}

// BenchmarkCompactionRound is a full compaction scan of 100,000 messages over 10,000
// keys (state and marks dropped before each), reported as records scanned per second.
func BenchmarkCompactionRound(b *testing.B) {
	s := compactionBenchStore(b, 10_000)
	b.ReportAllocs()
	start := time.Now()
	n := 0
	for b.Loop() {
		s.comp.mu.Lock()
		clear(s.comp.queues)
		s.comp.publish(map[queueKey][]int64{})
		s.comp.mu.Unlock()
		if got := s.compactOnce(); got != 90_000 {
			b.Fatalf("marked %d, want 90000", got)
		}
		n += 100_000
	}
	b.ReportMetric(float64(n)/time.Since(start).Seconds(), "records/s")
}

// BenchmarkPullCompacted reads BenchTopic/0 sequentially through the pull path with no
// marks and with 90 % of the offsets marked (10,000 keys over 100,000 messages), reported
// as queue offsets passed per second.
func BenchmarkPullCompacted(b *testing.B) {
	s := compactionBenchStore(b, 10_000)
	run := func(b *testing.B) {
		b.ReportAllocs()
		start := time.Now()
		passed := int64(0)
		off := int64(0)
		for b.Loop() {
			r, err := s.GetMessages("BenchTopic", 0, off, 32, 1<<20, nil)
			if err != nil || r.Status != Found && r.Status != NoMatchedMessage {
				b.Fatal(err, r.Status)
			}
			passed += r.NextBeginOffset - off
			off = r.NextBeginOffset
			if off >= 100_000 {
				off = 0
			}
			r.Release()
		}
		b.ReportMetric(float64(passed)/time.Since(start).Seconds(), "offsets/s")
	}
	b.Run("unmarked", run)
	if got := s.compactOnce(); got != 90_000 {
		b.Fatalf("marked %d, want 90000", got)
	}
	b.Run("90pct-marked", run)
}

// BenchmarkCompactionCopy copies 10,000 live 1 KiB records forward (their segment about
// to be deleted) and flushes them, reported as records copied per second.
func BenchmarkCompactionCopy(b *testing.B) {
	s := compactionBenchStore(b, 100_000) // every message its own key: all live
	q, err := s.cqs.Queue("BenchTopic", 0, false)
	if err != nil {
		b.Fatal(err)
	}
	u, err := q.Get(10_000)
	if err != nil {
		b.Fatal(err)
	}
	s.opts.CompactionReadsPerRound = 10_000
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		b.StopTimer()
		waitDispatched(b, s) // the last iteration's copies, which the next must not follow
		s.comp.relocMu.Lock()
		clear(s.comp.reloc.m)
		s.comp.reloc.next = s.MaxOffset(CompactionCopyTopic, 0)
		s.comp.relocMu.Unlock()
		copiedBefore := s.CompactionStats().Copied
		b.StartTimer()
		if limit := s.copyForward(u.Offset); limit != u.Offset {
			b.Fatalf("limit %d, want %d", limit, u.Offset)
		}
		if got := s.CompactionStats().Copied - copiedBefore; got != 10_000 {
			b.Fatalf("copied %d, want 10000", got)
		}
		n += 10_000
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "records/s")
}
