package console

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/ferrymq/ferry/internal/leaktest"
)

// The tests start a broker, whose network poller's goroutines live on.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m, leaktest.Netpoll()...) }
