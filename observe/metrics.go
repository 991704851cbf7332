package observe

import (
	"net/http"
	"slices"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// OtherLabel is the label value the series beyond the cardinality bound aggregate under.
const OtherLabel = "_other_"

// NewRegistry returns a registry of its own (never Prometheus's global one) holding the
// Go runtime and process collectors.
func NewRegistry() *prometheus.Registry {
	r := prometheus.NewRegistry()
	r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return r
}

// MetricsHandler serves reg's metrics in the exposition format; errors of a collector
// are logged and the rest still served.
func (s *Server) MetricsHandler(reg *prometheus.Registry) http.Handler {
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorLog: promLogger{s}, ErrorHandling: promhttp.ContinueOnError})
}

// promLogger writes promhttp's errors to the server's logger.
type promLogger struct{ s *Server }

// Println logs v at error level.
func (l promLogger) Println(v ...any) { l.s.opts.Logger.Error().Msgf("metrics: %v", v) }

// BrokerSource is what the broker collector reads on each scrape; *broker.Broker has it.
// Each method reads what the broker already keeps.
type BrokerSource interface {
	TopicCount() int
	GroupCount() int
	CommitLogSize() int64
	StoreDamage() (badReads, quarantinedRanges int64)
	HASlaves() (n int, ok bool)
	EachTopicIn(fn func(topic string, messages int64))
	EachGroupOut(fn func(topic, group string, messages int64))
}

// BrokerCollector names a broker's numbers as Prometheus metrics, read on each scrape
// (no goroutine of its own). At most maxTopics topic label values and maxGroups group
// label values are exported; the rest sum under OtherLabel.
type BrokerCollector struct {
	src                  BrokerSource
	maxTopics, maxGroups int

	messagesIn, messagesOut, topics, groups, storage, badReads, quarantined, slaves *prometheus.Desc
}

// NewBrokerCollector returns a collector of src bounded by maxTopics and maxGroups
// (each at least 1).
func NewBrokerCollector(src BrokerSource, maxTopics, maxGroups int) *BrokerCollector {
	return &BrokerCollector{src: src, maxTopics: max(maxTopics, 1), maxGroups: max(maxGroups, 1),
		messagesIn: prometheus.NewDesc("rocketmq_messages_in_total",
			"Messages stored in the topic since it was created (the sum of its queues' max offsets).", []string{"topic"}, nil),
		messagesOut: prometheus.NewDesc("rocketmq_messages_out_total",
			"Messages the consumer group consumed from the topic (the sum of its committed queue offsets).",
			[]string{"topic", "consumer_group"}, nil),
		topics:  prometheus.NewDesc("rocketmq_topic_number", "Topics in the broker's topic table.", nil, nil),
		groups:  prometheus.NewDesc("rocketmq_consumer_group_number", "Subscription groups in the broker's group table.", nil, nil),
		storage: prometheus.NewDesc("rocketmq_storage_size", "Bytes of commit log the store holds.", nil, nil),
		badReads: prometheus.NewDesc("ferry_storage_bad_reads_total",
			"Records pulls, queries and views found damaged and did not serve, since the store opened.", nil, nil),
		quarantined: prometheus.NewDesc("ferry_storage_quarantined_ranges",
			"Damaged commit-log ranges recovery set aside since the store opened.", nil, nil),
		slaves: prometheus.NewDesc("ferry_ha_slaves", "Slaves connected to this master.", nil, nil),
	}
}

// Describe sends the descriptors of every metric the collector may send.
func (c *BrokerCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.messagesIn, c.messagesOut, c.topics, c.groups, c.storage, c.badReads, c.quarantined, c.slaves} {
		ch <- d
	}
}

// Collect reads the broker's numbers and sends them.
func (c *BrokerCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(c.topics, prometheus.GaugeValue, float64(c.src.TopicCount()))
	ch <- prometheus.MustNewConstMetric(c.groups, prometheus.GaugeValue, float64(c.src.GroupCount()))
	ch <- prometheus.MustNewConstMetric(c.storage, prometheus.GaugeValue, float64(c.src.CommitLogSize()))
	bad, quarantined := c.src.StoreDamage()
	ch <- prometheus.MustNewConstMetric(c.badReads, prometheus.CounterValue, float64(bad))
	ch <- prometheus.MustNewConstMetric(c.quarantined, prometheus.GaugeValue, float64(quarantined))
	if n, ok := c.src.HASlaves(); ok {
		ch <- prometheus.MustNewConstMetric(c.slaves, prometheus.GaugeValue, float64(n))
	}

	in := map[string]int64{}
	c.src.EachTopicIn(func(topic string, n int64) { in[topic] += n })
	type pair struct{ topic, group string }
	out := map[pair]int64{}
	c.src.EachGroupOut(func(topic, group string, n int64) { out[pair{topic, group}] += n })

	topicNames := make([]string, 0, len(in)+len(out))
	for t := range in {
		topicNames = append(topicNames, t)
	}
	groupNames := make([]string, 0, len(out))
	for p := range out {
		topicNames = append(topicNames, p.topic)
		groupNames = append(groupNames, p.group)
	}
	topics, groups := newBound(topicNames, c.maxTopics), newBound(groupNames, c.maxGroups)

	bounded := map[string]int64{}
	for t, n := range in {
		bounded[topics.label(t)] += n
	}
	for t, n := range bounded {
		ch <- prometheus.MustNewConstMetric(c.messagesIn, prometheus.CounterValue, float64(n), t)
	}
	boundedOut := map[pair]int64{}
	for p, n := range out {
		boundedOut[pair{topics.label(p.topic), groups.label(p.group)}] += n
	}
	for p, n := range boundedOut {
		ch <- prometheus.MustNewConstMetric(c.messagesOut, prometheus.CounterValue, float64(n), p.topic, p.group)
	}
}

// bound keeps the first limit distinct values in name order as label values and maps
// the others to OtherLabel: the same values keep their series from scrape to scrape.
type bound map[string]struct{}

// newBound keeps the first limit distinct names of names (which it sorts) in order.
func newBound(names []string, limit int) bound {
	slices.Sort(names)
	names = slices.Compact(names)
	b := make(bound, min(limit, len(names)))
	for _, n := range names[:min(limit, len(names))] {
		b[n] = struct{}{}
	}
	return b
}

// label is v when it is kept, OtherLabel otherwise.
func (b bound) label(v string) string {
	if _, ok := b[v]; ok {
		return v
	}
	return OtherLabel
}
