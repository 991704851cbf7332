//go:build linux

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ferrymq/ferry/client"
	"github.com/ferrymq/ferry/internal/testkit"
	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
	"github.com/ferrymq/ferry/store"
)

// restartBinEnv names a ferry binary for BenchmarkCrashRestart to measure instead of
// building this checkout (to compare with an older build).
const restartBinEnv = "FERRY_RESTART_BIN"

// Restart benchmark settings: the acceptance case of issue 23 (a 1 GiB segment, 10 MB
// written).
const (
	restartSegment = "1GiB"
	restartBody    = 1 << 10
	restartCount   = 10 << 10 // 10 MiB of bodies
	restartTopic   = "RestartBench"
)

// BenchmarkCrashRestart measures how long a broker killed with SIGKILL takes to serve
// again. Each iteration starts children on a new data directory with 1 GiB commit-log
// segments, sends 10 MiB (10,240 messages of 1 KiB), SIGKILLs the broker and restarts
// it on the same directory, timing from the restart's exec:
//
//	bound-ms       "broker port bound" in the broker's log (the process is up, the store not opened)
//	recovered-ms   "commit log recovered" in the broker's log (store opened, log scanned, tail zeroed)
//	store-ms       "store recovered" (consume queues and index checked, records re-dispatched)
//	registered-ms  the name server logs the broker's registration
//	stored-ms      a SEND_MESSAGE_V2 to the broker is answered with the message stored
//	               (SUCCESS, or SLAVE_NOT_AVAILABLE / FLUSH_SLAVE_TIMEOUT from a SYNC_MASTER)
//	ready-ms       registered and a send answered SUCCESS (for a SYNC_MASTER: replicated)
//
// and the store's steps as its "store recovered" line reports them: queues-ms (opening the
// consume queues), index-ms (opening the index), scan-ms (commitlog.RecoverWith: the scan
// and the tail zeroing), dispatch-ms (re-dispatching records after the checkpoint).
//
// Every metric is the median of the iterations (use -benchtime=5x); each iteration's
// numbers are logged too. Sub-benchmarks:
//
//	standalone/checkpointed    `ferry standalone`, killed once the store's checkpoint
//	                           covers the 10 MiB (nothing to re-dispatch)
//	standalone/at-once         killed right after the last acknowledgement (up to the
//	                           whole 10 MiB to re-dispatch into consume queue and index)
//	sync-master/checkpointed   `ferry namesrv`, a SYNC_MASTER with SYNC_FLUSH and its SLAVE
//	                           (`ferry broker` each); only the master is killed
//	sync-master/at-once
//
// Nothing is asserted; docs/benchmarks.md ("Restart after a crash") records the numbers.
//
//	go test -run '^$' -bench CrashRestart -benchtime=5x ./cmd/ferry/
//	FERRY_RESTART_BIN=/tmp/ferry-old go test -run '^$' -bench CrashRestart -benchtime=5x ./cmd/ferry/
func BenchmarkCrashRestart(b *testing.B) {
	bin := os.Getenv(restartBinEnv)
	if bin == "" {
		bin = testkit.Binary(b, "github.com/ferrymq/ferry/cmd/ferry")
	}
	for _, topo := range []string{"standalone", "sync-master"} {
		for _, when := range []string{"checkpointed", "at-once"} {
			b.Run(topo+"/"+when, func(b *testing.B) {
				var runs []restartTimes
				for i := 0; i < b.N; i++ {
					r := measureRestart(b, bin, topo == "sync-master", when == "checkpointed")
					b.Logf("run %d: %s", i+1, r)
					runs = append(runs, r)
				}
				b.ReportMetric(0, "ns/op")
				for _, m := range []struct {
					unit string
					get  func(restartTimes) time.Duration
				}{
					{"bound-ms", func(r restartTimes) time.Duration { return r.bound }},
					{"recovered-ms", func(r restartTimes) time.Duration { return r.recovered }},
					{"store-ms", func(r restartTimes) time.Duration { return r.store }},
					{"registered-ms", func(r restartTimes) time.Duration { return r.registered }},
					{"stored-ms", func(r restartTimes) time.Duration { return r.stored }},
					{"ready-ms", func(r restartTimes) time.Duration { return r.ready }},
					{"queues-ms", func(r restartTimes) time.Duration { return r.openQueues }},
					{"index-ms", func(r restartTimes) time.Duration { return r.openIndex }},
					{"scan-ms", func(r restartTimes) time.Duration { return r.scan }},
					{"dispatch-ms", func(r restartTimes) time.Duration { return r.dispatch }},
				} {
					b.ReportMetric(medianMs(runs, m.get), m.unit)
				}
			})
		}
	}
}

// restartTimes is one restart, each time from the restarted broker's exec, and the
// store's own account of its recovery steps.
type restartTimes struct {
	bound, recovered, store, registered, stored, ready time.Duration
	openLog, openQueues, openIndex, scan, dispatch     time.Duration
}

func (r restartTimes) String() string {
	ms := func(d time.Duration) string { return strconv.FormatFloat(d.Seconds()*1000, 'f', 1, 64) }
	return fmt.Sprintf("bound %s ms, recovered %s ms, store %s ms, registered %s ms, stored %s ms, ready %s ms "+
		"(store steps: open log %s, open queues %s, open index %s, scan %s, dispatch %s ms)",
		ms(r.bound), ms(r.recovered), ms(r.store), ms(r.registered), ms(r.stored), ms(r.ready),
		ms(r.openLog), ms(r.openQueues), ms(r.openIndex), ms(r.scan), ms(r.dispatch))
}

// medianMs is the median of get over runs, in milliseconds.
func medianMs(runs []restartTimes, get func(restartTimes) time.Duration) float64 {
	v := make([]float64, len(runs))
	for i, r := range runs {
		v[i] = get(r).Seconds() * 1000
	}
	slices.Sort(v)
	if len(v) == 0 {
		return 0
	}
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// restartChild is a ferry child process with its log.
type restartChild struct {
	cmd     *exec.Cmd
	log     *lockedLog
	exited  chan struct{}
	started time.Time
}

// lockedLog collects a child's output.
type lockedLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startRestartChild starts `bin args...` with 1 GiB segments and the given extra
// environment; it is killed at cleanup if still running.
func startRestartChild(b *testing.B, bin string, env []string, args ...string) *restartChild {
	b.Helper()
	c := &restartChild{log: &lockedLog{}, exited: make(chan struct{})}
	c.cmd = exec.Command(bin, args...)
	c.cmd.Env = append(append(os.Environ(), "FERRY_BROKER_COMMIT_LOG_SEGMENT_SIZE="+restartSegment), env...)
	c.cmd.Stdout, c.cmd.Stderr = c.log, c.log
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	c.started = time.Now()
	if err := c.cmd.Start(); err != nil {
		b.Fatal(err)
	}
	go func() {
		_ = c.cmd.Wait()
		close(c.exited)
	}()
	b.Cleanup(c.kill)
	return c
}

// kill SIGKILLs the child and waits for it.
func (c *restartChild) kill() {
	_ = c.cmd.Process.Signal(syscall.SIGKILL)
	<-c.exited
}

// stop SIGTERMs the child and waits for it.
func (c *restartChild) stop(b *testing.B) {
	b.Helper()
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.exited:
	case <-time.After(30 * time.Second):
		c.kill()
		b.Errorf("ferry did not exit within 30 s of SIGTERM\n%s", c.log)
	}
}

// logTime returns the time of the first JSON log line of the child with message msg
// whose fields include every key/value of match, relative to the child's start (0 when
// there is none).
func (c *restartChild) logTime(b *testing.B, msg string, match map[string]string) time.Duration {
	b.Helper()
	at, _ := c.logLine(b, msg, match)
	return at
}

// logLine is logTime that also returns the line's fields.
func (c *restartChild) logLine(b *testing.B, msg string, match map[string]string) (time.Duration, map[string]any) {
	b.Helper()
	sc := bufio.NewScanner(strings.NewReader(c.log.String()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var line map[string]any
		if json.Unmarshal(sc.Bytes(), &line) != nil || line["message"] != msg {
			continue
		}
		ok := true
		for k, v := range match {
			ok = ok && fmt.Sprint(line[k]) == v
		}
		ts, _ := line["time"].(string)
		at, err := time.Parse(time.RFC3339Nano, ts)
		if !ok || err != nil || at.Before(c.started.Truncate(time.Millisecond)) {
			continue
		}
		return max(at.Sub(c.started), 0), line
	}
	return 0, nil
}

// restartCluster is what one iteration runs: the broker that is killed, and what else it
// needs.
type restartCluster struct {
	bin, dir   string
	ns, broker string // name server and broker addresses
	env        []string
	args       []string      // the killed broker's command line
	nsChild    *restartChild // the name server's log (the standalone's own for standalone)
	others     []*restartChild
}

// measureRestart runs one iteration (see BenchmarkCrashRestart).
func measureRestart(b *testing.B, bin string, syncMaster, checkpointed bool) restartTimes {
	b.Helper()
	dir, err := os.MkdirTemp(b.TempDir(), "restart")
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = os.RemoveAll(dir) }() // 1 GiB per broker: free it before the next
	c := &restartCluster{bin: bin, dir: dir, ns: testkit.FreeAddr(b), broker: testkit.FreeAddr(b)}
	rc, err := remoting.NewClient(remoting.DefaultClientOptions())
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = rc.Close() }()

	var first *restartChild
	if syncMaster {
		first = c.startSyncGroup(b, rc)
	} else {
		c.env = []string{haOnAnyPort}
		c.args = []string{"standalone", "--data-dir", filepath.Join(dir, "data"), "--namesrv-listen", c.ns,
			"--broker-listen", c.broker, "--http-listen", "", "--log-level", "info"}
		first = startRestartChild(b, bin, c.env, c.args...)
		waitFor(b, first, 60*time.Second, "first start", func() bool { return sendCode(rc, c.broker) == protocol.Success })
	}
	waitFor(b, first, 60*time.Second, "route", func() bool { return routed(rc, c.ns) })
	end := c.fill(b, rc)
	if checkpointed {
		cp := filepath.Join(dir, "data", store.CheckpointFileName)
		waitFor(b, first, 30*time.Second, "checkpoint", func() bool {
			raw, err := os.ReadFile(cp)
			if err != nil {
				return false
			}
			f, err := store.DecodeCheckpoint(raw)
			return err == nil && f.Valid && f.DispatchedOffset >= end && f.FlushedOffset >= end
		})
	}
	first.kill()

	again := startRestartChild(b, bin, c.env, c.args...)
	nsLog := c.nsChild
	if nsLog == nil {
		nsLog = again
	}
	var r restartTimes
	waitFor(b, again, 60*time.Second, "restart", func() bool {
		if r.registered == 0 {
			r.registered = nsLog.logTimeSince(b, again.started, "broker registered", map[string]string{"brokerAddr": c.broker})
		}
		if r.stored != 0 && r.ready != 0 {
			return r.registered != 0
		}
		code := sendCode(rc, c.broker)
		now := time.Since(again.started)
		if r.stored == 0 && (code == protocol.Success || code == protocol.SlaveNotAvailable || code == protocol.FlushSlaveTimeout) {
			r.stored = now
		}
		if r.ready == 0 && code == protocol.Success {
			r.ready = now
		}
		return false
	})
	r.ready = max(r.ready, r.registered)
	r.bound = again.logTime(b, "broker port bound; preparing the store (not ready yet)", nil)
	r.recovered = again.logTime(b, "commit log recovered", nil)
	var fields map[string]any
	r.store, fields = again.logLine(b, "store recovered", nil)
	ms := func(key string) time.Duration {
		v, _ := fields[key].(float64)
		return time.Duration(v * float64(time.Millisecond))
	}
	r.openLog, r.openQueues, r.openIndex, r.scan, r.dispatch =
		ms("openLogMs"), ms("openQueuesMs"), ms("openIndexMs"), ms("scanMs"), ms("dispatchMs")
	again.stop(b)
	for _, o := range slices.Backward(c.others) {
		o.stop(b)
	}
	return r
}

// logTimeSince is logTime for a child that was not restarted (the name server of a
// SYNC_MASTER group), relative to since.
func (c *restartChild) logTimeSince(b *testing.B, since time.Time, msg string, match map[string]string) time.Duration {
	b.Helper()
	saved := c.started
	c.started = since
	defer func() { c.started = saved }()
	return c.logTime(b, msg, match)
}

// startSyncGroup starts a name server, a SYNC_MASTER (SYNC_FLUSH) and its slave, waits
// until the master accepts sends with the slave replicating, and returns the master.
func (c *restartCluster) startSyncGroup(b *testing.B, rc *remoting.Client) *restartChild {
	b.Helper()
	c.nsChild = startRestartChild(b, c.bin, nil, "namesrv", "--namesrv-listen", c.ns, "--http-listen", "", "--log-level", "debug")
	c.others = append(c.others, c.nsChild)
	haAddr, slaveAddr := testkit.FreeAddr(b), testkit.FreeAddr(b)
	brokerYAML := func(name string, body string) string {
		file := filepath.Join(c.dir, name+".yaml")
		if err := os.WriteFile(file, []byte("broker:\n  brokerName: restart-a\n  clusterName: RestartBench\n"+body), 0o600); err != nil {
			b.Fatal(err)
		}
		return file
	}
	master := brokerYAML("master", fmt.Sprintf("  brokerId: 0\n  brokerRole: SYNC_MASTER\n  flushDiskType: SYNC_FLUSH\n"+
		"  listen: %s\n  haListen: %s\n  namesrvAddrs: [%s]\n  dataDir: %s\n  httpListen: \"\"\n",
		c.broker, haAddr, c.ns, filepath.Join(c.dir, "data")))
	slave := brokerYAML("slave", fmt.Sprintf("  brokerId: 1\n  brokerRole: SLAVE\n"+
		"  listen: %s\n  haMasterAddr: %s\n  namesrvAddrs: [%s]\n  dataDir: %s\n  httpListen: \"\"\n",
		slaveAddr, haAddr, c.ns, filepath.Join(c.dir, "slave")))
	c.args = []string{"broker", "--config", master, "--log-level", "info"}
	m := startRestartChild(b, c.bin, nil, c.args...)
	s := startRestartChild(b, c.bin, nil, "broker", "--config", slave, "--log-level", "warn")
	c.others = append(c.others, s)
	waitFor(b, m, 60*time.Second, "master and slave", func() bool { return sendCode(rc, c.broker) == protocol.Success })
	return m
}

// fill sends restartCount messages of restartBody bytes with Ferry's client and returns
// the broker's commit-log end.
func (c *restartCluster) fill(b *testing.B, rc *remoting.Client) int64 {
	b.Helper()
	cl, err := client.New(client.WithNameServers(c.ns), client.WithInstanceName("restart-bench"))
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = cl.Close() }()
	p, err := cl.NewProducer("restart-bench")
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = p.Close() }()
	body := make([]byte, restartBody)
	for i := range body {
		body[i] = 'a' + byte(i%26)
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		fails []error
		slots = make(chan struct{}, 256)
	)
	for range restartCount {
		slots <- struct{}{}
		wg.Add(1)
		p.SendAsync(context.Background(), message.NewMessage(restartTopic, body), func(_ client.SendResult, err error) {
			defer wg.Done()
			<-slots
			if err != nil {
				mu.Lock()
				fails = append(fails, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(fails) > 0 {
		b.Fatalf("%d sends failed, the first: %v", len(fails), fails[0])
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := rc.Invoke(ctx, c.broker, remoting.NewRequest(int16(protocol.GetBrokerRuntimeInfo), nil))
	if err != nil {
		b.Fatal(err)
	}
	kv, err := protocol.DecodeKVTable(resp.Body)
	if err != nil {
		b.Fatal(err)
	}
	end, err := strconv.ParseInt(kv.Table["commitLogMaxOffset"], 10, 64)
	if err != nil || end < restartCount*restartBody {
		b.Fatalf("commitLogMaxOffset %q after sending %d bytes: %v", kv.Table["commitLogMaxOffset"], restartCount*restartBody, err)
	}
	return end
}

// sendCode sends one small message to the broker at addr and returns the response code
// (-1 when there is no answer).
func sendCode(rc *remoting.Client, addr string) protocol.ResponseCode {
	h := protocol.SendMessageRequestHeaderV2{SendMessageRequestHeader: protocol.SendMessageRequestHeader{
		ProducerGroup: "restart-bench", Topic: restartTopic, DefaultTopic: protocol.AutoCreateTopicKey,
		DefaultTopicQueueNums: 4, QueueID: 0, BornTimestamp: time.Now().UnixMilli(),
	}}
	req := protocol.NewRequest(protocol.SendMessageV2, &h)
	req.Body = []byte("probe")
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	resp, err := rc.Invoke(ctx, addr, req)
	if err != nil {
		return -1
	}
	return protocol.ResponseCode(resp.Code)
}

// routed reports whether the name server at ns has a route for the benchmark's topic.
func routed(rc *remoting.Client, ns string) bool {
	req := protocol.NewRequest(protocol.GetRouteInfoByTopic, &protocol.GetRouteInfoRequestHeader{Topic: restartTopic})
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	resp, err := rc.Invoke(ctx, ns, req)
	return err == nil && resp.Code == int16(protocol.Success)
}

// waitFor polls cond every millisecond until it holds, failing after timeout or when
// the child exits.
func waitFor(b *testing.B, c *restartChild, timeout time.Duration, what string, cond func() bool) {
	b.Helper()
	held := testkit.Until(timeout, time.Millisecond, func() bool {
		select {
		case <-c.exited:
			b.Fatalf("%s: ferry exited\n%s", what, c.log)
		default:
		}
		return cond()
	})
	if !held {
		b.Fatalf("%s: not within %s\n%s", what, timeout, c.log)
	}
}
