package tools

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/spf13/cobra"

	"github.com/ferrymq/ferry/client"
	"github.com/ferrymq/ferry/message"
)

func newBenchCommand(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure throughput and latency against a running cluster",
	}
	cmd.AddCommand(newBenchProduceCommand(e), newBenchConsumeCommand(e), newBenchTxCommand(e))
	return cmd
}

// benchReport is the final result of a benchmark (stable JSON/YAML field names).
type benchReport struct {
	Kind       string  `json:"kind" yaml:"kind"`
	Messages   int64   `json:"messages" yaml:"messages"`
	Errors     int64   `json:"errors" yaml:"errors"`
	Seconds    float64 `json:"seconds" yaml:"seconds"`
	MsgsPerSec float64 `json:"msgsPerSec" yaml:"msgsPerSec"`
	BytesPerSe float64 `json:"bytesPerSec" yaml:"bytesPerSec"`
	LatencyUs  struct {
		P50  float64 `json:"p50" yaml:"p50"`
		P90  float64 `json:"p90" yaml:"p90"`
		P99  float64 `json:"p99" yaml:"p99"`
		P999 float64 `json:"p999" yaml:"p999"`
		Max  float64 `json:"max" yaml:"max"`
	} `json:"latencyUs" yaml:"latencyUs"`
	FirstError string `json:"firstError,omitempty" yaml:"firstError,omitempty"`
}

// latencies is a histogram shared by the senders (1 µs to 60 s, 3 significant digits).
type latencies struct {
	mu sync.Mutex
	h  *hdrhistogram.Histogram
}

func newLatencies() *latencies { return &latencies{h: hdrhistogram.New(1, 60_000_000, 3)} }

func (l *latencies) record(d time.Duration) {
	l.mu.Lock()
	_ = l.h.RecordValue(max(d.Microseconds(), 1)) // out of range values are clamped by the bounds above
	l.mu.Unlock()
}

func (l *latencies) quantile(q float64) float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return float64(l.h.ValueAtQuantile(q))
}

func (l *latencies) max() float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return float64(l.h.Max())
}

// benchRun tracks a running benchmark for the progress display.
type benchRun struct {
	done, errs atomic.Int64
	firstErr   atomic.Pointer[string]
	lat        *latencies
	start      time.Time
}

func (r *benchRun) fail(err error) {
	r.errs.Add(1)
	s := err.Error()
	r.firstErr.CompareAndSwap(nil, &s)
}

// progress prints the run's state every interval until stop is closed: a bar rewritten in
// place on a terminal, plain lines otherwise.
func (e *env) progress(r *benchRun, total int64, duration time.Duration, stop <-chan struct{}) {
	interval := time.Second
	if e.isTTY {
		interval = 250 * time.Millisecond
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	var lastN int64
	last := time.Now()
	for {
		select {
		case <-stop:
			if e.isTTY {
				fmt.Fprintln(e.errOut)
			}
			return
		case now := <-t.C:
			n := r.done.Load()
			rate := float64(n-lastN) / now.Sub(last).Seconds()
			lastN, last = n, now
			elapsed := now.Sub(r.start)
			frac := elapsed.Seconds() / duration.Seconds()
			if total > 0 {
				frac = float64(n) / float64(total)
			}
			line := fmt.Sprintf("%8d msgs  %9.0f msgs/s  p50 %6.0f µs  p99 %7.0f µs  errors %d",
				n, rate, r.lat.quantile(50), r.lat.quantile(99), r.errs.Load())
			if e.isTTY {
				const width = 24
				filled := min(int(frac*width), width)
				fmt.Fprintf(e.errOut, "\r[%s%s] %3.0f%% %s", strings.Repeat("=", filled), strings.Repeat(" ", width-filled), min(frac, 1)*100, line)
			} else {
				fmt.Fprintf(e.errOut, "%6.1fs %s\n", elapsed.Seconds(), line)
			}
		}
	}
}

// report builds and prints the final table.
func (e *env) report(kind string, r *benchRun, size int) error {
	elapsed := time.Since(r.start).Seconds()
	rep := benchReport{Kind: kind, Messages: r.done.Load(), Errors: r.errs.Load(), Seconds: elapsed}
	rep.MsgsPerSec = float64(rep.Messages) / elapsed
	rep.BytesPerSe = rep.MsgsPerSec * float64(size)
	rep.LatencyUs.P50, rep.LatencyUs.P90 = r.lat.quantile(50), r.lat.quantile(90)
	rep.LatencyUs.P99, rep.LatencyUs.P999, rep.LatencyUs.Max = r.lat.quantile(99), r.lat.quantile(99.9), r.lat.max()
	if p := r.firstErr.Load(); p != nil {
		rep.FirstError = *p
	}
	err := e.emit(rep, func(w io.Writer) {
		fmt.Fprintf(w, "%s\tmessages\terrors\tseconds\tmsgs/s\tthroughput\tp50\tp90\tp99\tp99.9\tmax\n", kind)
		fmt.Fprintf(w, "\t%d\t%d\t%.2f\t%.0f\t%s/s\t%.0f µs\t%.0f µs\t%.0f µs\t%.0f µs\t%.0f µs\n",
			rep.Messages, rep.Errors, rep.Seconds, rep.MsgsPerSec, humanBytes(rep.BytesPerSe),
			rep.LatencyUs.P50, rep.LatencyUs.P90, rep.LatencyUs.P99, rep.LatencyUs.P999, rep.LatencyUs.Max)
		if rep.FirstError != "" {
			fmt.Fprintf(w, "first error:\t%s\n", rep.FirstError)
		}
	})
	if err == nil && rep.Errors > 0 {
		err = fmt.Errorf("%d of %d sends failed, first: %s", rep.Errors, rep.Errors+rep.Messages, rep.FirstError)
	}
	return err
}

func newBenchProduceCommand(e *env) *cobra.Command {
	var (
		topic, group            string
		producers, size, window int
		count                   int64
		duration                time.Duration
		syncSends               bool
		linger                  time.Duration
	)
	cmd := &cobra.Command{
		Use:   "produce -t TOPIC [flags]",
		Short: "Send as fast as possible and report throughput and latency percentiles",
		Long: "bench produce runs --producers producers, each on its own connection, each with at\n" +
			"most --window sends in flight (automatically batched by Ferry's client), for\n" +
			"--duration or --count messages, showing progress on stderr (a bar on a terminal,\n" +
			"a line a second otherwise) and a final table (or -o json) on stdout. Latency is from\n" +
			"a send's call to its acknowledgement.",
		Args: cobra.NoArgs,
		Example: `  ferryctl bench produce -t Bench --producers 4 --size 1024 --duration 10s
  ferryctl bench produce -t Bench --producers 1 --sync --count 10000 -o json`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case topic == "":
				return usageError("-t/--topic is required")
			case producers <= 0 || size <= 0 || window <= 0:
				return usageError("--producers, --size and --window must be positive")
			case count <= 0 && duration <= 0:
				return usageError("give --count or --duration")
			}
			if syncSends {
				window = 1
			}
			ps := make([]*client.Producer, producers)
			for i := range ps {
				c, err := e.newClient()
				if err != nil {
					return err
				}
				defer func() { _ = c.Close() }()
				if ps[i], err = c.NewProducer(group, client.WithLinger(linger)); err != nil {
					return err
				}
				defer func() { _ = ps[i].Close() }()
			}
			body := make([]byte, size)
			ctx := cmd.Context()
			if duration > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, duration)
				defer cancel()
			}
			// Routes and connections before the clock starts.
			if _, err := ps[0].Send(cmd.Context(), message.NewMessage(topic, body)); err != nil {
				return fmt.Errorf("first send to %s: %w", topic, err)
			}
			r := &benchRun{lat: newLatencies(), start: time.Now()}
			stop := make(chan struct{})
			var shown sync.WaitGroup
			shown.Go(func() { e.progress(r, count, duration, stop) })
			var issued atomic.Int64
			var wg sync.WaitGroup
			for _, p := range ps {
				wg.Go(func() { produceLoop(ctx, p, topic, body, window, count, &issued, r) })
			}
			wg.Wait()
			close(stop)
			shown.Wait()
			return e.report("produce", r, size)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&topic, "topic", "t", "", "topic to send to (required)")
	f.StringVarP(&group, "group", "g", "ferryctl-bench", "producer group")
	f.IntVar(&producers, "producers", 4, "producers, each on its own connection")
	f.IntVar(&size, "size", 1024, "body size in bytes")
	f.IntVar(&window, "window", 256, "sends in flight per producer")
	f.Int64Var(&count, "count", 0, "messages to send in all (0: until --duration)")
	f.DurationVar(&duration, "duration", 10*time.Second, "how long to send (0 with --count: until done)")
	f.BoolVar(&syncSends, "sync", false, "one synchronous send at a time per producer (latency)")
	f.DurationVar(&linger, "linger", 500*time.Microsecond, "client batching linger (0: no wait)")
	return cmd
}

// produceLoop sends until ctx ends or count messages were issued in all, with at most
// window in flight.
func produceLoop(ctx context.Context, p *client.Producer, topic string, body []byte, window int, count int64, issued *atomic.Int64, r *benchRun) {
	slots := make(chan struct{}, window)
	var inflight sync.WaitGroup
	for ctx.Err() == nil {
		if count > 0 && issued.Add(1) > count {
			break
		}
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		inflight.Add(1)
		t0 := time.Now()
		p.SendAsync(context.WithoutCancel(ctx), message.NewMessage(topic, body), func(_ client.SendResult, err error) {
			if err != nil {
				r.fail(err)
			} else {
				r.lat.record(time.Since(t0))
				r.done.Add(1)
			}
			<-slots
			inflight.Done()
		})
	}
	inflight.Wait()
}

func newBenchConsumeCommand(e *env) *cobra.Command {
	var (
		topic, group string
		count        int64
		duration     time.Duration
	)
	cmd := &cobra.Command{
		Use:     "consume -t TOPIC [flags]",
		Short:   "Consume a topic's backlog as fast as possible and report the rate",
		Example: "  ferryctl bench consume -t Backlog --count 1000000\n  ferryctl bench consume -t Backlog --duration 30s -o json",
		Long: "bench consume starts a push consumer of a fresh group (from the first offset) and\n" +
			"counts messages until --count or --duration; latency is from store time to delivery.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if topic == "" {
				return usageError("-t/--topic is required")
			}
			if group == "" {
				group = fmt.Sprintf("ferryctl-bench-%d", time.Now().UnixNano())
			}
			c, err := e.newClient()
			if err != nil {
				return err
			}
			defer func() { _ = c.Close() }()
			ctx, cancel := context.WithCancel(cmd.Context())
			defer cancel()
			if duration > 0 {
				ctx, cancel = context.WithTimeout(ctx, duration)
				defer cancel()
			}
			r := &benchRun{lat: newLatencies(), start: time.Now()}
			pc, err := c.NewPushConsumer(group, topic, "*", func(_ context.Context, msgs []*client.MessageExt) client.ConsumeResult {
				now := time.Now()
				for _, m := range msgs {
					r.lat.record(now.Sub(m.StoreTime))
				}
				if n := r.done.Add(int64(len(msgs))); count > 0 && n >= count {
					cancel()
				}
				return client.ConsumeSuccess
			}, client.WithConsumeFrom(client.ConsumeFromFirstOffset), client.WithConsumeBatch(32))
			if err != nil {
				return err
			}
			stop := make(chan struct{})
			var shown sync.WaitGroup
			shown.Go(func() { e.progress(r, count, duration, stop) })
			if err := pc.Start(ctx); err != nil {
				close(stop)
				shown.Wait()
				return err
			}
			<-ctx.Done()
			close(stop)
			shown.Wait()
			if err := pc.Close(); err != nil {
				return err
			}
			return e.report("consume", r, 0)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&topic, "topic", "t", "", "topic to consume (required)")
	f.StringVarP(&group, "group", "g", "", "consumer group (default: a new one)")
	f.Int64Var(&count, "count", 0, "stop after this many messages")
	f.DurationVar(&duration, "duration", 10*time.Second, "stop after this long")
	return cmd
}

func newBenchTxCommand(e *env) *cobra.Command {
	var (
		topic, group    string
		producers, size int
		count           int64
		duration        time.Duration
		rollbackEvery   int
	)
	cmd := &cobra.Command{
		Use:   "tx -t TOPIC [flags]",
		Short: "Run transactions (half message, local transaction, commit) and report their rate and latency",
		Long: "bench tx runs --producers transactional producers, each running one transaction at a\n" +
			"time: send the half message, run an empty local transaction, end it with commit (every\n" +
			"--rollback-every-th with rollback). Latency is the whole transaction, from the half\n" +
			"message's send to the broker's answer to END_TRANSACTION.",
		Args:    cobra.NoArgs,
		Example: "  ferryctl bench tx -t TxBench --producers 4 --duration 10s",
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case topic == "":
				return usageError("-t/--topic is required")
			case producers <= 0 || size <= 0:
				return usageError("--producers and --size must be positive")
			case count <= 0 && duration <= 0:
				return usageError("give --count or --duration")
			}
			checker := client.TransactionCheckerFunc(func(context.Context, *client.MessageExt) client.TransactionState {
				return client.TransactionRollback // a check means the benchmark died mid-transaction
			})
			tps := make([]*client.TransactionProducer, producers)
			for i := range tps {
				c, err := e.newClient()
				if err != nil {
					return err
				}
				defer func() { _ = c.Close() }()
				if tps[i], err = c.NewTransactionProducer(group, checker); err != nil {
					return err
				}
				defer func() { _ = tps[i].Close() }()
			}
			ctx := cmd.Context()
			if duration > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, duration)
				defer cancel()
			}
			body := make([]byte, size)
			r := &benchRun{lat: newLatencies(), start: time.Now()}
			stop := make(chan struct{})
			var shown sync.WaitGroup
			shown.Go(func() { e.progress(r, count, duration, stop) })
			var issued atomic.Int64
			var wg sync.WaitGroup
			for _, tp := range tps {
				wg.Go(func() {
					for ctx.Err() == nil {
						n := issued.Add(1)
						if count > 0 && n > count {
							return
						}
						outcome := client.TransactionCommit
						if rollbackEvery > 0 && n%int64(rollbackEvery) == 0 {
							outcome = client.TransactionRollback
						}
						t0 := time.Now()
						_, err := tp.SendInTransaction(context.WithoutCancel(ctx), message.NewMessage(topic, body),
							func(context.Context, *message.Message, client.SendResult) client.TransactionState { return outcome })
						if err != nil {
							r.fail(err)
							continue
						}
						r.lat.record(time.Since(t0))
						r.done.Add(1)
					}
				})
			}
			wg.Wait()
			close(stop)
			shown.Wait()
			return e.report("tx", r, size)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&topic, "topic", "t", "", "topic of the transactional messages (required)")
	f.StringVarP(&group, "group", "g", "ferryctl-bench-tx", "transactional producer group")
	f.IntVar(&producers, "producers", 4, "transactional producers, each on its own connection")
	f.IntVar(&size, "size", 1024, "body size in bytes")
	f.Int64Var(&count, "count", 0, "transactions in all (0: until --duration)")
	f.DurationVar(&duration, "duration", 10*time.Second, "how long to run (0 with --count: until done)")
	f.IntVar(&rollbackEvery, "rollback-every", 0, "roll back every n-th transaction (0: commit all)")
	return cmd
}
