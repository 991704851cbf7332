package tools

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ferrymq/ferry/client"
	"github.com/ferrymq/ferry/protocol"
)

// The administration commands: cluster, broker, topic, group, consumer and producer.

// adminCommands returns the administration command groups.
func adminCommands(e *env) []*cobra.Command {
	msg := newMessageCommand(e)
	msg.AddCommand(newMessageListCommand(e))
	return []*cobra.Command{newClusterCommand(e), newBrokerCommand(e), newTopicCommand(e),
		newGroupCommand(e), newConsumerCommand(e), newProducerCommand(e), msg, newDLQCommand(e),
		newKVCommand(e)}
}

// withAdmin runs fn with an admin API on a fresh client.
func (e *env) withAdmin(fn func(a *client.Admin) error) error {
	c, err := e.newClient()
	if err != nil {
		return err
	}
	defer func() { _ = c.Close() }()
	return fn(c.Admin())
}

// target builds an admin write target from -c and -b.
func target(cluster string, brokers []string) client.Target {
	return client.Target{Cluster: cluster, Brokers: brokers}
}

// group is a cobra command group with subcommands.
func group(use, short string, subs ...*cobra.Command) *cobra.Command {
	cmd := &cobra.Command{Use: use, Short: short}
	cmd.AddCommand(subs...)
	return cmd
}

// brokerRow is one broker in cluster list.
type brokerRow struct {
	Cluster  string `json:"cluster" yaml:"cluster"`
	Broker   string `json:"broker" yaml:"broker"`
	BrokerID int64  `json:"brokerId" yaml:"brokerId"`
	Addr     string `json:"addr" yaml:"addr"`
}

func newClusterCommand(e *env) *cobra.Command {
	list := &cobra.Command{
		Use:     "list",
		Short:   "List clusters and their brokers",
		Example: "  ferryctl cluster list\n  ferryctl cluster list -o json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return e.withAdmin(func(a *client.Admin) error {
				ci, err := a.ClusterInfo(cmd.Context())
				if err != nil {
					return err
				}
				rows := []brokerRow{}
				for _, name := range slices.Sorted(maps.Keys(ci.Brokers)) {
					b := ci.Brokers[name]
					for _, id := range slices.Sorted(maps.Keys(b.Addrs)) {
						rows = append(rows, brokerRow{b.Cluster, name, id, b.Addrs[id]})
					}
				}
				return e.emit(rows, func(w io.Writer) {
					fmt.Fprintln(w, "CLUSTER\tBROKER\tID\tADDRESS")
					for _, r := range rows {
						fmt.Fprintf(w, "%s\t%s\t%d\t%s\n", r.Cluster, r.Broker, r.BrokerID, r.Addr)
					}
				})
			})
		},
	}
	return group("cluster", "Clusters and their brokers", list)
}

// emitMap prints a key/value map sorted by key.
func (e *env) emitMap(m map[string]string) error {
	return e.emit(m, func(w io.Writer) {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			fmt.Fprintf(w, "%s\t%s\n", k, m[k])
		}
	})
}

func newBrokerCommand(e *env) *cobra.Command {
	mk := func(use, short string, get func(a *client.Admin, ctx context.Context, broker string) (map[string]string, error)) *cobra.Command {
		var broker string
		cmd := &cobra.Command{
			Use:     use + " -b BROKER",
			Short:   short,
			Example: "  ferryctl broker " + use + "\n  ferryctl broker " + use + " -b broker-a -o json",
			Args:    cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				return e.withAdmin(func(a *client.Admin) error {
					b, err := e.oneBroker(cmd.Context(), a, broker)
					if err != nil {
						return err
					}
					m, err := get(a, cmd.Context(), b)
					if err != nil {
						return err
					}
					return e.emitMap(m)
				})
			},
		}
		cmd.Flags().StringVarP(&broker, "broker", "b", "", "broker name or address (default: the only broker)")
		return cmd
	}
	return group("broker", "One broker's state and settings",
		mk("status", "Run-time statistics: versions, uptime, rates, disk use, damage counters", (*client.Admin).BrokerRuntimeInfo),
		mk("config", "The broker's settings (RocketMQ property names)", (*client.Admin).BrokerConfig),
		newBrokerDrainCommand(e, true), newBrokerDrainCommand(e, false))
}

// oneBroker returns broker, or the master of the only broker group when it is empty.
func (e *env) oneBroker(ctx context.Context, a *client.Admin, broker string) (string, error) {
	if broker != "" {
		return broker, nil
	}
	ci, err := a.ClusterInfo(ctx)
	if err != nil {
		return "", err
	}
	if len(ci.Brokers) != 1 {
		return "", usageError("the cluster has %d brokers: name one with -b", len(ci.Brokers))
	}
	for name := range ci.Brokers {
		return name, nil
	}
	return "", nil
}

// topicRouteOut is topic route's output.
type topicRouteOut struct {
	Topic   string         `json:"topic" yaml:"topic"`
	Queues  []queueInfoOut `json:"queues" yaml:"queues"`
	Brokers []brokerRow    `json:"brokers" yaml:"brokers"`
	Order   string         `json:"orderTopicConf,omitempty" yaml:"orderTopicConf,omitempty"`
}

type queueInfoOut struct {
	Broker      string `json:"broker" yaml:"broker"`
	ReadQueues  int32  `json:"readQueues" yaml:"readQueues"`
	WriteQueues int32  `json:"writeQueues" yaml:"writeQueues"`
	Perm        string `json:"perm" yaml:"perm"`
}

// permString shows perm bits as mqadmin does: R, W, X (inherit).
func permString(p int32) string {
	var b strings.Builder
	for _, f := range []struct {
		bit int32
		c   byte
	}{{protocol.PermRead, 'R'}, {protocol.PermWrite, 'W'}, {protocol.PermInherit, 'X'}} {
		if p&f.bit != 0 {
			b.WriteByte(f.c)
		} else {
			b.WriteByte('-')
		}
	}
	return b.String()
}

// queueStatOut is one queue in topic status.
type queueStatOut struct {
	Broker     string `json:"broker" yaml:"broker"`
	QueueID    int32  `json:"queueId" yaml:"queueId"`
	MinOffset  int64  `json:"minOffset" yaml:"minOffset"`
	MaxOffset  int64  `json:"maxOffset" yaml:"maxOffset"`
	LastUpdate string `json:"lastUpdate,omitempty" yaml:"lastUpdate,omitempty"`
}

func newTopicCommand(e *env) *cobra.Command {
	var (
		topic, cluster   string
		brokers          []string
		readQ, writeQ    int32
		perm             int32
		order, keepOrder bool
		attrs            topicAttrFlags
	)
	withTopic := func(cmd *cobra.Command) {
		cmd.Flags().StringVarP(&topic, "topic", "t", "", "topic (required)")
	}
	withTarget := func(cmd *cobra.Command) {
		cmd.Flags().StringVarP(&cluster, "cluster", "c", "", "every master of this cluster")
		cmd.Flags().StringSliceVarP(&brokers, "broker", "b", nil, "brokers by name or address (default: every master)")
	}
	withConfig := func(cmd *cobra.Command) {
		cmd.Flags().Int32VarP(&readQ, "read-queues", "r", 0, "read queues (default 8 on create, unchanged on update)")
		cmd.Flags().Int32VarP(&writeQ, "write-queues", "w", 0, "write queues (default 8 on create, unchanged on update)")
		cmd.Flags().Int32VarP(&perm, "perm", "p", 0, "permission bits: 2 write, 4 read, 6 both (default 6 / unchanged)")
		cmd.Flags().BoolVarP(&order, "order", "s", false, "ordered topic")
		attrs.add(cmd)
	}
	need := func() error {
		if topic == "" {
			return usageError("-t/--topic is required")
		}
		return nil
	}
	create := &cobra.Command{
		Use: "create -t TOPIC [flags]", Short: "Create a topic on the brokers", Args: cobra.NoArgs,
		Example: "  ferryctl topic create -t Orders -r 8 -w 8\n  ferryctl topic create -t Orders -c DefaultCluster\n  ferryctl topic create -t Orders --attr dedupWindow=10m",
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := need(); err != nil {
				return err
			}
			set, err := attrs.parse()
			if err != nil {
				return err
			}
			return e.withAdmin(func(a *client.Admin) error {
				cfg := client.TopicConfig{Name: topic, ReadQueues: readQ, WriteQueues: writeQ, Perm: perm, Order: order,
					Attributes: set, RemoveAttributes: attrs.remove}
				if err := a.CreateTopic(cmd.Context(), cfg, target(cluster, brokers)); err != nil {
					return err
				}
				return e.emit(map[string]string{"topic": topic, "result": "created"}, func(w io.Writer) {
					fmt.Fprintf(w, "topic %s created\n", topic)
				})
			})
		},
	}
	withTopic(create)
	withTarget(create)
	withConfig(create)
	update := &cobra.Command{
		Use: "update -t TOPIC [flags]", Short: "Change a topic's queues, permission, order flag or attributes", Args: cobra.NoArgs,
		Example: "  ferryctl topic update -t Orders -w 16 -r 16\n  ferryctl topic update -t Orders -p 4   # read-only",
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := need(); err != nil {
				return err
			}
			set, err := attrs.parse()
			if err != nil {
				return err
			}
			return e.withAdmin(func(a *client.Admin) error {
				cfg := client.TopicConfig{Name: topic, ReadQueues: readQ, WriteQueues: writeQ, Perm: perm, Order: order || keepOrder,
					Attributes: set, RemoveAttributes: attrs.remove}
				if err := a.UpdateTopic(cmd.Context(), cfg); err != nil {
					return err
				}
				return e.emit(map[string]string{"topic": topic, "result": "updated"}, func(w io.Writer) {
					fmt.Fprintf(w, "topic %s updated\n", topic)
				})
			})
		},
	}
	withTopic(update)
	withConfig(update)
	del := &cobra.Command{
		Use: "delete -t TOPIC", Short: "Delete a topic from its brokers and the name servers (its messages go)", Args: cobra.NoArgs,
		Example: "  ferryctl topic delete -t Orders",
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := need(); err != nil {
				return err
			}
			return e.withAdmin(func(a *client.Admin) error {
				if err := a.DeleteTopic(cmd.Context(), topic, target(cluster, brokers)); err != nil {
					return err
				}
				return e.emit(map[string]string{"topic": topic, "result": "deleted"}, func(w io.Writer) {
					fmt.Fprintf(w, "topic %s deleted\n", topic)
				})
			})
		},
	}
	withTopic(del)
	withTarget(del)
	list := &cobra.Command{
		Use: "list", Short: "List the topics the name servers know", Args: cobra.NoArgs,
		Example: "  ferryctl topic list\n  ferryctl topic list -c DefaultCluster -o json",
		RunE: func(cmd *cobra.Command, _ []string) error {
			return e.withAdmin(func(a *client.Admin) error {
				var ts []string
				var err error
				if cluster != "" {
					ts, err = a.ClusterTopics(cmd.Context(), cluster)
				} else {
					ts, err = a.ListTopics(cmd.Context())
				}
				if err != nil {
					return err
				}
				slices.Sort(ts)
				return e.emit(ts, func(w io.Writer) {
					for _, t := range ts {
						fmt.Fprintln(w, t)
					}
				})
			})
		},
	}
	list.Flags().StringVarP(&cluster, "cluster", "c", "", "only this cluster's topics")
	route := &cobra.Command{
		Use: "route -t TOPIC", Short: "Where a topic lives: its queues and brokers", Args: cobra.NoArgs,
		Example: "  ferryctl topic route -t Orders",
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := need(); err != nil {
				return err
			}
			return e.withAdmin(func(a *client.Admin) error {
				r, err := a.TopicRoute(cmd.Context(), topic)
				if err != nil {
					return err
				}
				out := topicRouteOut{Topic: r.Topic, Order: r.OrderTopicConf, Queues: []queueInfoOut{}, Brokers: []brokerRow{}}
				for _, q := range r.Queues {
					out.Queues = append(out.Queues, queueInfoOut{q.Broker, q.ReadQueues, q.WriteQueues, permString(q.Perm)})
				}
				for _, b := range r.Brokers {
					for _, id := range slices.Sorted(maps.Keys(b.Addrs)) {
						out.Brokers = append(out.Brokers, brokerRow{b.Cluster, b.Name, id, b.Addrs[id]})
					}
				}
				return e.emit(out, func(w io.Writer) {
					fmt.Fprintln(w, "BROKER\tREAD QUEUES\tWRITE QUEUES\tPERM\tADDRESSES")
					for _, q := range out.Queues {
						var addrs []string
						for _, b := range out.Brokers {
							if b.Broker == q.Broker {
								addrs = append(addrs, fmt.Sprintf("%d=%s", b.BrokerID, b.Addr))
							}
						}
						fmt.Fprintf(w, "%s\t%d\t%d\t%s\t%s\n", q.Broker, q.ReadQueues, q.WriteQueues, q.Perm, strings.Join(addrs, " "))
					}
				})
			})
		},
	}
	withTopic(route)
	status := &cobra.Command{
		Use: "status -t TOPIC", Short: "Each queue's offset range and last update", Args: cobra.NoArgs,
		Example: "  ferryctl topic status -t Orders",
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := need(); err != nil {
				return err
			}
			return e.withAdmin(func(a *client.Admin) error {
				st, err := a.TopicStats(cmd.Context(), topic)
				if err != nil {
					return err
				}
				rows := []queueStatOut{}
				for _, q := range st.Queues {
					r := queueStatOut{Broker: q.Queue.BrokerName, QueueID: q.Queue.QueueID, MinOffset: q.MinOffset, MaxOffset: q.MaxOffset}
					if !q.LastUpdate.IsZero() {
						r.LastUpdate = q.LastUpdate.UTC().Format(time.RFC3339Nano)
					}
					rows = append(rows, r)
				}
				return e.emit(rows, func(w io.Writer) {
					fmt.Fprintln(w, "BROKER\tQUEUE\tMIN OFFSET\tMAX OFFSET\tMESSAGES\tLAST UPDATE")
					for _, r := range rows {
						fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%d\t%s\n", r.Broker, r.QueueID, r.MinOffset, r.MaxOffset, r.MaxOffset-r.MinOffset, r.LastUpdate)
					}
					fmt.Fprintf(w, "total\t\t\t\t%d\t\n", st.Messages())
				})
			})
		},
	}
	withTopic(status)
	return group("topic", "Create, change, delete and inspect topics", create, update, del, list, route, status,
		newTopicStatsCommand(e), newTopicOrderConfCommand(e))
}

func newGroupCommand(e *env) *cobra.Command {
	var (
		name, cluster  string
		brokers        []string
		retryMax       int32
		retryQueues    int32
		noBroadcast    bool
		disable, clean bool
		brokerForList  string
	)
	need := func() error {
		if name == "" {
			return usageError("-g/--group is required")
		}
		return nil
	}
	save := func(verb string) *cobra.Command {
		cmd := &cobra.Command{
			Use: verb + " -g GROUP [flags]", Short: verb + " a consumer group's config on the brokers", Args: cobra.NoArgs,
			Example: "  ferryctl group " + verb + " -g billing --retry-max-times 5\n  ferryctl group " + verb + " -g audit --disable",
			RunE: func(cmd *cobra.Command, _ []string) error {
				if err := need(); err != nil {
					return err
				}
				cfg := protocol.DefaultSubscriptionGroupConfig(name)
				cfg.RetryMaxTimes, cfg.RetryQueueNums = retryMax, retryQueues
				cfg.ConsumeBroadcastEnable, cfg.ConsumeEnable = !noBroadcast, !disable
				return e.withAdmin(func(a *client.Admin) error {
					if err := a.CreateSubscriptionGroup(cmd.Context(), cfg, target(cluster, brokers)); err != nil {
						return err
					}
					return e.emit(map[string]string{"group": name, "result": verb + "d"}, func(w io.Writer) {
						fmt.Fprintf(w, "group %s %sd\n", name, verb)
					})
				})
			},
		}
		f := cmd.Flags()
		f.StringVarP(&name, "group", "g", "", "consumer group (required)")
		f.StringVarP(&cluster, "cluster", "c", "", "every master of this cluster")
		f.StringSliceVarP(&brokers, "broker", "b", nil, "brokers by name or address (default: every master)")
		f.Int32Var(&retryMax, "retry-max-times", 16, "redeliveries before a message goes to the DLQ")
		f.Int32Var(&retryQueues, "retry-queues", 1, "queues of the group's retry topic")
		f.BoolVar(&noBroadcast, "no-broadcast", false, "refuse BROADCASTING consumers")
		f.BoolVar(&disable, "disable", false, "stop the group from consuming (pulls answer NO_PERMISSION)")
		return cmd
	}
	del := &cobra.Command{
		Use: "delete -g GROUP [--clean-offsets]", Short: "Delete a consumer group's config (and offsets)", Args: cobra.NoArgs,
		Example: "  ferryctl group delete -g billing --clean-offsets",
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := need(); err != nil {
				return err
			}
			return e.withAdmin(func(a *client.Admin) error {
				if err := a.DeleteSubscriptionGroup(cmd.Context(), name, clean, target(cluster, brokers)); err != nil {
					return err
				}
				return e.emit(map[string]string{"group": name, "result": "deleted"}, func(w io.Writer) {
					fmt.Fprintf(w, "group %s deleted\n", name)
				})
			})
		},
	}
	del.Flags().StringVarP(&name, "group", "g", "", "consumer group (required)")
	del.Flags().BoolVar(&clean, "clean-offsets", false, "also delete the group's committed offsets")
	del.Flags().StringVarP(&cluster, "cluster", "c", "", "every master of this cluster")
	del.Flags().StringSliceVarP(&brokers, "broker", "b", nil, "brokers by name or address (default: every master)")
	list := &cobra.Command{
		Use: "list [-b BROKER]", Short: "List the consumer group configs of a broker", Args: cobra.NoArgs,
		Example: "  ferryctl group list\n  ferryctl group list -b broker-a -o json",
		RunE: func(cmd *cobra.Command, _ []string) error {
			return e.withAdmin(func(a *client.Admin) error {
				b, err := e.oneBroker(cmd.Context(), a, brokerForList)
				if err != nil {
					return err
				}
				gs, err := a.SubscriptionGroups(cmd.Context(), b)
				if err != nil {
					return err
				}
				return e.emit(gs, func(w io.Writer) {
					fmt.Fprintln(w, "GROUP\tCONSUME\tBROADCAST\tRETRY QUEUES\tRETRY MAX TIMES")
					for _, n := range slices.Sorted(maps.Keys(gs)) {
						g := gs[n]
						fmt.Fprintf(w, "%s\t%t\t%t\t%d\t%d\n", n, g.ConsumeEnable, g.ConsumeBroadcastEnable, g.RetryQueueNums, g.RetryMaxTimes)
					}
				})
			})
		},
	}
	list.Flags().StringVarP(&brokerForList, "broker", "b", "", "broker name or address (default: the only broker)")
	return group("group", "Consumer group configs and traffic", save("create"), save("update"), del, list,
		newGroupStatsCommand(e))
}

// progressOut is consumer progress's output.
type progressOut struct {
	Group  string         `json:"group" yaml:"group"`
	Lag    int64          `json:"lag" yaml:"lag"`
	TPS    float64        `json:"consumeTps" yaml:"consumeTps"`
	Queues []queueProgOut `json:"queues" yaml:"queues"`
}

type queueProgOut struct {
	Topic          string `json:"topic" yaml:"topic"`
	Broker         string `json:"broker" yaml:"broker"`
	QueueID        int32  `json:"queueId" yaml:"queueId"`
	BrokerOffset   int64  `json:"brokerOffset" yaml:"brokerOffset"`
	ConsumerOffset int64  `json:"consumerOffset" yaml:"consumerOffset"`
	Lag            int64  `json:"lag" yaml:"lag"`
}

func newConsumerCommand(e *env) *cobra.Command {
	var (
		name, topic          string
		toTime               string
		toEarliest, toLatest bool
	)
	progress := &cobra.Command{
		Use: "progress (-g GROUP | -t TOPIC)", Short: "Lag per queue and in total, of a group or of every group of a topic", Args: cobra.NoArgs,
		Example: "  ferryctl consumer progress -g billing\n  ferryctl consumer progress -t Orders -o json",
		RunE: func(cmd *cobra.Command, _ []string) error {
			if name == "" && topic == "" {
				return usageError("give -g/--group or -t/--topic")
			}
			return e.withAdmin(func(a *client.Admin) error {
				groups := []string{name}
				if name == "" {
					var err error
					if groups, err = a.ConsumedBy(cmd.Context(), topic); err != nil {
						return err
					}
				}
				var out []progressOut
				for _, g := range groups {
					st, err := a.ConsumeStats(cmd.Context(), g, topic)
					if err != nil {
						return err
					}
					p := progressOut{Group: g, Lag: st.Lag(), TPS: st.ConsumeTPS, Queues: []queueProgOut{}}
					for _, q := range st.Queues {
						p.Queues = append(p.Queues, queueProgOut{q.Queue.Topic, q.Queue.BrokerName, q.Queue.QueueID,
							q.BrokerOffset, q.ConsumerOffset, q.Lag()})
					}
					out = append(out, p)
				}
				return e.emit(out, func(w io.Writer) {
					fmt.Fprintln(w, "GROUP\tTOPIC\tBROKER\tQUEUE\tBROKER OFFSET\tCONSUMER OFFSET\tLAG")
					for _, p := range out {
						for _, q := range p.Queues {
							fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%d\t%d\t%d\n", p.Group, q.Topic, q.Broker, q.QueueID, q.BrokerOffset, q.ConsumerOffset, q.Lag)
						}
						fmt.Fprintf(w, "%s\ttotal\t\t\t\t\t%d\n", p.Group, p.Lag)
					}
				})
			})
		},
	}
	progress.Flags().StringVarP(&name, "group", "g", "", "consumer group")
	progress.Flags().StringVarP(&topic, "topic", "t", "", "topic (with -g: only this topic; alone: every group of it)")
	connections := &cobra.Command{
		Use: "connections -g GROUP", Short: "A consumer group's live connections and subscriptions", Args: cobra.NoArgs,
		Example: "  ferryctl consumer connections -g billing",
		RunE: func(cmd *cobra.Command, _ []string) error {
			if name == "" {
				return usageError("-g/--group is required")
			}
			return e.withAdmin(func(a *client.Admin) error {
				cc, err := a.ConsumerConnections(cmd.Context(), name)
				if err != nil {
					return err
				}
				return e.emit(cc, func(w io.Writer) {
					fmt.Fprintf(w, "model %s, type %s, from %s\n", cc.MessageModel, cc.ConsumeType, cc.ConsumeFromWhere)
					fmt.Fprintln(w, "CLIENT ID\tADDRESS\tLANGUAGE\tVERSION")
					for _, c := range cc.ConnectionSet {
						fmt.Fprintf(w, "%s\t%s\t%s\t%d\n", c.ClientID, c.ClientAddr, c.Language, c.Version)
					}
					fmt.Fprintln(w, "TOPIC\tEXPRESSION")
					for _, t := range slices.Sorted(maps.Keys(cc.SubscriptionTable)) {
						fmt.Fprintf(w, "%s\t%s\n", t, cc.SubscriptionTable[t].SubString)
					}
				})
			})
		},
	}
	connections.Flags().StringVarP(&name, "group", "g", "", "consumer group (required)")
	reset := &cobra.Command{
		Use:   "reset-offset -g GROUP -t TOPIC (--to-time T | --to-earliest | --to-latest)",
		Short: "Move a group's offsets in a topic (online consumers follow)",
		Args:  cobra.NoArgs,
		Example: `  ferryctl consumer reset-offset -g billing -t Orders --to-time 2026-12-01T10:00:00Z
  ferryctl consumer reset-offset -g billing -t Orders --to-earliest`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if name == "" || topic == "" {
				return usageError("-g/--group and -t/--topic are required")
			}
			var at time.Time
			switch {
			case toEarliest && !toLatest && toTime == "":
				at = time.UnixMilli(0)
			case toLatest && !toEarliest && toTime == "":
				at = time.Now().Add(24 * 365 * time.Hour)
			case toTime != "" && !toEarliest && !toLatest:
				var err error
				if at, err = time.Parse(time.RFC3339, toTime); err != nil {
					return usageError("--to-time takes an RFC 3339 time like 2026-12-01T10:00:00Z: %v", err)
				}
			default:
				return usageError("give exactly one of --to-time, --to-earliest, --to-latest")
			}
			return e.withAdmin(func(a *client.Admin) error {
				offs, err := a.ResetOffsetByTime(cmd.Context(), name, topic, at)
				if err != nil {
					return err
				}
				rows := []queueProgOut{}
				for mq, off := range offs {
					rows = append(rows, queueProgOut{Topic: mq.Topic, Broker: mq.BrokerName, QueueID: mq.QueueID, ConsumerOffset: off})
				}
				slices.SortFunc(rows, func(x, y queueProgOut) int {
					if c := strings.Compare(x.Broker, y.Broker); c != 0 {
						return c
					}
					return int(x.QueueID - y.QueueID)
				})
				return e.emit(rows, func(w io.Writer) {
					fmt.Fprintln(w, "TOPIC\tBROKER\tQUEUE\tNEW OFFSET")
					for _, r := range rows {
						fmt.Fprintf(w, "%s\t%s\t%d\t%d\n", r.Topic, r.Broker, r.QueueID, r.ConsumerOffset)
					}
				})
			})
		},
	}
	reset.Flags().StringVarP(&name, "group", "g", "", "consumer group (required)")
	reset.Flags().StringVarP(&topic, "topic", "t", "", "topic (required)")
	reset.Flags().StringVar(&toTime, "to-time", "", "the first message stored at or after this time (RFC 3339)")
	reset.Flags().BoolVar(&toEarliest, "to-earliest", false, "the oldest stored message")
	reset.Flags().BoolVar(&toLatest, "to-latest", false, "the end: skip everything stored")
	return group("consumer", "Consumer groups at work: lag, connections, offset resets, running state",
		progress, connections, reset, newRunningInfoCommand(e), newCloneOffsetsCommand(e))
}

func newProducerCommand(e *env) *cobra.Command {
	var name string
	connections := &cobra.Command{
		Use: "connections -g GROUP", Short: "A producer group's live connections", Args: cobra.NoArgs,
		Example: "  ferryctl producer connections -g orders-producer",
		RunE: func(cmd *cobra.Command, _ []string) error {
			if name == "" {
				return usageError("-g/--group is required")
			}
			return e.withAdmin(func(a *client.Admin) error {
				cs, err := a.ProducerConnections(cmd.Context(), name)
				if err != nil {
					return err
				}
				if cs == nil {
					cs = []protocol.Connection{}
				}
				return e.emit(cs, func(w io.Writer) {
					fmt.Fprintln(w, "CLIENT ID\tADDRESS\tLANGUAGE\tVERSION")
					for _, c := range cs {
						fmt.Fprintf(w, "%s\t%s\t%s\t%d\n", c.ClientID, c.ClientAddr, c.Language, c.Version)
					}
				})
			})
		},
	}
	connections.Flags().StringVarP(&name, "group", "g", "", "producer group (required)")
	return group("producer", "Producer groups", connections)
}
