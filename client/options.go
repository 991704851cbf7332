package client

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/rs/zerolog"

	"github.com/ferrymq/ferry/acl/sign"
)

// Options configure a Client. Build them with New's functional options; the zero value
// of a field means its default.
type Options struct {
	// NameServers are the name servers' host:port addresses (required).
	NameServers []string
	// InstanceName tells clients of one process apart in the client id (default: the pid).
	InstanceName string
	// RequestTimeout bounds a request whose context has no deadline (3 s).
	RequestTimeout time.Duration
	// RouteRefresh is how often cached topic routes are refreshed (30 s).
	RouteRefresh time.Duration
	// Heartbeat is how often the client tells its brokers about its groups (30 s).
	Heartbeat time.Duration
	// Logger receives the client's log lines (silent by default).
	Logger zerolog.Logger
	// Credentials, when set, sign every request the client sends — to name servers and
	// brokers, call, async and oneway alike — with RocketMQ's ACL 1.0 (AccessKey,
	// Signature and, when set, SecurityToken ext fields; see sign.Credentials.SignFields),
	// as servers with ACL on require. Nil: requests go unsigned. The client copies them
	// in New.
	Credentials *sign.Credentials
	// TLS, when set, makes every connection — to name servers and brokers — a TLS one
	// with this configuration, for servers with tlsMode permissive or enforcing. Nil:
	// plain TCP.
	TLS *tls.Config
	// Namespace, when set, puts the client's topics and groups in a namespace the way
	// the official clients do ("<ns>%topic", retry topics "%RETRY%<ns>%group"; see
	// namespace.go), so namespaced Ferry and official clients share them. Characters of
	// [a-zA-Z0-9_-]. Empty: none.
	Namespace string
	// Trace, when set, turns message trace on: producers and push consumers record
	// their sends and consumes in a trace topic (trace.go; WithTrace). Nil: off.
	Trace *TraceOptions
}

// Option sets one field of Options.
type Option func(*Options)

// WithNameServers sets the name servers (host:port).
func WithNameServers(addrs ...string) Option {
	return func(o *Options) { o.NameServers = append([]string(nil), addrs...) }
}

// WithInstanceName sets the instance part of the client id.
func WithInstanceName(name string) Option { return func(o *Options) { o.InstanceName = name } }

// WithRequestTimeout bounds requests whose context has no deadline.
func WithRequestTimeout(d time.Duration) Option { return func(o *Options) { o.RequestTimeout = d } }

// WithRouteRefresh sets how often cached topic routes are refreshed.
func WithRouteRefresh(d time.Duration) Option { return func(o *Options) { o.RouteRefresh = d } }

// WithHeartbeat sets how often the client sends heartbeats to its brokers.
func WithHeartbeat(d time.Duration) Option { return func(o *Options) { o.Heartbeat = d } }

// WithCredentials signs every request with an ACL 1.0 account's access key and secret
// key (see Options.Credentials). For a security token as well, set Options.Credentials
// with an Option of your own.
func WithCredentials(accessKey, secretKey string) Option {
	return func(o *Options) { o.Credentials = &sign.Credentials{AccessKey: accessKey, SecretKey: secretKey} }
}

// WithTLS connects to name servers and brokers over TLS with cfg (see Options.TLS).
func WithTLS(cfg *tls.Config) Option { return func(o *Options) { o.TLS = cfg } }

// WithNamespace puts the client's topics and groups in namespace ns (see
// Options.Namespace).
func WithNamespace(ns string) Option { return func(o *Options) { o.Namespace = ns } }

// WithLogger injects a logger.
func WithLogger(l zerolog.Logger) Option { return func(o *Options) { o.Logger = l } }

func defaultOptions() Options {
	return Options{
		RequestTimeout: 3 * time.Second,
		RouteRefresh:   30 * time.Second,
		Heartbeat:      30 * time.Second,
		Logger:         zerolog.Nop(),
	}
}

// ErrInvalidOptions is wrapped by every Validate error.
var ErrInvalidOptions = errors.New("client: invalid options")

// Validate reports every invalid option, joined.
func (o *Options) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidOptions}, args...)...))
	}
	if len(o.NameServers) == 0 {
		bad("at least one name server is needed")
	}
	for _, a := range o.NameServers {
		if _, _, err := net.SplitHostPort(a); err != nil {
			bad("name server %q: %v", a, err)
		}
	}
	if o.RequestTimeout <= 0 || o.RouteRefresh <= 0 || o.Heartbeat <= 0 {
		bad("RequestTimeout, RouteRefresh and Heartbeat must be positive")
	}
	if c := o.Credentials; c != nil && (c.AccessKey == "" || c.SecretKey == "") {
		bad("Credentials need both an access key and a secret key")
	}
	if err := validateNamespace(o.Namespace); err != nil {
		errs = append(errs, err)
	}
	if o.Trace != nil {
		errs = append(errs, o.Trace.Validate())
	}
	return errors.Join(errs...)
}
