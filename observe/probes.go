// Package observe serves a Ferry process's HTTP endpoints for operators (one listener
// per process, broker.httpListen or namesrv.httpListen):
//
//	/healthz  200 while the process is alive and none of its servers stopped accepting
//	          connections on its own (remoting.Server.Failed); else 503
//	/readyz   200 only when clients can use the process: the store recovered, the broker
//	          registered with a name server (a slave also connected to its master), the
//	          name server serving; else 503 with a JSON body naming what is missing
//
// The parts expose their states through narrow methods (broker.Broker.Readiness,
// nameserver.Server.Readiness, ServeErr); this package names them. Other handlers are
// mounted on the same mux with Server.Handle before Start: /metrics, and the web console
// under /console/ (package console) when console.enable is set.
package observe

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"
)

// Part is one server of the process as the probes see it.
type Part interface {
	// Missing names what the part lacks for clients to use it, each as a short phrase;
	// empty when it is ready.
	Missing() []string
	// ServeErr is why the part stopped accepting connections on its own; nil while it
	// accepts them.
	ServeErr() error
}

// PartFuncs makes a Part of functions; a nil function reports nothing (ready, healthy).
type PartFuncs struct {
	// MissingFunc is Part.Missing.
	MissingFunc func() []string
	// ServeErrFunc is Part.ServeErr.
	ServeErrFunc func() error
}

// Missing calls MissingFunc.
func (f PartFuncs) Missing() []string {
	if f.MissingFunc == nil {
		return nil
	}
	return f.MissingFunc()
}

// ServeErr calls ServeErrFunc.
func (f PartFuncs) ServeErr() error {
	if f.ServeErrFunc == nil {
		return nil
	}
	return f.ServeErrFunc()
}

// Pending is a healthy part that is not ready yet for the reason it holds: a broker
// whose store is being recovered, before the broker exists.
type Pending string

// Missing returns the reason.
func (p Pending) Missing() []string { return []string{string(p)} }

// ServeErr is nil: a part being prepared has not failed.
func (Pending) ServeErr() error { return nil }

// Report is the answer of a probe: whether the process passes it and, by part, what it
// lacks. It is /readyz's and /healthz's JSON body.
type Report struct {
	// OK is whether the probe passes (HTTP 200).
	OK bool `json:"ok"`
	// Missing names, by part ("broker", "namesrv"), what the part lacks; absent when OK.
	Missing map[string][]string `json:"missing,omitempty"`
}

// Probes holds the parts of a process by name, set as they start. Its zero value is not
// usable; see NewProbes. It is safe for concurrent use.
type Probes struct {
	mu      sync.Mutex
	parts   map[string]Part
	onReady func()
	ready   bool // onReady was called
}

// NewProbes returns probes without parts (ready and healthy until parts are set).
// onReady, if not nil, is called once, the first time Readiness finds every part ready,
// before that answer is returned: the log line that says the process is ready is
// written there, so that it precedes any 200 from /readyz.
func NewProbes(onReady func()) *Probes {
	return &Probes{parts: map[string]Part{}, onReady: onReady}
}

// Set sets (or replaces) the part called name.
func (p *Probes) Set(name string, part Part) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.parts[name] = part
}

// Readiness asks every part what it lacks.
func (p *Probes) Readiness() Report {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := Report{OK: true}
	for _, name := range p.names() {
		if m := p.parts[name].Missing(); len(m) > 0 {
			r.add(name, m...)
		}
	}
	if r.OK && !p.ready && p.onReady != nil {
		p.onReady() // under the lock: at most once, before the first ready answer
	}
	if r.OK {
		p.ready = true
	}
	return r
}

// Health asks every part whether it stopped accepting connections.
func (p *Probes) Health() Report {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := Report{OK: true}
	for _, name := range p.names() {
		if err := p.parts[name].ServeErr(); err != nil {
			r.add(name, "failed: "+err.Error())
		}
	}
	return r
}

// names are the parts' names in order (p.mu held).
func (p *Probes) names() []string { return slices.Sorted(maps.Keys(p.parts)) }

// add records that part lacks what.
func (r *Report) add(part string, what ...string) {
	if r.Missing == nil {
		r.Missing = map[string][]string{}
	}
	r.OK = false
	r.Missing[part] = append(r.Missing[part], what...)
}

// WaitReady asks Readiness every interval until the process is ready (true; onReady has
// then run) or ctx ends (false). The caller owns the goroutine that runs it.
func (p *Probes) WaitReady(ctx context.Context, interval time.Duration) bool {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if p.Readiness().OK {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
	}
}
