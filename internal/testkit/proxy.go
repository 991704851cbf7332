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
	// cutReplies counts the reads from the target still to be dropped (see CutReplies);
	// repliesCut counts those dropped so far.
	cutReplies, repliesCut int
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

// CutReplies makes the next n reads from the target close their connection instead of
// being passed on: what the client sent has arrived, its answer is lost (a request stored
// by the server whose reply never reaches the client).
func (p *Proxy) CutReplies(n int) {
	p.mu.Lock()
	p.cutReplies = n
	p.mu.Unlock()
}

// RepliesCut returns how many reads from the target CutReplies has dropped.
func (p *Proxy) RepliesCut() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.repliesCut
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
		p.wg.Go(func() { p.pipe(out, in, 0, false) })
		p.wg.Go(func() { p.pipe(in, out, limit, true) })
	}
}

// pipe copies src to dst, holding what it read while the proxy is frozen (dropped if the
// proxy is closed meanwhile), and closes both after limit bytes when limit > 0. fromTarget
// marks the target's direction, where CutReplies applies.
func (p *Proxy) pipe(dst, src net.Conn, limit int64, fromTarget bool) {
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
			if fromTarget && p.cutReplies > 0 && !closed {
				p.cutReplies--
				p.repliesCut++
				closed = true
			}
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
