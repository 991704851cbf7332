// Package tools is ferryctl, Ferry's command-line tool, as a library: cmd/ferryctl is a
// thin main around Main. Commands are grouped like kubectl's and nats's (`ferryctl topic
// list`, `ferryctl bench produce`); flags follow RocketMQ's mqadmin letters with long names
// (-n/--namesrv, -t/--topic, -g/--group, -i/--id, -k/--key, -q/--queue, -b/--broker).
// Global flags: -n/--namesrv (env FERRY_NAMESRV), -o/--output, and --access-key and
// --secret-key (env FERRY_ACCESS_KEY, FERRY_SECRET_KEY; a flag wins over its variable):
// the ACL 1.0 account that signs every request of every command, for clusters with ACL
// on; --tls connects over TLS. Every command that prints data takes -o table|json|yaml; JSON field names are stable.
// Exit status: 0 success, 1 error, 2 usage.
package tools

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ferrymq/ferry/acl"
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

// The environment variables of the global flags.
const (
	envNamesrv   = "FERRY_NAMESRV"
	envAccessKey = "FERRY_ACCESS_KEY"
	envSecretKey = "FERRY_SECRET_KEY"
)

// credentialsHint is added to a NO_PERMISSION error when no credentials were given.
const credentialsHint = "the cluster may have ACL on: give an account with --access-key and --secret-key " +
	"(or " + envAccessKey + " and " + envSecretKey + ")"

// errUsage marks an error in how the command was called (exit status 2).
var errUsage = errors.New("usage")

// usageError reports a bad call of a command.
func usageError(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errUsage}, args...)...)
}

// env is what every command shares: the global flags and the output streams.
type env struct {
	namesrv   string
	output    string
	accessKey string // ACL account; empty: requests go unsigned
	useTLS    bool   // connect over TLS
	secretKey string
	out       io.Writer
	errOut    io.Writer
	isTTY     bool
}

// clientOptions are the client options the global flags give.
func (e *env) clientOptions() []client.Option {
	var addrs []string
	for a := range strings.SplitSeq(e.namesrv, ";") {
		if a = strings.TrimSpace(a); a != "" {
			addrs = append(addrs, a)
		}
	}
	opts := []client.Option{client.WithNameServers(addrs...)}
	if e.accessKey != "" {
		opts = append(opts, client.WithCredentials(e.accessKey, e.secretKey))
	}
	if e.useTLS {
		// As the official RocketMQ clients: encrypted, the server certificate not verified.
		opts = append(opts, client.WithTLS(&tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: true})) //nolint:gosec // documented
	}
	return opts
}

// newClient connects to the cluster the global flags name, signing its requests with
// the account they name. Every command that talks to the cluster goes through it.
func (e *env) newClient() (*client.Client, error) {
	c, err := client.New(e.clientOptions()...)
	if err != nil {
		return nil, fmt.Errorf("name server %q: %w", e.namesrv, err)
	}
	return c, nil
}

// resolveCredentials takes the keys cmd's flags did not set from the environment and
// checks that both or neither are given.
func (e *env) resolveCredentials(cmd *cobra.Command) error {
	if !cmd.Flags().Changed("access-key") {
		e.accessKey = os.Getenv(envAccessKey)
	}
	if !cmd.Flags().Changed("secret-key") {
		e.secretKey = os.Getenv(envSecretKey)
	}
	if (e.accessKey == "") != (e.secretKey == "") {
		return usageError("--access-key and --secret-key (or %s and %s) go together", envAccessKey, envSecretKey)
	}
	return nil
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
	case (errors.Is(err, client.ErrNoPermission) || errors.Is(err, acl.ErrNoPermission)) && e.accessKey == "":
		fmt.Fprintf(stderr, "ferryctl: %v (%s)\n", err, credentialsHint)
		return exitError
	default:
		fmt.Fprintf(stderr, "ferryctl: %v\n", err)
		return exitError
	}
}

// newRoot builds the command tree.
func newRoot(e *env) *cobra.Command {
	root := &cobra.Command{
		Use:   "ferryctl",
		Short: "Administer and try out a Ferry cluster",
		Long: "ferryctl administers a Ferry (or RocketMQ 4.x) cluster through its name servers,\nsends and consumes test messages, benchmarks, and reads store files offline.\n\n" +
			"A cluster with ACL on refuses unsigned requests (NO_PERMISSION): give an account with\n" +
			"--access-key and --secret-key, or " + envAccessKey + " and " + envSecretKey + " (a flag wins over its\n" +
			"variable); every request of every command is then signed with it (RocketMQ ACL 1.0).",
		SilenceUsage:  true,
		SilenceErrors: true,
		Example: `  ferryctl send -t Orders --tags created --keys order-42 "hello"
  ferryctl consume -t Orders -g demo --count 10
  ferryctl bench produce -t Bench --producers 4 --size 1024 --duration 10s`,
	}
	namesrv := os.Getenv(envNamesrv)
	if namesrv == "" {
		namesrv = defaultNamesrv
	}
	pf := root.PersistentFlags()
	pf.StringVarP(&e.namesrv, "namesrv", "n", namesrv, "name server addresses, ';'-separated (env "+envNamesrv+")")
	pf.StringVarP(&e.output, "output", "o", "table", "output format: table, json or yaml")
	// The keys' defaults stay empty, so --help never shows a secret from the environment;
	// resolveCredentials reads the variables.
	pf.StringVar(&e.accessKey, "access-key", "", "ACL access key: sign every request with this account, for clusters with ACL on (env "+envAccessKey+")")
	pf.StringVar(&e.secretKey, "secret-key", "", "ACL secret key of the --access-key account (env "+envSecretKey+")")
	pf.BoolVar(&e.useTLS, "tls", false, "connect to name servers and brokers over TLS (servers with tlsMode permissive or enforcing; the certificate is not verified, as RocketMQ's clients do)")
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		switch e.output {
		case "table", "json", "yaml":
		default:
			return usageError("-o must be table, json or yaml, not %q", e.output)
		}
		return e.resolveCredentials(cmd)
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError("%v", err) })
	root.AddCommand(newSendCommand(e), newConsumeCommand(e), newBenchCommand(e), newDumpCommand(e))
	root.AddCommand(adminCommands(e)...)
	root.AddCommand(newConsoleCommand(e))
	root.AddCommand(controllerCommands(e)...)
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
