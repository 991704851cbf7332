package interop

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/acl"
	"github.com/ferrymq/ferry/acl/sign"
	"github.com/ferrymq/ferry/broker"
	"github.com/ferrymq/ferry/nameserver"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
	"github.com/ferrymq/ferry/testutil"
)

const aclAccounts = `
accounts:
  - accessKey: ferryAdmin
    secretKey: adminSecret1
    admin: true
  - accessKey: appUser1
    secretKey: appSecret1
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - AclTopic=PUB|SUB
      - AclReadOnly=SUB
`

// TestACLWithOfficialClient: with ACL on, the official client configured with the right
// credentials (WithCredentials) sends and consumes; a wrong secret, an unknown key, no
// credentials, or a topic the account may not publish to are refused with NO_PERMISSION,
// and so is an admin request from a non-admin account.
func TestACLWithOfficialClient(t *testing.T) {
	rules, err := acl.Parse([]byte(aclAccounts))
	require.NoError(t, err)
	c := testutil.StartCluster(t, testutil.WithBrokerOptions(func(o *broker.Options) { o.ACL = rules }))
	admin := sign.Credentials{AccessKey: "ferryAdmin", SecretKey: "adminSecret1"}
	app := sign.Credentials{AccessKey: "appUser1", SecretKey: "appSecret1"}
	signedCall := func(creds sign.Credentials, code protocol.RequestCode, h protocol.Header) *remoting.Command {
		t.Helper()
		cli, err := remoting.NewClient(remoting.DefaultClientOptions())
		require.NoError(t, err)
		defer func() { _ = cli.Close() }()
		req := protocol.NewRequest(code, h)
		req.ExtFields = remoting.Ext(creds.SignFields(req.ExtFields, req.Body))
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := cli.Invoke(ctx, c.BrokerAddr, req)
		require.NoError(t, err)
		return resp
	}
	create := func(creds sign.Credentials, topic string) *remoting.Command {
		return signedCall(creds, protocol.UpdateAndCreateTopic, &protocol.CreateTopicRequestHeader{Topic: topic,
			DefaultTopic: "TBW102", ReadQueueNums: 2, WriteQueueNums: 2, Perm: protocol.PermRead | protocol.PermWrite})
	}
	for _, topic := range []string{"AclTopic", "AclReadOnly"} {
		resp := create(admin, topic)
		require.Equal(t, int16(protocol.Success), resp.Code, resp.Remark)
	}
	resp := create(app, "AclSneaky")
	require.Equal(t, int16(protocol.NoPermission), resp.Code, "an admin request from a non-admin account")
	testutil.Eventually(t, 10*time.Second, func() bool {
		_, ok := c.NameServer.Table().TopicRoute("AclReadOnly")
		return ok
	}, "routes published")

	good := primitive.Credentials{AccessKey: "appUser1", SecretKey: "appSecret1"}
	p := newProducer(t, c, "pg-acl", producer.WithCredentials(good))
	const n = 20
	want := bodies("acl", n)
	for _, b := range want {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		res, err := p.SendSync(ctx, primitive.NewMessage("AclTopic", []byte(b)))
		cancel()
		require.NoError(t, err)
		require.Equal(t, primitive.SendOK, res.Status)
	}
	rec := newRecorder()
	newPushConsumer(t, c, "cg-acl", "AclTopic", "*", rec.handler("acl"), consumer.WithCredentials(good))
	rec.waitAll(t, want, 60*time.Second, "the authorised consumer's messages")

	refused := func(p interface {
		SendSync(context.Context, ...*primitive.Message) (*primitive.SendResult, error)
	}, topic, what string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := p.SendSync(ctx, primitive.NewMessage(topic, []byte("no")))
		require.Error(t, err, what)
		require.Contains(t, err.Error(), fmt.Sprintf("CODE: %d", protocol.NoPermission), what)
	}
	refused(p, "AclReadOnly", "a topic the account may only subscribe to")
	refused(newProducer(t, c, "pg-acl-bad", producer.WithCredentials(primitive.Credentials{AccessKey: "appUser1", SecretKey: "wrongSecret"})),
		"AclTopic", "a wrong secret")
	refused(newProducer(t, c, "pg-acl-who", producer.WithCredentials(primitive.Credentials{AccessKey: "nobodyHere", SecretKey: "appSecret1"})),
		"AclTopic", "an unknown access key")
	refused(newProducer(t, c, "pg-acl-anon"), "AclTopic", "no credentials")
	require.Equal(t, int16(protocol.Success), signedCall(app, protocol.GetMaxOffset,
		&protocol.GetMaxOffsetRequestHeader{Topic: "AclTopic", QueueID: 0}).Code, "a read the account may do")
}

// TestACLNameServerWithOfficialClient: with ACL on in the name server too (the broker
// registers with an admin account), the official client with an account's credentials
// looks up routes of the topics it may use (and of its group's retry topic), sends and
// consumes, commits a transaction; the route of a topic the account is denied is refused (the client falls
// back to the auto-create template's route) and the send itself fails with
// NO_PERMISSION.
func TestACLNameServerWithOfficialClient(t *testing.T) {
	rules, err := acl.Parse([]byte(aclAccounts))
	require.NoError(t, err)
	admin := sign.Credentials{AccessKey: "ferryAdmin", SecretKey: "adminSecret1"}
	c := testutil.StartCluster(t,
		testutil.WithNameServerOptions(func(o *nameserver.Options) { o.ACL = rules }),
		testutil.WithBrokerOptions(func(o *broker.Options) { o.ACL, o.Credentials = rules, admin }))
	cli, err := remoting.NewClient(remoting.DefaultClientOptions())
	require.NoError(t, err)
	defer func() { _ = cli.Close() }()
	for _, topic := range []string{"AclTopic", "AclDenied"} {
		req := protocol.NewRequest(protocol.UpdateAndCreateTopic, &protocol.CreateTopicRequestHeader{Topic: topic,
			DefaultTopic: "TBW102", ReadQueueNums: 2, WriteQueueNums: 2, Perm: protocol.PermRead | protocol.PermWrite})
		req.ExtFields = remoting.Ext(admin.SignFields(req.ExtFields, req.Body))
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		resp, err := cli.Invoke(ctx, c.BrokerAddr, req)
		cancel()
		require.NoError(t, err)
		require.Equal(t, int16(protocol.Success), resp.Code, resp.Remark)
	}
	testutil.Eventually(t, 10*time.Second, func() bool {
		_, ok := c.NameServer.Table().TopicRoute("AclDenied")
		return ok
	}, "routes published")

	good := primitive.Credentials{AccessKey: "appUser1", SecretKey: "appSecret1"}
	p := newProducer(t, c, "pg-acl-ns", producer.WithCredentials(good))
	want := bodies("acl-ns", 10)
	for _, b := range want {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		res, err := p.SendSync(ctx, primitive.NewMessage("AclTopic", []byte(b)))
		cancel()
		require.NoError(t, err)
		require.Equal(t, primitive.SendOK, res.Status)
	}
	// A transaction committed by the account (END_TRANSACTION needs PUB on the half
	// message's real topic, which the broker reads from the stored half message).
	l := &txListener{checks: map[string]int{}}
	tp, err := rocketmq.NewTransactionProducer(l,
		producer.WithNsResolver(primitive.NewPassthroughResolver([]string{c.NamesrvAddr})),
		producer.WithGroupName("tx-pg-acl"), producer.WithInstanceName(instance("tx-acl")), producer.WithCredentials(good))
	require.NoError(t, err)
	require.NoError(t, tp.Start())
	defer func() { _ = tp.Shutdown() }()
	for i := range 3 {
		b := fmt.Sprintf("commit-acl-%d", i)
		res, err := tp.SendMessageInTransaction(context.Background(), primitive.NewMessage("AclTopic", []byte(b)))
		require.NoError(t, err)
		require.Equal(t, primitive.SendOK, res.Status)
		want = append(want, b)
	}
	rec := newRecorder()
	newPushConsumer(t, c, "cg-acl-ns", "AclTopic", "*", rec.handler("acl-ns"), consumer.WithCredentials(good))
	rec.waitAll(t, want, 60*time.Second, "the authorised consumer's messages")

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = p.SendSync(ctx, primitive.NewMessage("AclDenied", []byte("no")))
	require.Error(t, err, "a denied topic")
	require.Contains(t, err.Error(), fmt.Sprintf("CODE: %d", protocol.NoPermission))
}
