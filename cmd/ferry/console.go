package main

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"os"

	"github.com/rs/zerolog"

	"github.com/ferrymq/ferry/acl"
	"github.com/ferrymq/ferry/client"
	"github.com/ferrymq/ferry/conf"
	"github.com/ferrymq/ferry/console"
	"github.com/ferrymq/ferry/launch"
)

// consolePath is where the web console is mounted on the HTTP listener.
const consolePath = "/console"

// newConsole builds the web console of mode when console.enable is on (nil handler
// otherwise), with a cluster client of its own that stop closes. It refuses a console
// without an account or without the HTTP listener to serve it, before anything starts.
// `ferry namesrv` serves no console.
func newConsole(mode string, cfg *conf.Config, p ports, log zerolog.Logger) (h http.Handler, stop func() error, err error) {
	stop = func() error { return nil }
	if !cfg.Console.Enable {
		if len(cfg.Console.Users) > 0 {
			log.Warn().Msg("console.users is set but console.enable is false: no console is served")
		}
		return nil, stop, nil
	}
	if mode == launch.ModeNamesrv {
		log.Warn().Msg("console.enable is ignored by ferry namesrv: the console is served by ferry broker and ferry standalone")
		return nil, stop, nil
	}
	if p.http == nil {
		return nil, stop, fmt.Errorf("console.enable needs the HTTP listener: set broker.httpListen (flag --%s)", conf.FlagHTTPListen)
	}
	namesrvs := cfg.Broker.NamesrvAddrs
	if mode == "standalone" && !flagOrEnvSetsNamesrv(cfg) {
		namesrvs = []string{p.namesrv.Addr().String()}
	}
	clog := log.With().Str("component", "console").Logger()
	c, err := client.New(consoleClientOptions(cfg, namesrvs, clog)...)
	if err != nil {
		return nil, stop, fmt.Errorf("console: %w", err)
	}
	o, err := consoleOptions(cfg, c.Admin(), clog)
	if err == nil {
		o.Prefix = consolePath
		h, err = console.New(o)
	}
	if err != nil {
		return nil, stop, errors.Join(err, c.Close())
	}
	return h, c.Close, nil
}

// consoleUsers returns the console's accounts: every console.users entry and, with
// console.aclAccounts, every account of broker.aclFile (read now). No account is an error
// wrapping console.ErrNoAccount that says how to add one.
func consoleUsers(cfg *conf.Config) ([]console.User, error) {
	var users []console.User
	for i, entry := range cfg.Console.Users {
		u, err := console.ParseUser(entry)
		if err != nil {
			return nil, fmt.Errorf("console.users entry %d: %w", i+1, err)
		}
		users = append(users, u)
	}
	if cfg.Console.ACLAccounts {
		data, err := os.ReadFile(cfg.Broker.ACLFile)
		if err != nil {
			return nil, fmt.Errorf("console.aclAccounts: %w", err)
		}
		ac, err := acl.DecodeConfig(data)
		if err != nil {
			return nil, fmt.Errorf("console.aclAccounts: %s: %w", cfg.Broker.ACLFile, err)
		}
		users = append(users, console.UsersFromACL(ac)...)
	}
	if len(users) == 0 {
		return nil, fmt.Errorf("console.enable is true but %w: %s", console.ErrNoAccount, console.NoAccountHelp)
	}
	return users, nil
}

// consoleClientOptions are the options of the client the console of a broker process
// reaches the cluster with: the name servers given (the broker's), signed with
// broker.accessKey when set, over TLS when the broker's port or its name servers
// require it (the certificate not verified, as RocketMQ's clients and ferryctl --tls).
func consoleClientOptions(cfg *conf.Config, namesrvs []string, log zerolog.Logger) []client.Option {
	opts := []client.Option{client.WithNameServers(namesrvs...), client.WithInstanceName("ferry-console"),
		client.WithLogger(log)}
	if b := cfg.Broker; b.AccessKey != "" {
		opts = append(opts, client.WithCredentials(b.AccessKey, b.SecretKey))
	}
	if cfg.Broker.TLSToNamesrv || cfg.Broker.TLSMode == "enforcing" {
		opts = append(opts, client.WithTLS(&tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: true})) //nolint:gosec // documented
	}
	return opts
}

// consoleOptions maps the console section onto console.Options with the accounts
// (consoleUsers) and the cluster client's Admin.
func consoleOptions(cfg *conf.Config, admin *client.Admin, log zerolog.Logger) (console.Options, error) {
	o := console.DefaultOptions()
	users, err := consoleUsers(cfg)
	if err != nil {
		return o, err
	}
	o.Admin, o.Users, o.Logger = admin, users, log
	o.SessionTTL = cfg.Console.SessionTTL
	if cfg.Broker.MsgTraceTopicName != "" {
		o.TraceTopic = cfg.Broker.MsgTraceTopicName
	}
	return o, o.Validate()
}
