package pipeline

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/testutil"
)

// BenchmarkPipeline measures a word-count pipeline over inputs already stored: each op is
// one input line (1..8 words) consumed, transformed and committed with its outputs, for
// transactions of MaxInputs inputs of one queue. Reported: inputs/s and outputs/s.
func BenchmarkPipeline(b *testing.B) {
	for _, maxInputs := range []int{1, 32} {
		b.Run(fmt.Sprintf("MaxInputs=%d", maxInputs), func(b *testing.B) {
			_, cl := startCluster(b, "BenchWords")
			lines := makeLines(rand.New(rand.NewPCG(1, 2)), b.N)
			require.NoError(b, sendLines(context.Background(), cl, lines))
			o := wordCountOptions(fmt.Sprintf("bench-%d", maxInputs), "BenchWords")
			o.MaxInputs = maxInputs
			p, err := New(cl, o)
			require.NoError(b, err)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			b.ResetTimer()
			start := time.Now()
			go func() { done <- p.Run(ctx) }()
			testutil.Eventually(b, 10*time.Minute, func() bool { return p.Stats().Inputs >= int64(b.N) },
				"every input committed")
			elapsed := time.Since(start)
			b.StopTimer()
			cancel()
			require.NoError(b, <-done)
			st := p.Stats()
			b.ReportMetric(float64(st.Inputs)/elapsed.Seconds(), "inputs/s")
			b.ReportMetric(float64(st.Outputs)/elapsed.Seconds(), "outputs/s")
			b.ReportMetric(float64(st.Transactions)/elapsed.Seconds(), "txns/s")
		})
	}
}
