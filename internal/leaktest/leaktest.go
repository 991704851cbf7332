// Package leaktest holds what the packages' goroutine-leak checks (goleak in TestMain)
// share: the goroutines that are allowed to outlive every test. Only tests import it.
package leaktest

import "go.uber.org/goleak"

// Netpoll ignores netpoll's process-wide pollers and task workers, which the first
// in-process server of a test binary starts and nothing stops. extra are appended.
func Netpoll(extra ...goleak.Option) []goleak.Option {
	return append([]goleak.Option{
		goleak.IgnoreAnyFunction("github.com/cloudwego/netpoll.(*defaultPoll).Wait"),
		goleak.IgnoreAnyFunction("github.com/cloudwego/netpoll.(*manager).Run"),
		goleak.IgnoreAnyFunction("github.com/bytedance/gopkg/util/gopool.(*worker).run.func1"),
		goleak.IgnoreAnyFunction("github.com/cloudwego/netpoll.runTask"),
	}, extra...)
}
