package tools

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ferrymq/ferry/client"
	"github.com/ferrymq/ferry/message"
)

// sendResult is one sent message in the output of send (JSON/YAML field names are
// stable).
type sendResult struct {
	MsgID       string `json:"msgId" yaml:"msgId"`
	OffsetMsgID string `json:"offsetMsgId" yaml:"offsetMsgId"`
	Topic       string `json:"topic" yaml:"topic"`
	Broker      string `json:"broker" yaml:"broker"`
	QueueID     int32  `json:"queueId" yaml:"queueId"`
	QueueOffset int64  `json:"queueOffset" yaml:"queueOffset"`
}

func newSendCommand(e *env) *cobra.Command {
	var (
		topic, tags, group string
		keys               []string
		props              []string
		delay, count       int
		deliverAt          string
		deliverAfter       time.Duration
	)
	cmd := &cobra.Command{
		Use:   "send -t TOPIC [flags] BODY|-",
		Short: "Send messages (the body from the argument, or stdin with -)",
		Args:  cobra.ExactArgs(1),
		Example: `  ferryctl send -t Orders "hello"
  ferryctl send -t Orders --tags created --keys order-42 -p color=red "hello"
  echo '{"id":42}' | ferryctl send -t Orders -
  ferryctl send -t Orders --delay 3 --count 10 "later"
  ferryctl send -t Orders --deliver-after 90s "in a minute and a half"
  ferryctl send -t Orders --deliver-at 2030-01-02T15:04:05Z "at that time"`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if topic == "" {
				return usageError("-t/--topic is required")
			}
			timer, err := timerOf(cmd, delay, deliverAt, deliverAfter)
			if err != nil {
				return err
			}
			body := []byte(args[0])
			if args[0] == "-" {
				var err error
				if body, err = io.ReadAll(os.Stdin); err != nil {
					return fmt.Errorf("read stdin: %w", err)
				}
			}
			c, err := e.newClient()
			if err != nil {
				return err
			}
			defer func() { _ = c.Close() }()
			p, err := c.NewProducer(group)
			if err != nil {
				return err
			}
			defer func() { _ = p.Close() }()
			var out []sendResult
			for range max(count, 1) {
				m := message.NewMessage(topic, body)
				if tags != "" {
					m.SetTags(tags)
				}
				if len(keys) > 0 {
					m.SetKeys(keys...)
				}
				if delay > 0 {
					m.SetDelayLevel(delay)
				}
				timer(m)
				for _, kv := range props {
					k, v, ok := strings.Cut(kv, "=")
					if !ok || k == "" {
						return usageError("-p takes key=value, not %q", kv)
					}
					m.SetProperty(k, v)
				}
				r, err := p.Send(cmd.Context(), m)
				if err != nil {
					return fmt.Errorf("send to %s: %w", topic, err)
				}
				out = append(out, sendResult{r.MsgID, r.OffsetMsgID, r.Topic, r.BrokerName, r.QueueID, r.QueueOffset})
			}
			return e.emit(out, func(w io.Writer) {
				fmt.Fprintln(w, "MSG ID\tOFFSET MSG ID\tTOPIC\tBROKER\tQUEUE\tOFFSET")
				for _, r := range out {
					fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d\t%d\n", r.MsgID, r.OffsetMsgID, r.Topic, r.Broker, r.QueueID, r.QueueOffset)
				}
			})
		},
	}
	f := cmd.Flags()
	f.StringVarP(&topic, "topic", "t", "", "topic to send to (required)")
	f.StringVar(&tags, "tags", "", "message tag")
	f.StringSliceVar(&keys, "keys", nil, "message keys (comma-separated; findable with message query --key)")
	f.StringArrayVarP(&props, "property", "p", nil, "user property key=value (repeatable)")
	f.IntVar(&delay, "delay", 0, "delay level (1-18 with the default levels: 1s 5s 10s 30s 1m …)")
	f.StringVar(&deliverAt, "deliver-at", "", "deliver at this time (RFC 3339, e.g. 2030-01-02T15:04:05Z; a timer message)")
	f.DurationVar(&deliverAfter, "deliver-after", 0, "deliver this long after the broker stores it (e.g. 90s, 1500ms; a timer message)")
	f.IntVar(&count, "count", 1, "how many copies to send")
	f.StringVarP(&group, "group", "g", "ferryctl-producer", "producer group")
	return cmd
}

// timerOf checks send's --delay, --deliver-at and --deliver-after (at most one of them)
// and returns what sets the chosen timer on a message.
func timerOf(cmd *cobra.Command, delay int, at string, after time.Duration) (func(*message.Message), error) {
	n := 0
	for _, name := range []string{"delay", "deliver-at", "deliver-after"} {
		if cmd.Flags().Changed(name) {
			n++
		}
	}
	switch {
	case n > 1:
		return nil, usageError("--delay, --deliver-at and --deliver-after are exclusive")
	case cmd.Flags().Changed("deliver-after"):
		if after <= 0 {
			return nil, usageError("--deliver-after must be positive, not %v", after)
		}
		return func(m *message.Message) { m.SetDeliverAfter(after) }, nil
	case cmd.Flags().Changed("deliver-at"):
		t, err := time.Parse(time.RFC3339Nano, at)
		if err != nil {
			return nil, usageError("--deliver-at takes an RFC 3339 time such as 2030-01-02T15:04:05Z, not %q", at)
		}
		return func(m *message.Message) { m.SetDeliverAt(t) }, nil
	case delay < 0:
		return nil, usageError("--delay must be a level ≥ 1, not %d", delay)
	}
	return func(*message.Message) {}, nil
}

// consumed is one received message in the output of consume.
type consumed struct {
	MsgID          string            `json:"msgId" yaml:"msgId"`
	Topic          string            `json:"topic" yaml:"topic"`
	QueueID        int32             `json:"queueId" yaml:"queueId"`
	QueueOffset    int64             `json:"queueOffset" yaml:"queueOffset"`
	Tags           string            `json:"tags,omitempty" yaml:"tags,omitempty"`
	Keys           []string          `json:"keys,omitempty" yaml:"keys,omitempty"`
	Properties     map[string]string `json:"properties,omitempty" yaml:"properties,omitempty"`
	StoreTime      string            `json:"storeTime" yaml:"storeTime"`
	ReconsumeTimes int32             `json:"reconsumeTimes" yaml:"reconsumeTimes"`
	Body           string            `json:"body" yaml:"body"`
}

func consumedOf(m *client.MessageExt) consumed {
	return consumed{MsgID: m.MsgID, Topic: m.Topic, QueueID: m.Queue.QueueID, QueueOffset: m.QueueOffset,
		Tags: m.Tags(), Keys: m.Keys(), Properties: m.Properties, StoreTime: m.StoreTime.UTC().Format("2006-01-02T15:04:05.000Z"),
		ReconsumeTimes: m.ReconsumeTimes, Body: string(m.Body)}
}
