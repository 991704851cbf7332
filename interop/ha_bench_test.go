//go:build linux

package interop

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ferrymq/ferry/client"
	"github.com/ferrymq/ferry/internal/testkit"
	"github.com/ferrymq/ferry/message"
)

// BenchmarkTwoMastersTwoSlaves: a name server, broker-a and broker-b masters (SYNC_MASTER
// or ASYNC_MASTER) each with a SLAVE, all child processes on this host; 4 Ferry
// producers (own Client each, HashSelector by 1,024 keys: ordered messages, at most 256
// in flight each), 1 KiB bodies, b.N messages. Reported: msgs/s acknowledged (SEND_OK);
// the replication lag under load, sampled every 50 ms on both masters as commitLogMaxOffset
// − ferryHaSlaveAckOffset (lag-bytes-mean, lag-bytes-max, the worse master of each
// sample); lag-ms-est, the mean lag in bytes divided by the acknowledged byte rate; and
// drain-ms, the time from the last acknowledgement until both slaves have acknowledged
// their master's end. Run with -benchtime=Nx (say 500000x): every size starts a cluster.
func BenchmarkTwoMastersTwoSlaves(b *testing.B) {
	bin := testkit.Binary(b, ferryPkg)
	for _, mode := range []struct{ name, role string }{{"sync", "SYNC_MASTER"}, {"async", "ASYNC_MASTER"}} {
		b.Run(mode.name, func(b *testing.B) {
			benchTwoGroups(b, bin, mode.role)
		})
	}
}

func benchTwoGroups(b *testing.B, bin, role string) {
	c := newHACluster(b, bin)
	ma, _ := c.startGroup(b, "broker-a", role, 0, nil)
	mb, _ := c.startGroup(b, "broker-b", role, 0, nil)
	masters := []string{ma.listen, mb.listen}
	const topic = "HABench"
	c.createTopic(b, topic)
	ps := haProducers(b, c.nsAddr, 4, client.WithRetries(2))
	body := make([]byte, haBodySize)
	for i := range body {
		body[i] = 'a' + byte(i%26)
	}
	// Routes and connections, and every queue's lane once.
	if err := haSendN(ps, topic, 4*1024, body); err != nil {
		b.Fatal(err)
	}

	ends := func() int64 {
		var sum int64
		for _, addr := range masters {
			n, err := c.runtimeInt(addr, "commitLogMaxOffset")
			if err != nil {
				b.Fatal(err)
			}
			sum += n
		}
		return sum
	}
	lag := func() (int64, error) {
		var worst int64
		for _, addr := range masters {
			kv, err := c.runtime(addr)
			if err != nil {
				return 0, err
			}
			var end, ack int64
			if _, err := fmt.Sscan(kv["commitLogMaxOffset"], &end); err != nil {
				return 0, fmt.Errorf("commitLogMaxOffset %q: %w", kv["commitLogMaxOffset"], err)
			}
			if _, err := fmt.Sscan(kv["ferryHaSlaveAckOffset"], &ack); err != nil {
				return 0, fmt.Errorf("ferryHaSlaveAckOffset %q: %w", kv["ferryHaSlaveAckOffset"], err)
			}
			worst = max(worst, end-ack)
		}
		return worst, nil
	}
	stopSampling := make(chan struct{})
	var samples []int64
	var sampler sync.WaitGroup
	sampler.Go(func() {
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stopSampling:
				return
			case <-t.C:
				if l, err := lag(); err == nil {
					samples = append(samples, l)
				}
			}
		}
	})

	logStart := ends()
	b.ResetTimer()
	start := time.Now()
	err := haSendN(ps, topic, b.N, body)
	elapsed := time.Since(start)
	b.StopTimer()
	close(stopSampling)
	sampler.Wait()
	if err != nil {
		b.Fatal(err)
	}
	drainStart := time.Now()
	for {
		l, err := lag()
		if err != nil {
			b.Fatal(err)
		}
		if l == 0 {
			break
		}
		if time.Since(drainStart) > 30*time.Second {
			b.Fatalf("slaves still %d bytes behind 30 s after the load", l)
		}
		time.Sleep(time.Millisecond)
	}
	drain := time.Since(drainStart)

	rate := float64(b.N) / elapsed.Seconds()
	var sum, worst int64
	for _, s := range samples {
		sum += s
		worst = max(worst, s)
	}
	mean := 0.0
	if len(samples) > 0 {
		mean = float64(sum) / float64(len(samples))
	}
	// The acknowledged byte rate: the masters' logs grew by this much in elapsed.
	bytesPerSec := float64(ends()-logStart) / elapsed.Seconds()
	b.ReportMetric(rate, "msgs/s")
	b.ReportMetric(mean, "lag-bytes-mean")
	b.ReportMetric(float64(worst), "lag-bytes-max")
	b.ReportMetric(mean/bytesPerSec*1e3, "lag-ms-est")
	b.ReportMetric(float64(drain.Microseconds())/1e3, "drain-ms")
	b.ReportMetric(0, "ns/op")
}

// haSendN sends n messages spread over the producers (keys key-0 … key-1023, so ordered
// by HashSelector), at most 256 in flight per producer, and waits for every result.
func haSendN(ps []*client.Producer, topic string, n int, body []byte) error {
	var failures atomic.Int64
	var firstErr atomic.Pointer[error]
	var wg sync.WaitGroup
	for i, p := range ps {
		share := n / len(ps)
		if i < n%len(ps) {
			share++
		}
		wg.Go(func() {
			window := make(chan struct{}, 256)
			var inflight sync.WaitGroup
			done := func(_ client.SendResult, err error) {
				if err != nil {
					failures.Add(1)
					firstErr.CompareAndSwap(nil, &err)
				}
				<-window
				inflight.Done()
			}
			for seq := range share {
				if failures.Load() > 0 {
					break
				}
				m := message.NewMessage(topic, body)
				m.SetKeys(fmt.Sprintf("key-%d", (seq*len(ps)+i)%1024))
				window <- struct{}{}
				inflight.Add(1)
				p.SendAsync(context.Background(), m, done)
			}
			inflight.Wait()
		})
	}
	wg.Wait()
	if f := failures.Load(); f > 0 {
		return fmt.Errorf("%d sends failed, first: %w", f, *firstErr.Load())
	}
	return nil
}
