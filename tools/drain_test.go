package tools_test

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/client"
	"github.com/ferrymq/ferry/internal/testkit"
	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/nameserver"
	"github.com/ferrymq/ferry/testutil"
)

// sendLog is what a producer loop records: the broker of every successful send and
// every failure.
type sendLog struct {
	mu       sync.Mutex
	brokers  []string
	failures []error
}

func (l *sendLog) add(broker string, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.failures = append(l.failures, err)
		return
	}
	l.brokers = append(l.brokers, broker)
}

// since returns the brokers of the sends after the first n, and the total.
func (l *sendLog) since(n int) ([]string, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.brokers[min(n, len(l.brokers)):]...), len(l.brokers)
}

func (l *sendLog) failed() []error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]error(nil), l.failures...)
}

// count returns how many of brokers are name.
func count(brokers []string, name string) int {
	n := 0
	for _, b := range brokers {
		if b == name {
			n++
		}
	}
	return n
}

type drainResult struct {
	Broker      string `json:"broker"`
	Drained     bool   `json:"drained"`
	NameServers []struct {
		NameServer string `json:"nameServer"`
		Topics     int    `json:"topics"`
	} `json:"nameServers"`
}

// TestBrokerDrainUnderLoad: with two broker groups and a producer sending
// continuously, `broker drain` moves every send to the other group without a failed
// send, the drain outlives a registration of the drained broker with a new data
// version, and `broker undrain` brings sends back to both.
func TestBrokerDrainUnderLoad(t *testing.T) {
	c := testutil.StartCluster(t)
	c.StartBrokerGroup(t, "broker-b")
	ns := c.NamesrvAddr
	// A second name server the brokers do not register with: the drain reaches it too.
	ns2, err := nameserver.New(nameserver.DefaultOptions())
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	require.NoError(t, ns2.Start(ln))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, ns2.Shutdown(ctx))
	})
	both := ns + ";" + ns2.Addr()

	var res map[string]string
	runJSON(t, ns, &res, "topic", "create", "-t", "Drained", "-c", "DefaultCluster", "-r", "4", "-w", "4")
	testkit.Eventually(t, 10*time.Second, func() bool {
		r, ok := c.NameServer.Table().TopicRoute("Drained")
		return ok && len(r.QueueDatas) == 2
	}, "both groups host the topic")

	cl, err := client.New(client.WithNameServers(ns), client.WithRouteRefresh(50*time.Millisecond))
	require.NoError(t, err)
	t.Cleanup(func() { _ = cl.Close() })
	p, err := cl.NewProducer("DrainProducer")
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })

	log := &sendLog{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			r, err := p.Send(ctx, message.NewMessage("Drained", []byte("load")))
			cancel()
			log.add(r.BrokerName, err)
		}
	})
	stopLoad := sync.OnceFunc(func() { close(stop); wg.Wait() })
	t.Cleanup(stopLoad)

	testkit.Eventually(t, 10*time.Second, func() bool {
		b, _ := log.since(0)
		return count(b, "broker-a") > 0 && count(b, "broker-b") > 0
	}, "sends reach both groups")

	var dr drainResult
	runJSON(t, both, &dr, "broker", "drain", "-b", "broker-a")
	require.Equal(t, "broker-a", dr.Broker)
	require.True(t, dr.Drained)
	require.Len(t, dr.NameServers, 2)
	require.Equal(t, ns, dr.NameServers[0].NameServer)
	require.GreaterOrEqual(t, dr.NameServers[0].Topics, 1)
	require.Equal(t, ns2.Addr(), dr.NameServers[1].NameServer)
	require.Zero(t, dr.NameServers[1].Topics, "the second name server hosts nothing")
	require.Equal(t, []string{"broker-a"}, ns2.Table().Drained())

	// Producers follow at their next route refresh: wait for a run of sends that all
	// went to broker-b, then require every later send to go there too.
	var from int
	testkit.Eventually(t, 10*time.Second, func() bool {
		b, total := log.since(0)
		if len(b) < 100 {
			return false
		}
		from = total
		return count(b[len(b)-100:], "broker-a") == 0
	}, "sends leave the drained group")
	var route struct {
		Queues []struct{ Broker, Perm string }
	}
	runJSON(t, ns, &route, "topic", "route", "-t", "Drained")
	perms := map[string]string{}
	for _, q := range route.Queues {
		perms[q.Broker] = q.Perm
	}
	require.Equal(t, map[string]string{"broker-a": "R--", "broker-b": "RW-"}, perms, "the drained group stays readable")

	// broker-a registers with a new data version (a topic created on it): RocketMQ
	// would give its queues their write permission back here.
	runJSON(t, ns, &res, "topic", "create", "-t", "DrainExtra", "-b", c.BrokerAddr, "-r", "1", "-w", "1")
	testkit.Eventually(t, 10*time.Second, func() bool {
		_, ok := c.NameServer.Table().TopicRoute("DrainExtra")
		return ok
	}, "broker-a registered its new topic")
	testkit.Eventually(t, 20*time.Second, func() bool {
		b, _ := log.since(from)
		return len(b) >= 300
	}, "300 more sends")
	after, _ := log.since(from)
	require.Zero(t, count(after, "broker-a"), "no send reached the drained group")
	require.Empty(t, log.failed(), "no send failed")

	runJSON(t, both, &dr, "broker", "undrain", "-b", "broker-a")
	require.False(t, dr.Drained)
	require.Len(t, dr.NameServers, 2)
	_, mark := log.since(0)
	testkit.Eventually(t, 10*time.Second, func() bool {
		b, _ := log.since(mark)
		return count(b, "broker-a") > 0 && count(b, "broker-b") > 0
	}, "sends reach both groups again")
	require.Empty(t, ns2.Table().Drained())
	stopLoad()
	require.Empty(t, log.failed(), "no send failed")
}

// TestBrokerDrainBadInput: a missing or unknown broker is a one-line error.
func TestBrokerDrainBadInput(t *testing.T) {
	c := testutil.StartCluster(t)
	ns := c.NamesrvAddr
	requireFails(t, ns, 2, "-b BROKER", "broker", "drain")
	requireFails(t, ns, 2, "-b BROKER", "broker", "undrain", "-o", "json")
	requireFails(t, ns, 1, `broker group "nobody" is not registered with the name servers (known: broker-a)`,
		"broker", "drain", "-b", "nobody")
	require.Empty(t, c.NameServer.Table().Drained())

	out, errOut, code := run(t, ns, "broker", "drain", "-b", "broker-a")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "drained")
	require.Equal(t, []string{"broker-a"}, c.NameServer.Table().Drained())
	var rows []kvRow
	runJSON(t, ns, &rows, "kv", "list", "-s", "FERRY_DRAINED_BROKERS")
	require.Len(t, rows, 1)
	require.Equal(t, "broker-a", rows[0].Key)
}
