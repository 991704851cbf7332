package broker_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/client"
	"github.com/ferrymq/ferry/conf"
	"github.com/ferrymq/ferry/ha"
	"github.com/ferrymq/ferry/internal/testkit"
	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/nameserver"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
	"github.com/ferrymq/ferry/testutil"
)

// sendRaw sends one SEND_MESSAGE_V2 to queue 0 of topic at addr; wait is the WAIT
// property (a SYNC_MASTER waits for a slave only when it is true).
func sendRaw(t *testing.T, rc *remoting.Client, addr, topic string, body []byte, wait bool) *remoting.Command {
	t.Helper()
	props, err := message.EncodeProperties(map[string]string{message.PropertyWaitStoreMsgOK: fmt.Sprint(wait)})
	require.NoError(t, err)
	h := protocol.SendMessageRequestHeaderV2{SendMessageRequestHeader: protocol.SendMessageRequestHeader{
		ProducerGroup: "HaPG", Topic: topic, DefaultTopic: "TBW102", DefaultTopicQueueNums: 4,
		BornTimestamp: time.Now().UnixMilli(), Properties: string(props)}}
	return call(t, rc, addr, protocol.SendMessageV2, &h, body)
}

// pullRaw pulls up to 64 messages of queue 0 of topic from offset 0 at addr.
func pullRaw(t *testing.T, rc *remoting.Client, addr, topic string) *remoting.Command {
	t.Helper()
	return call(t, rc, addr, protocol.PullMessage, &protocol.PullMessageRequestHeader{
		ConsumerGroup: "HaCG", Topic: topic, MaxMsgNums: 64, SysFlag: protocol.PullFlagSubscription,
		Subscription: "*"}, nil)
}

// kv fetches GET_BROKER_RUNTIME_INFO (code GetBrokerRuntimeInfo) or GET_BROKER_CONFIG.
func kv(t *testing.T, rc *remoting.Client, addr string, code protocol.RequestCode) map[string]string {
	t.Helper()
	resp := call(t, rc, addr, code, nil, nil)
	require.Equal(t, int16(protocol.Success), resp.Code, resp.Remark)
	if code == protocol.GetBrokerConfig {
		m, err := protocol.DecodeConfigProperties(resp.Body)
		require.NoError(t, err)
		return m
	}
	table, err := protocol.DecodeKVTable(resp.Body)
	require.NoError(t, err)
	return table.Table
}

// logBytes is the commit log of a broker from 0 to end.
func logBytes(t *testing.T, s *testutil.Slave, c *testutil.Cluster, slave bool, end int64) []byte {
	t.Helper()
	cl := c.Broker.Store().CommitLog()
	if slave {
		cl = s.Broker.Store().CommitLog()
	}
	var out []byte
	for off := int64(0); off < end; {
		v, err := cl.Read(off, int(end-off))
		require.NoError(t, err)
		out = append(out, v.Bytes()...)
		off += int64(len(v.Bytes()))
		v.Release()
	}
	return out
}

// An ASYNC_MASTER with a SLAVE: the slave registers under the master's broker name
// with id 1, learns the master's HA address from the name server, holds a
// byte-identical copy of the log and serves it to pulls; it refuses sends; the
// master reports the lag and both report their roles.
func TestAsyncMasterReplicatesToSlave(t *testing.T) {
	c := testutil.StartCluster(t)
	s := c.StartSlave(t, nil)
	rc, err := remoting.NewClient(remoting.DefaultClientOptions())
	require.NoError(t, err)
	defer func() { require.NoError(t, rc.Close()) }()

	cl, err := client.New(client.WithNameServers(c.NamesrvAddr), client.WithRequestTimeout(3*time.Second))
	require.NoError(t, err)
	defer func() { require.NoError(t, cl.Close()) }()
	p, err := cl.NewProducer("HaPG")
	require.NoError(t, err)
	defer func() { require.NoError(t, p.Close()) }()
	const n = 50
	for i := range n {
		m := message.NewMessage("HaTopic", fmt.Appendf(nil, "replicated-%d", i))
		m.SetKeys(fmt.Sprintf("k%d", i))
		_, err := p.Send(context.Background(), m)
		require.NoError(t, err)
	}

	route, ok := c.NameServer.Table().TopicRoute("HaTopic")
	require.True(t, ok)
	require.Len(t, route.BrokerDatas, 1)
	require.Equal(t, map[int64]string{0: c.BrokerAddr, 1: s.Addr}, route.BrokerDatas[0].BrokerAddrs)

	end := c.Broker.Store().CommitLog().MaxOffset()
	testutil.Eventually(t, 10*time.Second, func() bool {
		return s.Broker.Store().CommitLog().MaxOffset() == end
	}, "slave has the master's log")
	require.True(t, bytes.Equal(logBytes(t, s, c, false, end), logBytes(t, s, c, true, end)), "logs differ")

	// The slave's dispatcher built the consume queues: a pull from the slave answers the
	// same record bytes as one from the master. The test does not wait for the metadata
	// sync (every 10 s): the topic is created on the slave by hand.
	resp := call(t, rc, s.Addr, protocol.UpdateAndCreateTopic, &protocol.CreateTopicRequestHeader{Topic: "HaTopic",
		DefaultTopic: "TBW102", ReadQueueNums: 4, WriteQueueNums: 4, Perm: protocol.PermRead | protocol.PermWrite}, nil)
	require.Equal(t, int16(protocol.Success), resp.Code, resp.Remark)
	var fromMaster, fromSlave *remoting.Command
	testutil.Eventually(t, 10*time.Second, func() bool {
		fromMaster, fromSlave = pullRaw(t, rc, c.BrokerAddr, "HaTopic"), pullRaw(t, rc, s.Addr, "HaTopic")
		return fromMaster.Code == int16(protocol.Success) && fromSlave.Code == int16(protocol.Success) &&
			len(fromSlave.Body) == len(fromMaster.Body)
	}, "the slave serves the replicated messages")
	require.NotEmpty(t, fromSlave.Body)
	require.Equal(t, fromMaster.Body, fromSlave.Body)

	// A send to the slave is refused as RocketMQ refuses it.
	resp = sendRaw(t, rc, s.Addr, "HaTopic", []byte("to the slave"), true)
	require.Equal(t, int16(protocol.ServiceNotAvailable), resp.Code)
	require.Contains(t, resp.Remark, "SLAVE")
	require.Equal(t, end, s.Broker.Store().CommitLog().MaxOffset())

	// Roles and lag.
	testutil.Eventually(t, 10*time.Second, func() bool {
		return kv(t, rc, c.BrokerAddr, protocol.GetBrokerRuntimeInfo)["slaveFallBehindMuch"] == "0"
	}, "the master reports no lag")
	mi := kv(t, rc, c.BrokerAddr, protocol.GetBrokerRuntimeInfo)
	require.Equal(t, "1", mi["ferryHaSlaves"])
	require.Equal(t, "ASYNC_MASTER", mi["brokerRole"])
	si := kv(t, rc, s.Addr, protocol.GetBrokerRuntimeInfo)
	require.Equal(t, "SLAVE", si["brokerRole"])
	require.Equal(t, "true", si["ferryHaConnected"])
	require.Equal(t, c.Broker.HAAddr(), si["ferryHaMasterAddr"])
	require.Equal(t, "SLAVE", kv(t, rc, s.Addr, protocol.GetBrokerConfig)["brokerRole"])
	require.Equal(t, "1", kv(t, rc, s.Addr, protocol.GetBrokerConfig)["brokerId"])
	require.Equal(t, c.Broker.HAAddr(), kv(t, rc, c.BrokerAddr, protocol.GetBrokerConfig)["haServerAddr"])
}

// A SYNC_MASTER (with SYNC_FLUSH: flush first, then the slave) answers
// SLAVE_NOT_AVAILABLE without a slave, SEND_OK once a slave has the message, and
// FLUSH_SLAVE_TIMEOUT after haSlaveTimeout when the slave stops acknowledging. The
// message is stored in every case.
func TestSyncMasterWaitsForSlave(t *testing.T) {
	const slaveTimeout = 700 * time.Millisecond
	c := testutil.StartCluster(t, testutil.WithBrokerConfig(func(cfg *conf.BrokerConfig) {
		cfg.Role, cfg.FlushDiskType, cfg.HASlaveTimeout = conf.SyncMaster, conf.SyncFlush, slaveTimeout
	}))
	rc, err := remoting.NewClient(remoting.DefaultClientOptions())
	require.NoError(t, err)
	defer func() { require.NoError(t, rc.Close()) }()
	require.Equal(t, "SYNC_MASTER", kv(t, rc, c.BrokerAddr, protocol.GetBrokerConfig)["brokerRole"])
	stored := func(n int64) {
		t.Helper()
		testutil.Eventually(t, 10*time.Second, func() bool { return c.Broker.Store().MaxOffset("SyncTopic", 0) == n },
			fmt.Sprintf("%d messages stored", n))
	}

	resp := sendRaw(t, rc, c.BrokerAddr, "SyncTopic", []byte("no slave"), true)
	require.Equal(t, int16(protocol.SlaveNotAvailable), resp.Code, resp.Remark)
	stored(1)
	resp = sendRaw(t, rc, c.BrokerAddr, "SyncTopic", []byte("no wait"), false)
	require.Equal(t, int16(protocol.Success), resp.Code, resp.Remark)

	// The slave reaches the master through a proxy that can be frozen (a partition
	// that keeps the connection open); haMasterAddr is the static fallback.
	px := testkit.StartProxy(t, c.Broker.HAAddr())
	defer px.Close()
	s := c.StartSlave(t, func(cfg *conf.BrokerConfig) { cfg.HAMasterAddr = px.Addr() })
	testutil.Eventually(t, 10*time.Second, func() bool {
		return kv(t, rc, c.BrokerAddr, protocol.GetBrokerRuntimeInfo)["ferryHaSlaves"] == "1"
	}, "slave connected")
	for i := range 5 {
		resp = sendRaw(t, rc, c.BrokerAddr, "SyncTopic", fmt.Appendf(nil, "acked-%d", i), true)
		require.Equal(t, int16(protocol.Success), resp.Code, resp.Remark)
		end := c.Broker.Store().CommitLog().MaxOffset()
		require.GreaterOrEqual(t, s.Broker.Store().CommitLog().MaxOffset(), end, "the slave has the message when the send returns")
	}

	px.SetFrozen(true)
	start := time.Now()
	resp = sendRaw(t, rc, c.BrokerAddr, "SyncTopic", []byte("partitioned"), true)
	took := time.Since(start)
	require.Equal(t, int16(protocol.FlushSlaveTimeout), resp.Code, resp.Remark)
	require.GreaterOrEqual(t, took, slaveTimeout)
	require.Less(t, took, slaveTimeout+3*time.Second)
	stored(8)

	// The slave gone (its connection closed): SLAVE_NOT_AVAILABLE at once again.
	px.Close()
	s.Stop(t)
	testutil.Eventually(t, 10*time.Second, func() bool {
		return kv(t, rc, c.BrokerAddr, protocol.GetBrokerRuntimeInfo)["ferryHaSlaves"] == "0"
	}, "slave disconnected")
	resp = sendRaw(t, rc, c.BrokerAddr, "SyncTopic", []byte("slave gone"), true)
	require.Equal(t, int16(protocol.SlaveNotAvailable), resp.Code, resp.Remark)
	stored(9)
}

// A SYNC_MASTER send waiting for its slave is answered SLAVE_NOT_AVAILABLE as soon as the
// last slave disconnects, not FLUSH_SLAVE_TIMEOUT at haSlaveTimeout: a client whose send
// timeout is shorter than haSlaveTimeout would otherwise time out and resend a message
// that is stored (issue: duplicates on a slave's death). The message is stored once.
func TestSyncMasterAnswersWhenLastSlaveLeaves(t *testing.T) {
	const slaveTimeout = 20 * time.Second // far beyond the wait below
	c := testutil.StartCluster(t, testutil.WithBrokerConfig(func(cfg *conf.BrokerConfig) {
		cfg.Role, cfg.HASlaveTimeout = conf.SyncMaster, slaveTimeout
	}))
	ro := remoting.DefaultClientOptions()
	ro.RequestTimeout = 2 * slaveTimeout
	rc, err := remoting.NewClient(ro)
	require.NoError(t, err)
	defer func() { require.NoError(t, rc.Close()) }()

	px := testkit.StartProxy(t, c.Broker.HAAddr())
	defer px.Close()
	s := c.StartSlave(t, func(cfg *conf.BrokerConfig) { cfg.HAMasterAddr = px.Addr() })
	defer s.Stop(t)
	testutil.Eventually(t, 10*time.Second, func() bool {
		return kv(t, rc, c.BrokerAddr, protocol.GetBrokerRuntimeInfo)["ferryHaSlaves"] == "1"
	}, "slave connected")
	resp := sendRaw(t, rc, c.BrokerAddr, "SyncGone", []byte("acked"), true)
	require.Equal(t, int16(protocol.Success), resp.Code, resp.Remark)

	// The slave stops acknowledging (the proxy holds its bytes), a send waits for it...
	px.SetFrozen(true)
	props, err := message.EncodeProperties(map[string]string{message.PropertyWaitStoreMsgOK: "true"})
	require.NoError(t, err)
	req := protocol.NewRequest(protocol.SendMessageV2, &protocol.SendMessageRequestHeaderV2{
		SendMessageRequestHeader: protocol.SendMessageRequestHeader{ProducerGroup: "HaPG", Topic: "SyncGone",
			DefaultTopic: "TBW102", DefaultTopicQueueNums: 4, BornTimestamp: time.Now().UnixMilli(), Properties: string(props)}})
	req.Body = []byte("in flight")
	type result struct {
		resp *remoting.Command
		err  error
	}
	answer := make(chan result, 1)
	go func() {
		resp, err := rc.Invoke(context.Background(), c.BrokerAddr, req)
		answer <- result{resp, err}
	}()
	testutil.Eventually(t, 10*time.Second, func() bool { return c.Broker.Store().MaxOffset("SyncGone", 0) == 2 },
		"the in-flight message stored")
	// ...and the slave's connection closes: the send is answered now.
	px.Close()
	r := <-answer
	require.NoError(t, r.err)
	require.Equal(t, int16(protocol.SlaveNotAvailable), r.resp.Code, "answered at the slave's disconnect: %s", r.resp.Remark)
	require.Equal(t, int64(2), c.Broker.Store().MaxOffset("SyncGone", 0), "stored once")
}

// With ACL on and TLS enforcing on the master, its HA port gives an anonymous client
// nothing, plain or TLS, and a slave with the broker credentials (an admin account)
// dialing TLS (tlsToNamesrv) replicates.
func TestReplicationWithACLAndTLS(t *testing.T) {
	dir := t.TempDir()
	aclFile := filepath.Join(dir, "plain_acl.yml")
	require.NoError(t, os.WriteFile(aclFile, []byte(`
accounts:
  - accessKey: ferryAdmin
    secretKey: admin-secret
    admin: true
`), 0o600))
	cert, key := testutil.SelfSignedCert(t)
	srvTLS, err := remoting.LoadServerTLS(cert, key, "", false)
	require.NoError(t, err)
	c := testutil.StartCluster(t,
		testutil.WithNameServerOptions(func(o *nameserver.Options) {
			o.TLS = &remoting.TLSConfig{Mode: remoting.TLSPermissive, Config: srvTLS}
		}),
		testutil.WithBrokerConfig(func(cfg *conf.BrokerConfig) {
			cfg.ACLEnable, cfg.ACLFile = true, aclFile
			cfg.AccessKey, cfg.SecretKey = "ferryAdmin", "admin-secret"
			cfg.TLSMode, cfg.TLSCertFile, cfg.TLSKeyFile = "enforcing", cert, key
		}))
	anonymous := func(useTLS bool) int {
		t.Helper()
		conn, err := net.Dial("tcp", c.Broker.HAAddr())
		require.NoError(t, err)
		defer func() { _ = conn.Close() }()
		if useTLS {
			conn = tls.Client(conn, &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: true}) //nolint:gosec // the test's self-signed certificate
		}
		require.NoError(t, conn.SetDeadline(time.Now().Add(10*time.Second)))
		var report [ha.ReportSize]byte
		ha.PutReport(report[:], 0)
		if _, err := conn.Write(report[:]); err != nil {
			return 0 // refused before the report was taken
		}
		got, buf := 0, make([]byte, 4096)
		for got <= ha.FrameHeaderSize { // until it closes, or once it streams
			n, err := conn.Read(buf)
			got += n
			if err != nil {
				var ne net.Error
				require.False(t, errors.As(err, &ne) && ne.Timeout(), "the master neither refused nor streamed")
				break
			}
		}
		return got
	}
	rec := message.Record{Topic: []byte("HASecure"), Body: []byte("secret payload"), BornTimestamp: time.Now().UnixMilli()}
	_, err = c.Broker.Store().PutMessage(&rec, false)
	require.NoError(t, err)
	require.Zero(t, anonymous(false), "plain anonymous HA client")
	require.Zero(t, anonymous(true), "TLS anonymous HA client")

	s := c.StartSlave(t, func(cfg *conf.BrokerConfig) { cfg.TLSToNamesrv = true })
	defer s.Stop(t)
	end := c.Broker.Store().CommitLog().MaxOffset()
	require.Positive(t, end)
	testutil.Eventually(t, 10*time.Second, func() bool { return s.Broker.Store().CommitLog().MaxOffset() == end },
		"the slave replicated over TLS with its credentials")
}
