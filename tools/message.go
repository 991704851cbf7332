package tools

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/ferrymq/ferry/client"
)

// messageOut is a found message in message query/print output (stable field names).
type messageOut struct {
	MsgID           string            `json:"msgId" yaml:"msgId"`
	OffsetMsgID     string            `json:"offsetMsgId" yaml:"offsetMsgId"`
	Topic           string            `json:"topic" yaml:"topic"`
	Broker          string            `json:"broker" yaml:"broker"`
	QueueID         int32             `json:"queueId" yaml:"queueId"`
	QueueOffset     int64             `json:"queueOffset" yaml:"queueOffset"`
	CommitLogOffset int64             `json:"commitLogOffset" yaml:"commitLogOffset"`
	Tags            string            `json:"tags,omitempty" yaml:"tags,omitempty"`
	Keys            []string          `json:"keys,omitempty" yaml:"keys,omitempty"`
	Properties      map[string]string `json:"properties,omitempty" yaml:"properties,omitempty"`
	BornTime        string            `json:"bornTime" yaml:"bornTime"`
	StoreTime       string            `json:"storeTime" yaml:"storeTime"`
	BornHost        string            `json:"bornHost" yaml:"bornHost"`
	StoreHost       string            `json:"storeHost" yaml:"storeHost"`
	ReconsumeTimes  int32             `json:"reconsumeTimes" yaml:"reconsumeTimes"`
	BodySize        int               `json:"bodySize" yaml:"bodySize"`
	Body            string            `json:"body,omitempty" yaml:"body,omitempty"`
	BodyEncoding    string            `json:"bodyEncoding,omitempty" yaml:"bodyEncoding,omitempty"`
}

// bodyOptions says how message bodies are shown.
type bodyOptions struct {
	encoding string // text, hex, base64, none
	max      int    // bytes shown at most (0: all)
}

// render formats a body; truncated bodies end with "…".
func (o bodyOptions) render(b []byte) (string, string) {
	cut := b
	if o.max > 0 && len(cut) > o.max {
		cut = cut[:o.max]
	}
	suffix := ""
	if len(cut) < len(b) {
		suffix = "…"
	}
	switch o.encoding {
	case "none":
		return "", ""
	case "hex":
		return hex.EncodeToString(cut) + suffix, "hex"
	case "base64":
		return base64.StdEncoding.EncodeToString(cut) + suffix, "base64"
	default:
		if !utf8.Valid(cut) {
			return base64.StdEncoding.EncodeToString(cut) + suffix, "base64"
		}
		return string(cut) + suffix, "text"
	}
}

func messageOf(m *client.MessageExt, bo bodyOptions) messageOut {
	ts := func(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
	out := messageOut{MsgID: m.MsgID, OffsetMsgID: m.OffsetMsgID, Topic: m.Topic, Broker: m.Queue.BrokerName,
		QueueID: m.Queue.QueueID, QueueOffset: m.QueueOffset, CommitLogOffset: m.CommitLogOffset,
		Tags: m.Tags(), Keys: m.Keys(), Properties: m.Properties, BornTime: ts(m.BornTime), StoreTime: ts(m.StoreTime),
		BornHost: m.BornHost.String(), StoreHost: m.StoreHost.String(), ReconsumeTimes: m.ReconsumeTimes, BodySize: len(m.Body)}
	out.Body, out.BodyEncoding = bo.render(m.Body)
	return out
}

func newMessageCommand(e *env) *cobra.Command {
	var (
		id, key, topic, broker string
		queue                  int32
		offset                 int64
		begin, end             string
		maxNum                 int
		bo                     bodyOptions
	)
	find := func(ctx context.Context, a *client.Admin) ([]*client.MessageExt, error) {
		switch {
		case id != "" && key == "" && offset < 0:
			return a.QueryByID(ctx, topic, id)
		case key != "" && id == "" && offset < 0:
			if topic == "" {
				return nil, usageError("--key needs -t/--topic")
			}
			var b, en time.Time
			var err error
			if begin != "" {
				if b, err = time.Parse(time.RFC3339, begin); err != nil {
					return nil, usageError("--begin takes an RFC 3339 time: %v", err)
				}
			}
			if end != "" {
				if en, err = time.Parse(time.RFC3339, end); err != nil {
					return nil, usageError("--end takes an RFC 3339 time: %v", err)
				}
			}
			return a.QueryByKey(ctx, topic, key, b, en, maxNum)
		case offset >= 0 && id == "" && key == "":
			if topic == "" || queue < 0 {
				return nil, usageError("--offset needs -t/--topic and -q/--queue")
			}
			b := broker
			if b == "" {
				r, err := a.TopicRoute(ctx, topic)
				if err != nil {
					return nil, err
				}
				if len(r.Brokers) != 1 {
					return nil, usageError("topic %s is on %d brokers: name one with -b", topic, len(r.Brokers))
				}
				b = r.Brokers[0].Name
			}
			m, err := a.QueryByOffset(ctx, topic, b, queue, offset)
			if err != nil {
				return nil, err
			}
			return []*client.MessageExt{m}, nil
		}
		return nil, usageError("give exactly one of -i/--id, -k/--key, or --offset with -t and -q")
	}
	flags := func(cmd *cobra.Command) {
		f := cmd.Flags()
		f.StringVarP(&id, "id", "i", "", "message id: a client id (UNIQ_KEY, needs -t) or an offset id")
		f.StringVarP(&key, "key", "k", "", "message key (needs -t)")
		f.StringVarP(&topic, "topic", "t", "", "topic")
		f.Int32VarP(&queue, "queue", "q", -1, "queue id (with --offset)")
		f.Int64Var(&offset, "offset", -1, "queue offset (with -t and -q)")
		f.StringVarP(&broker, "broker", "b", "", "broker name (with --offset; default: the topic's only broker)")
		f.StringVar(&begin, "begin", "", "with --key: stored at or after this time (RFC 3339)")
		f.StringVar(&end, "end", "", "with --key: stored at or before this time (RFC 3339)")
		f.IntVar(&maxNum, "max", 32, "with --key: at most this many messages (≤ 64)")
		f.StringVar(&bo.encoding, "body", "text", "body as text, hex, base64 or none (text falls back to base64 for binary)")
		f.IntVar(&bo.max, "max-body", 0, "show at most this many body bytes (0: all)")
	}
	run := func(full bool) func(cmd *cobra.Command, _ []string) error {
		return func(cmd *cobra.Command, _ []string) error {
			switch bo.encoding {
			case "text", "hex", "base64", "none":
			default:
				return usageError("--body must be text, hex, base64 or none, not %q", bo.encoding)
			}
			if !full && !cmd.Flags().Changed("max-body") {
				bo.max = 64
			}
			return e.withAdmin(func(a *client.Admin) error {
				msgs, err := find(cmd.Context(), a)
				if err != nil {
					return err
				}
				out := make([]messageOut, len(msgs))
				for i, m := range msgs {
					out[i] = messageOf(m, bo)
				}
				return e.emit(out, func(w io.Writer) {
					if !full {
						fmt.Fprintln(w, "MSG ID\tTOPIC\tBROKER\tQUEUE\tOFFSET\tSTORE TIME\tTAGS\tKEYS\tBODY")
						for _, m := range out {
							fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%d\t%s\t%s\t%v\t%s\n", m.MsgID, m.Topic, m.Broker, m.QueueID, m.QueueOffset, m.StoreTime, m.Tags, m.Keys, m.Body)
						}
						return
					}
					for i, m := range out {
						if i > 0 {
							fmt.Fprintln(w)
						}
						fmt.Fprintf(w, "msg id:\t%s\noffset msg id:\t%s\ntopic:\t%s\nqueue:\t%s/%d offset %d\ncommit-log offset:\t%d\n",
							m.MsgID, m.OffsetMsgID, m.Topic, m.Broker, m.QueueID, m.QueueOffset, m.CommitLogOffset)
						fmt.Fprintf(w, "born:\t%s from %s\nstored:\t%s on %s\nreconsume times:\t%d\n", m.BornTime, m.BornHost, m.StoreTime, m.StoreHost, m.ReconsumeTimes)
						for _, k := range slices.Sorted(maps.Keys(m.Properties)) {
							fmt.Fprintf(w, "property %s:\t%s\n", k, m.Properties[k])
						}
						fmt.Fprintf(w, "body (%s, %s):\t%s\n", humanBytes(float64(m.BodySize)), m.BodyEncoding, m.Body)
					}
				})
			})
		}
	}
	query := &cobra.Command{
		Use:   "query (-i ID | -k KEY -t TOPIC | -t TOPIC -q QUEUE --offset N)",
		Short: "Find messages by id, key or queue offset (one line each)",
		Args:  cobra.NoArgs,
		Example: `  ferryctl message query -i 7F000001000051AF0000000000000000
  ferryctl message query -t Orders -i C000020234ECF0AF12DA0324DCBB0001
  ferryctl message query -t Orders -k order-42 --begin 2026-12-01T00:00:00Z
  ferryctl message query -t Orders -q 1 --offset 0`,
		RunE: run(false),
	}
	flags(query)
	printCmd := &cobra.Command{
		Use:     "print (-i ID | -k KEY -t TOPIC | -t TOPIC -q QUEUE --offset N)",
		Short:   "Show messages in full: every property and the body (text, hex or base64)",
		Args:    cobra.NoArgs,
		Example: "  ferryctl message print -t Orders -k order-42 --body hex --max-body 256",
		RunE:    run(true),
	}
	flags(printCmd)
	return group("message", "Find, show, resend and trace stored messages", query, printCmd, newResendCommand(e),
		newTraceCommand(e), newCancelCommand(e))
}
