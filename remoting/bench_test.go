package remoting

import (
	"context"
	"net"
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
		b.Run(st.String(), func(b *testing.B) { benchEcho(b, st, 64, 1024) })
	}
}

func benchEcho(b *testing.B, st SerializeType, inflight, bodySize int) {
	opts := DefaultServerOptions()
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
	copts := DefaultClientOptions()
	copts.SerializeType = st
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
