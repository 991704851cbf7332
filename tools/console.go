package tools

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/ferrymq/ferry/acl"
	"github.com/ferrymq/ferry/console"
)

// ferryctl console: the web console (package console) against any cluster, and the
// hash-password helper for console.users.

// envConsoleUsers holds console accounts for `ferryctl console`, ';'-separated, as
// FERRY_CONSOLE_USERS does for ferry.
const envConsoleUsers = "FERRY_CONSOLE_USERS"

// consoleShutdown bounds the wait for running requests when ferryctl console stops.
const consoleShutdown = 5 * time.Second

func newConsoleCommand(e *env) *cobra.Command {
	var (
		listen, certFile, keyFile, aclFile string
		users                              []string
		ttl                                time.Duration
	)
	cmd := &cobra.Command{
		Use:   "console [--listen ADDR] (--user NAME:ROLE:HASH ... | --acl-file FILE)",
		Short: "Serve the web console for the cluster -n names (login required)",
		Long: "console serves Ferry's web console at http://LISTEN/console/ for the cluster whose name servers\n" +
			"-n names, talking to it as every ferryctl command does (--access-key/--secret-key sign its\n" +
			"requests, --tls encrypts them). Login is required: accounts come from --user NAME:ROLE:HASH\n" +
			"(ROLE readwrite or readonly; HASH from `ferryctl console hash-password`), from " + envConsoleUsers + "\n" +
			"(';'-separated), and from --acl-file (an ACL accounts file: the access key logs in with its\n" +
			"secret key; admin accounts are read-write). Without any account it refuses to start.\n" +
			"With --cert and --key it serves HTTPS. It runs until interrupted.",
		Args: cobra.NoArgs,
		Example: `  ferryctl console hash-password          # type a password; prints its bcrypt hash
  ferryctl -n 10.0.0.5:9876 console --listen 127.0.0.1:9881 --user 'alice:readwrite:$2a$12$...'`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if (certFile == "") != (keyFile == "") {
				return usageError("--cert and --key go together")
			}
			all, err := consoleUsers(users, aclFile)
			if err != nil {
				return err
			}
			c, err := e.newClient()
			if err != nil {
				return err
			}
			defer func() { _ = c.Close() }()
			o := console.DefaultOptions()
			o.Admin, o.Users, o.SessionTTL = c.Admin(), all, ttl
			o.Logger = zerolog.New(e.errOut).With().Timestamp().Logger()
			con, err := console.New(o)
			if err != nil {
				return err
			}
			return serveConsole(cmd.Context(), e, con, listen, certFile, keyFile)
		},
	}
	f := cmd.Flags()
	f.StringVar(&listen, "listen", "127.0.0.1:9881", "HTTP address to serve the console on")
	f.StringArrayVar(&users, "user", nil, "an account NAME:ROLE:BCRYPT-HASH, ROLE readwrite or readonly (repeatable; env "+envConsoleUsers+")")
	f.StringVar(&aclFile, "acl-file", "", "let the accounts of this ACL accounts file log in (secret key as password; admin = read-write)")
	f.DurationVar(&ttl, "session-ttl", 8*time.Hour, "how long a login lasts")
	f.StringVar(&certFile, "cert", "", "PEM certificate: serve HTTPS (with --key)")
	f.StringVar(&keyFile, "key", "", "PEM private key of --cert")
	cmd.AddCommand(newHashPasswordCommand(e))
	return cmd
}

// consoleUsers gathers the accounts of the flags, the environment and the ACL file.
func consoleUsers(flags []string, aclFile string) ([]console.User, error) {
	entries := flags
	for u := range strings.SplitSeq(os.Getenv(envConsoleUsers), ";") {
		if u = strings.TrimSpace(u); u != "" {
			entries = append(entries, u)
		}
	}
	var out []console.User
	for _, entry := range entries {
		u, err := console.ParseUser(entry)
		if err != nil {
			return nil, usageError("%v", err)
		}
		out = append(out, u)
	}
	if aclFile != "" {
		data, err := os.ReadFile(aclFile)
		if err != nil {
			return nil, fmt.Errorf("--acl-file: %w", err)
		}
		ac, err := acl.DecodeConfig(data)
		if err != nil {
			return nil, fmt.Errorf("--acl-file %s: %w", aclFile, err)
		}
		out = append(out, console.UsersFromACL(ac)...)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: give --user NAME:ROLE:HASH (`ferryctl console hash-password` prints a hash), "+
			"%s, or --acl-file", console.ErrNoAccount, envConsoleUsers)
	}
	return out, nil
}

// serveConsole serves con under /console/ on listen until ctx ends.
func serveConsole(ctx context.Context, e *env, con http.Handler, listen, certFile, keyFile string) error {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("--listen: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/console/", con)
	mux.Handle("/{$}", http.RedirectHandler("/console/", http.StatusSeeOther))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	scheme := "http"
	if certFile != "" {
		scheme = "https"
	}
	fmt.Fprintf(e.out, "console: %s://%s/console/\n", scheme, ln.Addr())
	done := make(chan error, 1)
	go func() {
		if certFile != "" {
			done <- srv.ServeTLS(ln, certFile, keyFile)
		} else {
			done <- srv.Serve(ln)
		}
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), consoleShutdown)
	defer cancel()
	err = srv.Shutdown(sctx)
	if serr := <-done; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return err
}

func newHashPasswordCommand(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "hash-password",
		Short: "Print the bcrypt hash of a password read from stdin, for console.users or --user",
		Long: "hash-password reads one line from stdin (without echo on a terminal) and prints its bcrypt\n" +
			"hash (cost 12), to be written into console.users as NAME:ROLE:HASH (ROLE readwrite or\n" +
			"readonly) or given to ferryctl console --user. The password needs at least 8 characters.",
		Args:    cobra.NoArgs,
		Example: "  ferryctl console hash-password\n  printf '%s\\n' \"$PASSWORD\" | ferryctl console hash-password",
		RunE: func(cmd *cobra.Command, _ []string) error {
			pw, err := readPassword(cmd.InOrStdin(), e.errOut)
			if err != nil {
				return err
			}
			h, err := console.HashPassword(pw)
			if err != nil {
				return usageError("%v", err)
			}
			fmt.Fprintln(e.out, h)
			return nil
		},
	}
}

// readPassword reads one line from in: from a terminal without echo, after a prompt.
func readPassword(in io.Reader, prompt io.Writer) (string, error) {
	if f, ok := in.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		fmt.Fprint(prompt, "password: ")
		b, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(prompt)
		if err != nil {
			return "", fmt.Errorf("read password: %w", err)
		}
		return string(b), nil
	}
	line, err := bufio.NewReader(in).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("read password: %w", err)
	}
	return strings.TrimRight(line, "\r\n"), nil
}
