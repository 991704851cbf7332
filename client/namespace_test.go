package client

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/testutil"
)

func TestNamespaceNames(t *testing.T) {
	c := &Client{opts: Options{Namespace: "ns1"}}
	for _, tc := range []struct{ in, wire string }{
		{"T", "ns1%T"},
		{"ns1%T", "ns1%T"},
		{"%RETRY%g", "%RETRY%ns1%g"},
		{"%RETRY%ns1%g", "%RETRY%ns1%g"},
		{"%DLQ%g", "%DLQ%ns1%g"},
		{"other%T", "ns1%other%T"},
		{"TBW102", "TBW102"},
		{"rmq_sys_TRACE_DATA", "rmq_sys_TRACE_DATA"},
		{"DefaultCluster_REPLY_TOPIC", "DefaultCluster_REPLY_TOPIC"},
		{"", ""},
	} {
		require.Equal(t, tc.wire, c.nsWrap(tc.in), "wrap %q", tc.in)
		if tc.in != "other%T" {
			require.Equal(t, c.nsStrip(tc.wire), c.nsStrip(tc.in), "strip %q", tc.in)
		}
	}
	require.Equal(t, "T", c.nsStrip("ns1%T"))
	require.Equal(t, "%RETRY%g", c.nsStrip("%RETRY%ns1%g"))
	require.Equal(t, "ns2%T", c.nsStrip("ns2%T"), "another namespace's name stays")
	plain := &Client{}
	require.Equal(t, "T", plain.nsWrap("T"))
	require.Equal(t, "ns1%T", plain.nsStrip("ns1%T"))

	for _, bad := range []string{"a%b", "a|b", "a b", string(make([]byte, 65))} {
		_, err := New(WithNameServers("127.0.0.1:9876"), WithNamespace(bad))
		require.ErrorIs(t, err, ErrInvalidOptions, "namespace %q", bad)
	}
}

// TestNamespaceClients: a namespaced client's producer sends to "<ns>%topic"; its push
// consumer (group "<ns>%group", retrying through "%RETRY%<ns>%group"), lite-pull and
// pull consumers read it and see the topic without the namespace; a client without the
// namespace sees the wire names.
func TestNamespaceClients(t *testing.T) {
	const ns, topic, wire = "tenant-a", "NsTopic", "tenant-a%NsTopic"
	c := testutil.StartCluster(t)
	newRawBroker(t, c).createTopic(wire, 2)
	nsc, err := New(WithNameServers(c.NamesrvAddr), WithInstanceName("ns"), WithNamespace(ns))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, nsc.Close()) })

	p, err := nsc.NewProducer("pg")
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close()) })
	bodies := names("ns-", 10)
	for _, b := range bodies {
		m := message.NewMessage(topic, []byte(b))
		res, err := p.Send(stepCtx(t), m)
		require.NoError(t, err)
		require.Equal(t, wire, res.Topic)
		require.Equal(t, topic, m.Topic, "the caller's message keeps its topic")
	}

	d := newDeliveries()
	var failed atomic.Bool
	pc := startConsumer(t, nsc, "cg", topic, "*", d.handler("ns", func(m *MessageExt) ConsumeResult {
		if string(m.Body) == bodies[0] && failed.CompareAndSwap(false, true) {
			return ConsumeRetryLater
		}
		return ConsumeSuccess
	}))
	require.Equal(t, "tenant-a%cg", pc.Group())
	testutil.Eventually(t, 60*time.Second, func() bool {
		return d.got(bodies, 1) == len(bodies) && len(d.of(bodies[0])) >= 2
	}, "every message, and the retried one again")
	for _, b := range bodies {
		for _, dl := range d.of(b) {
			require.Equal(t, topic, dl.topic, "%s: the topic without the namespace", b)
		}
	}
	again := d.of(bodies[0])[1]
	require.Equal(t, "%RETRY%tenant-a%cg", again.queue.Topic, "redelivered through the namespaced retry topic")
	require.EqualValues(t, 1, again.reconsume)

	plain := newMember(t, c, "plain")
	pd := newDeliveries()
	startConsumer(t, plain, "cg-plain", wire, "*", pd.handler("plain", nil))
	testutil.Eventually(t, 30*time.Second, func() bool { return pd.got(bodies, 1) == len(bodies) }, "the plain client reads the wire topic")
	require.Equal(t, wire, pd.of(bodies[1])[0].topic)

	lc, err := nsc.NewLitePullConsumer("cg-lite", WithConsumeFrom(ConsumeFromFirstOffset))
	require.NoError(t, err)
	require.NoError(t, lc.Subscribe(topic, "*"))
	require.NoError(t, lc.Start(stepCtx(t)))
	t.Cleanup(func() { require.NoError(t, lc.Close()) })
	var polled []string
	testutil.Eventually(t, 30*time.Second, func() bool {
		for _, m := range lc.Poll(context.Background(), 100*time.Millisecond) {
			require.Equal(t, topic, m.Topic)
			polled = append(polled, string(m.Body))
		}
		return len(polled) >= len(bodies)
	}, "the lite-pull consumer's messages")
	require.ElementsMatch(t, bodies, polled)

	pull, err := nsc.NewPullConsumer("cg-pull")
	require.NoError(t, err)
	res, err := pull.Pull(stepCtx(t), MessageQueue{Topic: topic, BrokerName: pc.Queues()[0].BrokerName, QueueID: 0}, 0, 32, "*")
	require.NoError(t, err, "a queue named without the namespace")
	require.Equal(t, PullFound, res.Status)
	require.Equal(t, topic, res.Messages[0].Topic)
}
