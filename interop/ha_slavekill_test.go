//go:build linux

package interop

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/internal/testkit"
	"github.com/ferrymq/ferry/message"
)

// A SYNC_MASTER's slave (a child process) is killed with SIGKILL 5 times while official
// producers send synchronously at their default send timeout (3 s) and retries (3), and
// restarted each time on its data directory. The master answers the sends waiting for the
// dead slave at once (SLAVE_NOT_AVAILABLE, message stored), so no client times out and
// resends: the master's commit log, read offline at the end, holds every message at most
// once (by UNIQ_KEY and by body). The master keeps the default haSlaveTimeout (5 s,
// longer than the clients' timeout), the setting under which waiting out the timeout
// stored in-flight messages twice.
func TestSyncMasterSlaveKillNoDuplicates(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes; -short")
	}
	const (
		topic   = "HASlaveKill"
		kills   = 5
		senders = 8
	)
	c := newHACluster(t, "")
	m := &haBroker{name: "broker-a", role: "SYNC_MASTER", listen: testkit.FreeAddr(t), haListen: testkit.FreeAddr(t),
		dataDir: filepath.Join(c.dir, "broker-a-m")}
	c.startBroker(t, m)
	s := &haBroker{name: "broker-a", id: 1, role: "SLAVE", listen: testkit.FreeAddr(t), haMaster: m.haListen,
		dataDir: filepath.Join(c.dir, "broker-a-s")}
	c.startBroker(t, s)
	slaves := func() string {
		kv, err := c.runtime(m.listen)
		if err != nil {
			return ""
		}
		return kv["ferryHaSlaves"]
	}
	haEventually(t, 30*time.Second, m.proc, func() bool { return slaves() == "1" }, "slave connected")
	c.createTopic(t, topic)

	p, err := rocketmq.NewProducer(
		producer.WithNsResolver(primitive.NewPassthroughResolver([]string{c.nsAddr})),
		producer.WithGroupName("ha-slavekill-pg"), producer.WithInstanceName(instance("ha-slavekill")))
	require.NoError(t, err)
	require.NoError(t, p.Start())
	defer func() { _ = p.Shutdown() }()

	var (
		stop     atomic.Bool
		wg       sync.WaitGroup
		mu       sync.Mutex
		statuses = map[string]int{} // outcome → count
		sent     atomic.Int64
		ok       atomic.Int64
		gone     atomic.Int64 // SLAVE_NOT_AVAILABLE
	)
	for w := range senders {
		wg.Go(func() {
			for i := 0; !stop.Load(); i++ {
				msg := primitive.NewMessage(topic, fmt.Appendf(nil, "w%d-%07d", w, i))
				sent.Add(1)
				r, err := p.SendSync(context.Background(), msg)
				outcome := "error"
				if err == nil {
					switch r.Status {
					case primitive.SendOK:
						outcome = "SEND_OK"
						ok.Add(1)
					case primitive.SendSlaveNotAvailable:
						outcome = "SLAVE_NOT_AVAILABLE"
						gone.Add(1)
					case primitive.SendFlushSlaveTimeout:
						outcome = "FLUSH_SLAVE_TIMEOUT"
					default:
						outcome = fmt.Sprintf("status %d", r.Status)
					}
				}
				mu.Lock()
				statuses[outcome]++
				mu.Unlock()
			}
		})
	}
	stopLoad := func() {
		stop.Store(true)
		wg.Wait()
	}
	defer stopLoad()

	for k := range kills {
		okBefore := ok.Load()
		haEventually(t, 30*time.Second, m.proc, func() bool { return ok.Load() >= okBefore+200 }, "sends acknowledged by the slave")
		require.NoError(t, s.proc.cmd.Process.Signal(syscall.SIGKILL))
		<-s.proc.exited
		goneBefore := gone.Load()
		haEventually(t, 30*time.Second, m.proc, func() bool { return gone.Load() >= goneBefore+50 },
			fmt.Sprintf("kill %d: sends answered SLAVE_NOT_AVAILABLE", k+1))
		c.startBroker(t, s)
		haEventually(t, 30*time.Second, m.proc, func() bool { return slaves() == "1" }, fmt.Sprintf("kill %d: slave back", k+1))
	}
	okBefore := ok.Load()
	haEventually(t, 30*time.Second, m.proc, func() bool { return ok.Load() >= okBefore+200 }, "sends acknowledged after the last kill")
	stopLoad()
	haTerm(t, s.proc, "slave")
	haTerm(t, m.proc, "master")
	haTerm(t, c.ns, "name server")

	byKey, byBody := map[string]int{}, map[string]int{}
	stored := 0
	walkHALog(t, openHALog(t, m.dataDir), func(rec *message.Record) {
		if string(rec.Topic) != topic {
			return
		}
		stored++
		key, _ := rec.Property(message.PropertyUniqKey)
		byKey[string(key)]++
		byBody[string(rec.Body)]++
	})
	var dups []string
	for k, n := range byKey {
		if n > 1 {
			dups = append(dups, fmt.Sprintf("%s ×%d", k, n))
		}
	}
	for b, n := range byBody {
		if n > 1 {
			dups = append(dups, fmt.Sprintf("body %s ×%d", b, n))
		}
	}
	t.Logf("%d kills: %d sends (%v), %d stored on the master", kills, sent.Load(), statuses, stored)
	require.Empty(t, dups[:min(len(dups), 10)], "messages stored twice on the master (%d, first 10 shown)", len(dups))
	require.Positive(t, stored)
	require.LessOrEqual(t, int64(stored), sent.Load())
}

// walkHALog calls fn for every record of a stopped broker's commit log, segment by
// segment from its first, up to the first segment end without data.
func walkHALog(tb testing.TB, l *haLog, fn func(*message.Record)) {
	tb.Helper()
	var rec message.Record
	for _, base := range l.segs {
		f, size := l.files[base], l.sizes[base]
		var head [message.BlankHeaderSize]byte
		pos := int64(0)
		for pos+int64(len(head)) <= size {
			if _, err := f.ReadAt(head[:], pos); err != nil {
				tb.Fatalf("segment %d at %d: %v", base, pos, err)
			}
			n, _, err := message.PeekHeader(head[:])
			require.NoError(tb, err)
			if n == 0 {
				return // the end of the data
			}
			if message.IsBlank(head[:]) {
				break // the rest of the segment is filler
			}
			b, err := l.record(base + pos)
			require.NoError(tb, err, "segment %d at %d", base, pos)
			_, err = rec.Decode(b)
			require.NoError(tb, err, "segment %d at %d", base, pos)
			fn(&rec)
			pos += int64(n)
		}
	}
}
