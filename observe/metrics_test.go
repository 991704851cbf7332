package observe_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/broker"
	"github.com/ferrymq/ferry/client"
	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/observe"
	"github.com/ferrymq/ferry/store"
	"github.com/ferrymq/ferry/testutil"
)

// serveMetrics serves reg at /metrics and returns the URL.
func serveMetrics(t *testing.T, reg *prometheus.Registry) string {
	t.Helper()
	o := observe.DefaultOptions()
	o.Probes = observe.NewProbes(nil)
	s, err := observe.New(o)
	require.NoError(t, err)
	s.Handle("GET /metrics", s.MetricsHandler(reg))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s.Start(ln)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		require.NoError(t, s.Shutdown(ctx))
	})
	return "http://" + ln.Addr().String() + "/metrics"
}

// brokerMetrics serves b's metrics (and the runtime's) and returns the URL.
func brokerMetrics(t *testing.T, b *broker.Broker) string {
	t.Helper()
	reg := observe.NewRegistry()
	reg.MustRegister(observe.NewBrokerCollector(b))
	return serveMetrics(t, reg)
}

// scrape fetches url and parses it with Prometheus's own text parser.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := plainClient().Get(url)
	require.NoError(t, err)
	defer func() { require.NoError(t, resp.Body.Close()) }()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	return fams
}

// labelsOf is a series' labels.
func labelsOf(m *dto.Metric) map[string]string {
	got := map[string]string{}
	for _, l := range m.GetLabel() {
		got[l.GetName()] = l.GetValue()
	}
	return got
}

// series is the series of family name whose labels include want; ok is false when
// there is none, and more than one fails the test.
func series(t *testing.T, fams map[string]*dto.MetricFamily, name string, want map[string]string) (*dto.Metric, bool) {
	t.Helper()
	var found *dto.Metric
	for _, m := range fams[name].GetMetric() {
		got := labelsOf(m)
		match := true
		for k, v := range want {
			match = match && got[k] == v
		}
		if match {
			require.Nil(t, found, "%s%v matches more than one series", name, want)
			found = m
		}
	}
	return found, found != nil
}

// value is the value of the series of family name with labels including want.
func value(t *testing.T, fams map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	t.Helper()
	m, ok := series(t, fams, name, want)
	switch {
	case !ok:
		return 0, false
	case m.Counter != nil:
		return m.GetCounter().GetValue(), true
	case m.Gauge != nil:
		return m.GetGauge().GetValue(), true
	case m.Histogram != nil:
		return float64(m.GetHistogram().GetSampleCount()), true
	}
	return m.GetUntyped().GetValue(), true
}

// mustValue is value for a series that must exist.
func mustValue(t *testing.T, fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	t.Helper()
	v, ok := value(t, fams, name, want)
	require.True(t, ok, "%s%v", name, want)
	return v
}

// The runtime and process collectors are served by a registry of its own.
func TestMetricsServeRuntime(t *testing.T) {
	fams := scrape(t, serveMetrics(t, observe.NewRegistry()))
	for _, name := range []string{"go_goroutines", "go_memstats_alloc_bytes", "process_cpu_seconds_total"} {
		require.Contains(t, fams, name)
	}
}

// workload is a client of a cluster with a topic of four queues.
type workload struct {
	c     *testutil.Cluster
	cl    *client.Client
	topic string
}

// newWorkload creates topic on c's broker.
func newWorkload(t *testing.T, c *testutil.Cluster, topic string) *workload {
	t.Helper()
	cl, err := client.New(client.WithNameServers(c.NamesrvAddr))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, cl.Close()) })
	require.NoError(t, cl.Admin().CreateTopic(context.Background(), client.TopicConfig{Name: topic, ReadQueues: 4, WriteQueues: 4},
		client.Target{Brokers: []string{c.BrokerAddr}}))
	return &workload{c: c, cl: cl, topic: topic}
}

// send sends n messages with bodies of growing size to topic.
func (w *workload) send(t *testing.T, topic string, n int) {
	t.Helper()
	p, err := w.cl.NewProducer("metrics-pg-" + topic)
	require.NoError(t, err)
	defer func() { require.NoError(t, p.Close()) }()
	for i := range n {
		msg := message.NewMessage(topic, []byte(strings.Repeat("m", 10+i)))
		testutil.Eventually(t, 10*time.Second, func() bool {
			_, err = p.Send(context.Background(), msg)
			return err == nil
		}, "a send once the route is known")
	}
}

// queues returns the topic's queues and each one's end once all n messages are
// dispatched.
func (w *workload) queues(t *testing.T, pc *client.PullConsumer, topic string, n int) ([]client.MessageQueue, []int64) {
	t.Helper()
	ctx := context.Background()
	qs, err := pc.FetchQueues(ctx, topic)
	require.NoError(t, err)
	ends := make([]int64, len(qs))
	testutil.Eventually(t, 10*time.Second, func() bool { // the consume queues are written asynchronously
		var sum int64
		for i, mq := range qs {
			ends[i], err = pc.MaxOffset(ctx, mq)
			require.NoError(t, err)
			sum += ends[i]
		}
		return sum == int64(n)
	}, "every message dispatched")
	return qs, ends
}

// pullAll pulls every queue from 0 to its end and returns the messages.
func pullAll(t *testing.T, pc *client.PullConsumer, qs []client.MessageQueue, ends []int64) int {
	t.Helper()
	got := 0
	for i, mq := range qs {
		for off := int64(0); off < ends[i]; {
			r, err := pc.PullWait(context.Background(), mq, off, 32, "*", 5*time.Second)
			require.NoError(t, err)
			require.Equal(t, client.PullFound, r.Status, "queue %d at %d of %d", mq.QueueID, off, ends[i])
			got += len(r.Messages)
			off = r.NextOffset
		}
	}
	return got
}

// After a known workload the counters and gauges say what was sent, pulled and
// committed: messages and bytes in and out, the size and latency histograms, and the
// lag, in-flight and ready gauges as the group commits nothing, pulls everything, then
// commits everything.
func TestMetricsCountTheWorkload(t *testing.T) {
	const topic, group, n = "MetricsTopic", "metrics-cg", 40
	c := testutil.StartCluster(t, testutil.WithStoreOptions(func(o *store.Options) { // flush everything soon
		o.FlushInterval, o.FlushThoroughInterval = 10*time.Millisecond, 50*time.Millisecond
	}))
	url := brokerMetrics(t, c.Broker)
	w := newWorkload(t, c, topic)
	tg := map[string]string{"topic": topic, "consumer_group": group}
	started := time.Now()

	before := scrape(t, url)
	_, ok := value(t, before, "rocketmq_messages_in_total", map[string]string{"topic": topic})
	require.False(t, ok, "no series before a send")

	w.send(t, topic, n)
	pc, err := w.cl.NewPullConsumer(group)
	require.NoError(t, err)
	ctx := context.Background()
	qs, ends := w.queues(t, pc, topic, n)
	for _, mq := range qs { // the group starts at 0: everything is lag
		require.NoError(t, pc.CommitOffset(ctx, mq, 0))
	}

	fams := scrape(t, url)
	require.Equal(t, float64(n), mustValue(t, fams, "rocketmq_messages_in_total", map[string]string{"topic": topic}))
	// Nothing but the test's messages was stored: the bytes in are the commit log's.
	bytesIn := mustValue(t, fams, "rocketmq_throughput_in_total", map[string]string{"topic": topic})
	require.Equal(t, mustValue(t, fams, "rocketmq_storage_size", nil), bytesIn)
	size, ok := series(t, fams, "rocketmq_message_size", map[string]string{"topic": topic})
	require.True(t, ok)
	require.Equal(t, uint64(n), size.GetHistogram().GetSampleCount(), "one observation per send request")
	require.InDelta(t, bytesIn, size.GetHistogram().GetSampleSum(), float64(n), "the sum of the sizes is the bytes (each rounded down)")
	require.Equal(t, uint64(n), size.GetHistogram().GetBucket()[0].GetCumulativeCount(), "every message is under 1 KiB")
	var sends float64
	for _, code := range []string{"send_message", "send_message_v2", "send_batch_message"} {
		v, _ := value(t, fams, "rocketmq_rpc_latency", map[string]string{"request_code": code, "response_code": "success"})
		sends += v
	}
	require.Equal(t, float64(n), sends, "one SEND answered SUCCESS per message")
	testutil.Eventually(t, 10*time.Second, func() bool { // commits may be asynchronous
		return mustValue(t, scrape(t, url), "rocketmq_consumer_lag_messages", tg) == n
	}, "the lag reaches what was sent")
	fams = scrape(t, url)
	require.Zero(t, mustValue(t, fams, "rocketmq_consumer_inflight_messages", tg))
	require.Equal(t, float64(n), mustValue(t, fams, "rocketmq_consumer_ready_messages", tg))
	age := mustValue(t, fams, "rocketmq_consumer_lag_latency", tg)
	require.GreaterOrEqual(t, age, 0.0)
	require.LessOrEqual(t, age, float64(time.Since(started).Milliseconds()), "no older than the test")
	require.Equal(t, age, mustValue(t, fams, "rocketmq_consumer_queueing_latency", tg), "the oldest not pulled is the oldest not committed")
	_, ok = value(t, fams, "rocketmq_messages_out_total", tg)
	require.False(t, ok, "nothing pulled yet")

	require.Equal(t, n, pullAll(t, pc, qs, ends))
	fams = scrape(t, url)
	require.Equal(t, float64(n), mustValue(t, fams, "rocketmq_messages_out_total", tg))
	require.Equal(t, bytesIn, mustValue(t, fams, "rocketmq_throughput_out_total", tg), "every record went out once")
	require.Equal(t, float64(n), mustValue(t, fams, "rocketmq_consumer_lag_messages", tg), "pulled, not committed")
	require.Equal(t, float64(n), mustValue(t, fams, "rocketmq_consumer_inflight_messages", tg))
	require.Zero(t, mustValue(t, fams, "rocketmq_consumer_ready_messages", tg))
	require.Zero(t, mustValue(t, fams, "rocketmq_consumer_queueing_latency", tg), "nothing waits to be pulled")
	pulls, ok := value(t, fams, "rocketmq_rpc_latency", map[string]string{"request_code": "pull_message", "response_code": "success"})
	require.True(t, ok)
	require.GreaterOrEqual(t, pulls, float64(len(qs)))

	for i, mq := range qs {
		require.NoError(t, pc.CommitOffset(ctx, mq, ends[i]))
	}
	testutil.Eventually(t, 10*time.Second, func() bool {
		return mustValue(t, scrape(t, url), "rocketmq_consumer_lag_messages", tg) == 0
	}, "the lag drops to zero once everything is committed")
	fams = scrape(t, url)
	require.Zero(t, mustValue(t, fams, "rocketmq_consumer_inflight_messages", tg))
	require.Zero(t, mustValue(t, fams, "rocketmq_consumer_lag_latency", tg))

	require.GreaterOrEqual(t, mustValue(t, fams, "rocketmq_topic_number", nil), 1.0)
	require.Equal(t, 1.0, mustValue(t, fams, "ferry_broker_info", map[string]string{"role": "ASYNC_MASTER", "broker_id": "0"}))
	for _, name := range []string{"rocketmq_consumer_group_number", "rocketmq_storage_flush_behind_bytes",
		"rocketmq_storage_dispatch_behind_bytes", "rocketmq_producer_connections", "ferry_storage_bad_reads_total",
		"ferry_storage_quarantined_ranges", "ferry_storage_disk_used_ratio", "ferry_transaction_half_messages",
		"ferry_schedule_messages_waiting", "ferry_remoting_request_bytes", "ferry_remoting_request_bytes_limit",
		"ferry_dedup_keys", "ferry_dedup_duplicates_total", "ferry_dedup_evicted_total"} {
		_, ok := value(t, fams, name, nil)
		require.True(t, ok, name)
	}
	require.Positive(t, mustValue(t, fams, "ferry_remoting_request_bytes_limit", nil))
	require.Equal(t, dto.MetricType_HISTOGRAM, fams["rocketmq_rpc_latency"].GetType())
	require.Contains(t, fams, "go_goroutines")
	testutil.Eventually(t, 10*time.Second, func() bool { // the flusher syncs within its interval
		f := scrape(t, url)
		return mustValue(t, f, "ferry_storage_flush_latency_seconds", nil) > 0 &&
			mustValue(t, f, "rocketmq_storage_flush_behind_bytes", nil) == 0
	}, "the commit log flushed and its syncs timed")
}

// A delayed message waits in the schedule; a half message of a transaction left unknown
// is pending.
func TestMetricsScheduleAndTransactions(t *testing.T) {
	const topic = "MetricsWaitTopic"
	c := testutil.StartCluster(t, testutil.WithBrokerOptions(func(o *broker.Options) { o.TransactionTimeout = time.Hour }))
	url := brokerMetrics(t, c.Broker)
	w := newWorkload(t, c, topic)
	p, err := w.cl.NewProducer("metrics-delay-pg")
	require.NoError(t, err)
	defer func() { require.NoError(t, p.Close()) }()
	msg := message.NewMessage(topic, []byte("later"))
	msg.SetDelayLevel(18) // 2 h
	testutil.Eventually(t, 10*time.Second, func() bool {
		_, err = p.Send(context.Background(), msg)
		return err == nil
	}, "a delayed send")
	tp, err := w.cl.NewTransactionProducer("metrics-tx-pg", client.TransactionCheckerFunc(
		func(context.Context, *client.MessageExt) client.TransactionState { return client.TransactionUnknown }))
	require.NoError(t, err)
	defer func() { require.NoError(t, tp.Close()) }()
	_, err = tp.SendInTransaction(context.Background(), message.NewMessage(topic, []byte("maybe")),
		func(context.Context, *message.Message, client.SendResult) client.TransactionState {
			return client.TransactionUnknown
		})
	require.NoError(t, err)
	testutil.Eventually(t, 10*time.Second, func() bool {
		f := scrape(t, url)
		return mustValue(t, f, "ferry_schedule_messages_waiting", nil) == 1 && mustValue(t, f, "ferry_transaction_half_messages", nil) == 1
	}, "one message scheduled, one half message pending")
	fams := scrape(t, url)
	require.Equal(t, 2.0, mustValue(t, fams, "rocketmq_messages_in_total", map[string]string{"topic": topic}),
		"the delayed and the half message count for the topic they were sent to")
	require.Positive(t, mustValue(t, fams, "rocketmq_producer_connections", nil))
}

// Beyond metricsMaxTopics topics and metricsMaxGroups groups, series sum under _other_:
// at most limit+1 label values each, and the sums are exact.
func TestMetricsCardinalityBound(t *testing.T) {
	const maxTopics, maxGroups = 2, 1
	c := testutil.StartCluster(t, testutil.WithBrokerOptions(func(o *broker.Options) {
		o.MetricsMaxTopics, o.MetricsMaxGroups = maxTopics, maxGroups
	}))
	url := brokerMetrics(t, c.Broker)
	w := newWorkload(t, c, "CapT0")
	total := 0
	for i := range 4 { // CapT0 and CapT1 keep their names, CapT2 and CapT3 are _other_
		topic := "CapT" + strconv.Itoa(i)
		if i > 0 {
			require.NoError(t, w.cl.Admin().CreateTopic(context.Background(), client.TopicConfig{Name: topic, ReadQueues: 4, WriteQueues: 4},
				client.Target{Brokers: []string{c.BrokerAddr}}))
		}
		w.send(t, topic, i+1)
		total += i + 1
	}
	for g := range 3 { // cap-g0 keeps its name
		pc, err := w.cl.NewPullConsumer("cap-g" + strconv.Itoa(g))
		require.NoError(t, err)
		for i := range 4 {
			qs, ends := w.queues(t, pc, "CapT"+strconv.Itoa(i), i+1)
			require.Equal(t, i+1, pullAll(t, pc, qs, ends))
		}
	}
	fams := scrape(t, url)
	in := fams["rocketmq_messages_in_total"].GetMetric()
	require.Len(t, in, maxTopics+1)
	for topic, want := range map[string]float64{"CapT0": 1, "CapT1": 2, observe.OtherLabel: 3 + 4} {
		require.Equal(t, want, mustValue(t, fams, "rocketmq_messages_in_total", map[string]string{"topic": topic}), topic)
	}
	out := fams["rocketmq_messages_out_total"].GetMetric()
	require.Len(t, out, (maxTopics+1)*(maxGroups+1))
	var sum float64
	for _, m := range out {
		sum += m.GetCounter().GetValue()
	}
	require.Equal(t, float64(3*total), sum)
	for k, want := range map[[2]string]float64{{"CapT0", "cap-g0"}: 1, {"CapT1", observe.OtherLabel}: 2 * 2,
		{observe.OtherLabel, "cap-g0"}: 7, {observe.OtherLabel, observe.OtherLabel}: 2 * 7} {
		require.Equal(t, want, mustValue(t, fams, "rocketmq_messages_out_total", map[string]string{"topic": k[0], "consumer_group": k[1]}), k)
	}
	for _, name := range []string{"rocketmq_consumer_lag_messages", "rocketmq_consumer_inflight_messages"} {
		require.LessOrEqual(t, len(fams[name].GetMetric()), (maxTopics+1)*(maxGroups+1), name)
		for _, m := range fams[name].GetMetric() {
			l := labelsOf(m)
			require.Contains(t, []string{"CapT0", "CapT1", observe.OtherLabel}, l["topic"], name)
			require.Contains(t, []string{"cap-g0", observe.OtherLabel}, l["consumer_group"], name)
		}
	}
	// The same series in every scrape.
	require.Equal(t, fmt.Sprint(fams["rocketmq_messages_in_total"]), fmt.Sprint(scrape(t, url)["rocketmq_messages_in_total"]))

	// A deleted topic gives its label value up.
	require.NoError(t, w.cl.Admin().DeleteTopic(context.Background(), "CapT0", client.Target{Brokers: []string{c.BrokerAddr}}))
	fams = scrape(t, url)
	_, ok := value(t, fams, "rocketmq_messages_in_total", map[string]string{"topic": "CapT0"})
	require.False(t, ok)
	w.send(t, "CapT3", 1) // already counted under _other_: stays there
	fams = scrape(t, url)
	require.Equal(t, 8.0, mustValue(t, fams, "rocketmq_messages_in_total", map[string]string{"topic": observe.OtherLabel}))
}

// With metricsEnable off the counters are absent; what is read on a scrape is not.
func TestMetricsCountersOff(t *testing.T) {
	c := testutil.StartCluster(t, testutil.WithBrokerOptions(func(o *broker.Options) { o.MetricsEnable = false }))
	url := brokerMetrics(t, c.Broker)
	w := newWorkload(t, c, "OffTopic")
	w.send(t, "OffTopic", 3)
	fams := scrape(t, url)
	for _, name := range []string{"rocketmq_messages_in_total", "rocketmq_throughput_in_total", "rocketmq_message_size",
		"rocketmq_rpc_latency", "ferry_storage_flush_latency_seconds"} {
		require.NotContains(t, fams, name)
	}
	require.Positive(t, mustValue(t, fams, "rocketmq_storage_size", nil))
}

// A master reports its connected slaves and their lag; a slave its connection.
func TestMetricsReplication(t *testing.T) {
	c := testutil.StartCluster(t)
	url := brokerMetrics(t, c.Broker)
	got, ok := value(t, scrape(t, url), "ferry_ha_slaves", nil)
	require.True(t, ok, "a master has the series")
	require.Zero(t, got)

	s := c.StartSlave(t, nil)
	w := newWorkload(t, c, "ReplTopic")
	w.send(t, "ReplTopic", 5)
	testutil.Eventually(t, 20*time.Second, func() bool {
		f := scrape(t, url)
		lag, ok := value(t, f, "ferry_ha_replication_lag_bytes", map[string]string{"broker_id": "unidentified"})
		return mustValue(t, f, "ferry_ha_slaves", nil) == 1 && ok && lag == 0
	}, "the master counts its slave, caught up")

	fams := scrape(t, brokerMetrics(t, s.Broker))
	require.NotContains(t, fams, "ferry_ha_slaves")
	require.Equal(t, 1.0, mustValue(t, fams, "ferry_ha_master_connected", nil))
	require.Equal(t, 1.0, mustValue(t, fams, "ferry_broker_info", map[string]string{"role": "SLAVE"}))
}

// noBroker is a BrokerSource between two roles of a failover agent.
type noBroker struct{}

func (noBroker) Metrics() broker.Metrics { return broker.Metrics{} }

// A source with no broker sends nothing: no series with empty labels.
func TestMetricsNoBrokerSendsNothing(t *testing.T) {
	reg := observe.NewRegistry()
	reg.MustRegister(observe.NewBrokerCollector(noBroker{}))
	for name := range scrape(t, serveMetrics(t, reg)) {
		require.False(t, strings.HasPrefix(name, "rocketmq_") || strings.HasPrefix(name, "ferry_"), name)
	}
}
