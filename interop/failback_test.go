//go:build linux

package interop

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/client"
	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/testutil"
)

// Read failback with real processes (the children of ha_stress_test.go): consumers read
// from a master and its slave; the master is killed with SIGKILL and they go on from the
// slave; the master is restarted on its data directory, and the consumers move back to it
// — the slave's pull answers suggest the master (suggestWhichBrokerId 0) and the routes
// list it again — without skipping a message, re-delivering at most what was consumed
// but not committed on the master.

// failbackQueueProp carries the queue a test message goes to.
const failbackQueueProp = "FailbackQueue"

// failbackGate holds consumer handlers while closed, so pulled messages wait in the
// consumers' caches instead of being consumed.
type failbackGate struct {
	mu     sync.RWMutex
	closed bool // guarded by the test goroutine
}

func (g *failbackGate) pass() { g.mu.RLock(); g.mu.RUnlock() } //nolint:staticcheck // an empty critical section is the point

func (g *failbackGate) close() {
	g.mu.Lock()
	g.closed = true
}

func (g *failbackGate) open() {
	if g.closed {
		g.closed = false
		g.mu.Unlock()
	}
}

// failbackSide is one consumer group of the test and what was measured of it.
type failbackSide struct {
	name, group string
	rec         *recorder
	atKill      int   // deliveries when the master was killed
	durable     int64 // the group's offsets (summed) in the master's offsets file at the kill
	atCommit    int   // deliveries when the returned master first held the group's position
	doneB       time.Duration
}

// redeliveries lists the deliveries of a queue offset already delivered to the side,
// and counts all deliveries.
func (s *failbackSide) redeliveries() (dups []string, total int) {
	s.rec.mu.Lock()
	defer s.rec.mu.Unlock()
	seen := map[[2]int64]bool{}
	for _, d := range s.rec.all {
		k := [2]int64{int64(d.queue), d.offset}
		if seen[k] {
			dups = append(dups, d.body)
		}
		seen[k] = true
	}
	return dups, len(s.rec.all)
}

// deliveries is how many messages the side has been handed.
func (s *failbackSide) deliveries() int {
	s.rec.mu.Lock()
	defer s.rec.mu.Unlock()
	return len(s.rec.all)
}

// durableOffsets sums the offsets of group for topic in the offsets file of a broker's
// data directory (what a restarted broker starts with); 0 without a file.
func durableOffsets(t *testing.T, dataDir, group, topic string) int64 {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dataDir, "config", "consumerOffset.json"))
	if os.IsNotExist(err) {
		return 0
	}
	require.NoError(t, err)
	w, err := protocol.DecodeConsumerOffsetSerializeWrapper(data)
	require.NoError(t, err)
	var sum int64
	for _, off := range w.OffsetTable[topic+"@"+group] {
		sum += off
	}
	return sum
}

// TestFailbackToRestartedMaster: a Ferry push consumer and an official push consumer
// (two groups) consume a first batch from an ASYNC_MASTER; then their handlers are held
// while a second batch is sent and replicated, and the master is killed (SIGKILL). Both
// consume the second batch — the part not cached before the kill from the slave — once
// their routes drop the master (Ferry's rebalance: 1 s here; the Go client's route
// refresh: 30 s). The master is restarted on its data directory; probe rounds of one
// message per queue are sent to it until a round is served wholly by the master, none by
// the slave: the consumers pull from the master again. Every message is consumed
// (none skipped). Of the first two batches, the queue offsets delivered twice are at most
// the group's uncommitted window: what it consumed beyond the offsets in the master's
// offsets file at the kill, up to when the returned master first held its position
// (measured: none). Of the probes, Ferry's consumer gets none twice, the official one at
// most one pull per queue (see below; measured over 6 runs: none, or 7 messages of the
// first round in 3 of them).
//
// Most of the time is the Go client's: its route refresh (30 s) and, after the master
// returns, a rebalance (every 20 s) that finds the restarted master without the
// consumer's heartbeat, drops the queues and heartbeats, and the next one that takes
// them back.
func TestFailbackToRestartedMaster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes and waits for the Go client's route refresh; -short")
	}
	const topic, queues, nA, nB = "Failback", 8, 64, 240
	start := time.Now()
	c := newHACluster(t, "")
	m, s := c.startGroup(t, "broker-fb", "ASYNC_MASTER", 0, nil)
	admin, err := client.New(client.WithNameServers(c.nsAddr), client.WithInstanceName(instance("fb-admin")))
	require.NoError(t, err)
	t.Cleanup(func() { _ = admin.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// On the slave too: it would copy the topic from the master only within 10 s.
	require.NoError(t, admin.Admin().CreateTopic(ctx, client.TopicConfig{Name: topic, ReadQueues: queues, WriteQueues: queues},
		client.Target{Brokers: []string{m.listen, s.listen}}))

	// Messages go to the queue their property names, so a round of `queues` messages
	// reaches every queue.
	byProp := client.QueueSelectorFunc(func(msg *message.Message, qs []client.MessageQueue) int {
		n, _ := strconv.Atoi(msg.Property(failbackQueueProp))
		return n % len(qs)
	})
	p := haProducers(t, c.nsAddr, 1, client.WithSelector(byProp))[0]
	send := func(prefix string, n int) []string {
		t.Helper()
		bs := bodies(prefix, n)
		for i, b := range bs {
			msg := message.NewMessage(topic, []byte(b))
			msg.SetProperty(failbackQueueProp, strconv.Itoa(i%queues))
			haEventually(t, 20*time.Second, m.proc, func() bool {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				_, err := p.Send(ctx, msg)
				return err == nil
			}, "send "+b)
		}
		return bs
	}

	// The consumer helpers only read the name server address of the cluster.
	ns := &testutil.Cluster{NamesrvAddr: c.nsAddr}
	var gate failbackGate
	ferry := &failbackSide{name: "ferry", group: "cg-failback-ferry", rec: newRecorder()}
	official := &failbackSide{name: "official", group: "cg-failback-official", rec: newRecorder()}
	sides := []*failbackSide{ferry}
	ferryRecord := ferryHandler(ferry.rec, "ferry")
	ferryPC := newFerryConsumer(t, ns, ferry.group, topic, "*", func(ctx context.Context, msgs []*client.MessageExt) client.ConsumeResult {
		gate.pass()
		return ferryRecord(ctx, msgs)
	}, client.WithRebalanceInterval(time.Second), client.WithCommitInterval(time.Second),
		client.WithQueueCacheLimits(4, 1<<20), client.WithPullBatch(4))
	// The official push consumer races with itself when it drops and re-adds a queue
	// (two pull goroutines writing pushConsumer state, push_consumer.go:716), which the
	// race detector reports: it takes part only without -race.
	var officialPC rocketmq.PushConsumer
	if !raceDetector {
		sides = append(sides, official)
		officialRecord := official.rec.handler("official")
		officialPC = newPushConsumer(t, ns, official.group, topic, "*", func(ctx context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			gate.pass()
			return officialRecord(ctx, msgs...)
		}, consumer.WithPullBatchSize(4), consumer.WithPullThresholdForQueue(4),
			consumer.WithPullThresholdForTopic(4*queues)) // else it overrides the queue's threshold
	}
	t.Cleanup(gate.open) // registered after the consumers: runs before they close

	a := send("a-", nA)
	for _, sd := range sides {
		sd.rec.waitAll(t, a, 60*time.Second, sd.name+": the first batch consumed from the master")
	}

	// Held handlers: what the consumers pull of the second batch now stays in their
	// caches — at most 8 per queue each (4 cached and a pull of 4), 64 in all.
	gate.close()
	b := send("b-", nB)
	haEventually(t, 20*time.Second, s.proc, func() bool {
		end, err1 := c.runtimeInt(m.listen, "commitLogMaxOffset")
		replica, err2 := c.runtimeInt(s.listen, "ferryHaReplicaOffset")
		return err1 == nil && err2 == nil && replica == end
	}, "the slave has the master's log")
	// The first batch's offsets reach the master's offsets file (the consumers commit
	// every 1 s and 5 s, the master writes the file every 5 s): nothing consumed is
	// uncommitted when the master dies, so the window is what is consumed after.
	haEventually(t, 30*time.Second, m.proc, func() bool {
		for _, sd := range sides {
			if durableOffsets(t, m.dataDir, sd.group, topic) != nA {
				return false
			}
		}
		return true
	}, "the first batch's offsets in the master's offsets file")
	for _, sd := range sides {
		sd.atKill = sd.deliveries()
	}
	require.NoError(t, m.proc.cmd.Process.Signal(syscall.SIGKILL))
	<-m.proc.exited
	killed := time.Now()
	for _, sd := range sides {
		sd.durable = durableOffsets(t, m.dataDir, sd.group, topic)
	}
	slave := newRaw(t, s.listen)
	slaveGets := getTotal(slave)
	gate.open()

	for _, sd := range sides { // Ferry's is quick; the official consumer's waits for its route refresh
		sd.rec.waitAll(t, b, 60*time.Second, sd.name+": the second batch consumed with the master down")
		sd.doneB = time.Since(killed)
	}
	// Each consumer took at least nB − 64 messages from the slave.
	require.GreaterOrEqual(t, getTotal(slave)-slaveGets, int64(len(sides)*(nB-64)), "the slave served the second batch")

	c.startBroker(t, m) // the same listen address and data directory
	restarted := time.Now()
	master := newRaw(t, m.listen)
	var positions []int64
	haEventually(t, 60*time.Second, m.proc, func() bool {
		positions = positions[:0]
		for _, sd := range sides {
			positions = append(positions, committedOn(master, sd.group, topic, queues))
		}
		if time.Since(restarted) > 50*time.Second {
			t.Logf("committed on the returned master (ferry, official): %v", positions)
		}
		for _, p := range positions {
			if p < nA+nB {
				return false
			}
		}
		return true
	}, "both groups committed their position to the returned master")
	for _, sd := range sides {
		sd.atCommit = sd.deliveries()
	}
	committed := time.Since(restarted)

	var probes []string
	rounds := 0
	haEventually(t, 90*time.Second, m.proc, func() bool {
		rounds++
		s0, m0 := getTotal(slave), getTotal(master)
		round := send("c"+strconv.Itoa(rounds)+"-", queues)
		probes = append(probes, round...)
		for _, sd := range sides {
			sd.rec.waitAll(t, round, 60*time.Second, sd.name+": a probe round consumed")
		}
		return getTotal(slave) == s0 && getTotal(master)-m0 >= int64(len(sides)*queues)
	}, "a probe round served by the master alone")
	back := time.Since(restarted)

	// Closed here, while both brokers run (the restarted master's cleanup comes first).
	require.NoError(t, ferryPC.Close())
	if officialPC != nil {
		require.NoError(t, officialPC.Shutdown())
	}
	all := append(append(append([]string(nil), a...), b...), probes...)
	for _, sd := range sides {
		require.Equal(t, len(all), sd.rec.distinct(all), "%s: every message consumed", sd.name)
		dups, total := sd.redeliveries()
		var old, probed []string // redelivered from before the master returned, and probes
		for _, d := range dups {
			if strings.HasPrefix(d, "c") {
				probed = append(probed, d)
			} else {
				old = append(old, d)
			}
		}
		window := sd.atCommit - int(sd.durable)
		t.Logf("%s: %d deliveries of %d messages, redelivered %d %v and %d probes %v; window %d (%d consumed past the %d durable offsets at the kill, %d during the outage); second batch done %s after the kill",
			sd.name, total, len(all), len(old), old[:min(len(old), 10)], len(probed), probed[:min(len(probed), 10)],
			window, sd.atKill-int(sd.durable), sd.durable, sd.atCommit-sd.atKill, sd.doneB.Round(time.Millisecond))
		// The uncommitted window: what the group consumed beyond its offsets in the
		// master's offsets file at the kill, until the returned master held its position.
		require.LessOrEqual(t, len(old), window, "%s: redeliveries beyond the uncommitted window", sd.name)
		// Messages sent to the returned master: Ferry's consumer keeps its queues and
		// consumes each once. The Go client finds the restarted master without its
		// heartbeat, drops its queues at its next rebalance and takes them back; a pull
		// it had parked on the slave still hands its messages to the handler, and the
		// new queue pulls them again from the offset it persisted on dropping: at most
		// one pull (4 messages) per queue.
		limit := 0
		if sd == official {
			limit = queues * 4
		}
		require.LessOrEqual(t, len(probed), limit, "%s: probes redelivered", sd.name)
	}
	t.Logf("master restarted: offsets committed to it after %s, consumers on it after %s (%d probe rounds); test took %s",
		committed.Round(time.Millisecond), back.Round(time.Millisecond), rounds, time.Since(start).Round(time.Millisecond))
}
