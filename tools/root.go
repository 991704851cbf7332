// Package tools is ferryctl, Ferry's command-line tool, as a library: cmd/ferryctl is a
// thin main around Main. Commands are grouped like kubectl's and nats's (`ferryctl topic
// list`, `ferryctl bench produce`); flags follow RocketMQ's mqadmin letters with long names
// (-n/--namesrv, -t/--topic, -g/--group, -i/--id, -k/--key, -q/--queue, -b/--broker).
// Every command that prints data takes -o table|json|yaml; JSON field names are stable.
// Exit status: 0 success, 1 error, 2 usage.
package tools

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ferrymq/ferry/client"
)

// Exit statuses.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

// defaultNamesrv is the name server ferryctl talks to without -n or FERRY_NAMESRV.
const defaultNamesrv = "127.0.0.1:9876"

// errUsage marks an error in how the command was called (exit status 2).
var errUsage = errors.New("usage")

// usageError reports a bad call of a command.
func usageError(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errUsage}, args...)...)
}

// env is what every command shares: the global flags and the output streams.
type env struct {
	namesrv string
	output  string
	out     io.Writer
	errOut  io.Writer
	isTTY   bool
}

// newClient connects to the cluster the global flags name.
func (e *env) newClient() (*client.Client, error) {
	var addrs []string
	for a := range strings.SplitSeq(e.namesrv, ";") {
		if a = strings.TrimSpace(a); a != "" {
			addrs = append(addrs, a)
		}
	}
	c, err := client.New(client.WithNameServers(addrs...))
	if err != nil {
		return nil, fmt.Errorf("name server %q: %w", e.namesrv, err)
	}
	return c, nil
}

// Main runs ferryctl with args (without the program name) and returns its exit status.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	e := &env{out: stdout, errOut: stderr, isTTY: isTerminal(stdout)}
	root := newRoot(e)
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, errUsage) || isCobraUsageError(err):
		fmt.Fprintf(stderr, "ferryctl: %v (see ferryctl %s --help)\n", err, commandPath(root, args))
		return exitUsage
	default:
		fmt.Fprintf(stderr, "ferryctl: %v\n", err)
		return exitError
	}
}

// newRoot builds the command tree.
func newRoot(e *env) *cobra.Command {
	root := &cobra.Command{
		Use:           "ferryctl",
		Short:         "Administer and try out a Ferry cluster",
		Long:          "ferryctl administers a Ferry (or RocketMQ 4.x) cluster through its name servers,\nsends and consumes test messages, benchmarks, and reads store files offline.",
		SilenceUsage:  true,
		SilenceErrors: true,
		Example: `  ferryctl send -t Orders --tags created --keys order-42 "hello"
  ferryctl consume -t Orders -g demo --count 10
  ferryctl bench produce -t Bench --producers 4 --size 1024 --duration 10s`,
	}
	namesrv := os.Getenv("FERRY_NAMESRV")
	if namesrv == "" {
		namesrv = defaultNamesrv
	}
	root.PersistentFlags().StringVarP(&e.namesrv, "namesrv", "n", namesrv, "name server addresses, ';'-separated (env FERRY_NAMESRV)")
	root.PersistentFlags().StringVarP(&e.output, "output", "o", "table", "output format: table, json or yaml")
	root.PersistentPreRunE = func(*cobra.Command, []string) error {
		switch e.output {
		case "table", "json", "yaml":
			return nil
		}
		return usageError("-o must be table, json or yaml, not %q", e.output)
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError("%v", err) })
	root.AddCommand(newSendCommand(e), newConsumeCommand(e), newBenchCommand(e), newDumpCommand(e))
	root.AddCommand(adminCommands(e)...)
	return root
}

// isCobraUsageError recognises cobra's own argument errors.
func isCobraUsageError(err error) bool {
	msg := err.Error()
	return strings.HasPrefix(msg, "unknown command") || strings.HasPrefix(msg, "accepts ") ||
		strings.HasPrefix(msg, "requires at least") || strings.HasPrefix(msg, "required flag")
}

// commandPath names the command args select, for the usage hint.
func commandPath(root *cobra.Command, args []string) string {
	cmd, _, err := root.Find(args)
	if err != nil || cmd == root {
		return ""
	}
	return strings.TrimPrefix(cmd.CommandPath(), "ferryctl ")
}
