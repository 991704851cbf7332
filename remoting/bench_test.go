package remoting

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"net"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"
)

// benchHeader is a typical send response header.
func benchHeader(st SerializeType) *Command {
	return &Command{
		Code: 0, Language: LanguageGo, Version: Version, Opaque: 123456, Flag: FlagResponse,
		ExtFields: ExtOf(map[string]string{
			"msgId":         "7F00000100002A9F0000000000000ABC",
			"queueId":       "3",
			"queueOffset":   "1024",
			"transactionId": "7F0000010001B4D2C3A1000000000001",
		}),
		SerializeType: st,
	}
}

var benchCodecs = []SerializeType{SerializeJSON, SerializeRocketMQ, SerializeMsgpack}

func BenchmarkHeaderEncode(b *testing.B) {
	for _, st := range benchCodecs {
		b.Run(st.String(), func(b *testing.B) {
			var c Codec
			cmd := benchHeader(st)
			buf := make([]byte, 0, 512)
			b.ReportAllocs()
			for b.Loop() {
				var err error
				if buf, err = c.appendFrameHead(buf[:0], cmd); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkHeaderDecode(b *testing.B) {
	for _, st := range benchCodecs {
		b.Run(st.String(), func(b *testing.B) {
			var c Codec
			frame, err := c.AppendFrame(nil, benchHeader(st))
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.DecodeFrame(frame[LengthFieldSize:]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkHeaderEncodeDecode is one encode into a reused buffer plus one decode: the
// per-request header cost on one side of a connection.
func BenchmarkHeaderEncodeDecode(b *testing.B) {
	for _, st := range benchCodecs {
		b.Run(st.String(), func(b *testing.B) {
			var c Codec
			cmd := benchHeader(st)
			buf := make([]byte, 0, 512)
			b.ReportAllocs()
			for b.Loop() {
				var err error
				if buf, err = c.AppendFrame(buf[:0], cmd); err != nil {
					b.Fatal(err)
				}
				if _, err := c.DecodeFrame(buf[LengthFieldSize:]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkEcho measures a loopback echo through the real server and client: 64 requests
// in flight on one connection, 1 KiB bodies. It reports requests/s and latency percentiles.
func BenchmarkEcho(b *testing.B) {
	for _, st := range []SerializeType{SerializeJSON, SerializeMsgpack} {
		b.Run(st.String(), func(b *testing.B) { benchEcho(b, st, 64, 1024, echoSetup{}) })
	}
}

// echoSetup selects the transport benchEcho measures; the zero value is a plain port.
type echoSetup struct {
	server      *TLSConfig  // ServerOptions.TLS
	client      *tls.Config // ClientOptions.TLS
	plainViaStd bool        // serve a permissive port's plain connections on the std path
}

func benchEcho(b *testing.B, st SerializeType, inflight, bodySize int, setup echoSetup) {
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
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
	}()
	copts := DefaultClientOptions()
	copts.SerializeType = st
	copts.TLS = setup.client
	c, err := NewClient(copts)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	addr := s.Addr().String()
	body := make([]byte, bodySize)
	ext := map[string]string{"topic": "BenchTopic", "queueId": "1"}
	if _, err := c.Invoke(context.Background(), addr, NewRequest(codeEcho, ext)); err != nil {
		b.Fatal(err)
	}

	lat := make([][]time.Duration, inflight)
	var wg sync.WaitGroup
	per := b.N / inflight
	b.ReportAllocs()
	b.SetBytes(int64(2 * bodySize))
	b.ResetTimer()
	start := time.Now()
	for w := range inflight {
		n := per
		if w < b.N%inflight {
			n++
		}
		lat[w] = make([]time.Duration, 0, n)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range n {
				req := NewRequest(codeEcho, ext)
				req.Body = body
				t0 := time.Now()
				resp, err := c.Invoke(context.Background(), addr, req)
				if err != nil || len(resp.Body) != bodySize {
					b.Error("echo failed", err)
					return
				}
				lat[w] = append(lat[w], time.Since(t0))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	all := slices.Concat(lat...)
	slices.Sort(all)
	if len(all) == 0 {
		return
	}
	b.ReportMetric(float64(len(all))/elapsed.Seconds(), "req/s")
	b.ReportMetric(float64(all[len(all)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(all[len(all)*99/100].Microseconds()), "p99-µs")
}

// BenchmarkHeldPartialFrames measures the server's heap while 100 connections each hold
// 15 MiB of a 16 MiB request frame, and after they close. It is a measurement, not a
// timed benchmark; run it alone with
//
//	go test -run '^$' -bench HeldPartialFrames -benchtime 1x ./remoting/
//
// It reports HeapInuse in MiB: before (with the 15 MiB body the clients send), while held
// (then again after two forced GCs, which empty netpoll's buffer pool), right after the
// connections closed (no forced GC) and after two forced GCs.
func BenchmarkHeldPartialFrames(b *testing.B) {
	for range b.N {
		heldPartialFrames(b, 100, 16<<20, 15<<20)
	}
}

func heldPartialFrames(b *testing.B, conns, frameLen, sent int) {
	s, err := NewServer(DefaultServerOptions())
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
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
	}()
	heapMiB := func(gc bool) float64 {
		if gc {
			runtime.GC()
			runtime.GC()
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return float64(ms.HeapInuse) / (1 << 20)
	}
	// settle polls until HeapInuse stops moving (the server has read what the kernel holds).
	settle := func() float64 {
		last, still := heapMiB(false), 0
		for still < 10 {
			time.Sleep(100 * time.Millisecond)
			now := heapMiB(false)
			if now-last < 1 && last-now < 1 {
				still++
			} else {
				still = 0
			}
			last = now
		}
		return last
	}
	body := make([]byte, sent)
	before := heapMiB(true)
	cs := make([]net.Conn, conns)
	var wg sync.WaitGroup
	for i := range cs {
		conn, err := net.Dial("tcp", s.Addr().String())
		if err != nil {
			b.Fatal(err)
		}
		cs[i] = conn
		head := partialFrameHead(b, int32(i), frameLen)
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = conn.Write(head)
			_, _ = conn.Write(body)
		}()
	}
	wg.Wait()
	held := settle()
	heldGC := heapMiB(true)
	for _, conn := range cs {
		_ = conn.Close()
	}
	for len(s.Channels()) > 0 {
		time.Sleep(10 * time.Millisecond)
	}
	closed := heapMiB(false)
	closedGC := heapMiB(true)
	runtime.KeepAlive(body)
	b.ReportMetric(before, "before-MiB")
	b.ReportMetric(held, "held-MiB")
	b.ReportMetric(heldGC, "held-gc-MiB")
	b.ReportMetric(closed, "closed-MiB")
	b.ReportMetric(closedGC, "closed-gc-MiB")
}

// partialFrameHead returns the length field and JSON header of an echo request frame whose
// length field is frameLen; the caller sends (some of) the body.
func partialFrameHead(tb testing.TB, opaque int32, frameLen int) []byte {
	tb.Helper()
	var codec Codec
	req := NewRequest(codeEcho, nil)
	req.Opaque = opaque
	head, err := codec.AppendFrame(nil, req)
	if err != nil {
		tb.Fatal(err)
	}
	binary.BigEndian.PutUint32(head, uint32(frameLen))
	return head
}

// benchRoute registers a benchmark's handler one way (a worker pool, or inline).
type benchRoute struct {
	name     string
	register func(s *Server, code int16, h Handler) error
}

// benchRoutes are the ways the raw-socket benchmarks register their echo handler.
var benchRoutes = []benchRoute{
	{"pool", func(s *Server, code int16, h Handler) error { return s.HandleReusingFrames(code, "", h) }},
	{"inline", func(s *Server, code int16, h Handler) error {
		return s.HandleRoute(code, h, RouteOptions{Inline: true, ReuseFrames: true})
	}},
}

// BenchmarkPingPong is a lone synchronous sender: one 1 KiB request at a time on one
// connection, written and read back on a plain socket by one goroutine (no client
// library), so that what it measures is the server's path from the reactor to the reply.
// ns/op is one round trip.
func BenchmarkPingPong(b *testing.B) {
	for _, r := range benchRoutes {
		b.Run(r.name, func(b *testing.B) { benchRaw(b, r, 1, 1024) })
	}
}

// BenchmarkPipelined writes 32 requests of 1 KiB in one socket write and reads their 32
// responses, on one connection: the server reads them in one burst. ns/op is one request.
func BenchmarkPipelined(b *testing.B) {
	for _, r := range benchRoutes {
		b.Run(r.name, func(b *testing.B) { benchRaw(b, r, 32, 1024) })
	}
}

// benchRaw runs rounds of depth pipelined echo requests of bodySize bytes on one plain
// socket; b.N counts requests.
func benchRaw(b *testing.B, r benchRoute, depth, bodySize int) {
	s, err := NewServer(DefaultServerOptions())
	if err != nil {
		b.Fatal(err)
	}
	if err := r.register(s, codeEcho, echo); err != nil {
		b.Fatal(err)
	}
	addr := ServeTest(b, s, nil)
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	var codec Codec
	var burst []byte
	for i := range depth {
		req := NewRequest(codeEcho, map[string]string{"topic": "BenchTopic", "queueId": "1"})
		req.Opaque = int32(i + 1)
		req.Body = make([]byte, bodySize)
		if burst, err = codec.AppendFrame(burst, req); err != nil {
			b.Fatal(err)
		}
	}
	br := bufio.NewReaderSize(conn, 256<<10)
	round := func() {
		if _, err := conn.Write(burst); err != nil {
			b.Fatal(err)
		}
		for range depth {
			head, err := br.Peek(LengthFieldSize)
			if err != nil {
				b.Fatal(err)
			}
			n := int(binary.BigEndian.Uint32(head))
			if _, err := br.Discard(LengthFieldSize + n); err != nil {
				b.Fatal(err)
			}
		}
	}
	round() // the connection is set up and the pools warm
	b.ReportAllocs()
	b.SetBytes(int64(2 * bodySize))
	before := readUsage(b)
	b.ResetTimer()
	for done := 0; done < b.N; done += depth {
		round()
	}
	b.StopTimer()
	after := readUsage(b)
	// The process's CPU time and OS context switches (server and client together), where
	// the platform tells them: less noisy than the wall time on a shared machine.
	if before == (usage{}) {
		return
	}
	b.ReportMetric(float64(after.cpu-before.cpu)/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(after.switches-before.switches)/float64(b.N), "ctxsw/op")
}
