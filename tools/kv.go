package tools

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ferrymq/ferry/client"
)

// `kv get|put|delete|list`: the name servers' KV configuration (PUT_KV_CONFIG,
// GET_KV_CONFIG, DELETE_KV_CONFIG, GET_KVLIST_BY_NAMESPACE), and `topic order-conf`:
// the ORDER_TOPIC_CONFIG namespace, mqadmin's updateOrderConf.

// orderTopicConfigNamespace is the KV namespace of order configurations (RocketMQ's
// NamesrvUtil.NAMESPACE_ORDER_TOPIC_CONFIG).
const orderTopicConfigNamespace = "ORDER_TOPIC_CONFIG"

// kvOut is one KV entry.
type kvOut struct {
	Namespace string `json:"namespace" yaml:"namespace"`
	Key       string `json:"key" yaml:"key"`
	Value     string `json:"value" yaml:"value"`
}

// kvDeleteOut is the result of kv delete.
type kvDeleteOut struct {
	Namespace string `json:"namespace" yaml:"namespace"`
	Key       string `json:"key" yaml:"key"`
	Deleted   bool   `json:"deleted" yaml:"deleted"`
}

// orderConfOut is a topic's order configuration ("" when it has none).
type orderConfOut struct {
	Topic     string `json:"topic" yaml:"topic"`
	OrderConf string `json:"orderConf" yaml:"orderConf"`
}

// newKVCommand returns the kv command group.
func newKVCommand(e *env) *cobra.Command {
	var namespace, key, value string
	need := func(withKey bool) error {
		if namespace == "" {
			return usageError("-s NAMESPACE is required")
		}
		if withKey && key == "" {
			return usageError("-k KEY is required")
		}
		return nil
	}
	nsFlag := func(cmd *cobra.Command) {
		cmd.Flags().StringVarP(&namespace, "namespace", "s", "", "KV namespace (required)")
	}
	keyFlag := func(cmd *cobra.Command) {
		nsFlag(cmd)
		cmd.Flags().StringVarP(&key, "key", "k", "", "key (required)")
	}
	get := &cobra.Command{
		Use: "get -s NAMESPACE -k KEY", Short: "Read one entry (from one name server)", Args: cobra.NoArgs,
		Example: "  ferryctl kv get -s ORDER_TOPIC_CONFIG -k Orders",
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := need(true); err != nil {
				return err
			}
			return e.withAdmin(func(a *client.Admin) error {
				v, err := a.KVConfig(cmd.Context(), namespace, key)
				if errors.Is(err, client.ErrNotFound) {
					return fmt.Errorf("no entry %q in KV namespace %q", key, namespace)
				}
				if err != nil {
					return err
				}
				out := kvOut{namespace, key, v}
				return e.emit(out, func(w io.Writer) {
					fmt.Fprintln(w, "NAMESPACE\tKEY\tVALUE")
					fmt.Fprintf(w, "%s\t%s\t%s\n", namespace, key, v)
				})
			})
		},
	}
	keyFlag(get)
	put := &cobra.Command{
		Use: "put -s NAMESPACE -k KEY -v VALUE", Short: "Store an entry on every name server", Args: cobra.NoArgs,
		Example: "  ferryctl kv put -s app -k feature -v on",
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := need(true); err != nil {
				return err
			}
			if !cmd.Flags().Changed("value") {
				return usageError("-v VALUE is required")
			}
			return e.withAdmin(func(a *client.Admin) error {
				if err := a.PutKVConfig(cmd.Context(), namespace, key, value); err != nil {
					return err
				}
				out := kvOut{namespace, key, value}
				return e.emit(out, func(w io.Writer) { fmt.Fprintf(w, "stored %s/%s = %s\n", namespace, key, value) })
			})
		},
	}
	keyFlag(put)
	put.Flags().StringVarP(&value, "value", "v", "", "value (required)")
	del := &cobra.Command{
		Use: "delete -s NAMESPACE -k KEY", Short: "Remove an entry from every name server", Args: cobra.NoArgs,
		Example: "  ferryctl kv delete -s app -k feature",
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := need(true); err != nil {
				return err
			}
			return e.withAdmin(func(a *client.Admin) error {
				if err := a.DeleteKVConfig(cmd.Context(), namespace, key); err != nil {
					return err
				}
				out := kvDeleteOut{namespace, key, true}
				return e.emit(out, func(w io.Writer) { fmt.Fprintf(w, "deleted %s/%s\n", namespace, key) })
			})
		},
	}
	keyFlag(del)
	list := &cobra.Command{
		Use: "list -s NAMESPACE", Short: "Every entry of a namespace (from one name server)", Args: cobra.NoArgs,
		Example: "  ferryctl kv list -s ORDER_TOPIC_CONFIG\n  ferryctl kv list -s FERRY_DRAINED_BROKERS -o json",
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := need(false); err != nil {
				return err
			}
			return e.withAdmin(func(a *client.Admin) error {
				m, err := a.KVList(cmd.Context(), namespace)
				if err != nil && !errors.Is(err, client.ErrNotFound) {
					return err
				}
				rows := []kvOut{}
				for _, k := range slices.Sorted(maps.Keys(m)) {
					rows = append(rows, kvOut{namespace, k, m[k]})
				}
				return e.emit(rows, func(w io.Writer) {
					fmt.Fprintln(w, "KEY\tVALUE")
					for _, r := range rows {
						fmt.Fprintf(w, "%s\t%s\n", r.Key, r.Value)
					}
				})
			})
		},
	}
	nsFlag(list)
	return group("kv", "The name servers' KV configuration (RocketMQ's namespaces and entries)", get, put, del, list)
}

// newTopicOrderConfCommand returns `topic order-conf`: show, set or delete a topic's
// order configuration (the KV entry ORDER_TOPIC_CONFIG/TOPIC that routes carry as
// orderTopicConf).
func newTopicOrderConfCommand(e *env) *cobra.Command {
	var (
		topic, set string
		del        bool
	)
	cmd := &cobra.Command{
		Use:   "order-conf -t TOPIC [--set 'broker-a:4;broker-b:4' | --delete]",
		Short: "Show, set or delete a topic's order configuration (mqadmin updateOrderConf)",
		Long: "A topic's order configuration lists, per broker group, how many queues producers use.\n" +
			"With one, producers use exactly those queues, in that order, whatever the route's queue\n" +
			"data and write permissions say (a broker drain does not move them). It is stored on every\n" +
			"name server as the KV entry ORDER_TOPIC_CONFIG/TOPIC; routes carry it as orderTopicConf.",
		Example: "  ferryctl topic order-conf -t Orders\n" +
			"  ferryctl topic order-conf -t Orders --set 'broker-a:4;broker-b:4'\n" +
			"  ferryctl topic order-conf -t Orders --delete -o json",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if topic == "" {
				return usageError("-t TOPIC is required")
			}
			setting := cmd.Flags().Changed("set")
			if setting && del {
				return usageError("--set and --delete exclude each other")
			}
			var parts []orderPart
			if setting {
				var err error
				if parts, err = parseOrderConf(set); err != nil {
					return usageError("--set: %v", err)
				}
			}
			return e.withAdmin(func(a *client.Admin) error {
				ctx := cmd.Context()
				out := orderConfOut{Topic: topic}
				switch {
				case setting:
					ci, err := a.ClusterInfo(ctx)
					if err != nil {
						return err
					}
					for _, p := range parts {
						if _, ok := ci.Brokers[p.broker]; !ok {
							return fmt.Errorf("--set: broker group %q is not registered with the name servers", p.broker)
						}
					}
					out.OrderConf = formatOrderConf(parts)
					if err := a.PutKVConfig(ctx, orderTopicConfigNamespace, topic, out.OrderConf); err != nil {
						return err
					}
				case del:
					if err := a.DeleteKVConfig(ctx, orderTopicConfigNamespace, topic); err != nil {
						return err
					}
				default:
					v, err := a.KVConfig(ctx, orderTopicConfigNamespace, topic)
					if err != nil && !errors.Is(err, client.ErrNotFound) {
						return err
					}
					out.OrderConf = v
				}
				return e.emit(out, func(w io.Writer) {
					fmt.Fprintln(w, "TOPIC\tORDER CONF")
					conf := out.OrderConf
					if conf == "" {
						conf = "(none)"
					}
					fmt.Fprintf(w, "%s\t%s\n", topic, conf)
				})
			})
		},
	}
	cmd.Flags().StringVarP(&topic, "topic", "t", "", "topic (required)")
	cmd.Flags().StringVar(&set, "set", "", "store this order configuration: 'broker:queues;broker:queues'")
	cmd.Flags().BoolVar(&del, "delete", false, "remove the topic's order configuration")
	return cmd
}

// orderPart is one "broker:queues" of an order configuration.
type orderPart struct {
	broker string
	queues int
}

// parseOrderConf parses "broker-a:4;broker-b:4" (a trailing ';' allowed).
func parseOrderConf(s string) ([]orderPart, error) {
	var parts []orderPart
	seen := map[string]bool{}
	for item := range strings.SplitSeq(s, ";") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, n, ok := strings.Cut(item, ":")
		name = strings.TrimSpace(name)
		q, err := strconv.Atoi(strings.TrimSpace(n))
		switch {
		case !ok || name == "":
			return nil, fmt.Errorf("%q is not broker:queues", item)
		case err != nil || q <= 0:
			return nil, fmt.Errorf("%q: the queue count must be a positive integer", item)
		case seen[name]:
			return nil, fmt.Errorf("broker group %q is listed twice", name)
		}
		seen[name] = true
		parts = append(parts, orderPart{name, q})
	}
	if len(parts) == 0 {
		return nil, errors.New("empty order configuration (use --delete to remove one)")
	}
	return parts, nil
}

// formatOrderConf writes parts as RocketMQ stores them: "broker-a:4;broker-b:4".
func formatOrderConf(parts []orderPart) string {
	items := make([]string, len(parts))
	for i, p := range parts {
		items[i] = p.broker + ":" + strconv.Itoa(p.queues)
	}
	return strings.Join(items, ";")
}
