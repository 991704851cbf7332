package tools

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/ferrymq/ferry/client"
)

// consumer clone-offsets: a group's committed offsets in a topic copied to another group
// (client.Admin.CloneOffsets).

// cloneOut is one queue of consumer clone-offsets' output (stable field names).
type cloneOut struct {
	Topic   string `json:"topic" yaml:"topic"`
	Broker  string `json:"broker" yaml:"broker"`
	QueueID int32  `json:"queueId" yaml:"queueId"`
	Offset  int64  `json:"offset" yaml:"offset"`
	Copied  bool   `json:"copied" yaml:"copied"`
}

func newCloneOffsetsCommand(e *env) *cobra.Command {
	var src, dst, topic string
	cmd := &cobra.Command{
		Use:   "clone-offsets --src GROUP --dst GROUP -t TOPIC",
		Short: "Copy a group's committed offsets in a topic to another group, queue by queue",
		Long: "clone-offsets reads the source group's committed offset of every queue of the topic\n" +
			"(QUERY_CONSUMER_OFFSET) and stores it as the destination group's (UPDATE_CONSUMER_OFFSET),\n" +
			"as mqadmin cloneGroupOffset does. Queues where the source has no offset are left alone.\n" +
			"Online consumers of the destination group overwrite the copies with their next commit:\n" +
			"stop them first.",
		Example: "  ferryctl consumer clone-offsets --src billing --dst billing-v2 -t Orders",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if src == "" || dst == "" || topic == "" {
				return usageError("--src, --dst and -t/--topic are required")
			}
			return e.withAdmin(func(a *client.Admin) error {
				copies, err := a.CloneOffsets(cmd.Context(), src, dst, topic)
				if err != nil {
					return err
				}
				rows := make([]cloneOut, len(copies))
				n := 0
				for i, c := range copies {
					rows[i] = cloneOut{Topic: c.Queue.Topic, Broker: c.Queue.BrokerName, QueueID: c.Queue.QueueID,
						Offset: c.Offset, Copied: c.Offset >= 0}
					if rows[i].Copied {
						n++
					}
				}
				return e.emit(rows, func(w io.Writer) {
					fmt.Fprintln(w, "TOPIC\tBROKER\tQUEUE\tOFFSET")
					for _, r := range rows {
						off := fmt.Sprint(r.Offset)
						if !r.Copied {
							off = "none (left alone)"
						}
						fmt.Fprintf(w, "%s\t%s\t%d\t%s\n", r.Topic, r.Broker, r.QueueID, off)
					}
					fmt.Fprintf(w, "%d of %d queues copied from %s to %s\n", n, len(rows), src, dst)
				})
			})
		},
	}
	cmd.Flags().StringVar(&src, "src", "", "the group to copy from (required)")
	cmd.Flags().StringVar(&dst, "dst", "", "the group to copy to (required)")
	cmd.Flags().StringVarP(&topic, "topic", "t", "", "topic (required)")
	return cmd
}
