package observe

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/ferrymq/ferry/broker"
	"github.com/ferrymq/ferry/internal/meter"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
)

// OtherLabel is the label value the series beyond the cardinality bound aggregate under.
const OtherLabel = broker.MetricsOtherLabel

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
// A zero Metrics (no broker name: a failover agent between two roles) sends nothing.
type BrokerSource interface {
	Metrics() broker.Metrics
}

// Label names (RocketMQ 5's where it has one).
const (
	labelTopic       = "topic"
	labelGroup       = "consumer_group"
	labelRequest     = "request_code"
	labelResponse    = "response_code"
	labelLongPolling = "is_long_polling"
	labelBrokerID    = "broker_id"
)

// desc builds a descriptor.
func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, labels, nil)
}

// BrokerCollector names a broker's numbers (broker.Metrics) as Prometheus metrics, read
// on each scrape (no goroutine of its own). The broker bounds the topic and group label
// values itself (broker.Options.MetricsMaxTopics, MetricsMaxGroups). docs/operations.md
// describes every metric.
type BrokerCollector struct {
	src BrokerSource

	info                                                   *prometheus.Desc
	messagesIn, throughputIn, messageSize                  *prometheus.Desc
	messagesOut, throughputOut                             *prometheus.Desc
	lag, inflight, ready, queueingLatency, lagLatency      *prometheus.Desc
	rpcLatency, systemBusy                                 *prometheus.Desc
	topics, groups, producerConns, consumerConns           *prometheus.Desc
	storageSize, flushBehind, dispatchBehind, diskUsed     *prometheus.Desc
	flushLatency, badReads, quarantined, scrubs, findings  *prometheus.Desc
	slaves, replLag, syncStateSet, masterEpoch, masterConn *prometheus.Desc
	halfMessages, scheduled, requestBytes, requestLimit    *prometheus.Desc
	dedupKeys, dedupDuplicates, dedupEvicted               *prometheus.Desc
	retentionExpired, skippedPulls, skippedMessages        *prometheus.Desc
	compactionReads, compactionMarked, compactionSkipped   *prometheus.Desc
	compactionCopied                                       *prometheus.Desc
}

// NewBrokerCollector returns a collector of src.
func NewBrokerCollector(src BrokerSource) *BrokerCollector {
	tg := []string{labelTopic, labelGroup}
	return &BrokerCollector{src: src,
		info: desc("ferry_broker_info", "Always 1: the broker's cluster, name, id and role.",
			"cluster", "broker_name", labelBrokerID, "role"),
		messagesIn: desc("rocketmq_messages_in_total",
			"Messages stored by send requests (SEND_MESSAGE, _V2, SEND_BATCH_MESSAGE) for the topic since the broker started.", labelTopic),
		throughputIn: desc("rocketmq_throughput_in_total",
			"Bytes of the records send requests stored for the topic since the broker started.", labelTopic),
		messageSize: desc("rocketmq_message_size",
			"Stored message sizes in bytes: one observation per send request, its bytes over its messages.", labelTopic),
		messagesOut: desc("rocketmq_messages_out_total",
			"Messages pull answers carried to the consumer group from the topic since the broker started.", tg...),
		throughputOut: desc("rocketmq_throughput_out_total",
			"Bytes of the records pull answers carried to the consumer group from the topic since the broker started.", tg...),
		lag: desc("rocketmq_consumer_lag_messages",
			"Messages stored and not committed by the group: max offset minus committed offset, summed over the topic's queues.", tg...),
		inflight: desc("rocketmq_consumer_inflight_messages",
			"Messages pulled by the group and not committed: pull offset minus committed offset, summed over the queues.", tg...),
		ready: desc("rocketmq_consumer_ready_messages",
			"Messages not pulled by the group yet: max offset minus pull offset, summed over the queues.", tg...),
		queueingLatency: desc("rocketmq_consumer_queueing_latency",
			"Milliseconds the oldest message the group has not pulled yet has been stored (0: none).", tg...),
		lagLatency: desc("rocketmq_consumer_lag_latency",
			"Milliseconds the oldest message the group has not committed yet has been stored (0: none).", tg...),
		rpcLatency: desc("rocketmq_rpc_latency",
			"Milliseconds from a request's arrival to its answer being queued, by request and response code (held long polls apart).",
			labelRequest, labelResponse, labelLongPolling),
		systemBusy: desc("ferry_system_busy_total",
			"Requests answered SYSTEM_BUSY (a full worker queue, the request-memory limit, shutting down) since the broker started.",
			labelRequest),
		topics:        desc("rocketmq_topic_number", "Topics in the broker's topic table."),
		groups:        desc("rocketmq_consumer_group_number", "Subscription groups in the broker's group table."),
		producerConns: desc("rocketmq_producer_connections", "Producer connections, one per producer group a connection registered."),
		consumerConns: desc("rocketmq_consumer_connections", "Consumer connections of the group.", labelGroup),
		storageSize:   desc("rocketmq_storage_size", "Bytes of commit log the store holds."),
		flushBehind: desc("rocketmq_storage_flush_behind_bytes",
			"Bytes of commit log written and not yet flushed to disk."),
		dispatchBehind: desc("rocketmq_storage_dispatch_behind_bytes",
			"Bytes of commit log not yet dispatched to the consume queues and index."),
		diskUsed: desc("ferry_storage_disk_used_ratio", "Used fraction of the store's disk, 0 to 1."),
		flushLatency: desc("ferry_storage_flush_latency_seconds",
			"Seconds each sync of commit-log data took (a flush spanning two segments is two)."),
		badReads: desc("ferry_storage_bad_reads_total",
			"Records pulls, queries and views found damaged and did not serve, since the store opened."),
		quarantined: desc("ferry_storage_quarantined_ranges",
			"Damaged commit-log ranges recovery set aside since the store opened."),
		scrubs:   desc("ferry_storage_scrubs_total", "Background scrubs finished since the store opened."),
		findings: desc("ferry_storage_scrub_findings_total", "Damaged ranges and bad or missing units the scrubs reported."),
		slaves:   desc("ferry_ha_slaves", "Slaves connected to this master."),
		replLag: desc("ferry_ha_replication_lag_bytes",
			"Bytes the slave is behind this master's commit log end (its last acknowledgement).", labelBrokerID),
		syncStateSet: desc("ferry_ha_sync_state_set_size",
			"Members of the SyncStateSet in force, this master included (controller mode)."),
		masterEpoch: desc("ferry_ha_master_epoch", "The master epoch this broker serves under (controller mode)."),
		masterConn:  desc("ferry_ha_master_connected", "1 when this slave is connected to its master's HA port, else 0."),
		halfMessages: desc("ferry_transaction_half_messages",
			"Prepared transaction messages not yet committed, rolled back or discarded."),
		dedupKeys: desc("ferry_dedup_keys",
			"Message keys the broker remembers for topics with a dedupWindow (claims in progress included)."),
		dedupDuplicates: desc("ferry_dedup_duplicates_total",
			"Sends to topics with a dedupWindow answered from memory and not stored again, since the broker started."),
		dedupEvicted: desc("ferry_dedup_evicted_total",
			"Keys dropped inside their window because broker.dedupMaxKeys was reached, since the broker started."),
		scheduled: desc("ferry_schedule_messages_waiting",
			"Delayed messages parked and not yet delivered to their topic."),
		retentionExpired: desc("ferry_retention_expired_messages_total",
			"Messages per-topic retention (retentionTime, retentionBytes) moved consume-queue minimums past since the store opened."),
		skippedPulls: desc("ferry_pull_offset_too_small_total",
			"Pulls whose offset was below the queue's minimum (retention or cleanup), answered with the minimum as the next offset."),
		skippedMessages: desc("ferry_pull_skipped_messages_total",
			"Messages consumers skipped because their offset was below the queue's minimum: the minimum minus the offset, summed."),
		compactionReads: desc("ferry_compaction_reads_total",
			"Records compaction rounds read to find keys (cleanupPolicy=compact topics), since the store opened."),
		compactionMarked: desc("ferry_compaction_marked_total",
			"Messages of compacted topics marked superseded or expired tombstones since the store opened; pulls skip them."),
		compactionSkipped: desc("ferry_compaction_skipped_offsets",
			"Queue offsets of compacted topics pulls skip now (marks kept in the compaction file)."),
		compactionCopied: desc("ferry_compaction_copied_bytes_total",
			"Bytes of compacted topics' live records copied forward before the commit-log cleanup deleted their segment, since the store opened."),
		requestBytes: desc("ferry_remoting_request_bytes",
			"Bytes of request frames the broker holds (being received, queued or handled)."),
		requestLimit: desc("ferry_remoting_request_bytes_limit",
			"The bound on ferry_remoting_request_bytes; beyond it requests are answered SYSTEM_BUSY."),
	}
}

// descs lists every descriptor.
func (c *BrokerCollector) descs() []*prometheus.Desc {
	return []*prometheus.Desc{c.info, c.messagesIn, c.throughputIn, c.messageSize, c.messagesOut, c.throughputOut,
		c.lag, c.inflight, c.ready, c.queueingLatency, c.lagLatency, c.rpcLatency, c.systemBusy,
		c.topics, c.groups, c.producerConns, c.consumerConns, c.storageSize, c.flushBehind, c.dispatchBehind,
		c.diskUsed, c.flushLatency, c.badReads, c.quarantined, c.scrubs, c.findings,
		c.slaves, c.replLag, c.syncStateSet, c.masterEpoch, c.masterConn,
		c.halfMessages, c.scheduled, c.requestBytes, c.requestLimit, c.dedupKeys, c.dedupDuplicates, c.dedupEvicted,
		c.retentionExpired, c.skippedPulls, c.skippedMessages, c.compactionReads, c.compactionMarked, c.compactionSkipped,
		c.compactionCopied}
}

// Describe sends the descriptors of every metric the collector may send.
func (c *BrokerCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs() {
		ch <- d
	}
}

// Collect reads the broker's numbers and sends them.
func (c *BrokerCollector) Collect(ch chan<- prometheus.Metric) {
	m := c.src.Metrics()
	if m.Info.Name == "" {
		return
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	gauge(c.info, 1, m.Info.Cluster, m.Info.Name, strconv.FormatInt(m.Info.ID, 10), m.Info.Role.String())
	gauge(c.topics, float64(m.Topics))
	gauge(c.groups, float64(m.Groups))
	gauge(c.storageSize, float64(m.StorageSize))
	gauge(c.flushBehind, float64(m.FlushBehind))
	gauge(c.dispatchBehind, float64(m.DispatchBehind))
	gauge(c.diskUsed, m.DiskUsedRatio)
	counter(c.badReads, float64(m.Damage.BadReads))
	gauge(c.quarantined, float64(m.Damage.QuarantinedRanges))
	counter(c.scrubs, float64(m.Damage.Scrubs))
	counter(c.findings, float64(m.Damage.ScrubFindings))
	gauge(c.halfMessages, float64(m.HalfMessages))
	gauge(c.scheduled, float64(m.ScheduledMessages))
	gauge(c.dedupKeys, float64(m.Dedup.Keys))
	counter(c.dedupDuplicates, float64(m.Dedup.Duplicates))
	counter(c.dedupEvicted, float64(m.Dedup.Evicted))
	counter(c.retentionExpired, float64(m.Retention.Expired))
	counter(c.skippedPulls, float64(m.Retention.SkippedPulls))
	counter(c.skippedMessages, float64(m.Retention.SkippedMessages))
	counter(c.compactionReads, float64(m.Compaction.Reads))
	counter(c.compactionMarked, float64(m.Compaction.Marked))
	gauge(c.compactionSkipped, float64(m.Compaction.Skipped))
	counter(c.compactionCopied, float64(m.Compaction.CopiedBytes))
	gauge(c.requestBytes, float64(m.RequestBytes))
	gauge(c.requestLimit, float64(m.RequestBytesLimit))
	gauge(c.producerConns, float64(m.ProducerConnections))
	for _, g := range m.ConsumerConnections {
		gauge(c.consumerConns, float64(g.N), g.Group)
	}
	if ms := m.Master; ms != nil {
		gauge(c.slaves, float64(ms.Slaves))
		for _, s := range ms.SlaveLag {
			gauge(c.replLag, float64(s.Bytes), s.BrokerID)
		}
		if ms.SyncStateSet >= 0 {
			gauge(c.syncStateSet, float64(ms.SyncStateSet))
			gauge(c.masterEpoch, float64(ms.MasterEpoch))
		}
	}
	if s := m.Slave; s != nil {
		gauge(c.masterConn, boolValue(s.Connected))
	}
	for _, l := range m.Lag {
		gauge(c.lag, float64(l.Lag), l.Topic, l.Group)
		gauge(c.inflight, float64(l.Inflight), l.Topic, l.Group)
		gauge(c.ready, float64(l.Ready), l.Topic, l.Group)
		gauge(c.queueingLatency, float64(l.QueueingLatency.Milliseconds()), l.Topic, l.Group)
		gauge(c.lagLatency, float64(l.LagLatency.Milliseconds()), l.Topic, l.Group)
	}
	if !m.Counting {
		return
	}
	for _, in := range m.In {
		counter(c.messagesIn, float64(in.Messages), in.Topic)
		counter(c.throughputIn, float64(in.Bytes), in.Topic)
		ch <- constHistogram(c.messageSize, in.Size, 1, in.Topic)
	}
	for _, out := range m.Out {
		counter(c.messagesOut, float64(out.Messages), out.Topic, out.Group)
		counter(c.throughputOut, float64(out.Bytes), out.Topic, out.Group)
	}
	busy := map[string]uint64{}
	for _, r := range m.RPC {
		req := requestCodeLabel(r.Request)
		ch <- constHistogram(c.rpcLatency, r.Latency, 1e6, req, responseCodeLabel(r.Response), strconv.FormatBool(r.Held))
		if r.Response == remoting.CodeSystemBusy {
			busy[req] += r.Latency.Count()
		}
	}
	for req, n := range busy {
		counter(c.systemBusy, float64(n), req)
	}
	ch <- constHistogram(c.flushLatency, m.FlushLatency, 1e9)
}

// constHistogram exports s, whose values are divided by scale (1e6: nanoseconds to
// milliseconds, 1e9: to seconds).
func constHistogram(d *prometheus.Desc, s meter.HistogramSnapshot, scale float64, labels ...string) prometheus.Metric {
	buckets := make(map[float64]uint64, len(s.Bounds))
	var cum uint64
	for i, b := range s.Bounds {
		cum += s.Counts[i]
		buckets[float64(b)/scale] = cum
	}
	return prometheus.MustNewConstHistogram(d, s.Count(), float64(s.Sum)/scale, buckets, labels...)
}

// boolValue is 1 for true, 0 for false.
func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// requestCodeLabel is RocketMQ's request_code label value: the code's name in lower case
// ("send_message_v2"), or its number when it has none.
func requestCodeLabel(code int16) string {
	if code == broker.RPCOtherCode {
		return OtherLabel
	}
	return codeLabel(protocol.RequestCode(code).String(), code)
}

// responseCodeLabel is response_code's ("success", "system_busy").
func responseCodeLabel(code int16) string {
	if code == broker.RPCOtherCode {
		return OtherLabel
	}
	return codeLabel(protocol.ResponseCode(code).String(), code)
}

// codeLabel lower-cases a code's name; the generated String of a code without a name
// ends in its number in parentheses, which becomes the number alone.
func codeLabel(name string, code int16) string {
	if strings.HasSuffix(name, ")") {
		return strconv.Itoa(int(code))
	}
	return strings.ToLower(name)
}
