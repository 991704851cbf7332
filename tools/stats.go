package tools

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ferrymq/ferry/client"
	"github.com/ferrymq/ferry/protocol"
)

// topic stats and group stats: put and get rates over the last minute, hour and day,
// from each broker's VIEW_BROKER_STATS_DATA (315) — the figures mqadmin statsAll reads:
// TOPIC_PUT_NUMS and TOPIC_PUT_SIZE keyed by topic, GROUP_GET_NUMS and GROUP_GET_SIZE
// keyed by "topic@group". A statistic a broker has not counted anything for (no traffic
// since it started, or for a day) shows zeros.

// windowOut is one window of a traffic row (stable field names).
type windowOut struct {
	Messages    int64   `json:"messages" yaml:"messages"`
	TPS         float64 `json:"tps" yaml:"tps"`
	Bytes       int64   `json:"bytes" yaml:"bytes"`
	BytesPerSec float64 `json:"bytesPerSec" yaml:"bytesPerSec"`
	// PerCall is the messages per send request (put) or pull answer (get): RocketMQ's avgpt.
	PerCall float64 `json:"perCall" yaml:"perCall"`
}

// trafficRow is one broker's figures for a topic's puts or a (topic, group)'s gets.
type trafficRow struct {
	Broker string    `json:"broker" yaml:"broker"`
	Kind   string    `json:"kind" yaml:"kind"` // put or get
	Topic  string    `json:"topic" yaml:"topic"`
	Group  string    `json:"group,omitempty" yaml:"group,omitempty"`
	Minute windowOut `json:"minute" yaml:"minute"`
	Hour   windowOut `json:"hour" yaml:"hour"`
	Day    windowOut `json:"day" yaml:"day"`
}

// brokerStat reads one statistic from a broker; a statistic never counted is zeros.
func brokerStat(ctx context.Context, a *client.Admin, addr, name, key string) (protocol.BrokerStatsData, error) {
	d, err := a.BrokerStats(ctx, addr, name, key)
	switch {
	case errors.Is(err, client.ErrNotFound):
		return protocol.BrokerStatsData{}, nil
	case err != nil:
		return protocol.BrokerStatsData{}, err
	}
	return *d, nil
}

// trafficOf reads the count and size statistics of key from the broker at addr.
func trafficOf(ctx context.Context, a *client.Admin, addr, nums, size, key string) (trafficRow, error) {
	n, err := brokerStat(ctx, a, addr, nums, key)
	if err != nil {
		return trafficRow{}, err
	}
	s, err := brokerStat(ctx, a, addr, size, key)
	if err != nil {
		return trafficRow{}, err
	}
	w := func(n, s protocol.BrokerStatsItem) windowOut {
		return windowOut{Messages: n.Sum, TPS: n.TPS, Bytes: s.Sum, BytesPerSec: s.TPS, PerCall: n.AvgPT}
	}
	return trafficRow{Minute: w(n.StatsMinute, s.StatsMinute), Hour: w(n.StatsHour, s.StatsHour), Day: w(n.StatsDay, s.StatsDay)}, nil
}

// topicMasters lists the brokers holding topic: name and master address.
func topicMasters(ctx context.Context, a *client.Admin, topic string) ([][2]string, error) {
	r, err := a.TopicRoute(ctx, topic)
	if err != nil {
		return nil, err
	}
	var out [][2]string
	for _, b := range r.Brokers {
		if addr := b.MasterAddr(); addr != "" {
			out = append(out, [2]string{b.Name, addr})
		}
	}
	return out, nil
}

// groupRows reads group's get figures of topic on every broker of brokers.
func groupRows(ctx context.Context, a *client.Admin, brokers [][2]string, topic, group string) ([]trafficRow, error) {
	var rows []trafficRow
	for _, b := range brokers {
		row, err := trafficOf(ctx, a, b[1], protocol.StatsGroupGetNums, protocol.StatsGroupGetSize, topic+protocol.StatsKeySeparator+group)
		if err != nil {
			return nil, fmt.Errorf("get statistics of %s in %s on broker %s: %w", group, topic, b[0], err)
		}
		row.Broker, row.Kind, row.Topic, row.Group = b[0], "get", topic, group
		rows = append(rows, row)
	}
	return rows, nil
}

// emitTraffic prints traffic rows.
func (e *env) emitTraffic(rows []trafficRow) error {
	if rows == nil {
		rows = []trafficRow{}
	}
	return e.emit(rows, func(w io.Writer) {
		fmt.Fprintln(w, "BROKER\tKIND\tTOPIC\tGROUP\tMSGS (1m)\tTPS (1m)\tBYTES/S (1m)\tMSGS (1h)\tTPS (1h)\tMSGS (1d)")
		for _, r := range rows {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d\t%.2f\t%s\t%d\t%.2f\t%d\n", r.Broker, r.Kind, r.Topic, r.Group,
				r.Minute.Messages, r.Minute.TPS, humanBytes(r.Minute.BytesPerSec), r.Hour.Messages, r.Hour.TPS, r.Day.Messages)
		}
	})
}

func newTopicStatsCommand(e *env) *cobra.Command {
	var topic string
	cmd := &cobra.Command{
		Use:   "stats -t TOPIC",
		Short: "Put and get rates of a topic over the last minute, hour and day, per broker and group",
		Long: "stats reads each broker's VIEW_BROKER_STATS_DATA: the messages and bytes put into the topic\n" +
			"(TOPIC_PUT_NUMS, TOPIC_PUT_SIZE) and got by each group that consumes it (GROUP_GET_NUMS,\n" +
			"GROUP_GET_SIZE), summed over the last minute, hour and day, with the rate per second.",
		Example: "  ferryctl topic stats -t Orders\n  ferryctl topic stats -t Orders -o json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if topic == "" {
				return usageError("-t/--topic is required")
			}
			return e.withAdmin(func(a *client.Admin) error {
				ctx := cmd.Context()
				brokers, err := topicMasters(ctx, a, topic)
				if err != nil {
					return err
				}
				var rows []trafficRow
				for _, b := range brokers {
					row, err := trafficOf(ctx, a, b[1], protocol.StatsTopicPutNums, protocol.StatsTopicPutSize, topic)
					if err != nil {
						return fmt.Errorf("put statistics of %s on broker %s: %w", topic, b[0], err)
					}
					row.Broker, row.Kind, row.Topic = b[0], "put", topic
					rows = append(rows, row)
				}
				groups, err := a.ConsumedBy(ctx, topic)
				if err != nil {
					return err
				}
				for _, g := range groups {
					got, err := groupRows(ctx, a, brokers, topic, g)
					if err != nil {
						return err
					}
					rows = append(rows, got...)
				}
				return e.emitTraffic(rows)
			})
		},
	}
	cmd.Flags().StringVarP(&topic, "topic", "t", "", "topic (required)")
	return cmd
}

func newGroupStatsCommand(e *env) *cobra.Command {
	var grp, topic string
	cmd := &cobra.Command{
		Use:   "stats -g GROUP [-t TOPIC]",
		Short: "Get rates of a consumer group over the last minute, hour and day, per topic and broker",
		Long: "stats reads each broker's VIEW_BROKER_STATS_DATA for the group: the messages and bytes it\n" +
			"got (GROUP_GET_NUMS, GROUP_GET_SIZE) from each topic it holds offsets or subscriptions for\n" +
			"(GET_CONSUME_STATS), or only from -t, over the last minute, hour and day, with the rate per\n" +
			"second.",
		Example: "  ferryctl group stats -g billing\n  ferryctl group stats -g billing -t Orders -o json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if grp == "" {
				return usageError("-g/--group is required")
			}
			return e.withAdmin(func(a *client.Admin) error {
				ctx := cmd.Context()
				topics := []string{topic}
				if topic == "" {
					st, err := a.ConsumeStats(ctx, grp, "")
					if err != nil {
						return err
					}
					topics = nil
					for _, q := range st.Queues {
						if !slices.Contains(topics, q.Queue.Topic) {
							topics = append(topics, q.Queue.Topic)
						}
					}
					slices.SortFunc(topics, strings.Compare)
				}
				var rows []trafficRow
				for _, t := range topics {
					brokers, err := topicMasters(ctx, a, t)
					if err != nil {
						return err
					}
					got, err := groupRows(ctx, a, brokers, t, grp)
					if err != nil {
						return err
					}
					rows = append(rows, got...)
				}
				return e.emitTraffic(rows)
			})
		},
	}
	cmd.Flags().StringVarP(&grp, "group", "g", "", "consumer group (required)")
	cmd.Flags().StringVarP(&topic, "topic", "t", "", "only this topic (default: every topic the group consumes)")
	return cmd
}
