package broker_test

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
	"github.com/ferrymq/ferry/testutil"
)

// BenchmarkPullOverTCP is the whole pull path at full speed: a consumer pulling 1 KiB
// messages of one queue from a real broker over loopback, 32 per request, one request
// after another, from 100,000 stored messages (100 MiB, more than the CPU caches hold).
// ns/op is per message served; cpu-ns/msg is the process's CPU time (broker and client,
// user and system) per message, steadier than the wall clock on a busy machine.
func BenchmarkPullOverTCP(b *testing.B) {
	const n, topic = 100_000, "PullBenchTopic"
	c := testutil.StartCluster(b)
	rc, err := remoting.NewClient(remoting.DefaultClientOptions())
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := rc.Close(); err != nil {
			b.Error(err)
		}
	}()
	invoke := func(code protocol.RequestCode, h protocol.Header, body []byte) *remoting.Command {
		req := protocol.NewRequest(code, h)
		req.Body = body
		resp, err := rc.Invoke(context.Background(), c.BrokerAddr, req)
		if err != nil {
			b.Fatal(err)
		}
		return resp
	}
	// The first message creates the topic; the rest go straight to the store.
	resp := invoke(protocol.SendMessageV2, &protocol.SendMessageRequestHeaderV2{SendMessageRequestHeader: protocol.SendMessageRequestHeader{
		ProducerGroup: "PullBenchPG", Topic: topic, DefaultTopic: "TBW102", DefaultTopicQueueNums: 1,
		BornTimestamp: time.Now().UnixMilli()}}, make([]byte, 1024))
	if resp.Code != int16(protocol.Success) {
		b.Fatal(resp.Remark)
	}
	st := c.Broker.Store()
	for i := 1; i < n; i++ {
		props, err := message.EncodeProperties(map[string]string{message.PropertyUniqKey: fmt.Sprintf("U%030d", i)})
		if err != nil {
			b.Fatal(err)
		}
		rec := message.Record{Topic: []byte(topic), Body: make([]byte, 1024), Properties: props,
			BornTimestamp: time.Now().UnixMilli()}
		if _, err := st.PutMessage(&rec, false); err != nil {
			b.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := st.WaitDispatched(ctx, st.CommitLog().MaxOffset()); err != nil {
		b.Fatal(err)
	}
	h := protocol.PullMessageRequestHeader{ConsumerGroup: "PullBenchCG", Topic: topic, MaxMsgNums: 32,
		SysFlag: protocol.PullFlagSubscription, Subscription: "*", ExpressionType: "TAG"}
	b.SetBytes(1024)
	b.ResetTimer()
	start, cpu0 := time.Now(), cpuTime(b)
	for got := 0; got < b.N; {
		resp := invoke(protocol.PullMessage, &h, nil)
		var rh protocol.PullMessageResponseHeader
		if err := rh.DecodeExt(resp.ExtFields); err != nil || resp.Code != int16(protocol.Success) {
			b.Fatal(err, resp.Code, resp.Remark)
		}
		got += int(rh.NextBeginOffset - h.QueueOffset)
		h.QueueOffset = rh.NextBeginOffset
		if h.QueueOffset >= n {
			h.QueueOffset = 0
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
	b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(b.N), "cpu-ns/msg")
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
