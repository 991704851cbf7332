package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/ferrymq/ferry/commitlog"
	"github.com/ferrymq/ferry/filter"
	"github.com/ferrymq/ferry/internal/mmap"
	"github.com/ferrymq/ferry/internal/testkit"
	"github.com/ferrymq/ferry/message"
)

// benchOptions are production-like options on real files in a temp dir.
func benchOptions(b *testing.B) Options {
	o := DefaultOptions()
	o.Dir = b.TempDir()
	o.SegmentSize = 256 << 20
	o.Logger = o.Logger.Level(0)
	return o
}

// benchRecord returns a 1 KiB-body record for queue q of the benchmark topic.
func benchRecord(b *testing.B, q int32, uniq string) message.Record {
	props, err := message.EncodeProperties(map[string]string{
		message.PropertyUniqKey: uniq, message.PropertyTags: "TagA", message.PropertyKeys: "key-" + uniq,
	})
	if err != nil {
		b.Fatal(err)
	}
	return message.Record{QueueID: q, Body: make([]byte, 1024), Topic: []byte("BenchTopic"), Properties: props,
		BornTimestamp: time.Now().UnixMilli(), BornHost: testHost}
}

// BenchmarkStorePutAsync: one writer, 1 KiB messages over 8 queues, async flush, with the
// dispatcher building consume queues and the index on the other core.
func BenchmarkStorePutAsync(b *testing.B) {
	s := openStore(b, benchOptions(b))
	recs := make([]message.Record, 8)
	for i := range recs {
		recs[i] = benchRecord(b, int32(i), fmt.Sprintf("U%030d", i))
	}
	b.ReportAllocs()
	b.SetBytes(1024)
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		if _, err := s.PutMessage(&recs[i%8], false); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
}

// BenchmarkStorePutSync64: 64 concurrent appenders waiting for group commit.
func BenchmarkStorePutSync64(b *testing.B) {
	o := benchOptions(b)
	o.FlushMode = commitlog.FlushSync
	s := openStore(b, o)
	b.SetBytes(1024)
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	per := b.N/64 + 1
	for w := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rec := benchRecord(b, int32(w%8), fmt.Sprintf("U%030d", w))
			for range per {
				if res, err := s.PutMessage(&rec, true); err != nil || !res.Durable {
					b.Error(err, res.Status)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(per*64)/time.Since(start).Seconds(), "msgs/s")
}

// BenchmarkStorePutManyQueues compares appends spread over 10,000 topic-queues with 8.
func BenchmarkStorePutManyQueues(b *testing.B) {
	for _, queues := range []int{8, 10000} {
		b.Run(strconv.Itoa(queues), func(b *testing.B) {
			s := openStore(b, benchOptions(b))
			recs := make([]message.Record, queues)
			for i := range recs {
				recs[i] = benchRecord(b, int32(i%16), fmt.Sprintf("U%030d", i))
				recs[i].Topic = []byte(fmt.Sprintf("T%d", i/16))
			}
			b.SetBytes(1024)
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < b.N; i++ {
				if _, err := s.PutMessage(&recs[i%queues], false); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
		})
	}
}

// BenchmarkStoreGetSequential reads a queue from start to end through the consume queue
// and the commit log, 32 messages per call, as a consumer does.
func BenchmarkStoreGetSequential(b *testing.B) {
	s := openStore(b, benchOptions(b))
	const n = 100_000
	rec := benchRecord(b, 0, "U")
	for range n {
		if _, err := s.PutMessage(&rec, false); err != nil {
			b.Fatal(err)
		}
	}
	waitDispatched(b, s)
	// The same store with and without the pull path's size-and-magic check, so one run
	// shows what the check costs.
	b.Run("checked", func(b *testing.B) { benchGetSequential(b, s, n) })
	b.Run("unchecked", func(b *testing.B) {
		s.noReadChecks = true
		defer func() { s.noReadChecks = false }()
		benchGetSequential(b, s, n)
	})
}

func benchGetSequential(b *testing.B, s *Store, n int64) {
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	read := 0
	for off := int64(0); read < b.N; {
		r, err := s.GetMessages("BenchTopic", 0, off, 32, 1<<20, nil)
		if err != nil || r.Status != Found {
			b.Fatal(err, r.Status)
		}
		read += len(r.Messages)
		off = r.NextBeginOffset
		if off >= n {
			off = 0
		}
		r.Release()
	}
	b.StopTimer()
	b.ReportMetric(float64(read)/time.Since(start).Seconds(), "msgs/s")
}

// BenchmarkStoreQueryByKey looks up random keys among 1,000,000 indexed ones and reports
// the latency percentiles.
func BenchmarkStoreQueryByKey(b *testing.B) {
	const keys = 1_000_000
	s := openStore(b, benchOptions(b))
	for i := range keys {
		rec := benchRecord(b, int32(i%8), fmt.Sprintf("Q%09d", i))
		rec.Body = rec.Body[:64]
		if _, err := s.PutMessage(&rec, false); err != nil {
			b.Fatal(err)
		}
	}
	waitDispatched(b, s)
	rng := rand.New(rand.NewPCG(1, 2))
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		k := fmt.Sprintf("key-Q%09d", rng.IntN(keys))
		t0 := time.Now()
		r, err := s.QueryByKey("BenchTopic", k, false, 32, 0, 1<<62)
		if err != nil || len(r.Records) != 1 {
			b.Fatal(err, k)
		}
		r.Release()
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

// recoverChild is the child side of BenchmarkRecoverAfterKill (args: the store's
// directory and a size in bytes): fill a store to that size, print READY and wait to be
// killed.
func recoverChild(args []string) {
	dir := args[0]
	size, _ := strconv.ParseInt(args[1], 10, 64)
	o := DefaultOptions()
	o.Dir = dir
	s, err := Open(o)
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(2)
	}
	s.Start()
	props, _ := message.EncodeProperties(map[string]string{message.PropertyTags: "TagA"})
	rec := message.Record{Body: make([]byte, 1024), Topic: []byte("BenchTopic"), Properties: props, BornHost: testHost}
	for i := 0; s.CommitLog().MaxOffset() < size; i++ {
		rec.QueueID = int32(i % 8)
		if _, err := s.PutMessage(&rec, false); err != nil {
			fmt.Println("ERR", err)
			os.Exit(3)
		}
	}
	fmt.Println("READY")
	select {}
}

// BenchmarkRecoverAfterKill: a child fills a 4 GiB commit log (async flush) and is killed
// with SIGKILL; the benchmark measures how long Open takes to recover the store.
func BenchmarkRecoverAfterKill(b *testing.B) {
	size := int64(4 << 30)
	if v := os.Getenv("FERRY_RECOVER_BYTES"); v != "" {
		size, _ = strconv.ParseInt(v, 10, 64)
	}
	dir := b.TempDir()
	child := testkit.StartChild(b, "recover", dir, strconv.FormatInt(size, 10))
	if line := child.Line(b, time.Hour); line != "READY" {
		b.Fatalf("child: %q", line)
	}
	child.Kill(b)
	b.ResetTimer()
	for range b.N {
		o := DefaultOptions()
		o.Dir = dir
		t0 := time.Now()
		s, err := Open(o)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(time.Since(t0).Seconds(), "recover-s")
		b.StopTimer()
		// Leave it crashed again for the next iteration: no clean shutdown marker.
		_ = s.closeParts()
		_ = s.unlock()
		_ = mmap.OSFS{}.WriteFileAtomic(o.abortPath(), nil)
		b.StartTimer()
	}
	_ = context.Background()
}

// sqlHalf is a Filter as the broker builds one for an SQL92 subscription: every record's
// properties are evaluated. The expression matches every other message.
type sqlHalf struct{ x *filter.Expr }

func (sqlHalf) MatchTagsCode(int64) bool { return true }

func (f sqlHalf) MatchRecord(rec []byte) bool {
	props, err := message.RecordProperties(rec)
	return err == nil && f.x.Match(props)
}

// BenchmarkPullSQL92 reads 1 KiB messages with user properties unfiltered and through an
// SQL92 filter matching half of them, in the same run (docs/benchmarks.md): msgs/s counts
// the messages returned, scanned/s the records examined.
func BenchmarkPullSQL92(b *testing.B) {
	s := openStore(b, benchOptions(b))
	const n = 100_000
	for i := range n {
		rec := benchRecord(b, 0, "U")
		props, err := message.EncodeProperties(map[string]string{
			message.PropertyUniqKey: fmt.Sprintf("U%031d", i), "color": []string{"red", "blue"}[i%2],
			"n": strconv.Itoa(i), "region": "eu-west-1"})
		if err != nil {
			b.Fatal(err)
		}
		rec.Properties = props
		if _, err := s.PutMessage(&rec, false); err != nil {
			b.Fatal(err)
		}
	}
	waitDispatched(b, s)
	x, err := filter.Compile("color = 'red' AND n >= 0 AND region IN ('eu-west-1', 'us-east-1')")
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		f    Filter
	}{{"unfiltered", nil}, {"sql92-half", sqlHalf{x}}} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			start := time.Now()
			read, scanned := 0, int64(0)
			for off := int64(0); read < b.N; {
				r, err := s.PullMessages("BenchTopic", 0, off, 32, 1<<20, tc.f)
				if err != nil || r.Status != Found {
					b.Fatal(err, r.Status)
				}
				read += len(r.Messages)
				scanned += r.NextBeginOffset - off
				off = r.NextBeginOffset
				if off >= n {
					off = 0
				}
				r.Release()
			}
			secs := time.Since(start).Seconds()
			b.ReportMetric(float64(read)/secs, "msgs/s")
			b.ReportMetric(float64(scanned)/secs, "scanned/s")
		})
	}
}
