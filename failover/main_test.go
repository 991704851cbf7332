package failover

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/ferrymq/ferry/internal/leaktest"
	"github.com/ferrymq/ferry/internal/testkit"
)

// TestMain checks that the agent leaves no goroutine behind; the ignored ones are the
// in-process brokers' netpoll pollers, started once per process and never stopped.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(testkit.Main(m), leaktest.Netpoll()...)
}
