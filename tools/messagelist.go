package tools

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ferrymq/ferry/client"
)

// message list: the messages of a topic stored in a time range, every queue, by store
// time (client.Admin.MessagesByTime).

// defaultListMax is how many messages message list and dlq list show without --max.
const defaultListMax = 1000

// messageListOut is message list's output (stable field names).
type messageListOut struct {
	Topic     string       `json:"topic" yaml:"topic"`
	Begin     string       `json:"begin,omitempty" yaml:"begin,omitempty"`
	End       string       `json:"end,omitempty" yaml:"end,omitempty"`
	Count     int          `json:"count" yaml:"count"`
	Truncated bool         `json:"truncated" yaml:"truncated"`
	Messages  []messageOut `json:"messages" yaml:"messages"`
}

// parseTime reads a time flag: RFC 3339 (2026-12-01T10:00:00Z) or Unix milliseconds.
func parseTime(flag, s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		if ms < 0 {
			return time.Time{}, usageError("--%s %s: Unix milliseconds must not be negative", flag, s)
		}
		return time.UnixMilli(ms), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, usageError("--%s %q: want an RFC 3339 time like 2026-12-01T10:00:00Z or Unix milliseconds", flag, s)
	}
	return t, nil
}

// rfc3339 formats t for output; "" for the zero time.
func rfc3339(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// truncationNote is what a listing cut at limit says on stderr.
func truncationNote(limit int) string {
	return fmt.Sprintf("ferryctl: showing the first %d messages; more are stored in the range (raise --max or narrow the range)", limit)
}

func newMessageListCommand(e *env) *cobra.Command {
	var (
		topic, begin, end string
		maxNum            int
		bo                bodyOptions
	)
	cmd := &cobra.Command{
		Use:   "list -t TOPIC [--begin TIME] [--end TIME] [--max N]",
		Short: "The messages of a topic stored in a time range, every queue, by store time",
		Long: "list reads every queue of the topic on every broker, from the first message stored at or\n" +
			"after --begin (SEARCH_OFFSET_BY_TIMESTAMP) forward until --end, and prints the messages\n" +
			"ordered by store time. TIME is RFC 3339 or Unix milliseconds; without --begin the list\n" +
			"starts at the oldest stored message, without --end it runs to the newest. At most --max\n" +
			"messages (the oldest) are shown; a note on stderr says when more were stored. Nothing is\n" +
			"committed: the reads are pulls as the TOOLS_CONSUMER group.",
		Example: `  ferryctl message list -t Orders --begin 2026-12-01T10:00:00Z --end 2026-12-01T11:00:00Z
  ferryctl message list -t Orders --begin 1764583200000 --max 50 -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if topic == "" {
				return usageError("-t/--topic is required")
			}
			if maxNum <= 0 {
				return usageError("--max must be positive, not %d", maxNum)
			}
			if err := bo.check(); err != nil {
				return err
			}
			b, err := parseTime("begin", begin)
			if err != nil {
				return err
			}
			en, err := parseTime("end", end)
			if err != nil {
				return err
			}
			if !b.IsZero() && !en.IsZero() && b.After(en) {
				return usageError("--begin (%s) is after --end (%s)", rfc3339(b), rfc3339(en))
			}
			return e.withAdmin(func(a *client.Admin) error {
				msgs, truncated, err := a.MessagesByTime(cmd.Context(), topic, b, en, maxNum)
				if err != nil {
					return err
				}
				out := messageListOut{Topic: topic, Begin: rfc3339(b), End: rfc3339(en), Count: len(msgs),
					Truncated: truncated, Messages: make([]messageOut, len(msgs))}
				for i, m := range msgs {
					out.Messages[i] = messageOf(m, bo)
				}
				if truncated {
					fmt.Fprintln(e.errOut, truncationNote(maxNum))
				}
				return e.emit(out, func(w io.Writer) {
					fmt.Fprintln(w, "STORE TIME\tBROKER\tQUEUE\tOFFSET\tMSG ID\tTAGS\tKEYS\tBODY")
					for _, m := range out.Messages {
						fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\n", m.StoreTime, m.Broker, m.QueueID, m.QueueOffset, m.MsgID, m.Tags,
							strings.Join(m.Keys, " "), m.Body)
					}
				})
			})
		},
	}
	f := cmd.Flags()
	f.StringVarP(&topic, "topic", "t", "", "topic (required)")
	f.StringVar(&begin, "begin", "", "stored at or after this time (RFC 3339 or Unix ms; default: the oldest message)")
	f.StringVar(&end, "end", "", "stored at or before this time (RFC 3339 or Unix ms; default: no limit)")
	f.IntVar(&maxNum, "max", defaultListMax, "show at most this many messages (the oldest)")
	bodyFlags(cmd, &bo)
	return cmd
}

// bodyFlags adds --body and --max-body (default 64 bytes shown) to cmd.
func bodyFlags(cmd *cobra.Command, bo *bodyOptions) {
	cmd.Flags().StringVar(&bo.encoding, "body", "text", "body as text, hex, base64 or none (text falls back to base64 for binary)")
	cmd.Flags().IntVar(&bo.max, "max-body", 64, "show at most this many body bytes (0: all)")
}

// check validates the --body flag.
func (o bodyOptions) check() error {
	switch o.encoding {
	case "text", "hex", "base64", "none":
		return nil
	}
	return usageError("--body must be text, hex, base64 or none, not %q", o.encoding)
}
