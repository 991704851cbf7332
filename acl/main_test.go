package acl

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// netpoll's process-wide pollers, started once and never stopped.
		goleak.IgnoreAnyFunction("github.com/cloudwego/netpoll.(*defaultPoll).Wait"),
		goleak.IgnoreAnyFunction("github.com/cloudwego/netpoll.(*manager).Run"),
		goleak.IgnoreAnyFunction("github.com/bytedance/gopkg/util/gopool.(*worker).run.func1"),
		goleak.IgnoreAnyFunction("github.com/cloudwego/netpoll.runTask"),
		// The official Go client (goclient_test.go) leaves its timers sleeping after
		// Shutdown; every one of its goroutines runs under primitive.WithRecover.
		goleak.IgnoreAnyFunction("github.com/apache/rocketmq-client-go/v2/primitive.WithRecover"),
		goleak.IgnoreAnyFunction("github.com/patrickmn/go-cache.(*janitor).Run"),
	)
}
