package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/ferrymq/ferry/client"
)

func newConsumeCommand(e *env) *cobra.Command {
	var (
		topic, group, expr, from string
		sql                      string
		count                    int
		timeout                  time.Duration
	)
	cmd := &cobra.Command{
		Use:   "consume -t TOPIC [flags]",
		Short: "Consume messages and print them as they arrive",
		Long: "consume joins a consumer group (clustering: the group's members share the queues)\n" +
			"and prints each message: a line per message in a table, one JSON object per line\n" +
			"with -o json. It stops after --count messages, after --timeout without one, or on Ctrl-C,\n" +
			"committing the offsets of what it printed. --expr filters by tag; --sql instead by an\n" +
			"SQL92 expression over the message properties (the broker needs enablePropertyFilter;\n" +
			"a refused expression is an error naming it).",
		Args: cobra.NoArgs,
		Example: `  ferryctl consume -t Orders --count 10
  ferryctl consume -t Orders -g billing --expr "created || paid" --from first -o json
  ferryctl consume -t Orders -g big-orders --sql "amount > 100 AND region = 'eu'"`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if topic == "" {
				return usageError("-t/--topic is required")
			}
			if cmd.Flags().Changed("sql") {
				if cmd.Flags().Changed("expr") {
					return usageError("--expr and --sql are exclusive: one subscription per consumer")
				}
				if strings.TrimSpace(sql) == "" {
					return usageError("--sql needs an expression")
				}
				expr = client.SQL92(sql)
			}
			start := client.ConsumeFromLastOffset
			switch from {
			case "first":
				start = client.ConsumeFromFirstOffset
			case "last":
			default:
				return usageError("--from must be first or last, not %q", from)
			}
			c, err := e.newClient()
			if err != nil {
				return err
			}
			defer func() { _ = c.Close() }()
			ctx, cancel := context.WithCancel(cmd.Context())
			defer cancel()
			var mu sync.Mutex
			seen := 0
			activity := make(chan struct{}, 1)
			header := false
			handler := func(hctx context.Context, msgs []*client.MessageExt) client.ConsumeResult {
				mu.Lock()
				if count > 0 && seen >= count {
					mu.Unlock()
					// Not printed: hold it until the consumer closes, which leaves it
					// unconsumed (uncommitted) for the group.
					cancel()
					<-hctx.Done()
					return client.ConsumeRetryLater
				}
				defer mu.Unlock()
				for _, m := range msgs {
					seen++
					e.printConsumed(consumedOf(m), &header)
				}
				select {
				case activity <- struct{}{}:
				default:
				}
				if count > 0 && seen >= count {
					cancel()
				}
				return client.ConsumeSuccess
			}
			// One handler goroutine: each queue's messages print in queue order, and the
			// messages past --count stay unconsumed, so the group's lag is what is left.
			pc, err := c.NewPushConsumer(group, topic, expr, handler, client.WithConsumeFrom(start),
				client.WithConsumeGoroutines(1))
			if err != nil {
				return err
			}
			if err := pc.Start(ctx); err != nil {
				return err
			}
			idle := time.NewTimer(timeout)
			defer idle.Stop()
		wait:
			for {
				select {
				case <-ctx.Done():
					break wait
				case <-activity:
					idle.Reset(timeout)
				case <-idle.C:
					break wait
				}
			}
			return pc.Close()
		},
	}
	f := cmd.Flags()
	f.StringVarP(&topic, "topic", "t", "", "topic to consume (required)")
	f.StringVarP(&group, "group", "g", "ferryctl-consumer", "consumer group")
	f.StringVar(&expr, "expr", "*", "tag expression (\"*\", \"a || b\")")
	f.StringVar(&sql, "sql", "", "SQL92 expression over message properties (instead of --expr)")
	f.StringVar(&from, "from", "last", "where a new group starts: first or last")
	f.IntVar(&count, "count", 0, "stop after this many messages (0: no limit)")
	f.DurationVar(&timeout, "timeout", 10*time.Second, "stop after this long without a message")
	return cmd
}

// printConsumed writes one consumed message: a JSON line, a YAML document or a table row.
func (e *env) printConsumed(m consumed, header *bool) {
	switch e.output {
	case "json":
		b, _ := json.Marshal(m) // a struct of strings and numbers always marshals
		fmt.Fprintf(e.out, "%s\n", b)
	case "yaml":
		_ = e.emit(m, nil)
		fmt.Fprintln(e.out, "---")
	default:
		if !*header {
			fmt.Fprintln(e.out, "QUEUE  OFFSET  MSG ID                            TAGS      BODY")
			*header = true
		}
		body := m.Body
		if len(body) > 80 {
			body = body[:77] + "..."
		}
		fmt.Fprintf(e.out, "%-5d  %-6d  %-32s  %-8s  %s\n", m.QueueID, m.QueueOffset, m.MsgID, m.Tags, body)
	}
}
