//go:build linux

package interop

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/broker/offsets"
	"github.com/ferrymq/ferry/conf"
	"github.com/ferrymq/ferry/internal/mmap"
	"github.com/ferrymq/ferry/internal/testkit"
	"github.com/ferrymq/ferry/launch"
	"github.com/ferrymq/ferry/testutil"
)

// TestFerryTxMessagesSurviveKills: a producer process sending multi-message transactions
// (64 messages over two topics and a consumer offset of a group of their own; committed,
// rolled back or left to the check-back) and
// the broker process (sync flush) are SIGKILLed at random points, one or the other or
// both, over many rounds; each is restarted. At the end a producer of the group resolves
// what is pending, and the broker's store, read offline, holds every transaction either
// completely — each message exactly once — or not at all: every transaction that reached
// the broker and was to commit completely, every one to roll back not at all; and the
// offsets file holds exactly the offsets of the committed ones.
func TestFerryTxMessagesSurviveKills(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed>>1))
	dir := t.TempDir()
	bin := testkit.Binary(t, ferryPkg)
	dataDir := filepath.Join(dir, "data")
	nsAddr, brokerAddr := testkit.FreeAddr(t), testkit.FreeAddr(t)
	b := startTxBroker(t, bin, dataDir, nsAddr, brokerAddr)

	prepared := map[int]bool{}
	note := func(lines []string) {
		for _, l := range lines {
			if v, ok := strings.CutPrefix(l, "P "); ok {
				i, err := strconv.Atoi(v)
				require.NoError(t, err, "child line %q", l)
				prepared[i] = true
			}
		}
	}
	const rounds = 10
	var child *testkit.Child
	kills := map[string]int{}
	for r := range rounds {
		if child == nil {
			child = testkit.StartChild(t, "ferrytxm", nsAddr, strconv.Itoa(r*1_000_000), conf.DefaultBrokerConfig().BrokerName)
			require.Equal(t, "READY", child.Line(t, 30*time.Second))
		}
		// Run until the producer has prepared a random number of transactions.
		for range 3 + rng.IntN(40) {
			note([]string{child.Line(t, 60*time.Second)})
		}
		// A random moment just after a local transaction returned: its END_TRANSACTION is
		// on the way or being committed. (A chosen instant, not a wait for a condition.)
		<-time.After(time.Duration(rng.IntN(3000)) * time.Microsecond)
		switch rng.IntN(3) {
		case 0:
			kills["broker"]++
			require.NoError(t, b.cmd.Process.Signal(syscall.SIGKILL))
			<-b.exited
			b = startTxBroker(t, bin, dataDir, nsAddr, brokerAddr)
		case 1:
			kills["producer"]++
			child.Kill(t)
			note(child.Rest())
			child = nil
		default:
			kills["both"]++
			require.NoError(t, b.cmd.Process.Signal(syscall.SIGKILL))
			child.Kill(t)
			note(child.Rest())
			child = nil
			<-b.exited
			b = startTxBroker(t, bin, dataDir, nsAddr, brokerAddr)
		}
	}
	if child != nil {
		child.Kill(t)
		note(child.Rest())
	}
	t.Logf("kills %v; %d transactions prepared", kills, len(prepared))

	// A producer of the group resolves every pending transaction; when every committed one
	// is consumable and no check came for 3 s, nothing is left to resolve.
	cl, tp, ck, err := newMultiKillProducer(nsAddr, instance("ferrytx-multi-decider"))
	require.NoError(t, err)
	defer func() { require.NoError(t, cl.Close()) }()
	defer func() { require.NoError(t, tp.Close()) }()
	require.NoError(t, tp.Register(context.Background(), multiKillTopicA, multiKillTopicB))
	cluster := &testutil.Cluster{NamesrvAddr: nsAddr}
	col := newCollector()
	for _, topic := range []string{multiKillTopicA, multiKillTopicB} {
		pc := newPushConsumer(t, cluster, "ferrytx-multi-kill-cg-"+topic, topic, "*", col.handler)
		defer func() { _ = pc.Shutdown() }()
	}
	testutil.Eventually(t, 120*time.Second, func() bool {
		col.mu.Lock()
		defer col.mu.Unlock()
		for i := range prepared {
			if multiKillCommits(i) && col.count[fmt.Sprintf("mk-%d-%d", i, multiKillItems-1)] == 0 {
				return false
			}
		}
		return time.Since(time.Unix(0, ck.last.Load())) > 3*time.Second
	}, "every prepared committed transaction delivered, then no check for 3 s")
	require.NoError(t, b.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-b.exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("ferry did not exit after SIGTERM\n%s", b.log)
	}

	stored := map[string]int{}
	for _, topic := range []string{multiKillTopicA, multiKillTopicB} {
		for body, k := range countStored(t, dataDir, topic) {
			stored[body] += k
		}
	}
	txns := map[int]int{} // transaction → items stored
	for body, k := range stored {
		var i, item int
		_, err := fmt.Sscanf(body, "mk-%d-%d", &i, &item)
		require.NoError(t, err, "stored body %q", body)
		require.Equal(t, 1, k, "%s stored %d times", body, k)
		txns[i]++
	}
	var wrong []string
	for i, n := range txns {
		if n != multiKillItems || !multiKillCommits(i) {
			wrong = append(wrong, fmt.Sprintf("txn %d: %d of %d messages stored (commit %v)", i, n, multiKillItems,
				multiKillCommits(i)))
		}
	}
	for i := range prepared {
		if multiKillCommits(i) && txns[i] == 0 {
			wrong = append(wrong, fmt.Sprintf("txn %d: prepared, to commit, nothing stored", i))
		}
	}
	// The offsets: exactly those of the committed transactions, each as it committed it.
	cfg := conf.DefaultBrokerConfig()
	cfg.DataDir, cfg.CommitLogSegmentSize = dataDir, txKillSegmentSize
	bo, err := launch.BrokerOptions(cfg, mmap.OSFS{}, zerolog.Nop())
	require.NoError(t, err)
	oo := offsets.DefaultOptions()
	oo.Dir = bo.Store.Dir
	ost, err := offsets.Open(oo)
	require.NoError(t, err)
	defer func() { require.NoError(t, ost.Close()) }()
	for _, g := range ost.Groups() {
		var i int
		if _, err := fmt.Sscanf(g, "mkg-%d", &i); err != nil {
			continue // the test's push consumers
		}
		if txns[i] == 0 {
			wrong = append(wrong, fmt.Sprintf("txn %d: offset committed, messages not", i))
		}
	}
	for i := range txns {
		off, ok := ost.Query(multiKillOffsetGroup(i), multiKillTopicA, 0)
		if !ok || off != int64(i)+1 {
			wrong = append(wrong, fmt.Sprintf("txn %d: messages committed, offset %d (found %v)", i, off, ok))
		}
	}
	require.Empty(t, wrong, "transactions stored partly, or wrongly")
	committed := 0
	for i := range prepared {
		if multiKillCommits(i) {
			committed++
		}
	}
	t.Logf("%d transactions stored completely (%d of them known prepared to commit)", len(txns), committed)
}
