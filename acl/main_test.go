package acl

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/ferrymq/ferry/internal/leaktest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, leaktest.Netpoll(
		// The official Go client (goclient_test.go) leaves its timers sleeping after
		// Shutdown; every one of its goroutines runs under primitive.WithRecover.
		goleak.IgnoreAnyFunction("github.com/apache/rocketmq-client-go/v2/primitive.WithRecover"),
		goleak.IgnoreAnyFunction("github.com/patrickmn/go-cache.(*janitor).Run"),
	)...)
}
