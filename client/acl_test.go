package client

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/acl"
	"github.com/ferrymq/ferry/acl/sign"
	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
	"github.com/ferrymq/ferry/testutil"
)

// The accounts of the ACL tests: aclUser may publish and subscribe to Orders, only
// subscribe to Reports and only publish to Inbox; Payroll (like every other topic) is
// denied, its route included, and admin codes need an admin.
const (
	aclUser   = "ferryUser"
	aclSecret = "ferrySecret1"
	aclYAML   = `
accounts:
  - accessKey: ferryUser
    secretKey: ferrySecret1
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms: ["Orders=PUB|SUB", "Reports=SUB", "Inbox=PUB"]
`
)

// seenRequest is a request that passed a fake server's ACL gate.
type seenRequest struct {
	code      protocol.RequestCode
	st        remoting.SerializeType
	oneway    bool
	accessKey string
	signed    bool
	ext       map[string]string
}

// aclFake is a name server and a broker, both behind an ACL gate, answering just enough
// for a client to look routes up, send, pull, end transactions and read broker info.
type aclFake struct {
	nsAddr, brokerAddr string

	mu struct {
		sync.Mutex
		seen []seenRequest
		ch   remoting.Channel // the connection of the client's latest heartbeat
	}
}

// startACLFake starts the fake cluster; with ferry set the broker says it is Ferry, so
// the client switches to msgpack headers for it after its first heartbeat.
func startACLFake(t *testing.T, ferry bool) *aclFake {
	t.Helper()
	a, err := acl.Parse([]byte(aclYAML))
	require.NoError(t, err)
	gate := acl.NewGate(a, zerolog.Nop())
	f := &aclFake{}
	storeHost := netip.MustParseAddrPort("127.0.0.1:10911")
	ok := func(req *remoting.Command) *remoting.Command {
		return remoting.NewResponse(req, int16(protocol.Success), "")
	}
	broker := map[protocol.RequestCode]remoting.HandlerFunc{
		protocol.HeartBeat: func(_ context.Context, ch remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
			f.mu.Lock()
			f.mu.ch = ch
			f.mu.Unlock()
			resp := ok(req)
			if ferry {
				resp.SetExt(protocol.FerryServerKey, protocol.FerryServerVersion)
			}
			return resp, nil
		},
		protocol.SendMessageV2: func(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
			resp := ok(req)
			h := protocol.SendMessageResponseHeader{MsgID: message.OffsetMsgID(storeHost, 100), QueueOffset: 7}
			h.EncodeExt(&resp.ExtFields)
			return resp, nil
		},
		protocol.SendBatchMessage: func(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
			n, err := protocol.CountBatchItems(req.Body)
			if err != nil {
				return nil, err
			}
			ids := make([]string, n)
			for i := range ids {
				ids[i] = message.OffsetMsgID(storeHost, int64(200+i))
			}
			resp := ok(req)
			h := protocol.SendMessageResponseHeader{MsgID: strings.Join(ids, ","), QueueOffset: 8}
			h.EncodeExt(&resp.ExtFields)
			return resp, nil
		},
		protocol.PullMessage: func(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
			resp := remoting.NewResponse(req, int16(protocol.PullNotFound), "no new message")
			h := protocol.PullMessageResponseHeader{}
			h.EncodeExt(&resp.ExtFields)
			return resp, nil
		},
		protocol.EndTransaction: func(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
			return ok(req), nil
		},
		protocol.GetBrokerRuntimeInfo: func(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
			resp := ok(req)
			var err error
			resp.Body, err = protocol.EncodeKVTable(&protocol.KVTable{Table: map[string]string{"brokerVersion": "479"}})
			return resp, err
		},
		protocol.GetBrokerConfig: func(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
			resp := ok(req)
			resp.Body = protocol.EncodeConfigProperties(map[string]string{"brokerName": "broker-a"})
			return resp, nil
		},
	}
	f.brokerAddr = f.serve(t, gate, broker)
	ns := map[protocol.RequestCode]remoting.HandlerFunc{
		protocol.GetRouteInfoByTopic: func(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
			resp := ok(req)
			var err error
			resp.Body, err = protocol.EncodeTopicRouteData(&protocol.TopicRouteData{
				QueueDatas: []protocol.QueueData{{BrokerName: "broker-a", ReadQueueNums: 1, WriteQueueNums: 1,
					Perm: protocol.PermRead | protocol.PermWrite}},
				BrokerDatas: []protocol.BrokerData{{Cluster: "c", BrokerName: "broker-a",
					BrokerAddrs: map[int64]string{0: f.brokerAddr}}},
			})
			return resp, err
		},
	}
	f.nsAddr = f.serve(t, gate, ns)
	return f
}

// serve starts a server whose handlers sit behind gate and record what passes it.
func (f *aclFake) serve(t *testing.T, gate *acl.Gate, handlers map[protocol.RequestCode]remoting.HandlerFunc) string {
	t.Helper()
	s, err := remoting.NewServer(remoting.DefaultServerOptions())
	require.NoError(t, err)
	for code, h := range handlers {
		record := func(ctx context.Context, ch remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
			sig, signed := req.ExtFields.Get(sign.FieldSignature)
			f.mu.Lock()
			f.mu.seen = append(f.mu.seen, seenRequest{code: code, st: req.SerializeType, oneway: req.IsOneway(),
				accessKey: req.ExtFields.Value(sign.FieldAccessKey), signed: signed && sig != "", ext: req.ExtFields.Map()})
			f.mu.Unlock()
			return h(ctx, ch, req)
		}
		require.NoError(t, s.Handle(int16(code), remoting.DefaultPool, gate.Wrap(code, record)))
	}
	remoting.ServeTest(t, s, nil)
	return s.Addr().String()
}

// seen returns the requests that passed the gates so far.
func (f *aclFake) seen() []seenRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]seenRequest(nil), f.mu.seen...)
}

// find returns the requests with code that passed a gate and match.
func (f *aclFake) find(code protocol.RequestCode, match func(seenRequest) bool) []seenRequest {
	var out []seenRequest
	for _, r := range f.seen() {
		if r.code == code && (match == nil || match(r)) {
			out = append(out, r)
		}
	}
	return out
}

// channel is the server side of the client's latest heartbeat connection.
func (f *aclFake) channel() remoting.Channel {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.mu.ch
}

func newACLClient(t *testing.T, f *aclFake, opts ...Option) *Client {
	t.Helper()
	c, err := New(append([]Option{WithNameServers(f.nsAddr), WithRequestTimeout(5 * time.Second)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, c.Close()) })
	return c
}

// codecs runs fn against a JSON-header broker and a Ferry (msgpack-header) one.
func codecs(t *testing.T, fn func(t *testing.T, f *aclFake, want remoting.SerializeType)) {
	t.Run("json", func(t *testing.T) { fn(t, startACLFake(t, false), remoting.SerializeJSON) })
	t.Run("msgpack", func(t *testing.T) { fn(t, startACLFake(t, true), remoting.SerializeMsgpack) })
}

// With credentials every request gets through the ACL: route lookups on the name
// server; heartbeats, sends (sync, async, batch, oneway), pulls and admin calls on the
// broker — with msgpack headers too, once the broker says it is Ferry.
func TestACLSignedRequestsPass(t *testing.T) {
	codecs(t, func(t *testing.T, f *aclFake, want remoting.SerializeType) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c := newACLClient(t, f, WithCredentials(aclUser, aclSecret))
		p, err := c.NewProducer("acl-producer")
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, p.Close()) })

		res, err := p.Send(ctx, message.NewMessage("Orders", []byte("sync")))
		require.NoError(t, err)
		require.Equal(t, int64(7), res.QueueOffset)
		done := make(chan error, 1)
		p.SendAsync(ctx, message.NewMessage("Orders", []byte("async")), func(_ SendResult, err error) { done <- err })
		require.NoError(t, <-done)
		rs, err := p.SendBatch(ctx, []*message.Message{
			message.NewMessage("Orders", []byte("b1")), message.NewMessage("Orders", []byte("b2"))})
		require.NoError(t, err)
		require.Len(t, rs, 2)
		require.NoError(t, p.SendOneway(ctx, message.NewMessage("Orders", []byte("oneway"))))
		testutil.Eventually(t, 5*time.Second, func() bool {
			return len(f.find(protocol.SendMessageV2, func(r seenRequest) bool { return r.oneway })) == 1
		}, "the oneway send passes the ACL")

		pc, err := c.NewPullConsumer("acl-consumer")
		require.NoError(t, err)
		qs, err := pc.FetchQueues(ctx, "Orders")
		require.NoError(t, err)
		require.Len(t, qs, 1)
		pr, err := pc.Pull(ctx, qs[0], 0, 32, "*")
		require.NoError(t, err)
		require.Equal(t, PullNoNewMessage, pr.Status)

		info, err := c.Admin().BrokerRuntimeInfo(ctx, f.brokerAddr)
		require.NoError(t, err)
		require.Equal(t, "479", info["brokerVersion"])

		seen := f.seen()
		codes := map[protocol.RequestCode]bool{}
		for _, r := range seen {
			codes[r.code] = true
			require.Equal(t, aclUser, r.accessKey, "%v", r.code)
			require.True(t, r.signed, "%v", r.code)
		}
		for _, code := range []protocol.RequestCode{protocol.GetRouteInfoByTopic, protocol.HeartBeat,
			protocol.SendMessageV2, protocol.SendBatchMessage, protocol.PullMessage, protocol.GetBrokerRuntimeInfo} {
			require.True(t, codes[code], "%v passed the ACL", code)
		}
		for _, code := range []protocol.RequestCode{protocol.SendMessageV2, protocol.SendBatchMessage,
			protocol.PullMessage, protocol.GetBrokerRuntimeInfo} {
			for _, r := range f.find(code, nil) {
				require.Equal(t, want, r.st, "%v goes with the broker's header codec", code)
			}
		}
		for _, r := range f.find(protocol.GetRouteInfoByTopic, nil) {
			require.Equal(t, remoting.SerializeJSON, r.st, "name servers are spoken to in JSON")
		}
	})
}

// END_TRANSACTION is signed on every path: oneway after a local transaction that does
// not know (the producer's connection), and as the answer to a broker's check, sent on
// the connection the check came on. The check itself, like every request a broker
// sends, is not signed and the client does not ask it to be.
func TestACLTransactionsSigned(t *testing.T) {
	codecs(t, func(t *testing.T, f *aclFake, want remoting.SerializeType) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c := newACLClient(t, f, WithCredentials(aclUser, aclSecret))
		checked := make(chan string, 1)
		tp, err := c.NewTransactionProducer("acl-tx", TransactionCheckerFunc(func(_ context.Context, m *MessageExt) TransactionState {
			checked <- m.MsgID
			return TransactionCommit
		}))
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, tp.Close()) })

		res, err := tp.SendInTransaction(ctx, message.NewMessage("Orders", []byte("half")),
			func(context.Context, *message.Message, SendResult) TransactionState { return TransactionUnknown })
		require.NoError(t, err)
		require.Equal(t, TransactionUnknown, res.State)
		testutil.Eventually(t, 5*time.Second, func() bool {
			return len(f.find(protocol.EndTransaction, func(r seenRequest) bool { return r.oneway })) == 1
		}, "the oneway END_TRANSACTION passes the ACL")

		ch := f.channel()
		require.NotNil(t, ch)
		const uniq = "7F00000100002A9F0000000000000042"
		rec := message.Record{Topic: []byte("Orders"), Body: []byte("half"),
			BornHost: netip.MustParseAddrPort("127.0.0.1:5000"), StoreHost: netip.MustParseAddrPort("127.0.0.1:10911"),
			Properties: []byte(message.PropertyProducerGroup + "\x01acl-tx\x02" + message.PropertyUniqKey + "\x01" + uniq + "\x02")}
		body, err := rec.AppendTo(nil)
		require.NoError(t, err)
		check := protocol.NewRequest(protocol.CheckTransactionState, &protocol.CheckTransactionStateRequestHeader{
			TranStateTableOffset: 3, CommitLogOffset: 4, MsgID: uniq, TransactionID: uniq, BrokerName: "broker-a"})
		check.Body = body
		require.NoError(t, ch.InvokeOneway(ctx, check))
		select {
		case id := <-checked:
			require.Equal(t, uniq, id)
		case <-ctx.Done():
			t.Fatal("the unsigned check never reached the checker")
		}
		var answers []seenRequest
		testutil.Eventually(t, 5*time.Second, func() bool {
			answers = f.find(protocol.EndTransaction, func(r seenRequest) bool { return r.ext["fromTransactionCheck"] == "true" })
			return len(answers) == 1
		}, "the answer to the check passes the ACL")
		require.True(t, answers[0].signed)
		require.Equal(t, want, answers[0].st)
		require.Equal(t, uniq, answers[0].ext["msgId"])
	})
}

// Without credentials, with a wrong secret, or with an account that lacks the right,
// the servers answer NO_PERMISSION and the caller gets a *BrokerError with that code
// and the server's reason — which names the refused topic or request code.
func TestACLRefusals(t *testing.T) {
	f := startACLFake(t, true)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	refused := func(t *testing.T, err error, why ...string) {
		t.Helper()
		require.Error(t, err)
		require.ErrorIs(t, err, ErrNoPermission)
		require.ErrorIs(t, err, ErrBroker)
		var be *BrokerError
		require.ErrorAs(t, err, &be)
		require.Equal(t, protocol.NoPermission, be.Code)
		require.Contains(t, err.Error(), "NO_PERMISSION (16)")
		for _, w := range why {
			require.Contains(t, err.Error(), w)
		}
		require.NotContains(t, err.Error(), aclSecret)
	}

	for _, tc := range []struct {
		name string
		opts []Option
		why  string
	}{
		{"none", nil, "no AccessKey"},
		{"wrong secret", []Option{WithCredentials(aclUser, "not-the-secret")}, "signature mismatch"},
		{"unknown key", []Option{WithCredentials("stranger", aclSecret)}, `unknown access key "stranger"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newACLClient(t, f, tc.opts...)
			p, err := c.NewProducer("acl-producer")
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, p.Close()) })
			_, err = p.Send(ctx, message.NewMessage("Orders", []byte("x")))
			refused(t, err, tc.why)
			require.ErrorIs(t, err, ErrNoRoute, "the route lookup is refused")
			require.Error(t, p.SendOneway(ctx, message.NewMessage("Orders", []byte("x"))))

			pc, err := c.NewPullConsumer("acl-consumer")
			require.NoError(t, err)
			_, err = pc.Pull(ctx, MessageQueue{Topic: "Orders", BrokerName: "broker-a"}, 0, 1, "*")
			refused(t, err, tc.why)
			_, err = c.Admin().BrokerRuntimeInfo(ctx, f.brokerAddr)
			refused(t, err, tc.why)
		})
	}

	t.Run("denied", func(t *testing.T) {
		c := newACLClient(t, f, WithCredentials(aclUser, aclSecret))
		p, err := c.NewProducer("acl-producer")
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, p.Close()) })
		_, err = p.Send(ctx, message.NewMessage("Payroll", []byte("x")))
		refused(t, err, `topic "Payroll"`, "GET_ROUTEINFO_BY_TOPIC")
		require.ErrorIs(t, err, ErrNoRoute, "a denied topic has no route for the account")
		_, err = p.Send(ctx, message.NewMessage("Reports", []byte("x")))
		refused(t, err, `topic "Reports"`, "SEND_MESSAGE_V2", "PUB")
		_, err = p.SendBatch(ctx, []*message.Message{message.NewMessage("Reports", []byte("x")), message.NewMessage("Reports", []byte("y"))})
		refused(t, err, `topic "Reports"`)

		pc, err := c.NewPullConsumer("acl-consumer")
		require.NoError(t, err)
		_, err = pc.Pull(ctx, MessageQueue{Topic: "Inbox", BrokerName: "broker-a"}, 0, 1, "*")
		refused(t, err, `topic "Inbox"`, "PULL_MESSAGE", "SUB")

		_, err = c.Admin().BrokerConfig(ctx, f.brokerAddr)
		refused(t, err, "GET_BROKER_CONFIG (26) needs an admin account")
	})
	for _, r := range f.seen() {
		require.Truef(t, r.accessKey == aclUser && r.signed, "only the right account passes: %+v", r)
	}
}

// Credentials need both keys; the error says so.
func TestCredentialsOptionValidated(t *testing.T) {
	_, err := New(WithNameServers("127.0.0.1:9876"), WithCredentials(aclUser, ""))
	require.ErrorIs(t, err, ErrInvalidOptions)
	require.Contains(t, err.Error(), "access key and a secret key")
	_, err = New(WithNameServers("127.0.0.1:9876"), func(o *Options) { o.Credentials = &sign.Credentials{SecretKey: aclSecret} })
	require.ErrorIs(t, err, ErrInvalidOptions)
}

// signRequest signs the exact bytes sent, a BodyVec included, over the header as it is, and
// replaces the fields of an earlier signing; without credentials it does nothing.
func TestSignRequest(t *testing.T) {
	creds := &sign.Credentials{AccessKey: aclUser, SecretKey: aclSecret}
	req := remoting.NewRequestExt(int16(protocol.SendMessage), remoting.Ext{{Key: "topic", Value: "Orders"}})
	req.Body, req.BodyVec = []byte("ab"), [][]byte{[]byte("cd"), []byte("e")}
	signRequest(creds, req)
	want := creds.SignFields(remoting.Ext{{Key: "topic", Value: "Orders"}}, []byte("abcde"))
	require.Equal(t, remoting.Ext(want).Map(), req.ExtFields.Map())
	signRequest(creds, req)
	require.Equal(t, remoting.Ext(want).Map(), req.ExtFields.Map(), "signing again replaces the fields")
	require.Len(t, req.ExtFields, len(want))

	plain := protocol.NewRequest(protocol.HeartBeat, nil)
	signRequest(nil, plain)
	require.Empty(t, plain.ExtFields)
	require.False(t, errors.Is(&BrokerError{Code: protocol.TopicNotExist}, ErrNoPermission))
}
