//go:build linux

package interop

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/conf"
	"github.com/ferrymq/ferry/internal/mmap"
	"github.com/ferrymq/ferry/internal/testkit"
	"github.com/ferrymq/ferry/launch"
	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/store"
	"github.com/ferrymq/ferry/testutil"
)

// commitOnCheck answers unknown when a transaction is sent (commit for "warm-up" ones)
// and commit to every check, recording when it last answered one.
type commitOnCheck struct {
	last atomic.Int64 // Unix ns of the last check
}

func (*commitOnCheck) ExecuteLocalTransaction(m *primitive.Message) primitive.LocalTransactionState {
	if strings.HasPrefix(string(m.Body), "warm-up") {
		return primitive.CommitMessageState
	}
	return primitive.UnkonwnState
}

func (l *commitOnCheck) CheckLocalTransaction(*primitive.MessageExt) primitive.LocalTransactionState {
	l.last.Store(time.Now().UnixNano())
	return primitive.CommitMessageState
}

// txKillSegmentSize is the commit-log segment size of the killed broker, set explicitly
// because countStored must open its store with the same.
const txKillSegmentSize = 64 << 20

// startTxBroker starts `ferry standalone` (binary bin) on dataDir and the given addresses,
// with sync flush and a 1 s transaction timeout and check interval, and waits until it has
// registered.
func startTxBroker(t *testing.T, bin, dataDir, nsAddr, brokerAddr string) *ferryProc {
	t.Helper()
	p := &ferryProc{namesrvAddr: nsAddr, brokerAddr: brokerAddr, log: &testkit.Buffer{Max: 16 << 10},
		exited: make(chan struct{})}
	p.cmd = exec.Command(bin, "standalone", "--data-dir", dataDir, "--namesrv-listen", nsAddr,
		"--broker-listen", brokerAddr, "--log-level", "error", "--http-listen", "")
	p.cmd.Env = append(os.Environ(), "FERRY_BROKER_TRANSACTION_TIMEOUT=1s",
		"FERRY_BROKER_TRANSACTION_CHECK_INTERVAL=1s", "FERRY_BROKER_FLUSH_DISK_TYPE=SYNC_FLUSH",
		fmt.Sprintf("FERRY_BROKER_COMMIT_LOG_SEGMENT_SIZE=%d", txKillSegmentSize), haOnAnyPort)
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	require.NoError(t, p.cmd.Start())
	go func() {
		p.waitErr = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.exited
	})
	p.waitRegistered(t, 30*time.Second)
	return p
}

// A broker killed with SIGKILL while check-backs are committing transactions: after the
// restart every transaction's message is stored exactly once. With sync flush each commit
// waits for a group commit, so a burst of check answers sits together between committed
// message and op entry; before commit intents a kill there committed them again after the
// restart (up to 8, one per END_TRANSACTION worker, in most runs). The transaction
// package's TestCheckCommitSurvivesKill kills before every write, deterministically. The
// count is taken from the store itself: deliveries are no measure, since consumer offsets
// of the seconds before a broker crash are lost with it and those messages come again.
func TestTransactionsSurviveBrokerKill(t *testing.T) {
	dir := t.TempDir()
	bin := testkit.Binary(t, ferryPkg)
	dataDir := filepath.Join(dir, "data")
	nsAddr, brokerAddr := testkit.FreeAddr(t), testkit.FreeAddr(t)
	b := startTxBroker(t, bin, dataDir, nsAddr, brokerAddr)

	const n = 400
	l := &commitOnCheck{}
	p, err := rocketmq.NewTransactionProducer(l,
		producer.WithNsResolver(primitive.NewPassthroughResolver([]string{nsAddr})),
		producer.WithGroupName("tx-bkill-pg"), producer.WithInstanceName(instance("tx-bkill")))
	require.NoError(t, err)
	require.NoError(t, p.Start())
	defer func() { _ = p.Shutdown() }()
	send := func(body string) {
		_, err := p.SendMessageInTransaction(context.Background(), primitive.NewMessage("TxBrokerKill", []byte(body)))
		require.NoError(t, err)
	}
	for i := range n {
		send(fmt.Sprintf("bk-%d", i))
	}
	// Kill while the answers to the checks are being committed.
	cluster := &testutil.Cluster{NamesrvAddr: nsAddr}
	early := newCollector()
	_ = newPushConsumer(t, cluster, "tx-bkill-early", "TxBrokerKill", "*", early.handler)
	testutil.Eventually(t, 60*time.Second, func() bool { return early.total.Load() >= n/8 }, "commits under way")
	require.NoError(t, b.cmd.Process.Signal(syscall.SIGKILL))
	<-b.exited

	b = startTxBroker(t, bin, dataDir, nsAddr, brokerAddr)
	// The Go client heartbeats every 30 s; a send lets the broker reach it for checks now.
	send("warm-up")
	col := newCollector()
	_ = newPushConsumer(t, cluster, "tx-bkill-cg", "TxBrokerKill", "*", col.handler)
	testutil.Eventually(t, 90*time.Second, func() bool {
		col.mu.Lock()
		defer col.mu.Unlock()
		return len(col.count) == n+1 && time.Since(time.Unix(0, l.last.Load())) > 3*time.Second
	}, "every transaction delivered, then no check for 3 s")
	require.NoError(t, b.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-b.exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("ferry did not exit after SIGTERM\n%s", b.log)
	}

	stored := countStored(t, dataDir, "TxBrokerKill")
	var wrong []string
	for i := range n {
		if body := fmt.Sprintf("bk-%d", i); stored[body] != 1 {
			wrong = append(wrong, fmt.Sprintf("%s×%d", body, stored[body]))
		}
	}
	require.Empty(t, wrong, "transactions not stored exactly once")
	col.mu.Lock()
	redelivered := 0
	for _, k := range col.count {
		if k > 1 {
			redelivered++
		}
	}
	col.mu.Unlock()
	t.Logf("%d transactions, each stored once; %d delivered more than once", n, redelivered)
}

// countStored opens the broker's store offline and counts the messages of topic by body.
func countStored(t *testing.T, dataDir, topic string) map[string]int {
	t.Helper()
	cfg := conf.DefaultBrokerConfig()
	cfg.DataDir, cfg.CommitLogSegmentSize = dataDir, txKillSegmentSize
	bo, err := launch.BrokerOptions(cfg, mmap.OSFS{}, zerolog.Nop())
	require.NoError(t, err)
	st, err := store.Open(bo.Store)
	require.NoError(t, err)
	defer func() { require.NoError(t, st.Shutdown(context.Background())) }()
	counts := map[string]int{}
	for qid := range int32(cfg.DefaultTopicQueueNums) {
		for off := st.MinOffset(topic, qid); off < st.MaxOffset(topic, qid); {
			r, err := st.GetMessages(topic, qid, off, 256, 8<<20, nil)
			require.NoError(t, err)
			for _, raw := range r.Messages {
				rec, _, err := message.DecodeRecord(raw)
				require.NoError(t, err)
				counts[string(rec.Body)]++
			}
			next := r.NextBeginOffset
			r.Release()
			require.Greater(t, next, off)
			off = next
		}
	}
	return counts
}
