package broker

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/ferrymq/ferry/internal/leaktest"
)

// TestMain fails the package's tests if any of them leaves a goroutine running; netpoll's
// pollers, which an in-process broker starts once per process, may stay.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, leaktest.Netpoll()...)
}
