// Command ferry runs Ferry's servers: `ferry namesrv`, `ferry broker`, `ferry standalone`
// (a name server and a broker in one process, data under --data-dir, ./data by default)
// and `ferry controller` (a node of the Raft cluster that elects broker masters).
//
// Configuration comes from defaults, then the --config YAML file, then FERRY_* environment
// variables, then explicit flags (see package conf); `ferry config [mode]` prints every
// setting with its effective value, its source, its default and its meaning. SIGINT or
// SIGTERM shuts down gracefully within 10 s: stop accepting, finish in-flight requests,
// flush, persist offsets and configs, unregister from the name servers.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cloudwego/netpoll"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/spf13/pflag"

	"github.com/ferrymq/ferry/broker"
	"github.com/ferrymq/ferry/conf"
	"github.com/ferrymq/ferry/controller"
	"github.com/ferrymq/ferry/internal/logging"
	"github.com/ferrymq/ferry/internal/mmap"
	"github.com/ferrymq/ferry/launch"
	"github.com/ferrymq/ferry/nameserver"
	"github.com/ferrymq/ferry/observe"
)

// shutdownTimeout bounds a graceful shutdown.
const shutdownTimeout = 10 * time.Second

const usage = `usage: ferry <command> [flags]

commands:
  standalone   name server and broker in one process (data under --data-dir, default ./data)
  namesrv      name server only
  broker       broker only (registers with --namesrv-addr)
  controller   a controller node: elects each broker group's master (automatic failover;
               the controller: section of --config FILE)
  config       print every setting (value, source, default, meaning) and exit:
               ferry config [namesrv|broker|standalone|controller] [--config FILE] [--json]
  scrub        check a stopped broker's store (every record's CRC, every consume-queue
               unit), quarantine damage, re-derive damaged files and report; exit status
               0 clean, 3 damage found, 1 could not run: ferry scrub [--data-dir DIR]
  version      print the version and exit
  help         print this help and exit

flags:
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is main without the process exit; it serves until ctx ends.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("ferry", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	conf.BindFlags(fs)
	bindPprofFlag(fs)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	if len(args) == 0 {
		fs.Usage()
		return 2
	}
	mode := args[0]
	switch mode {
	case "help", "-h", "--help":
		fs.SetOutput(stdout)
		fmt.Fprint(stdout, usage)
		fs.PrintDefaults()
		return 0
	case "version", "--version":
		fmt.Fprintln(stdout, version())
		return 0
	}
	if mode == "config" {
		fs.Bool(flagJSON, false, "with config: print JSON instead of a table")
	}
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0 // pflag printed the usage
		}
		fmt.Fprintf(stderr, "ferry: %v (see ferry help)\n", err)
		return 2
	}
	extra := fs.Args()
	sections, _ := configSections("") // config without a mode: every section
	serverMode := mode                // whose defaults apply: the mode run, or the one config shows
	if mode == "scrub" {
		serverMode = "standalone" // a store's existing segment size is kept, as standalone does
	}
	if mode == "config" && len(extra) > 0 {
		var ok bool
		if sections, ok = configSections(extra[0]); !ok {
			fmt.Fprintf(stderr, "ferry: config takes namesrv, broker, standalone or controller, not %q (see ferry help)\n", extra[0])
			return 2
		}
		serverMode, extra = extra[0], extra[1:]
	}
	if len(extra) > 0 {
		fmt.Fprintf(stderr, "ferry: unexpected argument %q (see ferry help)\n", extra[0])
		return 2
	}
	cfg, settings, err := conf.Explain(conf.LoadOptions{Flags: fs, Server: serverMode})
	if err == nil && serverMode == "standalone" {
		settings, err = applyStandaloneDefaults(cfg, settings)
	}
	if err != nil {
		fmt.Fprintln(stderr, "ferry:", err)
		return 1
	}
	log, err := logging.New(logging.Options{Level: cfg.Log.Level, Format: cfg.Log.Format, Output: stderr})
	if err != nil {
		fmt.Fprintln(stderr, "ferry:", err)
		return 1
	}
	// netpoll logs through its own process-wide logger (for example a peer resetting a
	// connection); route it into ours at debug level instead of raw stderr lines.
	netpoll.SetLoggerOutput(netpollLog{log.With().Str("component", "netpoll").Logger()})
	for _, u := range conf.UnknownEnvVars(os.Environ()) {
		ev := log.Warn().Str("variable", u.Name)
		if u.Suggestion != "" {
			ev = ev.Str("didYouMean", u.Suggestion)
		}
		ev.Msg("environment variable configures nothing (not a Ferry setting)")
	}
	switch mode {
	case "config":
		asJSON, _ := fs.GetBool(flagJSON)
		if err := printSettings(stdout, selectSettings(settings, sections), asJSON); err != nil {
			fmt.Fprintln(stderr, "ferry:", err)
			return 1
		}
		return 0
	case "scrub":
		code, err := runScrub(ctx, *cfg, log, stdout)
		if err != nil {
			log.Error().Err(err).Msg("scrub failed")
			fmt.Fprintln(stderr, "ferry:", err)
		}
		return code
	case "standalone", "namesrv", "broker", launch.ModeController:
		if err := withPprof(fs, log, func() error { return serve(ctx, mode, cfg, log, mmap.OSFS{}) }); err != nil {
			log.Error().Err(err).Msg("ferry stopped with an error")
			fmt.Fprintln(stderr, "ferry:", err)
			return 1
		}
		return 0
	default:
		fmt.Fprintf(stderr, "ferry: unknown command %q\n", mode)
		fs.Usage()
		return 2
	}
}

// version describes this build: the module version (or "devel"), the VCS revision when
// the binary was built from a checkout, and the Go version.
func version() string {
	v, rev, goVersion := "devel", "", runtime.Version()
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				rev = " " + s.Value[:12]
			}
		}
	}
	return "ferry " + v + rev + " (" + goVersion + ")"
}

// netpollLog adapts netpoll's log output to a zerolog logger.
type netpollLog struct{ log zerolog.Logger }

// Write logs one netpoll line at debug level.
func (n netpollLog) Write(p []byte) (int, error) {
	n.log.Debug().Msg(strings.TrimSpace(string(p)))
	return len(p), nil
}

// stopper is a server that shuts down gracefully, and says when it stopped accepting
// connections on its own.
type stopper interface {
	Shutdown(ctx context.Context) error
	Failed() <-chan struct{}
	ServeErr() error
}

// readyPoll is how often serve asks whether the process became ready, to log it.
const readyPoll = 20 * time.Millisecond

// serve starts the servers of mode, with the broker's store on fsys, and shuts them down
// when ctx ends. It binds every port of mode first, so a port in use fails at once,
// before the store is opened or even created; the broker's port then holds the
// connections that arrive while the store is prepared (recovery of a large log can take
// seconds) and serves them once it is ready. The HTTP listener (broker.httpListen,
// namesrv.httpListen or controller.httpListen, package observe) serves from the start:
// /readyz answers 503 naming what is missing until clients can use the process (for a
// controller: a Raft leader known and its log applied), and "ferry is ready" is logged
// at the moment it turns 200 — not when the ports open.
func serve(ctx context.Context, mode string, cfg *conf.Config, log zerolog.Logger, fsys mmap.FS) error {
	if mode == "standalone" && cfg.NameServer.HTTPListen != "" {
		log.Warn().Str("namesrv.httpListen", cfg.NameServer.HTTPListen).
			Msg("ignored by ferry standalone, whose one HTTP listener is broker.httpListen")
	}
	ports, err := bindPorts(mode, cfg)
	if err != nil {
		return err
	}
	probes := observe.NewProbes(func() { log.Info().Str("mode", mode).Msg("ferry is ready") })
	// Every part this mode runs is not ready until it is started: set before anything can
	// ask (the HTTP listener, the wait below).
	if ports.namesrv != nil {
		probes.Set(partNamesrv, observe.Pending("name server not started"))
	}
	if ports.broker != nil {
		probes.Set(partBroker, observe.Pending("store not recovered"))
	}
	if ports.controller != nil {
		probes.Set(partController, observe.Pending("controller not started"))
	}
	con, stopConsole, err := newConsole(mode, cfg, ports, log)
	if err != nil {
		return errors.Join(err, ports.close())
	}
	obs, reg, err := startObserve(mode, cfg, probes, log, ports.http, con)
	if err != nil {
		return errors.Join(err, stopConsole(), ports.close())
	}
	var started []stopper
	waitCtx, stopWait := context.WithCancel(ctx)
	var waitDone sync.WaitGroup
	shutdown := func() error {
		stopWait()
		waitDone.Wait()
		sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
		defer cancel()
		var errs []error
		for i := len(started) - 1; i >= 0; i-- { // broker before name server
			errs = append(errs, started[i].Shutdown(sctx))
		}
		// The HTTP listener last: probes see the servers stop; then the console's client.
		return errors.Join(append(errs, obs.Shutdown(sctx), stopConsole())...)
	}
	if ports.namesrv != nil {
		ns, err := startNameServer(cfg, log, ports.namesrv)
		if err != nil {
			return errors.Join(err, closeListener(ports.namesrv), ports.closeBroker(), shutdown())
		}
		started = append(started, ns)
		probes.Set(partNamesrv, observe.PartFuncs{
			MissingFunc:  func() []string { return ns.Readiness().Missing() },
			ServeErrFunc: ns.ServeErr,
		})
		if mode == "standalone" && !flagOrEnvSetsNamesrv(cfg) {
			cfg.Broker.NamesrvAddrs = []string{ns.Addr()}
		}
	}
	if ports.broker != nil && cfg.Broker.ControllerMode {
		a, err := startAgent(cfg, log, ports.broker, fsys)
		if err != nil {
			return errors.Join(err, ports.closeBroker(), shutdown())
		}
		started = append(started, a)
		probes.Set(partBroker, observe.PartFuncs{MissingFunc: a.Missing, ServeErrFunc: a.ServeErr})
		if reg != nil {
			reg.MustRegister(observe.NewBrokerCollector(agentBroker{a}))
		}
	} else if ports.broker != nil {
		log.Info().Str("listen", ports.broker.Addr().String()).Msg("broker port bound; preparing the store (not ready yet)")
		// The probe reads the broker's own readiness from before it serves: its Start logs
		// "broker started" before returning, and a probe answered after that line must
		// not still say the store is being prepared.
		b, err := startBroker(cfg, log, ports.broker, fsys, func(b *broker.Broker) {
			probes.Set(partBroker, observe.PartFuncs{MissingFunc: func() []string { return b.Readiness().Missing() }})
		})
		if err != nil {
			return errors.Join(err, ports.closeBroker(), shutdown())
		}
		started = append(started, b)
		probes.Set(partBroker, observe.PartFuncs{
			MissingFunc:  func() []string { return b.Readiness().Missing() },
			ServeErrFunc: b.ServeErr,
		})
		if reg != nil {
			reg.MustRegister(observe.NewBrokerCollector(b))
		}
	}
	if ports.controller != nil {
		cs, err := startController(cfg, log, ports.controller, ports.raft)
		if err != nil {
			return errors.Join(err, closeListener(ports.controller), closeListener(ports.raft), shutdown())
		}
		started = append(started, cs)
		probes.Set(partController, observe.PartFuncs{MissingFunc: cs.Missing, ServeErrFunc: cs.ServeErr})
	}
	waitDone.Go(func() { probes.WaitReady(waitCtx, readyPoll) }) // logs "ferry is ready"
	if failed := waitFailed(ctx, started); failed != nil {
		// A server that accepts no connection is an outage that looks healthy: stop, so
		// that the supervisor (systemd, the container runtime) restarts the process.
		err := fmt.Errorf("ferry: a server stopped accepting connections: %w", failed.ServeErr())
		log.Error().Err(err).Msg("shutting down")
		return errors.Join(err, shutdown())
	}
	log.Info().Msg("shutting down")
	return shutdown()
}

// The names of the parts in /readyz and /healthz answers.
const (
	partNamesrv    = "namesrv"
	partBroker     = "broker"
	partController = "controller"
)

// startObserve serves /healthz, /readyz and /metrics on ln (the HTTP listener of mode),
// and the web console under /console/ when con is not nil, and returns the metrics
// registry, which holds the runtime collectors until the broker's is added; a nil ln
// (off) gives a nil server, whose Shutdown does nothing, and no registry.
func startObserve(mode string, cfg *conf.Config, probes *observe.Probes, log zerolog.Logger, ln net.Listener,
	con http.Handler) (*observe.Server, *prometheus.Registry, error) {
	if ln == nil {
		return nil, nil, nil
	}
	o, err := launch.ObserveOptions(mode, cfg, probes, log.With().Str("component", "http").Logger())
	if err != nil {
		return nil, nil, errors.Join(err, closeListener(ln))
	}
	s, err := observe.New(o)
	if err != nil {
		return nil, nil, errors.Join(err, closeListener(ln))
	}
	reg := observe.NewRegistry()
	s.Handle("GET /metrics", s.MetricsHandler(reg))
	paths := "/healthz, /readyz, /metrics"
	if con != nil {
		s.Handle(consolePath+"/", con)
		paths += ", " + consolePath + "/"
	}
	s.Start(ln)
	log.Info().Str("listen", ln.Addr().String()).Msg("HTTP listening: " + paths)
	return s, reg, nil
}

// waitFailed waits until ctx ends (nil) or one of servers stops accepting connections
// on its own (that server). There are at most two: a name server and a broker (or one
// controller).
func waitFailed(ctx context.Context, servers []stopper) stopper {
	var a, b <-chan struct{} // nil: never ready
	if len(servers) > 0 {
		a = servers[0].Failed()
	}
	if len(servers) > 1 {
		b = servers[1].Failed()
	}
	select {
	case <-ctx.Done():
		return nil
	case <-a:
		return servers[0]
	case <-b:
		return servers[1]
	}
}

// flagOrEnvSetsNamesrv reports whether the broker's name-server list was configured
// explicitly rather than left at its default.
func flagOrEnvSetsNamesrv(cfg *conf.Config) bool {
	def := conf.DefaultBrokerConfig().NamesrvAddrs
	if len(def) != len(cfg.Broker.NamesrvAddrs) {
		return true
	}
	for i := range def {
		if def[i] != cfg.Broker.NamesrvAddrs[i] {
			return true
		}
	}
	return false
}

// startNameServer starts the name server on ln.
func startNameServer(cfg *conf.Config, log zerolog.Logger, ln net.Listener) (*nameserver.Server, error) {
	nso, err := launch.NameServerOptions(cfg.NameServer, log.With().Str("server", "namesrv").Logger())
	if err != nil {
		return nil, err
	}
	nso.KVConfigPath = launch.NameServerKVConfigPath(cfg)
	ns, err := nameserver.New(nso)
	if err != nil {
		return nil, err
	}
	if err := ns.Start(ln); err != nil {
		return nil, err
	}
	log.Info().Str("listen", ns.Addr()).Msg("name server listening (not ready yet)")
	return ns, nil
}

// startController opens the controller's Raft node on raftLn (bootstrapping the cluster
// of controller.peers on first start) and serves its port on ln.
func startController(cfg *conf.Config, log zerolog.Logger, ln, raftLn net.Listener) (*controller.Server, error) {
	o, err := launch.ControllerOptions(cfg.Controller, log.With().Str("server", "controller").Logger())
	if err != nil {
		return nil, err
	}
	o.Raft.Listener = raftLn
	s, err := controller.NewServer(o)
	if err != nil {
		return nil, err
	}
	if err := s.Start(ln); err != nil {
		return nil, errors.Join(err, s.Shutdown(context.Background()))
	}
	log.Info().Str("listen", s.Addr()).Str("raftListen", raftLn.Addr().String()).Str("nodeId", cfg.Controller.NodeID).
		Msg("controller listening (not ready until a Raft leader is known)")
	return s, nil
}

// startBroker opens the store (on fsys) and the broker's metadata, calls beforeStart with the
// broker, then serves on ln.
func startBroker(cfg *conf.Config, log zerolog.Logger, ln net.Listener, fsys mmap.FS,
	beforeStart func(*broker.Broker)) (*broker.Broker, error) {
	o, err := launch.BrokerOptions(cfg.Broker, fsys, log.With().Str("server", "broker").Logger())
	if err != nil {
		return nil, err
	}
	b, err := broker.New(o)
	if err != nil {
		return nil, err
	}
	beforeStart(b)
	if err := b.Start(ln); err != nil {
		return nil, errors.Join(err, b.Shutdown(context.Background()))
	}
	return b, nil
}
