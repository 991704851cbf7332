package interop

import (
	"context"
	"crypto/tls"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/broker"
	"github.com/ferrymq/ferry/client"
	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/nameserver"
	"github.com/ferrymq/ferry/remoting"
	"github.com/ferrymq/ferry/testutil"
)

// TestTLSEnforcing: with the name server and the broker in TLS enforcing mode (the broker
// registering over TLS), the official client with WithTls(true) sends and consumes, and
// so does Ferry's client with WithTLS; a plain client is refused.
func TestTLSEnforcing(t *testing.T) {
	// The official client keeps WithTls in one package-level setting shared by every client
	// in the process: once this test's clients are shut down (cleanups run last-in
	// first-out), put it back so the tests after this one dial in plain text.
	t.Cleanup(func() {
		_, err := rocketmq.NewProducer(producer.WithTls(false), producer.WithInstanceName(instance("tls-reset")),
			producer.WithNsResolver(primitive.NewPassthroughResolver([]string{"127.0.0.1:1"})))
		require.NoError(t, err)
	})
	certFile, keyFile := testutil.SelfSignedCert(t)
	serverTLS := func() *remoting.TLSConfig {
		cfg, err := remoting.LoadServerTLS(certFile, keyFile, "", false)
		require.NoError(t, err)
		return &remoting.TLSConfig{Mode: remoting.TLSEnforcing, Config: cfg}
	}
	clientTLS := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: true} //nolint:gosec // a self-signed test certificate
	c := testutil.StartCluster(t,
		testutil.WithNameServerOptions(func(o *nameserver.Options) { o.TLS = serverTLS() }),
		testutil.WithBrokerOptions(func(o *broker.Options) { o.TLS, o.NamesrvTLS = serverTLS(), clientTLS }))

	const topic, n = "TlsTopic", 20
	p := newProducer(t, c, "pg-tls", producer.WithTls(true))
	want := bodies("tls", n)
	for _, b := range want {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		res, err := p.SendSync(ctx, primitive.NewMessage(topic, []byte(b)))
		cancel()
		require.NoError(t, err)
		require.Equal(t, primitive.SendOK, res.Status)
	}
	// The official consumer refuses to start until the name server routes its topic; the
	// producer's first send created it and the broker registers it right after.
	testutil.Eventually(t, 10*time.Second, func() bool {
		_, ok := c.NameServer.Table().TopicRoute(topic)
		return ok
	}, "the name server routes the topic")
	rec := newRecorder()
	newPushConsumer(t, c, "cg-tls", topic, "*", rec.handler("tls"), consumer.WithTls(true))
	rec.waitAll(t, want, 60*time.Second, "consumed over TLS")

	fc, err := client.New(client.WithNameServers(c.NamesrvAddr), client.WithTLS(clientTLS))
	require.NoError(t, err)
	defer func() { require.NoError(t, fc.Close()) }()
	fp, err := fc.NewProducer("pg-tls-ferry")
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = fp.Send(ctx, message.NewMessage(topic, []byte("ferry over tls")))
	require.NoError(t, err, "Ferry's client over TLS")

	plain, err := client.New(client.WithNameServers(c.NamesrvAddr), client.WithRequestTimeout(2*time.Second))
	require.NoError(t, err)
	defer func() { require.NoError(t, plain.Close()) }()
	pp, err := plain.NewProducer("pg-plain")
	require.NoError(t, err)
	ctx2, cancel2 := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel2()
	_, err = pp.Send(ctx2, message.NewMessage(topic, []byte("plain")))
	require.Error(t, err, "a plain client is refused by an enforcing server")
}
