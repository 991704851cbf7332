package tools

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/ferrymq/ferry/client"
)

// cancelOut is `message cancel`'s JSON: the outcome (CANCELLED, ALREADY_CANCELLED), the
// message id, its topic and the broker group that held it.
type cancelOut struct {
	Status string `json:"status"`
	MsgID  string `json:"msgId"`
	Topic  string `json:"topic"`
	Broker string `json:"broker"`
}

// newCancelCommand is `message cancel`: Admin.CancelScheduled.
func newCancelCommand(e *env) *cobra.Command {
	var id, topic string
	cmd := &cobra.Command{
		Use:   "cancel -i ID [-t TOPIC]",
		Short: "Cancel a delayed or timer message that is not delivered yet",
		Long: `Cancels the delayed (delay level) or timer message with the msgId its send returned,
so that it is never delivered. Without -t every master of the cluster is asked. A message
delivered already, or one no broker holds, is an error (exit status 1).`,
		Args:    cobra.NoArgs,
		Example: "  ferryctl message cancel -t Orders -i C000020234ECF0AF12DA0324DCBB0001",
		RunE: func(cmd *cobra.Command, _ []string) error {
			if id == "" {
				return usageError("-i/--id is required")
			}
			return e.withAdmin(func(a *client.Admin) error {
				res, err := a.CancelScheduled(cmd.Context(), topic, id)
				switch {
				case errors.Is(err, client.ErrAlreadyDelivered):
					return fmt.Errorf("message %s was already delivered: %w", id, err)
				case errors.Is(err, client.ErrScheduledNotFound):
					return fmt.Errorf("no scheduled message %s: %w", id, err)
				case err != nil:
					return err
				}
				out := cancelOut{Status: "CANCELLED", MsgID: id, Topic: res.Topic, Broker: res.Broker}
				if res.AlreadyCancelled {
					out.Status = "ALREADY_CANCELLED"
				}
				return e.emit(out, func(w io.Writer) {
					fmt.Fprintln(w, "STATUS\tMSG ID\tTOPIC\tBROKER")
					fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", out.Status, out.MsgID, out.Topic, out.Broker)
				})
			})
		},
	}
	cmd.Flags().StringVarP(&id, "id", "i", "", "the message id (msgId, the UNIQ_KEY) its send returned")
	cmd.Flags().StringVarP(&topic, "topic", "t", "", "the message's topic (default: ask every master)")
	return cmd
}
