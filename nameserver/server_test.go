package nameserver

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/acl/sign"
	"github.com/ferrymq/ferry/internal/testkit"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
)

// startServer starts a name server on 127.0.0.1:0 and shuts it down at
// cleanup.
func startServer(t *testing.T, mutate func(*Options)) *Server {
	t.Helper()
	opts := DefaultOptions()
	if mutate != nil {
		mutate(&opts)
	}
	s, err := New(opts)
	require.NoError(t, err)
	remoting.ServeTest(t, s, nil)
	return s
}

func newClient(t *testing.T, st remoting.SerializeType) *remoting.Client {
	t.Helper()
	opts := remoting.DefaultClientOptions()
	opts.SerializeType = st
	c, err := remoting.NewClient(opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func invoke(t *testing.T, c *remoting.Client, addr string, req *remoting.Command) *remoting.Command {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := c.Invoke(ctx, addr, req)
	require.NoError(t, err)
	return resp
}

func registerRequest(t *testing.T, h *protocol.RegisterBrokerRequestHeader, b *protocol.RegisterBrokerBody) *remoting.Command {
	t.Helper()
	req := protocol.NewRequest(protocol.RegisterBroker, h)
	if b != nil {
		body, err := protocol.EncodeRegisterBrokerBody(b)
		require.NoError(t, err)
		req.Body = body
	}
	return req
}

func routeRequest(topic string) *remoting.Command {
	return protocol.NewRequest(protocol.GetRouteInfoByTopic, &protocol.GetRouteInfoRequestHeader{Topic: topic})
}

func TestServerRegisterAndRoute(t *testing.T) {
	for _, st := range []remoting.SerializeType{remoting.SerializeJSON, remoting.SerializeRocketMQ} {
		t.Run(st.String(), func(t *testing.T) {
			s := startServer(t, nil)
			c := newClient(t, st)
			ns := s.Addr()

			master := regHeader("DefaultCluster", "broker-a", "10.0.0.5:10911", 0)
			master.HAServerAddr = "10.0.0.5:10912"
			resp := invoke(t, c, ns, registerRequest(t, master, regBody(1, topicConfig("TopicA", 4, 6))))
			require.Equal(t, int16(protocol.Success), resp.Code, resp.Remark)
			require.Equal(t, st, resp.SerializeType)
			require.Empty(t, resp.Ext("masterAddr"))
			require.Empty(t, resp.Body)

			slave := regHeader("DefaultCluster", "broker-a", "10.0.0.6:10911", 1)
			resp = invoke(t, c, ns, registerRequest(t, slave, regBody(1)))
			require.Equal(t, int16(protocol.Success), resp.Code, resp.Remark)
			var rh protocol.RegisterBrokerResponseHeader
			require.NoError(t, rh.DecodeExt(resp.ExtFields))
			require.Equal(t, protocol.RegisterBrokerResponseHeader{
				MasterAddr: "10.0.0.5:10911", HAServerAddr: "10.0.0.5:10912",
			}, rh)

			resp = invoke(t, c, ns, routeRequest("TopicA"))
			require.Equal(t, int16(protocol.Success), resp.Code, resp.Remark)
			route, err := goClientDecodeRoute(resp.Body)
			require.NoError(t, err)
			require.Equal(t, []goRouteBroker{{Cluster: "DefaultCluster", BrokerName: "broker-a",
				Addrs: map[int64]string{0: "10.0.0.5:10911", 1: "10.0.0.6:10911"}}}, route.Brokers)
			require.Equal(t, []goRouteQueue{{BrokerName: "broker-a", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6}},
				route.Queues)
		})
	}
}

func TestServerTopicNotExist(t *testing.T) {
	s := startServer(t, nil)
	c := newClient(t, remoting.SerializeJSON)
	resp := invoke(t, c, s.Addr(), routeRequest("Missing"))
	require.Equal(t, int16(protocol.TopicNotExist), resp.Code)
	require.Equal(t, int16(17), resp.Code)
	require.Contains(t, resp.Remark, "Missing")
	require.Empty(t, resp.Body)

	resp = invoke(t, c, s.Addr(), remoting.NewRequest(int16(protocol.GetRouteInfoByTopic), nil))
	require.Equal(t, int16(protocol.SystemError), resp.Code, "topic is required")
	require.Contains(t, resp.Remark, "topic")
}

func TestServerAdminRequests(t *testing.T) {
	s := startServer(t, nil)
	c := newClient(t, remoting.SerializeJSON)
	ns := s.Addr()
	for _, r := range []struct {
		h *protocol.RegisterBrokerRequestHeader
		b *protocol.RegisterBrokerBody
	}{
		{regHeader("c1", "broker-a", "10.0.0.5:10911", 0), regBody(1, topicConfig("T", 4, 6), topicConfig("A", 1, 6))},
		{regHeader("c2", "broker-b", "10.0.0.7:10911", 0), regBody(1, topicConfig("T", 2, 6))},
	} {
		resp := invoke(t, c, ns, registerRequest(t, r.h, r.b))
		require.Equal(t, int16(protocol.Success), resp.Code, resp.Remark)
	}

	resp := invoke(t, c, ns, remoting.NewRequest(int16(protocol.GetBrokerClusterInfo), nil))
	require.Equal(t, int16(protocol.Success), resp.Code)
	info, err := protocol.DecodeClusterInfo(resp.Body)
	require.NoError(t, err)
	require.Equal(t, map[string][]string{"c1": {"broker-a"}, "c2": {"broker-b"}}, info.ClusterAddrTable)
	require.Equal(t, map[int64]string{0: "10.0.0.7:10911"}, info.BrokerAddrTable["broker-b"].BrokerAddrs)

	topicList := func() []string {
		resp := invoke(t, c, ns, remoting.NewRequest(int16(protocol.GetAllTopicListFromNameServer), nil))
		require.Equal(t, int16(protocol.Success), resp.Code)
		list, err := protocol.DecodeTopicList(resp.Body)
		require.NoError(t, err)
		return list.TopicList
	}
	require.Equal(t, []string{"A", "T"}, topicList())

	del := func(ext map[string]string) {
		resp := invoke(t, c, ns, remoting.NewRequest(int16(protocol.DeleteTopicInNameSrv), ext))
		require.Equal(t, int16(protocol.Success), resp.Code, resp.Remark)
	}
	del(map[string]string{"topic": "T", "clusterName": "c1"})
	route, ok := s.Table().TopicRoute("T")
	require.True(t, ok)
	require.Equal(t, "broker-b", route.QueueDatas[0].BrokerName)
	del(map[string]string{"topic": "T"})
	del(map[string]string{"topic": "NeverExisted"})
	require.Equal(t, []string{"A"}, topicList())
	resp = invoke(t, c, ns, routeRequest("T"))
	require.Equal(t, int16(protocol.TopicNotExist), resp.Code)

	resp = invoke(t, c, ns, remoting.NewRequest(int16(protocol.DeleteTopicInNameSrv), nil))
	require.Equal(t, int16(protocol.SystemError), resp.Code)

	// Unregister the broker hosting A: the topic list becomes empty ([], not null).
	unreg := protocol.UnregisterBrokerRequestHeader{ClusterName: "c1", BrokerName: "broker-a",
		BrokerAddr: "10.0.0.5:10911", BrokerID: 0}
	resp = invoke(t, c, ns, protocol.NewRequest(protocol.UnregisterBroker, &unreg))
	require.Equal(t, int16(protocol.Success), resp.Code, resp.Remark)
	require.Empty(t, topicList())
	resp = invoke(t, c, ns, remoting.NewRequest(int16(protocol.GetAllTopicListFromNameServer), nil))
	require.Equal(t, `{"topicList":[]}`, string(resp.Body))
	resp = invoke(t, c, ns, remoting.NewRequest(int16(protocol.UnregisterBroker), map[string]string{"brokerName": "x"}))
	require.Equal(t, int16(protocol.SystemError), resp.Code)

	// Codes the name server does not serve are answered by the remoting layer.
	resp = invoke(t, c, ns, remoting.NewRequest(int16(protocol.GetTopicsByCluster), nil))
	require.Equal(t, int16(protocol.RequestCodeNotSupported), resp.Code)
}

func TestServerRegistrationErrors(t *testing.T) {
	s := startServer(t, nil)
	c := newClient(t, remoting.SerializeJSON)
	ns := s.Addr()
	h := regHeader("c1", "broker-a", "10.0.0.5:10911", 0)
	b := regBody(1, topicConfig("T", 4, 6))

	// A correct bodyCrc32 is accepted.
	req := registerRequest(t, h, b)
	req.SetExt("bodyCrc32", strconv.Itoa(int(bodyCRC(req.Body))))
	resp := invoke(t, c, ns, req)
	require.Equal(t, int16(protocol.Success), resp.Code, resp.Remark)

	// A wrong one is refused with Java's remark, and nothing changes.
	b2 := regBody(2, topicConfig("T", 8, 6))
	req = registerRequest(t, h, b2)
	req.SetExt("bodyCrc32", strconv.Itoa(int(bodyCRC(req.Body))^1))
	resp = invoke(t, c, ns, req)
	require.Equal(t, int16(protocol.SystemError), resp.Code)
	require.Equal(t, RemarkCRCMismatch, resp.Remark)
	require.Equal(t, map[string]int32{"broker-a": 4}, routeQueues(t, s.Table(), "T"))

	req = registerRequest(t, h, b2)
	req.SetExt("compressed", "true")
	resp = invoke(t, c, ns, req)
	require.Equal(t, int16(protocol.SystemError), resp.Code)
	require.Equal(t, RemarkCompressedUnsupported, resp.Remark)

	req = registerRequest(t, h, nil)
	req.Body = []byte(`{"topicConfigSerializeWrapper":`)
	resp = invoke(t, c, ns, req)
	require.Equal(t, int16(protocol.SystemError), resp.Code)
	require.Contains(t, resp.Remark, "malformed body")

	req = registerRequest(t, regHeader("c1", "broker-a", "1.2.3.4:5,6.7.8.9:10", 0), b2)
	resp = invoke(t, c, ns, req)
	require.Equal(t, int16(protocol.SystemError), resp.Code)
	require.Contains(t, resp.Remark, "unsafe byte")

	req = registerRequest(t, h, b2)
	req.ExtFields.Delete("brokerId")
	resp = invoke(t, c, ns, req)
	require.Equal(t, int16(protocol.SystemError), resp.Code)
	require.Contains(t, resp.Remark, "brokerId")

	require.Equal(t, map[string]int32{"broker-a": 4}, routeQueues(t, s.Table(), "T"))
}

func TestMaskedCRCMatchesJava(t *testing.T) {
	// java.util.zip.CRC32 of "123456789" is 0xCBF43926; masked: 0x4BF43926.
	require.Equal(t, int32(0x4BF43926), bodyCRC([]byte("123456789")))
	require.GreaterOrEqual(t, bodyCRC([]byte{0xff, 0x00}), int32(0))
}

func TestServerRemovesABrokerWhenItsConnectionCloses(t *testing.T) {
	s := startServer(t, nil)
	broker := newClient(t, remoting.SerializeJSON)
	other := newClient(t, remoting.SerializeJSON)
	ns := s.Addr()

	resp := invoke(t, broker, ns, registerRequest(t, regHeader("c1", "broker-a", "10.0.0.5:10911", 0),
		regBody(1, topicConfig("T", 4, 6))))
	require.Equal(t, int16(protocol.Success), resp.Code, resp.Remark)
	resp = invoke(t, other, ns, routeRequest("T"))
	require.Equal(t, int16(protocol.Success), resp.Code)

	require.NoError(t, broker.Close())
	testkit.Eventually(t, 5*time.Second, func() bool {
		_, ok := s.Table().TopicRoute("T")
		return !ok
	}, "route removed after the broker's connection closed")
	resp = invoke(t, other, ns, routeRequest("T"))
	require.Equal(t, int16(protocol.TopicNotExist), resp.Code)

	// A client's connection closing touches nothing.
	resp = invoke(t, other, ns, registerRequest(t, regHeader("c1", "broker-b", "10.0.0.7:10911", 0),
		regBody(1, topicConfig("U", 4, 6))))
	require.Equal(t, int16(protocol.Success), resp.Code)
	reader := newClient(t, remoting.SerializeJSON)
	resp = invoke(t, reader, ns, routeRequest("U"))
	require.Equal(t, int16(protocol.Success), resp.Code)
	require.NoError(t, reader.Close())
	_, ok := s.Table().TopicRoute("U")
	require.True(t, ok)
}

// The race over real connections: the broker's connection closes (a crash or a
// restart) and an impostor keeps registering the broker's name with its own address.
// The route leaves the answers to clients, but the name and id stay bound to the
// broker's address: the impostor is refused, and the broker registering again on a new
// connection gets its route back at once.
func TestServerKeepsTheBindingWhenTheBrokersConnectionCloses(t *testing.T) {
	s := startServer(t, nil)
	ns := s.Addr()
	broker := newClient(t, remoting.SerializeJSON)
	attacker := newClient(t, remoting.SerializeJSON)
	reader := newClient(t, remoting.SerializeJSON)
	genuine := regHeader("c1", "broker-a", "10.0.0.5:10911", 0)
	forged := regHeader("c1", "broker-a", "10.6.6.6:10911", 0)

	resp := invoke(t, broker, ns, registerRequest(t, genuine, regBody(1, topicConfig("T", 4, 6))))
	require.Equal(t, int16(protocol.Success), resp.Code, resp.Remark)
	require.NoError(t, broker.Close())
	testkit.Eventually(t, 5*time.Second, func() bool { return len(s.Table().Brokers()) == 0 }, "the broker leaves the routes with its connection")
	resp = invoke(t, reader, ns, routeRequest("T"))
	require.Equal(t, int16(protocol.TopicNotExist), resp.Code)

	for range 3 {
		resp = invoke(t, attacker, ns, registerRequest(t, forged, regBody(9, topicConfig("T", 8, 6))))
		require.Equal(t, int16(protocol.SystemError), resp.Code)
		require.Contains(t, resp.Remark, "is bound to cluster c1, broker broker-a, id 0")
	}
	resp = invoke(t, reader, ns, routeRequest("T"))
	require.Equal(t, int16(protocol.TopicNotExist), resp.Code, "the impostor got no route")

	restarted := newClient(t, remoting.SerializeJSON)
	resp = invoke(t, restarted, ns, registerRequest(t, genuine, regBody(1, topicConfig("T", 4, 6))))
	require.Equal(t, int16(protocol.Success), resp.Code, resp.Remark)
	resp = invoke(t, reader, ns, routeRequest("T"))
	require.Equal(t, int16(protocol.Success), resp.Code)
	route, err := protocol.DecodeTopicRouteData(resp.Body)
	require.NoError(t, err)
	require.Equal(t, map[int64]string{0: "10.0.0.5:10911"}, route.BrokerDatas[0].BrokerAddrs)
	resp = invoke(t, attacker, ns, registerRequest(t, forged, regBody(9, topicConfig("T", 8, 6))))
	require.Equal(t, int16(protocol.SystemError), resp.Code)
}

func TestServerRegistrationRacingItsConnectionClose(t *testing.T) {
	s := startServer(t, nil)
	for i := range 20 {
		c := newClient(t, remoting.SerializeJSON)
		h := regHeader("c1", "broker-"+strconv.Itoa(i), "10.0.1."+strconv.Itoa(i)+":10911", 0)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		require.NoError(t, c.InvokeOneway(ctx, s.Addr(), registerRequest(t, h, regBody(1, topicConfig("T", 4, 6)))))
		cancel()
		require.NoError(t, c.Close())
	}
	// Whether each registration was handled before or after its connection
	// closed, none may survive it. (One condition: a registration handled
	// late appears and is removed again by its own handler.)
	testkit.Eventually(t, 5*time.Second, func() bool {
		return len(s.rs.Channels()) == 0 && len(s.Table().Brokers()) == 0 && len(s.Table().TopicList()) == 0
	}, "no broker outlives its connection")
}

func TestServerExpiresSilentBrokers(t *testing.T) {
	s := startServer(t, func(o *Options) {
		o.BrokerExpiry = 300 * time.Millisecond
		o.ScanInterval = 20 * time.Millisecond
	})
	c := newClient(t, remoting.SerializeJSON)
	ns := s.Addr()

	longLived := regHeader("c1", "broker-b", "10.0.0.7:10911", 0)
	longLived.HeartbeatTimeoutMillis = time.Hour.Milliseconds()
	for _, h := range []*protocol.RegisterBrokerRequestHeader{regHeader("c1", "broker-a", "10.0.0.5:10911", 0), longLived} {
		resp := invoke(t, c, ns, registerRequest(t, h, regBody(1, topicConfig("T", 4, 6))))
		require.Equal(t, int16(protocol.Success), resp.Code, resp.Remark)
	}
	require.Len(t, s.Table().Brokers(), 2)

	// The connection stays open; only the expiry removes broker-a.
	testkit.Eventually(t, 5*time.Second, func() bool { return len(s.Table().Brokers()) == 1 }, "broker-a expired")
	require.Equal(t, map[string]int32{"broker-b": 4}, routeQueues(t, s.Table(), "T"))
}

func TestServerExpiryUsesTheInjectedClock(t *testing.T) {
	var mu sync.Mutex
	now := t0
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return now
	}
	s := startServer(t, func(o *Options) {
		o.ScanInterval = 10 * time.Millisecond
		o.Clock = clock
	})
	c := newClient(t, remoting.SerializeJSON)
	resp := invoke(t, c, s.Addr(), registerRequest(t, regHeader("c1", "broker-a", "10.0.0.5:10911", 0),
		regBody(1, topicConfig("T", 4, 6))))
	require.Equal(t, int16(protocol.Success), resp.Code)
	require.Equal(t, t0, s.Table().Brokers()[0].LastUpdate)

	mu.Lock()
	now = t0.Add(2 * time.Minute)
	mu.Unlock()
	resp = invoke(t, c, s.Addr(), routeRequest("T"))
	require.Equal(t, int16(protocol.Success), resp.Code, "not yet expired at exactly the timeout")

	mu.Lock()
	now = t0.Add(2*time.Minute + time.Millisecond)
	mu.Unlock()
	testkit.Eventually(t, 5*time.Second, func() bool { return len(s.Table().Brokers()) == 0 }, "expired by the sweeper")
}

func TestServerLogsRegistrationChangesAtInfo(t *testing.T) {
	var logs testkit.Buffer
	s := startServer(t, func(o *Options) { o.Logger = zerolog.New(&logs).Level(zerolog.InfoLevel) })
	c := newClient(t, remoting.SerializeJSON)
	h := regHeader("c1", "broker-a", "10.0.0.5:10911", 0)
	for range 3 { // one change, then two plain refreshes
		resp := invoke(t, c, s.Addr(), registerRequest(t, h, regBody(1, topicConfig("T", 4, 6))))
		require.Equal(t, int16(protocol.Success), resp.Code)
	}
	resp := invoke(t, c, s.Addr(), registerRequest(t, h, regBody(2, topicConfig("T", 8, 6))))
	require.Equal(t, int16(protocol.Success), resp.Code)
	require.Equal(t, 2, bytes.Count([]byte(logs.String()), []byte(`"message":"broker registered"`)), logs.String())
	require.Contains(t, logs.String(), `"level":"info"`)
}

func TestServerLifecycle(t *testing.T) {
	bad := DefaultOptions()
	bad.ScanInterval = bad.BrokerExpiry
	_, err := New(bad)
	require.Error(t, err)
	for _, mutate := range []func(*Options){
		func(o *Options) { o.BrokerExpiry = 0 },
		func(o *Options) { o.ScanInterval = 0 },
		func(o *Options) { o.MaxFrameSize = 0 },
		func(o *Options) { o.IdleTimeout = 0 },
		func(o *Options) { o.Workers = 0 },
		func(o *Options) { o.Clock = nil },
	} {
		o := DefaultOptions()
		mutate(&o)
		require.Error(t, o.Validate())
	}

	// Shutdown without Start, twice.
	s, err := New(DefaultOptions())
	require.NoError(t, err)
	require.Empty(t, s.Addr())
	require.NoError(t, s.Shutdown(context.Background()))
	require.NoError(t, s.Shutdown(context.Background()))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	require.Error(t, s.Start(ln), "no start after shutdown")
	require.NoError(t, ln.Close())

	// ListenAndStart, a second Start, idempotent Shutdown.
	o := DefaultOptions()
	o.Listen = "127.0.0.1:0"
	s, err = New(o)
	require.NoError(t, err)
	require.NoError(t, s.ListenAndStart())
	require.NotEmpty(t, s.Addr())
	// One round trip before Shutdown: remoting.Server.Shutdown called before its
	// serve goroutine has reached netpoll's Serve leaves that goroutine
	// waiting forever (a remoting issue, reported).
	resp := invoke(t, newClient(t, remoting.SerializeJSON), s.Addr(), routeRequest("T"))
	require.Equal(t, int16(protocol.TopicNotExist), resp.Code)
	ln, err = net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	require.Error(t, s.Start(ln))
	require.NoError(t, ln.Close())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, s.Shutdown(ctx))
	require.NoError(t, s.Shutdown(ctx))
}

// With an accounts file, requests need signatures: an anonymous REGISTER_BROKER is
// refused with NO_PERMISSION, an application account may read routes but not register,
// and the admin account registers and, being trusted, may replace a registration another
// connection holds.
func TestServerACL(t *testing.T) {
	file := filepath.Join(t.TempDir(), "plain_acl.yml")
	require.NoError(t, os.WriteFile(file, []byte(`
accounts:
  - accessKey: brokerAdmin
    secretKey: brokerSecret
    admin: true
  - accessKey: appUser1
    secretKey: appSecret1
    defaultTopicPerm: SUB
`), 0o600))
	s := startServer(t, func(o *Options) { o.ACLFile = file })
	c1, c2 := newClient(t, remoting.SerializeJSON), newClient(t, remoting.SerializeJSON)
	ns := s.Addr()
	signed := func(creds sign.Credentials, req *remoting.Command) *remoting.Command {
		req.ExtFields = remoting.Ext(creds.SignFields(req.ExtFields, req.Body))
		return req
	}
	admin := sign.Credentials{AccessKey: "brokerAdmin", SecretKey: "brokerSecret"}
	app := sign.Credentials{AccessKey: "appUser1", SecretKey: "appSecret1"}
	master := regHeader("DefaultCluster", "broker-a", "10.0.0.5:10911", 0)

	resp := invoke(t, c1, ns, registerRequest(t, master, regBody(1, topicConfig("TopicA", 4, 6))))
	require.Equal(t, int16(protocol.NoPermission), resp.Code, "anonymous")
	resp = invoke(t, c1, ns, signed(app, registerRequest(t, master, regBody(1, topicConfig("TopicA", 4, 6)))))
	require.Equal(t, int16(protocol.NoPermission), resp.Code, "not an admin")
	resp = invoke(t, c1, ns, signed(admin, registerRequest(t, master, regBody(1, topicConfig("TopicA", 4, 6)))))
	require.Equal(t, int16(protocol.Success), resp.Code, resp.Remark)

	resp = invoke(t, c2, ns, routeRequest("TopicA"))
	require.Equal(t, int16(protocol.NoPermission), resp.Code, "an unsigned route lookup")
	resp = invoke(t, c2, ns, signed(app, routeRequest("TopicA")))
	require.Equal(t, int16(protocol.Success), resp.Code, resp.Remark)

	moved := regHeader("DefaultCluster", "broker-a", "10.0.0.9:10911", 0)
	resp = invoke(t, c2, ns, signed(admin, registerRequest(t, moved, regBody(2, topicConfig("TopicA", 4, 6)))))
	require.Equal(t, int16(protocol.Success), resp.Code, "an admin may move a live registration: %s", resp.Remark)
	route, ok := s.Table().TopicRoute("TopicA")
	require.True(t, ok)
	require.Equal(t, map[int64]string{0: "10.0.0.9:10911"}, route.BrokerDatas[0].BrokerAddrs)
}
