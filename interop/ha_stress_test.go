//go:build linux

package interop

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/client"
	"github.com/ferrymq/ferry/internal/testkit"
	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
)

// Master–slave replication with real processes: `ferry namesrv` and `ferry broker`
// children on free loopback ports, each broker with its own data directory, read back
// offline (the segment files themselves) once the processes are gone.
//
// TestSyncMasterKillLosesNothing runs one round by default; FERRY_HA_STRESS=N runs N
// (`make ha-stress`: 20). TestSyncMasterPartition puts a TCP proxy that the test can
// freeze between the slave and the master.

// haSegmentSize is the commit-log segment size of the brokers these tests start.
const haSegmentSize = 64 << 20

// haBodySize is the body size of the messages these tests send.
const haBodySize = 1 << 10

// haBroker describes one broker child.
type haBroker struct {
	name     string // brokerName (the group)
	id       int    // 0 master, 1 slave
	role     string // SYNC_MASTER, ASYNC_MASTER or SLAVE
	listen   string
	haListen string // masters only
	haMaster string // slaves only: a static master HA address (the partition proxy)
	dataDir  string
	slaveTO  time.Duration // haSlaveTimeout; 0 keeps the default
	proc     *ferryProc
}

// haCluster is a name server and its broker children.
type haCluster struct {
	bin, dir string
	nsAddr   string
	ns       *ferryProc
	rc       *remoting.Client
}

// newHACluster starts a name server with the ferry binary bin (built when empty).
func newHACluster(tb testing.TB, bin string) *haCluster {
	tb.Helper()
	if bin == "" {
		bin = testkit.Binary(tb, ferryPkg)
	}
	c := &haCluster{bin: bin, dir: tb.TempDir(), nsAddr: testkit.FreeAddr(tb)}
	opts := remoting.DefaultClientOptions()
	opts.RequestTimeout = 2 * time.Second
	rc, err := remoting.NewClient(opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = rc.Close() })
	c.rc = rc
	cfg := fmt.Sprintf("namesrv:\n  listen: %s\nlog:\n  level: warn\n", c.nsAddr)
	c.ns = c.start(tb, "namesrv", "namesrv", cfg)
	haEventually(tb, 30*time.Second, c.ns, func() bool {
		_, err := c.invoke(c.nsAddr, protocol.GetBrokerClusterInfo)
		return err == nil
	}, "name server serving")
	return c
}

// start writes cfg to <dir>/<name>.yaml and starts `ferry <kind> --config` on it. The
// child is killed at cleanup unless it has exited.
func (c *haCluster) start(tb testing.TB, kind, name, cfg string) *ferryProc {
	tb.Helper()
	file := filepath.Join(c.dir, name+".yaml")
	if err := os.WriteFile(file, []byte(cfg), 0o600); err != nil {
		tb.Fatal(err)
	}
	p := &ferryProc{namesrvAddr: c.nsAddr, log: &testkit.Buffer{Max: 16 << 10}, exited: make(chan struct{})}
	p.cmd = exec.Command(c.bin, kind, "--config", file)
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		tb.Fatalf("start ferry %s: %v", kind, err)
	}
	go func() {
		p.waitErr = p.cmd.Wait()
		close(p.exited)
	}()
	tb.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.exited
	})
	return p
}

// startBroker starts b and waits until it answers GET_BROKER_RUNTIME_INFO.
func (c *haCluster) startBroker(tb testing.TB, b *haBroker) {
	tb.Helper()
	var sb strings.Builder
	fmt.Fprintf(&sb, "broker:\n  brokerName: %s\n  clusterName: HACluster\n  brokerId: %d\n  brokerRole: %s\n",
		b.name, b.id, b.role)
	fmt.Fprintf(&sb, "  listen: %s\n  namesrvAddrs:\n    - %s\n  dataDir: %s\n  commitLogSegmentSize: %d\n",
		b.listen, c.nsAddr, b.dataDir, haSegmentSize)
	sb.WriteString("  registerInterval: 1s\n")
	if b.haListen != "" {
		fmt.Fprintf(&sb, "  haListen: %s\n", b.haListen)
	}
	if b.haMaster != "" {
		fmt.Fprintf(&sb, "  haMasterAddr: %s\n", b.haMaster)
	}
	if b.slaveTO > 0 {
		fmt.Fprintf(&sb, "  haSlaveTimeout: %s\n", b.slaveTO)
	}
	sb.WriteString("log:\n  level: warn\n")
	b.proc = c.start(tb, "broker", fmt.Sprintf("%s-%d", b.name, b.id), sb.String())
	b.proc.brokerAddr = b.listen
	haEventually(tb, 30*time.Second, b.proc, func() bool {
		_, err := c.runtime(b.listen)
		return err == nil
	}, b.name+" serving")
}

// startGroup starts a master with role and its slave (which learns the master's HA
// address from the name server unless haMaster is given) and waits until the master
// counts the slave. It returns master and slave.
func (c *haCluster) startGroup(tb testing.TB, name, role string, slaveTO time.Duration, proxy func(masterHA string) string) (*haBroker, *haBroker) {
	tb.Helper()
	m := &haBroker{name: name, role: role, listen: testkit.FreeAddr(tb), haListen: testkit.FreeAddr(tb),
		dataDir: filepath.Join(c.dir, name+"-m"), slaveTO: slaveTO}
	c.startBroker(tb, m)
	s := &haBroker{name: name, id: 1, role: "SLAVE", listen: testkit.FreeAddr(tb), dataDir: filepath.Join(c.dir, name+"-s")}
	if proxy != nil {
		s.haMaster = proxy(m.haListen)
	}
	c.startBroker(tb, s)
	haEventually(tb, 30*time.Second, m.proc, func() bool {
		kv, err := c.runtime(m.listen)
		return err == nil && kv["ferryHaSlaves"] == "1"
	}, name+" slave connected")
	return m, s
}

// invoke sends a request without header to addr and returns the successful response.
func (c *haCluster) invoke(addr string, code protocol.RequestCode) (*remoting.Command, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	resp, err := c.rc.Invoke(ctx, addr, remoting.NewRequest(int16(code), nil))
	if err != nil {
		return nil, err
	}
	if resp.Code != int16(protocol.Success) {
		return nil, fmt.Errorf("%s answered %d: %s", addr, resp.Code, resp.Remark)
	}
	return resp, nil
}

// runtime is a broker's GET_BROKER_RUNTIME_INFO table.
func (c *haCluster) runtime(addr string) (map[string]string, error) {
	resp, err := c.invoke(addr, protocol.GetBrokerRuntimeInfo)
	if err != nil {
		return nil, err
	}
	t, err := protocol.DecodeKVTable(resp.Body)
	if err != nil {
		return nil, err
	}
	return t.Table, nil
}

// runtimeInt is one integer of a broker's runtime table.
func (c *haCluster) runtimeInt(addr, key string) (int64, error) {
	kv, err := c.runtime(addr)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(kv[key], 10, 64)
}

// createTopic creates topic with 8 queues on every master.
func (c *haCluster) createTopic(tb testing.TB, topic string) {
	tb.Helper()
	cl, err := client.New(client.WithNameServers(c.nsAddr), client.WithInstanceName(instance("ha-admin")))
	if err != nil {
		tb.Fatal(err)
	}
	defer func() { _ = cl.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cl.Admin().CreateTopic(ctx, client.TopicConfig{Name: topic, Order: true}, client.Target{}); err != nil {
		tb.Fatal(err)
	}
}

// haEventually polls cond every 20 ms until it holds, failing after timeout or when p
// exits.
func haEventually(tb testing.TB, timeout time.Duration, p *ferryProc, cond func() bool, what string) {
	tb.Helper()
	held := testkit.Until(timeout, 20*time.Millisecond, func() bool {
		if cond() {
			return true
		}
		select {
		case <-p.exited:
			tb.Fatalf("%s: ferry exited: %v\n%s", what, p.waitErr, p.log)
		default:
		}
		return false
	})
	if !held {
		tb.Fatalf("%s: not within %s\n%s", what, timeout, p.log)
	}
}

// haTerm stops p with SIGTERM and waits up to 30 s for it to exit, reporting a failed exit.
func haTerm(tb testing.TB, p *ferryProc, what string) {
	tb.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		tb.Fatalf("SIGTERM %s: %v", what, err)
	}
	select {
	case <-p.exited:
		if p.waitErr != nil {
			tb.Errorf("%s exit: %v\n%s", what, p.waitErr, p.log)
		}
	case <-time.After(30 * time.Second):
		tb.Fatalf("%s did not exit within 30 s of SIGTERM\n%s", what, p.log)
	}
}

// haBody is the 1 KiB body of message seq of producer p: an id, then bytes derived from it.
func haBody(p, seq int) []byte {
	b := make([]byte, haBodySize)
	n := copy(b, fmt.Sprintf("p%d-%09d|", p, seq))
	x := uint32(p*1_000_003 + seq)
	for i := n; i < len(b); i++ {
		x = x*1664525 + 1013904223
		b[i] = 'a' + byte(x>>24)%26
	}
	return b
}

// haMessage is message seq of producer p, keyed by one of 64 keys of p (HashSelector).
func haMessage(topic string, p, seq int) *message.Message {
	m := message.NewMessage(topic, haBody(p, seq))
	m.SetKeys(fmt.Sprintf("key-%d-%d", p, seq%64))
	return m
}

// haAck is one SEND_OK.
type haAck struct {
	producer, seq int
	broker        string
	offset        int64 // commit-log offset, from the offset message id
	queueID       int32
	queueOffset   int64
}

// haLoad is producers sending asynchronously until stopped, recording every SEND_OK.
type haLoad struct {
	topic    string
	stop     atomic.Bool
	wg       sync.WaitGroup
	mu       sync.Mutex
	acks     []haAck
	failures atomic.Int64
	firstErr atomic.Pointer[error]
}

// haProducers starts n Ferry producers (each on its own Client, HashSelector, no retries)
// on the name server at nsAddr.
func haProducers(tb testing.TB, nsAddr string, n int, opts ...client.ProducerOption) []*client.Producer {
	tb.Helper()
	ps := make([]*client.Producer, n)
	for i := range ps {
		c, err := client.New(client.WithNameServers(nsAddr), client.WithInstanceName(instance("ha-p")),
			client.WithRequestTimeout(5*time.Second))
		if err != nil {
			tb.Fatal(err)
		}
		p, err := c.NewProducer("ha-pg", append([]client.ProducerOption{client.WithSelector(client.HashSelector),
			client.WithRetries(0)}, opts...)...)
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() {
			_ = p.Close()
			_ = c.Close()
		})
		ps[i] = p
	}
	return ps
}

// startHALoad makes each producer send with at most window messages in flight until
// stopLoad.
func startHALoad(ps []*client.Producer, topic string, window int) *haLoad {
	l := &haLoad{topic: topic}
	for i, p := range ps {
		l.wg.Go(func() {
			slots := make(chan struct{}, window)
			var inflight sync.WaitGroup
			for seq := 0; !l.stop.Load(); seq++ {
				slots <- struct{}{}
				inflight.Add(1)
				p.SendAsync(context.Background(), haMessage(topic, i, seq), func(r client.SendResult, err error) {
					defer func() {
						<-slots
						inflight.Done()
					}()
					if err != nil {
						l.failures.Add(1)
						l.firstErr.CompareAndSwap(nil, &err)
						return
					}
					l.record(i, seq, r)
				})
			}
			inflight.Wait()
		})
	}
	return l
}

// record notes a SEND_OK.
func (l *haLoad) record(p, seq int, r client.SendResult) {
	a := haAck{producer: p, seq: seq, broker: r.BrokerName, queueID: r.QueueID, queueOffset: r.QueueOffset, offset: -1}
	if _, off, err := message.DecodeOffsetMsgID(r.OffsetMsgID); err == nil {
		a.offset = off
	}
	l.mu.Lock()
	l.acks = append(l.acks, a)
	l.mu.Unlock()
}

// stopLoad stops sending and waits for every result.
func (l *haLoad) stopLoad(tb testing.TB) {
	tb.Helper()
	l.stop.Store(true)
	done := make(chan struct{})
	go func() {
		l.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		tb.Fatal("sends did not finish within 30 s")
	}
}

// haLog reads a stopped broker's commit log from its segment files.
type haLog struct {
	segs  []int64 // segment base offsets, ascending
	files map[int64]*os.File
	sizes map[int64]int64
}

// openHALog opens the segment files of dataDir/commitlog read-only.
func openHALog(tb testing.TB, dataDir string) *haLog {
	tb.Helper()
	dir := filepath.Join(dataDir, "commitlog")
	ents, err := os.ReadDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	l := &haLog{files: map[int64]*os.File{}, sizes: map[int64]int64{}}
	for _, e := range ents {
		base, err := strconv.ParseInt(e.Name(), 10, 64)
		if err != nil || len(e.Name()) != 20 || !e.Type().IsRegular() {
			continue
		}
		f, err := os.Open(filepath.Join(dir, e.Name()))
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { _ = f.Close() })
		st, err := f.Stat()
		if err != nil {
			tb.Fatal(err)
		}
		l.segs, l.files[base], l.sizes[base] = append(l.segs, base), f, st.Size()
	}
	slices.Sort(l.segs)
	if len(l.segs) == 0 {
		tb.Fatalf("no commit-log segment in %s", dir)
	}
	return l
}

// segment is the segment holding off.
func (l *haLog) segment(off int64) (int64, error) {
	i, found := slices.BinarySearch(l.segs, off)
	if !found {
		i--
	}
	if i < 0 || off >= l.segs[i]+l.sizes[l.segs[i]] {
		return 0, fmt.Errorf("offset %d is in no segment", off)
	}
	return l.segs[i], nil
}

// record is the raw record at off (its TOTALSIZE first).
func (l *haLog) record(off int64) ([]byte, error) {
	base, err := l.segment(off)
	if err != nil {
		return nil, err
	}
	f, pos := l.files[base], off-base
	var head [4]byte
	if _, err := f.ReadAt(head[:], pos); err != nil {
		return nil, err
	}
	size := int64(int32(uint32(head[0])<<24 | uint32(head[1])<<16 | uint32(head[2])<<8 | uint32(head[3])))
	if size <= 4 || pos+size > l.sizes[base] {
		return nil, fmt.Errorf("no record at %d (size field %d)", off, size)
	}
	b := make([]byte, size)
	if _, err := f.ReadAt(b, pos); err != nil {
		return nil, err
	}
	return b, nil
}

// compareHALogs compares the commit logs a and b byte for byte on [0, end), reporting the
// first difference.
func compareHALogs(a, b *haLog, end int64) error {
	bufA, bufB := make([]byte, 1<<20), make([]byte, 1<<20)
	for off := int64(0); off < end; {
		base, err := a.segment(off)
		if err != nil {
			return fmt.Errorf("first log: %w", err)
		}
		if _, err := b.segment(off); err != nil {
			return fmt.Errorf("second log: %w", err)
		}
		n := min(int64(len(bufA)), end-off, base+a.sizes[base]-off)
		if _, err := a.files[base].ReadAt(bufA[:n], off-base); err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		bb, _ := b.segment(off)
		n = min(n, bb+b.sizes[bb]-off)
		if _, err := b.files[bb].ReadAt(bufB[:n], off-bb); err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		if !bytes.Equal(bufA[:n], bufB[:n]) {
			for i := range n {
				if bufA[i] != bufB[i] {
					return fmt.Errorf("logs differ at offset %d", off+i)
				}
			}
		}
		off += n
	}
	return nil
}

// checkAcks checks every acknowledged message: on the master's log and on the slave's,
// the same bytes, and the record is the message sent (body, topic, queue, offsets). It
// returns the number of acknowledgements missing from the slave and the number whose
// bytes differ; other faults fail tb.
func checkAcks(tb testing.TB, acks []haAck, topic string, master, slave *haLog) (lost, differ int) {
	tb.Helper()
	var faults []string
	for _, a := range acks {
		if a.offset < 0 {
			faults = append(faults, fmt.Sprintf("p%d-%d: undecodable offset message id", a.producer, a.seq))
			continue
		}
		mb, err := master.record(a.offset)
		if err != nil {
			faults = append(faults, fmt.Sprintf("p%d-%d at %d: not on the master: %v", a.producer, a.seq, a.offset, err))
			continue
		}
		rec, _, err := message.DecodeRecord(mb)
		switch {
		case err != nil:
			faults = append(faults, fmt.Sprintf("p%d-%d at %d: master record: %v", a.producer, a.seq, a.offset, err))
			continue
		case !bytes.Equal(rec.Body, haBody(a.producer, a.seq)) || string(rec.Topic) != topic ||
			rec.QueueID != a.queueID || rec.QueueOffset != a.queueOffset || rec.PhysicalOffset != a.offset:
			faults = append(faults, fmt.Sprintf("p%d-%d at %d: master record is another message (%s q%d@%d)",
				a.producer, a.seq, a.offset, rec.Topic, rec.QueueID, rec.QueueOffset))
			continue
		}
		sb, err := slave.record(a.offset)
		switch {
		case err != nil:
			lost++
			if lost <= 5 {
				tb.Logf("lost: p%d-%d at %d: %v", a.producer, a.seq, a.offset, err)
			}
		case !bytes.Equal(mb, sb):
			differ++
			if differ <= 5 {
				tb.Logf("differs: p%d-%d at %d", a.producer, a.seq, a.offset)
			}
		}
	}
	if len(faults) > 0 {
		tb.Fatalf("%d acknowledgements do not match the master's log, first: %s", len(faults), strings.Join(faults[:min(5, len(faults))], "; "))
	}
	return lost, differ
}

// haRounds is FERRY_HA_STRESS, or 1.
func haRounds(t *testing.T) int {
	t.Helper()
	s := os.Getenv("FERRY_HA_STRESS")
	if s == "" {
		return 1
	}
	n, err := strconv.Atoi(s)
	require.NoError(t, err, "FERRY_HA_STRESS")
	require.Positive(t, n, "FERRY_HA_STRESS")
	return n
}

// A SYNC_MASTER under load from 4 producers (1 KiB, HashSelector by key) is killed with
// SIGKILL while sends are in flight: every message it acknowledged SEND_OK is on the
// slave, byte-identical to the master's record, and the slave's whole log is a prefix of
// the master's. Rounds: FERRY_HA_STRESS (default 1).
func TestSyncMasterKillLosesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes; -short")
	}
	bin := testkit.Binary(t, ferryPkg)
	rounds := haRounds(t)
	var total int
	for r := range rounds {
		t.Run(fmt.Sprintf("round-%d", r+1), func(t *testing.T) {
			total += syncMasterKillRound(t, bin)
		})
		if t.Failed() {
			break
		}
	}
	t.Logf("%d rounds, %d acknowledged messages in all, none lost", rounds, total)
}

// syncMasterKillRound runs one round and returns the number of acknowledged messages.
func syncMasterKillRound(t *testing.T, bin string) int {
	c := newHACluster(t, bin)
	const topic = "HAKill"
	m, s := c.startGroup(t, "broker-a", "SYNC_MASTER", 0, nil)
	c.createTopic(t, topic)
	ps := haProducers(t, c.nsAddr, 4)
	load := startHALoad(ps, topic, 128)
	run := time.Second + rand.N(2*time.Second)
	time.Sleep(run)
	require.NoError(t, m.proc.cmd.Process.Signal(syscall.SIGKILL))
	<-m.proc.exited
	load.stopLoad(t)

	// The slave has everything it will get once its replica offset stops moving.
	var slaveEnd int64 = -1
	haEventually(t, 10*time.Second, s.proc, func() bool {
		n, err := c.runtimeInt(s.listen, "ferryHaReplicaOffset")
		if err != nil {
			return false
		}
		stable := n == slaveEnd
		slaveEnd = n
		if !stable {
			time.Sleep(100 * time.Millisecond)
		}
		return stable
	}, "slave replica offset stable")
	haTerm(t, s.proc, "slave")
	haTerm(t, c.ns, "name server")

	acks := load.acks
	require.NotEmpty(t, acks, "no send was acknowledged in %s (first error: %v)", run, load.firstErr.Load())
	ml, sl := openHALog(t, m.dataDir), openHALog(t, s.dataDir)
	lost, differ := checkAcks(t, acks, topic, ml, sl)
	require.NoError(t, compareHALogs(ml, sl, slaveEnd), "slave log is not a prefix of the master's")
	var maxAck int64
	for _, a := range acks {
		maxAck = max(maxAck, a.offset)
	}
	t.Logf("load %s: %d acknowledged, %d failed (master killed); slave end %d, last ack at %d; lost %d, differ %d",
		run.Round(time.Millisecond), len(acks), load.failures.Load(), slaveEnd, maxAck, lost, differ)
	require.Zero(t, lost, "acknowledged messages missing from the slave")
	require.Zero(t, differ, "acknowledged messages whose slave bytes differ")
	return len(acks)
}

// A partition between a SYNC_MASTER and its slave (a proxy between them that stops
// forwarding): sends during it answer FLUSH_SLAVE_TIMEOUT (12) after haSlaveTimeout,
// nothing acknowledged SEND_OK is lost, and once healed the slave catches up to the
// master's end and holds the same bytes.
func TestSyncMasterPartition(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes; -short")
	}
	c := newHACluster(t, "")
	var proxy *testkit.Proxy
	const topic = "HAPartition"
	m, s := c.startGroup(t, "broker-a", "SYNC_MASTER", 500*time.Millisecond, func(masterHA string) string {
		proxy = testkit.StartProxy(t, masterHA)
		return proxy.Addr()
	})
	c.createTopic(t, topic)
	ps := haProducers(t, c.nsAddr, 4)
	var mu sync.Mutex
	var acks []haAck
	codes := map[protocol.ResponseCode]int{}
	send := func(from, n int) {
		var wg sync.WaitGroup
		for i, p := range ps {
			wg.Go(func() {
				for seq := from; seq < from+n; seq++ {
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					r, err := p.Send(ctx, haMessage(topic, i, seq))
					cancel()
					mu.Lock()
					var be *client.BrokerError
					switch {
					case err == nil:
						a := haAck{producer: i, seq: seq, broker: r.BrokerName, queueID: r.QueueID, queueOffset: r.QueueOffset, offset: -1}
						if _, off, derr := message.DecodeOffsetMsgID(r.OffsetMsgID); derr == nil {
							a.offset = off
						}
						acks = append(acks, a)
						codes[protocol.Success]++
					case errors.As(err, &be):
						codes[be.Code]++
					default:
						t.Errorf("send p%d-%d: %v", i, seq, err)
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
	}
	send(0, 100)
	require.Equal(t, map[protocol.ResponseCode]int{protocol.Success: 400}, codes, "before the partition")

	proxy.SetFrozen(true)
	clear(codes)
	send(100, 3)
	require.Equal(t, map[protocol.ResponseCode]int{protocol.FlushSlaveTimeout: 12}, codes, "during the partition")
	lagged, err := c.runtimeInt(m.listen, "slaveFallBehindMuch")
	require.NoError(t, err)
	require.Positive(t, lagged, "the master reports the slave behind during the partition")

	proxy.SetFrozen(false)
	var masterEnd int64
	haEventually(t, 30*time.Second, s.proc, func() bool {
		var err1, err2 error
		masterEnd, err1 = c.runtimeInt(m.listen, "commitLogMaxOffset")
		replica, err2 := c.runtimeInt(s.listen, "ferryHaReplicaOffset")
		return err1 == nil && err2 == nil && replica == masterEnd
	}, "slave caught up after the partition")
	clear(codes)
	send(103, 50)
	require.Equal(t, map[protocol.ResponseCode]int{protocol.Success: 200}, codes, "after the partition")
	masterEnd, err = c.runtimeInt(m.listen, "commitLogMaxOffset")
	require.NoError(t, err)
	haEventually(t, 30*time.Second, s.proc, func() bool {
		replica, err := c.runtimeInt(s.listen, "ferryHaReplicaOffset")
		return err == nil && replica == masterEnd
	}, "slave caught up at the end")

	haTerm(t, m.proc, "master")
	haTerm(t, s.proc, "slave")
	ml, sl := openHALog(t, m.dataDir), openHALog(t, s.dataDir)
	lost, differ := checkAcks(t, acks, topic, ml, sl)
	require.Zero(t, lost)
	require.Zero(t, differ)
	require.NoError(t, compareHALogs(ml, sl, masterEnd))
	t.Logf("%d acknowledged SEND_OK, 12 FLUSH_SLAVE_TIMEOUT during the partition (lag %d bytes); slave caught up to %d",
		len(acks), lagged, masterEnd)
}
