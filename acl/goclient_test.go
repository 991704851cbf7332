package acl

import (
	"context"
	"errors"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/admin"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"
	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/acl/sign"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
)

// oracleServer is a name server and broker in one remoting.Server whose every handler
// first asks the ACL, the way the broker will: the official Go client is the signer.
type oracleServer struct {
	srv  *remoting.Server
	acl  *ACL
	mu   sync.Mutex
	seen []checked
}

type checked struct {
	code     int16
	err      error
	token    bool   // the request carried a SecurityToken
	tokenVal string // its value: it tells this test's producers apart
}

var oracleSeq atomic.Int64

func startOracle(t *testing.T, a *ACL) *oracleServer {
	t.Helper()
	rlog.SetLogLevel("fatal")
	o := &oracleServer{acl: a}
	s, err := remoting.NewServer(remoting.DefaultServerOptions())
	require.NoError(t, err)
	o.srv = s
	for _, c := range []protocol.RequestCode{protocol.GetRouteInfoByTopic, protocol.SendMessage, protocol.SendMessageV2,
		protocol.HeartBeat, protocol.UpdateAndCreateTopic, protocol.UnregisterClient, protocol.GetAllSubscriptionGroupConfig} {
		require.NoError(t, s.Handle(int16(c), remoting.DefaultPool, remoting.HandlerFunc(o.serve)))
	}
	remoting.ServeTest(t, s, nil)
	return o
}

func (o *oracleServer) addr() string { return o.srv.Addr().String() }

func (o *oracleServer) serve(_ context.Context, ch remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	ap, err := netip.ParseAddrPort(ch.RemoteAddr())
	if err != nil {
		return nil, err
	}
	// (A broker would also pass HEART_BEAT's subscriptions and groups from the body.)
	cerr := o.acl.Check(Request{Addr: ap.Addr(), Code: req.Code, Version: req.Version,
		Fields: req.ExtFields, Body: req.Body})
	o.mu.Lock()
	tokenVal, token := req.ExtFields.Get(sign.FieldSecurityToken)
	o.seen = append(o.seen, checked{req.Code, cerr, token, tokenVal})
	n := len(o.seen)
	o.mu.Unlock()
	if cerr != nil {
		return remoting.NewResponse(req, int16(protocol.NoPermission), cerr.Error()), nil
	}
	switch protocol.RequestCode(req.Code) {
	case protocol.GetRouteInfoByTopic:
		resp := remoting.NewResponse(req, int16(protocol.Success), "")
		resp.Body, err = protocol.EncodeTopicRouteData(&protocol.TopicRouteData{
			QueueDatas:  []protocol.QueueData{{BrokerName: "broker-a", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6}},
			BrokerDatas: []protocol.BrokerData{{Cluster: "c", BrokerName: "broker-a", BrokerAddrs: map[int64]string{0: o.addr()}}},
		})
		return resp, err
	case protocol.SendMessage, protocol.SendMessageV2:
		resp := remoting.NewResponse(req, int16(protocol.Success), "")
		resp.ExtFields = remoting.ExtOf(map[string]string{"msgId": "0A0000010000000000000000", "queueId": "0", "queueOffset": strconv.Itoa(n)})
		return resp, nil
	}
	return remoting.NewResponse(req, int16(protocol.Success), ""), nil
}

func (o *oracleServer) results() []checked {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]checked(nil), o.seen...)
}

func (o *oracleServer) reset() {
	o.mu.Lock()
	o.seen = nil
	o.mu.Unlock()
}

func oracleProducer(t *testing.T, o *oracleServer, cred primitive.Credentials) rocketmq.Producer {
	t.Helper()
	p, err := rocketmq.NewProducer(
		producer.WithNsResolver(primitive.NewPassthroughResolver([]string{o.addr()})),
		producer.WithGroupName("acl-oracle-pg"),
		producer.WithInstanceName("acl-oracle-"+strconv.FormatInt(oracleSeq.Add(1), 10)),
		producer.WithCredentials(cred),
		producer.WithRetry(0),
		producer.WithSendMsgTimeout(3*time.Second),
	)
	require.NoError(t, err)
	require.NoError(t, p.Start())
	t.Cleanup(func() { _ = p.Shutdown() })
	return p
}

// TestOfficialGoClientSignaturesVerify sends with the official Go client, through Ferry's
// remoting server, and checks every request it signed.
func TestOfficialGoClientSignaturesVerify(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the official client")
	}
	a := testACL(t)
	o := startOracle(t, a)
	ctx := context.Background()

	for _, token := range []string{"", "session-token"} {
		o.reset()
		p := oracleProducer(t, o, primitive.Credentials{AccessKey: "RocketMQ", SecretKey: "12345678", SecurityToken: token})
		msg := primitive.NewMessage("topicB", []byte("hello, signed body \x00\x01\xff"))
		msg.WithTag("tagA").WithKeys([]string{"k1", "k2"}).WithProperty("custom", "värde")
		res, err := p.SendSync(ctx, msg)
		require.NoError(t, err, "token %q", token)
		require.Equal(t, primitive.SendOK, res.Status)

		// A topic the account may not publish to: refused by the broker side.
		_, err = p.SendSync(ctx, primitive.NewMessage("topicA", []byte("x")))
		require.Error(t, err)
		require.Contains(t, err.Error(), "needs PUB on topic")

		var codes []int16
		for _, c := range o.results() {
			codes = append(codes, c.code)
			if c.code == int16(protocol.SendMessage) || c.code == int16(protocol.SendMessageV2) {
				// Sends are this producer's alone; a route refresh or heartbeat of the
				// previous iteration's producer, still shutting down, may be among the rest.
				require.Equal(t, token != "", c.token)
			}
			if c.err != nil {
				require.ErrorIs(t, c.err, ErrDenied, "code %d", c.code)
			}
		}
		t.Logf("token %q: checked codes %v", token, codes)
		require.Contains(t, codes, int16(protocol.GetRouteInfoByTopic))
		require.Contains(t, codes, int16(protocol.SendMessage))
		require.NoError(t, p.Shutdown())
	}

	// A wrong secret: every signed request is refused as a bad signature. Its token
	// tells its requests apart from a late route refresh of the previous producer,
	// still shutting down, which is rightly allowed.
	o.reset()
	const wrongToken = "wrong-secret-producer"
	p := oracleProducer(t, o, primitive.Credentials{AccessKey: "RocketMQ", SecretKey: "not-the-secret", SecurityToken: wrongToken})
	_, err := p.SendSync(ctx, primitive.NewMessage("topicB", []byte("x")))
	require.Error(t, err)
	var wrong int
	for _, c := range o.results() {
		if c.tokenVal != wrongToken {
			continue
		}
		wrong++
		require.ErrorIs(t, c.err, ErrBadSignature, "code %d", c.code)
	}
	require.NotZero(t, wrong, "the wrong-secret producer's requests reached the oracle")
	require.NoError(t, p.Shutdown())

	// The admin client. Its CreateTopic does not install the ACL interceptor (only
	// GetAllSubscriptionGroup does, on the shared client), so a first CreateTopic goes
	// out unsigned; after GetAllSubscriptionGroup it is signed and the admin-only rule
	// applies.
	o.reset()
	adm, err := admin.NewAdmin(
		admin.WithResolver(primitive.NewPassthroughResolver([]string{o.addr()})),
		admin.WithCredentials(primitive.Credentials{AccessKey: "RocketMQ", SecretKey: "12345678"}))
	require.NoError(t, err)
	defer adm.Close()
	createErr := func() error {
		_ = adm.CreateTopic(ctx, admin.WithTopicCreate("newTopic"), admin.WithBrokerAddrCreate(o.addr()))
		for _, c := range o.results() {
			if c.code == int16(protocol.UpdateAndCreateTopic) {
				return c.err
			}
		}
		return errors.New("no UPDATE_AND_CREATE_TOPIC seen")
	}
	require.ErrorIs(t, createErr(), ErrAddressNotAllowed)
	o.reset()
	_, _ = adm.GetAllSubscriptionGroup(ctx, o.addr(), 3*time.Second)
	require.Equal(t, []checked{{code: int16(protocol.GetAllSubscriptionGroupConfig)}}, o.results())
	o.reset()
	require.ErrorIs(t, createErr(), ErrAdminOnly)
}
