package observe_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/ferrymq/ferry/broker"
	"github.com/ferrymq/ferry/internal/meter"
	"github.com/ferrymq/ferry/observe"
	"github.com/ferrymq/ferry/store"
)

// fullBroker is a BrokerSource with every part of broker.Metrics present: a
// controller-mode master with a slave, which no single real broker is at once.
type fullBroker struct{}

func (fullBroker) Metrics() broker.Metrics {
	h := func(bounds []int64, v int64) meter.HistogramSnapshot {
		x := meter.NewHistogram(bounds...)
		x.Observe(v)
		return x.Snapshot()
	}
	return broker.Metrics{
		Info:     broker.Identity{Cluster: "C", Name: "broker-a", ID: 0, Role: broker.RoleSyncMaster},
		Counting: true, Topics: 3, Groups: 2, StorageSize: 100, FlushBehind: 1, DispatchBehind: 2, DiskUsedRatio: 0.5,
		Damage:       store.Damage{BadReads: 1, QuarantinedRanges: 1, Scrubs: 1, ScrubFindings: 1},
		Master:       &broker.MasterMetrics{Slaves: 1, SlaveLag: []broker.SlaveLag{{BrokerID: "2", Bytes: 10}}, SyncStateSet: 2, MasterEpoch: 3},
		Slave:        &broker.SlaveMetrics{Connected: true, ReplicaOffset: 5},
		HalfMessages: 1, ScheduledMessages: 1, RequestBytes: 10, RequestBytesLimit: 100, ProducerConnections: 1,
		ConsumerConnections: []broker.GroupCount{{Group: "g", N: 1}},
		In:                  []broker.TopicIn{{Topic: "T", Messages: 1, Bytes: 100, Size: h(broker.MessageSizeBuckets, 100)}},
		Out:                 []broker.GroupOut{{Topic: "T", Group: "g", Messages: 1, Bytes: 100}},
		Lag:                 []broker.GroupLag{{Topic: "T", Group: "g", Lag: 1, Inflight: 1, Ready: 1, QueueingLatency: time.Second, LagLatency: time.Second}},
		RPC: []broker.RPCSeries{{Request: 310, Response: 0, Latency: h(broker.RPCLatencyBuckets, int64(time.Millisecond))},
			{Request: 310, Response: 2, Latency: h(broker.RPCLatencyBuckets, 1)}},
		FlushLatency: h(broker.FlushLatencyBuckets, int64(time.Millisecond)),
	}
}

// fullExposition scrapes a fully populated broker collector and the runtime collectors.
func fullExposition(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	reg := observe.NewRegistry()
	reg.MustRegister(observe.NewBrokerCollector(fullBroker{}))
	return scrape(t, serveMetrics(t, reg))
}

// describedNames are the names of every metric the broker collector may send.
func describedNames() []string {
	ch := make(chan *prometheus.Desc, 100)
	observe.NewBrokerCollector(fullBroker{}).Describe(ch)
	close(ch)
	re := regexp.MustCompile(`fqName: "([^"]+)"`)
	var names []string
	for d := range ch {
		names = append(names, re.FindStringSubmatch(d.String())[1])
	}
	slices.Sort(names)
	return names
}

// The full exposition holds every metric the collector describes (so the checks below
// see all of them).
func TestFullExpositionHasEveryMetric(t *testing.T) {
	fams := fullExposition(t)
	for _, n := range describedNames() {
		require.Contains(t, fams, n)
	}
}

// metricName finds metric names in PromQL: the prefixes Ferry's and the runtime's
// metrics use (label names and values such as job="ferry-broker" do not match).
var metricName = regexp.MustCompile(`\b(?:rocketmq|ferry|go|process)_[a-z0-9_]+\b`)

// exposed reports whether name is a family of fams, or a histogram's _bucket, _sum or
// _count series.
func exposed(fams map[string]*dto.MetricFamily, name string) bool {
	if _, ok := fams[name]; ok {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok {
			if f, ok := fams[base]; ok && f.GetType() == dto.MetricType_HISTOGRAM {
				return true
			}
		}
	}
	return false
}

// exprsOf collects the PromQL strings of a decoded dashboard: targets' expr and the
// template variables' queries.
func exprsOf(v any, out *[]string) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if s, ok := e.(string); ok && (k == "expr" || k == "definition") {
				*out = append(*out, s)
			}
			exprsOf(e, out)
		}
	case []any:
		for _, e := range x {
			exprsOf(e, out)
		}
	}
}

// The Grafana dashboard parses, every panel has a query, and every metric it queries is
// in the broker's exposition.
func TestGrafanaDashboardQueriesExposedMetrics(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "deploy", "grafana", "dashboards", "ferry.json"))
	require.NoError(t, err)
	var dash struct {
		UID    string           `json:"uid"`
		Panels []map[string]any `json:"panels"`
	}
	require.NoError(t, json.Unmarshal(raw, &dash))
	require.NotEmpty(t, dash.UID)
	var generic any
	require.NoError(t, json.Unmarshal(raw, &generic))
	var exprs []string
	exprsOf(generic, &exprs)
	require.NotEmpty(t, exprs)
	ids := map[float64]bool{}
	for _, p := range dash.Panels {
		id, _ := p["id"].(float64)
		require.False(t, ids[id], "panel id %v repeated", id)
		ids[id] = true
		if p["type"] != "row" {
			targets, _ := p["targets"].([]any)
			require.NotEmpty(t, targets, "panel %q has no query", p["title"])
		}
	}
	fams := fullExposition(t)
	used := map[string]bool{}
	for _, e := range exprs {
		require.Equal(t, strings.Count(e, "("), strings.Count(e, ")"), e)
		require.Equal(t, strings.Count(e, "{"), strings.Count(e, "}"), e)
		for _, n := range metricName.FindAllString(e, -1) {
			require.True(t, exposed(fams, n), "the dashboard queries %s, which the broker does not expose (in %q)", n, e)
			used[strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(n, "_bucket"), "_count"), "_sum")] = true
		}
	}
	for _, n := range []string{"rocketmq_messages_in_total", "rocketmq_consumer_lag_messages", "rocketmq_rpc_latency",
		"ferry_ha_replication_lag_bytes", "ferry_storage_disk_used_ratio"} {
		require.True(t, used[n], "the dashboard shows %s", n)
	}
}

// The Prometheus scrape configuration and alert rules parse, the configuration loads the
// rules, and every metric an alert uses is in the broker's exposition.
func TestPrometheusConfigAndAlerts(t *testing.T) {
	dir := filepath.Join("..", "deploy", "prometheus")
	var cfg struct {
		RuleFiles     []string `yaml:"rule_files"`
		ScrapeConfigs []struct {
			JobName       string `yaml:"job_name"`
			StaticConfigs []struct {
				Targets []string `yaml:"targets"`
			} `yaml:"static_configs"`
		} `yaml:"scrape_configs"`
	}
	raw, err := os.ReadFile(filepath.Join(dir, "prometheus.yml"))
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(raw, &cfg))
	require.Equal(t, []string{"/etc/prometheus/alerts.yml"}, cfg.RuleFiles)
	jobs := map[string]int{}
	for _, sc := range cfg.ScrapeConfigs {
		for _, s := range sc.StaticConfigs {
			jobs[sc.JobName] += len(s.Targets)
		}
	}
	require.Equal(t, map[string]int{"ferry-broker": 4, "ferry-namesrv": 2}, jobs, "every process of the compose deployment")

	var rules struct {
		Groups []struct {
			Name  string `yaml:"name"`
			Rules []struct {
				Alert string `yaml:"alert"`
				Expr  string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	raw, err = os.ReadFile(filepath.Join(dir, "alerts.yml"))
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(raw, &rules))
	fams := fullExposition(t)
	var alerts []string
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			require.NotEmpty(t, r.Alert)
			require.NotEmpty(t, r.Expr, r.Alert)
			require.Equal(t, strings.Count(r.Expr, "("), strings.Count(r.Expr, ")"), r.Alert)
			for _, n := range metricName.FindAllString(r.Expr, -1) {
				require.True(t, exposed(fams, n), "alert %s uses %s, which the broker does not expose", r.Alert, n)
			}
			alerts = append(alerts, r.Alert)
		}
	}
	for _, a := range []string{"FerryConsumerLag", "FerryDiskFilling", "FerryReplicationLag", "FerryNoMaster",
		"FerrySyncStateSetShrunk", "FerryBadReads"} {
		require.Contains(t, alerts, a)
	}
}

// docs/operations.md lists every metric the broker exposes.
func TestOperationsDocListsEveryMetric(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "docs", "operations.md"))
	require.NoError(t, err)
	for _, n := range describedNames() {
		require.True(t, strings.Contains(string(raw), "`"+n+"`"), "docs/operations.md, Metrics, lists %s", n)
	}
}
