package remoting

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"io"
	"net"
	"runtime"
	"slices"
	"strconv"
	"testing"
	"time"
)

// transportSetups are the ways a connection can be served, for the TLS benchmarks:
//
//   - plain: a TLSDisabled port, netpoll accepts and serves (today's path);
//   - plain-handoff: a TLSPermissive port, a plain client: routed by the std accept loop,
//     then served by netpoll;
//   - plain-std: the same, with plain connections kept on the std path (the design not
//     chosen; also the fallback for listeners without descriptors);
//   - tls: a TLS client (TLSEnforcing; a permissive port serves TLS the same way).
func transportSetups(tb testing.TB) []struct {
	name  string
	setup echoSetup
} {
	pki := newTestPKI(tb)
	return []struct {
		name  string
		setup echoSetup
	}{
		{"plain", echoSetup{}},
		{"plain-handoff", echoSetup{server: pki.serverTLS(TLSPermissive)}},
		{"plain-std", echoSetup{server: pki.serverTLS(TLSPermissive), plainViaStd: true}},
		{"tls", echoSetup{server: pki.serverTLS(TLSEnforcing), client: pki.clientTLS()}},
	}
}

// BenchmarkEchoTransports is BenchmarkEcho (msgpack headers, 64 requests in flight on one
// connection) on each transport, with 1 KiB and 256 KiB bodies.
func BenchmarkEchoTransports(b *testing.B) {
	for _, size := range []int{1 << 10, 256 << 10} {
		for _, tr := range transportSetups(b) {
			b.Run(tr.name+"/"+strconv.Itoa(size>>10)+"KiB", func(b *testing.B) {
				benchEcho(b, SerializeMsgpack, 64, size, tr.setup)
			})
		}
	}
}

// BenchmarkConnect measures one connection's life on each transport: dial (and TLS
// handshake, ECDSA P-256), one request and its response, close. It is what permissive
// routing (peek, dup, handoff) and the handshake cost per connection.
func BenchmarkConnect(b *testing.B) {
	for _, tr := range transportSetups(b) {
		b.Run(tr.name, func(b *testing.B) {
			opts := DefaultServerOptions()
			opts.TLS = tr.setup.server
			s, err := NewServer(opts)
			if err != nil {
				b.Fatal(err)
			}
			s.plainViaStd = tr.setup.plainViaStd
			if err := s.Handle(codeEcho, "", echo); err != nil {
				b.Fatal(err)
			}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			if err := s.Start(ln); err != nil {
				b.Fatal(err)
			}
			defer func() {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				_ = s.Shutdown(ctx)
			}()
			addr := s.Addr().String()
			frame := smallEcho(b, 1)
			buf := make([]byte, 4096)
			b.ReportAllocs()
			for b.Loop() {
				var conn net.Conn
				if tr.setup.client != nil {
					conn, err = tls.Dial("tcp", addr, tr.setup.client)
				} else {
					conn, err = net.Dial("tcp", addr)
				}
				if err != nil {
					b.Fatal(err)
				}
				if _, err := conn.Write(frame); err != nil {
					b.Fatal(err)
				}
				if _, err := conn.Read(buf); err != nil {
					b.Fatal(err)
				}
				_ = conn.Close()
			}
		})
	}
}

// BenchmarkIdleConnMemory measures what an idle connection costs the server on each
// transport: 1000 connections each send one request and stay open; it reports the growth
// of heap and goroutine stacks per connection (client side included: its raw sockets hold
// little, a TLS client's state is counted too, so tls overstates the server's share) and
// the goroutines per connection. Run it alone:
//
//	go test -run '^$' -bench IdleConnMemory -benchtime 1x ./remoting/
func BenchmarkIdleConnMemory(b *testing.B) {
	const conns = 1000
	for _, tr := range transportSetups(b) {
		b.Run(tr.name, func(b *testing.B) {
			for range b.N {
				idleConnMemory(b, conns, tr.setup)
			}
		})
	}
}

func idleConnMemory(b *testing.B, conns int, setup echoSetup) {
	opts := DefaultServerOptions()
	opts.TLS = setup.server
	s, err := NewServer(opts)
	if err != nil {
		b.Fatal(err)
	}
	s.plainViaStd = setup.plainViaStd
	if err := s.Handle(codeEcho, "", echo); err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Start(ln); err != nil {
		b.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
	}()
	addr := s.Addr().String()
	frame := smallEcho(b, 1)
	mem := func() (uint64, int) {
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapInuse + ms.StackInuse, runtime.NumGoroutine()
	}
	open := make([]net.Conn, 0, conns)
	defer func() {
		for _, c := range open {
			_ = c.Close()
		}
	}()
	before, g0 := mem()
	buf := make([]byte, 4096)
	for range conns {
		var conn net.Conn
		if setup.client != nil {
			conn, err = tls.Dial("tcp", addr, setup.client)
		} else {
			conn, err = net.Dial("tcp", addr)
		}
		if err != nil {
			b.Fatal(err)
		}
		open = append(open, conn)
		if _, err := conn.Write(frame); err != nil {
			b.Fatal(err)
		}
		if _, err := conn.Read(buf); err != nil {
			b.Fatal(err)
		}
	}
	after, g1 := mem()
	b.ReportMetric(float64(after-before)/float64(conns)/1024, "KiB/conn")
	b.ReportMetric(float64(g1-g0)/float64(conns), "goroutines/conn")
}

// BenchmarkSmallBursts writes a burst of small echo requests in one write and waits for
// all their responses, one burst at a time, on the plain, permissive-handoff and TLS
// transports. The responses complete on different workers and so leave in separate
// writes while the client has nothing to send: the pattern (a send answered, then a
// server-initiated frame or the next response) that a server socket without TCP_NODELAY
// stalls for a delayed acknowledgement. It reports bursts/s and the burst latency.
func BenchmarkSmallBursts(b *testing.B) {
	for _, burst := range []int{2, 4} {
		for _, tr := range transportSetups(b) {
			if tr.setup.plainViaStd {
				continue
			}
			b.Run(tr.name+"/burst-"+strconv.Itoa(burst), func(b *testing.B) {
				smallBursts(b, burst, tr.setup)
			})
		}
	}
}

func smallBursts(b *testing.B, burst int, setup echoSetup) {
	opts := DefaultServerOptions()
	opts.TLS = setup.server
	s, err := NewServer(opts)
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Handle(codeEcho, "", echo); err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Start(ln); err != nil {
		b.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
	}()
	var conn net.Conn
	if setup.client != nil {
		conn, err = tls.Dial("tcp", s.Addr().String(), setup.client)
	} else {
		conn, err = net.Dial("tcp", s.Addr().String())
	}
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	var frames []byte
	for i := range burst {
		frames = append(frames, smallEcho(b, int32(i+1))...)
	}
	br := bufio.NewReader(conn)
	var head [4]byte
	lat := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	start := time.Now()
	for b.Loop() {
		t0 := time.Now()
		if _, err := conn.Write(frames); err != nil {
			b.Fatal(err)
		}
		for range burst {
			if _, err := io.ReadFull(br, head[:]); err != nil {
				b.Fatal(err)
			}
			if _, err := br.Discard(int(binary.BigEndian.Uint32(head[:]))); err != nil {
				b.Fatal(err)
			}
		}
		lat = append(lat, time.Since(t0))
	}
	elapsed := time.Since(start)
	slices.Sort(lat)
	if len(lat) == 0 {
		return
	}
	b.ReportMetric(float64(len(lat))/elapsed.Seconds(), "bursts/s")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
	b.ReportMetric(float64(lat[len(lat)-1].Microseconds()), "max-µs")
}
