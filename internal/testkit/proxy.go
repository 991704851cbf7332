package testkit

import (
	"net"
	"sync"
	"testing"
)

// Proxy forwards TCP connections from a 127.0.0.1 port to a target, and lets a test cut
// the link between two servers in three ways: freeze it (while frozen nothing it reads is
// passed on: the bytes wait, the connections stay open), cut the connections it holds
// (Cut), or have each new connection die after so many bytes from the target, in general
// inside a frame (SetCutAfter). It is closed at the test's cleanup.
type Proxy struct {
	ln     net.Listener
	target string
	wg     sync.WaitGroup
	mu     sync.Mutex
	cond   *sync.Cond
	frozen bool
	closed bool
	// holding counts the reads held while frozen (tests of the proxy wait on it).
	holding int
	conns   []net.Conn
	// cutAfter, when > 0, closes a new connection after that many bytes from the target.
	cutAfter int64
}

// StartProxy starts a proxy to target.
func StartProxy(tb testing.TB, target string) *Proxy {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	p := &Proxy{ln: ln, target: target}
	p.cond = sync.NewCond(&p.mu)
	p.wg.Go(p.accept)
	tb.Cleanup(p.Close)
	return p
}

// Addr is the proxy's address.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// SetFrozen stops (true) or resumes (false) forwarding.
func (p *Proxy) SetFrozen(f bool) {
	p.mu.Lock()
	p.frozen = f
	p.cond.Broadcast()
	p.mu.Unlock()
}

// SetCutAfter makes the connections accepted from now on close after n bytes from the
// target have passed (0: never).
func (p *Proxy) SetCutAfter(n int64) {
	p.mu.Lock()
	p.cutAfter = n
	p.mu.Unlock()
}

// Cut closes the connections the proxy holds; it goes on accepting new ones.
func (p *Proxy) Cut() {
	p.mu.Lock()
	conns := p.conns
	p.conns = nil
	p.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
	}
}

// Close stops the proxy and closes its connections; it is idempotent.
func (p *Proxy) Close() {
	p.mu.Lock()
	p.closed = true
	p.cond.Broadcast()
	p.mu.Unlock()
	_ = p.ln.Close()
	p.Cut()
	p.wg.Wait()
}

func (p *Proxy) accept() {
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		out, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = in.Close()
			continue
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			_ = in.Close()
			_ = out.Close()
			return
		}
		p.conns = append(p.conns, in, out)
		limit := p.cutAfter
		p.mu.Unlock()
		p.wg.Go(func() { p.pipe(out, in, 0) })
		p.wg.Go(func() { p.pipe(in, out, limit) })
	}
}

// pipe copies src to dst, holding what it read while the proxy is frozen (dropped if the
// proxy is closed meanwhile), and closes both after limit bytes when limit > 0.
func (p *Proxy) pipe(dst, src net.Conn, limit int64) {
	defer func() {
		_ = dst.Close()
		_ = src.Close()
	}()
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			p.holding++
			for p.frozen && !p.closed {
				p.cond.Wait()
			}
			p.holding--
			closed := p.closed
			p.mu.Unlock()
			if closed { // a cut link delivers nothing it held, as a real one would not
				return
			}
			last := false
			if limit > 0 && int64(n) >= limit {
				n, last = int(limit), true
			}
			limit -= int64(n)
			if _, werr := dst.Write(buf[:n]); werr != nil || last {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
