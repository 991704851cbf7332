package observe_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/client"
	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/observe"
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

// value is the value of the series of family name with exactly labels; ok is false when
// there is none.
func value(fams map[string]*dto.MetricFamily, name string, labels map[string]string) (float64, bool) {
	f, ok := fams[name]
	if !ok {
		return 0, false
	}
	for _, m := range f.GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		if fmt.Sprint(got) != fmt.Sprint(labels) {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.GetCounter().GetValue(), true
		case m.Gauge != nil:
			return m.GetGauge().GetValue(), true
		case m.Untyped != nil:
			return m.GetUntyped().GetValue(), true
		}
	}
	return 0, false
}

// The runtime and process collectors are served by a registry of its own.
func TestMetricsServeRuntime(t *testing.T) {
	fams := scrape(t, serveMetrics(t, observe.NewRegistry()))
	for _, name := range []string{"go_goroutines", "go_memstats_alloc_bytes", "process_cpu_seconds_total"} {
		require.Contains(t, fams, name)
	}
}

// After a known workload the counters say what was sent and consumed.
func TestMetricsCountTheWorkload(t *testing.T) {
	const topic, group, n = "MetricsTopic", "metrics-cg", 40
	c := testutil.StartCluster(t)
	reg := observe.NewRegistry()
	reg.MustRegister(observe.NewBrokerCollector(c.Broker, 1000, 1000))
	url := serveMetrics(t, reg)

	before := scrape(t, url)
	_, ok := value(before, "rocketmq_messages_in_total", map[string]string{"topic": topic})
	require.False(t, ok, "no series before the topic exists")

	cl, err := client.New(client.WithNameServers(c.NamesrvAddr))
	require.NoError(t, err)
	defer func() { require.NoError(t, cl.Close()) }()
	ctx := context.Background()
	require.NoError(t, cl.Admin().CreateTopic(ctx, client.TopicConfig{Name: topic, ReadQueues: 4, WriteQueues: 4},
		client.Target{Brokers: []string{c.BrokerAddr}}))
	p, err := cl.NewProducer("metrics-pg")
	require.NoError(t, err)
	defer func() { require.NoError(t, p.Close()) }()
	for i := range n {
		testutil.Eventually(t, 10*time.Second, func() bool {
			_, err = p.Send(ctx, message.NewMessage(topic, []byte("m-"+strconv.Itoa(i))))
			return err == nil
		}, "a send once the route is known")
	}

	pc, err := cl.NewPullConsumer(group)
	require.NoError(t, err)
	queues, err := pc.FetchQueues(ctx, topic)
	require.NoError(t, err)
	ends := make([]int64, len(queues))
	testutil.Eventually(t, 10*time.Second, func() bool { // the consume queues are written asynchronously
		var sum int64
		for i, mq := range queues {
			ends[i], err = pc.MaxOffset(ctx, mq)
			require.NoError(t, err)
			sum += ends[i]
		}
		return sum == n
	}, "every message dispatched")
	consumed := 0
	for i, mq := range queues {
		end := ends[i]
		var off int64
		for off < end {
			r, err := pc.PullWait(ctx, mq, off, 32, "*", 5*time.Second)
			require.NoError(t, err)
			require.Equal(t, client.PullFound, r.Status, "queue %d at %d of %d", mq.QueueID, off, end)
			consumed += len(r.Messages)
			off = r.NextOffset
		}
		require.NoError(t, pc.CommitOffset(ctx, mq, off))
	}
	require.Equal(t, n, consumed)

	fams := scrape(t, url)
	in, ok := value(fams, "rocketmq_messages_in_total", map[string]string{"topic": topic})
	require.True(t, ok)
	require.Equal(t, float64(n), in)
	var out float64
	testutil.Eventually(t, 10*time.Second, func() bool { // commits may be asynchronous
		out, _ = value(scrape(t, url), "rocketmq_messages_out_total", map[string]string{"topic": topic, "consumer_group": group})
		return out == n
	}, "the out counter reaches what was consumed")
	require.Equal(t, float64(n), out)
	topics, ok := value(fams, "rocketmq_topic_number", map[string]string{})
	require.True(t, ok)
	require.GreaterOrEqual(t, topics, 1.0)
	size, ok := value(fams, "rocketmq_storage_size", map[string]string{})
	require.True(t, ok)
	require.Positive(t, size)
	for _, name := range []string{"rocketmq_consumer_group_number", "ferry_storage_bad_reads_total", "ferry_storage_quarantined_ranges"} {
		_, ok := value(fams, name, map[string]string{})
		require.True(t, ok, name)
	}
	require.Contains(t, fams, "go_goroutines")
}

// fakeBroker is a BrokerSource with fixed numbers.
type fakeBroker struct {
	in  map[string]int64
	out map[[2]string]int64
}

func (fakeBroker) TopicCount() int                { return 0 }
func (fakeBroker) GroupCount() int                { return 0 }
func (fakeBroker) CommitLogSize() int64           { return 0 }
func (fakeBroker) StoreDamage() (bad, quar int64) { return 0, 0 }
func (fakeBroker) HASlaves() (int, bool)          { return 0, false }
func (f fakeBroker) EachTopicIn(fn func(string, int64)) {
	for t, n := range f.in {
		fn(t, n)
	}
}
func (f fakeBroker) EachGroupOut(fn func(string, string, int64)) {
	for k, n := range f.out {
		fn(k[0], k[1], n)
	}
}

// Beyond metricsMaxTopics topics and metricsMaxGroups groups, series sum under _other_:
// at most limit+1 label values each, and the sums are exact.
func TestMetricsCardinalityBound(t *testing.T) {
	const maxTopics, maxGroups = 3, 2
	f := fakeBroker{in: map[string]int64{}, out: map[[2]string]int64{}}
	var total int64
	for i := range 10 {
		topic := "t" + strconv.Itoa(i)
		f.in[topic] = int64(i + 1)
		total += int64(i + 1)
		for g := range 5 {
			f.out[[2]string{topic, "g" + strconv.Itoa(g)}] = 1
		}
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(observe.NewBrokerCollector(f, maxTopics, maxGroups))
	url := serveMetrics(t, reg)
	fams := scrape(t, url)

	in := fams["rocketmq_messages_in_total"].GetMetric()
	require.Len(t, in, maxTopics+1)
	var sum float64
	others := 0
	for _, m := range in {
		sum += m.GetCounter().GetValue()
		if m.GetLabel()[0].GetValue() == observe.OtherLabel {
			others++
		}
	}
	require.Equal(t, 1, others)
	require.Equal(t, float64(total), sum)

	out := fams["rocketmq_messages_out_total"].GetMetric()
	require.Len(t, out, (maxTopics+1)*(maxGroups+1))
	sum = 0
	for _, m := range out {
		sum += m.GetCounter().GetValue()
	}
	require.Equal(t, float64(10*5), sum)
	// The first names in name order keep their series: t0..t2 and g0, g1.
	for topic, want := range map[string]float64{"t0": 1, "t2": 3, observe.OtherLabel: float64(total - 6)} {
		got, ok := value(fams, "rocketmq_messages_in_total", map[string]string{"topic": topic})
		require.True(t, ok, topic)
		require.Equal(t, want, got, topic)
	}
	for k, want := range map[[2]string]float64{{"t0", "g0"}: 1, {"t1", "g1"}: 1, {"t0", observe.OtherLabel}: 3,
		{observe.OtherLabel, "g0"}: 7, {observe.OtherLabel, observe.OtherLabel}: 21} {
		got, ok := value(fams, "rocketmq_messages_out_total", map[string]string{"topic": k[0], "consumer_group": k[1]})
		require.True(t, ok, k)
		require.Equal(t, want, got, k)
	}
	// The same series in every scrape.
	require.Equal(t, fmt.Sprint(fams["rocketmq_messages_in_total"]), fmt.Sprint(scrape(t, url)["rocketmq_messages_in_total"]))
}

// A master reports its connected slaves; a slave has no ferry_ha_slaves series.
func TestMetricsHASlaves(t *testing.T) {
	c := testutil.StartCluster(t)
	reg := prometheus.NewRegistry()
	reg.MustRegister(observe.NewBrokerCollector(c.Broker, 10, 10))
	url := serveMetrics(t, reg)
	got, ok := value(scrape(t, url), "ferry_ha_slaves", map[string]string{})
	require.True(t, ok, "a master has the series")
	require.Zero(t, got)

	s := c.StartSlave(t, nil)
	testutil.Eventually(t, 20*time.Second, func() bool {
		got, _ := value(scrape(t, url), "ferry_ha_slaves", map[string]string{})
		return got == 1
	}, "the master counts its slave")

	slaveReg := prometheus.NewRegistry()
	slaveReg.MustRegister(observe.NewBrokerCollector(s.Broker, 10, 10))
	fams := scrape(t, serveMetrics(t, slaveReg))
	require.NotContains(t, fams, "ferry_ha_slaves")
	require.Contains(t, fams, "rocketmq_topic_number")
}
