package broker_test

import (
	"context"
	"testing"
	"time"

	"github.com/ferrymq/ferry/broker"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
	"github.com/ferrymq/ferry/testutil"
)

// BenchmarkSendMetrics is the produce path at full load with the /metrics counters on
// (broker.Options.MetricsEnable, the default) and off: 1 KiB SEND_MESSAGE_V2 requests
// from 8 senders per core over loopback to one ASYNC_MASTER (async flush), every one
// answered SUCCESS. ns/op is per message; cpu-ns/msg is the process's CPU time (broker
// and client, user and system) per message. The difference between the two is what
// counting costs: compare medians of -count runs (docs/benchmarks.md).
func BenchmarkSendMetrics(b *testing.B) {
	for _, on := range []bool{true, false} {
		name := "metrics=off"
		if on {
			name = "metrics=on"
		}
		b.Run(name, func(b *testing.B) {
			c := testutil.StartCluster(b, testutil.WithBrokerOptions(func(o *broker.Options) { o.MetricsEnable = on }))
			rc, err := remoting.NewClient(remoting.DefaultClientOptions())
			if err != nil {
				b.Fatal(err)
			}
			defer func() {
				if err := rc.Close(); err != nil {
					b.Error(err)
				}
			}()
			body := make([]byte, 1024)
			send := func() int16 {
				req := protocol.NewRequest(protocol.SendMessageV2, &protocol.SendMessageRequestHeaderV2{
					SendMessageRequestHeader: protocol.SendMessageRequestHeader{ProducerGroup: "BenchPG", Topic: "MetricsBenchTopic",
						DefaultTopic: "TBW102", DefaultTopicQueueNums: 8, QueueID: -1, BornTimestamp: time.Now().UnixMilli()}})
				req.Body = body
				resp, err := rc.Invoke(context.Background(), c.BrokerAddr, req)
				if err != nil {
					b.Error(err)
					return -1
				}
				return resp.Code
			}
			if code := send(); code != int16(protocol.Success) { // creates the topic
				b.Fatalf("first send answered %d", code)
			}
			b.SetBytes(int64(len(body)))
			b.SetParallelism(8)
			b.ResetTimer()
			start, cpu0 := time.Now(), cpuTime(b)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if code := send(); code != int16(protocol.Success) {
						b.Errorf("send answered %d", code)
						return
					}
				}
			})
			b.StopTimer()
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
			b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(b.N), "cpu-ns/msg")
		})
	}
}
