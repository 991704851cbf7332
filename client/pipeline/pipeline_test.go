package pipeline

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/ferrymq/ferry/client"
	"github.com/ferrymq/ferry/internal/leaktest"
	"github.com/ferrymq/ferry/internal/testkit"
	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/testutil"
)

// The kill test's child processes are this test binary run again in the role "pipeline"
// (internal/testkit), with the name server, the group and the output topic as arguments.
const (
	inTopic = "WcLines"
	queues  = 4
)

func TestMain(m *testing.M) {
	testkit.RunChildRole(map[string]func([]string){"pipeline": runChild})
	goleak.VerifyTestMain(m, leaktest.Netpoll()...)
}

// runChild runs the word-count pipeline of args (name server, group, output topic) until
// it is killed; should it stop, it says why and exits with status 1.
func runChild(args []string) {
	err := errors.New("want arguments: name server, group, output topic")
	if len(args) == 3 {
		log := zerolog.New(os.Stderr).With().Timestamp().Logger().Level(zerolog.InfoLevel)
		var cl *client.Client
		if cl, err = client.New(client.WithNameServers(args[0]), client.WithLogger(log)); err == nil {
			o := wordCountOptions(args[1], args[2])
			o.Logger = log
			var p *Pipeline
			if p, err = New(cl, o); err == nil {
				err = p.Run(context.Background())
			}
		}
	}
	fmt.Fprintln(os.Stderr, "pipeline child:", err)
	os.Exit(1)
}

// wordCount is the transform under test: one message per word of the input line, to
// topic out, keyed by the word, naming its input and its place in the line.
func wordCount(out string) Transform {
	return func(_ context.Context, in *client.MessageExt) ([]*message.Message, error) {
		var msgs []*message.Message
		for i, w := range strings.Fields(string(in.Body)) {
			m := message.NewMessage(out, []byte(w))
			m.SetKeys(w)
			m.SetProperty("src", in.MsgID)
			m.SetProperty("idx", strconv.Itoa(i))
			msgs = append(msgs, m)
		}
		return msgs, nil
	}
}

// wordCountOptions are the pipeline's options: small transactions, so that a run has
// many of them and a kill lands in the middle of one.
func wordCountOptions(group, out string) Options {
	return Options{Group: group, Input: inTopic, Transform: wordCount(out), MaxInputs: 4,
		PollTimeout: 200 * time.Millisecond, RetryBackoff: 50 * time.Millisecond}
}

// startCluster starts a name server and a broker with the input topic and outs created.
// The broker checks unended transactions after RocketMQ's 6 s: a killed instance's
// unended transaction blocks nothing (the next one's conditional offset decides), while a
// short timeout would have live instances roll back each other's slow transactions.
func startCluster(t testing.TB, outs ...string) (*testutil.Cluster, *client.Client) {
	t.Helper()
	c := testutil.StartCluster(t)
	cl, err := client.New(client.WithNameServers(c.NamesrvAddr))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, cl.Close()) })
	for _, topic := range append([]string{inTopic}, outs...) {
		require.NoError(t, cl.Admin().CreateTopic(context.Background(),
			client.TopicConfig{Name: topic, ReadQueues: queues, WriteQueues: queues}, client.Target{}))
	}
	return c, cl
}

// vocabulary is what lines are made of.
var vocabulary = strings.Fields("ferry river boat dock rope sail tide wind oar deck mast port " +
	"hull keel wave shore bridge anchor harbor crew")

// makeLines returns n lines of 1..8 words of vocabulary.
func makeLines(rng *rand.Rand, n int) []string {
	lines := make([]string, n)
	for i := range lines {
		words := make([]string, 1+rng.IntN(8))
		for j := range words {
			words[j] = vocabulary[rng.IntN(len(vocabulary))]
		}
		lines[i] = strings.Join(words, " ")
	}
	return lines
}

// sendLines sends lines to the input topic, in order.
func sendLines(ctx context.Context, cl *client.Client, lines []string) error {
	p, err := cl.NewProducer("wc-lines")
	if err != nil {
		return err
	}
	for _, l := range lines {
		if _, err := p.Send(ctx, message.NewMessage(inTopic, []byte(l))); err != nil {
			return errors.Join(err, p.Close())
		}
	}
	return p.Close()
}

// progress returns how many inputs group has committed, and how many there are.
func progress(t *testing.T, cl *client.Client, group string) (committed, total int64) {
	t.Helper()
	qs, err := cl.Admin().ConsumerOffsets(context.Background(), group, inTopic)
	require.NoError(t, err)
	for _, q := range qs {
		total += q.BrokerOffset
		committed += max(q.ConsumerOffset, 0)
	}
	return committed, total
}

// output is one output message as the consumer of the output topic sees it.
type output struct{ src, idx, word string }

// readAll reads every message of topic from offset 0, in a fresh group.
func readAll(t *testing.T, cl *client.Client, topic string) map[output]int {
	t.Helper()
	ctx := context.Background()
	qs, err := cl.Admin().ConsumerOffsets(ctx, "wc-reader-"+topic, topic)
	require.NoError(t, err)
	var want int64
	for _, q := range qs {
		want += q.BrokerOffset
	}
	lc, err := cl.NewLitePullConsumer("wc-reader-"+topic, client.WithConsumeFrom(client.ConsumeFromFirstOffset),
		client.WithManualCommit())
	require.NoError(t, err)
	mqs, err := lc.FetchQueues(ctx, topic)
	require.NoError(t, err)
	require.NoError(t, lc.Assign(mqs...))
	require.NoError(t, lc.Start(ctx))
	defer func() { require.NoError(t, lc.Close()) }()
	got := map[output]int{}
	var n int64
	deadline := time.Now().Add(60 * time.Second)
	for n < want && time.Now().Before(deadline) {
		for _, m := range lc.Poll(ctx, time.Second) {
			got[output{m.Property("src"), m.Property("idx"), string(m.Body)}]++
			n++
		}
	}
	require.Equal(t, want, n, "every message of %s read", topic)
	return got
}

// TestWordCountSurvivesKills: a word-count pipeline process is SIGKILLed again and again
// — while it starts, rebalances, transforms, or has a transaction half sent or half
// ended — while its input is still being written, and restarted each time. In the end its
// output equals that of a run without faults (an in-process pipeline over the same input
// in another group) and that of the transform applied once to each line: every word of
// every line exactly once, nothing else.
func TestWordCountSurvivesKills(t *testing.T) {
	const lines, rounds = 1500, 10
	const outTopic, cleanTopic = "WcWords", "WcWordsClean"
	c, cl := startCluster(t, outTopic, cleanTopic)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 11))
	input := makeLines(rng, lines)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	var sendErr error
	wg.Go(func() { sendErr = sendLines(ctx, cl, input) })
	clean, err := New(cl, wordCountOptions("wc-clean", cleanTopic))
	require.NoError(t, err)
	var cleanErr error
	wg.Go(func() { cleanErr = clean.Run(ctx) })

	// Rounds: a process starts — next to the one running, half of the time, so that the
	// two rebalance the input's queues between them with transactions in flight — and,
	// once there is some progress or after a random time, one of them is killed.
	var started []*testkit.Child
	startChild := func() *testkit.Child {
		ch := testkit.StartChild(t, "pipeline", c.NamesrvAddr, "wc", outTopic)
		started = append(started, ch)
		return ch
	}
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		qs, err := cl.Admin().ConsumerOffsets(context.Background(), "wc", inTopic)
		t.Logf("offsets of wc: %+v (%v)", qs, err)
		for i, ch := range started {
			e := ch.Stderr()
			t.Logf("child %d, the end of its log:\n%s", i, e[max(0, len(e)-3000):])
		}
	})
	midway := 0 // kills that found the pipeline with input left to do
	var running []*testkit.Child
	for round := range rounds {
		running = append(running, startChild())
		before, _ := progress(t, cl, "wc")
		if rng.IntN(3) == 0 {
			// Anywhere from start-up on: connecting, rebalancing, the first transactions.
			time.Sleep(time.Duration(50+rng.IntN(700)) * time.Millisecond)
		} else {
			want := before + 20 + int64(rng.IntN(150))
			testutil.Eventually(t, 60*time.Second, func() bool {
				done, total := progress(t, cl, "wc")
				return done >= want || (total == lines && done == total)
			}, fmt.Sprintf("round %d: progress past %d", round, want))
		}
		if len(running) == 1 && rng.IntN(2) == 0 {
			continue // the next one starts beside it
		}
		i := rng.IntN(len(running))
		running[i].Kill(t)
		running = slices.Delete(running, i, i+1)
		if done, _ := progress(t, cl, "wc"); done < lines {
			midway++
		}
	}
	require.GreaterOrEqual(t, midway, rounds/3, "most kills land while there is work")
	running = append(running, startChild())
	for _, g := range []string{"wc", "wc-clean"} {
		testutil.Eventually(t, 120*time.Second, func() bool {
			done, _ := progress(t, cl, g)
			return done == lines
		}, g+": every line committed")
	}
	for _, ch := range running {
		ch.Kill(t)
	}
	cancel()
	wg.Wait()
	require.NoError(t, sendErr)
	require.NoError(t, cleanErr)
	st := clean.Stats()
	require.Equal(t, int64(lines), st.Inputs, "the fault-free run committed each line once")
	require.Zero(t, st.Conflicts)

	got, want := readAll(t, cl, outTopic), readAll(t, cl, cleanTopic)
	srcs := map[string]bool{}
	for o := range want {
		srcs[o.src] = true
	}
	require.Len(t, srcs, lines, "the fault-free run has output for every line")
	direct := map[string]int{} // the word counts of the transform applied once to each line
	for _, l := range input {
		for _, w := range strings.Fields(l) {
			direct[w]++
		}
	}
	counts := func(m map[output]int) map[string]int {
		wc := map[string]int{}
		for o, n := range m {
			wc[o.word] += n
		}
		return wc
	}
	require.Equal(t, direct, counts(want), "the fault-free run's word counts")
	for o, n := range want {
		require.Equal(t, 1, n, "fault-free: %v once", o)
	}
	// Equal outputs: the same (input id, place, word) triples, each once. The two runs
	// read the same input messages, so the ids are the same.
	for o, n := range got {
		require.Equal(t, 1, n, "%v once despite the kills", o)
		require.Contains(t, want, o, "%v is in the fault-free output", o)
	}
	require.Len(t, got, len(want), "nothing missing")
	require.Equal(t, direct, counts(got), "the word counts despite the kills")
}

func TestOptionsValidate(t *testing.T) {
	ok := Options{Group: "g", Input: "in", Transform: wordCount("out")}
	require.NoError(t, ok.Validate())
	for name, edit := range map[string]func(*Options){
		"no group":     func(o *Options) { o.Group = "" },
		"no input":     func(o *Options) { o.Input = "" },
		"no transform": func(o *Options) { o.Transform = nil },
		"max inputs":   func(o *Options) { o.MaxInputs = 1025 },
		"negative":     func(o *Options) { o.PollTimeout = -time.Second },
	} {
		o := ok
		edit(&o)
		require.ErrorIs(t, o.Validate(), ErrInvalidOptions, name)
	}
}

// TestTransformErrorStopsRun: a failing transform stops Run with ErrTransform and commits
// nothing of its transaction; a second Run is refused.
func TestTransformErrorStopsRun(t *testing.T) {
	_, cl := startCluster(t, "WcOut")
	require.NoError(t, sendLines(context.Background(), cl, []string{"a b", "c", "boom", "d"}))
	boom := errors.New("boom")
	p, err := New(cl, Options{Group: "wc-fail", Input: inTopic, MaxInputs: 1,
		Transform: func(ctx context.Context, in *client.MessageExt) ([]*message.Message, error) {
			if string(in.Body) == "boom" {
				return nil, boom
			}
			return wordCount("WcOut")(ctx, in)
		}})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	err = p.Run(ctx)
	require.ErrorIs(t, err, ErrTransform)
	require.ErrorIs(t, err, boom)
	require.ErrorIs(t, p.Run(ctx), ErrInvalidOptions)
	done, total := progress(t, cl, "wc-fail")
	require.Equal(t, int64(4), total)
	require.Less(t, done, total, "the failed input is not committed")
	got := readAll(t, cl, "WcOut")
	for o := range got {
		require.NotEqual(t, "boom", o.word)
	}
	require.Equal(t, p.Stats().Outputs, int64(len(got)), "what is visible is what the pipeline committed")
}

// singleQueueTopics creates topics of one queue each.
func singleQueueTopics(t *testing.T, cl *client.Client, topics ...string) {
	t.Helper()
	for _, topic := range topics {
		require.NoError(t, cl.Admin().CreateTopic(context.Background(),
			client.TopicConfig{Name: topic, ReadQueues: 1, WriteQueues: 1}, client.Target{}))
	}
}

// echo sends each input's body to out, naming the input.
func echo(out string) Transform {
	return func(_ context.Context, in *client.MessageExt) ([]*message.Message, error) {
		m := message.NewMessage(out, in.Body)
		m.SetProperty("src", string(in.Body))
		m.SetProperty("idx", "0")
		return []*message.Message{m}, nil
	}
}

// TestBrokerOutageLosesNothing: the broker is gone for several request timeouts while
// the pipeline has inputs buffered and transactions in flight; once it is back, every
// input's output is there exactly once (the queue is read again from the committed
// offset before anything more of it is processed).
func TestBrokerOutageLosesNothing(t *testing.T) {
	const n = 2000
	c, cl := startCluster(t)
	singleQueueTopics(t, cl, "OutageIn", "OutageOut")
	ctx := context.Background()
	pr, err := cl.NewProducer("outage-in")
	require.NoError(t, err)
	for i := range n {
		_, err := pr.Send(ctx, message.NewMessage("OutageIn", fmt.Appendf(nil, "s%d", i)))
		require.NoError(t, err)
	}
	require.NoError(t, pr.Close())
	pcl, err := client.New(client.WithNameServers(c.NamesrvAddr), client.WithRequestTimeout(300*time.Millisecond))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, pcl.Close()) })
	p, err := New(pcl, Options{Group: "outage", Input: "OutageIn", MaxInputs: 4, Transform: echo("OutageOut"),
		PollTimeout: 100 * time.Millisecond, RetryBackoff: 20 * time.Millisecond})
	require.NoError(t, err)
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- p.Run(runCtx) }()
	testutil.Eventually(t, 60*time.Second, func() bool { return p.Stats().Inputs >= 100 }, "some inputs committed")
	c.StopBroker(t)
	time.Sleep(2 * time.Second) // the outage: several request timeouts of the pipeline's client
	c.RestartBroker(t)
	testutil.Eventually(t, 120*time.Second, func() bool {
		qs, err := cl.Admin().ConsumerOffsets(ctx, "outage", "OutageIn")
		return err == nil && len(qs) == 1 && qs[0].ConsumerOffset == n
	}, "every input committed after the outage")
	cancel()
	require.NoError(t, <-done)
	require.Positive(t, p.Stats().Failures, "the outage failed transactions")
	got := readAll(t, cl, "OutageOut")
	require.Len(t, got, n, "nothing missing")
	for i := range n {
		o := output{fmt.Sprintf("s%d", i), "0", fmt.Sprintf("s%d", i)}
		require.Equal(t, 1, got[o], "%v once", o)
	}
}

// TestChunkedInputStopsRun: a chunked input stops Run with ErrChunkedInput rather than
// being committed out of place.
func TestChunkedInputStopsRun(t *testing.T) {
	_, cl := startCluster(t)
	singleQueueTopics(t, cl, "ChunkIn", "ChunkOut")
	ctx := context.Background()
	big, err := cl.NewProducer("chunk-in", client.WithMaxBodySize(64), client.WithCompressOver(1<<30))
	require.NoError(t, err)
	_, err = big.Send(ctx, message.NewMessage("ChunkIn", []byte("small")))
	require.NoError(t, err)
	_, err = big.Send(ctx, message.NewMessage("ChunkIn", []byte(strings.Repeat("chunked ", 100))))
	require.NoError(t, err)
	require.NoError(t, big.Close())
	p, err := New(cl, Options{Group: "chunked", Input: "ChunkIn", Transform: echo("ChunkOut"),
		PollTimeout: 100 * time.Millisecond})
	require.NoError(t, err)
	runCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	require.ErrorIs(t, p.Run(runCtx), ErrChunkedInput)
}
