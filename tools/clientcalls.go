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

// Commands that reach a group's live consumers through a broker: message resend
// (CONSUME_MESSAGE_DIRECTLY) and consumer running-info (GET_CONSUMER_RUNNING_INFO).

// resendOut is message resend's output (stable field names).
type resendOut struct {
	MsgID         string `json:"msgId" yaml:"msgId"`
	OffsetMsgID   string `json:"offsetMsgId" yaml:"offsetMsgId"`
	Topic         string `json:"topic" yaml:"topic"`
	Group         string `json:"group" yaml:"group"`
	ClientID      string `json:"clientId" yaml:"clientId"`
	ConsumeResult string `json:"consumeResult" yaml:"consumeResult"`
	Order         bool   `json:"order" yaml:"order"`
	AutoCommit    bool   `json:"autoCommit" yaml:"autoCommit"`
	Remark        string `json:"remark,omitempty" yaml:"remark,omitempty"`
	SpentMillis   int64  `json:"spentMillis" yaml:"spentMillis"`
}

// firstConsumer returns clientID, or the first online member of group when it is empty.
func firstConsumer(ctx context.Context, a *client.Admin, group, clientID string) (string, error) {
	if clientID != "" {
		return clientID, nil
	}
	cc, err := a.ConsumerConnections(ctx, group)
	if err != nil {
		return "", fmt.Errorf("group %s has no online consumer to send to: %w", group, err)
	}
	if len(cc.ConnectionSet) == 0 {
		return "", fmt.Errorf("group %s has no online consumer to send to", group)
	}
	return cc.ConnectionSet[0].ClientID, nil
}

func newResendCommand(e *env) *cobra.Command {
	var (
		id, topic, group, clientID string
		timeout                    time.Duration
	)
	cmd := &cobra.Command{
		Use:   "resend -i ID -g GROUP [-t TOPIC] [-c CLIENT_ID]",
		Short: "Hand a stored message to a live consumer of a group (its handler runs; nothing is committed)",
		Long: "resend finds a message by id and has its broker push it to one consumer of the group\n" +
			"(CONSUME_MESSAGE_DIRECTLY): the named client, or the first online one. The consumer runs its\n" +
			"handler on it and reports the outcome (CR_SUCCESS, CR_LATER, CR_THROW_EXCEPTION, …), which is\n" +
			"printed; the exit status is 0 whatever the handler answered. No offset moves and a failure is\n" +
			"not retried.",
		Args: cobra.NoArgs,
		Example: `  ferryctl message resend -i 7F000001000051AF0000000000000000 -g billing
  ferryctl message resend -t Orders -i C000020234ECF0AF12DA0324DCBB0001 -g billing -c 10.0.0.9@4242`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if id == "" || group == "" {
				return usageError("-i/--id and -g/--group are required")
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			return e.withAdmin(func(a *client.Admin) error {
				msgs, err := a.QueryByID(ctx, topic, id)
				if err != nil {
					return err
				}
				m := msgs[0] // a producer's retry may have stored it twice: the copies are alike
				to, err := firstConsumer(ctx, a, group, clientID)
				if err != nil {
					return err
				}
				res, err := a.ConsumeMessageDirectly(ctx, group, to, m)
				if err != nil {
					return err
				}
				out := resendOut{MsgID: m.MsgID, OffsetMsgID: m.OffsetMsgID, Topic: m.Topic, Group: group, ClientID: to,
					ConsumeResult: string(res.ConsumeResult), Order: res.Order, AutoCommit: res.AutoCommit,
					Remark: res.Remark, SpentMillis: res.SpentTimeMills}
				return e.emit(out, func(w io.Writer) {
					fmt.Fprintf(w, "message %s sent to %s of group %s: %s after %d ms", out.MsgID, to, group, out.ConsumeResult, out.SpentMillis)
					if out.Remark != "" {
						fmt.Fprintf(w, " (%s)", out.Remark)
					}
					fmt.Fprintln(w)
				})
			})
		},
	}
	f := cmd.Flags()
	f.StringVarP(&id, "id", "i", "", "message id: an offset id, or a client id (UNIQ_KEY) with -t (required)")
	f.StringVarP(&topic, "topic", "t", "", "topic (needed for a client id)")
	f.StringVarP(&group, "group", "g", "", "consumer group (required)")
	f.StringVarP(&clientID, "client", "c", "", "consumer client id (default: the group's first online consumer)")
	f.DurationVar(&timeout, "timeout", 15*time.Second, "give up after this long (the handler's run included)")
	return cmd
}

// runningInfoOut is one consumer in consumer running-info's output (stable field names).
type runningInfoOut struct {
	ClientID      string             `json:"clientId" yaml:"clientId"`
	Properties    map[string]string  `json:"properties" yaml:"properties"`
	Subscriptions []subscriptionOut  `json:"subscriptions" yaml:"subscriptions"`
	Queues        []queueStateOut    `json:"queues" yaml:"queues"`
	Status        map[string]rateOut `json:"status,omitempty" yaml:"status,omitempty"`
	Jstack        string             `json:"jstack,omitempty" yaml:"jstack,omitempty"`
}

type subscriptionOut struct {
	Topic      string   `json:"topic" yaml:"topic"`
	Expression string   `json:"expression" yaml:"expression"`
	Tags       []string `json:"tags,omitempty" yaml:"tags,omitempty"`
	SubVersion int64    `json:"subVersion" yaml:"subVersion"`
}

type queueStateOut struct {
	Topic                string `json:"topic" yaml:"topic"`
	Broker               string `json:"broker" yaml:"broker"`
	QueueID              int32  `json:"queueId" yaml:"queueId"`
	CommitOffset         int64  `json:"commitOffset" yaml:"commitOffset"`
	CachedMessages       int32  `json:"cachedMessages" yaml:"cachedMessages"`
	CachedMinOffset      int64  `json:"cachedMinOffset" yaml:"cachedMinOffset"`
	CachedMaxOffset      int64  `json:"cachedMaxOffset" yaml:"cachedMaxOffset"`
	Locked               bool   `json:"locked" yaml:"locked"`
	Dropped              bool   `json:"dropped" yaml:"dropped"`
	LastPullTimestamp    int64  `json:"lastPullTimestamp,omitempty" yaml:"lastPullTimestamp,omitempty"`
	LastConsumeTimestamp int64  `json:"lastConsumeTimestamp,omitempty" yaml:"lastConsumeTimestamp,omitempty"`
}

type rateOut struct {
	PullRT            float64 `json:"pullRT" yaml:"pullRT"`
	PullTPS           float64 `json:"pullTPS" yaml:"pullTPS"`
	ConsumeRT         float64 `json:"consumeRT" yaml:"consumeRT"`
	ConsumeOKTPS      float64 `json:"consumeOKTPS" yaml:"consumeOKTPS"`
	ConsumeFailedTPS  float64 `json:"consumeFailedTPS" yaml:"consumeFailedTPS"`
	ConsumeFailedMsgs int64   `json:"consumeFailedMsgs" yaml:"consumeFailedMsgs"`
}

// runningInfoOf turns a client's answer into the output shape.
func runningInfoOf(clientID string, ri *protocol.ConsumerRunningInfo) runningInfoOut {
	out := runningInfoOut{ClientID: clientID, Properties: ri.Properties, Subscriptions: []subscriptionOut{},
		Queues: []queueStateOut{}, Jstack: ri.Jstack}
	if out.Properties == nil {
		out.Properties = map[string]string{}
	}
	for _, s := range ri.SubscriptionSet {
		out.Subscriptions = append(out.Subscriptions, subscriptionOut{Topic: s.Topic, Expression: s.SubString, Tags: s.TagsSet, SubVersion: s.SubVersion})
	}
	slices.SortFunc(out.Subscriptions, func(a, b subscriptionOut) int { return strings.Compare(a.Topic, b.Topic) })
	for _, mq := range slices.SortedFunc(maps.Keys(ri.MQTable), protocol.CompareMessageQueue) {
		p := ri.MQTable[mq]
		out.Queues = append(out.Queues, queueStateOut{Topic: mq.Topic, Broker: mq.BrokerName, QueueID: mq.QueueID,
			CommitOffset: p.CommitOffset, CachedMessages: p.CachedMsgCount, CachedMinOffset: p.CachedMsgMinOffset,
			CachedMaxOffset: p.CachedMsgMaxOffset, Locked: p.Locked, Dropped: p.Dropped,
			LastPullTimestamp: p.LastPullTimestamp, LastConsumeTimestamp: p.LastConsumeTimestamp})
	}
	if len(ri.StatusTable) > 0 {
		out.Status = make(map[string]rateOut, len(ri.StatusTable))
		for t, s := range ri.StatusTable {
			out.Status[t] = rateOut(s)
		}
	}
	return out
}

func newRunningInfoCommand(e *env) *cobra.Command {
	var (
		group, clientID string
		jstack          bool
	)
	cmd := &cobra.Command{
		Use:   "running-info -g GROUP [-c CLIENT_ID] [--jstack]",
		Short: "Ask a group's live consumers for their state: settings, subscriptions, queues",
		Args:  cobra.NoArgs,
		Example: `  ferryctl consumer running-info -g billing
  ferryctl consumer running-info -g billing -c 10.0.0.9@4242 --jstack -o json`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if group == "" {
				return usageError("-g/--group is required")
			}
			return e.withAdmin(func(a *client.Admin) error {
				ids := []string{clientID}
				if clientID == "" {
					cc, err := a.ConsumerConnections(cmd.Context(), group)
					if err != nil {
						return err
					}
					ids = ids[:0]
					for _, c := range cc.ConnectionSet {
						ids = append(ids, c.ClientID)
					}
				}
				out := []runningInfoOut{}
				for _, id := range ids {
					raw, err := a.ConsumerRunningInfo(cmd.Context(), group, id, jstack)
					if err != nil {
						return err
					}
					ri, err := protocol.DecodeConsumerRunningInfo(raw)
					if err != nil {
						return fmt.Errorf("running info of %s: %w", id, err)
					}
					out = append(out, runningInfoOf(id, ri))
				}
				return e.emit(out, func(w io.Writer) {
					for i, r := range out {
						if i > 0 {
							fmt.Fprintln(w)
						}
						fmt.Fprintf(w, "client %s\n", r.ClientID)
						for _, k := range slices.Sorted(maps.Keys(r.Properties)) {
							fmt.Fprintf(w, "  %s\t%s\n", k, r.Properties[k])
						}
						fmt.Fprintln(w, "TOPIC\tEXPRESSION")
						for _, s := range r.Subscriptions {
							fmt.Fprintf(w, "%s\t%s\n", s.Topic, s.Expression)
						}
						fmt.Fprintln(w, "TOPIC\tBROKER\tQUEUE\tCOMMIT OFFSET\tCACHED\tLOCKED\tDROPPED")
						for _, q := range r.Queues {
							fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%d\t%t\t%t\n", q.Topic, q.Broker, q.QueueID, q.CommitOffset, q.CachedMessages, q.Locked, q.Dropped)
						}
						if r.Jstack != "" {
							fmt.Fprintf(w, "stack dump:\n%s\n", r.Jstack)
						}
					}
				})
			})
		},
	}
	f := cmd.Flags()
	f.StringVarP(&group, "group", "g", "", "consumer group (required)")
	f.StringVarP(&clientID, "client", "c", "", "one consumer client id (default: every online member)")
	f.BoolVar(&jstack, "jstack", false, "include a stack (goroutine / thread) dump")
	return cmd
}
