package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/pflag"
)

// flagPprofListen is --pprof-listen. It is a flag only, with no configuration key: a
// debugging aid of the command, not a setting of the servers.
const flagPprofListen = "pprof-listen"

// pprofReadHeaderTimeout bounds reading a profiling request's header.
const pprofReadHeaderTimeout = 10 * time.Second

// bindPprofFlag registers --pprof-listen on fs.
func bindPprofFlag(fs *pflag.FlagSet) {
	fs.String(flagPprofListen, "",
		"serve net/http/pprof (/debug/pprof/) on this address host:port while the servers run; empty: off (flag only, no config key)")
}

// pprofShutdownTimeout bounds waiting for running profiling requests at shutdown.
const pprofShutdownTimeout = time.Second

// withPprof runs serve with the profiling server of --pprof-listen (if set in fs) running
// alongside: started before serve, stopped after it returns.
func withPprof(fs *pflag.FlagSet, log zerolog.Logger, serve func() error) error {
	addr, err := fs.GetString(flagPprofListen)
	if err != nil {
		return err
	}
	p, err := startPprof(addr, log)
	if err != nil {
		return err
	}
	err = serve()
	ctx, cancel := context.WithTimeout(context.Background(), pprofShutdownTimeout)
	defer cancel()
	return errors.Join(err, p.Shutdown(ctx))
}

// pprofServer serves net/http/pprof on its own listener and mux (never
// http.DefaultServeMux) from one owned goroutine.
type pprofServer struct {
	srv  *http.Server
	ln   net.Listener
	done chan struct{}
}

// startPprof listens on addr and serves the profiling endpoints until Shutdown. An empty
// addr returns a nil server, whose Shutdown does nothing.
func startPprof(addr string, log zerolog.Logger) (*pprofServer, error) {
	if addr == "" {
		return nil, nil // profiling off: a nil server, whose Shutdown does nothing
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("pprof listen: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index) // also the named profiles: heap, allocs, goroutine, …
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	p := &pprofServer{
		srv:  &http.Server{Handler: mux, ReadHeaderTimeout: pprofReadHeaderTimeout},
		ln:   ln,
		done: make(chan struct{}),
	}
	go func() {
		defer close(p.done)
		if err := p.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error().Err(err).Msg("pprof server stopped")
		}
	}()
	log.Info().Str("listen", ln.Addr().String()).Msg("pprof listening")
	return p, nil
}

// Shutdown stops the profiling server: it waits for running requests until ctx ends, then
// closes what is left (a CPU profile in progress), and returns once the serving goroutine
// has exited.
func (p *pprofServer) Shutdown(ctx context.Context) error {
	if p == nil {
		return nil
	}
	err := p.srv.Shutdown(ctx)
	if err != nil {
		err = p.srv.Close()
	}
	<-p.done
	return err
}
