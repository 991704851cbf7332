package tools

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ferrymq/ferry/client"
)

// `broker drain` and `broker undrain`: WIPE_WRITE_PERM_OF_BROKER and
// ADD_WRITE_PERM_OF_BROKER on every name server of -n.

// drainOut is the result of broker drain and undrain.
type drainOut struct {
	Broker      string            `json:"broker" yaml:"broker"`
	Drained     bool              `json:"drained" yaml:"drained"` // the state asked for
	NameServers []drainNameSrvOut `json:"nameServers" yaml:"nameServers"`
}

// drainNameSrvOut is one name server's answer.
type drainNameSrvOut struct {
	NameServer string `json:"nameServer" yaml:"nameServer"`
	Topics     int    `json:"topics" yaml:"topics"` // topics hosting the broker group there
}

// newBrokerDrainCommand returns `broker drain` (drain) or `broker undrain`.
func newBrokerDrainCommand(e *env, drain bool) *cobra.Command {
	var broker string
	use, short := "undrain", "Give a drained broker group write permission back on every name server"
	if drain {
		use, short = "drain", "Stop producers sending to a broker group (consumers keep reading it), on every name server"
	}
	cmd := &cobra.Command{
		Use:   use + " -b BROKER",
		Short: short,
		Long: short + ".\n\nThe name servers answer routes with the group's queues read-only (drain) or with the perms\n" +
			"its broker registered (undrain); producers follow at their next route refresh (30 s by\n" +
			"default). A drain lasts until undrain: broker registrations and name-server restarts\n" +
			"keep it. `ferryctl kv list -s FERRY_DRAINED_BROKERS` lists the drained groups.",
		Example: "  ferryctl broker " + use + " -b broker-a\n  ferryctl broker " + use + " -b broker-a -n 'ns1:9876;ns2:9876' -o json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if strings.TrimSpace(broker) == "" {
				return usageError("-b BROKER (a broker group name) is required")
			}
			return e.withAdmin(func(a *client.Admin) error {
				if drain {
					if err := e.checkBrokerKnown(cmd.Context(), broker); err != nil {
						return err
					}
				}
				op := a.UndrainBroker
				if drain {
					op = a.DrainBroker
				}
				counts, opErr := op(cmd.Context(), broker)
				out := drainOut{Broker: broker, Drained: drain, NameServers: []drainNameSrvOut{}}
				for _, c := range counts {
					out.NameServers = append(out.NameServers, drainNameSrvOut{NameServer: c.NameServer, Topics: c.Topics})
				}
				if len(counts) == 0 && opErr != nil {
					return opErr
				}
				if err := e.emit(out, func(w io.Writer) {
					fmt.Fprintln(w, "NAME SERVER\tBROKER\tSTATE\tTOPICS")
					state := "writable"
					if drain {
						state = "drained"
					}
					for _, r := range out.NameServers {
						fmt.Fprintf(w, "%s\t%s\t%s\t%d\n", r.NameServer, broker, state, r.Topics)
					}
				}); err != nil {
					return err
				}
				return opErr
			})
		},
	}
	cmd.Flags().StringVarP(&broker, "broker", "b", "", "broker group name (required)")
	return cmd
}

// checkBrokerKnown returns an error unless some name server of -n knows broker group
// broker (each is asked: a client asks only one name server for the cluster).
func (e *env) checkBrokerKnown(ctx context.Context, broker string) error {
	known := map[string]bool{}
	var errs []error
	for a := range strings.SplitSeq(e.namesrv, ";") {
		if a = strings.TrimSpace(a); a == "" {
			continue
		}
		c, err := client.New(append(e.clientOptions(), client.WithNameServers(a))...)
		if err != nil {
			return fmt.Errorf("name server %q: %w", a, err)
		}
		ci, err := c.Admin().ClusterInfo(ctx)
		_ = c.Close()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if _, ok := ci.Brokers[broker]; ok {
			return nil
		}
		for name := range ci.Brokers {
			known[name] = true
		}
	}
	if len(errs) > 0 && len(known) == 0 {
		return errors.Join(errs...)
	}
	return fmt.Errorf("broker group %q is not registered with the name servers (known: %s)",
		broker, strings.Join(slices.Sorted(maps.Keys(known)), ", "))
}
